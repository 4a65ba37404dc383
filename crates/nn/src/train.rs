//! The training step: policy cross-entropy against the search's visit distribution plus
//! value mean squared error against the game result (or, with a WDL head, cross-entropy
//! of the win/draw/loss logits), plus the optional auxiliary losses (flat margin and
//! ownership squared error, opponent-policy cross-entropy), optimised with Adam or
//! SGD+momentum.

use bredon_rules::{Move, Position};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::activation::log_softmax;

pub use crate::error::TrainError;
use crate::model::{Outputs, TakNet};
use crate::optim::FlatOptimizer;
pub use crate::optim::{OptimizerKind, OptimizerSettings, WeightDecayMode};
use crate::rows::Convolutions;
use bredon_netform::config::NetConfig;
use bredon_netform::encoding::{encode, input_len, planes};
use bredon_netform::limits::check_input_version;
use bredon_netform::policy::move_to_index;

/// One training example: a position and its targets.
#[derive(Clone, Debug)]
pub struct TrainExample {
    /// The position (encoded at training time).
    pub position: Position,
    /// Target probability of moves (the normalised visit counts).
    pub policy: Vec<(Move, f32)>,
    /// Value target for the side to move, from −1 to +1: the game outcome, or a blend of
    /// it with the search's value.
    pub value: f32,
    /// Win/draw/loss target of a WDL head (sums to 1); `None` derives it from `value`:
    /// win `max(v, 0)`, loss `max(−v, 0)`, draw `1 − |v|` (one-hot for an outcome).
    pub wdl: Option<[f32; 3]>,
    /// Targets of the auxiliary heads (used only by a network with `aux`).
    pub aux: AuxTargets,
}

/// The win/draw/loss split with expectation `v` and the least draw mass that allows:
/// win `max(v, 0)`, draw `1 − |v|`, loss `max(−v, 0)` (one-hot for −1, 0, +1).
pub fn wdl_of_value(v: f32) -> [f32; 3] {
    [v.max(0.0), 1.0 - v.abs(), (-v).max(0.0)]
}

/// Targets of the auxiliary heads; `None` leaves the example out of that loss.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AuxTargets {
    /// Final flat margin for the side to move, komi included, divided by N².
    pub flat_margin: Option<f32>,
    /// Final owner of each square (`row * N + col`): +1 the side to move's top piece, −1
    /// the opponent's, 0 empty.
    pub ownership: Option<Vec<f32>>,
    /// The policy target of the next ply (the opponent's move), if it has one.
    pub opponent_policy: Option<Vec<(Move, f32)>>,
}

/// Mean losses of one step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Losses {
    /// Policy cross-entropy.
    pub policy: f64,
    /// Value mean squared error (of P(win) − P(loss) with a WDL head).
    pub value: f64,
    /// Win/draw/loss cross-entropy (0 without a WDL head).
    pub wdl: f64,
    /// Flat margin squared error (0 without auxiliary heads).
    pub flat_margin: f64,
    /// Ownership squared error, per square (0 without auxiliary heads).
    pub ownership: f64,
    /// Opponent policy cross-entropy (0 without auxiliary heads).
    pub opponent_policy: f64,
    /// Weighted total that was minimised.
    pub total: f64,
    /// Mean entropy of the predicted policy (over all outputs).
    pub entropy: f64,
}

impl Losses {
    /// Every field, in declaration order (for sums and scaling).
    fn fields_mut(&mut self) -> [&mut f64; 8] {
        [
            &mut self.policy,
            &mut self.value,
            &mut self.wdl,
            &mut self.flat_margin,
            &mut self.ownership,
            &mut self.opponent_policy,
            &mut self.total,
            &mut self.entropy,
        ]
    }
}

impl std::ops::AddAssign<&Losses> for Losses {
    fn add_assign(&mut self, other: &Losses) {
        let mut other = *other;
        for (a, b) in self.fields_mut().into_iter().zip(other.fields_mut()) {
            *a += *b;
        }
    }
}

