//! The Tak Engine Interface (TEI), both directions, as text: what a GUI or match runner
//! sends an engine ([`TeiCommand`], parsed by [`parse_command`]) and what the engine sends
//! back ([`Response`], parsed by [`parse_response`]); both format themselves with
//! `Display`, one line each, without the newline. TEI is UCI-like:
//!
//! ```text
//! runner → engine   tei | setoption name N [value V] | isready | teinewgame [N]
//!                   position startpos|tps TPS [moves M…] | go [PARAMS…] | stop | quit
//! engine → runner   id name|author X | option name N type T … | teiok | readyok
//!                   info [depth D] [nodes N] [score cp S] [time MS] [nps P] [pv M…]
//!                   info string TEXT | bestmove M
//! ```
//!
//! Moves and positions stay text here (PTN and TPS): this crate knows the protocol, not the
//! game, so it depends on std only. Users: the engine (`bredon tei`, `crates/cli`), the
//! arena's client for external engines (`bredon_arena::TeiPlayer`) and the `tei_command`
//! fuzz target. Parsers never panic; every error says what is wrong.

use std::fmt;

/// A line that is not a valid command or response, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TeiParseError(pub String);

impl fmt::Display for TeiParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TeiParseError {}

fn err<T>(msg: impl Into<String>) -> Result<T, TeiParseError> {
    Err(TeiParseError(msg.into()))
}

/// The first word of a line (its keyword), if any.
pub fn keyword(line: &str) -> Option<&str> {
    line.split_whitespace().next()
}

// ---------------------------------------------------------------------------------------
// Runner → engine
// ---------------------------------------------------------------------------------------

/// A parsed `go` command.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GoParams {
    /// White's remaining time (ms).
    pub wtime: Option<u64>,
    /// Black's remaining time (ms).
    pub btime: Option<u64>,
    /// White's increment (ms).
    pub winc: Option<u64>,
    /// Black's increment (ms).
    pub binc: Option<u64>,
    /// Fixed time for this move (ms).
    pub movetime: Option<u64>,
    /// Search this many nodes (playouts).
    pub nodes: Option<u64>,
    /// Moves until the next time control: the clock is spread over this many moves.
    pub movestogo: Option<u64>,
    /// Search until `stop`.
    pub infinite: bool,
    /// Parameters the engine does not use (UCI's `depth`, `mate`, `ponder`, …): the search
    /// goes on with the others, so a runner always gets its `bestmove`.
    pub ignored: Vec<String>,
}

/// The start of a `position` command.
#[derive(Clone, Debug, PartialEq)]
pub enum StartPosition {
    /// The empty board of the current game size.
    StartPos,
    /// A TPS string.
    Tps(String),
}

/// One command from the GUI / match runner to the engine.
#[derive(Clone, Debug, PartialEq)]
pub enum TeiCommand {
    /// `tei`: identify and list options.
    Tei,
    /// `isready`.
    IsReady,
    /// `setoption name N [value V]`.
    SetOption {
        /// Option name.
        name: String,
        /// Option value, if given.
        value: Option<String>,
    },
    /// `teinewgame [size]`.
    NewGame(Option<usize>),
    /// `position … [moves …]`.
    Position {
        /// Where the moves start.
        start: StartPosition,
        /// PTN moves.
        moves: Vec<String>,
    },
    /// `go …`.
    Go(GoParams),
    /// `stop`.
    Stop,
    /// `quit`.
    Quit,
}

