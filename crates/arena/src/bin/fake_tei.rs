//! A tiny scripted TEI engine for the arena's tests: it plays the first legal move.
//!
//! Usage: `fake_tei [MODE [N]] [--log PATH]`, where MODE is
//! - `normal` (default): always answers;
//! - `crash N`: exits without a word when asked for its move N+1 of a game;
//! - `illegal N`: answers its move N+1 of a game with a move that parses but is illegal;
//! - `garbage N`: answers its move N+1 of a game with `bestmove xyzzy`;
//! - `stall N`: never answers its move N+1 of a game;
//! - `silent`: never sends `teiok`.
//! - `exit`: writes a line to stderr and exits with status 3 before reading anything.
//!
//! With `--log PATH`, every received line is appended to PATH.

use std::io::{BufRead, Write};

use bredon_rules::notation::{parse_move, parse_tps};
use bredon_rules::{GameOptions, Position, Square};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut mode = "normal".to_string();
    let mut n: usize = 0;
    let mut log: Option<std::fs::File> = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--log" => {
                i += 1;
                let path = args.get(i).expect("--log needs a path");
                log = Some(std::fs::OpenOptions::new().create(true).append(true).open(path).expect("open log"));
            }
            m if m.chars().all(|c| c.is_ascii_digit()) => n = m.parse().unwrap_or(0),
            m => mode = m.to_string(),
        }
        i += 1;
    }
    if mode == "exit" {
        eprintln!("fake_tei: exiting at once");
        std::process::exit(3);
    }
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    let mut size = 5usize;
    let mut half_komi: i8 = 0;
    let mut pos = Position::new(size).unwrap();
    let mut moves_this_game = 0usize;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if let Some(f) = log.as_mut() {
            let _ = writeln!(f, "{line}");
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first().copied() {
            Some("tei") => {
                if mode == "silent" {
                    continue;
                }
                let _ = writeln!(out, "id name fake_tei");
                let _ = writeln!(out, "option name HalfKomi type spin default 0 min -10 max 10");
                let _ = writeln!(out, "teiok");
            }
            Some("isready") => {
                let _ = writeln!(out, "readyok");
            }
            Some("setoption") if words.len() >= 5 && words[2] == "HalfKomi" => {
                half_komi = words[4].parse().unwrap_or(0);
            }
            Some("teinewgame") => {
                size = words.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
                moves_this_game = 0;
            }
            Some("position") => {
                let opts = GameOptions::new(size).with_half_komi(half_komi);
                let mut p = Position::with_options(opts).unwrap();
                let mut rest = &words[1..];
                if rest.first() == Some(&"tps") && rest.len() >= 4 {
                    p = parse_tps(&rest[1..4].join(" ")).unwrap();
                    rest = &rest[4..];
                } else if rest.first() == Some(&"startpos") {
                    rest = &rest[1..];
                }
                if rest.first() == Some(&"moves") {
                    for m in &rest[1..] {
                        let mv = parse_move(m, size).expect("bad move from the arena");
                        p.play(mv).expect("illegal move from the arena");
                    }
                }
                pos = p;
            }
            Some("go") => {
                let _ = writeln!(out, "info depth 1 score cp 0 nodes 1");
                let k = moves_this_game;
                moves_this_game += 1;
                let triggered = k >= n;
                match mode.as_str() {
                    "crash" if triggered => std::process::exit(3),
                    "stall" if triggered => {
                        let _ = out.flush();
                        loop {
                            std::thread::sleep(std::time::Duration::from_secs(3600));
                        }
                    }
                    "garbage" if triggered => {
                        let _ = writeln!(out, "bestmove xyzzy");
                    }
                    "illegal" if triggered => {
                        // Place on an occupied square, or spread from an empty one.
                        let n2 = pos.size() * pos.size();
                        let occupied = (0..n2).map(|i| Square(i as u8)).find(|&s| pos.height(s) > 0);
                        let text = match occupied {
                            Some(s) => s.name(pos.size()),
                            None => "a1+".to_string(),
                        };
                        let _ = writeln!(out, "bestmove {text}");
                    }
                    _ => {
                        let mv = pos.legal_moves()[0];
                        let _ = writeln!(out, "bestmove {}", mv.to_ptn(pos.size()));
                    }
                }
            }
            Some("quit") => break,
            _ => {}
        }
        let _ = out.flush();
    }
}
