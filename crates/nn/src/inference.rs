//! Running the network for the search: a direct evaluator and a batching service.

use bredon_mcts::{Evaluation, Evaluator};
use bredon_rules::{Move, Position};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use burn::prelude::{Device, Tensor};
use burn::tensor::activation::softmax;
use burn::tensor::{ExecutionError, Int, TensorData, Transaction};

use crate::fast::{FastNet, Scalars};
use crate::model::{Outputs, TakNet};
use crate::policy::{masked_softmax, move_to_index, policy_size};
use crate::train::{encode_batch, encode_planes};

/// Which implementation runs the forward pass for search: `fast` ([`FastNet`], the CPU
/// default), `burn` (the training framework's own forward pass, on the model's device),
/// `wgsl` (Bredon's own kernels on a wgpu device, [`crate::wgsl`]; `wgsl:ARITHMETIC` names
/// the trunk's [`Arithmetic`], e.g. `wgsl:tensor`), or `auto`: fast for a model on the CPU,
/// wgsl for one on a GPU (burn's in a build without the `wgpu` feature).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum InferenceKind {
    /// Fast on the CPU; on a GPU device wgsl (burn in a build without the `wgpu` feature).
    #[default]
    Auto,
    /// The fast path: BatchNorm folded, channels-last implicit-GEMM kernels (CPU).
    Fast,
    /// burn's forward pass on the selected device (flex on the CPU, or the GPU).
    Burn,
    /// Bredon's own WGSL kernels on the wgpu adapter of the selected device, the trunk in
    /// the given arithmetic (a build with the `wgpu` feature; on the CPU device this is the
    /// fast path, and in a build without the feature burn's).
    Wgsl(Arithmetic),
}

impl InferenceKind {
    /// The WGSL kernels in [`Arithmetic::DEFAULT`] (what `wgsl` and `auto` on a GPU mean).
    pub const WGSL: InferenceKind = InferenceKind::Wgsl(Arithmetic::DEFAULT);

    /// `Auto` made concrete for a model on `device`; the others as they are.
    pub fn resolve_for(self, device: &Device) -> InferenceKind {
        match self {
            InferenceKind::Auto | InferenceKind::Wgsl(_) if crate::device::is_cpu(device) => InferenceKind::Fast,
            InferenceKind::Auto if cfg!(feature = "wgpu") => InferenceKind::WGSL,
            InferenceKind::Auto | InferenceKind::Wgsl(_) if !cfg!(feature = "wgpu") => InferenceKind::Burn,
            k => k,
        }
    }

    /// Whether this is the WGSL kernels, in any arithmetic.
    pub fn is_wgsl(self) -> bool {
        matches!(self, InferenceKind::Wgsl(_))
    }
}

/// The arithmetic of the trunk's matrix kernels (the residual blocks' convolutions and
/// every other layer whose sizes are multiples of 4: nearly all of a pass's work). The
/// heads' small layers always run in single precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arithmetic {
    /// Single precision, in the shader's own multiply-adds (every adapter).
    F32,
    /// Each operand as a pair of half-precision numbers (the value rounded, and the
    /// remainder rounded), in the shader's own single-precision multiply-adds (adapters
    /// with `shader-f16`): [`Arithmetic::Tensor`]'s operands on any device, so that
    /// lavapipe measures what they do to the outputs. No faster than `F32`.
    F16Pairs,
    /// Cooperative matrices (NVIDIA's tensor cores, the matrix units of other GPUs):
    /// 16 x 16 x 16 products of half-precision tiles summed in single precision, by
    /// whole subgroups of 32 lanes, each operand a pair of halves so that the result is
    /// single precision's (`wgsl/gemm_coop.wgsl` says how).
    Tensor,
}

impl Arithmetic {
    /// What the WGSL kernels run in unless told otherwise: single precision, until the
    /// tensor kernel has been measured on a real GPU (docs/gpu.md).
    pub const DEFAULT: Arithmetic = Arithmetic::F32;

