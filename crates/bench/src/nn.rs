//! `bredon bench nn`: forward-pass throughput (positions/s of what the search uses: priors
//! over the legal moves and the value) per network, path and batch size, and one pass
//! phase by phase.

use crate::error::BenchError;
use bredon_infer::{Engine, InferenceKind, PolicyReadback};
use bredon_kernels::{PassTimes, Precision};
use bredon_netform::ModelMeta;
use bredon_netform::positions::random_positions;
use bredon_nn::{Device, TakNet};
use bredon_rules::{Move, Position};
use std::time::Instant;

/// The forward paths to measure: `inference` alone when given (`auto` made concrete for
/// `device`); otherwise the fast path in f32 (and in bf16 and 8-bit integers where the CPU
/// has the units), burn's, and the WGSL kernels too where `device` runs them.
pub fn kinds(inference: Option<InferenceKind>, device: &Device) -> Vec<InferenceKind> {
    if let Some(k) = inference {
        return vec![k.resolve_for(device)];
    }
    // f32 first: every CPU has its units.
    let mut out: Vec<InferenceKind> =
        Precision::ALL.into_iter().filter(|p| p.is_native()).map(InferenceKind::fast).collect();
    out.push(InferenceKind::Burn);
    if InferenceKind::WGSL.resolve_for(device) == InferenceKind::WGSL {
        out.push(InferenceKind::WGSL);
    }
    out
}

/// The positions measured on a board of `size` with batches up to the largest of
/// `batches`: at least 1,024 random ones, the same for every path.
pub fn positions_for(size: usize, batches: &[usize]) -> Vec<Position> {
    let most = batches.iter().copied().max().unwrap_or(1).max(1024);
    random_positions(size, most, size as u64)
}

/// Each position's legal moves, as the search passes them.
fn legal_moves(positions: &[Position]) -> Vec<Vec<Move>> {
    positions.iter().map(|p| p.legal_moves()).collect()
}

/// Positions per second of `engine` at `batch` for about `seconds`, each pass giving what
/// the search uses (priors over the legal moves, the value).
pub fn forward_rate(engine: &Engine, positions: &[Position], batch: usize, seconds: f64) -> f64 {
    let refs: Vec<&Position> = positions.iter().collect();
    let legal = legal_moves(positions);
    let legal: Vec<&[Move]> = legal.iter().map(|m| m.as_slice()).collect();
    let batch = batch.max(1).min(refs.len());
    // Warm up (allocations, thread pool).
    let _ = engine.evaluate(&refs[..batch], &legal[..batch]);
    let start = Instant::now();
    let mut done = 0usize;
    let mut i = 0usize;
    while start.elapsed().as_secs_f64() < seconds || done == 0 {
        let lo = (i * batch) % (refs.len() - batch + 1);
        let _ = engine.evaluate(&refs[lo..lo + batch], &legal[lo..lo + batch]);
        done += batch;
        i += 1;
    }
    done as f64 / start.elapsed().as_secs_f64()
}

/// Positions per second of `kind` (a fast CPU path) with `streams` batches in flight at
/// once, each on its own core with its own copy of the network, as self-play's inference
/// threads run them: the figure to set beside a peer's throughput mode (OpenVINO's
/// `THROUGHPUT` hint with one request in flight per core), where [`forward_rate`] is its
/// latency mode (one call at a time, split over the cores).
pub fn streams_rate(
    model: &TakNet,
    size: usize,
    kind: InferenceKind,
    positions: &[Position],
    batch: usize,
    streams: usize,
    seconds: f64,
) -> f64 {
    let streams = streams.max(1);
    let evaluator = bredon_infer::NetEvaluator::on_cores(model.clone(), size, kind, streams);
    let refs: Vec<&Position> = positions.iter().collect();
    let legal = legal_moves(positions);
    let legal: Vec<&[Move]> = legal.iter().map(|m| m.as_slice()).collect();
    let batch = batch.max(1).min(refs.len());
    let span = refs.len() - batch + 1;
    // Warm up every copy (allocations, each core's pool).
    for _ in 0..streams {
        let _ = bredon_mcts::Evaluator::evaluate_batch(&evaluator, &refs[..batch], &legal[..batch]);
    }
    let start = Instant::now();
    let done: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..streams)
            .map(|w| {
                let (evaluator, refs, legal) = (&evaluator, &refs, &legal);
                scope.spawn(move || {
                    let (mut done, mut i) = (0usize, w);
                    while start.elapsed().as_secs_f64() < seconds || done == 0 {
                        let lo = (i * batch) % span;
                        let _ = bredon_mcts::Evaluator::evaluate_batch(
                            evaluator,
                            &refs[lo..lo + batch],
                            &legal[lo..lo + batch],
                        );
                        done += batch;
                        i += streams;
                    }
                    done
                })
            })
            .collect();
        workers.into_iter().map(|h| h.join().expect("a benchmark stream panicked")).sum()
    });
    done as f64 / start.elapsed().as_secs_f64()
}

