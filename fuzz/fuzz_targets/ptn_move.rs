//! PTN moves: parsing never panics for any text and size; a parsed move writes back to
//! text that parses to the same move.
#![no_main]

use bredon_rules::notation::{parse_move, write_move};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&size, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let size = size as usize % 10;
    if let Ok(mv) = parse_move(text, size) {
        assert_eq!(parse_move(&write_move(mv, size), size), Ok(mv), "{text:?}");
    }
});
