//! Behaviour of the search on positions whose right answer the rules can check.

use bredon_mcts::{Evaluation, Evaluator, Outcome, RolloutEvaluator, Search, SearchConfig, Solved, UniformEvaluator};
use bredon_rules::notation::parse_tps;
use bredon_rules::{GameResult, Move, Position, WinKind};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn quiet() -> SearchConfig {
    SearchConfig { root_noise: false, ..SearchConfig::default() }
}

fn rng() -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(42)
}

#[test]
fn finds_a_road_in_one() {
    // White: a2 b2 c2 on 4x4, d2 empty: d2 wins (and other moves may too).
    let pos = parse_tps("x4/2,2,2,x/1,1,1,x/x4 1 5").unwrap();
    let wins = pos.road_wins_in_one();
    assert!(!wins.is_empty());
    let mut s = Search::new(pos.clone(), quiet());
    let r = s.run(&UniformEvaluator, 200, &mut rng());
    let mv = r.best_move.unwrap();
    assert!(wins.contains(&mv), "chose {} not a win", mv.to_ptn(4));
    let mut after = pos.clone();
    after.play(mv).unwrap();
    assert_eq!(after.result(), Some(GameResult::Win { color: pos.side_to_move(), kind: WinKind::Road }));
    assert!(r.proven && r.value == 1.0);
}

#[test]
fn blocks_the_opponents_road_in_one() {
    // Black threatens c1 to complete a1-b1-c1-d1... black has a1 b1 d1; white to move.
    let pos = parse_tps("x4/x4/1,1,x2/2,2,x,2 1 5").unwrap();
    let mut threat = pos.clone();
    threat.pass_turn();
    assert!(!threat.road_wins_in_one().is_empty(), "the test position must hold a threat");
    assert!(pos.road_wins_in_one().is_empty());
    let mut s = Search::new(pos.clone(), quiet());
    let r = s.run(&UniformEvaluator, 800, &mut rng());
    let mv = r.best_move.unwrap();
    let mut after = pos.clone();
    after.play(mv).unwrap();
    assert!(after.road_wins_in_one().is_empty(), "{} leaves a road in one", mv.to_ptn(4));
}

#[test]
fn visit_counts_sum_to_root_visits_minus_one() {
    let pos = Position::new(5).unwrap();
    let mut s = Search::new(pos, SearchConfig::default());
    let r = s.run(&UniformEvaluator, 300, &mut rng());
    let sum: u32 = r.visits.iter().map(|v| v.1).sum();
    assert_eq!(r.root_visits, 300);
    assert_eq!(sum as u64, r.root_visits - 1);
    assert_eq!(r.visits.len(), 25);
}

/// An evaluator with a strong, fixed preference, to see priors through the search.
struct Skewed;
impl Evaluator for Skewed {
    fn evaluate_batch(&self, _p: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        legal
            .iter()
            .map(|m| {
                let mut policy: Vec<f32> = (0..m.len()).map(|i| 1.0 / (1.0 + i as f32)).collect();
                let t: f32 = policy.iter().sum();
                policy.iter_mut().for_each(|p| *p /= t);
                Evaluation::new(policy, 0.1)
            })
            .collect()
    }
}

#[test]
fn dirichlet_noise_changes_root_priors_only() {
    let pos = Position::new(4).unwrap();
    let legal = pos.legal_moves();
    let expected = Skewed.evaluate_batch(&[&pos], &[&legal]).remove(0).policy;
    let mut s = Search::new(pos.clone(), SearchConfig { root_noise: true, dirichlet_weight: 0.5, ..quiet() });
    let r = s.run(&Skewed, 400, &mut rng());
    let root = s.priors_at(&[]).unwrap();
    let changed = root.iter().zip(&expected).filter(|((_, p), e)| (p - *e).abs() > 1e-6).count();
    assert!(changed > legal.len() / 2, "noise changed only {changed} root priors");
    let total: f32 = root.iter().map(|p| p.1).sum();
    assert!((total - 1.0).abs() < 1e-4);
    // Every expanded node below the root keeps the evaluator's priors exactly.
    let mut checked = 0;
    for &(mv, v) in &r.visits {
        if v < 2 {
            continue;
        }
        let below = s.priors_at(&[mv]).unwrap();
        let mut child = pos.clone();
        child.play(mv).unwrap();
        let moves = child.legal_moves();
        let want = Skewed.evaluate_batch(&[&child], &[&moves]).remove(0).policy;
        for ((m, p), (m2, w)) in below.iter().zip(moves.iter().zip(&want)) {
            assert_eq!(m, m2);
            assert!((p - w).abs() < 1e-6);
        }
        checked += 1;
    }
    assert!(checked > 0);
}

#[test]
fn tree_reuse_keeps_the_subtree() {
    let pos = Position::new(4).unwrap();
    let mut s = Search::new(pos, quiet());
    let r = s.run(&UniformEvaluator, 500, &mut rng());
    let mv = r.best_move.unwrap();
    let kept = r.visits.iter().find(|v| v.0 == mv).unwrap().1;
    s.advance(mv);
    assert_eq!(s.root_visits(), kept);
    let r2 = s.run(&UniformEvaluator, kept as u64 + 100, &mut rng());
    assert_eq!(r2.playouts, 100);
    // A move that was never expanded starts a fresh tree.
    let mut t = Search::new(Position::new(4).unwrap(), quiet());
    t.advance(Move::place(bredon_rules::Square(0), bredon_rules::PieceKind::Flat));
    assert_eq!(t.root_visits(), 0);
}