/// [`forward_rate`] of the WGSL kernels with two passes in flight, as the batching service
/// runs them: the next pass is encoded and launched before the previous one is read back.
#[cfg(feature = "wgpu")]
pub fn pipelined_rate(
    net: &bredon_kernels::wgsl::WgslNet,
    positions: &[Position],
    batch: usize,
    seconds: f64,
) -> Result<f64, bredon_kernels::wgsl::WgslError> {
    let refs: Vec<&Position> = positions.iter().collect();
    let legal = legal_moves(positions);
    let legal: Vec<&[Move]> = legal.iter().map(|m| m.as_slice()).collect();
    let batch = batch.max(1).min(refs.len());
    let at = |i: usize| (i * batch) % (refs.len() - batch + 1);
    let launch = |i: usize| net.launch(&refs[at(i)..at(i) + batch], Some(&legal[at(i)..at(i) + batch]));
    launch(0)?.finish()?;
    let start = Instant::now();
    let mut in_flight = launch(1)?;
    let mut done = 0usize;
    let mut i = 2;
    while start.elapsed().as_secs_f64() < seconds || done == 0 {
        let next = launch(i)?;
        in_flight.finish()?;
        in_flight = next;
        done += batch;
        i += 1;
    }
    in_flight.finish()?;
    done += batch;
    Ok(done as f64 / start.elapsed().as_secs_f64())
}

/// A timed forward pass of the positions and their legal moves, giving its phase times.
pub type TimedPass<'a, E> = dyn Fn(&[&Position], &[&[Move]]) -> Result<PassTimes, E> + 'a;

/// The mean phase times of `timed` at `batch`, over about `seconds / 2` (at least three
/// passes after a warm-up).
pub fn pass_times<E>(
    timed: &TimedPass<'_, E>,
    positions: &[Position],
    batch: usize,
    seconds: f64,
) -> Result<PassTimes, E> {
    let refs: Vec<&Position> = positions.iter().collect();
    let legal = legal_moves(positions);
    let legal: Vec<&[Move]> = legal.iter().map(|m| m.as_slice()).collect();
    let batch = batch.max(1).min(refs.len());
    let pass = |i: usize| {
        let lo = (i * batch) % (refs.len() - batch + 1);
        timed(&refs[lo..lo + batch], &legal[lo..lo + batch])
    };
    pass(0)?;
    let start = Instant::now();
    let (mut sum, mut n) = (PassTimes::default(), 0u32);
    while n < 3 || start.elapsed().as_secs_f64() < seconds / 2.0 {
        sum += pass(n as usize + 1)?;
        n += 1;
    }
    Ok(sum.per(n))
}

/// One row of the throughput table: a network at one batch size.
#[derive(Clone, Debug, PartialEq)]
pub struct RateRow {
    /// The board size.
    pub size: usize,
    /// The network's name (`NetConfig::name`).
    pub net: String,
    /// The batch size.
    pub batch: usize,
    /// Positions/s of each path, in the order of the kinds asked for (a WGSL path that
    /// could not start ran burn's forward pass instead).
    pub rates: Vec<f64>,
    /// Positions/s of each WGSL path with two passes in flight (empty in a build without
    /// the `wgpu` feature or without WGSL paths).
    pub pipelined: Vec<f64>,
    /// Positions/s of each fast CPU path with `streams` batches in flight, one a core
    /// ([`streams_rate`]; empty when `streams` is 1 or there is no fast path).
    pub streams: Vec<f64>,
    /// The path each of the kinds asked for ran as (`fast` in `auto` precision as
    /// `fast:int8` or `fast:f32`, a WGSL path that could not start as `burn`).
    pub ran: Vec<InferenceKind>,
}

