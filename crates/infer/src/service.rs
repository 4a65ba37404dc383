//! The batching inference service: a thread owns the network ([`InferenceService`],
//! sharded, one such thread per core with its own copy); every search holds a cheap
//! [`InferenceHandle`] (an `Evaluator`) that sends its leaf batch over a channel to a
//! shard in turn; a shard merges queued requests into one forward pass.

use bredon_kernels::{FastNet, Scalars};
use bredon_mcts::{Evaluation, Evaluator};
use bredon_nn::TakNet;
use bredon_rules::{Move, Position};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use burn::prelude::{Device, Tensor};

use crate::engine::{Engine, LegalGather, move_logits_to_evaluations, priors_to_evaluations, read_back};
use crate::kind::InferenceKind;
use bredon_nn::train::encode_planes;

struct Request {
    positions: Vec<Position>,
    /// Each position's legal moves: the fast path computes their logits only, burn's and
    /// the WGSL paths their priors on the device.
    legal: Vec<Vec<Move>>,
    reply: Sender<Reply>,
}

/// A service's answer to one request.
enum Reply {
    /// The logits of each position's legal moves, one position after another (the search
    /// thread turns them into priors), and the values.
    MoveLogits(Vec<f32>, Vec<f32>),
    /// Each position's priors over its legal moves, the values, and the draw
    /// probabilities and margins where the path and the network give them.
    Priors(Vec<Vec<f32>>, Vec<f32>, Option<Vec<f32>>, Option<Vec<f32>>),
}

/// Counters of a service (times in nanoseconds).
#[derive(Default)]
struct Stats {
    positions: AtomicU64,
    batches: AtomicU64,
    gather: AtomicU64,
    encode: AtomicU64,
    forward: AtomicU64,
    readback: AtomicU64,
    reply: AtomicU64,
    requests: AtomicU64,
    round_trip: AtomicU64,
    convert: AtomicU64,
}

fn add_time(counter: &AtomicU64, d: Duration) {
    counter.fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

fn read_time(counter: &AtomicU64) -> Duration {
    Duration::from_nanos(counter.load(Ordering::Relaxed))
}

/// Where an [`InferenceService`]'s time went, summed over its passes and requests
/// ([`InferenceService::times`]): what `bredon bench selfplay` prints per pass, so that a
/// slow device or a starved one shows its cause. No waits are added to measure it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServiceTimes {
    /// Forward passes.
    pub batches: u64,
    /// Positions evaluated.
    pub positions: u64,
    /// Gathering each pass's requests: from its first request to the last one taken.
    pub gather: Duration,
    /// burn's and the WGSL path: encoding the positions (and their legal moves) on the
    /// host.
    pub encode: Duration,
    /// burn's and the WGSL path: the upload and the launch of the kernels (on a GPU both
    /// return before the kernels finish; on burn's CPU backend the work itself). The fast
    /// path: its whole pass (it encodes as it goes).
    pub forward: Duration,
    /// burn's and the WGSL path: waiting for the device and reading the outputs back.
    pub readback: Duration,
    /// Splitting the outputs among the requests and sending them back.
    pub reply: Duration,
    /// Requests answered (one per leaf batch of a search).
    pub requests: u64,
    /// On the search threads: from sending a request to its answer.
    pub round_trip: Duration,
    /// On the search threads: from the raw outputs to evaluations (masked softmax).
    pub convert: Duration,
}

/// How many shards an [`InferenceService`] run by `kind` gets when nobody says: one per
/// thread of rayon's pool on the fast CPU path, one on burn's path (a GPU wants whole
/// batches, and burn's CPU backend splits its own work).
pub fn auto_shards(kind: InferenceKind, device: &Device) -> usize {
    match kind.resolve_for(device) {
        InferenceKind::Fast(_) => rayon::current_num_threads().max(1),
        _ => 1,
    }
}

/// The batching inference service: a thread owns the model and runs it on requests
/// gathered from many searches (up to `max_batch` positions per forward pass). Clone the
/// [`InferenceService::handle`] into every search thread; it implements [`Evaluator`].
///
/// A sharded service ([`InferenceService::start_sharded`]) runs several such threads, each
/// with its own copy of the network and a forward pass on its own thread only; the
/// requests are dealt out among them in turn. On the CPU that keeps every core on whole
/// forward passes while the searches on the others expand trees, instead of one pass split
/// across all cores and the searches waiting for it.
pub struct InferenceService {
    handle: InferenceHandle,
    threads: Vec<JoinHandle<()>>,
    stats: Arc<Stats>,
}

/// A cheap, cloneable evaluator that sends positions to the service's threads.
#[derive(Clone)]
pub struct InferenceHandle {
    shards: Arc<[Sender<Request>]>,
    next: Arc<AtomicU64>,
    batch_hint: usize,
    stats: Arc<Stats>,
}

