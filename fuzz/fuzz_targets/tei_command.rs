//! TEI command lines (`crates/cli/src/tei_protocol.rs`, compiled in from the CLI's source;
//! it depends on nothing but std): `parse_command` never panics, every error has a reason,
//! and a parsed command keeps its invariants (sizes 3 to 8, non-empty option names, `go`
//! values as given or clamped at 0).
#![no_main]

#[path = "../../crates/cli/src/tei_protocol.rs"]
#[allow(dead_code)]
mod tei_protocol;

use libfuzzer_sys::fuzz_target;
use tei_protocol::{StartPosition, TeiCommand, parse_command};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for line in text.split('\n') {
        match parse_command(line) {
            Ok(None) => assert!(line.split_whitespace().next().is_none(), "{line:?} ignored"),
            Ok(Some(cmd)) => match cmd {
                TeiCommand::NewGame(Some(n)) => assert!((3..=8).contains(&n)),
                TeiCommand::SetOption { name, .. } => assert!(!name.is_empty()),
                TeiCommand::Position { start: StartPosition::Tps(tps), moves } => {
                    assert!(!tps.is_empty());
                    assert!(moves.iter().all(|m| !m.is_empty() && !m.contains(char::is_whitespace)));
                }
                TeiCommand::Position { start: StartPosition::StartPos, moves } => {
                    assert!(moves.iter().all(|m| !m.is_empty()));
                }
                _ => {}
            },
            Err(e) => assert!(!e.0.is_empty(), "{line:?}: empty error"),
        }
    }
});
