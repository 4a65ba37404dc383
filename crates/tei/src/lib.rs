//! The Tak Engine Interface (TEI), both directions, as text: what a GUI or match runner
//! sends an engine ([`TeiCommand`], parsed by [`parse_command`]) and what the engine sends
//! back ([`Response`], parsed by [`parse_response`]); both format themselves with
//! `Display`, one line each, without the newline, and what formats parses back to the same
//! value. TEI is UCI-like, in two dialects ([`Dialect`]):
//!
//! ```text
//! runner → engine   tei | setoption name N [value V] | isready
//!                   teinewgame [N] | teinewgame size N [halfkomi K]
//!                   position startpos|tps TPS [moves M…] | go [PARAMS…] | stop | quit
//! engine → runner   id name|author|version X | size N… halfkomi K… | option name N type T …
//!                   teiok | readyok | bestmove M | info string TEXT | info error TEXT
//!                   info [depth D] [seldepth S] [multipv K] [score cp S | score solved
//!                        win|loss|draw N] [wdl W D L] [nodes N] [time MS] [nps P]
//!                        [hashfull H] [pv M…]
//! ```
//!
//! Moves and positions stay text here (PTN and TPS): this crate knows the protocol, not the
//! game, so it depends on std only. Users: the engine (`bredon_engine::tei`), the arena's
//! client for external engines (`bredon_arena::TeiPlayer`) and the `tei_command` fuzz
//! target. Parsers never panic; every error is a [`TeiParseError`]: the line's keyword and
//! a [`ParseErrorKind`].

mod command;
mod dialect;
mod error;
mod response;

pub use command::{GoParams, NewGame, StartPosition, TeiCommand, parse_command};
pub use dialect::{Dialect, SIZES};
pub use error::{ParseErrorKind, TeiParseError};
pub use response::{Info, OptionInfo, OptionType, Outcome, Response, Score, SizeSupport, Wdl, parse_response};

/// The first word of a line (its keyword), if any.
pub fn keyword(line: &str) -> Option<&str> {
    line.split_whitespace().next()
}

/// A search value as TEI `score cp`, on the scale Tak match runners and engines (Tiltak)
/// use: 100 × the expected score for the side to move, so the score is in [-100, 100] and
/// `cp / 100` reads as the value itself.
pub fn value_to_cp(value: f32) -> i32 {
    if value.is_nan() {
        return 0;
    }
    (value.clamp(-1.0, 1.0) * 100.0).round() as i32
}

/// A proven result as `score cp` for runners that read only `cp` (racetrack): ±(10000 −
/// plies to the end of the line), far outside [-100, 100] so that it cannot be mistaken
/// for an evaluation; 0 for a draw.
pub fn proven_cp(outcome: Outcome, plies: usize) -> i32 {
    let mate = 10000 - plies.min(1000) as i32;
    match outcome {
        Outcome::Win => mate,
        Outcome::Loss => -mate,
        Outcome::Draw => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fuzz target's properties on lines made of protocol words (a cheap stand-in for
    /// `cargo fuzz run tei_command`): no panic, reasons on errors, and what parses formats
    /// to a line that parses back (to the same command, unless ignored `go` words regroup; to the same response always).
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
            "solved",
            "size",
            "halfkomi",
            "multipv",
            "wdl",
            "win",
            "loss",
            "draw",
            "hashfull",
            "error",
            "version",
            "check",
            "button",
            "string",
            "lowerbound",
            "6",
            "300",
            "-128",
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
                Err(e) => assert!(!e.to_string().is_empty() && e.keyword == keyword(&line).unwrap_or(""), "{line:?}"),
            }
            match parse_response(&line) {
                Ok(r) => {
                    let formatted = r.to_string();
                    assert_eq!(parse_response(&formatted), Ok(r.clone()), "{line:?} -> {formatted:?}");
                }
                Err(e) => assert!(!e.to_string().is_empty() && e.keyword == keyword(&line).unwrap_or(""), "{line:?}"),
            }
        }
    }

    #[test]
    fn cp_uses_the_runners_scale() {
        assert_eq!(value_to_cp(0.0), 0);
        assert_eq!(value_to_cp(0.5), 50);
        assert_eq!(value_to_cp(-0.999), -100);
        assert_eq!(value_to_cp(7.0), 100);
        assert_eq!(value_to_cp(f32::NAN), 0);
        assert_eq!(proven_cp(Outcome::Loss, 3), -9997);
        assert_eq!(proven_cp(Outcome::Win, 1), 9999);
        assert_eq!(proven_cp(Outcome::Draw, 40), 0);
        assert_eq!(proven_cp(Outcome::Win, 5000), 9000);
    }
}