impl InferenceService {
    /// Starts the service thread with `model` for board `size`, run by the `auto` path.
    pub fn start(model: TakNet, size: usize, max_batch: usize) -> InferenceService {
        InferenceService::start_with(model, size, max_batch, InferenceKind::AUTO)
    }

    /// Starts the service thread with `model` for board `size`, run by `kind`. The service
    /// owns the model (converted for the fast path on its thread), so a service started
    /// on a newly loaded checkpoint always runs its weights.
    pub fn start_with(model: TakNet, size: usize, max_batch: usize, kind: InferenceKind) -> InferenceService {
        InferenceService::start_sharded(model, size, max_batch, kind, 1)
    }

    /// Starts `shards` service threads (at least one), each with its own copy of `model`
    /// run by `kind`. With one, the forward pass may use every thread of rayon's pool, as
    /// [`InferenceService::start_with`]; with more, each shard's pass runs on its own thread
    /// alone (a pool of one), and requests go to the shards in turn.
    pub fn start_sharded(
        model: TakNet,
        size: usize,
        max_batch: usize,
        kind: InferenceKind,
        shards: usize,
    ) -> InferenceService {
        let shards = shards.max(1);
        let stats = Arc::new(Stats::default());
        let max_batch = max_batch.max(1);
        let mut senders = Vec::with_capacity(shards);
        let mut threads = Vec::with_capacity(shards);
        for i in 0..shards {
            let (tx, rx) = mpsc::channel::<Request>();
            let st = stats.clone();
            let model = model.clone();
            let name = if shards == 1 { "bredon-inference".to_string() } else { format!("bredon-inference-{i}") };
            let thread = std::thread::Builder::new()
                .name(name)
                .spawn(move || {
                    if shards == 1 {
                        serve(Engine::new(model, size, kind), max_batch, rx, &st);
                    } else {
                        // A pool of one: the fast path sizes its scratch space and splits
                        // its batches by the pool it is built and run in.
                        let alone = rayon::ThreadPoolBuilder::new()
                            .num_threads(1)
                            .thread_name(move |_| format!("bredon-inference-{i}"))
                            .build()
                            .expect("a one-thread pool for an inference shard");
                        alone.install(|| serve(Engine::new(model, size, kind), max_batch, rx, &st));
                    }
                })
                .expect("spawn inference thread");
            senders.push(tx);
            threads.push(thread);
        }
        let handle = InferenceHandle {
            shards: senders.into(),
            next: Arc::new(AtomicU64::new(0)),
            batch_hint: 8,
            stats: stats.clone(),
        };
        InferenceService { handle, threads, stats }
    }