/// One forward pass phase by phase, averaged over several (the device synchronised after
/// each phase).
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseRow {
    /// The board size.
    pub size: usize,
    /// The network's name.
    pub net: String,
    /// The batch size.
    pub batch: usize,
    /// The path and what it reads back: `burn logits`, `burn priors` (`PolicyReadback`'s
    /// names) or `wgsl priors`.
    pub policy: String,
    /// The mean time of each phase.
    pub times: PassTimes,
}

impl PhaseRow {
    /// Positions/s of the pass with its waits.
    pub fn rate(&self) -> f64 {
        self.batch as f64 / self.times.total().as_secs_f64().max(1e-9)
    }
}

/// The throughput table: every network of `models` by every path of `kinds` at every
/// batch of `batches`, for about `seconds` each (and each fast CPU path again with
/// `streams` batches in flight when `streams` > 1), handing each row to `on_row` as soon
/// as it is measured. Returns the pass-by-phase rows measured along the way (burn's passes
/// where `kinds` holds `burn`, and the WGSL kernels' with the `wgpu` feature).
pub fn forward_table(
    models: &[(TakNet, ModelMeta)],
    kinds: &[InferenceKind],
    batches: &[usize],
    seconds: f64,
    streams: usize,
    on_row: &mut dyn FnMut(&RateRow),
) -> Result<Vec<PhaseRow>, BenchError> {
    let mut breakdown = Vec::new();
    for (model, meta) in models {
        let size = meta.size;
        let net = meta.net.name();
        let positions = positions_for(size, batches);
        let engines: Vec<Engine> = kinds.iter().map(|&k| Engine::new(model.clone(), size, k)).collect();
        for &batch in batches {
            let rates = engines.iter().map(|e| forward_rate(e, &positions, batch, seconds)).collect();
            #[allow(unused_mut)] // only the WGSL kernels run two passes in flight
            let mut pipelined = Vec::new();
            #[cfg(feature = "wgpu")]
            for e in &engines {
                if let Engine::Wgsl(w) = e {
                    pipelined.push(pipelined_rate(w, &positions, batch, seconds)?);
                }
            }
            let ran: Vec<InferenceKind> = engines.iter().map(Engine::kind).collect();
            let streams = if streams > 1 {
                ran.iter()
                    .filter(|k| matches!(k, InferenceKind::Fast(_)))
                    .map(|&k| streams_rate(model, size, k, &positions, batch, streams, seconds))
                    .collect()
            } else {
                Vec::new()
            };
            on_row(&RateRow { size, net: net.clone(), batch, rates, pipelined, streams, ran });
            let row = |policy: String, times: PassTimes| PhaseRow { size, net: net.clone(), batch, policy, times };
            if kinds.contains(&InferenceKind::Burn) {
                for readback in [PolicyReadback::Logits, PolicyReadback::LegalPriors] {
                    let t = pass_times(
                        &|refs, legal| {
                            bredon_infer::forward_timed(model, refs, legal, size, readback)
                                .map(|(_, t)| t)
                                .map_err(|e| BenchError::Device(e.to_string()))
                        },
                        &positions,
                        batch,
                        seconds,
                    )?;
                    breakdown.push(row(format!("burn {readback}"), t));
                }
            }
            #[cfg(feature = "wgpu")]
            for e in &engines {
                if let Engine::Wgsl(w) = e {
                    let timed =
                        |refs: &[&Position], legal: &[&[Move]]| Ok::<_, BenchError>(w.evaluate_timed(refs, legal)?.1);
                    let t = pass_times(&timed, &positions, batch, seconds)?;
                    breakdown.push(row("wgsl priors".to_string(), t));
                }
            }
        }
    }
    Ok(breakdown)
}