#[test]
fn proven_win_beats_a_more_visited_move() {
    // White can win at d2; a flat-placement elsewhere may collect visits first under a
    // skewed prior, but the proof must decide.
    let pos = parse_tps("x4/2,2,2,x/1,1,1,x/x4 1 5").unwrap();
    let mut s = Search::new(pos.clone(), quiet());
    let r = s.run(&Skewed, 300, &mut rng());
    let mv = r.best_move.unwrap();
    assert!(pos.road_wins_in_one().contains(&mv));
    assert_eq!(r.select_move(1.0, &mut rng()), mv, "temperature never picks over a proven win");
}

#[test]
fn full_game_plays_to_completion() {
    for (size, ev) in [(3, None), (4, Some(RolloutEvaluator::default()))] {
        let mut pos = Position::new(size).unwrap();
        let mut s = Search::new(pos.clone(), SearchConfig::default());
        let mut r = rng();
        let mut plies = 0;
        while pos.result().is_none() && plies < 300 {
            let res = match &ev {
                Some(e) => s.run(e, 64, &mut r),
                None => s.run(&UniformEvaluator, 64, &mut r),
            };
            let mv = res.select_move(s.config().temperature(plies), &mut r);
            assert!(pos.is_legal(mv));
            pos.play(mv).unwrap();
            s.advance(mv);
            plies += 1;
        }
        assert!(pos.result().is_some(), "size {size}: game did not end in 300 plies");
    }
}

/// An evaluator that likes one move a lot (to lure the search) and says nothing else.
struct Lure(Move);

impl Evaluator for Lure {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        positions
            .iter()
            .zip(legal)
            .map(|(_, moves)| Evaluation {
                policy: moves.iter().map(|&m| if m == self.0 { 100.0 } else { 1.0 }).collect(),
                value: 0.0,
                draw: None,
                margin: None,
            })
            .collect()
    }
}

#[test]
fn an_immediate_win_is_played_with_a_single_visit() {
    let pos = parse_tps("x4/2,2,2,x/1,1,1,x/x4 1 5").unwrap();
    let mut s = Search::new(pos.clone(), quiet());
    let r = s.run(&UniformEvaluator, 1, &mut rng());
    assert!(r.proven && r.value == 1.0);
    assert!(pos.road_wins_in_one().contains(&r.best_move.unwrap()));
    // The training target holds only winning moves.
    assert!(r.visits.iter().all(|&(m, _)| pos.road_wins_in_one().contains(&m)));
}

#[test]
fn a_move_that_allows_a_road_in_one_is_never_played_even_when_the_policy_loves_it() {
    // Black threatens c1; white's a4 leaves it open. The lure puts 100x prior on a4.
    let pos = parse_tps("x4/x4/1,1,x2/2,2,x,2 1 5").unwrap();
    let lure = bredon_rules::notation::parse_move("a4", 4).unwrap();
    for visits in [2, 8, 64] {
        let mut s = Search::new(pos.clone(), quiet());
        let r = s.run(&Lure(lure), visits, &mut rng());
        let mv = r.best_move.unwrap();
        let mut after = pos.clone();
        after.play(mv).unwrap();
        assert!(after.road_wins_in_one().is_empty(), "{visits} visits: {} leaves a road in one", mv.to_ptn(4));
    }
    // Without the tactical checks the lure wins at few visits: the checks are what stop it.
    let mut s = Search::new(pos.clone(), SearchConfig { tactics: false, ..quiet() });
    assert_eq!(s.run(&Lure(lure), 2, &mut rng()).best_move, Some(lure));
}

#[test]
fn a_double_threat_is_found_at_the_root() {
    // White b1 b3 a2 c2 on 4x4: b2 threatens d2 and b4 at once.
    let pos = parse_tps("2,x2,2/x,1,x2/1,x,1,x/x,1,x2 1 4").unwrap();
    let mut s = Search::new(pos.clone(), quiet());
    let r = s.run(&UniformEvaluator, 16, &mut rng());
    assert!(r.proven);
    assert!(pos.forced_wins_in_three().contains(&r.best_move.unwrap()));
}

#[test]
fn a_position_lost_to_a_double_threat_is_proven_lost() {
    // After white's b2 (two threats), black cannot stop both.
    let mut pos = parse_tps("2,x2,2/x,1,x2/1,x,1,x/x,1,x2 1 4").unwrap();
    pos.play(bredon_rules::notation::parse_move("b2", 4).unwrap()).unwrap();
    let mut s = Search::new(pos.clone(), quiet());
    let r = s.run(&UniformEvaluator, 200, &mut rng());
    assert!(r.proven && r.value == -1.0, "{r:?}");
    assert!(r.best_move.is_some());
}