/// Losses summed over training steps, giving their mean.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LossSum {
    sum: Losses,
    steps: usize,
}

impl LossSum {
    /// Adds one step's losses.
    pub fn add(&mut self, step: &Losses) {
        self.sum += step;
        self.steps += 1;
    }

    /// Steps added.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// The mean over the steps added (all zero when none were).
    pub fn mean(&self) -> Losses {
        let mut mean = self.sum;
        let n = self.steps.max(1) as f64;
        for field in mean.fields_mut() {
            *field /= n;
        }
        mean
    }
}

/// What a training step did.
#[derive(Clone, Debug, PartialEq)]
pub enum StepOutcome {
    /// The weights were updated.
    Trained(Losses),
    /// The loss or a gradient was NaN or infinite: the parameters and the optimiser
    /// state are as before the step. The reason names what was non-finite.
    Skipped(String),
}

/// A network being trained, with its optimiser.
pub struct Trainer {
    /// Architecture (size set).
    pub config: NetConfig,
    pub(crate) model: Option<TakNet>,
    pub(crate) optim: FlatOptimizer,
    settings: OptimizerSettings,
    device: Device,
    /// How the step computes the convolutions (resolved on `device`).
    convolutions: Convolutions,
}

/// Encodes positions in `input_version` into one input tensor on `device`.
pub fn encode_batch<'a>(
    positions: impl ExactSizeIterator<Item = &'a Position>,
    input_version: u32,
    size: usize,
    device: &Device,
) -> Tensor<4> {
    Tensor::from_data(encode_planes(positions, input_version, size), device)
}

/// Encodes positions in `input_version` into the input planes on the host,
/// `[B, planes, N, N]`: [`encode_batch`] without the copy to a device.
pub fn encode_planes<'a>(
    positions: impl ExactSizeIterator<Item = &'a Position>,
    input_version: u32,
    size: usize,
) -> TensorData {
    let b = positions.len();
    let len = input_len(input_version, size);
    let mut data = vec![0.0f32; b * len];
    for (i, p) in positions.enumerate() {
        encode(p, input_version, &mut data[i * len..(i + 1) * len]);
    }
    TensorData::new(data, [b, planes(input_version), size, size])
}

impl Trainer {
    /// A new randomly initialised network on the CPU. `seed` makes the initialisation
    /// repeatable.
    pub fn new(config: &NetConfig, settings: OptimizerSettings, seed: u64) -> Result<Trainer, TrainError> {
        Trainer::new_on(config, settings, seed, &crate::device::cpu())
    }

    /// [`Trainer::new`] on `device`.
    pub fn new_on(
        config: &NetConfig,
        settings: OptimizerSettings,
        seed: u64,
        device: &Device,
    ) -> Result<Trainer, TrainError> {
        if !(3..=8).contains(&config.size) {
            return Err(TrainError::BadSize(config.size));
        }
        check_input_version(config.input_version)?;
        // Every field within what a model file may hold, and consistent (pooled channels
        // among the channels, say): a network that could not be saved is not built.
        bredon_netform::limits::check_meta(
            config.size,
            config.input_version,
            bredon_netform::policy::policy_size(config.size),
            config,
        )?;
        let device = device.clone().autodiff();
        let model = TakNet::seeded(config, &device, seed);
        let optim = FlatOptimizer::new(&settings, &model);
        let convolutions = Convolutions::Auto.on(&device);
        Ok(Trainer { config: config.clone(), model: Some(model), optim, settings, device, convolutions })
    }

    /// Wraps a loaded model (its optimiser state starts fresh unless loaded separately),
    /// trained on the device it is on.
    pub fn from_model(config: &NetConfig, model: TakNet, settings: OptimizerSettings) -> Result<Trainer, TrainError> {
        let device = model.device();
        Trainer::from_model_on(config, model, settings, &device)
    }