/// Parses one command line. Empty lines give `Ok(None)`.
pub fn parse_command(line: &str) -> Result<Option<TeiCommand>, TeiParseError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&head, rest)) = words.split_first() else { return Ok(None) };
    let cmd = match head {
        "tei" => TeiCommand::Tei,
        "isready" => TeiCommand::IsReady,
        "stop" => TeiCommand::Stop,
        "quit" => TeiCommand::Quit,
        "teinewgame" => match rest.first() {
            None => TeiCommand::NewGame(None),
            Some(s) => match s.parse::<usize>() {
                Ok(n) if (3..=8).contains(&n) => TeiCommand::NewGame(Some(n)),
                _ => return err(format!("teinewgame: bad board size {s:?} (3 to 8)")),
            },
        },
        "setoption" => {
            if rest.first() != Some(&"name") {
                return err("setoption: expected `setoption name <name> [value <value>]`");
            }
            let vpos = rest.iter().position(|&w| w == "value");
            let name_words = &rest[1..vpos.unwrap_or(rest.len())];
            if name_words.is_empty() {
                return err("setoption: missing option name");
            }
            let value = vpos.map(|p| rest[p + 1..].join(" "));
            TeiCommand::SetOption { name: name_words.join(" "), value }
        }
        "position" => {
            let (start, after) = match rest.first() {
                Some(&"startpos") => (StartPosition::StartPos, &rest[1..]),
                Some(&"tps") => {
                    let end = rest.iter().position(|&w| w == "moves").unwrap_or(rest.len());
                    if end < 2 {
                        return err("position tps: missing TPS");
                    }
                    (StartPosition::Tps(rest[1..end].join(" ")), &rest[end..])
                }
                _ => return err("position: expected `startpos` or `tps <tps>`"),
            };
            let moves = match after.split_first() {
                None => Vec::new(),
                Some((&"moves", ms)) => ms.iter().map(|s| s.to_string()).collect(),
                Some((w, _)) => return err(format!("position: unexpected {w:?}, expected `moves`")),
            };
            TeiCommand::Position { start, moves }
        }
        "go" => TeiCommand::Go(parse_go(rest)?),
        other => return err(format!("unknown command {other:?}")),
    };
    Ok(Some(cmd))
}

fn parse_go(rest: &[&str]) -> Result<GoParams, TeiParseError> {
    let mut p = GoParams::default();
    let mut i = 0;
    while i < rest.len() {
        let key = rest[i];
        if key == "infinite" {
            p.infinite = true;
            i += 1;
            continue;
        }
        let slot = match key {
            "wtime" => &mut p.wtime,
            "btime" => &mut p.btime,
            "winc" => &mut p.winc,
            "binc" => &mut p.binc,
            "movetime" => &mut p.movetime,
            "nodes" => &mut p.nodes,
            "movestogo" => &mut p.movestogo,
            _ => {
                // An unknown parameter with its value, if a number follows it.
                let with_value = rest.get(i + 1).is_some_and(|v| v.parse::<i64>().is_ok());
                let words = if with_value { 2 } else { 1 };
                p.ignored.push(rest[i..i + words].join(" "));
                i += words;
                continue;
            }
        };
        let Some(v) = rest.get(i + 1) else { return err(format!("go: {key} needs a value")) };
        *slot = match v.parse::<i64>() {
            Ok(x) => Some(x.max(0) as u64),
            Err(_) => return err(format!("go: {key} value {v:?} is not a number")),
        };
        i += 2;
    }
    Ok(p)
}

impl fmt::Display for GoParams {
    /// `go` and the parameters that are set, in the order `wtime btime winc binc movetime
    /// nodes movestogo infinite`, then the ignored ones.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("go")?;
        let numbers = [
            ("wtime", self.wtime),
            ("btime", self.btime),
            ("winc", self.winc),
            ("binc", self.binc),
            ("movetime", self.movetime),
            ("nodes", self.nodes),
            ("movestogo", self.movestogo),
        ];
        for (key, value) in numbers {
            if let Some(v) = value {
                write!(f, " {key} {v}")?;
            }
        }
        if self.infinite {
            f.write_str(" infinite")?;
        }
        for w in &self.ignored {
            write!(f, " {w}")?;
        }
        Ok(())
    }
}

