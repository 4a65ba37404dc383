//! `bredon bench selfplay`: self-play evaluations/s through the search and the batching
//! service, against the raw forward throughput of the same network at the batch size
//! self-play reached, with where the time went and the host's share of it.

use crate::error::BenchError;
use crate::nn::forward_rate;
use bredon_infer::{Engine, ServiceTimes};
use bredon_mcts::CacheStats;
use bredon_netform::positions::random_positions;
use bredon_selfplay::config::RunConfig;
use bredon_selfplay::net::Learner;
use bredon_selfplay::worker::{SelfPlayJob, run_pool};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What one self-play benchmark measured.
#[derive(Clone, Debug, PartialEq)]
pub struct SelfPlayReport {
    /// The board size.
    pub size: usize,
    /// Inference threads (shards of the batching service).
    pub shards: usize,
    /// Games finished and stored.
    pub games: usize,
    /// Plies of the finished games.
    pub plies: usize,
    /// Seconds the games took.
    pub secs: f64,
    /// Whether the time limit stopped the games (unfinished ones were dropped).
    pub stopped: bool,
    /// Network evaluations the service answered.
    pub evals: u64,
    /// Forward passes (at least 1).
    pub batches: u64,
    /// The evaluation cache's hits and lookups (zero without a cache).
    pub cache: CacheStats,
    /// Positions/s of the raw forward pass at the average batch.
    pub raw: f64,
    /// Where the service's time went.
    pub times: ServiceTimes,
    /// The host's share per evaluation (`None` where the platform has no per-thread CPU
    /// clock).
    pub host: Option<HostCeiling>,
}

impl SelfPlayReport {
    /// Positions per forward pass.
    pub fn avg_batch(&self) -> f64 {
        self.evals as f64 / self.batches as f64
    }

    /// Finished games per hour.
    pub fn games_per_hour(&self) -> f64 {
        self.games as f64 / self.secs * 3600.0
    }

    /// Self-play's evaluations per second.
    pub fn evals_per_s(&self) -> f64 {
        self.evals as f64 / self.secs
    }

    /// The share of the time the inference threads ran passes (encode, forward, readback).
    pub fn busy(&self) -> f64 {
        let t = &self.times;
        (t.encode + t.forward + t.readback).as_secs_f64() / (self.secs * self.shards as f64).max(1e-9)
    }
}

/// The host's share of self-play, per network evaluation, and the evaluations per second
/// it would allow if the network took no time at all: the most a device can be fed by
/// this host's search threads (which scale with cores) and by one inference thread (a
/// GPU path has one).
#[derive(Clone, Debug, PartialEq)]
pub struct HostCeiling {
    /// CPU time of the search threads per evaluation, in µs (tree, move generation,
    /// tactics, evaluation cache, priors).
    pub search_us: f64,
    /// Cores of this machine.
    pub cores: usize,
    /// Evaluations/s per core of search threads with a network that took no time.
    pub per_core: f64,
    /// The same on this machine's cores.
    pub on_cores: f64,
    /// The same on 16 cores.
    pub on_16: f64,
    /// The inference thread's own host work (burn's and the WGSL path; not the fast CPU
    /// path, whose pass is the work).
    pub inference: Option<InferenceHost>,
}

/// The inference thread's host work per evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct InferenceHost {
    /// µs per evaluation: gathering, encoding, on a GPU the upload and launch, replies.
    pub us: f64,
    /// Whether the upload and launch count (on a GPU device).
    pub launch: bool,
    /// The evaluations/s one such thread keeps up with at most.
    pub ceiling: f64,
}