/// An evaluator that all but names one move: 95 % of the prior on the first legal move.
struct Sure;
impl Evaluator for Sure {
    fn evaluate_batch(&self, _p: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        legal
            .iter()
            .map(|m| {
                let rest = 0.05 / (m.len().max(2) - 1) as f32;
                let policy = (0..m.len()).map(|i| if i == 0 { 0.95 } else { rest }).collect();
                Evaluation::new(policy, 0.0)
            })
            .collect()
    }
}

#[test]
fn a_clock_search_stops_once_its_move_is_decided_and_plays_the_same_move() {
    use bredon_mcts::SearchLimits;
    use std::time::{Duration, Instant};
    let positions = [
        Position::new(5).unwrap(),
        parse_tps("x4/2,2,2,x/1,1,x2/x4 1 4").unwrap(),
        parse_tps("x5/x5/x2,1,x2/x,2,x3/x5 1 2").unwrap(),
    ];
    for pos in positions {
        for (name, evaluator) in [("sure", &Sure as &dyn Evaluator), ("skewed", &Skewed)] {
            // The full search: 1,500 visits, no early stop.
            let full = Search::new(pos.clone(), quiet()).run(evaluator, 1500, &mut rng());
            // The same search on a (far) clock deadline that may stop when decided. The
            // search is deterministic without root noise, so up to its stop it is the same.
            let limits = SearchLimits {
                visits: Some(1500),
                deadline: Some(Instant::now() + Duration::from_secs(600)),
                stop_when_decided: true,
                ..SearchLimits::default()
            };
            let mut s = Search::new(pos.clone(), quiet());
            let early = s.run_with(evaluator, &limits, &mut rng(), |_| {});
            assert_eq!(early.best_move, full.best_move, "{name}: the early stop changed the move");
            assert!(early.root_visits <= full.root_visits);
            if early.root_visits < 1500 {
                // It stopped only because the leader's lead exceeds the visits left.
                let mut v: Vec<u64> = early.visits.iter().map(|&(_, n)| n as u64).collect();
                v.sort_unstable_by(|a, b| b.cmp(a));
                assert!(v[0] > v[1] + (1500 - early.root_visits), "{name}: {v:?} at {}", early.root_visits);
            }
            if name == "sure" {
                // With 95 % of the prior on one move its lead is decided long before the end.
                assert!(early.root_visits < 1000, "{name}: stopped only at {} visits", early.root_visits);
            }
            // Off, the same limits search to the visit limit.
            let off = SearchLimits { stop_when_decided: false, ..limits.clone() };
            let r = Search::new(pos.clone(), quiet()).run_with(evaluator, &off, &mut rng(), |_| {});
            assert_eq!(r.root_visits, full.root_visits);
        }
    }
}

/// Value 0 and a draw probability of one half everywhere.
struct Drawish;

impl Evaluator for Drawish {
    fn evaluate_batch(&self, _positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        legal
            .iter()
            .map(|m| Evaluation { policy: vec![1.0; m.len()], value: 0.0, draw: Some(0.5), margin: None })
            .collect()
    }
}

#[test]
fn wdl_is_backed_up_from_the_evaluators_draw_probability() {
    let config = SearchConfig { root_noise: false, ..SearchConfig::default() };
    let mut search = Search::new(Position::new(5).unwrap(), config.clone());
    let r = search.run(&Drawish, 200, &mut ChaCha8Rng::seed_from_u64(1));
    let wdl = r.wdl.expect("the evaluator gives draws");
    assert!((wdl.draw - 0.5).abs() < 1e-3 && (wdl.win - 0.25).abs() < 1e-3, "{wdl:?}");
    assert_eq!(wdl.per_mille().iter().sum::<u32>(), 1000);
    // Every root move is listed, the move to play first, each line starting with its move.
    assert_eq!(r.root_moves.len(), r.visits.len());
    assert_eq!(Some(r.root_moves[0].mv), r.best_move);
    assert_eq!(r.root_moves[0].pv, r.pv);
    assert!(r.root_moves.iter().all(|m| m.pv.first() == Some(&m.mv)));
    assert!(r.root_moves.windows(2).skip(1).all(|w| w[0].visits >= w[1].visits));
    // Without draw probabilities there is no WDL to report.
    let mut plain = Search::new(Position::new(5).unwrap(), config);
    assert_eq!(plain.run(&UniformEvaluator, 50, &mut ChaCha8Rng::seed_from_u64(1)).wdl, None);
}

#[test]
fn a_proven_win_reports_its_length() {
    // White to move completes the bottom row with d1: solved in one ply, WDL certain.
    let pos = parse_tps("x4/x4/2,2,2,x/1,1,1,x 1 4").unwrap();
    let mut search = Search::new(pos, SearchConfig { root_noise: false, ..SearchConfig::default() });
    let r = search.run(&UniformEvaluator, 50, &mut ChaCha8Rng::seed_from_u64(1));
    assert_eq!(r.solved, Some(Solved { outcome: Outcome::Win, plies: 1 }));
    assert_eq!(r.wdl.map(|w| w.per_mille()), Some([1000, 0, 0]));
}
