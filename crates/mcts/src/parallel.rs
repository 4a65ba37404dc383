//! Root parallelism: several independent trees of the same position searched side by side
//! on their own threads (each with its own random numbers), their results merged. It
//! uses more cores for one move without any locking in the tree; the trees share only the
//! evaluator. For matches and `bredon tei` (`[search] threads`); self-play already runs
//! many games at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bredon_rules::{Move, Position};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{Evaluator, Search, SearchConfig, SearchLimits, SearchResult};

/// `threads` trees of one position, searched side by side and merged.
pub struct ParallelSearch {
    trees: Vec<Search>,
}

impl ParallelSearch {
    /// `threads` (at least 1) fresh trees rooted at `position`.
    pub fn new(position: Position, config: SearchConfig, threads: usize) -> ParallelSearch {
        let trees = (0..threads.max(1)).map(|_| Search::new(position.clone(), config.clone())).collect();
        ParallelSearch { trees }
    }

    /// The root position.
    pub fn position(&self) -> &Position {
        self.trees[0].position()
    }

    /// Number of trees.
    pub fn threads(&self) -> usize {
        self.trees.len()
    }

    /// Visits of the roots so far, summed over the trees.
    pub fn root_visits(&self) -> u64 {
        self.trees.iter().map(|t| t.root_visits() as u64).sum()
    }

    /// Plays `mv` at the root of every tree, keeping the subtrees.
    pub fn advance(&mut self, mv: Move) {
        for t in &mut self.trees {
            t.advance(mv);
        }
    }

    /// Searches every tree until a limit: `limits.visits` counts the summed root visits
    /// (each tree gets its share of the new ones), the deadline and the stop flag hold for
    /// all, and a tree that proves the root's result stops the others. `on_progress` sees
    /// the first tree's progress. With one tree this is [`Search::run_with`].
    pub fn run_with<E: Evaluator + ?Sized>(
        &mut self,
        evaluator: &E,
        limits: &SearchLimits,
        rng: &mut impl Rng,
        on_progress: impl FnMut(&SearchResult) + Send,
    ) -> SearchResult {
        if self.trees.len() == 1 {
            return self.trees[0].run_with(evaluator, limits, rng, on_progress);
        }
        let n = self.trees.len() as u64;
        let before = self.root_visits();
        let shares: Vec<Option<u64>> = self
            .trees
            .iter()
            .enumerate()
            .map(|(i, t)| {
                limits.visits.map(|v| {
                    let new = v.saturating_sub(before);
                    t.root_visits() as u64 + new / n + u64::from((i as u64) < new % n)
                })
            })
            .collect();
        let seeds: Vec<u64> = (0..n).map(|_| rng.random()).collect();
        // One flag for all trees: set by the caller's stop flag or by a proof.
        let halt = Arc::new(AtomicBool::new(false));
        let outer = limits.stop.clone();
        let mut on_progress = Some(on_progress);
        let results: Vec<SearchResult> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .trees
                .iter_mut()
                .zip(shares)
                .zip(seeds)
                .enumerate()
                .map(|(i, ((tree, visits), seed))| {
                    let limits = SearchLimits { visits, stop: Some(halt.clone()), ..limits.clone() };
                    let halt = halt.clone();
                    let mut progress = if i == 0 { on_progress.take() } else { None };
                    scope.spawn(move || {
                        let mut rng = ChaCha8Rng::seed_from_u64(seed);
                        let r = tree.run_with(evaluator, &limits, &mut rng, |r| {
                            if let Some(p) = progress.as_mut() {
                                p(r)
                            }
                        });
                        if r.proven {
                            halt.store(true, Ordering::Relaxed);
                        }
                        r
                    })
                })
                .collect();
            // Pass the caller's stop on until every tree is done.
            while !handles.iter().all(|h| h.is_finished()) {
                if outer.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
                    halt.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            handles.into_iter().map(|h| h.join().expect("a search thread panicked")).collect()
        });
        let lost: Vec<Vec<Move>> = self.trees.iter().map(Search::root_lost_moves).collect();
        merge(&results, &lost)
    }
}

/// One result from several trees' results (`lost[i]`: the root moves tree `i` proved
/// lost). A proven result wins outright (a proven win first); otherwise visits are summed
/// per move and the most visited move that no tree proved lost is played, the value is
/// the visit-weighted mean and the principal variation comes from the tree that visited
/// that move most.
pub fn merge(results: &[SearchResult], lost: &[Vec<Move>]) -> SearchResult {
    let playouts: u64 = results.iter().map(|r| r.playouts).sum();
    let root_visits: u64 = results.iter().map(|r| r.root_visits).sum();
    let proven = |want: fn(f32) -> bool| results.iter().find(|r| r.proven && want(r.value) && r.best_move.is_some());
    if let Some(r) = proven(|v| v > 0.0).or_else(|| proven(|v| v == 0.0)) {
        return SearchResult { playouts, root_visits, ..r.clone() };
    }
    if results.iter().all(|r| r.proven) {
        // Every tree proved the loss: any of their moves is as good.
        return SearchResult { playouts, root_visits, ..results[0].clone() };
    }
    let mut visits: Vec<(Move, u32)> = Vec::new();
    let mut index: HashMap<Move, usize> = HashMap::new();
    for r in results {
        for &(mv, v) in &r.visits {
            let i = *index.entry(mv).or_insert_with(|| {
                visits.push((mv, 0));
                visits.len() - 1
            });
            visits[i].1 += v;
        }
    }
    let is_lost = |mv: Move| lost.iter().any(|l| l.contains(&mv));
    let best_move = visits
        .iter()
        .filter(|&&(mv, _)| !is_lost(mv))
        .max_by_key(|&&(_, v)| v)
        .map(|&(mv, _)| mv)
        .or_else(|| results.iter().find_map(|r| r.best_move));
    let weight: f64 = results.iter().map(|r| r.root_visits.max(1) as f64).sum();
    let value = results.iter().map(|r| r.value as f64 * r.root_visits.max(1) as f64).sum::<f64>() / weight;
    let visits_of = |r: &SearchResult, mv: Move| r.visits.iter().find(|&&(m, _)| m == mv).map_or(0, |&(_, v)| v);
    let pv = best_move
        .and_then(|mv| {
            results.iter().filter(|r| r.pv.first() == Some(&mv)).max_by_key(|r| visits_of(r, mv)).map(|r| r.pv.clone())
        })
        .or_else(|| best_move.map(|mv| vec![mv]))
        .unwrap_or_default();
    SearchResult {
        visits,
        value: value.clamp(-1.0, 1.0) as f32,
        best_move,
        pv,
        playouts,
        root_visits,
        proven: false,
        improved_policy: None,
    }
}