    /// Every arithmetic, in the order benchmarks list them.
    pub const ALL: [Arithmetic; 3] = [Arithmetic::F32, Arithmetic::F16Pairs, Arithmetic::Tensor];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Arithmetic::F32 => "f32",
            Arithmetic::F16Pairs => "f16-pairs",
            Arithmetic::Tensor => "tensor",
        }
    }
}

/// A name that is not an [`Arithmetic`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown arithmetic {0:?} (use f32, f16-pairs or tensor)")]
pub struct UnknownArithmetic(pub String);

impl std::str::FromStr for Arithmetic {
    type Err = UnknownArithmetic;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Arithmetic::ALL
            .into_iter()
            .find(|a| a.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| UnknownArithmetic(s.to_string()))
    }
}

/// A name that is not an [`InferenceKind`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown inference {0:?} (use auto, fast, burn, wgsl, or wgsl:ARITHMETIC with f32, f16-pairs or tensor)")]
pub struct UnknownInference(pub String);

impl std::str::FromStr for InferenceKind {
    type Err = UnknownInference;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim().to_ascii_lowercase();
        match name.as_str() {
            "auto" => Ok(InferenceKind::Auto),
            "fast" => Ok(InferenceKind::Fast),
            "burn" => Ok(InferenceKind::Burn),
            "wgsl" => Ok(InferenceKind::WGSL),
            other => match other.strip_prefix("wgsl:").map(str::parse::<Arithmetic>) {
                Some(Ok(a)) => Ok(InferenceKind::Wgsl(a)),
                _ => Err(UnknownInference(s.trim().to_string())),
            },
        }
    }
}

impl TryFrom<String> for InferenceKind {
    type Error = UnknownInference;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<InferenceKind> for String {
    fn from(kind: InferenceKind) -> String {
        kind.to_string()
    }
}

impl std::fmt::Display for InferenceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InferenceKind::Auto => f.write_str("auto"),
            InferenceKind::Fast => f.write_str("fast"),
            InferenceKind::Burn => f.write_str("burn"),
            InferenceKind::Wgsl(a) if *a == Arithmetic::DEFAULT => f.write_str("wgsl"),
            InferenceKind::Wgsl(a) => write!(f, "wgsl:{}", a.name()),
        }
    }
}

/// A network ready for inference by either path.
#[allow(clippy::large_enum_variant)] // one per inference thread; boxing buys nothing
pub enum Engine {
    /// burn's model and its board size.
    Burn(TakNet, usize),
    /// The fast path (weights copied out of the burn model).
    Fast(FastNet),
    /// Bredon's WGSL kernels on a wgpu device.
    #[cfg(feature = "wgpu")]
    Wgsl(Box<crate::wgsl::WgslNet>),
}

impl Engine {
    /// `model` for board `size`, run by `kind` (`Auto` resolved for the model's device).
    /// The WGSL kernels in an arithmetic other than single precision start only where the
    /// adapter runs it and it agrees with single precision on this model
    /// ([`crate::wgsl::WgslNet::for_search`]); otherwise they run in single precision, and
    /// where they cannot run at all (no adapter, a network outside them) burn's forward
    /// pass does. A warning says why each time.
    pub fn new(model: TakNet, size: usize, kind: InferenceKind) -> Engine {
        match kind.resolve_for(&model.device()) {
            InferenceKind::Burn => Engine::Burn(model, size),
            #[cfg(feature = "wgpu")]
            InferenceKind::Wgsl(arithmetic) => match crate::wgsl::WgslNet::for_search(&model, size, arithmetic) {
                Ok((net, fallback)) => {
                    if let Some(why) = fallback {
                        eprintln!("bredon: {why}; running the wgsl kernels in {} instead", net.arithmetic().name());
                    }
                    Engine::Wgsl(Box::new(net))
                }
                Err(e) => {
                    eprintln!("bredon: {e}; using burn's forward pass instead");
                    Engine::Burn(model, size)
                }
            },
            _ => Engine::Fast(FastNet::from_model(&model, size)),
        }
    }

