//! Runner → engine: [`TeiCommand`] and [`parse_command`].

use std::fmt;

use crate::dialect::{Dialect, SIZES};
use crate::error::{ParseErrorKind, TeiParseError};

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
    /// `infinite`: search until `stop` (the other limits are ignored).
    pub infinite: bool,
    /// `solved` (PTN Ninja): search for a proven result; stop as soon as the position is
    /// solved (or at the other limits).
    pub solved: bool,
    /// Parameters the engine does not use (UCI's `depth`, `mate`, `ponder`, …): the search
    /// goes on with the others, so a runner always gets its `bestmove`.
    pub ignored: Vec<String>,
}

impl GoParams {
    /// A `go` with no parameter at all.
    pub fn is_bare(&self) -> bool {
        *self == GoParams::default()
    }

    /// Whether the search runs until `stop`: `go infinite`, and in the PTN Ninja dialect
    /// also a bare `go` ("given without parameters, assume `infinite`"). In the match
    /// runners' dialect a bare `go` searches the engine's default budget.
    pub fn runs_until_stop(&self, dialect: Dialect) -> bool {
        self.infinite || (dialect == Dialect::PtnNinja && self.is_bare())
    }
}

/// The start of a `position` command.
#[derive(Clone, Debug, PartialEq)]
pub enum StartPosition {
    /// The empty board of the current game size.
    StartPos,
    /// A TPS string.
    Tps(String),
}

/// A `teinewgame` command, in either dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewGame {
    /// `teinewgame [N]`: the match runners' form (komi comes by `setoption name HalfKomi`).
    Plain(Option<usize>),
    /// `teinewgame size N [halfkomi K]`: PTN Ninja's form, size and komi for this game.
    Sized {
        /// Board size, 3 to 8.
        size: usize,
        /// Komi in half points, if sent (any `i8` parses; the engine says which it plays).
        /// Without it PTN Ninja's spec means komi 0.
        half_komi: Option<i8>,
    },
}

impl NewGame {
    /// The board size, if the command gives one.
    pub fn size(&self) -> Option<usize> {
        match *self {
            NewGame::Plain(size) => size,
            NewGame::Sized { size, .. } => Some(size),
        }
    }

    /// The komi in half points, if the command gives one.
    pub fn half_komi(&self) -> Option<i8> {
        match *self {
            NewGame::Plain(_) => None,
            NewGame::Sized { half_komi, .. } => half_komi,
        }
    }

    /// The dialect this form belongs to.
    pub fn dialect(&self) -> Dialect {
        match self {
            NewGame::Plain(_) => Dialect::MatchRunner,
            NewGame::Sized { .. } => Dialect::PtnNinja,
        }
    }
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
        /// Option name (may hold spaces).
        name: String,
        /// Option value, if given.
        value: Option<String>,
    },
    /// `teinewgame …`, either dialect's form.
    NewGame(NewGame),
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
    let fail = |kind| Err(TeiParseError::new(head, kind));
    let cmd = match head {
        "tei" => TeiCommand::Tei,
        "isready" => TeiCommand::IsReady,
        "stop" => TeiCommand::Stop,
        "quit" => TeiCommand::Quit,
        "teinewgame" => TeiCommand::NewGame(parse_new_game(rest).map_err(|kind| TeiParseError::new(head, kind))?),
        "setoption" => {
            if rest.first() != Some(&"name") {
                return fail(ParseErrorKind::Missing { expected: "`name <name> [value <value>]`" });
            }
            let vpos = rest.iter().position(|&w| w == "value");
            let name_words = &rest[1..vpos.unwrap_or(rest.len())];
            if name_words.is_empty() {
                return fail(ParseErrorKind::MissingValue { field: "name" });
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
                        return fail(ParseErrorKind::MissingValue { field: "tps" });
                    }
                    (StartPosition::Tps(rest[1..end].join(" ")), &rest[end..])
                }
                Some(w) => {
                    return fail(ParseErrorKind::Unexpected {
                        found: w.to_string(),
                        expected: "`startpos` or `tps <tps>`",
                    });
                }
                None => return fail(ParseErrorKind::Missing { expected: "`startpos` or `tps <tps>`" }),
            };
            let moves = match after.split_first() {
                None => Vec::new(),
                Some((&"moves", ms)) => ms.iter().map(|s| s.to_string()).collect(),
                Some((w, _)) => return fail(ParseErrorKind::Unexpected { found: w.to_string(), expected: "`moves`" }),
            };
            TeiCommand::Position { start, moves }
        }
        "go" => TeiCommand::Go(parse_go(rest).map_err(|kind| TeiParseError::new(head, kind))?),
        _ => return fail(ParseErrorKind::UnknownCommand),
    };
    Ok(Some(cmd))
}

