//! `bredon bench search`: play-time search speed (nodes/s) of one network with 1, 2, …
//! threads sharing one tree, side by side on the same positions, with and without an
//! evaluation cache.

use bredon_infer::{Compute, NetEvaluator};
use bredon_mcts::{Budget, CacheStats, CachedEvaluator, Evaluator, PlaySearch, play_config};
use bredon_nn::TakNet;
use bredon_rules::Position;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

/// One evaluator per thread count of `threads` for `model` of board `size`: as many
/// copies of the network as the count has threads, each pass on one core, as `bredon tei
/// --threads N` does (N threads use N cores). With `spread`, one thread's single copy
/// uses every core instead (`bredon play`, `analyse`).
pub fn evaluators(
    compute: &Compute,
    model: &TakNet,
    size: usize,
    threads: &[usize],
    spread: bool,
) -> Vec<NetEvaluator> {
    threads
        .iter()
        .map(|&t| match (spread, t) {
            (true, 0 | 1) => compute.evaluator(model.clone(), size, 1),
            _ => compute.evaluator_on_cores(model.clone(), size, t.max(1)),
        })
        .collect()
}

/// One thread count with one evaluation cache, summed over the positions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchRun {
    /// The evaluation cache in MB (0: none).
    pub cache_mb: usize,
    /// Threads sharing the tree.
    pub threads: usize,
    /// Playouts over every position.
    pub playouts: u64,
    /// The searches' time.
    pub time: Duration,
    /// The evaluation cache's hits and lookups.
    pub cache: CacheStats,
}

impl SearchRun {
    /// Playouts per second.
    pub fn nodes_per_s(&self) -> f64 {
        self.playouts as f64 / self.time.as_secs_f64().max(1e-9)
    }
}

/// Searches every position of `positions` for `millis` ms with each thread count of
/// `threads` (its evaluator the same index of `evaluators`, from [`evaluators`]) and each
/// evaluation cache of `cache_mb` (each search starts with an empty one). Returns one
/// run per cache and thread count, the caches' in the outer order.
pub fn run(
    evaluators: &[NetEvaluator],
    positions: &[Position],
    threads: &[usize],
    cache_mb: &[usize],
    millis: u64,
) -> Vec<SearchRun> {
    let mut runs: Vec<SearchRun> = cache_mb
        .iter()
        .flat_map(|&mb| {
            threads.iter().map(move |&t| SearchRun {
                cache_mb: mb,
                threads: t,
                playouts: 0,
                time: Duration::ZERO,
                cache: CacheStats::default(),
            })
        })
        .collect();
    for (i, pos) in positions.iter().enumerate() {
        for (r, run) in runs.iter_mut().enumerate() {
            let k = r % threads.len();
            let cached = CachedEvaluator::new(&evaluators[k], run.cache_mb << 20);
            let evaluator: &dyn Evaluator = if run.cache_mb == 0 { &evaluators[k] } else { &cached };
            let mut search = PlaySearch::new(pos.clone(), play_config(), run.threads);
            let mut rng = ChaCha8Rng::seed_from_u64(i as u64);
            let began = Instant::now();
            let res = search.search(evaluator, Budget::Time(Duration::from_millis(millis)), None, &mut rng, None);
            run.playouts += res.playouts;
            run.time += began.elapsed();
            let st = cached.stats();
            run.cache.hits += st.hits;
            run.cache.lookups += st.lookups;
        }
    }
    runs
}