impl fmt::Display for TeiCommand {
    /// The command line, which [`parse_command`] reads back as the same command (a `go`
    /// with ignored parameters may regroup them).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TeiCommand::Tei => f.write_str("tei"),
            TeiCommand::IsReady => f.write_str("isready"),
            TeiCommand::SetOption { name, value: None } => write!(f, "setoption name {name}"),
            TeiCommand::SetOption { name, value: Some(v) } => write!(f, "setoption name {name} value {v}"),
            TeiCommand::NewGame(None) => f.write_str("teinewgame"),
            TeiCommand::NewGame(Some(n)) => write!(f, "teinewgame {n}"),
            TeiCommand::Position { start, moves } => {
                match start {
                    StartPosition::StartPos => f.write_str("position startpos")?,
                    StartPosition::Tps(tps) => write!(f, "position tps {tps}")?,
                }
                if !moves.is_empty() {
                    write!(f, " moves {}", moves.join(" "))?;
                }
                Ok(())
            }
            TeiCommand::Go(p) => p.fmt(f),
            TeiCommand::Stop => f.write_str("stop"),
            TeiCommand::Quit => f.write_str("quit"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Engine → runner
// ---------------------------------------------------------------------------------------

/// An `option` line of the handshake: `option name N type T [default D] [min X] [max Y]
/// [var V]…`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OptionInfo {
    /// Option name (may hold spaces).
    pub name: String,
    /// Its type: `check`, `spin`, `combo`, `button` or `string`.
    pub kind: String,
    /// Default value.
    pub default: Option<String>,
    /// Smallest value of a `spin`.
    pub min: Option<String>,
    /// Largest value of a `spin`.
    pub max: Option<String>,
    /// The values of a `combo`.
    pub vars: Vec<String>,
}

/// A search report: `info [depth D] [nodes N] [score cp S] [time MS] [nps P] [pv M…]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Info {
    /// Length of the principal variation.
    pub depth: Option<u64>,
    /// Nodes (playouts) searched.
    pub nodes: Option<u64>,
    /// The score, see [`value_to_cp`].
    pub score_cp: Option<i32>,
    /// Milliseconds since the search began.
    pub time_ms: Option<u64>,
    /// Nodes per second.
    pub nps: Option<u64>,
    /// The principal variation, PTN moves (last on the line).
    pub pv: Option<Vec<String>>,
}

/// One line from the engine to the GUI / match runner.
#[derive(Clone, Debug, PartialEq)]
pub enum Response {
    /// `id name X` or `id author X`.
    Id {
        /// `name` or `author`.
        field: String,
        /// The rest of the line.
        value: String,
    },
    /// `option name …`.
    Option(OptionInfo),
    /// `teiok`: the handshake is over.
    TeiOk,
    /// `readyok`.
    ReadyOk,
    /// `info …`: search progress.
    Info(Info),
    /// `info string TEXT`: a message for a human (Bredon's start with `error:` or `warning:`).
    InfoString(String),
    /// `bestmove M`: the move, PTN (words after it, such as `ponder`, are dropped).
    BestMove(String),
}

/// Parses one line from an engine. Empty and unknown lines are errors (a client skips
/// what it does not wait for).
pub fn parse_response(line: &str) -> Result<Response, TeiParseError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&head, rest)) = words.split_first() else { return err("empty line") };
    Ok(match head {
        "teiok" => Response::TeiOk,
        "readyok" => Response::ReadyOk,
        "bestmove" => match rest.first() {
            Some(mv) => Response::BestMove(mv.to_string()),
            None => return err(format!("bestmove without a move: {line:?}")),
        },
        "id" => match rest.split_first() {
            Some((field, value)) => Response::Id { field: field.to_string(), value: value.join(" ") },
            None => return err("id: missing field"),
        },
        "option" => Response::Option(parse_option(rest)?),
        "info" if rest.first() == Some(&"string") => {
            // The text as sent, after `info string ` (inner spacing kept).
            let after = line.trim_start().strip_prefix("info").unwrap_or("").trim_start();
            let text = after.strip_prefix("string").unwrap_or("");
            Response::InfoString(text.strip_prefix(' ').unwrap_or(text).trim_end().to_string())
        }
        "info" => Response::Info(parse_info(rest)?),
        other => return err(format!("unknown response {other:?}")),
    })
}

