//! `bredon tei` driven through stdin/stdout the way a match runner drives it.

use bredon_rules::notation::parse_move;
use bredon_rules::{GameOptions, Position};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

struct Engine {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Engine {
    fn start(args: &[&str]) -> Engine {
        Engine::start_with(args, &[])
    }

    fn start_with(args: &[&str], env: &[(&str, &std::path::Path)]) -> Engine {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bredon"))
            .arg("tei")
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start bredon tei");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Engine { child, stdin, lines }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Lines up to and including the first that starts with `prefix`.
    fn until(&mut self, prefix: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(TIMEOUT) {
                Ok(line) => {
                    let done = line.starts_with(prefix);
                    seen.push(line);
                    if done {
                        return seen;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!("no {prefix:?} within {TIMEOUT:?}; saw {seen:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("engine exited before {prefix:?}; saw {seen:?}"),
            }
        }
    }

    fn handshake(&mut self) -> Vec<String> {
        self.send("tei");
        let lines = self.until("teiok");
        self.send("isready");
        self.until("readyok");
        lines
    }

    fn quit(mut self) {
        self.send("quit");
        assert_exits_cleanly(&mut self.child, 600, "after quit");
    }
}

/// Waits up to `tenths` tenths of a second for the engine to exit with success (kills it
/// and fails otherwise).
fn assert_exits_cleanly(child: &mut Child, tenths: u32, when: &str) {
    for _ in 0..tenths {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "exit {when}: {status}");
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("the engine did not exit {when}");
}

#[test]
fn two_engines_play_a_full_game_through_tei() {
    // The shipped 5x5 network plays: two uniform-evaluator engines shuffle stacks for
    // hundreds of plies when a loaded machine gives them few nodes per move.
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../checkpoints/shipped/5x5.bredon");
    let mut engines =
        [Engine::start(&["--model", model, "--seed", "1"]), Engine::start(&["--model", model, "--seed", "2"])];
    for e in &mut engines {
        let lines = e.handshake();
        assert!(lines[0].starts_with("id name Bredon"), "{lines:?}");
        assert!(lines.iter().any(|l| l.starts_with("option name HalfKomi")), "{lines:?}");
        e.send("setoption name HalfKomi value 4");
        e.send("teinewgame 5");
    }
    let mut pos = Position::with_options(GameOptions::new(5).with_half_komi(4)).unwrap();
    let mut moves: Vec<String> = Vec::new();
    while pos.result().is_none() {
        assert!(moves.len() < 400, "game too long");
        let e = &mut engines[moves.len() % 2];
        if moves.is_empty() {
            e.send("position startpos");
        } else {
            e.send(&format!("position startpos moves {}", moves.join(" ")));
        }
        // Mix the ways a runner limits a move.
        match moves.len() % 3 {
            0 => e.send("go nodes 40"),
            1 => e.send("go movetime 30"),
            _ => e.send("go wtime 2000 btime 2000 winc 10 binc 10"),
        }
        let lines = e.until("bestmove ");
        assert!(lines.iter().any(|l| l.starts_with("info depth ") && l.contains(" score cp ") && l.contains(" pv ")));
        assert!(!lines.iter().any(|l| l.starts_with("info string error")), "{lines:?}");
        let text = lines.last().unwrap()["bestmove ".len()..].trim().to_string();
        let mv = parse_move(&text, 5).unwrap_or_else(|e| panic!("bestmove {text:?}: {e}"));
        pos.play(mv).unwrap_or_else(|e| panic!("illegal bestmove {text} after {moves:?}: {e}"));
        moves.push(text);
    }
    assert!(pos.result().is_some());
    eprintln!("game over after {} plies: {:?}", moves.len(), pos.result());
    for e in engines {
        e.quit();
    }
}

#[test]
fn bad_input_is_answered_and_the_engine_goes_on() {
    let mut e = Engine::start(&[]);
    e.handshake();
    e.send("teinewgame 4");
    for bad in [
        "hello",
        "position startpos moves a9",
        "position tps x4/x4 1 1",
        "go nodes many",
        "setoption name Nope value 1",
    ] {
        e.send(bad);
        let lines = e.until("info string error");
        assert_eq!(lines.len(), 1, "{bad}: {lines:?}");
    }
    e.send("position startpos moves a1 d4");
    e.send("go nodes 30");
    let lines = e.until("bestmove ");
    let mv = lines.last().unwrap()["bestmove ".len()..].to_string();
    let mut pos = Position::new(4).unwrap();
    for m in ["a1", "d4"] {
        pos.play(parse_move(m, 4).unwrap()).unwrap();
    }
    pos.play(parse_move(&mv, 4).unwrap()).unwrap();
    e.quit();
}

#[test]
fn go_infinite_stops_on_stop() {
    let mut e = Engine::start(&[]);
    e.handshake();
    e.send("teinewgame 6");
    e.send("position startpos moves a1 f6");
    e.send("go infinite");
    std::thread::sleep(Duration::from_millis(300));
    e.send("isready");
    let lines = e.until("readyok");
    assert!(!lines.iter().any(|l| l.starts_with("bestmove")), "{lines:?}");
    e.send("stop");
    let lines = e.until("bestmove ");
    assert!(parse_move(&lines.last().unwrap()["bestmove ".len()..], 6).is_ok());
    e.quit();
}

/// Without `--model` the engine plays each size with `NxN.bredon` from the model
/// directory, and says so when a size has none.
#[test]
fn without_a_model_the_engine_plays_the_models_of_the_model_directory() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped");
    std::fs::copy(shipped.join("4x4.bredon"), dir.path().join("4x4.bredon")).unwrap();
    let mut e = Engine::start_with(&[], &[("BREDON_MODEL_DIR", dir.path())]);
    e.handshake();
    e.send("teinewgame 5");
    e.send("isready");
    let lines = e.until("readyok");
    assert!(lines.iter().any(|l| l.starts_with("info string warning: no 5x5 model (have 4x4)")), "{lines:?}");
    e.send("teinewgame 4");
    e.send("position startpos moves a1 d4");
    e.send("go nodes 30");
    let lines = e.until("bestmove ");
    assert!(!lines.iter().any(|l| l.contains("warning")), "{lines:?}");
    e.quit();
    // `--uniform` asks for no network at all: no size lacks one, so nothing to warn of.
    let mut e = Engine::start_with(&["--uniform"], &[("BREDON_MODEL_DIR", dir.path())]);
    e.handshake();
    e.send("teinewgame 5");
    e.send("isready");
    let lines = e.until("readyok");
    assert!(!lines.iter().any(|l| l.contains("warning")), "{lines:?}");
    e.quit();
}

#[test]
fn end_of_input_ends_the_engine() {
    let mut e = Engine::start(&[]);
    e.handshake();
    drop(e.stdin);
    assert_exits_cleanly(&mut e.child, 300, "at end of input");
}

/// The arena drives `bredon tei` as an external engine, exactly as it would Tiltak.
#[test]
fn arena_plays_bredon_tei_as_an_external_engine() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("arena");
    let engine = format!("tei:{} tei;name=bredon-tei;nodes=30", env!("CARGO_BIN_EXE_bredon"));
    let status = Command::new(env!("CARGO_BIN_EXE_bredon"))
        .args(["arena", "--size", "4", "--games", "4", "--threads", "2", "--player", &engine, "--player", "uniform:30"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let table = String::from_utf8(status.stdout).unwrap();
    assert!(table.contains("bredon-tei") && table.contains("uniform-30"), "{table}");
    let records = bredon_arena::load_records(&out.join("results.jsonl")).unwrap();
    assert_eq!(records.len(), 4);
    for r in &records {
        // No game was lost to a protocol failure or an illegal move.
        assert!(!matches!(r.termination, bredon_arena::Termination::Forfeit { .. }), "{r:?}");
        assert!(out.join("games").join(&r.ptn_file).is_file() || out.join(&r.ptn_file).is_file(), "{}", r.ptn_file);
    }
    assert!(out.join("ratings.csv").is_file() && out.join("ratings.json").is_file());
}

/// Whether `line` matches `pattern`, in which `*` stands for any text.
fn glob(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return pattern == line;
    }
    if !line.starts_with(first) || !line[first.len()..].ends_with(last) || line.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &line[first.len()..line.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[test]
fn glob_matches_star_as_any_text() {
    assert!(glob("bestmove *", "bestmove a1"));
    assert!(glob("info depth * nodes 200 time * pv *", "info depth 3 seldepth 5 nodes 200 time 9 pv a1 b2"));
    assert!(!glob("info depth * nodes 200 time *", "info depth 3 nodes 20 time 9"));
    assert!(glob("teiok", "teiok") && !glob("teiok", "teiok "));
    assert!(!glob("a*b*a", "ab"));
}

/// The transcript after `<!-- transcript: NAME -->` in docs/playing.md.
fn transcript(name: &str) -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/playing.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let marker = format!("<!-- transcript: {name} -->");
    let after = &doc[doc.find(&marker).unwrap_or_else(|| panic!("no {marker} in docs/playing.md")) + marker.len()..];
    let block = after.trim_start().strip_prefix("```text\n").expect("a ```text block after the marker");
    let block = &block[..block.find("```").expect("the block's end")];
    let lines: Vec<String> = block.lines().map(str::to_string).collect();
    assert!(lines.iter().all(|l| l.starts_with("> ") || l.starts_with("< ")), "{name}: {lines:?}");
    lines
}

/// Replays a transcript of docs/playing.md against `bredon tei --uniform --threads 1`:
/// `>` lines are sent, `<` lines expected in order (`*` any text), progress reports
/// (`info depth …`) between them skipped.
fn replay(name: &str) {
    let lines = transcript(name);
    let mut e = Engine::start(&["--uniform", "--threads", "1"]);
    for line in &lines {
        if let Some(cmd) = line.strip_prefix("> ") {
            e.send(cmd);
            continue;
        }
        let pattern = &line[2..];
        let mut skipped = Vec::new();
        loop {
            let got = e
                .lines
                .recv_timeout(TIMEOUT)
                .unwrap_or_else(|err| panic!("{name}: waiting for {pattern:?}: {err}; skipped {skipped:?}"));
            if glob(pattern, &got) {
                break;
            }
            assert!(
                got.starts_with("info depth "),
                "{name}: got {got:?} while waiting for {pattern:?}; skipped {skipped:?}"
            );
            skipped.push(got);
        }
    }
    assert_eq!(lines.last().map(String::as_str), Some("> quit"), "{name} ends with quit");
    assert_exits_cleanly(&mut e.child, 600, "after the transcript's quit");
}

#[test]
fn the_match_runner_transcript_of_the_docs_replays_verbatim() {
    replay("match-runner");
}

#[test]
fn the_ptn_ninja_transcript_of_the_docs_replays_verbatim() {
    replay("ptn-ninja");
}