    /// Which path this is.
    pub fn kind(&self) -> InferenceKind {
        match self {
            Engine::Burn(..) => InferenceKind::Burn,
            Engine::Fast(_) => InferenceKind::Fast,
            #[cfg(feature = "wgpu")]
            Engine::Wgsl(w) => InferenceKind::Wgsl(w.arithmetic()),
        }
    }

    /// Board size.
    pub fn size(&self) -> usize {
        match self {
            Engine::Burn(_, size) => *size,
            Engine::Fast(f) => f.size(),
            #[cfg(feature = "wgpu")]
            Engine::Wgsl(w) => w.size(),
        }
    }

    /// Policy logits (all outputs, per position) and values of `positions`.
    pub fn forward(&self, positions: &[&Position]) -> (Vec<f32>, Vec<f32>) {
        match self {
            Engine::Burn(model, size) => forward_raw(model, positions, *size),
            Engine::Fast(f) => f.forward(positions),
            #[cfg(feature = "wgpu")]
            Engine::Wgsl(_) => {
                let out = self.forward_wdl(positions);
                (out.logits, out.values)
            }
        }
    }

    /// What the search gets from one pass: each position's priors over its `legal` moves,
    /// its value, and (with those heads) its draw probability and flat margin.
    pub fn evaluate(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        #[cfg(feature = "wgpu")]
        if let Engine::Wgsl(w) = self {
            let out = w.evaluate(positions, legal).expect("running the wgsl forward pass");
            return priors_to_evaluations(out.policy, out.values, out.draws, out.margins);
        }
        let out = self.forward_wdl(positions);
        let mut evals = to_evaluations(&out.logits, &out.values, legal, self.size());
        with_scalars(&mut evals, out.draws, out.margins);
        evals
    }

    /// [`Engine::forward`] plus each position's draw probability, when the network has a
    /// win/draw/loss head (`None` otherwise).
    pub fn forward_wdl(&self, positions: &[&Position]) -> Forward {
        match self {
            Engine::Burn(model, size) => {
                let x = encode_batch(positions.iter().copied(), model.input_version(), *size, &model.device());
                let out = model.forward_all(x, Outputs::All);
                let draws = out.wdl.map(|z| {
                    let p = burn::tensor::activation::softmax(z, 1).narrow(1, 1, 1);
                    p.into_data().try_into_vec::<f32>().expect("f32 draw probabilities")
                });
                let area = (*size * *size) as f32;
                let margins = out.flat_margin.map(|m| {
                    let m = m.into_data().try_into_vec::<f32>().expect("f32 margins");
                    m.into_iter().map(|x| x * area).collect()
                });
                Forward {
                    logits: out.policy.into_data().try_into_vec::<f32>().expect("f32 logits"),
                    values: out.value.into_data().try_into_vec::<f32>().expect("f32 values"),
                    draws,
                    margins,
                }
            }
            #[cfg(feature = "wgpu")]
            Engine::Wgsl(w) => {
                let out = w.logits(positions).expect("running the wgsl forward pass");
                Forward { logits: out.policy.concat(), values: out.values, draws: out.draws, margins: out.margins }
            }
            Engine::Fast(f) => {
                let mut logits = Vec::new();
                let mut s = Scalars::default();
                f.forward_scalars_into(positions, &mut logits, &mut s);
                Forward {
                    logits,
                    values: s.values,
                    draws: f.has_wdl().then_some(s.draws),
                    margins: f.has_margin().then_some(s.margins),
                }
            }
        }
    }
}

/// The outputs of one forward pass that the search uses.
pub struct Forward {
    /// Policy logits, `policy_size(N)` per position.
    pub logits: Vec<f32>,
    /// Values for the side to move, one per position.
    pub values: Vec<f32>,
    /// Draw probabilities, one per position, for a network with a win/draw/loss head.
    pub draws: Option<Vec<f32>>,
    /// Expected final flat margins in flats for the side to move (komi included), one per
    /// position, for a network with the flat-margin head.
    pub margins: Option<Vec<f32>>,
}

