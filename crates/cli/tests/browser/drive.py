#!/usr/bin/env python3
"""Drives `bredon serve` in headless Chromium through WebDriver (selenium).

Usage: drive.py URL OUTDIR. On a fresh profile the play screen opens on 6x6 at komi 2;
the new-game choice (size, komi, colour, budget) is remembered over a reload, and stored
values the page no longer offers (or malformed storage) are ignored. Plays a whole 3x3
game against the engine by clicking (a placement, a spread, an illegal move refused, an
undo), a few 5x5 moves against the shipped model by PTN entry, analyses a PTN game
(evaluation, flat margin, heat map, ownership map, a blunder mark) and opens a run's
dashboard. Then, with the window 1280 and 1920 px wide, every board from 3x3 to 8x8 lies
inside the viewport, beside the controls and clear of them. Writes play.png, analyse.png,
watch.png, fit-1280.png and fit-1920.png (an 8x8 board) to OUTDIR.
Run by crates/cli/tests/it/browser.rs, which starts the server; exits non-zero on failure.
"""
import os
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

# Chromium's profile, removed when the script exits (the test leaves nothing in /tmp).
PROFILE = tempfile.TemporaryDirectory(prefix="bredon-chromium-", ignore_cleanup_errors=True)

URL, OUT = sys.argv[1].rstrip("/"), sys.argv[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")

# A 5x5 game in which black's 4th move (a5) ignores white's threat of a road on e1.
BLUNDER_PTN = '[Size "5"]\n[Komi "0"]\n\n1. e5 a1\n2. b1 e4\n3. c1 e3\n4. d1 a5\n5. e1 R-0\n'


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--window-size=1300,980", "--hide-scrollbars",
        f"--user-data-dir={PROFILE.name}",
    ]:
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


d = browser()
wait = lambda secs=60: WebDriverWait(d, secs, poll_frequency=0.05)
by_id = lambda i: d.find_element(By.ID, i)


def board(host):
    return dict(d.execute_script(
        f"return [...document.querySelectorAll('#{host} .cell')].map(c => [c.dataset.sq, c.dataset.stack])"))


def moves_played():
    return len(d.execute_script("return play.moves"))


def my_turn_or_over():
    status = by_id("play-status")
    return status.get_attribute("data-result") or status.text.startswith("Your move")


def click_sq(sq):
    by_id(f"play-board-{sq}").click()


def set_input(i, value):
    el = by_id(i)
    el.clear()
    el.send_keys(str(value))


def new_game(size, budget, color="white", komi=0, kind="visits"):
    """Starts a game from the controls and waits for the human's first turn."""
    Select(by_id("play-size")).select_by_value(str(size))
    Select(by_id("play-color")).select_by_value(color)
    set_input("play-komi", komi)
    Select(by_id("play-model")).select_by_value("auto")
    Select(by_id("play-budget-kind")).select_by_value(kind)
    set_input("play-budget", budget)
    by_id("play-new").click()
    # The new game is shown (not the last one's board), the engine's first move made.
    want = [size, round(2 * komi), 0 if color == "white" else 1]
    wait().until(lambda _: my_turn_or_over() and d.execute_script(
        "return play.game && [play.game.size, play.game.half_komi, play.game.moves.length]") == want)


def load(path):
    """Opens the page afresh (a reload when only the #fragment would change) and waits for
    it to start."""
    d.execute_script("window.bredonOldPage = true")
    d.get(URL + path)
    if d.execute_script("return window.bredonOldPage === true"):
        d.refresh()
    wait().until(lambda _: d.execute_script(
        "return !window.bredonOldPage && document.body.dataset.ready === '1'"))


def controls():
    """The new-game controls' values, and the size and half komi of the game shown."""
    vals = {k: by_id(i).get_attribute("value") for k, i in [
        ("size", "play-size"), ("komi", "play-komi"), ("color", "play-color"), ("model", "play-model"),
        ("kind", "play-budget-kind"), ("budget", "play-budget")]}
    vals["komi"] = float(vals["komi"])
    vals["game"] = d.execute_script("return [play.game.size, play.game.half_komi]")
    return vals


