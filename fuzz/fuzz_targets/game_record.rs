//! The `.game` record reader: `GameRecord::from_bytes_verified` (magic, version, checksum
//! — skipped in fuzz builds, `cfg(fuzzing)` — postcard, field checks) and the replay into
//! training samples never panic; an accepted record writes back to the same record and
//! to PTN, and its samples are what training can index: every policy move legal in its
//! position and inside the policy of the board size, every policy a distribution.
#![no_main]

use bredon_netform::policy::{move_to_index, policy_size};
use bredon_selfplay::replay::GameRecord;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok((record, _)) = GameRecord::from_bytes_verified(data) else { return };
    let n = record.size as usize;
    assert!((3..=8).contains(&n));
    let again = GameRecord::from_bytes(&record.to_bytes().expect("encodes")).expect("reads back");
    assert_eq!(again, record);
    let _ = record.to_ptn();
    let Ok(samples) = record.samples() else { return };
    assert_eq!(samples.len(), record.sample_count());
    for s in &samples {
        let total: f32 = s.policy.iter().map(|p| p.1).sum();
        assert!((total - 1.0).abs() < 1e-2, "policy sums to {total}");
        for &(mv, p) in s.policy.iter() {
            assert!(p.is_finite() && p >= 0.0);
            assert!(s.position.is_legal(mv), "{mv:?}");
            assert!(move_to_index(mv, n) < policy_size(n));
        }
        assert!(s.value.is_finite() && s.search_value.is_finite() && s.flat_margin.is_finite());
        assert_eq!(s.final_ownership.len(), n * n);
    }
});
