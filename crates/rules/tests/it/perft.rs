//! Perft against the reference counts in `shared/data/perft.txt`.

use bredon_rules::Position;
use bredon_rules::notation::parse_tps;
use bredon_rules::perft::{perft, perft_slow};
use bredon_rules::testdata::{PerftCase, parse_perft_file, shared_data_dir};

/// Depths with more nodes than this are left to the ignored test and the benches.
const FAST_BUDGET: u64 = 20_000_000;

fn cases() -> Vec<PerftCase> {
    let dir = shared_data_dir().expect("shared/data not found; set BREDON_SHARED_DATA");
    let text = std::fs::read_to_string(dir.join("perft.txt")).expect("read perft.txt");
    let cases = parse_perft_file(&text).expect("parse perft.txt");
    assert!(cases.len() >= 9, "perft.txt has {} cases", cases.len());
    cases
}

fn position(case: &PerftCase) -> Position {
    match &case.tps {
        Some(t) => {
            let p = parse_tps(t).expect("reference TPS parses");
            assert_eq!(p.size(), case.size);
            p
        }
        None => Position::new(case.size).unwrap(),
    }
}

fn check(budget: u64, min_budget: u64) {
    let mut checked = 0;
    for case in cases() {
        let mut pos = position(&case);
        let before = pos.clone();
        for &(depth, nodes) in &case.counts {
            if nodes > budget || nodes <= min_budget {
                continue;
            }
            assert_eq!(perft(&mut pos, depth), nodes, "size {} tps {:?} depth {depth}", case.size, case.tps);
            assert_eq!(pos, before, "perft left the position changed");
            checked += 1;
        }
    }
    assert!(checked > 0);
}

#[test]
fn reference_counts_fast() {
    check(FAST_BUDGET, 0);
}

#[test]
#[ignore = "minutes in release; run with --ignored"]
fn reference_counts_deep() {
    check(u64::MAX, FAST_BUDGET);
}

#[test]
fn bulk_counting_matches_full_generation() {
    for case in cases() {
        let mut pos = position(&case);
        for &(depth, nodes) in case.counts.iter().filter(|(_, n)| *n < 300_000) {
            assert_eq!(perft_slow(&mut pos, depth), nodes, "size {} depth {depth}", case.size);
        }
    }
}
