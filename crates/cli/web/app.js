// Bredon's page: play, analyse, watch a run. Plain JavaScript, no libraries; it talks to
// the JSON API of `bredon serve` (crates/cli/src/serve/mod.rs).
"use strict";

const $ = (id) => document.getElementById(id);
const FILES = "abcdefgh";
const DIRS = { "+": [0, 1], "-": [0, -1], ">": [1, 0], "<": [-1, 0] };
// The widest a board gets, in CSS pixels (style.css's .board-column is laid out for it).
const BOARD_PX = 520;

async function api(method, path, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    if (body instanceof Blob || body instanceof ArrayBuffer) {
      opts.body = body;
    } else {
      opts.headers["content-type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
  }
  const resp = await fetch(path, opts);
  let data = null;
  try { data = await resp.json(); } catch (e) { /* not JSON */ }
  if (!resp.ok) {
    throw new Error((data && data.error) || `${resp.status} ${resp.statusText}`);
  }
  return data;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const sqName = (i, size) => FILES[i % size] + (Math.floor(i / size) + 1);
const pct = (x) => `${Math.round(x * 100)}%`;
// A flat margin for white, signed with one decimal ("+1.5", "−0.5").
const flats = (m) => `${m >= 0 ? "+" : "−"}${Math.abs(m).toFixed(1)}`;

// ---------------------------------------------------------------------------------------
// The board: cells with stacks (a column of chips, bottom to top, and the top piece drawn
// large), an optional ownership tint and heat map, clicks and drags reported as square
// names.
class Board {
  constructor(host, opts = {}) {
    this.host = host;
    this.opts = opts;
    this.size = 0;
    this.drag = null;
  }

  render(pos, size, extra = {}) {
    this.pos = pos;
    if (size !== this.size) this.build(size);
    const maxHeat = extra.heat ? Math.max(...extra.heat, 1e-9) : 0;
    for (let i = 0; i < size * size; i++) {
      const cell = this.cells[i];
      const name = sqName(i, size);
      cell.className = "cell" + (((i % size) + Math.floor(i / size)) % 2 ? " alt" : "");
      if (extra.selected === name) cell.classList.add("selected");
      if (extra.targets && extra.targets.includes(name)) cell.classList.add("target");
      if (extra.last && extra.last.includes(name)) cell.classList.add("last");
      let html = i % size === 0 || Math.floor(i / size) === 0 ? `<span class="coord">${name}</span>` : "";
      const text = pos.board[i];
      let ownTip = "";
      if (extra.owner) {
        // Who will own the square at the end: white's or black's colour, stronger the
        // surer the network is (-1 black to 1 white; the square root shows the small
        // values of an open position).
        const o = Math.max(-1, Math.min(1, extra.owner[i]));
        const rgb = o >= 0 ? "255, 255, 255" : "0, 0, 0";
        ownTip = ` · owner at the end: ${o >= 0 ? "white" : "black"} ${Math.round(Math.abs(o) * 100)}%`;
        // First, so that the square's name stays readable above the tint.
        html = `<div class="own" data-own="${o.toFixed(2)}" style="background: rgba(${rgb}, ${Math.min(0.9, 1.2 * Math.sqrt(Math.abs(o))).toFixed(3)})"></div>` + html;
      }
      if (extra.heat && extra.heat[i] > 0.001) {
        const a = (0.75 * extra.heat[i]) / maxHeat;
        const label = extra.heat[i] >= 0.01 ? `<span>${Math.round(extra.heat[i] * 100)}</span>` : "";
        html += `<div class="heat" style="background: rgba(255, 90, 0, ${a.toFixed(3)})">${label}</div>`;
      }
      if (text) {
        const top = text[text.length - 1];
        const kind = top === "S" ? "wall" : top === "C" ? "cap" : "flat";
        const colors = text.replace(/[SC]/g, "");
        const owner = colors[colors.length - 1] === "1" ? "white" : "black";
        if (colors.length > 1) {
          const shown = colors.slice(-12);
          html += `<div class="stack">${[...shown].map((c) => `<div class="chip ${c === "1" ? "white" : "black"}"></div>`).join("")}</div>`;
          html += `<span class="height">${colors.length}</span>`;
        }
        html += `<div class="piece ${owner} ${kind}"></div>`;
      }
      cell.innerHTML = html;
      cell.title = (text ? `${name}: ${describeStack(text)}` : name) + ownTip;
      cell.dataset.stack = text;
    }
  }

  build(size) {
    this.size = size;
    // The whole board (cells, 2 px gaps, 2 px padding) at most BOARD_PX wide.
    const cellPx = this.host.classList.contains("small") ? 44 : Math.min(84, Math.floor((BOARD_PX - 2 * size - 2) / size));
    const grid = document.createElement("div");
    grid.className = "board";
    grid.style.gridTemplateColumns = `repeat(${size}, ${cellPx}px)`;
    grid.style.setProperty("--cell", `${cellPx}px`);
    this.cells = new Array(size * size);
    for (let row = size - 1; row >= 0; row--) {
      for (let col = 0; col < size; col++) {
        const i = row * size + col;
        const cell = document.createElement("div");
        cell.dataset.sq = sqName(i, size);
        cell.id = `${this.host.id}-${cell.dataset.sq}`;
        cell.addEventListener("click", () => {
          if (this.dragged) { this.dragged = false; return; }
          if (this.opts.onClick) this.opts.onClick(cell.dataset.sq);
        });
        cell.addEventListener("pointerdown", (e) => { if (e.button === 0) this.drag = cell.dataset.sq; });
        cell.addEventListener("pointerup", (e) => {
          const under = document.elementFromPoint(e.clientX, e.clientY);
          const target = under && under.closest(".cell");
          const from = this.drag;
          this.drag = null;
          if (from && target && target.dataset.sq !== from && this.opts.onDrag) {
            this.dragged = true;
            setTimeout(() => { this.dragged = false; }, 50);
            this.opts.onDrag(from, target.dataset.sq);
          }
        });
        grid.appendChild(cell);
        this.cells[i] = cell;
      }
    }
    this.host.innerHTML = "";
    this.host.appendChild(grid);
  }
}

function describeStack(text) {
  const colors = text.replace(/[SC]/g, "");
  const top = text.endsWith("S") ? "wall" : text.endsWith("C") ? "capstone" : "flat";
  const names = [...colors].map((c) => (c === "1" ? "W" : "B")).join("");
  return `${colors.length} piece${colors.length > 1 ? "s" : ""}, bottom to top ${names}, ${top} on top`;
}

// Squares a move touches (for highlighting the last move).
function moveSquares(ptn, size) {
  const m = /^([1-8]?)([SCF]?)([a-h])([1-8])([<>+\-]?)(\d*)/.exec(ptn.replace(/['"!?*]/g, ""));
  if (!m) return [];
  let col = FILES.indexOf(m[3]), row = parseInt(m[4]) - 1;
  const out = [FILES[col] + (row + 1)];
  if (m[5]) {
    const drops = m[6] ? m[6].length : 1;
    const [dc, dr] = DIRS[m[5]];
    for (let k = 0; k < drops; k++) { col += dc; row += dr; out.push(FILES[col] + (row + 1)); }
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Shared: server info, engine choices, searches.
let INFO = null;

function fillModels() {
  for (const sel of document.querySelectorAll(".model-select")) {
    const keep = sel.value;
    sel.innerHTML = "";
    const add = (value, text) => { const o = document.createElement("option"); o.value = value; o.textContent = text; sel.appendChild(o); };
    const shipped = INFO.shipped.map((s) => `${s.size}x${s.size}`).join(", ");
    add("auto", `shipped model of the size${shipped ? ` (${shipped}; else uniform)` : " (none found: uniform)"}`);
    add("uniform", "uniform evaluator (no network)");
    for (const m of INFO.models) add(m.id, `${m.name} (${m.size}x${m.size})`);
    if ([...sel.options].some((o) => o.value === keep)) sel.value = keep;
  }
}

// Starts a search and polls it to the end; `onProgress(view)` sees every poll.
async function runSearch(body, onProgress, handle) {
  const start = await api("POST", "/api/search", body);
  handle.id = start.id;
  for (;;) {
    await sleep(120);
    const view = await api("GET", `/api/search/${start.id}`);
    if (onProgress) onProgress(view);
    if (view.status !== "running") {
      handle.id = null;
      if (view.status === "failed") throw new Error(view.error || "the search failed");
      return view;
    }
  }
}

function stopSearch(handle) {
  if (handle.id) api("POST", `/api/search/${handle.id}/stop`).catch(() => {});
}

function download(name, text) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
}

// ---------------------------------------------------------------------------------------
// Play.
const play = {
  size: 6, halfKomi: 4, human: "white", moves: [], game: null, search: { id: null },
  sel: null, // a spread being built: { from, carry, dir, drops: [] }
  busy: false, token: 0,
};
const playBoard = new Board($("play-board"), { onClick: playClick, onDrag: playDrag });

function playMsg(text) { $("play-msg").textContent = text || ""; }
function playStatus(text) { $("play-status").textContent = text || ""; }

function budget(kindId, valueId) {
  const n = Math.max(1, parseInt($(valueId).value) || 1);
  return $(kindId).value === "millis" ? { millis: Math.max(10, n) } : { visits: n };
}

// The new-game choices, remembered in the browser (localStorage) from one visit to the
// next. Each stored value is used only if the page still offers it.
const PREFS_KEY = "bredon.play";
const PREF_INPUTS = { size: "play-size", color: "play-color", komi: "play-komi", model: "play-model", budgetKind: "play-budget-kind", budget: "play-budget" };

function savePrefs() {
  const prefs = {};
  for (const [k, id] of Object.entries(PREF_INPUTS)) prefs[k] = $(id).value;
  try { localStorage.setItem(PREFS_KEY, JSON.stringify(prefs)); } catch (e) { /* storage off or full */ }
}

function restorePrefs() {
  let prefs = null;
  try { prefs = JSON.parse(localStorage.getItem(PREFS_KEY) || "null"); } catch (e) { return; }
  if (!prefs || typeof prefs !== "object") return;
  const str = (v) => (typeof v === "string" || typeof v === "number" ? String(v) : null);
  // A select keeps a value only if it is one of its options.
  const pick = (id, v) => {
    const el = $(id);
    if (str(v) !== null && [...el.options].some((o) => o.value === str(v))) el.value = str(v);
  };
  pick("play-size", prefs.size);
  pick("play-color", prefs.color);
  pick("play-model", prefs.model);
  const k = str(prefs.komi);
  const komi = k !== null && k.trim() !== "" ? Number(k) : NaN;
  const [hk0, hk1] = INFO.half_komi || [-10, 10];
  if (Number.isFinite(komi) && Number.isInteger(komi * 2) && komi * 2 >= hk0 && komi * 2 <= hk1) $("play-komi").value = String(komi);
  pick("play-budget-kind", prefs.budgetKind);
  const n = Number(str(prefs.budget));
  const [b0, b1] = INFO[$("play-budget-kind").value] || [1, Infinity];
  if (Number.isInteger(n) && n >= b0 && n <= b1) $("play-budget").value = String(n);
}

async function playNew() {
  savePrefs();
  stopSearch(play.search);
  play.token++;
  play.busy = false; // the stopped search's move is dropped (its token is stale)
  play.size = parseInt($("play-size").value);
  play.halfKomi = Math.round(parseFloat($("play-komi").value || "0") * 2);
  play.human = $("play-color").value;
  play.moves = [];
  play.sel = null;
  playMsg("");
  $("play-eval").textContent = "";
  await playUpdate([]);
}

function toMove() {
  return play.game ? play.game.positions[play.game.positions.length - 1].to_move : "white";
}

// Checks `moves` with the server and shows them; an illegal move is refused with the
// server's reason and the game stays as it was.
async function playUpdate(moves) {
  let game;
  try {
    game = await api("POST", "/api/game", { size: play.size, half_komi: play.halfKomi, moves });
  } catch (e) {
    playMsg(e.message);
    playRender();
    return false;
  }
  play.moves = moves;
  play.game = game;
  play.sel = null;
  playRender();
  if (!game.result && toMove() !== play.human) engineMove();
  return true;
}

function playRender() {
  const g = play.game;
  if (!g) return;
  const pos = g.positions[g.positions.length - 1];
  const extra = { last: g.moves.length ? moveSquares(g.moves[g.moves.length - 1], g.size) : [] };
  if (play.sel) {
    extra.selected = play.sel.cur || play.sel.from;
    extra.targets = spreadTargets();
  }
  playBoard.render(pos, g.size, extra);
  const r = pos.reserves;
  $("play-reserves").textContent = `reserves: White ${r[0][0]}+${r[0][1]}C, Black ${r[1][0]}+${r[1][1]}C; flats ${pos.flats[0]}–${pos.flats[1]}`;
  $("play-ptn").value = g.ptn;
  const ol = $("play-moves");
  ol.innerHTML = "";
  for (let i = 0; i < g.moves.length; i += 2) {
    const li = document.createElement("li");
    li.textContent = g.moves[i] + (g.moves[i + 1] ? "  " + g.moves[i + 1] : "");
    ol.appendChild(li);
  }
  if (g.result) {
    playStatus(`Game over: ${g.result_text} (${g.result})`);
    $("play-status").dataset.result = g.result;
  } else if (!play.busy) {
    $("play-status").dataset.result = "";
    playStatus(toMove() === play.human ? `Your move (${play.human})` : "");
  }
  $("play-spread").textContent = play.sel
    ? `Spreading from ${play.sel.from}: carrying ${play.sel.carry}, ${play.sel.carry - sum(play.sel.drops)} left to drop. Click the stack to carry fewer; Esc cancels.`
    : "Click an empty square to place; click your stack, then the squares to drop on (click the stack again to carry fewer), or drag a stack.";
}

const sum = (a) => a.reduce((x, y) => x + y, 0);

async function engineMove() {
  const token = ++play.token;
  play.busy = true;
  playStatus("Engine thinking…");
  try {
    const view = await runSearch(
      { game: { size: play.size, half_komi: play.halfKomi, moves: play.moves }, budget: budget("play-budget-kind", "play-budget"), model: $("play-model").value },
      (v) => {
        const a = v.current || v.results[0];
        if (a && token === play.token) playStatus(`Engine thinking… ${a.visits} visits, White ${pct(a.white_win)}`);
      },
      play.search,
    );
    if (token !== play.token) return;
    const a = view.results[0];
    if (!a || !a.best) { playMsg("the engine was stopped before it found a move"); return; }
    $("play-eval").textContent = `${view.engine}: ${a.proven_text || `White ${pct(a.white_win)}`} after ${a.visits} visits; line ${a.pv.join(" ")}`;
    play.busy = false;
    await playUpdate([...play.moves, a.best]);
  } catch (e) {
    if (token === play.token) playMsg(e.message);
  } finally {
    if (token === play.token) { play.busy = false; playRender(); }
  }
}

function humanTurn() {
  return play.game && !play.game.result && !play.busy && toMove() === play.human;
}

async function humanMove(ptn) {
  if (!play.game) return;
  if (play.game.result) { playMsg("the game is over: start a new one or undo"); return; }
  if (!humanTurn()) { playMsg("wait for the engine's move"); return; }
  playMsg("");
  await playUpdate([...play.moves, ptn]);
}

function pieceKind() {
  return document.querySelector('input[name="piece"]:checked').value;
}

function topOwner(sq) {
  const pos = play.game.positions[play.game.positions.length - 1];
  const text = pos.board[squareIndex(sq, play.size)];
  if (!text) return null;
  const colors = text.replace(/[SC]/g, "");
  return colors[colors.length - 1] === "1" ? "white" : "black";
}

function stackHeight(sq) {
  const pos = play.game.positions[play.game.positions.length - 1];
  return pos.board[squareIndex(sq, play.size)].replace(/[SC]/g, "").length;
}

const squareIndex = (sq, size) => (parseInt(sq.slice(1)) - 1) * size + FILES.indexOf(sq[0]);
const step = (sq, dir) => {
  const [dc, dr] = DIRS[dir];
  const c = FILES.indexOf(sq[0]) + dc, r = parseInt(sq.slice(1)) + dr;
  return c >= 0 && c < play.size && r >= 1 && r <= play.size ? FILES[c] + r : null;
};

function spreadTargets() {
  const s = play.sel;
  if (!s) return [];
  if (!s.dir) return Object.keys(DIRS).map((d) => step(s.from, d)).filter(Boolean);
  const next = step(s.cur, s.dir);
  return [s.cur, next].filter(Boolean);
}

function spreadPtn(s) {
  const drops = s.drops.length === 1 && s.drops[0] === s.carry ? "" : s.drops.join("");
  return `${s.carry > 1 ? s.carry : ""}${s.from}${s.dir}${drops}`;
}

function playClick(sq) {
  if (!humanTurn()) { playMsg(play.game && play.game.result ? "the game is over" : "wait for the engine's move"); return; }
  playMsg("");
  const s = play.sel;
  if (s) {
    if (sq === s.from && s.drops.length === 0) {
      s.carry -= 1;
      if (s.carry === 0) play.sel = null;
      playRender();
      return;
    }
    let dir = s.dir;
    if (!dir) dir = Object.keys(DIRS).find((d) => step(s.from, d) === sq);
    if (dir && s.dir && sq === s.cur) {
      s.drops[s.drops.length - 1] += 1;
    } else if (dir && step(s.cur, dir) === sq) {
      s.dir = dir;
      s.cur = sq;
      s.drops.push(1);
    } else {
      play.sel = null;
      playMsg(`${sq} is not next along the spread; the spread is cancelled`);
      playRender();
      return;
    }
    if (sum(s.drops) === s.carry) {
      const ptn = spreadPtn(s);
      play.sel = null;
      humanMove(ptn);
    } else {
      playRender();
    }
    return;
  }
  const pos = play.game.positions[play.game.positions.length - 1];
  if (!pos.board[squareIndex(sq, play.size)]) {
    humanMove(pieceKind() + sq);
  } else if (topOwner(sq) === play.human && pos.ply >= 2) {
    play.sel = { from: sq, cur: sq, carry: Math.min(stackHeight(sq), play.size), dir: null, drops: [] };
    playRender();
  } else {
    playMsg(`${sq}: you can only move a stack you control (its top piece is yours), after the first two plies`);
  }
}

// A drag from a stack to a square in line: carry as many as the stack allows, one piece
// on each square passed and the rest on the last.
function playDrag(from, to) {
  if (!humanTurn()) return;
  play.sel = null;
  const dc = FILES.indexOf(to[0]) - FILES.indexOf(from[0]);
  const dr = parseInt(to.slice(1)) - parseInt(from.slice(1));
  if ((dc !== 0 && dr !== 0) || topOwner(from) !== play.human) {
    playMsg(`drag a stack you control in a straight line (${from} to ${to} is not)`);
    return;
  }
  const dist = Math.abs(dc + dr);
  const dir = dc > 0 ? ">" : dc < 0 ? "<" : dr > 0 ? "+" : "-";
  const carry = Math.min(stackHeight(from), play.size);
  if (dist > carry) { playMsg(`${from} carries at most ${carry}: it cannot reach ${to}`); return; }
  const drops = new Array(dist).fill(1);
  drops[dist - 1] += carry - dist;
  humanMove(spreadPtn({ from, carry, dir, drops }));
}

async function playUndo() {
  stopSearch(play.search);
  play.token++;
  play.busy = false;
  const moves = [...play.moves];
  if (!moves.length) return;
  moves.pop();
  while (moves.length && (moves.length % 2 === 0 ? "white" : "black") !== play.human) moves.pop();
  playMsg("");
  play.moves = moves;
  // After undo it is the human's turn (or the engine's at the very start as black).
  await playUpdate(moves);
}

// ---------------------------------------------------------------------------------------
// Analyse.
const an = { game: null, ply: 0, results: [], search: { id: null }, token: 0 };
const anBoard = new Board($("an-board"), {});

async function analyseLoad() {
  stopSearch(an.search);
  const token = ++an.token;
  $("an-msg").textContent = "";
  let game;
  try {
    game = await api("POST", "/api/game", { text: $("an-text").value });
  } catch (e) {
    $("an-msg").textContent = e.message;
    return;
  }
  an.game = game;
  an.results = new Array(game.positions.length).fill(null);
  an.ply = 0;
  anRender();
  const visits = Math.max(1, parseInt($("an-visits").value) || 1);
  $("an-status").textContent = "Analysing…";
  try {
    const view = await runSearch(
      { game: { text: $("an-text").value }, plies: "all", budget: { visits }, model: $("an-model").value },
      (v) => {
        if (token !== an.token) return;
        an.results = v.results;
        const done = v.results.filter(Boolean).length;
        $("an-status").textContent = `Analysing with ${v.engine || "…"}: ${done} of ${v.results.length} positions`;
        anRender();
      },
      an.search,
    );
    if (token !== an.token) return;
    an.results = view.results;
    $("an-status").textContent = `${view.status === "done" ? "Analysed" : "Stopped"}: ${view.results.filter(Boolean).length} of ${view.results.length} positions at ${visits} visits with ${view.engine}`;
    $("an-status").dataset.done = view.status;
    anRender();
  } catch (e) {
    if (token === an.token) $("an-msg").textContent = e.message;
  }
}

// How much a move lost for its mover, in win probability (null until both sides known).
function drop(i) {
  const a = an.results[i], b = an.results[i + 1];
  if (!a || !b) return null;
  return a.to_move === "white" ? a.white_win - b.white_win : b.white_win - a.white_win;
}

function mark(i) {
  const d = drop(i);
  if (d === null) return "";
  return d >= 0.25 ? "??" : d >= 0.1 ? "?" : "";
}

function anRender() {
  const g = an.game;
  if (!g) return;
  const pos = g.positions[an.ply];
  const res = an.results[an.ply];
  const extra = { last: an.ply > 0 ? moveSquares(g.moves[an.ply - 1], g.size) : [] };
  if (res && $("an-heat").checked && res.heat.some((h) => h > 0)) extra.heat = res.heat;
  if (res && $("an-own").checked && res.ownership) extra.owner = res.ownership;
  anBoard.render(pos, g.size, extra);
  $("an-ply").textContent = `ply ${an.ply} / ${g.moves.length}`;
  const bar = res ? res.white_win : 0.5;
  $("an-evalbar-white").style.width = pct(bar);
  $("an-evalbar-text").textContent = res ? (res.proven_text || `White ${pct(res.white_win)}`) : "";
  $("an-margin").textContent = res && res.white_margin !== null ? `White ${flats(res.white_margin)} flats` : "";
  let info = "";
  if (pos.result) info += `Game over: ${pos.result}\n`;
  if (res) {
    info += `${res.to_move} to move · White wins ${pct(res.white_win)}`;
    if (res.white_margin !== null) info += ` · White ${flats(res.white_margin)} flats`;
    if (res.proven_text) info += ` · <span class="proven">${res.proven_text}</span>`;
    info += `\nnetwork value ${res.net_value.toFixed(2)} (side to move), ${res.visits} visits\n`;
    if (res.best) info += `best ${res.best}\nline ${res.pv.join(" ")}\n`;
    if (res.top.length) info += "move     visits  prior\n" + res.top.map((t) => `${t.move.padEnd(8)} ${String(t.visits).padStart(6)}  ${pct(t.prior).padStart(5)}`).join("\n");
    if (an.ply < g.moves.length) {
      const d = drop(an.ply);
      if (d !== null) info += `\n\nmove played ${g.moves[an.ply]}${mark(an.ply)}: ${d >= 0 ? "lost" : "gained"} ${pct(Math.abs(d))} for the mover`;
    }
  } else {
    info += "not analysed yet";
  }
  $("an-info").innerHTML = info;
  const ol = $("an-moves");
  ol.innerHTML = "";
  for (let i = 0; i < g.moves.length; i += 2) {
    const li = document.createElement("li");
    for (const k of [i, i + 1]) {
      if (k >= g.moves.length) continue;
      const span = document.createElement("span");
      const r = an.results[k + 1];
      span.innerHTML = `${g.moves[k]}<span class="mark">${mark(k)}</span>${r && r.proven ? '<span class="proven">#</span>' : ""} `;
      span.className = "mv" + (an.ply === k + 1 ? " current" : "");
      span.dataset.ply = k + 1;
      span.addEventListener("click", () => { an.ply = k + 1; anRender(); });
      li.appendChild(span);
    }
    if (an.ply === i + 1 || an.ply === i + 2) li.classList.add("current");
    ol.appendChild(li);
  }
  drawGraph();
}

function drawGraph() {
  const svg = $("an-graph");
  const n = an.game.positions.length;
  const x = (i) => (n <= 1 ? 0 : (400 * i) / (n - 1));
  const pts = [];
  an.results.forEach((r, i) => { if (r) pts.push(`${x(i).toFixed(1)},${(80 - 80 * r.white_win).toFixed(1)}`); });
  let s = `<line x1="0" y1="40" x2="400" y2="40" stroke="#bbb"/>`;
  s += `<polyline points="${pts.join(" ")}" fill="none" stroke="#b5482a" stroke-width="2"/>`;
  for (let i = 0; i + 1 < n; i++) {
    const m = mark(i);
    if (m) s += `<circle cx="${x(i + 1)}" cy="${80 - 80 * an.results[i + 1].white_win}" r="${m === "??" ? 4 : 2.5}" fill="#b00020"/>`;
  }
  s += `<line x1="${x(an.ply)}" y1="0" x2="${x(an.ply)}" y2="80" stroke="#2a6fb5"/>`;
  svg.innerHTML = s;
}

function anStep(to) {
  if (!an.game) return;
  an.ply = Math.max(0, Math.min(an.game.moves.length, to));
  anRender();
}

// ---------------------------------------------------------------------------------------
// Watch a run.
const watch = { run: 0, game: null, ply: 0, timer: null };
const watchBoard = new Board($("watch-board"), {});

async function watchRefresh() {
  if (!INFO || !INFO.runs.length) {
    $("watch-msg").textContent = "No run to watch: start the server with --run DIR.";
    return;
  }
  let v;
  try {
    v = await api("GET", `/api/runs/${watch.run}`);
  } catch (e) {
    $("watch-msg").textContent = e.message;
    return;
  }
  $("watch-msg").textContent = v.elo_error || "";
  $("watch-title").textContent = `${v.name} — ${v.latest || "no checkpoint yet"} (${v.path})`;
  drawElo(v.elo);
  const t = $("watch-gens");
  const cols = [["generation", "gen", 0], ["step", "step", 0], ["games", "games", 0], ["policy_loss", "policy loss", 3], ["value_loss", "value loss", 3], ["games_per_hour", "games/h", 0], ["white_wins", "white", 2], ["black_wins", "black", 2], ["draws", "draws", 2]];
  let html = "<tr>" + cols.map((c) => `<th>${c[1]}</th>`).join("") + "</tr>";
  for (const g of [...v.generations].reverse().slice(0, 200)) {
    html += "<tr>" + cols.map((c) => `<td>${typeof g[c[0]] === "number" ? g[c[0]].toFixed(c[2]) : ""}</td>`).join("") + "</tr>";
  }
  t.innerHTML = html;
  const ul = $("watch-games");
  ul.innerHTML = "";
  for (const g of v.games) {
    const li = document.createElement("li");
    li.textContent = `gen ${g.generation}  ${g.id}  ${g.result || ""}`;
    li.dataset.game = `${g.generation}/${g.id}`;
    if (watch.game && watch.game.key === li.dataset.game) li.classList.add("current");
    li.addEventListener("click", () => watchOpen(g.generation, g.id));
    ul.appendChild(li);
  }
  if (!watch.game && v.games.length) watchOpen(v.games[0].generation, v.games[0].id);
  $("watch-refreshed").textContent = `refreshed ${new Date().toLocaleTimeString()} (every 5 s)`;
}

function drawElo(points) {
  const svg = $("watch-elo");
  if (!points.length) { svg.innerHTML = `<text x="20" y="150">No Elo curve yet: run bredon arena --run DIR</text>`; return; }
  const W = 560, H = 300, L = 50, R = 15, T = 15, B = 35;
  const xs = points.map((p) => p.minutes), lo = points.map((p) => p.lo95), hi = points.map((p) => p.hi95);
  const x0 = 0, x1 = Math.max(...xs, 1), y0 = Math.min(...lo, 0), y1 = Math.max(...hi, 1);
  const X = (v) => L + ((v - x0) / (x1 - x0)) * (W - L - R);
  const Y = (v) => H - B - ((v - y0) / (y1 - y0)) * (H - T - B);
  let s = `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#444"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#444"/>`;
  for (let k = 0; k <= 4; k++) {
    const xv = x0 + ((x1 - x0) * k) / 4, yv = y0 + ((y1 - y0) * k) / 4;
    s += `<text x="${X(xv)}" y="${H - B + 14}" font-size="11" text-anchor="middle">${xv.toFixed(0)}</text>`;
    s += `<text x="${L - 4}" y="${Y(yv) + 4}" font-size="11" text-anchor="end">${yv.toFixed(0)}</text>`;
    s += `<line x1="${L}" y1="${Y(yv)}" x2="${W - R}" y2="${Y(yv)}" stroke="#eee"/>`;
  }
  s += `<text x="${(L + W) / 2}" y="${H - 4}" font-size="12" text-anchor="middle">minutes of training</text>`;
  s += `<text x="12" y="${(T + H - B) / 2}" font-size="12" transform="rotate(-90 12 ${(T + H - B) / 2})" text-anchor="middle">Elo</text>`;
  for (const p of points) s += `<line class="interval" x1="${X(p.minutes)}" y1="${Y(p.lo95)}" x2="${X(p.minutes)}" y2="${Y(p.hi95)}" stroke="#b5482a" stroke-opacity=".5" stroke-width="3"/>`;
  s += `<polyline points="${points.map((p) => `${X(p.minutes)},${Y(p.elo)}`).join(" ")}" fill="none" stroke="#b5482a" stroke-width="2"/>`;
  for (const p of points) s += `<circle class="point" cx="${X(p.minutes)}" cy="${Y(p.elo)}" r="3.5" fill="#b5482a"><title>${p.name}: ${p.elo.toFixed(0)} [${p.lo95.toFixed(0)}, ${p.hi95.toFixed(0)}] at ${p.minutes.toFixed(1)} min</title></circle>`;
  svg.innerHTML = s;
}

async function watchOpen(generation, id) {
  try {
    const g = await api("GET", `/api/runs/${watch.run}/games/${generation}/${encodeURIComponent(id)}`);
    watch.game = { key: `${generation}/${id}`, ...g };
    watch.ply = g.moves.length;
    watchRender();
    for (const li of $("watch-games").children) li.classList.toggle("current", li.dataset.game === watch.game.key);
  } catch (e) {
    $("watch-msg").textContent = e.message;
  }
}

function watchRender() {
  const g = watch.game;
  if (!g) return;
  watchBoard.render(g.positions[watch.ply], g.size, { last: watch.ply ? moveSquares(g.moves[watch.ply - 1], g.size) : [] });
  $("watch-ply").textContent = ` ply ${watch.ply} / ${g.moves.length} `;
  $("watch-game-info").textContent = `${g.key}: ${g.result_text || "unfinished"}; ${watch.ply ? "last move " + g.moves[watch.ply - 1] : "start"}`;
}

// ---------------------------------------------------------------------------------------
// Screens and start-up.
function route() {
  const hash = location.hash.replace("#", "") || "play";
  const screen = ["play", "analyse", "watch"].find((s) => hash.startsWith(s)) || "play";
  for (const s of document.querySelectorAll(".screen")) s.classList.toggle("active", s.id === screen);
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.id === `nav-${screen}`);
  clearInterval(watch.timer);
  if (screen === "watch") {
    const m = /watch\/(\d+)/.exec(hash);
    if (m) watch.run = parseInt(m[1]);
    watchRefresh();
    watch.timer = setInterval(watchRefresh, 5000);
  }
}

async function init() {
  INFO = await api("GET", "/api/info");
  $("version").textContent = `bredon ${INFO.version}`;
  for (const n of INFO.sizes) {
    const o = document.createElement("option");
    o.value = n;
    o.textContent = `${n}x${n}`;
    $("play-size").appendChild(o);
  }
  // Tak's standard game, 6x6 at komi 2 (with the uniform evaluator if no 6x6 model is
  // shipped), unless the visitor chose otherwise before.
  $("play-size").value = INFO.sizes.includes(6) ? "6" : String(INFO.sizes[INFO.sizes.length - 1]);
  fillModels();
  restorePrefs();
  $("watch-runs").innerHTML = INFO.runs.map((r) => `<a href="#watch/${r.id}">${r.name}</a>`).join(" ");

  $("play-new").addEventListener("click", playNew);
  $("play-undo").addEventListener("click", playUndo);
  $("play-stop").addEventListener("click", () => stopSearch(play.search));
  $("play-ptn-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("play-ptn-input").value.trim();
    if (text) humanMove(text).then(() => { if (!$("play-msg").textContent) $("play-ptn-input").value = ""; });
  });
  $("play-copy").addEventListener("click", async () => {
    const text = $("play-ptn").value;
    try { await navigator.clipboard.writeText(text); playStatus("PTN copied"); } catch (e) { $("play-ptn").select(); document.execCommand("copy"); }
  });
  $("play-download").addEventListener("click", () => download("bredon-game.ptn", $("play-ptn").value));
  $("play-analyse").addEventListener("click", () => { $("an-text").value = $("play-ptn").value; location.hash = "#analyse"; analyseLoad(); });
  $("play-budget-kind").addEventListener("change", () => { $("play-budget").value = $("play-budget-kind").value === "millis" ? 1000 : 400; });
  for (const id of Object.values(PREF_INPUTS)) $(id).addEventListener("change", savePrefs);
  $("play-upload").addEventListener("change", async (e) => {
    const f = e.target.files[0];
    if (!f) return;
    try {
      const m = await api("POST", `/api/models?name=${encodeURIComponent(f.name)}`, f);
      INFO = await api("GET", "/api/info");
      fillModels();
      $("play-model").value = m.id;
      $("play-size").value = m.size;
      playMsg("");
      playStatus(`loaded ${m.name} (${m.size}x${m.size}); start a new game`);
    } catch (err) { playMsg(err.message); }
  });
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" || e.target.tagName === "TEXTAREA") return;
    if (e.key === "Escape" && play.sel) { play.sel = null; playRender(); }
    if ($("analyse").classList.contains("active")) {
      if (e.key === "ArrowLeft") anStep(an.ply - 1);
      if (e.key === "ArrowRight") anStep(an.ply + 1);
    }
    if ($("watch").classList.contains("active") && watch.game) {
      if (e.key === "ArrowLeft") { watch.ply = Math.max(0, watch.ply - 1); watchRender(); }
      if (e.key === "ArrowRight") { watch.ply = Math.min(watch.game.moves.length, watch.ply + 1); watchRender(); }
    }
  });

  $("an-go").addEventListener("click", analyseLoad);
  $("an-stop").addEventListener("click", () => stopSearch(an.search));
  $("an-first").addEventListener("click", () => anStep(0));
  $("an-prev").addEventListener("click", () => anStep(an.ply - 1));
  $("an-next").addEventListener("click", () => anStep(an.ply + 1));
  $("an-last").addEventListener("click", () => anStep(Infinity));
  $("an-heat").addEventListener("change", anRender);
  $("an-own").addEventListener("change", anRender);
  $("an-graph").addEventListener("click", (e) => {
    if (!an.game) return;
    const r = $("an-graph").getBoundingClientRect();
    anStep(Math.round(((e.clientX - r.left) / r.width) * an.game.moves.length));
  });
  $("an-file").addEventListener("change", async (e) => {
    const f = e.target.files[0];
    if (f) { $("an-text").value = await f.text(); analyseLoad(); }
  });

  $("watch-prev").addEventListener("click", () => { if (watch.game) { watch.ply = Math.max(0, watch.ply - 1); watchRender(); } });
  $("watch-next").addEventListener("click", () => { if (watch.game) { watch.ply = Math.min(watch.game.moves.length, watch.ply + 1); watchRender(); } });

  window.addEventListener("hashchange", route);
  route();
  await playNew();
  document.body.dataset.ready = "1";
}

init().catch((e) => { document.body.insertAdjacentHTML("afterbegin", `<p class="msg">cannot start: ${e.message}</p>`); });
