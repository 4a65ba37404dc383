//! TEI lines (`bredon-tei`, which depends on std only), both directions and both dialects:
//! `parse_command` and `parse_response` never panic, every error names its line's keyword
//! and says what is wrong, a parsed command keeps its invariants (sizes 3 to 8, non-empty
//! option names, `go` values as given or clamped at 0), and what is parsed formats to a
//! line that parses back to the same thing.
#![no_main]

use bredon_tei::{NewGame, StartPosition, TeiCommand, keyword, parse_command, parse_response};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for line in text.split('\n') {
        match parse_command(line) {
            Ok(None) => assert!(line.split_whitespace().next().is_none(), "{line:?} ignored"),
            Ok(Some(cmd)) => {
                match &cmd {
                    TeiCommand::NewGame(NewGame::Plain(Some(n)) | NewGame::Sized { size: n, .. }) => {
                        assert!((3..=8).contains(n))
                    }
                    TeiCommand::SetOption { name, .. } => assert!(!name.is_empty()),
                    TeiCommand::Position { start: StartPosition::Tps(tps), moves } => {
                        assert!(!tps.is_empty());
                        assert!(moves.iter().all(|m| !m.is_empty() && !m.contains(char::is_whitespace)));
                    }
                    TeiCommand::Position { start: StartPosition::StartPos, moves } => {
                        assert!(moves.iter().all(|m| !m.is_empty()));
                    }
                    _ => {}
                }
                // Ignored `go` parameters may regroup with their neighbours when formatted.
                let regroups = matches!(&cmd, TeiCommand::Go(p) if !p.ignored.is_empty());
                if !regroups {
                    let again = parse_command(&cmd.to_string());
                    assert_eq!(again, Ok(Some(cmd.clone())), "{line:?} -> {cmd}");
                }
            }
            Err(e) => {
                assert!(!e.to_string().is_empty(), "{line:?}: empty error");
                assert_eq!(e.keyword, keyword(line).unwrap_or(""), "{line:?}: {e}");
            }
        }
        match parse_response(line) {
            Ok(r) => {
                let formatted = r.to_string();
                assert_eq!(parse_response(&formatted), Ok(r.clone()), "{line:?} -> {formatted:?}");
            }
            Err(e) => {
                assert!(!e.to_string().is_empty(), "{line:?}: empty error");
                assert_eq!(e.keyword, keyword(line).unwrap_or(""), "{line:?}: {e}");
            }
        }
    }
});