    /// [`Trainer::from_model`] on `device` (the model is moved there).
    pub fn from_model_on(
        config: &NetConfig,
        model: TakNet,
        settings: OptimizerSettings,
        device: &Device,
    ) -> Result<Trainer, TrainError> {
        let device = device.clone().autodiff();
        let model = model.to_device(&device).train();
        let optim = FlatOptimizer::new(&settings, &model);
        let convolutions = Convolutions::Auto.on(&device);
        Ok(Trainer { config: config.clone(), model: Some(model), optim, settings, device, convolutions })
    }

    /// How the step computes the network's convolutions ([`Convolutions::Auto`], the
    /// default: burn's `conv2d`, the faster on every device measured). Either gives
    /// the same losses and gradients; only the kernels differ.
    pub fn set_convolutions(&mut self, convolutions: Convolutions) {
        self.convolutions = convolutions.on(&self.device);
    }

    /// How the step computes the convolutions on this trainer's device (never `Auto`).
    pub fn convolutions(&self) -> Convolutions {
        self.convolutions
    }

    /// The current weights as an inference model (on the training device, eval mode).
    pub fn model(&self) -> TakNet {
        self.model.as_ref().expect("model present").valid()
    }

    /// Saves the optimiser state (e.g. Adam moments) to `path`, in burn's optimiser
    /// record layout (so burn's `ModuleOptimizer` reads it too).
    pub fn save_optimizer(&self, path: &std::path::Path) -> Result<(), TrainError> {
        self.optim.save(path)
    }

    /// Loads optimiser state saved by [`Trainer::save_optimizer`] (or by burn's
    /// `ModuleOptimizer`, as runs did before the flat optimiser).
    pub fn load_optimizer(&mut self, path: &std::path::Path) -> Result<(), TrainError> {
        self.optim.load(path)
    }

    /// One optimisation step on `batch` at learning rate `lr`; an error if the step had
    /// to be skipped (see [`Trainer::try_step`]).
    pub fn step(&mut self, batch: &[TrainExample], lr: f64) -> Result<Losses, TrainError> {
        match self.try_step(batch, lr)? {
            StepOutcome::Trained(l) => Ok(l),
            StepOutcome::Skipped(why) => Err(TrainError::Skipped(why)),
        }
    }

    /// One optimisation step on `batch` at learning rate `lr`. A non-finite loss or
    /// gradient, or a non-finite learning rate, leaves the parameters and the optimiser
    /// state untouched and returns [`StepOutcome::Skipped`] (the forward pass has still
    /// updated the batch-norm running statistics, as every training-mode forward does).
    pub fn try_step(&mut self, batch: &[TrainExample], lr: f64) -> Result<StepOutcome, TrainError> {
        // Trained weights and their gradients hold denormal floats, which x86 computes in
        // microcode: flushing them to zero makes a step of a trained 6x6 network faster.
        let _flush = bredon_netform::denormals::FlushDenormalsInPool::new();
        self.step_flushed(batch, lr, &mut PhaseProbe::default())
    }

    /// [`Trainer::try_step`], waiting for the device at the end of each [`StepPhase`] and
    /// then calling `at_end(phase)`, so that a benchmark can time each phase on its own
    /// (`bredon bench train` prints them). The waits make the step slower than
    /// [`Trainer::try_step`]'s, whose device runs ahead of the host; the step itself is
    /// the same.
    pub fn try_step_probed(
        &mut self,
        batch: &[TrainExample],
        lr: f64,
        at_end: &mut dyn FnMut(StepPhase),
    ) -> Result<StepOutcome, TrainError> {
        let _flush = bredon_netform::denormals::FlushDenormalsInPool::new();
        let mut probe = PhaseProbe { device: Some(self.device.clone()), at_end: Some(at_end) };
        self.step_flushed(batch, lr, &mut probe)
    }