def fit_window(width, height):
    """Sizes the window so that the viewport (window.innerWidth) is `width` px wide."""
    d.set_window_size(width, height)
    iw, ih = d.execute_script("return [innerWidth, innerHeight]")
    if (iw, ih) != (width, height):
        d.set_window_size(2 * width - iw, 2 * height - ih)
    iw, ih = d.execute_script("return [innerWidth, innerHeight]")
    assert iw == width, f"cannot get a {width} px wide viewport (innerWidth {iw})"
    return ih


def check_fit(width, size):
    """The play board lies inside the viewport and beside the controls, overlapping none."""
    g = d.execute_script("""
        const r = (sel) => { const b = document.querySelector(sel).getBoundingClientRect();
                             return { left: b.left, right: b.right, top: b.top, bottom: b.bottom }; };
        return { board: r('#play-board .board'), column: r('#play .board-column'), side: r('#play-side'),
                 cell: document.querySelector('#play-board .cell').getBoundingClientRect().width,
                 vw: document.documentElement.clientWidth, sw: document.documentElement.scrollWidth,
                 iw: innerWidth, ih: innerHeight };""")
    b, c, s = g["board"], g["column"], g["side"]
    where = f"{size}x{size} at {width} px: {g}"
    assert g["iw"] == width and g["vw"] == width, where
    assert g["sw"] <= g["vw"], "the page scrolls sideways: " + where
    assert 0 <= b["left"] and b["right"] <= g["vw"], "the board leaves the viewport: " + where
    assert b["bottom"] <= g["ih"], "the board runs below the window: " + where
    assert s["right"] <= g["vw"], "the controls leave the viewport: " + where
    # Beside: the controls start right of the board (and of the text under it), level
    # with the board rather than wrapped below it.
    assert b["right"] <= c["right"] <= s["left"], "the board overlaps the controls: " + where
    assert s["top"] < b["bottom"], "the controls wrapped below the board: " + where
    assert g["cell"] >= 60, "the squares are too small: " + where
    return b


def spread_source(cells, size):
    """A white-topped flat stack next to a square a spread may enter (empty or a flat)."""
    files = "abcdefgh"
    for sq, stack in cells.items():
        if not stack or stack[-1] != "1":
            continue
        c, r = files.index(sq[0]), int(sq[1:])
        for dc, dr in [(1, 0), (-1, 0), (0, 1), (0, -1)]:
            if 0 <= c + dc < size and 1 <= r + dr <= size:
                to = f"{files[c + dc]}{r + dr}"
                if not cells[to] or cells[to][-1] in "12":
                    return sq, to, min(len(stack), size)
    return None


DEFAULTS = {"size": "6", "komi": 2.0, "color": "white", "model": "auto", "kind": "visits", "budget": "400",
            "game": [6, 4]}