/// Runs `model` on `positions`: per position the policy logits (all outputs) and the value.
pub fn forward_raw(model: &TakNet, positions: &[&Position], size: usize) -> (Vec<f32>, Vec<f32>) {
    let planes = encode_planes(positions.iter().copied(), model.input_version(), size);
    let (logits, values) = model.forward(Tensor::from_data(planes, &model.device()));
    read_back(logits, values).expect("reading the network's outputs from the device")
}

/// What burn's forward pass sends back to the host for the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyReadback {
    /// Every policy output of every position (`policy_size(N)`: 9,180 on 6x6), turned
    /// into priors over the legal moves on the host.
    Logits,
    /// Each position's priors over its legal moves only, computed on the device (gather,
    /// mask, softmax): what the batching service does.
    LegalPriors,
}

impl std::fmt::Display for PolicyReadback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PolicyReadback::Logits => "all logits",
            PolicyReadback::LegalPriors => "legal priors",
        })
    }
}

/// The legal moves of a batch as a gather on the device: per position the policy indices
/// of its moves, padded to one width for the batch, and an additive mask that keeps the
/// padding out of the softmax.
struct LegalGather {
    indices: TensorData,
    mask: TensorData,
    width: usize,
    /// Each position's number of legal moves.
    lens: Vec<usize>,
}

impl LegalGather {
    /// Widths are rounded up to a multiple of this, so that a run sees few shapes.
    const ROUND: usize = 32;

    fn new(legal: &[&[Move]], size: usize) -> LegalGather {
        let most = legal.iter().map(|m| m.len()).max().unwrap_or(0);
        let width = most.max(1).div_ceil(Self::ROUND) * Self::ROUND;
        let mut indices = Vec::with_capacity(legal.len() * width);
        let mut mask = Vec::with_capacity(legal.len() * width);
        for moves in legal {
            indices.extend(moves.iter().map(|&m| move_to_index(m, size) as i32));
            mask.extend(std::iter::repeat_n(0.0f32, moves.len()));
            // Padding points at output 0, masked far below any logit.
            indices.extend(std::iter::repeat_n(0i32, width - moves.len()));
            mask.extend(std::iter::repeat_n(-1.0e9f32, width - moves.len()));
        }
        let shape = [legal.len(), width];
        let lens = legal.iter().map(|m| m.len()).collect();
        LegalGather { indices: TensorData::new(indices, shape), mask: TensorData::new(mask, shape), width, lens }
    }

    /// The priors `[batch, width]` from the policy logits `[batch, policy_size]`.
    fn priors(&self, logits: Tensor<2>, device: &Device) -> Tensor<2> {
        let indices = Tensor::<2, Int>::from_data(self.indices.clone(), device);
        let mask = Tensor::<2>::from_data(self.mask.clone(), device);
        softmax(logits.gather(1, indices) + mask, 1)
    }

    /// Each position's row of the priors read back, cut to its moves.
    fn split(&self, flat: &[f32]) -> Vec<Vec<f32>> {
        self.lens.iter().enumerate().map(|(i, &n)| flat[i * self.width..i * self.width + n].to_vec()).collect()
    }
}

/// Policy logits and values back to the host, in one read (one wait for the device).
fn read_back(logits: Tensor<2>, values: Tensor<2>) -> Result<(Vec<f32>, Vec<f32>), ExecutionError> {
    let mut data = Transaction::default().register(logits).register(values).try_execute()?.into_iter();
    let mut floats = || data.next().map(|d| d.try_into_vec::<f32>().expect("f32 outputs"));
    let (logits, values) = (floats(), floats());
    Ok((logits.expect("the logits read"), values.expect("the values read")))
}

/// Where the time of one forward pass on burn's path goes ([`forward_timed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PassTimes {
    /// Encoding the positions into input planes on the host.
    pub encode: Duration,
    /// Copying the input to the device, until it is there.
    pub upload: Duration,
    /// The network's kernels, from the first launch until the device is idle.
    pub kernels: Duration,
    /// Reading the policy (every logit, or the legal moves' priors) and the values back to
    /// the host (one read).
    pub readback: Duration,
    /// From the outputs read back to what the search uses: each position's policy over its
    /// legal moves (a masked softmax over its logits, or cutting the priors' rows) and its
    /// value.
    pub convert: Duration,
}

