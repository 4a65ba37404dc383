//! `bredon tei --listen`: the engine over a WebSocket, as PTN Ninja reaches it. A Rust
//! client (tungstenite) does the handshake, a search, two connections at once and a
//! disconnect in the middle of `go infinite`; headless Chromium opens the socket from a
//! page's JavaScript (through `tests/tei_ws/chromium.py`, Python selenium, as
//! `tests/it/browser.rs` drives it).
//!
//! The Chromium test needs `chromium`, `chromium-driver` (Debian) and `python3 -m pip
//! install selenium`; without them it skips loudly, and fails in CI.

use crate::common;

use bredon_rules::notation::parse_move;
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};
use tungstenite::Message;
use tungstenite::stream::MaybeTlsStream;

const TIMEOUT: Duration = Duration::from_secs(60);

type Client = tungstenite::WebSocket<MaybeTlsStream<TcpStream>>;

/// `bredon tei --listen` on a free port, killed when dropped; its stderr line by line.
struct Server {
    child: Child,
    url: String,
    log: Receiver<String>,
}

impl Server {
    fn start(listen: &str) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bredon"))
            .args(["tei", "--uniform", "--threads", "1", "--listen", listen])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start bredon tei --listen");
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = out.next().expect("bredon tei --listen printed nothing").unwrap();
        let url = first.strip_prefix("bredon tei: listening on ").unwrap_or_else(|| panic!("{first:?}")).to_string();
        let (tx, log) = channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Server { child, url, log }
    }

    /// Stderr lines up to the first that contains `needle`.
    fn log_until(&self, needle: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.log.recv_timeout(TIMEOUT) {
                Ok(line) => {
                    let done = line.contains(needle);
                    seen.push(line);
                    if done {
                        return seen;
                    }
                }
                Err(e) => panic!("no {needle:?} on stderr ({e}); saw {seen:?}"),
            }
        }
    }

    fn connect(&self) -> Client {
        let (ws, _) = tungstenite::connect(self.url.as_str()).unwrap();
        if let MaybeTlsStream::Plain(s) = ws.get_ref() {
            s.set_read_timeout(Some(TIMEOUT)).unwrap();
        }
        ws
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn send(ws: &mut Client, text: &str) {
    ws.send(Message::text(text)).unwrap();
}

/// Text frames up to the first that starts with `prefix`.
fn until(ws: &mut Client, prefix: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        match ws.read() {
            Ok(Message::Text(t)) => {
                let done = t.starts_with(prefix);
                seen.push(t.to_string());
                if done {
                    return seen;
                }
            }
            Ok(_) => {}
            Err(e) => panic!("waiting for {prefix:?}: {e}; saw {seen:?}"),
        }
    }
}

fn bestmove(lines: &[String], size: usize) -> String {
    let mv = lines.last().unwrap().strip_prefix("bestmove ").unwrap().to_string();
    parse_move(&mv, size).unwrap_or_else(|e| panic!("bestmove {mv}: {e}"));
    mv
}

#[test]
fn a_websocket_client_searches_two_connections_at_once_and_a_lost_one_stops_its_search() {
    let server = Server::start("127.0.0.1:0");
    assert!(server.url.starts_with("ws://127.0.0.1:"), "{}", server.url);
    // The handshake, with PTN Ninja's size line.
    let mut a = server.connect();
    send(&mut a, "tei");
    let lines = until(&mut a, "teiok");
    assert!(lines[0].starts_with("id name Bredon"), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("size 3 4 5 6 7 8 halfkomi -10 ")), "{lines:?}");
    assert!(lines.iter().any(|l| l == "option name MultiPV type spin default 1 min 1 max 16"), "{lines:?}");
    // A search, the lines of a game in one frame as PTN Ninja may send them.
    send(&mut a, "teinewgame size 5 halfkomi 0\nposition startpos moves a1 e5\ngo nodes 60");
    bestmove(&until(&mut a, "bestmove "), 5);
    // Two connections searching at once, each with its own engine and game.
    let mut b = server.connect();
    send(&mut a, "teinewgame size 4 halfkomi 0\nposition startpos\ngo");
    send(&mut b, "teinewgame 6\nposition startpos moves a1 f6\ngo infinite");
    until(&mut a, "info depth");
    until(&mut b, "info depth");
    send(&mut b, "stop");
    bestmove(&until(&mut b, "bestmove "), 6);
    send(&mut a, "stop");
    bestmove(&until(&mut a, "bestmove "), 4);
    // A client gone in the middle of `go infinite`: its search stops (the server says so
    // once the search thread has ended) and the server goes on.
    send(&mut b, "position startpos moves a1 f6 c3\ngo infinite");
    until(&mut b, "info depth");
    drop(b);
    let log = server.log_until("; its search stopped");
    assert!(log.last().unwrap().ends_with(" closed; its search stopped"), "{log:?}");
    let began = Instant::now();
    let mut c = server.connect();
    send(&mut c, "isready");
    assert_eq!(until(&mut c, "readyok"), ["readyok"]);
    assert!(began.elapsed() < Duration::from_secs(5), "a new connection waited {:?}", began.elapsed());
    // `a` still has its engine.
    send(&mut a, "isready");
    assert_eq!(until(&mut a, "readyok"), ["readyok"]);
    send(&mut a, "quit");
    server.log_until(" quit");
}

#[test]
fn listening_beyond_the_loopback_is_said_on_stderr() {
    let server = Server::start("0.0.0.0:0");
    let log = server.log_until("warning");
    assert!(log.last().unwrap().contains("not the loopback"), "{log:?}");
    // The loopback server says nothing of the kind.
    let quiet = Server::start("127.0.0.1:0");
    let mut ws = quiet.connect();
    send(&mut ws, "isready");
    until(&mut ws, "readyok");
    drop(ws);
    let log = quiet.log_until(" closed");
    assert!(!log.iter().any(|l| l.contains("warning")), "{log:?}");
}

fn repo() -> PathBuf {
    common::repo_file("").canonicalize().unwrap()
}

#[test]
fn chromium_opens_the_socket_from_a_page_and_gets_a_best_move() {
    const TEST: &str = "chromium_opens_the_socket_from_a_page_and_gets_a_best_move";
    let Some(chromium) = common::Chromium::find(TEST) else { return };
    let server = Server::start("127.0.0.1:0");
    let page = tempfile::tempdir().unwrap();
    let out = chromium
        .python(&repo().join("crates/cli/tests/tei_ws/chromium.py"))
        .arg(&server.url)
        .arg(page.path())
        .stderr(Stdio::inherit())
        .output()
        .expect("run chromium.py");
    assert!(out.status.success(), "the browser check failed (see the output above)");
    let lines: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect();
    // What the page's socket received, in order: the handshake, the search, its move.
    let teiok = lines.iter().position(|l| l == "teiok").unwrap_or_else(|| panic!("no teiok: {lines:?}"));
    assert!(lines[..teiok].iter().any(|l| l.starts_with("size ")), "{lines:?}");
    assert!(lines[teiok..].iter().any(|l| l.starts_with("info depth ")), "{lines:?}");
    bestmove(&lines, 4);
    server.log_until(" connected");
}
