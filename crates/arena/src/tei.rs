//! [`TeiPlayer`]: any external engine that speaks TEI (Tak Engine Interface, UCI-like),
//! such as Tiltak, driven as a child process.
//!
//! The client side of the protocol, as the racetrack match runner uses it:
//!
//! 1. start the process, send `tei`, wait for `teiok` (lines before it, such as `id`,
//!    `option` and PTN Ninja's `size … halfkomi …`, are ignored);
//! 2. `setoption name X value Y` for each configured option;
//! 3. per game: `setoption name HalfKomi value K` (unless disabled or set explicitly),
//!    `teinewgame N`, `isready`, wait for `readyok`;
//! 4. per move: `position startpos moves m1 m2 …`, then `go nodes N`, `go movetime MS` or
//!    `go wtime W btime B winc I binc I`, and read lines until `bestmove <ptn>` (`info`
//!    lines, whatever their fields, and unknown lines are ignored);
//! 5. `quit` when the player is dropped (the process is killed if it does not exit soon).
//!
//! The lines are [`bredon_tei`]'s: commands formatted from [`TeiCommand`], the engine's
//! lines read with [`bredon_tei::parse_response`].
//!
//! Standard output is read on a separate thread that forwards lines through a channel, so
//! every wait has a timeout. If the engine exits, stalls past the timeout, or sends a line
//! that breaks the protocol, the call fails with a [`PlayerError`] (the game loop turns it
//! into a loss) and the process is killed; the next [`Player::new_game`] starts a fresh one.
//! An engine that cannot be started, handshaken or readied for a game is a
//! [`TeiClientError`] naming the engine, what the client was doing ([`TeiStage`]) and, for
//! a timeout, the last line the engine sent.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bredon_rules::notation::parse_move;
use bredon_rules::{GameOptions, Move, Position};
use bredon_tei::{GoParams, NewGame, Response, StartPosition, TeiCommand, parse_response};
use serde::{Deserialize, Serialize};

use crate::error::{TeiClientError, TeiStage};
use crate::player::{MoveLimits, Player, PlayerError};

/// How to run and talk to an external TEI engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TeiConfig {
    /// The program to run (a path, or a name looked up in `PATH`).
    pub program: String,
    /// Its arguments (Tiltak needs `tei`).
    pub args: Vec<String>,
    /// Name shown in tables and PTN tags; defaults to the program's file name.
    pub name: Option<String>,
    /// `setoption name K value V` sent after the handshake, in order.
    pub options: Vec<(String, String)>,
    /// Send `setoption name HalfKomi value K` before each game with the game's komi
    /// (skipped if `options` sets `HalfKomi` itself).
    pub send_half_komi: bool,
    /// How long to wait for `teiok` and `readyok`, in milliseconds.
    pub init_timeout_ms: u64,
    /// How long to wait for `bestmove` beyond the move's own time budget (`movetime`, or
    /// the side's remaining clock), in milliseconds. A stalled engine loses the game.
    pub move_timeout_ms: u64,
}

impl Default for TeiConfig {
    fn default() -> TeiConfig {
        TeiConfig {
            program: String::new(),
            args: Vec::new(),
            name: None,
            options: Vec::new(),
            send_half_komi: true,
            init_timeout_ms: 10_000,
            move_timeout_ms: 30_000,
        }
    }
}

impl TeiConfig {
    /// A configuration for `program args…` with default timeouts.
    pub fn new(program: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> TeiConfig {
        TeiConfig { program: program.into(), args: args.into_iter().map(Into::into).collect(), ..TeiConfig::default() }
    }

    /// The display name: `name`, or the program's file name.
    pub fn display_name(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        std::path::Path::new(&self.program)
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.program.clone())
    }
}

/// A running engine process.
struct Engine {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr_tail: Arc<Mutex<Vec<String>>>,
    /// The last line read from the engine's stdout.
    last_line: Option<String>,
}