    /// [`Trainer::try_step`]'s work, with denormals flushed.
    ///
    /// Built for a device that runs ahead of the host: the policy targets go up sparse
    /// (each example's moves and probabilities, gathered against the log-softmax on the
    /// device, instead of a dense `policy_size(N)` row per example: 9,180 floats on 6x6),
    /// and the losses and the gradients' finiteness come back in one read after the
    /// backward pass. Every read is a wait for the device, and one per loss and one per
    /// parameter (about 80 a step) kept a GPU idle most of the step.
    fn step_flushed(
        &mut self,
        batch: &[TrainExample],
        lr: f64,
        probe: &mut PhaseProbe<'_>,
    ) -> Result<StepOutcome, TrainError> {
        let n = self.config.size;
        check_batch(batch, n)?;
        let b = batch.len();
        let x = encode_batch(batch.iter().map(|e| &e.position), self.config.input_version, n, &self.device);
        let z: Vec<f32> = batch.iter().map(|e| e.value).collect();
        let pi = PolicyTargets::new(batch.iter().map(|e| e.policy.as_slice()), n, &self.device);
        let z_t = Tensor::<2>::from_data(TensorData::new(z, [b, 1]), &self.device);
        probe.end(StepPhase::Prepare)?;
        // The model stays in the trainer until the update replaces it, so a step that
        // stops early (skipped, or a device error) leaves the trainer whole.
        let model = self.model.as_ref().expect("model present");
        let out = model.forward_with(x, Outputs::All, self.convolutions);
        let logp = log_softmax(out.policy, 1);
        let policy_loss = pi.cross_entropy_sum(logp.clone(), &self.device).div_scalar(b as f32);
        let diff = out.value - z_t;
        let value_loss = (diff.clone() * diff).mean();
        let s = &self.settings;
        let mut total = policy_loss.clone();
        // What is read back after the backward pass, in this order.
        let mut read = LossReads::default();
        let (policy_at, value_at) = (read.push("policy", &policy_loss), read.push("value", &value_loss));
        let mut extra = Vec::new();
        if let Some(wdl) = out.wdl {
            // Soft target (win, draw, loss) with expectation `value`.
            let t: Vec<f32> = batch.iter().flat_map(|e| e.wdl.unwrap_or_else(|| wdl_of_value(e.value))).collect();
            let t = Tensor::<2>::from_data(TensorData::new(t, [b, 3]), &self.device);
            let ce = (t * log_softmax(wdl, 1)).sum_dim(1).mean().neg();
            extra.push((LossKind::Wdl, read.push("wdl", &ce)));
            total = total + ce.mul_scalar(s.wdl_loss_weight);
        } else {
            total = total + value_loss.clone().mul_scalar(s.value_loss_weight);
        }
        if let (Some(margin), Some(own), Some(opp)) = (out.flat_margin, out.ownership, out.opponent_policy) {
            let area = n * n;
            // Flat margin: squared error over the examples that have a target.
            let (mut m_t, mut m_mask) = (vec![0.0f32; b], vec![0.0f32; b]);
            let (mut o_t, mut o_mask) = (vec![0.0f32; b * area], vec![0.0f32; b * area]);
            let (mut m_n, mut o_n, mut q_n) = (0usize, 0usize, 0usize);
            for (i, e) in batch.iter().enumerate() {
                if let Some(m) = e.aux.flat_margin {
                    m_t[i] = m;
                    m_mask[i] = 1.0;
                    m_n += 1;
                }
                if let Some(o) = &e.aux.ownership {
                    o_t[i * area..(i + 1) * area].copy_from_slice(o);
                    o_mask[i * area..(i + 1) * area].fill(1.0);
                    o_n += 1;
                }
                q_n += usize::from(e.aux.opponent_policy.is_some());
            }
            let t2 = |v: Vec<f32>, cols: usize| Tensor::<2>::from_data(TensorData::new(v, [b, cols]), &self.device);
            if m_n > 0 {
                let d = (margin - t2(m_t, 1)) * t2(m_mask, 1);
                let l = (d.clone() * d).sum().div_scalar(m_n as f32);
                extra.push((LossKind::FlatMargin, read.push("flat margin", &l)));
                total = total + l.mul_scalar(s.flat_margin_loss_weight);
            }
            if o_n > 0 {
                let d = (own - t2(o_t, area)) * t2(o_mask, area);
                let l = (d.clone() * d).sum().div_scalar((o_n * area) as f32);
                extra.push((LossKind::Ownership, read.push("ownership", &l)));
                total = total + l.mul_scalar(s.ownership_loss_weight);
            }
            if q_n > 0 {
                let none: &[(Move, f32)] = &[];
                let q = PolicyTargets::new(
                    batch.iter().map(|e| e.aux.opponent_policy.as_deref().unwrap_or(none)),
                    n,
                    &self.device,
                );
                let l = q.cross_entropy_sum(log_softmax(opp, 1), &self.device).div_scalar(q_n as f32);
                extra.push((LossKind::OpponentPolicy, read.push("opponent policy", &l)));
                total = total + l.mul_scalar(s.opponent_policy_loss_weight);
            }
        }
        let entropy = (logp.clone().exp() * logp).sum_dim(1).mean().neg();
        let (total_at, entropy_at) = (read.push("total", &total), read.push("entropy", &entropy));
        probe.end(StepPhase::Forward)?;
        let grads = GradientsParams::from_grads(total.backward(), model);
        // Every gradient laid end to end for the optimiser, and one number that says
        // whether they are all finite: the sum of all their elements (a NaN or an infinity
        // anywhere makes it non-finite), read with the losses. Only a step that fails it
        // looks for the culprit.
        let flat = self.optim.flatten(model, &grads)?;
        let (values, grad_sum) = read.execute(vec![flat.sum()])?;
        probe.end(StepPhase::Backward)?;
        let mut losses = Losses {
            policy: values[policy_at],
            value: values[value_at],
            total: values[total_at],
            entropy: values[entropy_at],
            ..Losses::default()
        };
        for &(kind, at) in &extra {
            let v = values[at];
            match kind {
                LossKind::Wdl => losses.wdl = v,
                LossKind::FlatMargin => losses.flat_margin = v,
                LossKind::Ownership => losses.ownership = v,
                LossKind::OpponentPolicy => losses.opponent_policy = v,
            }
        }
        if !(losses.total.is_finite() && losses.policy.is_finite() && losses.value.is_finite())
            || extra.iter().any(|&(_, at)| !values[at].is_finite())
        {
            let extra: String = extra.iter().map(|&(_, at)| format!(", {} {}", read.names[at], values[at])).collect();
            return Ok(StepOutcome::Skipped(format!(
                "non-finite loss (policy {}, value {}{extra})",
                losses.policy, losses.value
            )));
        }
        if !lr.is_finite() {
            return Ok(StepOutcome::Skipped(format!("non-finite learning rate {lr}")));
        }
        if grad_sum.iter().any(|v| !v.is_finite()) {
            let why = match first_non_finite_gradient(model, &grads)? {
                Some(name) => format!("non-finite gradient of `{name}`"),
                None => "the gradients' sum overflowed (every gradient finite, their sum not)".to_string(),
            };
            return Ok(StepOutcome::Skipped(why));
        }
        let weights = self.optim.weights(model)?;
        let model = self.model.take().expect("model present");
        self.model = Some(self.optim.update(lr, model, flat, weights));
        probe.end(StepPhase::Update)?;
        Ok(StepOutcome::Trained(losses))
    }
}