/// [`HostCeiling`] of a self-play run: `search_cpu` the search threads' CPU time (`None`
/// where unknown), `t` the service's times, `evals` the evaluations, `device` the
/// network's.
pub fn host_ceiling(
    search_cpu: Option<Duration>,
    t: &ServiceTimes,
    evals: u64,
    device: &bredon_nn::Device,
) -> Option<HostCeiling> {
    let cpu = search_cpu?;
    let us = |d: Duration| d.as_secs_f64() * 1e6 / evals.max(1) as f64;
    let search = us(cpu);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let on_cpu = bredon_nn::device::is_cpu(device);
    let inference = (!on_cpu || t.encode > Duration::ZERO).then(|| {
        // burn's and the WGSL path: the inference thread's own host work (on a GPU, the
        // upload and launch are host work too; on burn's CPU backend `forward` is the pass).
        let launch = if on_cpu { Duration::ZERO } else { t.forward };
        let service = us(t.gather + t.encode + launch + t.reply);
        InferenceHost { us: service, launch: launch > Duration::ZERO, ceiling: 1e6 / service.max(1e-9) }
    });
    Some(HostCeiling {
        search_us: search,
        cores,
        per_core: 1e6 / search.max(1e-9),
        on_cores: cores as f64 * 1e6 / search.max(1e-9),
        on_16: 16e6 / search.max(1e-9),
        inference,
    })
}

/// Plays `games` games of `cfg` (its game, search and self-play settings; the games go to
/// a temporary directory) with `learner`'s network behind a batching service, stopping
/// after `max_seconds` if given; then measures the raw forward pass at the average batch
/// for about `seconds`.
pub fn run(
    cfg: &RunConfig,
    learner: &Learner,
    games: usize,
    max_seconds: Option<f64>,
    seconds: f64,
) -> Result<SelfPlayReport, BenchError> {
    let dir = tempfile::tempdir()?;
    let device = learner.model().device();
    let shards = cfg.selfplay.inference_shards(&device);
    let (evaluator, service) = learner.start_inference(cfg.selfplay.max_inference_batch, shards)?;
    let job = SelfPlayJob {
        options: cfg.game.options(),
        search: cfg.search.clone(),
        selfplay: cfg.selfplay.clone(),
        model: "bench".into(),
        seed: cfg.schedule.seed,
        stored_games: Arc::from(Vec::new()),
    };
    let stop = Arc::new(AtomicBool::new(false));
    if let Some(limit) = max_seconds {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(limit.max(0.0)));
            stop.store(true, Ordering::Relaxed);
        });
    }
    let start = Instant::now();
    let mut plies = 0usize;
    let report = run_pool(&job, evaluator, dir.path(), games, 0, &stop, |g| plies += g.plies)?;
    let secs = start.elapsed().as_secs_f64();
    let stopped = stop.load(Ordering::Relaxed);
    let evals = service.evaluations();
    let batches = service.batches().max(1);
    let times = service.times();
    service.shutdown();
    let avg_batch = evals as f64 / batches as f64;
    let size = cfg.game.size;
    let positions = random_positions(size, 1024, 7);
    let engine = Engine::new(learner.model(), size, cfg.selfplay.inference);
    let raw = forward_rate(&engine, &positions, avg_batch.round().max(1.0) as usize, seconds);
    Ok(SelfPlayReport {
        size,
        shards,
        games: report.stored,
        plies,
        secs,
        stopped,
        evals,
        batches,
        cache: report.cache,
        raw,
        times,
        host: host_ceiling(report.search_cpu, &times, evals, &device),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_thread_clock_means_no_ceiling() {
        let cpu = bredon_nn::device::cpu();
        assert_eq!(host_ceiling(None, &ServiceTimes::default(), 100, &cpu), None);
    }

    #[test]
    fn the_ceiling_divides_the_search_time_by_the_evaluations() {
        let cpu = bredon_nn::device::cpu();
        // 1 s of search CPU over 10,000 evaluations: 100 µs each, 10,000 evals/s a core.
        let h = host_ceiling(Some(Duration::from_secs(1)), &ServiceTimes::default(), 10_000, &cpu).unwrap();
        assert!((h.search_us - 100.0).abs() < 1e-9);
        assert!((h.per_core - 1e4).abs() < 1e-6);
        assert!((h.on_16 - 16e4).abs() < 1e-6);
        assert!((h.on_cores - h.cores as f64 * 1e4).abs() < 1e-6);
        // The fast CPU path encodes nothing apart: no inference-thread line.
        assert_eq!(h.inference, None);
        let t = ServiceTimes {
            encode: Duration::from_millis(500),
            reply: Duration::from_millis(500),
            ..Default::default()
        };
        let h = host_ceiling(Some(Duration::from_secs(1)), &t, 10_000, &cpu).unwrap();
        let i = h.inference.unwrap();
        assert!((i.us - 100.0).abs() < 1e-9);
        assert!(!i.launch);
    }
}