impl Engine {
    fn send(&mut self, cmd: &TeiCommand) -> Result<(), PlayerError> {
        let r = writeln!(self.stdin, "{cmd}").and_then(|_| self.stdin.flush());
        r.map_err(|e| {
            let status = self.exit_status();
            PlayerError::Crashed(format!("cannot write to engine: {e}{status}{}", self.tail()))
        })
    }

    /// ` (exit status: …)` if the process exits within 200 ms (after a failed write it
    /// usually has exited or is about to), else nothing; then its stderr has been read.
    fn exit_status(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_millis(200);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                // Let the stderr thread read what the engine wrote last.
                std::thread::sleep(Duration::from_millis(20));
                return format!(" ({status})");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        String::new()
    }

    fn tail(&self) -> String {
        let tail = self.stderr_tail.lock().map(|t| t.join(" | ")).unwrap_or_default();
        if tail.is_empty() { String::new() } else { format!(" (stderr: {tail})") }
    }

    /// The next line, waiting until `deadline`.
    fn next_line(&mut self, deadline: Instant, timeout: Duration) -> Result<String, PlayerError> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => {
                self.last_line = Some(line.clone());
                Ok(line)
            }
            Err(RecvTimeoutError::Timeout) => Err(PlayerError::Timeout(timeout)),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                Err(PlayerError::Crashed(format!("engine closed its output ({status}){}", self.tail())))
            }
        }
    }

    /// Reads lines until one whose first word is `word`; returns that line.
    fn wait_for(&mut self, word: &str, timeout: Duration) -> Result<String, PlayerError> {
        let deadline = Instant::now() + timeout;
        loop {
            let line = self.next_line(deadline, timeout)?;
            if bredon_tei::keyword(&line) == Some(word) {
                return Ok(line);
            }
        }
    }

    /// A failure at `stage` (waiting for `waiting_for`) as a [`TeiClientError`].
    fn stage_error(&self, engine: &str, stage: TeiStage, waiting_for: &'static str, e: PlayerError) -> TeiClientError {
        let engine = engine.to_string();
        match e {
            PlayerError::Crashed(detail) => TeiClientError::Died { engine, stage, detail },
            PlayerError::Timeout(waited) => {
                TeiClientError::TimedOut { engine, stage, waiting_for, waited, last_line: self.last_line.clone() }
            }
            PlayerError::Protocol(message) => TeiClientError::Protocol { engine, stage, message },
            other => TeiClientError::Failed { engine, stage, source: Box::new(other) },
        }
    }

    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn quit(mut self) {
        let _ = writeln!(self.stdin, "{}", TeiCommand::Quit).and_then(|_| self.stdin.flush());
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill();
    }
}

/// An external TEI engine (see the [module docs](self) for the protocol).
pub struct TeiPlayer {
    config: TeiConfig,
    engine: Option<Engine>,
    size: usize,
}

impl TeiPlayer {
    /// Starts the engine and performs the `tei`/`teiok` handshake and the configured
    /// `setoption`s, so that a wrong path or a non-TEI program is reported at once.
    pub fn new(config: TeiConfig) -> Result<TeiPlayer, TeiClientError> {
        if config.program.trim().is_empty() {
            return Err(TeiClientError::NoProgram);
        }
        let mut player = TeiPlayer { config, engine: None, size: 0 };
        player.start()?;
        Ok(player)
    }

    /// The configuration.
    pub fn config(&self) -> &TeiConfig {
        &self.config
    }