/// The parts of a training step, in the order they run ([`Trainer::try_step_probed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepPhase {
    /// The batch's input planes encoded on the host, its targets built, both uploaded.
    Prepare,
    /// The forward pass and the losses.
    Forward,
    /// The backward pass, every gradient laid end to end in one flat tensor, its sum
    /// (finite exactly when every gradient is), and the one read of the losses and that sum.
    Backward,
    /// The optimiser's update of every parameter, once over the flat tensors.
    Update,
}

impl StepPhase {
    /// Every phase, in order.
    pub const ALL: [StepPhase; 4] = [StepPhase::Prepare, StepPhase::Forward, StepPhase::Backward, StepPhase::Update];

    /// Its name in benchmark tables.
    pub fn name(self) -> &'static str {
        match self {
            StepPhase::Prepare => "prepare",
            StepPhase::Forward => "forward",
            StepPhase::Backward => "backward",
            StepPhase::Update => "update",
        }
    }
}

/// The phase boundaries of a probed step: a wait for the device, then the caller's
/// callback. A plain step's probe has neither and costs nothing.
#[derive(Default)]
struct PhaseProbe<'a> {
    device: Option<Device>,
    at_end: Option<&'a mut dyn FnMut(StepPhase)>,
}

impl PhaseProbe<'_> {
    fn end(&mut self, phase: StepPhase) -> Result<(), TrainError> {
        if let Some(device) = &self.device {
            device.sync()?;
        }
        if let Some(at_end) = self.at_end.as_mut() {
            at_end(phase);
        }
        Ok(())
    }
}

