//! The tactics suite (real games in shared/data/games and tactics/selfplay.tps): with
//! the tactical checks, the uniform search at 64 visits (PUCT and Gumbel) plays every road in one and
//! never plays into a road in one when a blocking move exists.

use bredon_mcts::{Algorithm, Search, SearchConfig, UniformEvaluator};
use bredon_rules::tactics::{Tactic, TacticPosition, classify, read_positions};
use bredon_rules::testdata::shared_data_dir;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;

fn suite() -> Vec<TacticPosition> {
    let games = shared_data_dir().expect("shared/data not found; set BREDON_SHARED_DATA").join("games");
    let selfplay = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tactics/selfplay.tps");
    let mut positions = read_positions(&games).unwrap();
    positions.extend(read_positions(&selfplay).unwrap());
    positions.iter().filter_map(classify).collect()
}

fn best_move(tp: &TacticPosition, tactics: bool) -> bredon_rules::Move {
    best_move_with(tp, tactics, Algorithm::Puct)
}

fn best_move_with(tp: &TacticPosition, tactics: bool, algorithm: Algorithm) -> bredon_rules::Move {
    let config = SearchConfig { root_noise: false, tactics, algorithm, ..SearchConfig::default() };
    let mut search = Search::new(tp.position.clone(), config);
    search.run(&UniformEvaluator, 64, &mut ChaCha8Rng::seed_from_u64(1)).best_move.expect("a move")
}

#[test]
fn uniform_search_solves_every_road_in_one_and_every_must_block() {
    let suite = suite();
    let count = |t| suite.iter().filter(|tp| tp.tactic == t).count();
    assert!(count(Tactic::RoadInOne) >= 100, "{} road-in-one positions", count(Tactic::RoadInOne));
    assert!(count(Tactic::MustBlock) >= 100, "{} must-block positions", count(Tactic::MustBlock));
    let mut failures = Vec::new();
    for (tp, algorithm) in suite
        .iter()
        .filter(|tp| tp.tactic != Tactic::WinInThree)
        .flat_map(|tp| [(tp, Algorithm::Puct), (tp, Algorithm::Gumbel)])
    {
        let mv = best_move_with(tp, true, algorithm);
        if !tp.solutions.contains(&mv) {
            failures.push(format!(
                "{algorithm:?} {:?} {:?}: played {}",
                tp.tactic,
                tp.position,
                mv.to_ptn(tp.position.size())
            ));
        }
        // Must block: the move played leaves the opponent no immediate win.
        if tp.tactic == Tactic::MustBlock {
            let mut after = tp.position.clone();
            after.play(mv).unwrap();
            assert!(after.find_immediate_win().is_none(), "{:?} allows a win after {}", tp.position, mv.to_ptn(4));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn without_the_checks_the_uniform_search_misses_some() {
    // The suite is not trivial: the plain search fails part of it.
    let suite = suite();
    let missed = suite
        .iter()
        .filter(|tp| tp.tactic == Tactic::MustBlock)
        .filter(|tp| !tp.solutions.contains(&best_move(tp, false)))
        .count();
    assert!(missed > 0);
}