    fn start(&mut self) -> Result<(), TeiClientError> {
        if let Some(old) = self.engine.take() {
            old.kill();
        }
        let cfg = &self.config;
        let mut child = Command::new(&cfg.program)
            .args(&cfg.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| TeiClientError::Start { program: cfg.program.clone(), source })?;
        let setup = |what: &'static str, source| TeiClientError::Setup { program: cfg.program.clone(), what, source };
        let stdin = child.stdin.take().ok_or_else(|| setup("its stdin", None))?;
        let stdout = child.stdout.take().ok_or_else(|| setup("its stdout", None))?;
        let stderr = child.stderr.take().ok_or_else(|| setup("its stderr", None))?;
        let (tx, rx) = channel();
        std::thread::Builder::new()
            .name("tei-stdout".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    match line {
                        Ok(l) => {
                            if tx.send(l.trim().to_string()).is_err() {
                                break;
                            }
                        }
                        Err(_) => break,
                    }
                }
            })
            .map_err(|e| setup("the stdout reader thread", Some(e)))?;
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        let tail = Arc::clone(&stderr_tail);
        std::thread::Builder::new()
            .name("tei-stderr".into())
            .spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Ok(mut t) = tail.lock() {
                        t.push(line);
                        let n = t.len();
                        if n > 5 {
                            t.drain(..n - 5);
                        }
                    }
                }
            })
            .map_err(|e| setup("the stderr reader thread", Some(e)))?;
        let mut engine = Engine { child, stdin, lines: rx, stderr_tail, last_line: None };
        let init = Duration::from_millis(cfg.init_timeout_ms);
        let handshake = (|| {
            engine.send(&TeiCommand::Tei)?;
            engine.wait_for("teiok", init)?;
            for (k, v) in &cfg.options {
                engine.send(&TeiCommand::SetOption { name: k.clone(), value: Some(v.clone()) })?;
            }
            Ok::<(), PlayerError>(())
        })();
        if let Err(e) = handshake {
            let e = engine.stage_error(&cfg.program, TeiStage::Handshake, "teiok", e);
            engine.kill();
            return Err(e);
        }
        self.engine = Some(engine);
        Ok(())
    }

    /// Kills the engine after a failure; the next game starts a new process.
    fn fail(&mut self, e: PlayerError) -> PlayerError {
        if let Some(engine) = self.engine.take() {
            engine.kill();
        }
        e
    }

    fn go_command(&self, pos: &Position, limits: &MoveLimits) -> Result<(TeiCommand, Duration), PlayerError> {
        let grace = Duration::from_millis(self.config.move_timeout_ms);
        // A game on a clock is played on the clock, as the arena's own players do.
        if let Some(c) = limits.clock {
            let own = if pos.side_to_move() == bredon_rules::Color::White { c.wtime } else { c.btime };
            let ms = |d: Duration| Some(d.as_millis() as u64);
            let cmd = TeiCommand::Go(GoParams {
                wtime: ms(c.wtime),
                btime: ms(c.btime),
                winc: ms(c.winc),
                binc: ms(c.binc),
                ..GoParams::default()
            });
            return Ok((cmd, grace + own));
        }
        if let Some(n) = limits.nodes {
            return Ok((TeiCommand::Go(GoParams { nodes: Some(n), ..GoParams::default() }), grace));
        }
        if let Some(t) = limits.movetime {
            return Ok((
                TeiCommand::Go(GoParams { movetime: Some(t.as_millis() as u64), ..GoParams::default() }),
                grace + t,
            ));
        }
        Err(PlayerError::NoLimit)
    }
}

impl Drop for TeiPlayer {
    fn drop(&mut self) {
        if let Some(engine) = self.engine.take() {
            engine.quit();
        }
    }
}

/// Parses a `bestmove` line: `bestmove <move> [more…]`.
pub fn parse_bestmove(line: &str, size: usize) -> Result<Move, PlayerError> {
    let text = match parse_response(line) {
        Ok(Response::BestMove(text)) => text,
        Ok(_) => return Err(PlayerError::Protocol(format!("expected bestmove, got {line:?}"))),
        Err(e) if bredon_tei::keyword(line) == Some("bestmove") => return Err(PlayerError::Protocol(e.to_string())),
        Err(_) => return Err(PlayerError::Protocol(format!("expected bestmove, got {line:?}"))),
    };
    parse_move(&text, size).map_err(|e| PlayerError::Unparsable { text, reason: e.to_string() })
}