fn parse_option(rest: &[&str]) -> Result<OptionInfo, TeiParseError> {
    if rest.first() != Some(&"name") {
        return err("option: expected `option name <name> type <type> …`");
    }
    let Some(type_at) = rest.iter().position(|&w| w == "type") else { return err("option: missing `type`") };
    let name = rest[1..type_at].join(" ");
    if name.is_empty() {
        return err("option: missing option name");
    }
    let Some(kind) = rest.get(type_at + 1) else { return err("option: `type` needs a value") };
    let mut o = OptionInfo { name, kind: kind.to_string(), ..OptionInfo::default() };
    let mut i = type_at + 2;
    while i < rest.len() {
        let key = rest[i];
        let end = rest[i + 1..]
            .iter()
            .position(|w| matches!(*w, "default" | "min" | "max" | "var"))
            .map_or(rest.len(), |p| i + 1 + p);
        let value = rest[i + 1..end].join(" ");
        match key {
            "default" => o.default = Some(value),
            "min" => o.min = Some(value),
            "max" => o.max = Some(value),
            "var" => o.vars.push(value),
            other => return err(format!("option: unexpected {other:?}")),
        }
        i = end;
    }
    Ok(o)
}

fn parse_info(rest: &[&str]) -> Result<Info, TeiParseError> {
    fn number<T: std::str::FromStr>(key: &str, v: Option<&&str>) -> Result<T, TeiParseError> {
        let Some(v) = v else { return err(format!("info: {key} needs a value")) };
        v.parse().map_err(|_| TeiParseError(format!("info: {key} value {v:?} is not a number")))
    }
    let mut info = Info::default();
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            "depth" => info.depth = Some(number("depth", rest.get(i + 1))?),
            "nodes" => info.nodes = Some(number("nodes", rest.get(i + 1))?),
            "time" => info.time_ms = Some(number("time", rest.get(i + 1))?),
            "nps" => info.nps = Some(number("nps", rest.get(i + 1))?),
            "score" => {
                if rest.get(i + 1) != Some(&"cp") {
                    return err("info: expected `score cp <value>`");
                }
                info.score_cp = Some(number("score cp", rest.get(i + 2))?);
                i += 1;
            }
            "pv" => {
                info.pv = Some(rest[i + 1..].iter().map(|s| s.to_string()).collect());
                break;
            }
            // Another engine's extra fields (`seldepth 7`, `hashfull 10`): skipped with a
            // numeric value.
            _ => {
                if rest.get(i + 1).is_none_or(|v| v.parse::<i64>().is_err()) {
                    i += 1;
                    continue;
                }
            }
        }
        i += 2;
    }
    Ok(info)
}

impl fmt::Display for OptionInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "option name {} type {}", self.name, self.kind)?;
        if let Some(d) = &self.default {
            write!(f, " default {d}")?;
        }
        if let Some(m) = &self.min {
            write!(f, " min {m}")?;
        }
        if let Some(m) = &self.max {
            write!(f, " max {m}")?;
        }
        for v in &self.vars {
            write!(f, " var {v}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Info {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("info")?;
        if let Some(d) = self.depth {
            write!(f, " depth {d}")?;
        }
        if let Some(n) = self.nodes {
            write!(f, " nodes {n}")?;
        }
        if let Some(s) = self.score_cp {
            write!(f, " score cp {s}")?;
        }
        if let Some(t) = self.time_ms {
            write!(f, " time {t}")?;
        }
        if let Some(n) = self.nps {
            write!(f, " nps {n}")?;
        }
        if let Some(pv) = &self.pv {
            write!(f, " pv {}", pv.join(" "))?;
        }
        Ok(())
    }
}

impl fmt::Display for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Response::Id { field, value } => write!(f, "id {field} {value}"),
            Response::Option(o) => o.fmt(f),
            Response::TeiOk => f.write_str("teiok"),
            Response::ReadyOk => f.write_str("readyok"),
            Response::Info(i) => i.fmt(f),
            Response::InfoString(s) => write!(f, "info string {s}"),
            Response::BestMove(m) => write!(f, "bestmove {m}"),
        }
    }
}

