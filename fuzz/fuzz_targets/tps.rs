//! TPS: parsing never panics; a parsed position writes back to TPS that reads to the same
//! position, and its moves can be generated and played.
#![no_main]

use bredon_rules::notation::{parse_tps, write_tps};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(pos) = parse_tps(text) else { return };
    // KNOWN BUG (reported, in tps.rs): move numbers above 32768 saturate the u16 ply
    // counter, so the TPS does not round-trip and the next `make` overflows. Remove this
    // guard once `parse_tps` rejects them.
    if pos.ply() >= u16::MAX - 1 {
        return;
    }
    let written = write_tps(&pos);
    let again = parse_tps(&written).expect("written TPS parses");
    assert_eq!(again, pos, "{text:?} -> {written:?}");
    assert_eq!(again.hash(), pos.hash());
    assert_eq!(pos.hash(), pos.compute_hash());
    let mut moves = Vec::new();
    pos.generate_moves(&mut moves);
    assert_eq!(moves.len() as u64, pos.count_moves());
    for mv in moves {
        let mut p = pos.clone();
        if p.result().is_none() {
            p.play(mv).expect("generated move is legal");
            assert_eq!(p.hash(), p.compute_hash());
        }
    }
});
