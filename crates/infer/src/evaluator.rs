//! [`NetEvaluator`]: the direct, mutex-guarded evaluator for single searches (play, tei,
//! analyse, arena players), with one network copy per search thread that may run a pass.

use bredon_mcts::{Evaluation, Evaluator};
use bredon_nn::TakNet;
use bredon_rules::{Move, Position};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::engine::Engine;
use crate::kind::InferenceKind;

/// One copy of the network in a [`NetEvaluator`], with the pool its forward passes run
/// in when there are several (a pool of one thread: each pass on one core).
struct Lane {
    engine: Mutex<Engine>,
    pool: Option<rayon::ThreadPool>,
}

impl Lane {
    fn new(model: TakNet, size: usize, kind: InferenceKind, alone: bool) -> Lane {
        if !alone {
            return Lane { engine: Mutex::new(Engine::new(model, size, kind)), pool: None };
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "bredon-eval".to_string())
            .build()
            .expect("a one-thread pool for an evaluator lane");
        // Built in its pool: the fast path sizes its scratch space by the pool.
        let engine = pool.install(|| Engine::new(model, size, kind));
        Lane { engine: Mutex::new(engine), pool: Some(pool) }
    }

    fn evaluate(&self, engine: &Engine, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        match &self.pool {
            Some(pool) => pool.install(|| engine.evaluate(positions, legal)),
            None => engine.evaluate(positions, legal),
        }
    }
}

/// Evaluates directly on the calling thread, for play-time searches (play, tei, analyse,
/// matches). With one lane a forward pass may use every thread of rayon's pool; with
/// several ([`NetEvaluator::with_lanes`]), each lane is a copy of the network whose passes
/// run on one core, so that the threads of a shared search
/// ([`bredon_mcts::Search::run_shared`]) evaluate side by side.
pub struct NetEvaluator {
    lanes: Vec<Lane>,
    next: AtomicU64,
    size: usize,
}

impl NetEvaluator {
    /// Wraps an inference model for board `size`, run by the `auto` path (fast for a
    /// model on the CPU, the WGSL kernels on a GPU).
    pub fn new(model: TakNet, size: usize) -> NetEvaluator {
        NetEvaluator::with_kind(model, size, InferenceKind::AUTO)
    }

    /// Wraps an inference model for board `size`, run by `kind`.
    pub fn with_kind(model: TakNet, size: usize, kind: InferenceKind) -> NetEvaluator {
        NetEvaluator::with_lanes(model, size, kind, 1)
    }

    /// `lanes` copies of the network (at least one), for a search of as many threads.
    /// Several lanes on the fast CPU path run each pass on one core; on burn's path (a GPU)
    /// the passes of the lanes are queued by the device.
    pub fn with_lanes(model: TakNet, size: usize, kind: InferenceKind, lanes: usize) -> NetEvaluator {
        NetEvaluator::build(model, size, kind, lanes, lanes > 1)
    }

    /// `cores` copies of the network (at least one) whose passes run on one core each on
    /// the fast CPU path, even a single copy: a search on N threads then uses N cores, as
    /// a TEI engine's `Threads` promises (one thread, one core). On burn's path (a GPU) the
    /// same as [`NetEvaluator::with_lanes`].
    pub fn on_cores(model: TakNet, size: usize, kind: InferenceKind, cores: usize) -> NetEvaluator {
        NetEvaluator::build(model, size, kind, cores, true)
    }

    fn build(model: TakNet, size: usize, kind: InferenceKind, lanes: usize, one_core_each: bool) -> NetEvaluator {
        let lanes = lanes.max(1);
        let alone = one_core_each && matches!(kind.resolve_for(&model.device()), InferenceKind::Fast(_));
        let lanes = (0..lanes).map(|_| Lane::new(model.clone(), size, kind, alone)).collect();
        NetEvaluator { lanes, next: AtomicU64::new(0), size }
    }

    /// Copies of the network that can run at once.
    pub fn lanes(&self) -> usize {
        self.lanes.len()
    }

    /// Threads one forward pass may use: 1 when each copy runs on one core, else those of
    /// rayon's pool (on burn's path the device decides).
    pub fn pass_threads(&self) -> usize {
        match &self.lanes[0].pool {
            Some(pool) => pool.current_num_threads(),
            None => rayon::current_num_threads(),
        }
    }

    /// Replaces the weights (e.g. after loading a new checkpoint); the path stays.
    pub fn set_model(&self, model: TakNet) {
        for lane in &self.lanes {
            let mut engine = lane.engine.lock().unwrap_or_else(|e| e.into_inner());
            let kind = engine.kind();
            *engine = match &lane.pool {
                Some(pool) => pool.install(|| Engine::new(model.clone(), self.size, kind)),
                None => Engine::new(model.clone(), self.size, kind),
            };
        }
    }

    /// Which path runs the network.
    pub fn kind(&self) -> InferenceKind {
        self.lanes[0].engine.lock().unwrap_or_else(|e| e.into_inner()).kind()
    }
}

impl Evaluator for NetEvaluator {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        // A free lane if there is one, starting from the next in turn; else wait for that.
        let start = self.next.fetch_add(1, Ordering::Relaxed) as usize;
        let n = self.lanes.len();
        let (lane, engine) = (0..n)
            .find_map(|k| {
                let lane = &self.lanes[(start + k) % n];
                lane.engine.try_lock().ok().map(|e| (lane, e))
            })
            .unwrap_or_else(|| {
                let lane = &self.lanes[start % n];
                (lane, lane.engine.lock().unwrap_or_else(|e| e.into_inner()))
            });
        lane.evaluate(&engine, positions, legal)
    }

    fn preferred_batch_size(&self) -> usize {
        16
    }
}
