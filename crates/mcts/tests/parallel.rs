//! Root parallelism: budgets split over the trees, proofs respected, stops obeyed, and the
//! merge rule.

use bredon_mcts::parallel::merge;
use bredon_mcts::{ParallelSearch, RolloutEvaluator, SearchConfig, SearchLimits, SearchResult, UniformEvaluator};
use bredon_rules::notation::{parse_move, parse_tps};
use bredon_rules::{Move, Position};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn config() -> SearchConfig {
    SearchConfig { root_noise: false, ..SearchConfig::default() }
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

#[test]
fn a_visit_budget_is_shared_by_the_trees_and_reused_after_advance() {
    let mut search = ParallelSearch::new(Position::new(5).unwrap(), config(), 3);
    let evaluator = RolloutEvaluator { rollouts: 1, max_plies: 100, seed: 1 };
    let limits = SearchLimits { visits: Some(301), ..Default::default() };
    let r = search.run_with(&evaluator, &limits, &mut rng(1), |_| {});
    assert_eq!(search.root_visits(), 301, "the summed roots stop at the budget");
    assert_eq!(r.root_visits, 301);
    let summed: u32 = r.visits.iter().map(|&(_, v)| v).sum();
    assert_eq!(summed as u64, 301 - 3, "each root's first visit is its expansion");
    let best = r.best_move.unwrap();
    assert_eq!(r.pv.first(), Some(&best));
    let most = r.visits.iter().max_by_key(|&&(_, v)| v).unwrap();
    assert_eq!(r.visits.iter().find(|&&(m, _)| m == best).unwrap().1, most.1, "plays the most visited move");
    // Advancing keeps every tree's subtree: a further budget counts the reused visits.
    search.advance(best);
    let kept = search.root_visits();
    assert!(kept > 0, "the subtrees of the move played are kept");
    let limits = SearchLimits { visits: Some(kept + 90), ..Default::default() };
    let r = search.run_with(&evaluator, &limits, &mut rng(2), |_| {});
    assert_eq!(search.root_visits(), kept + 90);
    assert_eq!(r.playouts, 90);
}

#[test]
fn a_road_in_one_is_played_and_reported_as_proven() {
    // White to move completes the bottom row with d1.
    let pos = parse_tps("x4/x4/2,2,2,x/1,1,1,x 1 4").unwrap();
    let mut search = ParallelSearch::new(pos.clone(), config(), 2);
    let r = search.run_with(
        &UniformEvaluator,
        &SearchLimits { visits: Some(200), ..Default::default() },
        &mut rng(3),
        |_| {},
    );
    assert!(r.proven && r.value == 1.0, "{r:?}");
    assert_eq!(r.best_move, Some(parse_move("d1", 4).unwrap()));
}

#[test]
fn the_callers_stop_flag_and_deadline_end_every_tree() {
    let stop = Arc::new(AtomicBool::new(false));
    let mut search = ParallelSearch::new(Position::new(6).unwrap(), config(), 2);
    let flag = stop.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        flag.store(true, Ordering::Relaxed);
    });
    let t = Instant::now();
    let limits = SearchLimits { stop: Some(stop), ..Default::default() };
    let r = search.run_with(&UniformEvaluator, &limits, &mut rng(4), |_| {});
    stopper.join().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
    assert!(r.best_move.is_some() && r.playouts > 0);
    let t = Instant::now();
    let limits = SearchLimits { deadline: Some(Instant::now() + Duration::from_millis(150)), ..Default::default() };
    let mut progress = 0;
    let r = search.run_with(
        &UniformEvaluator,
        &SearchLimits { progress_every: Some(Duration::from_millis(20)), ..limits },
        &mut rng(5),
        |_| progress += 1,
    );
    assert!(t.elapsed() >= Duration::from_millis(140) && t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(r.best_move.is_some());
    assert!(progress > 0, "the first tree reports progress");
}

fn result(visits: &[(Move, u32)], value: f32, proven: bool) -> SearchResult {
    let best = visits.iter().max_by_key(|&&(_, v)| v).map(|&(m, _)| m);
    SearchResult {
        visits: visits.to_vec(),
        value,
        best_move: best,
        pv: best.into_iter().collect(),
        playouts: visits.iter().map(|&(_, v)| v as u64).sum(),
        root_visits: visits.iter().map(|&(_, v)| v as u64).sum::<u64>() + 1,
        proven,
        improved_policy: None,
    }
}

#[test]
fn merging_sums_visits_avoids_proven_losses_and_prefers_proofs() {
    let m = |s: &str| parse_move(s, 5).unwrap();
    let (a, b, c) = (m("a1"), m("b2"), m("c3"));
    // Summed visits: b2 (40 + 35) beats a1 (60 + 0) and c3.
    let r1 = result(&[(a, 60), (b, 40), (c, 0)], 0.2, false);
    let r2 = result(&[(a, 0), (b, 35), (c, 30)], -0.1, false);
    let merged = merge(&[r1.clone(), r2.clone()], &[vec![], vec![]]);
    assert_eq!(merged.best_move, Some(b));
    assert_eq!(merged.visits, vec![(a, 60), (b, 75), (c, 30)]);
    assert_eq!((merged.playouts, merged.root_visits), (165, 167));
    assert!((merged.value - (0.2 * 101.0 - 0.1 * 66.0) / 167.0).abs() < 1e-6);
    assert_eq!(merged.pv, vec![b]);
    // A move one tree proved lost is never played, however many visits it has.
    let merged = merge(&[r1.clone(), r2.clone()], &[vec![], vec![b]]);
    assert_eq!(merged.best_move, Some(a));
    // A proven win in any tree is played outright.
    let won = SearchResult { best_move: Some(c), proven: true, value: 1.0, ..result(&[(c, 1)], 1.0, true) };
    let merged = merge(&[r1, won, r2], &[vec![], vec![], vec![]]);
    assert_eq!((merged.best_move, merged.proven, merged.value), (Some(c), true, 1.0));
}