/// The auxiliary losses a step may have.
#[derive(Clone, Copy)]
enum LossKind {
    Wdl,
    FlatMargin,
    Ownership,
    OpponentPolicy,
}

/// The scalars a training step reads back, gathered so that one read brings them all.
#[derive(Default)]
struct LossReads {
    names: Vec<&'static str>,
    tensors: Vec<Tensor<1>>,
}

impl LossReads {
    /// Registers a scalar loss (detached from the graph); its index in the values read.
    fn push(&mut self, name: &'static str, loss: &Tensor<1>) -> usize {
        self.names.push(name);
        self.tensors.push(loss.clone().detach().inner());
        self.tensors.len() - 1
    }

    /// One read of the losses and of `extra` one-element tensors (the gradients' sum):
    /// the losses, then the extra values.
    fn execute(&self, extra: Vec<Tensor<1>>) -> Result<(Vec<f64>, Vec<f32>), TrainError> {
        let n = self.tensors.len();
        let data = read_scalars(self.tensors.iter().cloned().chain(extra).collect())?;
        let values = data[..n].iter().map(|&v| v as f64).collect();
        Ok((values, data[n..].to_vec()))
    }
}

/// The policy targets of a batch, in the form that suits the device: on a GPU sparse (per
/// example the policy indices of its moves and their probabilities, padded to the batch's
/// widest example with index 0 and probability 0, gathered against the log-softmax on
/// the device), so that a few hundred numbers go up per example instead of a dense row of
/// `policy_size(N)`; on the CPU dense (built in place, one multiply; the gather's
/// backward, a scatter, costs the CPU more than the row it saves).
enum PolicyTargets {
    Dense(TensorData),
    Sparse { indices: TensorData, probs: TensorData },
}