    /// Service threads (shards).
    pub fn shards(&self) -> usize {
        self.threads.len()
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

    /// Where the service's time went so far.
    pub fn times(&self) -> ServiceTimes {
        let st = &self.stats;
        ServiceTimes {
            batches: st.batches.load(Ordering::Relaxed),
            positions: st.positions.load(Ordering::Relaxed),
            gather: read_time(&st.gather),
            encode: read_time(&st.encode),
            forward: read_time(&st.forward),
            readback: read_time(&st.readback),
            reply: read_time(&st.reply),
            requests: st.requests.load(Ordering::Relaxed),
            round_trip: read_time(&st.round_trip),
            convert: read_time(&st.convert),
        }
    }
}

impl InferenceService {
    /// Stops the service and waits for its threads. Every handle must have been dropped
    /// (otherwise the threads keep serving them and this waits for them).
    pub fn shutdown(mut self) {
        self.handle.shards = Arc::from(Vec::new());
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

// Dropping the service without `shutdown` detaches the thread: it ends by itself when
// the last handle is dropped.

fn serve(engine: Engine, max_batch: usize, rx: Receiver<Request>, stats: &Stats) {
    match engine {
        Engine::Fast(net) => serve_fast(&net, max_batch, rx, stats),
        Engine::Burn(model, size) => serve_burn(&model, size, max_batch, rx, stats),
        #[cfg(feature = "wgpu")]
        Engine::Wgsl(net) => serve_wgsl(&net, max_batch, rx, stats),
    }
}

/// The requests of one pass: `first`, what is queued behind it, and what arrives while
/// the batch is still small (up to `max_batch` positions).
fn gather_requests(rx: &Receiver<Request>, first: Request, max_batch: usize, stats: &Stats) -> Vec<Request> {
    let gathering = Instant::now();
    let mut count = first.positions.len();
    let mut reqs = vec![first];
    while count < max_batch {
        match rx.recv_timeout(GATHER_WAIT) {
            Ok(r) => {
                count += r.positions.len();
                reqs.push(r);
            }
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    add_time(&stats.gather, gathering.elapsed());
    reqs
}

/// How long a service waits for one more request while its batch is small.
const GATHER_WAIT: Duration = Duration::from_micros(300);

/// The fast path: one pass at a time, for the logits of the legal moves only; they go
/// back, and the search threads turn them into priors side by side.
fn serve_fast(net: &FastNet, max_batch: usize, rx: Receiver<Request>, stats: &Stats) {
    let (mut logits, mut scalars) = (Vec::new(), Scalars::default());
    while let Ok(first) = rx.recv() {
        let reqs = gather_requests(&rx, first, max_batch, stats);
        let all: Vec<&Position> = reqs.iter().flat_map(|r| r.positions.iter()).collect();
        let legal = batch_legal(&reqs);
        let clock = Instant::now();
        net.forward_moves_into(&all, &legal, &mut logits, &mut scalars);
        add_time(&stats.forward, clock.elapsed());
        stats.positions.fetch_add(all.len() as u64, Ordering::Relaxed);
        stats.batches.fetch_add(1, Ordering::Relaxed);
        let replying = Instant::now();
        let (mut at, mut from) = (0, 0);
        for r in &reqs {
            let k = r.positions.len();
            let to = from + legal[at..at + k].iter().map(|m| m.len()).sum::<usize>();
            let _ = r.reply.send(Reply::MoveLogits(logits[from..to].to_vec(), scalars.values[at..at + k].to_vec()));
            (at, from) = (at + k, to);
        }
        add_time(&stats.reply, replying.elapsed());
    }
}

/// A batch launched on burn's device whose outputs have not been read yet.
struct InFlight {
    reqs: Vec<Request>,
    gather: LegalGather,
    priors: Tensor<2>,
    values: Tensor<2>,
}

/// burn's path: each position's priors over its legal moves are computed on the device
/// and only they come back. On a GPU two batches are in flight (see [`serve_pipelined`]);
/// on the CPU (flex), where a launch is the work itself, each batch is read back at once
/// (waiting would only delay its searches).
fn serve_burn(model: &TakNet, size: usize, max_batch: usize, rx: Receiver<Request>, stats: &Stats) {
    let device = model.device();
    let depth = if bredon_nn::device::is_cpu(&device) { 1 } else { 2 };
    serve_pipelined(
        depth,
        max_batch,
        rx,
        stats,
        |reqs| launch(model, &device, size, reqs, stats),
        |done| finish(done, stats),
    );
}

/// The WGSL kernels: like burn's path on a GPU, two batches in flight, the priors over
/// the legal moves computed on the device; the draws and margins come back too.
#[cfg(feature = "wgpu")]
fn serve_wgsl(net: &bredon_kernels::wgsl::WgslNet, max_batch: usize, rx: Receiver<Request>, stats: &Stats) {
    let launch = |reqs: Vec<Request>| {
        let clock = Instant::now();
        let legal = batch_legal(&reqs);
        let positions: Vec<&Position> = reqs.iter().flat_map(|r| r.positions.iter()).collect();
        let ticket = net.launch(&positions, Some(&legal)).expect("launching the wgsl forward pass");
        let launched = clock.elapsed();
        add_time(&stats.encode, ticket.encode_time());
        add_time(&stats.forward, launched.saturating_sub(ticket.encode_time()));
        (reqs, ticket)
    };
    let finish = |(reqs, ticket): (Vec<Request>, bredon_kernels::wgsl::Ticket<'_>)| {
        let clock = Instant::now();
        let out = ticket.finish().expect("reading the wgsl forward pass back");
        add_time(&stats.readback, clock.elapsed());
        let replying = Instant::now();
        reply_priors(&reqs, out.policy, &out.values, out.draws.as_deref(), out.margins.as_deref(), stats);
        add_time(&stats.reply, replying.elapsed());
    };
    serve_pipelined(2, max_batch.min(net.max_batch()), rx, stats, launch, finish);
}

/// A device service's loop with up to `depth` batches in flight: the next batch is
/// gathered, encoded, uploaded and launched before the previous one is read back, so the
/// host's work overlaps the kernels; when no request comes soon, the oldest batch is read
/// back and answered.
fn serve_pipelined<T>(
    depth: usize,
    max_batch: usize,
    rx: Receiver<Request>,
    stats: &Stats,
    mut launch: impl FnMut(Vec<Request>) -> T,
    mut finish: impl FnMut(T),
) {
    let mut queue: std::collections::VecDeque<T> = std::collections::VecDeque::new();
    loop {
        let next = if queue.is_empty() {
            match rx.recv() {
                Ok(r) => Some(r),
                Err(_) => break,
            }
        } else {
            // A batch is in flight: take the next one if it comes soon, else read it back.
            rx.recv_timeout(GATHER_WAIT).ok()
        };
        match next {
            Some(first) => {
                let reqs = gather_requests(&rx, first, max_batch, stats);
                queue.push_back(launch(reqs));
                if queue.len() >= depth {
                    let done = queue.pop_front().expect("a batch in flight");
                    finish(done);
                }
            }
            None => {
                if let Some(done) = queue.pop_front() {
                    finish(done);
                }
            }
        }
    }
    while let Some(done) = queue.pop_front() {
        finish(done);
    }
}

/// Encodes `reqs`' positions and their legal moves, uploads them and launches the pass.
fn launch(model: &TakNet, device: &Device, size: usize, reqs: Vec<Request>, stats: &Stats) -> InFlight {
    let clock = Instant::now();
    let legal = batch_legal(&reqs);
    let positions: Vec<&Position> = reqs.iter().flat_map(|r| r.positions.iter()).collect();
    let planes = encode_planes(positions.iter().copied(), model.input_version(), size);
    let gather = LegalGather::new(&legal, size);
    add_time(&stats.encode, clock.elapsed());
    let clock = Instant::now();
    let (logits, values) = model.forward(Tensor::from_data(planes, device));
    let priors = gather.priors(logits, device);
    add_time(&stats.forward, clock.elapsed());
    InFlight { reqs, gather, priors, values }
}

/// Reads a launched batch back (waiting for its kernels) and answers its requests.
fn finish(batch: InFlight, stats: &Stats) {
    let clock = Instant::now();
    let read = read_back(batch.priors, batch.values);
    add_time(&stats.readback, clock.elapsed());
    let replying = Instant::now();
    let (flat, values) = read.expect("reading the network's outputs from the device");
    reply_priors(&batch.reqs, batch.gather.split(&flat), &values, None, None, stats);
    add_time(&stats.reply, replying.elapsed());
}

/// Counts a device pass's positions and answers each of its requests with its share of
/// the priors, values, and (where the path gives them) draw probabilities and margins.
fn reply_priors(
    reqs: &[Request],
    priors: Vec<Vec<f32>>,
    values: &[f32],
    draws: Option<&[f32]>,
    margins: Option<&[f32]>,
    stats: &Stats,
) {
    stats.positions.fetch_add(priors.len() as u64, Ordering::Relaxed);
    stats.batches.fetch_add(1, Ordering::Relaxed);
    let mut priors = priors.into_iter();
    let mut at = 0;
    for r in reqs {
        let k = r.positions.len();
        let cut = |v: Option<&[f32]>| v.map(|v| v[at..at + k].to_vec());
        let _ = r.reply.send(Reply::Priors(
            priors.by_ref().take(k).collect(),
            values[at..at + k].to_vec(),
            cut(draws),
            cut(margins),
        ));
        at += k;
    }
}

/// The legal moves of every position of a batch's requests, in order (every request
/// carries its positions' moves).
fn batch_legal(reqs: &[Request]) -> Vec<&[Move]> {
    reqs.iter()
        .flat_map(|r| {
            assert_eq!(r.legal.len(), r.positions.len(), "a request's legal moves, one list a position");
            r.legal.iter().map(Vec::as_slice)
        })
        .collect()
}

impl Evaluator for InferenceHandle {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        let (reply, answer) = mpsc::channel();
        let req = Request {
            positions: positions.iter().map(|p| (*p).clone()).collect(),
            legal: legal.iter().map(|m| m.to_vec()).collect(),
            reply,
        };
        let sent = Instant::now();
        let shard = match self.shards.len() {
            0 => None,
            n => self.shards.get((self.next.fetch_add(1, Ordering::Relaxed) % n as u64) as usize),
        };
        if shard.is_none_or(|tx| tx.send(req).is_err()) {
            // The service is gone (shutting down): fall back to uniform priors, value 0.
            return bredon_mcts::UniformEvaluator.evaluate_batch(positions, legal);
        }
        match answer.recv() {
            Ok(reply) => {
                let converting = Instant::now();
                let evaluations = match reply {
                    Reply::MoveLogits(logits, values) => move_logits_to_evaluations(&logits, values, legal, None, None),
                    Reply::Priors(priors, values, draws, margins) => {
                        priors_to_evaluations(priors, values, draws, margins)
                    }
                };
                add_time(&self.stats.round_trip, converting - sent);
                add_time(&self.stats.convert, converting.elapsed());
                self.stats.requests.fetch_add(1, Ordering::Relaxed);
                evaluations
            }
            Err(_) => bredon_mcts::UniformEvaluator.evaluate_batch(positions, legal),
        }
    }

    fn preferred_batch_size(&self) -> usize {
        self.batch_hint
    }
}