try:
    t0 = time.time()
    load("/#play")
    log("page loaded")

    # --- A fresh profile opens on Tak's standard game: 6x6, komi 2. ---
    got = controls()
    assert got == DEFAULTS, got
    assert len(board("play-board")) == 36
    log("defaults:", got)

    # --- The last choice is remembered over a reload. ---
    new_game(4, 300, "black", komi=1, kind="millis")
    load("/#play")
    got = controls()
    want = {"size": "4", "komi": 1.0, "color": "black", "model": "auto", "kind": "millis", "budget": "300", "game": [4, 2]}
    assert got == want, got
    wait().until(lambda _: my_turn_or_over() and moves_played() == 1)
    log("remembered after a reload:", got)
    # Stored values the page does not offer are ignored, one by one; storage that is not
    # JSON is ignored whole.
    for stored, want in [
        ("{not json", DEFAULTS),
        ('[4, "black"]', DEFAULTS),
        ('{"size": 11, "komi": "two", "color": "red", "model": "m-99", "budgetKind": "nodes", "budget": -3}', DEFAULTS),
        ('{"size": "3", "komi": 9, "color": "black", "budgetKind": "millis", "budget": 5}',
         {**DEFAULTS, "size": "3", "color": "black", "kind": "millis", "game": [3, 4]}),
    ]:
        d.execute_script("localStorage.setItem('bredon.play', arguments[0])", stored)
        load("/#play")
        got = controls()
        assert got == want, (stored, got)
    log("invalid stored choices ignored")
    # A new game started while the engine thinks: its search is dropped and the human moves.
    Select(by_id("play-color")).select_by_value("black")
    Select(by_id("play-budget-kind")).select_by_value("millis")
    set_input("play-budget", 5000)
    by_id("play-new").click()
    wait().until(lambda _: by_id("play-status").text.startswith("Engine thinking"))
    new_game(3, 30)
    log("new game while the engine thinks: your move")

    # --- A whole 3x3 game against the engine, by clicking. ---
    new_game(3, 30)
    order = ["a1", "b1", "c1", "a2", "b2", "c2", "a3", "b3", "c3"]
    did = {"illegal": False, "spread": False, "undo": False}
    for turn in range(1, 40):
        wait().until(lambda _: my_turn_or_over())
        if by_id("play-status").get_attribute("data-result"):
            break
        before = moves_played()
        cells = board("play-board")
        if not did["illegal"] and any(cells.values()):
            # An occupied square typed as PTN: refused with the rules' reason.
            taken = next(sq for sq, s in cells.items() if s)
            set_input("play-ptn-input", taken)
            by_id("play-ptn-go").click()
            wait().until(lambda _: "illegal" in by_id("play-msg").text)
            log("illegal move refused:", by_id("play-msg").text)
            assert moves_played() == before
            did["illegal"] = True
        if not did["undo"] and before >= 4:
            by_id("play-undo").click()
            wait().until(lambda _: moves_played() == before - 2 and my_turn_or_over())
            log("undo: back to", before - 2, "moves")
            did["undo"] = True
            continue
        source = spread_source(cells, 3) if before >= 2 and not did["spread"] else None
        if source:
            frm, to, carry = source
            click_sq(frm)
            for _ in range(carry):
                click_sq(to)
            did["spread"] = True
            log(f"spread {carry} from {frm} to {to}")
        else:
            empty = [sq for sq in order if not cells[sq]]
            click_sq(empty[0])
        wait().until(lambda _: moves_played() > before or by_id("play-msg").text)
        assert moves_played() > before, "the click was refused: " + by_id("play-msg").text
    status = by_id("play-status").text
    ptn = by_id("play-ptn").get_attribute("value")
    log("3x3 game over:", status, "| moves:", " ".join(d.execute_script("return play.moves")))
    assert status.startswith("Game over"), status
    assert all(did.values()), did
    assert '[Result "' in ptn and "[Size \"3\"]" in ptn, ptn
    log(f"full game: {time.time() - t0:.1f} s")

    # --- A few 5x5 moves against the shipped model, typed as PTN: the README's picture. ---
    new_game(5, 40)  # komi 0, as the shipped 5x5 model was trained
    for want in ["e5", "c3", "Cc2", "Sd3"]:
        cells = board("play-board")
        if by_id("play-status").get_attribute("data-result"):
            break
        if cells[want[-2:]]:
            continue
        before = moves_played()
        set_input("play-ptn-input", want)
        by_id("play-ptn-go").click()
        wait().until(lambda _: moves_played() > before + 1 or by_id("play-msg").text)
        wait().until(lambda _: my_turn_or_over())
    assert moves_played() >= 6, d.execute_script("return play.moves")
    assert by_id("play-eval").text, "the engine's evaluation is shown"
    d.execute_script("window.scrollTo(0, 0)")
    d.save_screenshot(os.path.join(OUT, "play.png"))
    log("play.png")

    # --- Analyse a pasted game. ---
    d.get(URL + "/#analyse")
    wait().until(lambda _: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    by_id("an-text").send_keys(BLUNDER_PTN)
    set_input("an-visits", 100)
    by_id("an-go").click()
    wait(120).until(lambda _: by_id("an-status").get_attribute("data-done") == "done")
    log("analysis:", by_id("an-status").text)
    blunder = d.find_element(By.CSS_SELECTOR, '#an-moves span[data-ply="8"]')
    assert "a5" in blunder.text and "?" in blunder.text, blunder.text
    # The start: the network's policy spreads over many squares.
    by_id("an-first").click()
    heat = d.find_elements(By.CSS_SELECTOR, "#an-board .heat")
    assert len(heat) >= 3, f"{len(heat)} heat cells"
    # The position before the blunder: evaluation, line and heat map shown.
    d.find_element(By.CSS_SELECTOR, '#an-moves span[data-ply="7"]').click()
    assert d.find_elements(By.CSS_SELECTOR, "#an-board .heat")
    assert "%" in by_id("an-evalbar-text").text, by_id("an-evalbar-text").text
    info = by_id("an-info").text
    assert "best" in info and "line" in info, info
    # The proven win after the blunder is shown as such.
    d.find_element(By.CSS_SELECTOR, '#an-moves span[data-ply="8"]').click()
    assert "proven" in by_id("an-evalbar-text").text, by_id("an-evalbar-text").text
    # The ownership map: every square tinted by its expected owner (the shipped 5x5
    # network has the ownership head), the flat margin beside the win probability, and
    # the toggle takes the map off.
    d.find_element(By.CSS_SELECTOR, '#an-moves span[data-ply="6"]').click()
    owners = [float(x) for x in d.execute_script(
        "return [...document.querySelectorAll('#an-board .cell .own')].map(e => e.dataset.own)")]
    assert len(owners) == 25 and all(-1 <= o <= 1 for o in owners), owners
    assert any(o > 0.1 for o in owners) and any(o < -0.1 for o in owners), owners
    # e5 holds black's flat (white placed it on move 1), a1 white's: each owned by its side.
    e5 = float(by_id("an-board-e5").find_element(By.CSS_SELECTOR, ".own").get_attribute("data-own"))
    a1 = float(by_id("an-board-a1").find_element(By.CSS_SELECTOR, ".own").get_attribute("data-own"))
    assert e5 < 0 < a1, (e5, a1)
    margin = by_id("an-margin").text
    assert margin.startswith("White ") and margin.endswith(" flats"), margin
    log("ownership map drawn; margin:", margin)
    by_id("an-own").click()
    assert not d.find_elements(By.CSS_SELECTOR, "#an-board .own")
    by_id("an-own").click()
    assert len(d.find_elements(By.CSS_SELECTOR, "#an-board .own")) == 25
    # The picture: the position before the winning e1, the map without the heat map.
    by_id("an-heat").click()
    d.find_element(By.CSS_SELECTOR, '#an-moves span[data-ply="8"]').click()
    d.execute_script("window.scrollTo(0, 0)")
    time.sleep(0.4)  # the evaluation bar's transition
    d.save_screenshot(os.path.join(OUT, "analyse.png"))
    log("analyse.png")

    # --- A run's dashboard. ---
    d.get(URL + "/#watch/0")
    wait().until(lambda _: len(d.find_elements(By.CSS_SELECTOR, "#watch-elo circle.point")) >= 2)
    wait().until(lambda _: len(d.find_elements(By.CSS_SELECTOR, "#watch-board .cell")) > 0)
    rows = d.find_elements(By.CSS_SELECTOR, "#watch-gens tr")
    games = d.find_elements(By.CSS_SELECTOR, "#watch-games li")
    assert len(rows) > 2 and games, (len(rows), len(games))
    assert len(d.find_elements(By.CSS_SELECTOR, "#watch-elo line.interval")) >= 2
    by_id("watch-prev").click()
    assert "ply" in by_id("watch-ply").text
    d.execute_script("window.scrollTo(0, 0)")
    d.save_screenshot(os.path.join(OUT, "watch.png"))
    log("watch.png")

    # --- The board fits beside the controls, 3x3 to 8x8, at 1280 and 1920 px wide. ---
    load("/#play")
    for width, height in [(1280, 800), (1920, 1080)]:
        fit_window(width, height)
        for size in range(3, 9):
            new_game(size, 50, komi=2)
            b = check_fit(width, size)
            log(f"{size}x{size} at {width} px: board {b['left']:.0f}-{b['right']:.0f} x {b['top']:.0f}-{b['bottom']:.0f}")
        # The picture: a few moves on the 8x8 board.
        for want in ["d5", "e4"]:
            before = moves_played()
            set_input("play-ptn-input", want)
            by_id("play-ptn-go").click()
            wait().until(lambda _: (moves_played() > before + 1 and my_turn_or_over()) or by_id("play-msg").text)
        assert not by_id("play-msg").text, by_id("play-msg").text
        check_fit(width, 8)
        d.execute_script("window.scrollTo(0, 0)")
        d.save_screenshot(os.path.join(OUT, f"fit-{width}.png"))
        log(f"fit-{width}.png")
    log(f"all browser checks passed in {time.time() - t0:.1f} s")
except Exception:
    try:
        d.save_screenshot(os.path.join(OUT, "failure.png"))
        log("page state at the failure: failure.png; play-msg:", by_id("play-msg").text)
    finally:
        d.quit()
    raise
d.quit()