impl PassTimes {
    /// The whole pass.
    pub fn total(&self) -> Duration {
        self.encode + self.upload + self.kernels + self.readback + self.convert
    }

    /// Each phase divided by `n` (the mean of `n` passes).
    pub fn per(&self, n: u32) -> PassTimes {
        let n = n.max(1);
        PassTimes {
            encode: self.encode / n,
            upload: self.upload / n,
            kernels: self.kernels / n,
            readback: self.readback / n,
            convert: self.convert / n,
        }
    }
}

impl std::ops::AddAssign for PassTimes {
    fn add_assign(&mut self, o: PassTimes) {
        self.encode += o.encode;
        self.upload += o.upload;
        self.kernels += o.kernels;
        self.readback += o.readback;
        self.convert += o.convert;
    }
}

/// burn's forward pass of `model` on `positions` as the search uses it (each position's
/// policy over its `legal` moves and its value), phase by phase: the device is
/// synchronised after the upload and after the kernels, so that each phase's time is its
/// own and a slow device shows where it is slow. `readback` says what comes back: every
/// logit, or the legal moves' priors computed on the device (the gather and softmax then
/// count as kernels). The waits cost a little (an untimed pass lets the upload and the
/// launches overlap), so this is for benchmarks (`bredon bench nn`), not for search.
pub fn forward_timed(
    model: &TakNet,
    positions: &[&Position],
    legal: &[&[Move]],
    size: usize,
    readback: PolicyReadback,
) -> Result<(Vec<Evaluation>, PassTimes), ExecutionError> {
    let device = model.device();
    let mut t = PassTimes::default();
    let clock = Instant::now();
    let planes = encode_planes(positions.iter().copied(), model.input_version(), size);
    let gather = (readback == PolicyReadback::LegalPriors).then(|| LegalGather::new(legal, size));
    t.encode = clock.elapsed();
    let clock = Instant::now();
    let x = Tensor::from_data(planes, &device);
    device.sync()?;
    t.upload = clock.elapsed();
    let clock = Instant::now();
    let (logits, values) = model.forward(x);
    let policy = match &gather {
        Some(g) => g.priors(logits, &device),
        None => logits,
    };
    device.sync()?;
    t.kernels = clock.elapsed();
    let clock = Instant::now();
    let (policy, values) = read_back(policy, values)?;
    t.readback = clock.elapsed();
    let clock = Instant::now();
    let evaluations = match &gather {
        Some(g) => priors_to_evaluations(g.split(&policy), values, None, None),
        None => to_evaluations(&policy, &values, legal, size),
    };
    t.convert = clock.elapsed();
    Ok((evaluations, t))
}

fn to_evaluations(logits: &[f32], values: &[f32], legal: &[&[Move]], size: usize) -> Vec<Evaluation> {
    let p = policy_size(size);
    legal
        .iter()
        .enumerate()
        .map(|(i, moves)| Evaluation {
            policy: masked_softmax(&logits[i * p..(i + 1) * p], moves, size),
            value: values[i].clamp(-1.0, 1.0),
            draw: None,
            margin: None,
        })
        .collect()
}

/// Evaluations from priors already over each position's legal moves (computed on the
/// device), the values, and the draw probabilities and margins where the network has them.
/// A row of priors that is not a distribution (a network that gave no finite logits)
/// becomes uniform, as on the host.
fn priors_to_evaluations(
    priors: Vec<Vec<f32>>,
    values: Vec<f32>,
    draws: Option<Vec<f32>>,
    margins: Option<Vec<f32>>,
) -> Vec<Evaluation> {
    let mut evals: Vec<Evaluation> = priors
        .into_iter()
        .zip(values)
        .map(|(policy, v)| {
            let sum: f32 = policy.iter().sum();
            let policy = if policy.iter().all(|x| x.is_finite()) && sum > 0.5 {
                policy
            } else {
                vec![1.0 / policy.len().max(1) as f32; policy.len()]
            };
            Evaluation { policy, value: v.clamp(-1.0, 1.0), draw: None, margin: None }
        })
        .collect();
    with_scalars(&mut evals, draws, margins);
    evals
}

