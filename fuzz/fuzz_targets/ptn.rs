//! PTN games: parsing and replaying never panic; a parsed game writes back to PTN that
//! reads to the same moves.
#![no_main]

use bredon_rules::notation::Ptn;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(ptn) = Ptn::parse(text) else { return };
    let replay = ptn.replay();
    let written = ptn.to_string();
    let again = Ptn::parse(&written).expect("written PTN parses");
    assert_eq!(again.moves.len(), ptn.moves.len());
    for (a, b) in again.moves.iter().zip(&ptn.moves) {
        assert_eq!(a.mv, b.mv);
    }
    if let Ok(replay) = replay {
        let r2 = again.replay().expect("written game replays");
        assert_eq!(r2.final_position(), replay.final_position());
    }
});