/// A search value as TEI `score cp`, on the scale Tak match runners and engines (Tiltak)
/// use: 100 × the expected score for the side to move, so an unproven value is in
/// [-100, 100] and `cp / 100` reads as the value itself. A proven result is reported as
/// ±(10000 − plies to the end of the line): far outside that range, so it cannot be
/// mistaken for an evaluation, and still a plain `score cp` that every runner parses.
pub fn value_to_cp(value: f32, proven: bool, plies: usize) -> i32 {
    if proven {
        let mate = 10000 - plies.min(1000) as i32;
        return if value > 0.0 {
            mate
        } else if value < 0.0 {
            -mate
        } else {
            0
        };
    }
    (value.clamp(-1.0, 1.0) * 100.0).round() as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands() {
        assert_eq!(parse_command("  ").unwrap(), None);
        assert_eq!(parse_command("tei").unwrap(), Some(TeiCommand::Tei));
        assert_eq!(parse_command("teinewgame 6").unwrap(), Some(TeiCommand::NewGame(Some(6))));
        assert_eq!(
            parse_command("setoption name HalfKomi value 4").unwrap(),
            Some(TeiCommand::SetOption { name: "HalfKomi".into(), value: Some("4".into()) })
        );
        assert_eq!(
            parse_command("position tps x3/x3/x3 1 1 moves a1 b2").unwrap(),
            Some(TeiCommand::Position {
                start: StartPosition::Tps("x3/x3/x3 1 1".into()),
                moves: vec!["a1".into(), "b2".into()]
            })
        );
        assert_eq!(
            parse_command("position startpos").unwrap(),
            Some(TeiCommand::Position { start: StartPosition::StartPos, moves: vec![] })
        );
        let go = parse_command("go wtime 1000 btime 900 winc 10 binc 10").unwrap();
        assert_eq!(
            go,
            Some(TeiCommand::Go(GoParams {
                wtime: Some(1000),
                btime: Some(900),
                winc: Some(10),
                binc: Some(10),
                ..Default::default()
            }))
        );
        assert!(matches!(parse_command("go infinite").unwrap(), Some(TeiCommand::Go(GoParams { infinite: true, .. }))));
        // Parameters the engine does not use are listed, not fatal: the search still runs.
        assert_eq!(
            parse_command("go depth 3 ponder wtime 500 movestogo 10 searchmoves").unwrap(),
            Some(TeiCommand::Go(GoParams {
                wtime: Some(500),
                movestogo: Some(10),
                ignored: vec!["depth 3".into(), "ponder".into(), "searchmoves".into()],
                ..Default::default()
            }))
        );
    }

    #[test]
    fn rejects_bad_lines_with_a_reason() {
        for (line, needle) in [
            ("flurb", "unknown command"),
            ("go nodes", "needs a value"),
            ("go nodes x", "not a number"),
            ("teinewgame 12", "bad board size"),
            ("position", "expected `startpos`"),
            ("position startpos a1", "expected `moves`"),
            ("setoption HalfKomi", "setoption"),
        ] {
            let e = parse_command(line).unwrap_err();
            assert!(e.0.contains(needle), "{line}: {e}");
        }
    }

    #[test]
    fn commands_format_as_the_lines_a_client_sends_and_read_back() {
        for line in [
            "tei",
            "isready",
            "setoption name HalfKomi value 4",
            "setoption name Hash",
            "teinewgame",
            "teinewgame 5",
            "position startpos",
            "position startpos moves a1 e5 2a1>11",
            "position tps x3/x3/x3 1 1 moves a1",
            "go nodes 200",
            "go movetime 150",
            "go wtime 1000 btime 900 winc 10 binc 10",
            "go wtime 500 movestogo 10 infinite depth 3",
            "stop",
            "quit",
        ] {
            let cmd = parse_command(line).unwrap().unwrap();
            assert_eq!(cmd.to_string(), line);
            assert_eq!(parse_command(&cmd.to_string()).unwrap(), Some(cmd));
        }
        let go = TeiCommand::Go(GoParams { nodes: Some(7), ..GoParams::default() });
        assert_eq!(go.to_string(), "go nodes 7");
    }

    #[test]
    fn responses_parse_and_format() {
        for line in [
            "id name Bredon 0.1.0",
            "id author the Bredon developers",
            "option name HalfKomi type combo default 0 var -1 var 0 var 1",
            "option name HalfKomi type spin default 0 min -10 max 10",
            "teiok",
            "readyok",
            "info depth 3 nodes 200 score cp 9999 time 5 nps 40000 pv d1 a2 b3",
            "info depth 1 nodes 0 score cp 0 time 1 nps 0 pv ",
            "info string warning: go: ignored depth 7, ponder",
            "bestmove 2c3>11",
        ] {
            let r = parse_response(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(r.to_string(), line);
        }
        assert_eq!(parse_response("bestmove a1 ponder b2").unwrap(), Response::BestMove("a1".into()));
        assert_eq!(parse_response("info string  two  spaces ").unwrap(), Response::InfoString(" two  spaces".into()));
        let info = parse_response("info seldepth 9 depth 2 hashfull 3 nodes 10").unwrap();
        assert_eq!(info, Response::Info(Info { depth: Some(2), nodes: Some(10), ..Info::default() }));
        for (line, needle) in [
            ("", "empty"),
            ("bestmove", "without a move"),
            ("bogus", "unknown response"),
            ("info nodes x", "not a number"),
            ("info score mate 3", "score cp"),
            ("option name X", "missing `type`"),
        ] {
            let e = parse_response(line).unwrap_err();
            assert!(e.0.contains(needle), "{line:?}: {e}");
        }
    }

    /// The fuzz target's properties on lines made of protocol words (a cheap stand-in for
    /// `cargo fuzz run tei_command`): no panic, reasons on errors, and what parses formats
    /// to a line that parses back (to the same command, unless ignored `go` words regroup).
    #[test]
    fn generated_lines_round_trip() {
        const WORDS: &[&str] = &[
            "tei",
            "isready",
            "setoption",
            "name",
            "value",
            "teinewgame",
            "position",
            "startpos",
            "tps",
            "moves",
            "go",
            "stop",
            "quit",
            "wtime",
            "btime",
            "winc",
            "binc",
            "movetime",
            "nodes",
            "movestogo",
            "infinite",
            "depth",
            "ponder",
            "3",
            "5",
            "-7",
            "x",
            "a1",
            "x3/x3/x3",
            "1",
            "id",
            "author",
            "option",
            "type",
            "spin",
            "combo",
            "default",
            "min",
            "max",
            "var",
            "teiok",
            "readyok",
            "info",
            "string",
            "score",
            "cp",
            "time",
            "nps",
            "pv",
            "bestmove",
            "seldepth",
            " ",
            "\t",
            "",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) as usize) % n
        };
        for _ in 0..200_000 {
            let len = next(8);
            let line: Vec<&str> = (0..len).map(|_| WORDS[next(WORDS.len())]).collect();
            let line = line.join(if next(4) == 0 { "  " } else { " " });
            match parse_command(&line) {
                Ok(None) => assert!(line.split_whitespace().next().is_none(), "{line:?} ignored"),
                Ok(Some(cmd)) => {
                    let regroups = matches!(&cmd, TeiCommand::Go(p) if !p.ignored.is_empty());
                    let again = parse_command(&cmd.to_string());
                    if regroups {
                        assert!(matches!(again, Ok(Some(TeiCommand::Go(_)))), "{line:?} -> {cmd}");
                    } else {
                        assert_eq!(again, Ok(Some(cmd.clone())), "{line:?} -> {cmd}");
                    }
                }
                Err(e) => assert!(!e.0.is_empty(), "{line:?}"),
            }
            match parse_response(&line) {
                Ok(r) => {
                    let formatted = r.to_string();
                    assert!(parse_response(&formatted).is_ok(), "{line:?} -> {formatted:?}");
                }
                Err(e) => assert!(!e.0.is_empty(), "{line:?}"),
            }
        }
    }

    #[test]
    fn value_to_cp_uses_the_runners_scale() {
        assert_eq!(value_to_cp(0.0, false, 3), 0);
        assert_eq!(value_to_cp(0.5, false, 3), 50);
        assert_eq!(value_to_cp(-0.999, false, 3), -100);
        assert_eq!(value_to_cp(-1.0, true, 3), -9997);
        assert_eq!(value_to_cp(1.0, true, 1), 9999);
    }
}
