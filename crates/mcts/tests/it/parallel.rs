//! Tree parallelism: one tree searched by several threads keeps the visit budget exactly,
//! reuses its subtree, respects proofs, obeys stops, and runs evaluations side by side.

use bredon_mcts::{
    Budget, Evaluation, Evaluator, PlaySearch, Progress, RolloutEvaluator, SearchConfig, UniformEvaluator,
};
use bredon_rules::notation::{parse_move, parse_tps};
use bredon_rules::{Move, Position};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn config() -> SearchConfig {
    SearchConfig { root_noise: false, ..SearchConfig::default() }
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

#[test]
fn a_visit_budget_is_kept_by_the_threads_and_reused_after_advance() {
    let mut search = PlaySearch::new(Position::new(5).unwrap(), config(), 3);
    let evaluator = RolloutEvaluator { rollouts: 1, max_plies: 100, seed: 1 };
    let r = search.search(&evaluator, Budget::Visits(301), None, &mut rng(1), None);
    assert_eq!(search.root_visits(), 301, "the root stops at the budget");
    assert_eq!(r.root_visits, 301);
    let summed: u32 = r.visits.iter().map(|&(_, v)| v).sum();
    assert_eq!(summed as u64, 301 - 1, "the root's first visit is its expansion");
    let best = r.best_move.unwrap();
    assert_eq!(r.pv.first(), Some(&best));
    let most = r.visits.iter().max_by_key(|&&(_, v)| v).unwrap();
    assert_eq!(r.visits.iter().find(|&&(m, _)| m == best).unwrap().1, most.1, "plays the most visited move");
    // Advancing keeps every tree's subtree: a further budget counts the reused visits.
    search.advance(best);
    let kept = search.root_visits();
    assert!(kept > 0, "the subtrees of the move played are kept");
    let r = search.search(&evaluator, Budget::Visits(90), None, &mut rng(2), None);
    assert_eq!(search.root_visits(), kept + 90);
    assert_eq!(r.playouts, 90);
}

#[test]
fn a_road_in_one_is_played_and_reported_as_proven() {
    // White to move completes the bottom row with d1.
    let pos = parse_tps("x4/x4/2,2,2,x/1,1,1,x 1 4").unwrap();
    let mut search = PlaySearch::new(pos.clone(), config(), 2);
    let r = search.search(&UniformEvaluator, Budget::Visits(200), None, &mut rng(3), None);
    assert!(r.proven && r.value == 1.0, "{r:?}");
    assert_eq!(r.best_move, Some(parse_move("d1", 4).unwrap()));
}

#[test]
fn the_callers_stop_flag_and_deadline_end_every_thread() {
    let stop = Arc::new(AtomicBool::new(false));
    let mut search = PlaySearch::new(Position::new(6).unwrap(), config(), 2);
    let flag = stop.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        flag.store(true, Ordering::Relaxed);
    });
    let t = Instant::now();
    let r = search.search(&UniformEvaluator, Budget::Infinite, Some(stop), &mut rng(4), None);
    stopper.join().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
    assert!(r.best_move.is_some() && r.playouts > 0);
    let t = Instant::now();
    let mut progress = 0;
    let mut report = |_: &bredon_mcts::SearchResult| progress += 1;
    let r = search.search(
        &UniformEvaluator,
        Budget::Time(Duration::from_millis(150)),
        None,
        &mut rng(5),
        Some(Progress { every: Duration::from_millis(20), report: &mut report }),
    );
    assert!(t.elapsed() >= Duration::from_millis(140) && t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(r.best_move.is_some());
    assert!(progress > 0, "the calling thread reports progress");
}

/// Counts how many evaluations run at once; each takes a few milliseconds.
struct Overlap {
    now: AtomicUsize,
    most: AtomicUsize,
    calls: AtomicUsize,
}

impl Evaluator for Overlap {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(3));
        self.now.fetch_sub(1, Ordering::SeqCst);
        UniformEvaluator.evaluate_batch(positions, legal)
    }
}

#[test]
fn threads_evaluate_side_by_side_in_one_tree() {
    for threads in [1, 2, 4] {
        let evaluator = Overlap { now: AtomicUsize::new(0), most: AtomicUsize::new(0), calls: AtomicUsize::new(0) };
        let mut search = PlaySearch::new(Position::new(6).unwrap(), config(), threads);
        let r = search.search(&evaluator, Budget::Visits(400), None, &mut rng(6), None);
        assert_eq!(r.root_visits, 400);
        let most = evaluator.most.load(Ordering::SeqCst);
        assert_eq!(most, threads, "{threads} threads: at most {most} evaluations at once");
        // One tree: every visit below the root is counted once, in the root's children.
        let summed: u32 = r.visits.iter().map(|&(_, v)| v).sum();
        assert_eq!(summed, 399);
        assert_eq!(r.root_moves.len(), r.visits.len());
        assert_eq!(r.root_moves[0].mv, r.best_move.unwrap());
        assert!(r.seldepth >= 2, "seldepth {}", r.seldepth);
    }
}

#[test]
fn a_play_search_reuses_its_tree_when_the_game_continues_and_always_has_a_move() {
    use bredon_mcts::{play_config, search_once};
    let start = Position::new(5).unwrap();
    let mut play = PlaySearch::new(start.clone(), play_config(), 2);
    let r = play.search(&UniformEvaluator, Budget::Visits(200), None, &mut rng(7), None);
    assert_eq!(r.root_visits, 200);
    let best = r.best_move.unwrap();
    // The game continues with the move searched most: its subtree is kept, and a budget
    // of visits counts new ones.
    play.set_game(&start, &[best]);
    let kept = play.root_visits();
    assert!(kept > 0);
    let r = play.search(&UniformEvaluator, Budget::Visits(50), None, &mut rng(8), None);
    assert_eq!((r.root_visits, r.playouts), (kept + 50, 50));
    // Another game: a fresh tree.
    let other = parse_move("e5", 5).unwrap();
    play.set_game(&start, &[other]);
    assert_eq!(play.root_visits(), 0);
    // No time at all, or a stop already set: still a move.
    let pos = Position::new(6).unwrap();
    for budget in [Budget::Time(Duration::ZERO), Budget::Visits(0), Budget::Clock(Duration::ZERO)] {
        let r = search_once(&pos, &UniformEvaluator, &play_config(), budget, &mut rng(9));
        assert!(r.best_move.is_some(), "{budget:?}");
    }
    let stop = Arc::new(AtomicBool::new(true));
    let r = PlaySearch::new(pos, play_config(), 2).search(
        &UniformEvaluator,
        Budget::Infinite,
        Some(stop),
        &mut rng(10),
        None,
    );
    assert!(r.best_move.is_some());
}
