#!/usr/bin/env python3
"""One network in every peer inference system, side by side with Bredon's forward pass.

Exports the model as ONNX (`bredon export MODEL --format onnx`), pruned to the outputs the
search reads (policy, value, WDL, flat margin), then times that same network, at each batch
size, in:

  - Bredon itself: `bredon bench nn --inference fast --precision f32`, and `--precision
    bf16` and `int8` where the CPU has their units (its header says "bf16 on AMX tiles",
    "int8 on AVX-512 VNNI"),
    with RAYON_NUM_THREADS = --threads: one call at a time over every thread (latency),
    and where `bench nn` has `--streams`, --threads batches in flight, one a core
    (throughput);
  - onnxruntime (CPU provider, ORT_ENABLE_ALL, denormals as zero, intra-op threads =
    --threads, inter-op 1);
  - OpenVINO (CPU; INFERENCE_PRECISION_HINT f32 and bf16, each in LATENCY mode, one
    request called one batch at a time, and in THROUGHPUT mode, an AsyncInferQueue with
    OPTIMAL_NUMBER_OF_INFER_REQUESTS requests in flight; INFERENCE_NUM_THREADS =
    --threads; a static batch shape per batch size; the precision the compiled model
    reports is printed, and in the label where it differs from the hint);
  - PyTorch in bf16 and channels-last (the net converted from the ONNX graph by
    onnx2torch, traced and frozen).

The systems take turns within each round; the table gives the best of the rounds per
cell and the largest spread between rounds. Every row's agreement is measured on the
same 1,024 positions of random games (played and encoded here exactly as Bredon encodes
its input planes; Bredon has no option to dump them) against two f32 references: B,
Bredon's own forward pass (`bredon analyse --json`, one visit: the network's value and
priors), and P, the ONNX graph in onnxruntime in plain f32: max |difference| of the
value, of the legal moves' priors and of the policy logits, and the share of positions
with the same top legal move. So every row provably runs the same network. A peer that
is not importable is named in the table with how to install it.

    scripts/bench-peers.py                                   # shipped 6x6 model, 3 s a cell, 2 rounds
    scripts/bench-peers.py --seconds 0.5 --rounds 1 --batches 1,64
    scripts/bench-peers.py --model checkpoints/shipped/5x5.bredon --json peers.json

Needs numpy and a release build (`cargo build --release`); the peers want
`python3 -m pip install onnxruntime openvino onnx` (onnx prunes the graph to the outputs
the search reads) and `torch onnx2torch`.
"""
import argparse
import importlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What the search reads of a forward pass (Bredon's `Engine::evaluate`: priors, value, draw
# probability, flat margin); the training-only heads (ownership, the opponent's policy)
# are pruned from the peers' graph when the onnx package is there to do it.
SEARCH_OUTPUTS = ["policy_logits", "value", "wdl_logits", "flat_margin"]
CPU_FLAGS = ["avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"]
AGREEMENT_POSITIONS = 1024


def die(msg):
    print(f"bench-peers: {msg}", file=sys.stderr)
    sys.exit(2)


def try_import(name):
    try:
        return importlib.import_module(name)
    except Exception:  # ImportError, or a broken install
        return None


# ---------------------------------------------------------------------------------------
# Input planes: positions of random games, encoded as `bredon_netform::encoding::encode`
# does (`bredon` has no option to dump its own planes). The games follow
# `bredon_netform::positions::random_positions`: a random number of plies (below twice the
# squares) of uniformly random legal moves, kept only if the game is not over.

RESERVES = {3: (10, 0), 4: (15, 0), 5: (21, 1), 6: (30, 1), 7: (40, 2), 8: (50, 2)}
FLAT, WALL, CAP = 0, 1, 2
WHITE, BLACK = 0, 1


class Game:
    def __init__(self, n):
        self.n = n
        self.board = [[] for _ in range(n * n)]  # each stack bottom to top: (color, kind)
        self.ply = 0
        stones, caps = RESERVES[n]
        self.reserves = [[stones, caps], [stones, caps]]

    def to_move(self):
        return self.ply % 2  # white moves first

    def legal_moves(self):
        n, me, board = self.n, self.to_move(), self.board
        empty = [sq for sq in range(n * n) if not board[sq]]
        if self.ply < 2:  # the opening: the opponent's flat
            return [("p", sq, FLAT) for sq in empty]
        stones, caps = self.reserves[me]
        moves = []
        for sq in empty:
            if stones:
                moves += [("p", sq, FLAT), ("p", sq, WALL)]
            if caps:
                moves.append(("p", sq, CAP))
        for sq in range(n * n):
            stack = board[sq]
            if not stack or stack[-1][0] != me:
                continue
            row, col = divmod(sq, n)
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                free, r, c = 0, row + dr, col + dc
                while 0 <= r < n and 0 <= c < n and (not board[r * n + c] or board[r * n + c][-1][1] == FLAT):
                    free += 1
                    r, c = r + dr, c + dc
                wall_next = 0 <= r < n and 0 <= c < n and board[r * n + c][-1][1] == WALL
                for k in range(1, min(len(stack), n) + 1):
                    for m in range(1, min(free, k) + 1):
                        moves += [("s", sq, (dr, dc), d) for d in compositions(k, m)]
                    if wall_next and stack[-1][1] == CAP and k - 1 >= free:
                        moves += [("s", sq, (dr, dc), d + (1,)) for d in compositions(k - 1, free)]
        return moves

    def make(self, mv):
        n, me, board = self.n, self.to_move(), self.board
        if mv[0] == "p":
            _, sq, kind = mv
            color = 1 - me if self.ply < 2 else me
            board[sq].append((color, kind))
            self.reserves[color][1 if kind == CAP else 0] -= 1
        else:
            _, sq, (dr, dc), drops = mv
            k = sum(drops)
            carried = board[sq][-k:]
            del board[sq][-k:]
            row, col = divmod(sq, n)
            for i, d in enumerate(drops):
                target = board[(row + dr * (i + 1)) * n + col + dc * (i + 1)]
                if target and target[-1][1] == WALL:  # a capstone alone flattens a wall
                    target[-1] = (target[-1][0], FLAT)
                target.extend(carried[:d])
                carried = carried[d:]
        self.ply += 1

    def tps(self):
        """The position in TPS, as `bredon analyse --json` reads it."""
        n, rows = self.n, []
        for r in range(n - 1, -1, -1):
            cells, run = [], 0
            for c in range(n):
                stack = self.board[r * n + c]
                if not stack:
                    run += 1
                    continue
                if run:
                    cells.append("x" if run == 1 else f"x{run}")
                    run = 0
                cells.append("".join(str(col + 1) for col, _ in stack) + ("", "S", "C")[stack[-1][1]])
            if run:
                cells.append("x" if run == 1 else f"x{run}")
            rows.append(",".join(cells))
        return "/".join(rows) + f" {self.to_move() + 1} {self.ply // 2 + 1}"

    def road_squares(self, color):
        return {sq for sq, s in enumerate(self.board) if s and s[-1][0] == color and s[-1][1] != WALL}

    def over(self):
        if any(not (s + c) for s, c in self.reserves) or all(self.board):
            return True
        return any(has_road(self.road_squares(c), self.n) for c in (WHITE, BLACK))


DIRECTIONS = {(1, 0): 0, (-1, 0): 1, (0, 1): 2, (0, -1): 3}  # `Direction`: up (+), down (-), right (>), left (<)


def spread_index(sq, direction, drops, n):
    """`bredon_netform::policy::move_to_index` of a spread: its drop pattern sets bit
    `t - 1` for each running total `t` of the drops."""
    pattern, total = 0, 0
    for d in drops:
        total += d
        pattern |= 1 << (total - 1)
    return 3 * n * n + (sq * 4 + direction) * ((1 << n) - 1) + pattern - 1


def move_index(mv, n):
    if mv[0] == "p":
        return mv[2] * n * n + mv[1]
    _, sq, delta, drops = mv
    return spread_index(sq, DIRECTIONS[delta], drops, n)


def ptn_index(ptn, n):
    """The policy index of a move in PTN (`Sa1`, `3c3>12`), or None."""
    m = re.fullmatch(r"([FSC]?)([a-h])([1-8])", ptn)
    if m:
        return "FSC".index(m.group(1) or "F") * n * n + (int(m.group(3)) - 1) * n + ord(m.group(2)) - ord("a")
    m = re.fullmatch(r"([1-8]?)([a-h])([1-8])([+\-><])([1-8]*)\*?", ptn)
    if not m:
        return None
    k = int(m.group(1) or 1)
    drops = [int(c) for c in m.group(5)] or [k]
    return spread_index((int(m.group(3)) - 1) * n + ord(m.group(2)) - ord("a"), "+-><".index(m.group(4)), drops, n)


def compositions(total, parts):
    """The ordered ways to write `total` as `parts` positive integers."""
    if parts == 0:
        return [()] if total == 0 else []
    if parts == 1:
        return [(total,)] if total >= 1 else []
    return [(first,) + rest for first in range(1, total - parts + 2) for rest in compositions(total - first, parts - 1)]


def neighbours(squares, n):
    out = set()
    for sq in squares:
        r, c = divmod(sq, n)
        if r > 0:
            out.add(sq - n)
        if r < n - 1:
            out.add(sq + n)
        if c > 0:
            out.add(sq - 1)
        if c < n - 1:
            out.add(sq + 1)
    return out


def flood(seed, mask, n):
    seen, todo = set(seed) & mask, list(set(seed) & mask)
    while todo:
        for nb in neighbours([todo.pop()], n):
            if nb in mask and nb not in seen:
                seen.add(nb)
                todo.append(nb)
    return seen


def edges(n):
    return ({r * n for r in range(n)}, {r * n + n - 1 for r in range(n)}, set(range(n)), set(range(n * n - n, n * n)))


def has_road(road, n):
    if len(road) < n:
        return False
    left, right, bottom, top = edges(n)
    return bool(flood(road & left, road, n) & right) or bool(flood(road & bottom, road, n) & top)


def road_completion_squares(game, color):
    """`Position::road_completion_squares`: empty squares where a flat completes a road."""
    n = game.n
    road = game.road_squares(color)
    if len(road) + 1 < n:
        return set()
    empty = {sq for sq, s in enumerate(game.board) if not s}
    left, right, bottom, top = edges(n)

    def joins(edge):
        return edge | neighbours(flood(road & edge, road, n), n)

    return empty & ((joins(left) & joins(right)) | (joins(bottom) & joins(top)))


def road_groups(game, color):
    road, groups = game.road_squares(color), []
    while road:
        g = flood({min(road)}, road, game.n)
        groups.append(g)
        road -= g
    return groups


def encode(game, input_version, half_komi, np):
    n, area = game.n, game.n * game.n
    planes = 27 if input_version == 1 else 31
    out = np.zeros((planes, area), dtype=np.float32)
    me = game.to_move()
    for sq, stack in enumerate(game.board):
        if not stack:
            continue
        color, kind = stack[-1]
        out[kind if color == me else 3 + kind, sq] = 1.0
        for d in range(min(6, len(stack) - 1)):
            out[6 + 2 * d + int(stack[len(stack) - 2 - d][0] != me), sq] = 1.0
        out[18, sq] = min(len(stack) / 10.0, 1.0)
    stones0, caps0 = RESERVES[n]
    (ms, mc), (ts, tc) = game.reserves[me], game.reserves[1 - me]
    out[19] = ms / stones0
    out[20] = mc / caps0 if caps0 else 0.0
    out[21] = ts / stones0
    out[22] = tc / caps0 if caps0 else 0.0
    out[23] = 1.0 if me == WHITE else 0.0
    out[24] = (half_komi if me == BLACK else -half_komi) / 8.0
    out[25] = 1.0 if game.ply < 2 else 0.0
    out[26] = 1.0
    if input_version >= 2:
        for i, color in enumerate((me, 1 - me)):
            if sum(game.reserves[color]) > 0:
                for sq in road_completion_squares(game, color):
                    out[27 + i, sq] = 1.0
            for g in road_groups(game, color):
                rows = {sq // n for sq in g}
                cols = {sq % n for sq in g}
                extent = max(max(rows) - min(rows), max(cols) - min(cols)) + 1
                for sq in g:
                    out[29 + i, sq] = extent / n
    return out.reshape(planes, n, n)


def random_game_planes(n, count, input_version, half_komi, seed, np, keep):
    """`count` positions' planes, and of the first `keep`: their TPS, whether black is to
    move, and their legal moves' policy indices."""
    import random
    rng = random.Random(seed)
    out, kept = [], []
    while len(out) < count:
        game = Game(n)
        for _ in range(rng.randrange(2 * n * n)):
            if game.over():
                break
            game.make(rng.choice(game.legal_moves()))
        if not game.over():
            out.append(encode(game, input_version, half_komi, np) if input_version else np.zeros(1, dtype=np.float32))
            if len(kept) < keep:
                kept.append((game.tps(), game.to_move() == BLACK, [move_index(m, n) for m in game.legal_moves()]))
    return np.ascontiguousarray(np.stack(out)), kept


# ---------------------------------------------------------------------------------------
# Timing.

def time_calls(call, xs, batch, seconds):
    """Positions/s of `call` on consecutive batches of `xs` for about `seconds`."""
    call(xs[:batch])  # warm-up
    done, i, start = 0, 0, time.perf_counter()
    while time.perf_counter() - start < seconds or done == 0:
        lo = (i * batch) % (len(xs) - batch + 1)
        call(xs[lo:lo + batch])
        done += batch
        i += 1
    return done / (time.perf_counter() - start)


class Row:
    """One line of the table: a system in one mode and precision."""

    def __init__(self, label, status=None):
        self.label = label
        self.status = status  # None when it runs; else why not ("not installed ...")
        self.rates = {}  # batch -> [positions/s per round]
        self.agreement = {}  # reference -> {...}
        self.notes = []

    def best(self, b):
        return max(self.rates[b]) if self.rates.get(b) else None

    def spread(self):
        s = [(max(v) - min(v)) / max(v) for v in self.rates.values() if len(v) > 1 and max(v) > 0]
        return max(s) if s else None


class PeerRow(Row):
    """A row run in this process: `rate(batch, seconds)` and `infer(x)` (outputs by name)."""

    def __init__(self, label, rate=None, infer=None, status=None):
        super().__init__(label, status)
        self.rate, self.infer = rate, infer

    def measure(self, batches, seconds):
        for b in batches:
            self.rates.setdefault(b, []).append(self.rate(b, seconds))


class BredonRow(Row):
    """`bredon bench nn` in one precision: its main column (one call at a time over every
    thread: latency mode), and with `streams` its `xN` column too, into `streams_row` (N
    batches in flight, one a core, as self-play runs them: throughput mode)."""

    def __init__(self, label, cmd, env, precision, streams_row=None):
        super().__init__(label)
        self.cmd, self.env, self.precision, self.streams_row = cmd, env, precision, streams_row

    def measure(self, batches, seconds):
        out = run_bredon_bench(self.cmd + ["--batches", ",".join(map(str, batches)), "--seconds", str(seconds)], self.env)
        for b in batches:
            self.rates.setdefault(b, []).append(out["rates"][b])
            if self.streams_row is not None:
                if b not in out["streams"]:
                    raise RuntimeError(f"no `x{{N}}` column in `{' '.join(self.cmd)}`'s output")
                self.streams_row.rates.setdefault(b, []).append(out["streams"][b])


class FollowerRow(Row):
    """A row another one's command measures (Bredon's throughput columns)."""

    def measure(self, batches, seconds):
        pass


def run_bredon_bench(cmd, env):
    """Runs `bredon bench nn` with one path; returns its header, net, board size,
    {batch: rate} of its main column and {batch: rate} of its `xN` column (N batches in
    flight) where it has one."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    header, net, size, rates, streams = None, None, None, {}, {}
    for line in p.stdout.splitlines():
        if line.startswith("#") and rates:
            break  # the phase-by-phase table
        if line.startswith("size"):
            header = line
            continue
        parts = line.split()
        if header and len(parts) >= 4 and parts[0][0].isdigit():
            size, net = int(parts[0].split("x")[0]), parts[1]
            rates[int(parts[2])] = float(parts[3])
            if re.search(r"\sx\d+/s", header) and len(parts) >= 5:
                streams[int(parts[2])] = float(parts[4])
    if header is None or not rates:
        raise RuntimeError(f"no rates in the output of {' '.join(cmd)}:\n{p.stdout}")
    return {"header": header, "net": net, "size": size, "rates": rates, "streams": streams}


# ---------------------------------------------------------------------------------------
# The peers.

def ort_session(ort, path, threads, plain=False):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if plain:  # the reference: the graph as written, denormals computed as they are
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    else:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.add_session_config_entry("session.set_denormal_as_zero", "1")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_row(ort, path, threads):
    if ort is None:
        return PeerRow("onnxruntime f32", status="not installed (pip install onnxruntime)")
    s = ort_session(ort, path, threads)
    name = s.get_inputs()[0].name
    outs = [o.name for o in s.get_outputs()]

    def infer(x):
        return dict(zip(outs, s.run(outs, {name: x})))

    row = PeerRow(f"onnxruntime {ort.__version__} f32", rate=lambda b, sec: time_calls(infer, XS, b, sec), infer=infer)
    row.notes.append("ORT_ENABLE_ALL, denormals as zero, intra-op threads = --threads, inter-op 1")
    return row


def openvino_rows(ov, path, threads, batches, shape, np):
    if ov is None:
        return [PeerRow(f"openvino {p} {m}", status="not installed (pip install openvino)")
                for p in ("f32", "bf16") for m in ("latency", "throughput")]
    core = ov.Core()
    rows = []
    for precision in ("f32", "bf16"):
        for mode in ("LATENCY", "THROUGHPUT"):
            label = f"openvino {precision} {mode.lower()}"
            config = {"PERFORMANCE_HINT": mode, "INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": precision}
            try:
                compiled = {}
                for b in sorted(set(batches) | {max(batches)}):
                    model = core.read_model(path)
                    model.reshape({model.inputs[0]: [b] + list(shape)})
                    compiled[b] = core.compile_model(model, "CPU", config)
            except Exception as e:  # e.g. a precision the CPU refuses
                rows.append(PeerRow(label, status=f"failed: {str(e).strip().splitlines()[0][:120]}"))
                continue
            c0 = compiled[max(batches)]
            hint = c0.get_property("INFERENCE_PRECISION_HINT")
            runs = hint.get_type_name() if hasattr(hint, "get_type_name") else str(hint)
            nreq = int(c0.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
            streams = c0.get_property("NUM_STREAMS")
            outs = [o.get_any_name() for o in c0.outputs]
            if runs != precision:
                label += f" (runs {runs})"
            if mode == "THROUGHPUT":
                label += f" ({nreq} in flight)"
            requests = {b: c.create_infer_request() for b, c in compiled.items()}

            def infer(x, requests=requests, outs=outs):
                r = requests[len(x)]
                res = r.infer({0: x})
                return {name: np.array(res[i], dtype=np.float32) for i, name in enumerate(outs)}

            if mode == "LATENCY":
                def rate(b, sec, requests=requests):
                    r = requests[b]
                    return time_calls(lambda x: r.infer({0: x}, share_inputs=True, share_outputs=True), XS, b, sec)
            else:
                def rate(b, sec, compiled=compiled, nreq=nreq):
                    q = ov.AsyncInferQueue(compiled[b], nreq)
                    for i in range(nreq):  # warm-up, every request once
                        q.start_async({0: XS[i * b % (len(XS) - b + 1):][:b]}, share_inputs=True)
                    q.wait_all()
                    done, i, start = 0, 0, time.perf_counter()
                    while time.perf_counter() - start < sec or done == 0:
                        lo = (i * b) % (len(XS) - b + 1)
                        q.start_async({0: XS[lo:lo + b]}, share_inputs=True)  # waits for an idle request
                        done += b
                        i += 1
                    q.wait_all()
                    return done / (time.perf_counter() - start)

            row = PeerRow(label, rate=rate, infer=infer)
            row.notes.append(f"INFERENCE_PRECISION_HINT {precision}, the compiled model's: {runs}; "
                             f"NUM_STREAMS {streams}, OPTIMAL_NUMBER_OF_INFER_REQUESTS {nreq}; "
                             "a static batch shape per batch size")
            row.precision_runs = runs
            rows.append(row)
    return rows


def torch_row(torch, path, threads, batches):
    label = "pytorch bf16 channels-last"
    if torch is None:
        return PeerRow(label, status="not installed (pip install torch onnx2torch)")
    onnx2torch = try_import("onnx2torch")
    if onnx2torch is None:
        return PeerRow(label, status="onnx2torch not installed (pip install onnx2torch onnx)")
    try:
        torch.set_num_threads(threads)
        net = onnx2torch.convert(path).eval()
        net = net.to(memory_format=torch.channels_last).to(torch.bfloat16)
        xt = torch.from_numpy(XS).to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
        outs = OUT_NAMES
        notes = []
        with torch.no_grad():  # as PyTorch's CPU tuning guide traces and freezes for inference
            try:
                fn = torch.jit.freeze(torch.jit.trace(net, xt[:max(batches)], check_trace=False))
                fn(xt[:max(batches)])
                notes.append(f"onnx2torch, torch.jit.trace + freeze, no_grad, {threads} threads")
            except Exception as e:
                fn = net
                notes.append(f"eager, {threads} threads (tracing failed: {str(e).strip().splitlines()[0][:80]})")

        def run(x):
            with torch.no_grad():
                y = fn(x)
            return y if isinstance(y, (tuple, list)) else (y,)

        def infer(x):
            y = run(torch.from_numpy(x).to(torch.bfloat16).contiguous(memory_format=torch.channels_last))
            return {name: t.float().numpy() for name, t in zip(outs, y)}

        row = PeerRow(f"pytorch {torch.__version__.split('+')[0]} bf16 channels-last",
                      rate=lambda b, sec: time_calls(run, xt, b, sec), infer=infer)
        row.notes += notes
        return row
    except Exception as e:
        return PeerRow(label, status=f"failed: {str(e).strip().splitlines()[0][:120]}")


# ---------------------------------------------------------------------------------------
# Agreement.

def outputs_in_chunks(infer, xs, chunk, np):
    """`infer` over `xs` in chunks of exactly `chunk` (the last one padded)."""
    got = {}
    for lo in range(0, len(xs), chunk):
        x = xs[lo:lo + chunk]
        pad = chunk - len(x)
        if pad:
            x = np.concatenate([x, np.repeat(x[-1:], pad, axis=0)])
        for k, v in infer(np.ascontiguousarray(x)).items():
            got.setdefault(k, []).append(np.asarray(v, dtype=np.float32)[:chunk - pad])
    return {k: np.concatenate(v) for k, v in got.items()}


def summarise(outputs, legal, np):
    """A forward pass's outputs as compared: per position the value, the policy logits,
    the priors (softmax over the legal moves) and the top legal move's policy index."""
    logits = outputs["policy_logits"]
    masked = np.where(legal, logits, -np.inf)
    top = masked.argmax(axis=1)
    priors = np.exp(masked - masked[np.arange(len(top)), top][:, None])
    priors /= priors.sum(axis=1, keepdims=True)
    return {"value": outputs["value"].reshape(-1), "policy_logits": logits, "priors": priors,
            "top": [{t} for t in top.tolist()], "valid": np.ones(len(top), dtype=bool)}


def bredon_outputs(bredon, model, precision, infos, komi, env, np):
    """Bredon's own forward pass on the same positions: `bredon analyse --json` with one
    visit answers the network's value at the root (from `perspective`) and the priors of
    16 legal moves (every move of the highest priors there: the search lists unvisited
    moves with the tactically forced ones first, then by prior), all to 4 decimals; the
    top move is the one of the highest prior (any of them, where the rounding ties).
    Positions it proves (a road in one) or finds over answer the exact result, not the
    network's: they are left out."""
    queries = "".join(json.dumps({"id": str(i), "tps": tps, "visits": 1, "komi": komi, "multipv": 16}) + "\n"
                      for i, (tps, _, _) in enumerate(infos))
    cmd = [bredon, "analyse", "--json", "--model", model, "--inference", "fast", "--precision", precision]
    p = subprocess.run(cmd, input=queries, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    n, size = len(infos), SIZE
    value, valid = np.zeros(n, dtype=np.float32), np.zeros(n, dtype=bool)
    priors = np.full((n, 3 * size * size + size * size * 4 * ((1 << size) - 1)), np.nan, dtype=np.float32)
    tops = [set() for _ in range(n)]
    for line in p.stdout.splitlines():
        a = json.loads(line)
        i = int(a.get("id") or -1)
        if not 0 <= i < n or a.get("error") or a.get("result") or a.get("proven") or not a.get("moves"):
            continue
        to_move = "black" if infos[i][1] else "white"
        value[i] = a["value"] if a["perspective"] == to_move else -a["value"]
        listed = [(ptn_index(m["move"], size), m["prior"]) for m in a["moves"]]
        if any(idx is None for idx, _ in listed):
            continue
        for idx, pr in listed:
            priors[i, idx] = pr
        best = max(pr for _, pr in listed)
        tops[i] = {idx for idx, pr in listed if pr == best}
        valid[i] = True
    if not valid.any():
        raise RuntimeError(f"no usable answer from {' '.join(cmd)}")
    return {"value": value, "policy_logits": None, "priors": priors, "top": tops, "valid": valid}


def agreement(got, ref, np):
    ok = got["valid"] & ref["valid"]
    v = float(np.abs(got["value"][ok] - ref["value"][ok]).max())
    logits = None
    if got["policy_logits"] is not None and ref["policy_logits"] is not None:
        logits = float(np.abs(got["policy_logits"] - ref["policy_logits"]).max())
    d = np.abs(got["priors"][ok] - ref["priors"][ok])
    prior = float(np.nanmax(d)) if not np.isnan(d).all() else None
    same = [bool(got["top"][i] & ref["top"][i]) for i in np.nonzero(ok)[0]]
    return {"positions": int(ok.sum()), "max_abs_value": v, "max_abs_logit": logits, "max_abs_prior": prior,
            "top1_same": float(np.mean(same))}


# ---------------------------------------------------------------------------------------

def cpu_info():
    model, flags = "?", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "?":
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return model, {f: f in flags for f in CPU_FLAGS}


def fmt_rate(x):
    return "-" if x is None else f"{x:.0f}"


def main():
    global XS, OUT_NAMES, SIZE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "checkpoints", "shipped", "6x6.bredon"),
                    help="a `bredon export` file or a checkpoint directory (default: the shipped 6x6 model)")
    ap.add_argument("--batches", default="1,64,256", help="batch sizes (default 1,64,256)")
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds per cell per round (default 3)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds; the systems take turns in each (default 2)")
    ap.add_argument("--threads", type=int, default=2, help="threads of every system (default 2)")
    ap.add_argument("--bredon", default=os.path.join(ROOT, "target", "release", "bredon"), help="the bredon binary")
    ap.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    args = ap.parse_args()
    try:
        batches = sorted({int(b) for b in args.batches.split(",") if b.strip()})
    except ValueError:
        die(f"--batches {args.batches!r}: comma-separated positive integers")
    if not batches or min(batches) < 1 or args.rounds < 1 or args.threads < 1 or args.seconds <= 0:
        die("--batches, --rounds, --threads and --seconds must be positive")
    if not os.path.exists(args.model):
        die(f"model {args.model} not found")
    if not (os.path.isfile(args.bredon) and os.access(args.bredon, os.X_OK)):
        die(f"bredon binary {args.bredon} not found (cargo build --release, or --bredon PATH)")
    np = try_import("numpy")
    if np is None:
        die("needs numpy: python3 -m pip install numpy")
    ort, ov, onnx, torch = try_import("onnxruntime"), try_import("openvino"), try_import("onnx"), try_import("torch")
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads))

    tmp = tempfile.TemporaryDirectory()
    full_path = os.path.join(tmp.name, "net.onnx")
    p = subprocess.run([args.bredon, "export", args.model, "--format", "onnx", "-o", full_path],
                       capture_output=True, text=True)
    if p.returncode != 0 or not os.path.exists(full_path):
        die(f"`bredon export {args.model} --format onnx` failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    version = subprocess.run([args.bredon, "--version"], capture_output=True, text=True).stdout.strip()

    # Bredon's own forward pass: which precisions the build runs natively, and whether its
    # benchmark has a throughput mode (`--streams`).
    nn_help = subprocess.run([args.bredon, "bench", "nn", "--help"], capture_output=True, text=True).stdout
    has_streams = "--streams" in nn_help
    try:
        probe = run_bredon_bench([args.bredon, "bench", "nn", "--model", args.model, "--inference", "fast",
                                  "--precision", "f32", "--batches", "1", "--seconds", "0.01"]
                                 + (["--streams", "1"] if has_streams else []), env)
    except RuntimeError as e:
        die(str(e).splitlines()[0])

    # The graph's inputs and outputs; pruned to what the search reads where onnx can.
    meta, in_shape = {}, None
    if onnx is not None:
        m = onnx.load(full_path)
        meta = {p.key: p.value for p in m.metadata_props}
        in_name, in_shape = m.graph.input[0].name, [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
        all_outs = [o.name for o in m.graph.output]
        OUT_NAMES = [o for o in all_outs if o in SEARCH_OUTPUTS]
        path = os.path.join(tmp.name, "search.onnx")
        onnx.utils.extract_model(full_path, path, [in_name], OUT_NAMES)
        pruned = f"pruned to the outputs the search reads ({', '.join(OUT_NAMES)}; left out: {', '.join(o for o in all_outs if o not in OUT_NAMES) or 'none'})"
    elif ort is not None:
        s = ort.InferenceSession(full_path, providers=["CPUExecutionProvider"])
        meta = s.get_modelmeta().custom_metadata_map
        in_shape = list(s.get_inputs()[0].shape)
        OUT_NAMES = [o.name for o in s.get_outputs()]
        path = full_path
        pruned = "NOT pruned (every head computed, training-only ones too: pip install onnx to prune)"
    elif ov is not None:
        m = ov.Core().read_model(full_path)
        for key in ("input_version", "half_komi"):
            if m.has_rt_info(["framework", key]):
                meta[key] = m.get_rt_info(["framework", key]).astype(str)
        in_shape = [d.get_length() if d.is_static else 0 for d in m.inputs[0].partial_shape]
        OUT_NAMES = [o.get_any_name() for o in m.outputs]
        path = full_path
        pruned = "NOT pruned (every head computed, training-only ones too: pip install onnx to prune)"
    if in_shape:
        planes, size = int(in_shape[1]), int(in_shape[2])
        input_version = int(meta.get("input_version", 2 if planes == 31 else 1))
    else:  # nothing here reads ONNX: Bredon's rows only (their agreement needs no planes)
        planes, size, input_version, path, pruned = None, probe["size"], None, full_path, "not read (no peer installed)"
    half_komi = int(meta.get("half_komi", 0))

    SIZE = size
    count = max(max(batches), AGREEMENT_POSITIONS)
    t0 = time.perf_counter()
    XS, infos = random_game_planes(size, count, input_version, half_komi, size, np, AGREEMENT_POSITIONS)
    gen_s = time.perf_counter() - t0
    legal = np.zeros((len(infos), 3 * size * size + size * size * 4 * ((1 << size) - 1)), dtype=bool)
    for i, (_, _, moves) in enumerate(infos):
        legal[i, moves] = True

    bredon_cmd = [args.bredon, "bench", "nn", "--model", args.model, "--inference", "fast"]
    isa = probe["header"].split("fast kernels on the CPU:", 1)[-1].split(";")[0].strip(" )")
    # The header names each lower precision's units where the CPU has them ("bf16 on AMX
    # tiles", "int8 on AVX-512 VNNI"), and says "no bf16 units" where it does not.
    precisions = ["f32"] + [p for p in ("bf16", "int8") if f"{p} on " in probe["header"]]
    # Agreement is measured on the first positions. The plain-f32 reference runs before any
    # peer's session exists (onnxruntime's denormal flush also sets the calling thread's mode).
    n_agree = len(infos)
    ax = XS[:n_agree]
    komi = half_komi / 2
    refs, failed = {}, {}
    if ort is not None and input_version:
        plain = ort_session(ort, path, args.threads, plain=True)
        pin = plain.get_inputs()[0].name
        refs["P"] = summarise(outputs_in_chunks(lambda x: dict(zip(OUT_NAMES, plain.run(OUT_NAMES, {pin: x}))),
                                                ax, max(batches), np), legal, np)
        del plain

    rows, followers = [], []
    for precision in precisions:
        streams = has_streams and args.threads > 1
        cmd = bredon_cmd + ["--precision", precision] + (["--streams", str(args.threads) if streams else "1"] if has_streams else [])
        follower = FollowerRow(f"bredon fast {precision} throughput ({args.threads} in flight)") if streams else None
        row = BredonRow(f"bredon fast {precision} latency", cmd, env, precision, follower)
        row.notes.append(f"`{' '.join(['bredon'] + cmd[1:])}`, RAYON_NUM_THREADS={args.threads}; kernels: {isa}; "
                         "its own random-game positions, with their encoding and the priors over the legal moves")
        if not has_streams and precision == "f32":
            row.notes.append("this bredon's `bench nn` has no --streams: no throughput row")
        rows.append(row)
        if follower is not None:
            follower.notes.append(f"the `x{args.threads}` column of `{row.label}`'s command: {args.threads} batches "
                                  "in flight, one a core, each core with its own copy of the network")
            follower.leader = row
            followers.append(follower)
    rows += followers

    rows.append(ort_row(ort, path, args.threads))
    rows += openvino_rows(ov, path, args.threads, batches, (in_shape or [0])[1:], np)
    rows.append(torch_row(torch, path, args.threads, batches))

    # Agreement on the same positions: with Bredon's f32 forward pass (B) and with the ONNX
    # graph run by onnxruntime in plain f32 (P).
    def outputs_of(r):
        if isinstance(r, BredonRow):
            return bredon_outputs(args.bredon, args.model, r.precision, infos, komi, env, np)
        return summarise(outputs_in_chunks(r.infer, ax, max(batches), np), legal, np)

    try:
        refs["B"] = outputs_of(rows[0])
    except Exception as e:
        failed[rows[0].label] = e
    for r in rows:
        if r.status is not None or isinstance(r, FollowerRow):
            continue
        try:
            got = refs["B"] if r is rows[0] else outputs_of(r)
            r.agreement = {k: agreement(got, ref, np) for k, ref in refs.items()}
        except Exception as e:
            r.notes.append(f"agreement failed: {str(failed.get(r.label, e)).strip().splitlines()[0][:120]}")
            if not isinstance(r, BredonRow):
                r.status = f"failed: {str(e).strip().splitlines()[0][:120]}"
    for r in followers:  # the same pass as its leader's, run on more cores
        r.agreement = r.leader.agreement
    proven = n_agree - int(refs["B"]["valid"].sum()) if "B" in refs else None

    # The rounds: every system in turn, starting one further along each round.
    live = [r for r in rows if r.status is None]
    for rnd in range(args.rounds):
        for r in live[rnd % len(live):] + live[:rnd % len(live)]:
            if r.status is not None:
                continue
            try:
                r.measure(batches, args.seconds)
            except Exception as e:
                r.status = f"failed: {str(e).strip().splitlines()[0][:120]}"
        print(f"  round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    for r in followers:
        if r.leader.status is not None:
            r.status = r.leader.status

    # The report.
    cpu, flags = cpu_info()
    vers = [f"python {platform.python_version()}", f"numpy {np.__version__}"]
    for name, mod in (("onnxruntime", ort), ("openvino", ov), ("onnx", onnx), ("torch", torch)):
        vers.append(f"{name} {mod.__version__.split('-')[0] if mod else 'not installed'}")
    header = [
        f"bench-peers: {args.model} ({probe['net']}, {size}x{size}, {planes or '?'} input planes), {args.threads} threads, "
        f"{args.seconds:g} s a cell, best of {args.rounds} round(s); positions/s"
        + ("; spread: a row's largest gap between rounds in a cell, over its best" if args.rounds > 1 else ""),
        f"versions: {', '.join(vers)}, {version}",
        f"cpu: {cpu}, {os.cpu_count()} logical; " + ", ".join(f"{f} {'yes' if v else 'no'}" for f, v in flags.items())
        + "; load average %.2f %.2f %.2f" % os.getloadavg(),
        f"inputs: {count} positions of random games played by this script (uniform random legal moves, as bredon's "
        f"`random_positions`; {gen_s:.1f} s), "
        + (f"encoded as bredon's `encode` does (input version {input_version}), komi {komi:g}" if input_version
           else f"not encoded (no peer to run them), komi {komi:g}"),
        f"peers' graph: {pruned}",
    ]
    if refs:
        left = f"; {proven} that bredon proves or finds over left out of B" if proven else ""
        said = {"B": "B = Bredon's own f32 forward pass (`bredon analyse --json`, one visit: the network's value and "
                     "16 legal moves' priors, to 4 decimals)",
                "P": "P = the ONNX graph in onnxruntime in plain f32 (graph optimisations off, denormals kept)"}
        header.append(
            f"agreement on the first {n_agree} positions{left}: " + ", ".join(said[k] for k in said if k in refs)
            + "; Δv: max |value difference|, Δprior: max |difference of a legal move's prior| (softmax over the legal "
            "moves), Δlogit: max |policy logit difference|, top1: share of positions with the same top legal move")
    else:
        header.append("agreement: no reference could be computed")
    w = max(len(r.label) for r in rows) + 1
    head = (f"{'system':<{w}}" + "".join(f"{f'b={b}':>8}" for b in batches) + f"{'spread':>7} |"
            f"{'Δv B':>8}{'Δprior B':>9}{'top1 B':>8} |{'Δv P':>8}{'Δprior P':>9}{'Δlogit P':>9}{'top1 P':>8}")
    lines = header + ["", head, "-" * len(head)]

    def num(x, spec):
        return "-" if x is None else format(x, spec)

    def pct(a):
        return "-" if a is None else f"{100 * a['top1_same']:.1f}%"

    for r in rows:
        if r.status is not None:
            lines.append(f"{r.label:<{w}}{r.status}")
            continue
        sp = r.spread()
        cells = "".join(f"{fmt_rate(r.best(b)):>8}" for b in batches) + f"{('-' if sp is None else f'{100 * sp:.0f}%'):>7} |"
        B, P = r.agreement.get("B"), r.agreement.get("P")
        if r is rows[0] and B:
            cells += f"{'(the reference)':>25} |"
        elif getattr(r, "leader", None) is rows[0] and B:
            cells += f"{'(the reference pass)':>25} |"
        else:
            cells += (f"{num(B and B['max_abs_value'], '.1e'):>8}{num(B and B['max_abs_prior'], '.1e'):>9}"
                      f"{pct(B):>8} |")
        cells += (f"{num(P and P['max_abs_value'], '.1e'):>8}{num(P and P['max_abs_prior'], '.1e'):>9}"
                  f"{num(P and P['max_abs_logit'], '.1e'):>9}{pct(P):>8}")
        lines.append(f"{r.label:<{w}}{cells}")
    lines.append("")
    lines += [f"  {r.label}: {'; '.join(r.notes)}" for r in rows if r.notes and r.status is None]
    print("\n".join(lines))

    if args.json:
        doc = {
            "model": args.model, "net": probe["net"], "size": size, "planes": planes, "threads": args.threads,
            "seconds": args.seconds, "rounds": args.rounds, "batches": batches, "header": header,
            "cpu": cpu, "cpu_flags": flags, "bredon_version": version,
            "versions": {"python": platform.python_version(), "numpy": np.__version__,
                         **{n: (m.__version__ if m else None) for n, m in
                            (("onnxruntime", ort), ("openvino", ov), ("onnx", onnx), ("torch", torch))}},
            "references": {k: v for k, v in (("B", "bredon f32 (analyse --json, one visit)"),
                                             ("P", "onnxruntime plain f32")) if k in refs},
            "rows": [{"system": r.label, "status": r.status or "ran", "notes": r.notes,
                      "best": {str(b): r.best(b) for b in batches},
                      "rounds": {str(b): r.rates.get(b, []) for b in batches},
                      "spread": r.spread(), "agreement": r.agreement} for r in rows],
        }
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    tmp.cleanup()


XS = None  # the planes every peer is timed on
OUT_NAMES = None  # the peers' graph outputs
SIZE = None

if __name__ == "__main__":
    main()