/// Each evaluation's draw probability (clamped to a probability) and flat margin (when
/// finite), where the network gives them.
fn with_scalars(evals: &mut [Evaluation], draws: Option<Vec<f32>>, margins: Option<Vec<f32>>) {
    if let Some(draws) = draws {
        for (e, d) in evals.iter_mut().zip(draws) {
            e.draw = Some(d.clamp(0.0, 1.0));
        }
    }
    if let Some(margins) = margins {
        for (e, m) in evals.iter_mut().zip(margins) {
            e.margin = m.is_finite().then_some(m);
        }
    }
}

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
        NetEvaluator::with_kind(model, size, InferenceKind::Auto)
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
        let alone = one_core_each && kind.resolve_for(&model.device()) == InferenceKind::Fast;
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

struct Request {
    positions: Vec<Position>,
    /// Each position's legal moves, for a service that computes the priors on the device
    /// (burn's path); empty for the fast path, whose logits the search thread converts.
    legal: Vec<Vec<Move>>,
    reply: Sender<Reply>,
}

/// A service's answer to one request.
enum Reply {
    /// Every policy logit of each position (`policy_size(N)` each), and the values.
    Logits(Vec<f32>, Vec<f32>),
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
        InferenceKind::Fast => rayon::current_num_threads().max(1),
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
    size: usize,
    batch_hint: usize,
    stats: Arc<Stats>,
    /// The service runs burn's path: requests carry the legal moves, answers the priors.
    legal_on_device: bool,
}