impl Player for TeiPlayer {
    fn name(&self) -> String {
        self.config.display_name()
    }

    fn new_game(&mut self, opts: GameOptions) -> Result<(), PlayerError> {
        let alive = match self.engine.as_mut() {
            Some(e) => matches!(e.child.try_wait(), Ok(None)),
            None => false,
        };
        if !alive {
            self.start()?;
        }
        self.size = opts.size;
        let explicit_komi = self.config.options.iter().any(|(k, _)| k.eq_ignore_ascii_case("HalfKomi"));
        let send_komi = self.config.send_half_komi && !explicit_komi;
        let init = Duration::from_millis(self.config.init_timeout_ms);
        let Some(engine) = self.engine.as_mut() else {
            return Err(TeiClientError::NotRunning { engine: self.config.display_name() }.into());
        };
        let r = (|| {
            if send_komi {
                engine.send(&TeiCommand::SetOption {
                    name: "HalfKomi".into(),
                    value: Some(opts.half_komi.to_string()),
                })?;
            }
            engine.send(&TeiCommand::NewGame(NewGame::Plain(Some(opts.size))))?;
            engine.send(&TeiCommand::IsReady)?;
            engine.wait_for("readyok", init)?;
            Ok::<(), PlayerError>(())
        })();
        if let Err(e) = r {
            let e = engine.stage_error(&self.config.display_name(), TeiStage::NewGame, "readyok", e);
            if let Some(engine) = self.engine.take() {
                engine.kill();
            }
            return Err(e.into());
        }
        Ok(())
    }

    fn choose_move(&mut self, pos: &Position, history: &[Move], limits: &MoveLimits) -> Result<Move, PlayerError> {
        let size = pos.size();
        let (go, timeout) = self.go_command(pos, limits)?;
        let Some(engine) = self.engine.as_mut() else {
            return Err(PlayerError::Crashed("engine is not running".into()));
        };
        let position = TeiCommand::Position {
            start: StartPosition::StartPos,
            moves: history.iter().map(|mv| mv.to_ptn(size)).collect(),
        };
        let r = (|| {
            engine.send(&position)?;
            engine.send(&go)?;
            let line = engine.wait_for("bestmove", timeout)?;
            parse_bestmove(&line, size)
        })();
        r.map_err(|e| self.fail(e))
    }
}

/// Splits a command line into words: whitespace separates, double quotes group (with `\"`
/// and `\\` escapes inside them). An unterminated quote is an error.
pub fn split_command_line(s: &str) -> Result<Vec<String>, TeiClientError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e) => cur.push(e),
                            None => return Err(TeiClientError::UnterminatedQuote { line: s.to_string() }),
                        },
                        Some(o) => cur.push(o),
                        None => return Err(TeiClientError::UnterminatedQuote { line: s.to_string() }),
                    }
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        assert_eq!(split_command_line("tiltak tei").unwrap(), vec!["tiltak", "tei"]);
        assert_eq!(split_command_line("  \"/a b/c\"  x ").unwrap(), vec!["/a b/c", "x"]);
        assert_eq!(split_command_line("a\"\"").unwrap(), vec!["a"]);
        assert_eq!(split_command_line("\"\"").unwrap(), vec![""]);
        assert!(split_command_line("\"abc").is_err());
    }

    #[test]
    fn bestmove_lines() {
        assert!(parse_bestmove("bestmove a1", 5).is_ok());
        assert!(parse_bestmove("bestmove 2c3>11 ponder x", 5).is_ok());
        assert!(matches!(parse_bestmove("bestmove", 5), Err(PlayerError::Protocol(_))));
        assert!(matches!(parse_bestmove("bestmove zz9", 5), Err(PlayerError::Unparsable { .. })));
        assert!(matches!(parse_bestmove("info x", 5), Err(PlayerError::Protocol(_))));
    }
}