impl PolicyTargets {
    /// The form for `device`: dense on the CPU, sparse elsewhere.
    fn new<'a>(
        rows: impl ExactSizeIterator<Item = &'a [(Move, f32)]> + Clone,
        size: usize,
        device: &Device,
    ) -> PolicyTargets {
        if crate::device::is_cpu(device) { PolicyTargets::dense(rows, size) } else { PolicyTargets::sparse(rows, size) }
    }

    /// A dense row of `policy_size(size)` per example (a move listed twice adds up).
    fn dense<'a>(rows: impl ExactSizeIterator<Item = &'a [(Move, f32)]>, size: usize) -> PolicyTargets {
        let (b, p) = (rows.len(), bredon_netform::policy::policy_size(size));
        let mut dense = vec![0.0f32; b * p];
        for (i, row) in rows.enumerate() {
            for &(mv, q) in row {
                dense[i * p + move_to_index(mv, size)] += q;
            }
        }
        PolicyTargets::Dense(TensorData::new(dense, [b, p]))
    }

    /// Per example its moves' indices and probabilities, padded to the widest example.
    fn sparse<'a>(rows: impl ExactSizeIterator<Item = &'a [(Move, f32)]> + Clone, size: usize) -> PolicyTargets {
        let b = rows.len();
        let width = rows.clone().map(|r| r.len()).max().unwrap_or(0).max(1);
        let mut indices = vec![0i32; b * width];
        let mut probs = vec![0.0f32; b * width];
        for (i, row) in rows.enumerate() {
            for (j, &(mv, q)) in row.iter().enumerate() {
                indices[i * width + j] = move_to_index(mv, size) as i32;
                probs[i * width + j] = q;
            }
        }
        PolicyTargets::Sparse {
            indices: TensorData::new(indices, [b, width]),
            probs: TensorData::new(probs, [b, width]),
        }
    }

    /// `-sum(target * logp)` over the batch (the sum of the examples' cross-entropies),
    /// from the log-probabilities `[batch, policy_size]`.
    fn cross_entropy_sum(&self, logp: Tensor<2>, device: &Device) -> Tensor<1> {
        match self {
            PolicyTargets::Dense(dense) => (Tensor::<2>::from_data(dense.clone(), device) * logp).sum().neg(),
            PolicyTargets::Sparse { indices, probs } => {
                let indices = Tensor::<2, Int>::from_data(indices.clone(), device);
                let probs = Tensor::<2>::from_data(probs.clone(), device);
                (logp.gather(1, indices) * probs).sum().neg()
            }
        }
    }
}

/// Checks, before anything is computed (and before the model is taken out of the
/// trainer), that every example of `batch` fits a network of `size`.
fn check_batch(batch: &[TrainExample], size: usize) -> Result<(), TrainError> {
    if batch.is_empty() {
        return Err(TrainError::EmptyBatch);
    }
    for (index, e) in batch.iter().enumerate() {
        if e.position.size() != size {
            return Err(TrainError::ExampleSize { index, found: e.position.size(), size });
        }
        if let Some(o) = &e.aux.ownership
            && o.len() != size * size
        {
            return Err(TrainError::OwnershipSize { index, found: o.len(), size });
        }
    }
    Ok(())
}

/// One-element tensors read back together, in order (one wait for the device).
fn read_scalars(tensors: Vec<Tensor<1>>) -> Result<Vec<f32>, TrainError> {
    if tensors.is_empty() {
        return Ok(Vec::new());
    }
    let data = Tensor::cat(tensors, 0).try_into_data()?.convert::<f32>();
    Ok(data.try_into_vec::<f32>().expect("f32 after the conversion"))
}

/// The name of the first parameter (in the module's order) whose gradient holds a NaN or
/// an infinity, or `None` when all are finite. One read; run only for a step whose
/// gradients' sum was not finite.
fn first_non_finite_gradient(model: &TakNet, grads: &GradientsParams) -> Result<Option<String>, TrainError> {
    let mut check = GradCheck { grads, path: Vec::new(), names: Vec::new(), finite: Vec::new() };
    model.visit(&mut check);
    let finite = read_scalars(check.finite)?;
    Ok(finite.iter().position(|&ok| ok < 0.5).map(|i| check.names.swap_remove(i)))
}

/// Collects, per parameter with a gradient, its name and whether the gradient is finite
/// (a one-element tensor, 1 or 0, left on the device).
struct GradCheck<'a> {
    grads: &'a GradientsParams,
    path: Vec<String>,
    names: Vec<String>,
    finite: Vec<Tensor<1>>,
}