impl InferenceService {
    /// Starts the service thread with `model` for board `size`, run by the `auto` path.
    pub fn start(model: TakNet, size: usize, max_batch: usize) -> InferenceService {
        InferenceService::start_with(model, size, max_batch, InferenceKind::Auto)
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
        let legal_on_device = matches!(kind.resolve_for(&model.device()), InferenceKind::Burn | InferenceKind::Wgsl(_));
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
            size,
            batch_hint: 8,
            stats: stats.clone(),
            legal_on_device,
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
        Engine::Fast(net) => serve_fast(&net, net.size(), max_batch, rx, stats),
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

/// The fast path: one pass at a time; every logit goes back, and the search threads turn
/// them into priors side by side.
fn serve_fast(net: &FastNet, size: usize, max_batch: usize, rx: Receiver<Request>, stats: &Stats) {
    let p = policy_size(size);
    while let Ok(first) = rx.recv() {
        let reqs = gather_requests(&rx, first, max_batch, stats);
        let all: Vec<&Position> = reqs.iter().flat_map(|r| r.positions.iter()).collect();
        let clock = Instant::now();
        let (logits, values) = net.forward(&all);
        add_time(&stats.forward, clock.elapsed());
        stats.positions.fetch_add(all.len() as u64, Ordering::Relaxed);
        stats.batches.fetch_add(1, Ordering::Relaxed);
        let replying = Instant::now();
        let mut at = 0;
        for r in &reqs {
            let k = r.positions.len();
            let _ = r.reply.send(Reply::Logits(logits[at * p..(at + k) * p].to_vec(), values[at..at + k].to_vec()));
            at += k;
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
    let depth = if crate::device::is_cpu(&device) { 1 } else { 2 };
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
fn serve_wgsl(net: &crate::wgsl::WgslNet, max_batch: usize, rx: Receiver<Request>, stats: &Stats) {
    let launch = |reqs: Vec<Request>| {
        let clock = Instant::now();
        let legal = batch_legal(&reqs);
        let legal: Vec<&[Move]> = legal.iter().map(|m| m.as_ref()).collect();
        let positions: Vec<&Position> = reqs.iter().flat_map(|r| r.positions.iter()).collect();
        let ticket = net.launch(&positions, Some(&legal)).expect("launching the wgsl forward pass");
        let launched = clock.elapsed();
        add_time(&stats.encode, ticket.encode_time());
        add_time(&stats.forward, launched.saturating_sub(ticket.encode_time()));
        (reqs, ticket)
    };
    let finish = |(reqs, ticket): (Vec<Request>, crate::wgsl::Ticket<'_>)| {
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
    let legal: Vec<&[Move]> = legal.iter().map(|m| m.as_ref()).collect();
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

/// The legal moves of every position of a batch's requests, in order: as sent, or
/// generated here for a request that came without them.
fn batch_legal(reqs: &[Request]) -> Vec<std::borrow::Cow<'_, [Move]>> {
    reqs.iter()
        .flat_map(|r| {
            r.positions.iter().enumerate().map(move |(i, pos)| match r.legal.get(i) {
                Some(moves) => std::borrow::Cow::Borrowed(moves.as_slice()),
                None => std::borrow::Cow::Owned(pos.legal_moves()),
            })
        })
        .collect()
}

impl Evaluator for InferenceHandle {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        let (reply, answer) = mpsc::channel();
        let req = Request {
            positions: positions.iter().map(|p| (*p).clone()).collect(),
            legal: if self.legal_on_device { legal.iter().map(|m| m.to_vec()).collect() } else { Vec::new() },
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
                    Reply::Logits(logits, values) => to_evaluations(&logits, &values, legal, self.size),
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

#[cfg(test)]
mod tests {
    use super::*;
    use InferenceKind::{Auto, Burn, Fast, Wgsl};

    #[test]
    fn inference_names_parse_print_back_and_resolve_on_the_cpu() {
        let tensor = Wgsl(Arithmetic::Tensor);
        for (text, kind) in [
            ("auto", Auto),
            ("fast", Fast),
            ("BURN", Burn),
            (" wgsl ", InferenceKind::WGSL),
            ("wgsl:f32", Wgsl(Arithmetic::F32)),
            ("wgsl:F16-pairs", Wgsl(Arithmetic::F16Pairs)),
            ("wgsl:tensor", tensor),
        ] {
            assert_eq!(text.parse::<InferenceKind>().unwrap(), kind, "{text}");
            assert_eq!(kind.to_string().parse::<InferenceKind>().unwrap(), kind);
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(serde_json::from_str::<InferenceKind>(&json).unwrap(), kind);
        }
        assert_eq!(InferenceKind::WGSL.to_string(), "wgsl");
        assert_eq!(tensor.to_string(), "wgsl:tensor");
        assert!(tensor.is_wgsl() && !Burn.is_wgsl());
        for bad in ["gpu", "wgsl:", "wgsl:bf16", "tensor"] {
            let e = bad.parse::<InferenceKind>().unwrap_err().to_string();
            assert!(
                e.contains(&format!("{bad:?}")) && e.contains("use auto, fast, burn, wgsl, or wgsl:ARITHMETIC"),
                "{e}"
            );
        }
        // A run config's key reads the same names and says what is wrong with a bad one.
        #[derive(serde::Deserialize)]
        struct Section {
            inference: InferenceKind,
        }
        let read: Section = toml::from_str("inference = \"wgsl:tensor\"").unwrap();
        assert_eq!(read.inference, tensor);
        let e = toml::from_str::<Section>("inference = \"wgsl:bf16\"").err().unwrap().to_string();
        assert!(e.contains("unknown inference \"wgsl:bf16\""), "{e}");
        // On the CPU device the GPU kernels are the fast path; burn stays burn.
        let cpu = crate::device::cpu();
        let resolved: Vec<_> =
            [Auto, Fast, Burn, InferenceKind::WGSL, tensor].iter().map(|k| k.resolve_for(&cpu)).collect();
        assert_eq!(resolved, [Fast, Fast, Burn, Fast, Fast]);
    }
}
