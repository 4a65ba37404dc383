//! Parsing of Tak Engine Interface (TEI) commands, the engine side. TEI is UCI-like:
//! `tei`, `setoption name N value V`, `isready`, `teinewgame N`, `position startpos|tps …
//! [moves …]`, `go …`, `stop`, `quit`.

use std::fmt;

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

/// One command from the GUI / match runner.
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

/// A line that is not a valid command.
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

/// Parses one line. Empty lines give `Ok(None)`.
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
        "go" => {
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
            TeiCommand::Go(p)
        }
        other => return err(format!("unknown command {other:?}")),
    };
    Ok(Some(cmd))
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
}