impl burn::module::ModuleVisitor for GradCheck<'_> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<D>>) {
        if let Some(g) = self.grads.get::<D>(param.id) {
            self.names.push(self.path.join("."));
            self.finite.push(g.is_finite().all().float());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bredon_netform::policy::policy_size;

    /// The gradients' sum is finite exactly while every gradient is; a poisoned one makes
    /// it NaN, and the slow path names that parameter.
    #[test]
    fn a_non_finite_gradient_is_caught_by_the_sum_and_named() {
        let cfg =
            NetConfig { size: 3, blocks: 1, channels: 8, value_hidden: 8, policy_filters: 2, ..NetConfig::default() };
        let device = crate::device::cpu().autodiff();
        let model = TakNet::new(&cfg, &device);
        let x = encode_batch([Position::new(3).unwrap()].iter(), cfg.input_version, 3, &device);
        let (p, v) = model.forward(x);
        let mut grads = GradientsParams::from_grads((p.sum() + v.sum()).backward(), &model);
        let optim = FlatOptimizer::new(&OptimizerSettings::default(), &model);
        let sum_of = |grads: &GradientsParams| read_scalars(vec![optim.flatten(&model, grads).unwrap().sum()]).unwrap();
        let clean = sum_of(&grads);
        assert!(clean.len() == 1 && clean[0].is_finite(), "{clean:?}");
        assert_eq!(first_non_finite_gradient(&model, &grads).unwrap(), None);
        for poison in [f32::NAN, f32::INFINITY] {
            let id = model.blocks[0].conv2.weight.id;
            let g: Tensor<4> = grads.remove(id).unwrap();
            grads.register(id, g.clone().slice_fill([0..1, 0..1, 0..1, 0..1], poison));
            assert!(!sum_of(&grads)[0].is_finite(), "a {poison} in one gradient must show in the sum");
            assert_eq!(first_non_finite_gradient(&model, &grads).unwrap().as_deref(), Some("blocks.0.conv2.weight"));
            grads.register(id, g);
        }
    }

    /// Both forms of the policy targets give the dense formula's cross-entropy: rows of
    /// different lengths (the padding counts for nothing), a move listed twice, an empty row.
    #[test]
    fn both_forms_of_policy_targets_give_the_same_cross_entropy() {
        let size = 4;
        let device = crate::device::cpu();
        let positions: Vec<Position> = ["", "a1 d4 b2", "a1 d4 b2 c3 Sb3 d2"]
            .iter()
            .map(|ptn| {
                let mut pos = Position::new(size).unwrap();
                for m in ptn.split_whitespace() {
                    pos.play(bredon_rules::notation::ptn::parse_move(m, size).unwrap()).unwrap();
                }
                pos
            })
            .collect();
        let rows: Vec<Vec<(Move, f32)>> =
            vec![positions[0].legal_moves().iter().map(|&m| (m, 1.0 / 16.0)).take(16).collect(), vec![], {
                let moves = positions[2].legal_moves();
                vec![(moves[0], 0.5), (moves[3], 0.25), (moves[0], 0.25)]
            }];
        let p = policy_size(size);
        let logits: Vec<f32> = (0..rows.len() * p).map(|i| ((i * 7919) % 113) as f32 / 17.0 - 3.0).collect();
        let logp = log_softmax(Tensor::<2>::from_data(TensorData::new(logits, [rows.len(), p]), &device), 1);
        let mut dense = vec![0.0f32; rows.len() * p];
        for (i, row) in rows.iter().enumerate() {
            for &(mv, q) in row {
                dense[i * p + move_to_index(mv, size)] += q;
            }
        }
        let dense = Tensor::<2>::from_data(TensorData::new(dense, [rows.len(), p]), &device);
        let want = (dense * logp.clone()).sum().neg().into_scalar::<f32>();
        assert!(want > 1.0, "{want}");
        // The CPU's form (dense), and the GPU's (sparse), both run here on the CPU.
        let cpu = PolicyTargets::new(rows.iter().map(|r| r.as_slice()), size, &device);
        assert!(matches!(cpu, PolicyTargets::Dense(_)));
        let sparse = PolicyTargets::sparse(rows.iter().map(|r| r.as_slice()), size);
        assert!(matches!(sparse, PolicyTargets::Sparse { .. }));
        for (form, targets) in [("dense", cpu), ("sparse", sparse)] {
            let got = targets.cross_entropy_sum(logp.clone(), &device).into_scalar::<f32>();
            assert!((got - want).abs() <= 1e-5 * want.abs(), "{form} {got}, by hand {want}");
        }
    }
}
