#!/usr/bin/env python3
"""Opens `bredon tei --listen` from a page in headless Chromium, as PTN Ninja does.

Usage: chromium.py WS_URL DIR. Writes a small page to DIR whose JavaScript opens a
WebSocket to WS_URL, sends `tei`, and after `teiok` a game in PTN Ninja's dialect
(`teinewgame size 4 halfkomi 0`, a position, `go nodes 50`); prints every line the page
received, one per line, once a `bestmove` has come. Run by crates/cli/tests/it/tei_ws.rs,
which starts the engine; exits non-zero on failure.
"""
import json
import os
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

# Chromium's profile, removed when the script exits (the test leaves nothing in /tmp).
PROFILE = tempfile.TemporaryDirectory(prefix="bredon-chromium-", ignore_cleanup_errors=True)

URL, DIR = sys.argv[1], sys.argv[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>TEI over WebSocket</title></head>
<body><pre id="log"></pre>
<script>
window.received = [];
window.failure = null;
const socket = new WebSocket(%s);
socket.onopen = () => socket.send("tei");
socket.onerror = () => { window.failure = "socket error"; };
socket.onclose = () => { if (!window.received.some(l => l.startsWith("bestmove"))) window.failure = "closed early"; };
socket.onmessage = ({ data }) => {
  for (const line of String(data).split(/\\r?\\n/).filter(Boolean)) {
    window.received.push(line);
    document.getElementById("log").textContent += line + "\\n";
    if (line === "teiok") {
      socket.send("teinewgame size 4 halfkomi 0");
      socket.send("isready");
    } else if (line === "readyok") {
      socket.send("position startpos moves a1 d4\\ngo nodes 50");
    } else if (line.startsWith("bestmove")) {
      socket.close();
    }
  }
};
</script></body></html>
"""


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


page = os.path.join(DIR, "tei.html")
with open(page, "w") as f:
    f.write(PAGE % json.dumps(URL))

opts = webdriver.ChromeOptions()
opts.binary_location = CHROMIUM
for flag in [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", f"--user-data-dir={PROFILE.name}",
]:
    opts.add_argument(flag)
d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
try:
    d.get("file://" + page)
    log("page loaded; waiting for the engine's best move")

    def done(drv):
        failure = drv.execute_script("return window.failure")
        if failure:
            raise RuntimeError(f"the page's socket: {failure}; received {drv.execute_script('return window.received')}")
        return any(l.startswith("bestmove") for l in drv.execute_script("return window.received"))

    WebDriverWait(d, 60, poll_frequency=0.05).until(done)
    for line in d.execute_script("return window.received"):
        print(line)
    log("ok")
finally:
    d.quit()