const NEW_GAME_FORMS: &str = "`teinewgame N` or `teinewgame size N [halfkomi K]`";

fn parse_new_game(rest: &[&str]) -> Result<NewGame, ParseErrorKind> {
    let Some(&first) = rest.first() else { return Ok(NewGame::Plain(None)) };
    if first != "size" && first != "halfkomi" {
        if first.parse::<i64>().is_err() {
            return Err(ParseErrorKind::Unexpected { found: first.to_string(), expected: NEW_GAME_FORMS });
        }
        let size = parse_size(first)?;
        if let Some(extra) = rest.get(1) {
            return Err(ParseErrorKind::Unexpected { found: extra.to_string(), expected: "the end of the line" });
        }
        return Ok(NewGame::Plain(Some(size)));
    }
    let (mut size, mut half_komi) = (None, None);
    let mut words = rest.iter();
    while let Some(&key) = words.next() {
        let field = match key {
            "size" => "size",
            "halfkomi" => "halfkomi",
            other => {
                return Err(ParseErrorKind::Unexpected {
                    found: other.to_string(),
                    expected: "`size N` or `halfkomi K`",
                });
            }
        };
        let Some(&value) = words.next() else { return Err(ParseErrorKind::MissingValue { field }) };
        if field == "size" {
            size = Some(parse_size(value)?);
        } else {
            half_komi = Some(parse_in_range("halfkomi", value, i8::MIN.into(), i8::MAX.into())? as i8);
        }
    }
    match size {
        Some(size) => Ok(NewGame::Sized { size, half_komi }),
        None => Err(ParseErrorKind::Missing { expected: "`size N`" }),
    }
}

/// A board size, 3 to 8.
pub(crate) fn parse_size(value: &str) -> Result<usize, ParseErrorKind> {
    Ok(parse_in_range("size", value, *SIZES.start() as i64, *SIZES.end() as i64)? as usize)
}

/// An integer from `min` to `max`.
pub(crate) fn parse_in_range(field: &'static str, value: &str, min: i64, max: i64) -> Result<i64, ParseErrorKind> {
    let Ok(n) = value.parse::<i64>() else {
        return Err(ParseErrorKind::NotANumber { field, value: value.to_string() });
    };
    if !(min..=max).contains(&n) {
        return Err(ParseErrorKind::OutOfRange { field, value: value.to_string(), min, max });
    }
    Ok(n)
}

fn parse_go(rest: &[&str]) -> Result<GoParams, ParseErrorKind> {
    let mut p = GoParams::default();
    let mut i = 0;
    while i < rest.len() {
        let key = rest[i];
        match key {
            "infinite" => {
                p.infinite = true;
                i += 1;
                continue;
            }
            "solved" => {
                p.solved = true;
                i += 1;
                continue;
            }
            _ => {}
        }
        let (field, slot) = match key {
            "wtime" => ("wtime", &mut p.wtime),
            "btime" => ("btime", &mut p.btime),
            "winc" => ("winc", &mut p.winc),
            "binc" => ("binc", &mut p.binc),
            "movetime" => ("movetime", &mut p.movetime),
            "nodes" => ("nodes", &mut p.nodes),
            "movestogo" => ("movestogo", &mut p.movestogo),
            _ => {
                // An unknown parameter with its value, if a number follows it.
                let with_value = rest.get(i + 1).is_some_and(|v| v.parse::<i64>().is_ok());
                let words = if with_value { 2 } else { 1 };
                p.ignored.push(rest[i..i + words].join(" "));
                i += words;
                continue;
            }
        };
        let Some(v) = rest.get(i + 1) else { return Err(ParseErrorKind::MissingValue { field }) };
        *slot = match v.parse::<i64>() {
            // A clock may run out: negative times are taken as 0.
            Ok(x) => Some(x.max(0) as u64),
            Err(_) => return Err(ParseErrorKind::NotANumber { field, value: v.to_string() }),
        };
        i += 2;
    }
    Ok(p)
}

impl fmt::Display for GoParams {
    /// `go` and the parameters that are set, in the order `wtime btime winc binc movetime
    /// nodes movestogo infinite solved`, then the ignored ones.
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
        if self.solved {
            f.write_str(" solved")?;
        }
        for w in &self.ignored {
            write!(f, " {w}")?;
        }
        Ok(())
    }
}

