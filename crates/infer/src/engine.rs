//! [`Engine`]: a network ready for the search's forward pass by one of the paths (burn's,
//! the CPU fast path, the WGSL kernels), and what one pass gives the search.

use bredon_kernels::{FastNet, PassTimes, Precision, Scalars};
use bredon_mcts::Evaluation;
use bredon_netform::policy::{masked_softmax, move_to_index, policy_size};
use bredon_nn::TakNet;
use bredon_nn::model::Outputs;
use bredon_nn::train::{encode_batch, encode_planes};
use bredon_rules::{Move, Position};
use std::time::Instant;

use burn::prelude::{Device, Tensor};
use burn::tensor::activation::softmax;
use burn::tensor::{ExecutionError, Int, TensorData, Transaction};

use crate::kind::InferenceKind;
use crate::precision::PrecisionChoice;

/// A network ready for inference by either path.
#[allow(clippy::large_enum_variant)] // one per inference thread; boxing buys nothing
pub enum Engine {
    /// burn's model and its board size.
    Burn(TakNet, usize),
    /// The fast path (weights copied out of the burn model).
    Fast(FastNet),
    /// Bredon's WGSL kernels on a wgpu device.
    #[cfg(feature = "wgpu")]
    Wgsl(Box<bredon_kernels::wgsl::WgslNet>),
}

impl Engine {
    /// `model` for board `size`, run by `kind` (`Auto` resolved for the model's device).
    /// The WGSL kernels in an arithmetic other than single precision start only where the
    /// adapter runs it and it agrees with single precision on this model
    /// (`bredon_kernels::wgsl::WgslNet::for_search`); otherwise they run in single precision, and
    /// where they cannot run at all (no adapter, a network outside them) burn's forward
    /// pass does. A warning says why each time. The fast path runs in the precision
    /// chosen (`crate::precision::fast_net`: `auto` checks an 8-bit pass against f32 on
    /// this model first); a fallback is said once a process.
    pub fn new(model: TakNet, size: usize, kind: InferenceKind) -> Engine {
        match kind.resolve_for(&model.device()) {
            InferenceKind::Burn => Engine::Burn(model, size),
            #[cfg(feature = "wgpu")]
            InferenceKind::Wgsl(arithmetic) => match crate::gpu::wgsl_for_search(&model, size, arithmetic) {
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
            k => {
                let choice = match k {
                    InferenceKind::Fast(p) => p,
                    _ => PrecisionChoice::Exactly(Precision::F32),
                };
                let (net, fallback) = crate::precision::fast_net(&model.fold(size), choice);
                if let Some(why) = fallback {
                    crate::precision::warn_once(&why);
                }
                Engine::Fast(net)
            }
        }
    }

    /// Which path this is.
    pub fn kind(&self) -> InferenceKind {
        match self {
            Engine::Burn(..) => InferenceKind::Burn,
            Engine::Fast(f) => InferenceKind::fast(f.precision()),
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
        if let Engine::Fast(f) = self {
            // The logits of the legal moves only (the convolutional policy head then
            // skips the other outputs).
            let mut logits = Vec::new();
            let mut s = Scalars::default();
            f.forward_moves_into(positions, legal, &mut logits, &mut s);
            let (draws, margins) = (f.has_wdl().then_some(s.draws), f.has_margin().then_some(s.margins));
            return move_logits_to_evaluations(&logits, s.values, legal, draws, margins);
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
pub(crate) struct LegalGather {
    pub(crate) indices: TensorData,
    pub(crate) mask: TensorData,
    pub(crate) width: usize,
    /// Each position's number of legal moves.
    pub(crate) lens: Vec<usize>,
}

impl LegalGather {
    /// Widths are rounded up to a multiple of this, so that a run sees few shapes.
    const ROUND: usize = 32;

    pub(crate) fn new(legal: &[&[Move]], size: usize) -> LegalGather {
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
    pub(crate) fn priors(&self, logits: Tensor<2>, device: &Device) -> Tensor<2> {
        let indices = Tensor::<2, Int>::from_data(self.indices.clone(), device);
        let mask = Tensor::<2>::from_data(self.mask.clone(), device);
        softmax(logits.gather(1, indices) + mask, 1)
    }

    /// Each position's row of the priors read back, cut to its moves.
    pub(crate) fn split(&self, flat: &[f32]) -> Vec<Vec<f32>> {
        self.lens.iter().enumerate().map(|(i, &n)| flat[i * self.width..i * self.width + n].to_vec()).collect()
    }
}

/// Policy logits and values back to the host, in one read (one wait for the device).
pub(crate) fn read_back(logits: Tensor<2>, values: Tensor<2>) -> Result<(Vec<f32>, Vec<f32>), ExecutionError> {
    let mut data = Transaction::default().register(logits).register(values).try_execute()?.into_iter();
    let mut floats = || data.next().map(|d| d.try_into_vec::<f32>().expect("f32 outputs"));
    let (logits, values) = (floats(), floats());
    Ok((logits.expect("the logits read"), values.expect("the values read")))
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

pub(crate) fn to_evaluations(logits: &[f32], values: &[f32], legal: &[&[Move]], size: usize) -> Vec<Evaluation> {
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

/// Evaluations from the logits of each position's `legal` moves, one position after
/// another ([`FastNet::forward_moves_into`]): a softmax each, then as
/// [`priors_to_evaluations`].
pub(crate) fn move_logits_to_evaluations(
    logits: &[f32],
    values: Vec<f32>,
    legal: &[&[Move]],
    draws: Option<Vec<f32>>,
    margins: Option<Vec<f32>>,
) -> Vec<Evaluation> {
    assert_eq!(logits.len(), legal.iter().map(|m| m.len()).sum::<usize>(), "a logit for every legal move");
    let mut rest = logits;
    let priors = legal
        .iter()
        .map(|moves| {
            let (mine, tail) = rest.split_at(moves.len());
            rest = tail;
            bredon_netform::policy::softmax(mine.to_vec())
        })
        .collect();
    priors_to_evaluations(priors, values, draws, margins)
}

/// Evaluations from priors already over each position's legal moves (computed on the
/// device), the values, and the draw probabilities and margins where the network has them.
/// A row of priors that is not a distribution (a network that gave no finite logits)
/// becomes uniform, as on the host.
pub(crate) fn priors_to_evaluations(
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
pub(crate) fn with_scalars(evals: &mut [Evaluation], draws: Option<Vec<f32>>, margins: Option<Vec<f32>>) {
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
