//! `bredon serve` in a real browser: headless Chromium driven through WebDriver by
//! `tests/browser/drive.py` (Python selenium) checks that the play screen opens on 6x6 at
//! komi 2, that the new-game choice is remembered over a reload (and invalid stored
//! values ignored), plays a whole 3x3 game against the engine by clicking, analyses a PTN
//! game, opens a run's dashboard, and checks that every board from 3x3 to 8x8 fits beside
//! the controls in windows 1280 and 1920 px wide. Screenshots of the three screens and of
//! the 8x8 board at both widths go to `target/screenshots/` (with
//! `BREDON_UPDATE_SCREENSHOTS=1` also to `docs/img/serve-*.png`, the README's pictures).
//! Also checks the server over a real socket: the address it prints, a 404 and a 400.
//!
//! Needs `chromium`, `chromium-driver` (Debian) and `python3 -m pip install selenium`;
//! without them the test skips loudly, and fails in CI.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    common::repo_file("").canonicalize().unwrap()
}

/// `bredon serve` on a free port, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bredon"))
            .arg("serve")
            .args(["--port", "0"])
            .args(args)
            .current_dir(repo())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start bredon serve");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("bredon serve printed nothing").unwrap();
        let url = first.strip_prefix("bredon serve: ").unwrap_or_else(|| panic!("unexpected first line {first:?}"));
        // Keep reading so that the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server { url: url.trim_end_matches('/').to_string(), child }
    }

    /// A plain HTTP/1.1 request; the status and the body.
    fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let addr = self.url.trim_start_matches("http://");
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).expect("a status line");
        let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
        (status, body)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_server_answers_on_its_socket_with_json_errors() {
    let server = Server::start(&[]);
    assert!(server.url.starts_with("http://127.0.0.1:"), "{}", server.url);
    let (status, body) = server.request("GET", "/", "");
    assert_eq!(status, 200);
    assert!(body.contains("<title>Bredon</title>"));
    let (status, body) = server.request("GET", "/api/no-such-thing", "");
    assert_eq!(status, 404);
    assert!(body.contains("\"error\"") && body.contains("/api/no-such-thing"), "{body}");
    let (status, body) = server.request("POST", "/api/game", r#"{"size": 11}"#);
    assert_eq!(status, 400);
    assert!(body.contains("board size 11 is not supported"), "{body}");
}

/// A run directory with the files the dashboard reads: 30 generations, an Elo curve with
/// intervals and two 5x5 self-play games.
fn fixture_run(dir: &Path) {
    for sub in ["logs", "arena", "games/gen-0029", "games/gen-0028"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::write(dir.join("latest"), "gen-0030\n").unwrap();
    let mut log = String::new();
    for g in 0..30u32 {
        let x = g as f64;
        log += &format!(
            "{{\"generation\":{g},\"step\":{},\"games\":128,\"policy_loss\":{:.4},\"value_loss\":{:.4},\"games_per_hour\":{:.1},\"white_wins\":{:.3},\"black_wins\":{:.3},\"draws\":0.02}}\n",
            g * 35,
            3.9 - 0.9 * (1.0 - (-x / 10.0).exp()),
            0.95 - 0.2 * (1.0 - (-x / 8.0).exp()),
            14000.0 + 500.0 * (x * 0.7).sin(),
            0.5 + 0.05 * (x * 0.3).sin(),
            0.48 - 0.05 * (x * 0.3).sin(),
        );
    }
    std::fs::write(dir.join("logs/generations.jsonl"), log).unwrap();
    let mut curve = String::from("name,generation,step,minutes,elo,lo95,hi95\ngen-0000,0,0,0.00,0.0,0.0,0.0\n");
    for (g, m, e) in [
        (5, 10.1, 180.0),
        (10, 20.3, 330.0),
        (15, 30.2, 420.0),
        (20, 40.6, 470.0),
        (25, 50.4, 530.0),
        (30, 60.2, 555.0),
    ] {
        curve += &format!("gen-{g:04},{g},{},{m},{e},{},{}\n", g * 35, e - 70.0, e + 70.0);
    }
    std::fs::write(dir.join("arena/elo-curve.csv"), curve).unwrap();
    let games = [
        (
            "games/gen-0028/12-4242.ptn",
            "[Size \"5\"]\n[Result \"R-0\"]\n\n1. a5 e1\n2. c3 c2\n3. d3 b3\n4. Cd2 Cb2\n5. d4 e3\n6. d1 d5\n7. c4 b4\n8. e4 a4\n9. b5 c5\n10. c3< e5\n11. e2 a3\n12. Sc1 2b3>\n13. d2- 3c3-\n14. d5< R-0\n",
        ),
        (
            "games/gen-0029/3-4242.ptn",
            "[Size \"5\"]\n[Result \"R-0\"]\n\n1. a1 e5\n2. c3 c4\n3. d3 b3\n4. Cd4 Cb4\n5. b2 d2\n6. e3 a3\n7. c2 R-0\n",
        ),
    ];
    for (path, text) in games {
        std::fs::write(dir.join(path), text).unwrap();
    }
}

/// What drive.py writes (and `BREDON_UPDATE_SCREENSHOTS=1` copies to `docs/img/serve-*`).
const SCREENSHOTS: [&str; 5] = ["play.png", "analyse.png", "watch.png", "fit-1280.png", "fit-1920.png"];

#[test]
fn chromium_plays_analyses_and_watches() {
    const TEST: &str = "chromium_plays_analyses_and_watches";
    let Some(chromium) = common::Chromium::find(TEST) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("demo-5x5");
    fixture_run(&run);
    let server = Server::start(&["--run", run.to_str().unwrap()]);
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().join("screenshots");
    std::fs::create_dir_all(&out).unwrap();
    for name in SCREENSHOTS.iter().chain(&["failure.png"]) {
        let _ = std::fs::remove_file(out.join(name));
    }
    let began = Instant::now();
    let status = chromium
        .python(&repo().join("crates/cli/tests/browser/drive.py"))
        .arg(&server.url)
        .arg(&out)
        .status()
        .expect("run drive.py");
    assert!(status.success(), "the browser checks failed (see the output above and {})", out.display());
    eprintln!("browser checks: {:.1} s; screenshots in {}", began.elapsed().as_secs_f64(), out.display());
    for name in SCREENSHOTS {
        let png = std::fs::read(out.join(name)).unwrap();
        assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{name}: not a screenshot");
        if std::env::var_os("BREDON_UPDATE_SCREENSHOTS").is_some() {
            std::fs::write(repo().join("docs/img").join(format!("serve-{name}")), png).unwrap();
        }
    }
}