impl fmt::Display for NewGame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            NewGame::Plain(None) => f.write_str("teinewgame"),
            NewGame::Plain(Some(n)) => write!(f, "teinewgame {n}"),
            NewGame::Sized { size, half_komi: None } => write!(f, "teinewgame size {size}"),
            NewGame::Sized { size, half_komi: Some(k) } => write!(f, "teinewgame size {size} halfkomi {k}"),
        }
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
            TeiCommand::NewGame(g) => g.fmt(f),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(line: &str) -> TeiCommand {
        parse_command(line).unwrap_or_else(|e| panic!("{line}: {e}")).unwrap_or_else(|| panic!("{line}: empty"))
    }

    #[test]
    fn parses_commands() {
        assert_eq!(parse_command("  ").unwrap(), None);
        assert_eq!(cmd("tei"), TeiCommand::Tei);
        assert_eq!(cmd("teinewgame"), TeiCommand::NewGame(NewGame::Plain(None)));
        assert_eq!(cmd("teinewgame 6"), TeiCommand::NewGame(NewGame::Plain(Some(6))));
        assert_eq!(
            cmd("setoption name HalfKomi value 4"),
            TeiCommand::SetOption { name: "HalfKomi".into(), value: Some("4".into()) }
        );
        assert_eq!(
            cmd("position tps x3/x3/x3 1 1 moves a1 b2"),
            TeiCommand::Position {
                start: StartPosition::Tps("x3/x3/x3 1 1".into()),
                moves: vec!["a1".into(), "b2".into()]
            }
        );
        assert_eq!(cmd("position startpos"), TeiCommand::Position { start: StartPosition::StartPos, moves: vec![] });
        assert_eq!(
            cmd("go wtime 1000 btime 900 winc 10 binc 10"),
            TeiCommand::Go(GoParams {
                wtime: Some(1000),
                btime: Some(900),
                winc: Some(10),
                binc: Some(10),
                ..Default::default()
            })
        );
        assert!(matches!(cmd("go infinite"), TeiCommand::Go(GoParams { infinite: true, .. })));
        assert_eq!(
            cmd("go solved nodes 5"),
            TeiCommand::Go(GoParams { solved: true, nodes: Some(5), ..Default::default() })
        );
        // Parameters the engine does not use are listed, not fatal: the search still runs.
        assert_eq!(
            cmd("go depth 3 ponder wtime 500 movestogo 10 searchmoves"),
            TeiCommand::Go(GoParams {
                wtime: Some(500),
                movestogo: Some(10),
                ignored: vec!["depth 3".into(), "ponder".into(), "searchmoves".into()],
                ..Default::default()
            })
        );
        // A clock below zero is an empty clock.
        assert_eq!(cmd("go wtime -5"), TeiCommand::Go(GoParams { wtime: Some(0), ..Default::default() }));
    }

    #[test]
    fn teinewgame_in_both_dialects() {
        let sized = |line: &str| match cmd(line) {
            TeiCommand::NewGame(g) => g,
            other => panic!("{line}: {other:?}"),
        };
        let g = sized("teinewgame size 6 halfkomi 4");
        assert_eq!(g, NewGame::Sized { size: 6, half_komi: Some(4) });
        assert_eq!((g.size(), g.half_komi(), g.dialect()), (Some(6), Some(4), Dialect::PtnNinja));
        assert_eq!(sized("teinewgame size 5"), NewGame::Sized { size: 5, half_komi: None });
        assert_eq!(sized("teinewgame halfkomi -3 size 4"), NewGame::Sized { size: 4, half_komi: Some(-3) });
        let plain = sized("teinewgame 5");
        assert_eq!((plain.size(), plain.half_komi(), plain.dialect()), (Some(5), None, Dialect::MatchRunner));
    }

    #[test]
    fn bare_go_is_infinite_only_in_the_ptn_ninja_dialect() {
        let bare = GoParams::default();
        assert!(bare.is_bare());
        assert!(bare.runs_until_stop(Dialect::PtnNinja));
        assert!(!bare.runs_until_stop(Dialect::MatchRunner));
        let nodes = GoParams { nodes: Some(3), ..GoParams::default() };
        assert!(!nodes.runs_until_stop(Dialect::PtnNinja));
        let infinite = GoParams { infinite: true, ..GoParams::default() };
        assert!(infinite.runs_until_stop(Dialect::MatchRunner) && infinite.runs_until_stop(Dialect::PtnNinja));
    }

    /// Every kind of command error, with the keyword it names and its message.
    #[test]
    fn each_bad_command_gets_its_error() {
        use ParseErrorKind::*;
        let cases: Vec<(&str, ParseErrorKind, &str)> = vec![
            ("flurb x", UnknownCommand, "unknown command \"flurb\""),
            ("go nodes", MissingValue { field: "nodes" }, "go: nodes needs a value"),
            ("go nodes x", NotANumber { field: "nodes", value: "x".into() }, "go: nodes value \"x\" is not a number"),
            (
                "teinewgame 12",
                OutOfRange { field: "size", value: "12".into(), min: 3, max: 8 },
                "teinewgame: size value 12 is out of range (3 to 8)",
            ),
            (
                "teinewgame big",
                Unexpected { found: "big".into(), expected: NEW_GAME_FORMS },
                "teinewgame: unexpected \"big\", expected `teinewgame N` or `teinewgame size N [halfkomi K]`",
            ),
            (
                "teinewgame 6 halfkomi 4",
                Unexpected { found: "halfkomi".into(), expected: "the end of the line" },
                "teinewgame: unexpected \"halfkomi\", expected the end of the line",
            ),
            (
                "teinewgame size 6 komi 4",
                Unexpected { found: "komi".into(), expected: "`size N` or `halfkomi K`" },
                "teinewgame: unexpected \"komi\", expected `size N` or `halfkomi K`",
            ),
            ("teinewgame size", MissingValue { field: "size" }, "teinewgame: size needs a value"),
            ("teinewgame halfkomi 4", Missing { expected: "`size N`" }, "teinewgame: expected `size N`"),
            (
                "teinewgame size 6 halfkomi 300",
                OutOfRange { field: "halfkomi", value: "300".into(), min: -128, max: 127 },
                "teinewgame: halfkomi value 300 is out of range (-128 to 127)",
            ),
            (
                "teinewgame size 6 halfkomi 1.5",
                NotANumber { field: "halfkomi", value: "1.5".into() },
                "teinewgame: halfkomi value \"1.5\" is not a number",
            ),
            (
                "position",
                Missing { expected: "`startpos` or `tps <tps>`" },
                "position: expected `startpos` or `tps <tps>`",
            ),
            (
                "position start",
                Unexpected { found: "start".into(), expected: "`startpos` or `tps <tps>`" },
                "position: unexpected \"start\", expected `startpos` or `tps <tps>`",
            ),
            ("position tps moves a1", MissingValue { field: "tps" }, "position: tps needs a value"),
            (
                "position startpos a1",
                Unexpected { found: "a1".into(), expected: "`moves`" },
                "position: unexpected \"a1\", expected `moves`",
            ),
            (
                "setoption HalfKomi",
                Missing { expected: "`name <name> [value <value>]`" },
                "setoption: expected `name <name> [value <value>]`",
            ),
            ("setoption name value 3", MissingValue { field: "name" }, "setoption: name needs a value"),
        ];
        for (line, kind, message) in cases {
            let e = parse_command(line).unwrap_err();
            assert_eq!(e.keyword, line.split_whitespace().next().unwrap(), "{line}");
            assert_eq!(e.kind, kind, "{line}");
            assert_eq!(e.to_string(), message, "{line}");
        }
    }

    #[test]
    fn commands_format_as_the_lines_a_client_sends_and_read_back() {
        for line in [
            "tei",
            "isready",
            "setoption name HalfKomi value 4",
            "setoption name Hash",
            "setoption name Model Path value /a b/c",
            "teinewgame",
            "teinewgame 5",
            "teinewgame size 6",
            "teinewgame size 6 halfkomi 4",
            "teinewgame size 3 halfkomi -20",
            "position startpos",
            "position startpos moves a1 e5 2a1>11",
            "position tps x3/x3/x3 1 1 moves a1",
            "go",
            "go nodes 200",
            "go movetime 150",
            "go infinite",
            "go solved",
            "go movetime 1000 solved",
            "go wtime 1000 btime 900 winc 10 binc 10",
            "go wtime 500 movestogo 10 infinite depth 3",
            "stop",
            "quit",
        ] {
            let c = cmd(line);
            assert_eq!(c.to_string(), line);
            assert_eq!(parse_command(&c.to_string()).unwrap(), Some(c));
        }
        // Typed values format to lines that parse back to them.
        let values = [
            TeiCommand::Go(GoParams { nodes: Some(7), solved: true, ..GoParams::default() }),
            TeiCommand::NewGame(NewGame::Sized { size: 8, half_komi: Some(20) }),
            TeiCommand::NewGame(NewGame::Plain(Some(3))),
            TeiCommand::SetOption { name: "MultiPV".into(), value: Some("3".into()) },
        ];
        for v in values {
            assert_eq!(parse_command(&v.to_string()).unwrap(), Some(v.clone()), "{v}");
        }
    }
}
