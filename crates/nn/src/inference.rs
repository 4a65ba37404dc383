//! Running the network for the search: a direct evaluator and a batching service.

use bredon_mcts::{Evaluation, Evaluator};
use bredon_rules::{Move, Position};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::model::TakNet;
use crate::policy::{masked_softmax, policy_size};
use crate::train::encode_batch;

/// Runs `model` on `positions`: per position the policy logits (all outputs) and the value.
pub fn forward_raw(model: &TakNet, positions: &[&Position], size: usize) -> (Vec<f32>, Vec<f32>) {
    let device = crate::device();
    let x = encode_batch(positions.iter().copied(), size, &device);
    let (logits, values) = model.forward(x);
    let logits = logits.into_data().try_into_vec::<f32>().expect("f32 logits");
    let values = values.into_data().try_into_vec::<f32>().expect("f32 values");
    (logits, values)
}

fn to_evaluations(logits: &[f32], values: &[f32], legal: &[&[Move]], size: usize) -> Vec<Evaluation> {
    let p = policy_size(size);
    legal
        .iter()
        .enumerate()
        .map(|(i, moves)| Evaluation {
            policy: masked_softmax(&logits[i * p..(i + 1) * p], moves, size),
            value: values[i].clamp(-1.0, 1.0),
        })
        .collect()
}

/// Evaluates directly on the calling thread (one batch at a time).
pub struct NetEvaluator {
    model: Mutex<TakNet>,
    size: usize,
}

impl NetEvaluator {
    /// Wraps an inference model for board `size`.
    pub fn new(model: TakNet, size: usize) -> NetEvaluator {
        NetEvaluator { model: Mutex::new(model), size }
    }
}

impl Evaluator for NetEvaluator {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        let model = self.model.lock().unwrap_or_else(|e| e.into_inner());
        let (logits, values) = forward_raw(&model, positions, self.size);
        to_evaluations(&logits, &values, legal, self.size)
    }

    fn preferred_batch_size(&self) -> usize {
        16
    }
}

struct Request {
    positions: Vec<Position>,
    reply: Sender<(Vec<f32>, Vec<f32>)>,
}

/// Counters of a service.
#[derive(Default)]
struct Stats {
    positions: AtomicU64,
    batches: AtomicU64,
}

/// The batching inference service: one thread owns the model and runs it on requests
/// gathered from many searches (up to `max_batch` positions per forward pass). Clone the
/// [`InferenceService::handle`] into every search thread; it implements [`Evaluator`].
pub struct InferenceService {
    handle: InferenceHandle,
    thread: Option<JoinHandle<()>>,
    stats: Arc<Stats>,
}

/// A cheap, cloneable evaluator that sends positions to the service thread.
#[derive(Clone)]
pub struct InferenceHandle {
    tx: Sender<Request>,
    size: usize,
    batch_hint: usize,
}

impl InferenceService {
    /// Starts the service thread with `model` for board `size`.
    pub fn start(model: TakNet, size: usize, max_batch: usize) -> InferenceService {
        let (tx, rx) = mpsc::channel::<Request>();
        let stats = Arc::new(Stats::default());
        let st = stats.clone();
        let max_batch = max_batch.max(1);
        let thread = std::thread::Builder::new()
            .name("bredon-inference".into())
            .spawn(move || serve(model, size, max_batch, rx, &st))
            .expect("spawn inference thread");
        InferenceService { handle: InferenceHandle { tx, size, batch_hint: 8 }, thread: Some(thread), stats }
    }

    /// An evaluator that talks to this service.
    pub fn handle(&self) -> InferenceHandle {
        self.handle.clone()
    }

    /// Positions evaluated so far.
    pub fn evaluations(&self) -> u64 {
        self.stats.positions.load(Ordering::Relaxed)
    }

    /// Forward passes run so far.
    pub fn batches(&self) -> u64 {
        self.stats.batches.load(Ordering::Relaxed)
    }
}

impl InferenceService {
    /// Stops the service and waits for its thread. Every handle must have been dropped
    /// (otherwise the thread keeps serving them and this waits for them).
    pub fn shutdown(mut self) {
        let (dead_tx, _) = mpsc::channel();
        self.handle.tx = dead_tx;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// Dropping the service without `shutdown` detaches the thread: it ends by itself when
// the last handle is dropped.

fn serve(model: TakNet, size: usize, max_batch: usize, rx: Receiver<Request>, stats: &Stats) {
    let p = policy_size(size);
    while let Ok(first) = rx.recv() {
        let mut reqs = vec![first];
        let mut count = reqs[0].positions.len();
        // Gather what is queued, then wait briefly for more while the batch is small.
        while count < max_batch {
            match rx.recv_timeout(Duration::from_micros(300)) {
                Ok(r) => {
                    count += r.positions.len();
                    reqs.push(r);
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        let all: Vec<&Position> = reqs.iter().flat_map(|r| r.positions.iter()).collect();
        let (logits, values) = forward_raw(&model, &all, size);
        stats.positions.fetch_add(all.len() as u64, Ordering::Relaxed);
        stats.batches.fetch_add(1, Ordering::Relaxed);
        let mut at = 0;
        for r in &reqs {
            let k = r.positions.len();
            let _ = r.reply.send((logits[at * p..(at + k) * p].to_vec(), values[at..at + k].to_vec()));
            at += k;
        }
    }
}

impl Evaluator for InferenceHandle {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        let (reply, answer) = mpsc::channel();
        let req = Request { positions: positions.iter().map(|p| (*p).clone()).collect(), reply };
        if self.tx.send(req).is_err() {
            // The service is gone (shutting down): fall back to uniform priors, value 0.
            return bredon_mcts::UniformEvaluator.evaluate_batch(positions, legal);
        }
        match answer.recv() {
            Ok((logits, values)) => to_evaluations(&logits, &values, legal, self.size),
            Err(_) => bredon_mcts::UniformEvaluator.evaluate_batch(positions, legal),
        }
    }

    fn preferred_batch_size(&self) -> usize {
        self.batch_hint
    }
}
