//! The optimiser: Adam, or SGD with momentum, over every parameter of the network at
//! once.
//!
//! burn's optimisers update one parameter tensor at a time: about a dozen elementwise
//! operations each, so on a GPU, where burn launches one kernel per operation, a step of
//! the shipped 6x6 network spent about 1,000 of its 2,400 kernel launches on the update
//! (docs/gpu.md). Here the parameters and their gradients are laid end to end in one flat
//! tensor each (a copy per parameter), the moments live in flat tensors of the same
//! layout, and the update is the same dozen operations once. The arithmetic is burn's,
//! operation for operation (`AdamConfig` with weight decay, `SgdConfig` with momentum and
//! no dampening), so a step gives the same weights to the bit on the CPU (a test trains
//! both side by side), and the state is saved in burn's own file layout, so a run's
//! `optimizer.bpk` reads both ways.
//!
//! Each parameter starts at a multiple of [`ALIGN`] elements in the flat tensors, so that
//! the new weights are handed back to the network as views of the flat result, not copies:
//! burn's GPU backends slice a range whose start and end are both on the device's storage
//! alignment as a view, and copy the others (on lavapipe 5 of the 86 tensors of the shipped
//! 6x6 network, small ones whose size is not a multiple of the alignment).

use std::collections::BTreeMap;
use std::path::Path;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::prelude::*;

use crate::error::{TrainError, optimizer_error};
use crate::model::TakNet;

/// The optimiser's algorithm (`adam` or `sgd` in configs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    /// Adam.
    #[default]
    Adam,
    /// Stochastic gradient descent with momentum 0.9.
    Sgd,
}

/// Optimiser settings.
#[derive(Clone, Debug, PartialEq)]
pub struct OptimizerSettings {
    /// The algorithm.
    pub kind: OptimizerKind,
    /// Weight decay's factor.
    pub weight_decay: f64,
    /// How weight decay enters the update.
    pub decay_mode: WeightDecayMode,
    /// Whether the one-dimensional parameters (BatchNorm scales and shifts, biases) are
    /// decayed too, or only the convolutions' and dense layers' weights.
    pub decay_vectors: bool,
    /// Weight of the value loss (the squared error; not used with a WDL head).
    pub value_loss_weight: f64,
    /// Weight of the win/draw/loss cross-entropy (WDL head only).
    pub wdl_loss_weight: f64,
    /// Weight of the flat margin loss (auxiliary heads only).
    pub flat_margin_loss_weight: f64,
    /// Weight of the ownership loss (auxiliary heads only).
    pub ownership_loss_weight: f64,
    /// Weight of the opponent policy loss (auxiliary heads only).
    pub opponent_policy_loss_weight: f64,
}

impl Default for OptimizerSettings {
    fn default() -> Self {
        OptimizerSettings {
            kind: OptimizerKind::Adam,
            weight_decay: WeightDecayMode::default().default_factor(),
            decay_mode: WeightDecayMode::default(),
            decay_vectors: false,
            value_loss_weight: 1.0,
            wdl_loss_weight: 1.0,
            flat_margin_loss_weight: 0.5,
            ownership_loss_weight: 0.5,
            opponent_policy_loss_weight: 0.15,
        }
    }
}

/// How weight decay enters an update (`[train] weight_decay_mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightDecayMode {
    /// L2: `weight_decay · w` added to the gradient before the optimiser's step (what
    /// every model up to gen-0262 trained with). Under Adam a parameter whose gradient is
    /// zero (a channel a ReLU switched off) then takes full-size steps toward zero.
    L2,
    /// Decoupled (AdamW, Loshchilov and Hutter 2019): `w ← w − lr · weight_decay · w`
    /// beside the optimiser's step, not scaled by Adam's moments. The default since issue 71
    /// (the 6x6 run kept every unit alive with it for 150 generations and gained +100 Elo).
    #[default]
    Decoupled,
}

impl WeightDecayMode {
    /// The weight decay factor a config gets when it names the mode but not the factor:
    /// 1e-4 for L2 (the old default), 0.1 for decoupled (AdamW's usual size, `lr · 0.1` of
    /// each weight a step). The two are on different scales, so one shared default would be
    /// wrong for one of them.
    pub fn default_factor(self) -> f64 {
        match self {
            WeightDecayMode::L2 => 1e-4,
            WeightDecayMode::Decoupled => 0.1,
        }
    }
}

/// Elements between parameter starts in the flat tensors: 256 bytes of `f32`, the widest
/// storage-offset alignment of the GPU backends, so that every parameter's range is a view.
pub(crate) const ALIGN: usize = 64;

/// Adam's constants (burn's `AdamConfig` defaults, which Bredon has always trained with).
const BETA_1: f32 = 0.9;
const BETA_2: f32 = 0.999;
const EPSILON: f32 = 1e-5;
/// SGD's momentum (no dampening, no Nesterov).
const MOMENTUM: f32 = 0.9;
const DAMPENING: f64 = 0.0;

/// One parameter's place in the flat tensors.
#[derive(Clone, Debug)]
struct Slot {
    id: ParamId,
    /// Its path in the module (`blocks.0.conv1.weight`), as burn's record names it.
    path: String,
    dims: Vec<usize>,
    offset: usize,
    len: usize,
    /// Steps this parameter has been updated: Adam's bias-correction time; for SGD, more
    /// than zero once it has a velocity. Zero means no state (the moments are zero).
    steps: u64,
}

/// The optimiser of a [`crate::Trainer`]: its state, laid out flat for one network.
pub(crate) struct FlatOptimizer {
    kind: OptimizerKind,
    weight_decay: f32,
    decay_mode: WeightDecayMode,
    /// 1 where a parameter is decayed, 0 elsewhere; `None` when every parameter is.
    decay_mask: Option<Tensor<1>>,
    slots: Vec<Slot>,
    total: usize,
    /// The device of the (non-autodiff) tensors.
    device: Device,
    /// Adam's first moment, or SGD's velocity; `None` while every slot's state is zero.
    first: Option<Tensor<1>>,
    /// Adam's second moment.
    second: Option<Tensor<1>>,
    /// The flat weights the last update handed back to the network as views, while every
    /// trained parameter is such a view (the next update then needs no copies of them).
    weights: Option<Tensor<1>>,
}

/// Every trained parameter's weights laid out flat.
pub(crate) struct FlatWeights(Tensor<1>);

/// Every parameter's gradient laid out flat (zero where a parameter has none, and in the
/// gaps between parameters), and which parameters had one.
pub(crate) struct FlatGradients {
    flat: Tensor<1>,
    present: Vec<bool>,
}

impl FlatGradients {
    /// The sum of every gradient's elements (one element, left on the device): not finite
    /// exactly when some gradient holds a NaN or an infinity, or the sum overflows.
    pub(crate) fn sum(&self) -> Tensor<1> {
        self.flat.clone().sum()
    }
}

impl FlatOptimizer {
    /// A fresh optimiser (no state) for `model`'s parameters.
    pub(crate) fn new(settings: &OptimizerSettings, model: &TakNet) -> FlatOptimizer {
        let mut layout = Layout::default();
        model.visit(&mut layout);
        let device = layout.device.unwrap_or_else(|| model.device());
        let decay_mask = (!settings.decay_vectors).then(|| {
            let mut mask = vec![0.0f32; layout.total];
            for slot in layout.slots.iter().filter(|s| s.dims.len() >= 2) {
                mask[slot.offset..slot.offset + slot.len].fill(1.0);
            }
            Tensor::<1>::from_data(TensorData::new(mask, [layout.total]), &device)
        });
        FlatOptimizer {
            kind: settings.kind,
            weight_decay: settings.weight_decay as f32,
            decay_mode: settings.decay_mode,
            decay_mask,
            slots: layout.slots,
            total: layout.total,
            device,
            first: None,
            second: None,
            weights: None,
        }
    }

    /// Forgets the state of the elements a revival rewrote (`crate::revive`; by parameter
    /// path, the element indices within it): their
    /// moments (or velocity) become zero, as a new weight's are, and the next update
    /// reads the network's weights afresh. An error names a parameter this optimiser
    /// does not have.
    pub(crate) fn forget(&mut self, touched: &[(String, Vec<usize>)]) -> Result<(), TrainError> {
        self.weights = None;
        if self.first.is_none() && self.second.is_none() {
            return Ok(());
        }
        let mut keep = vec![1.0f32; self.total];
        for (path, elements) in touched {
            let slot = self.slots.iter().find(|s| &s.path == path).ok_or_else(|| {
                TrainError::OptimizerLayout(format!("a revival rewrote `{path}`, which the optimiser does not train"))
            })?;
            for &e in elements {
                if e >= slot.len {
                    return Err(TrainError::OptimizerLayout(format!(
                        "a revival rewrote element {e} of `{path}`, which has {}",
                        slot.len
                    )));
                }
                keep[slot.offset + e] = 0.0;
            }
        }
        let keep = Tensor::<1>::from_data(TensorData::new(keep, [self.total]), &self.device);
        self.first = self.first.take().map(|m| m.mul(keep.clone()));
        self.second = self.second.take().map(|v| v.mul(keep));
        Ok(())
    }

    /// The same optimiser without state (what a load starts from).
    fn fresh(&self) -> FlatOptimizer {
        FlatOptimizer {
            kind: self.kind,
            weight_decay: self.weight_decay,
            decay_mode: self.decay_mode,
            decay_mask: self.decay_mask.clone(),
            slots: self.slots.iter().map(|s| Slot { steps: 0, ..s.clone() }).collect(),
            total: self.total,
            device: self.device.clone(),
            first: None,
            second: None,
            weights: self.weights.clone(),
        }
    }

    /// `model`'s gradients in the flat layout: one zero fill and one copy per parameter.
    /// An error if `model` is not the network this optimiser was made for.
    pub(crate) fn flatten(&self, model: &TakNet, grads: &GradientsParams) -> Result<FlatGradients, TrainError> {
        let mut gather =
            Gradients { flat: Flat::new(&self.slots, self.total, &self.device), grads, present: Vec::new() };
        model.visit(&mut gather);
        let present = gather.present;
        Ok(FlatGradients { flat: gather.flat.finish()?, present })
    }

    /// `model`'s weights in the flat layout (for [`FlatOptimizer::update`]): after an
    /// update that replaced every trained parameter, the flat tensor it handed back (the
    /// parameters are views of it); else one zero fill and one copy per parameter. An
    /// error if `model` is not this optimiser's network.
    ///
    /// `model` must be the network the last update returned, unchanged since: the
    /// [`crate::Trainer`] owns both and changes the weights only through updates.
    pub(crate) fn weights(&mut self, model: &TakNet) -> Result<FlatWeights, TrainError> {
        if let Some(flat) = self.weights.take() {
            return Ok(FlatWeights(flat));
        }
        let mut weights = Weights(Flat::new(&self.slots, self.total, &self.device));
        model.visit(&mut weights);
        Ok(FlatWeights(weights.0.finish()?))
    }

    /// One update of `model` (whose weights are `weights`) by `grads` (both from the same
    /// model) at learning rate `lr`. Parameters without a gradient keep their weights and
    /// their state, as burn's optimisers leave them.
    pub(crate) fn update(&mut self, lr: f64, model: TakNet, grads: FlatGradients, weights: FlatWeights) -> TakNet {
        let FlatGradients { flat: mut g, present } = grads;
        let p = weights.0;
        // The decayed parameters' weights (all of them, or those the mask keeps).
        let decayed = |p: Tensor<1>| match &self.decay_mask {
            Some(mask) => p.mul(mask.clone()),
            None => p,
        };
        let mut shrink = None;
        if self.weight_decay > 0.0 {
            match self.decay_mode {
                WeightDecayMode::L2 => g = decayed(p.clone()).mul_scalar(self.weight_decay).add(g),
                WeightDecayMode::Decoupled => {
                    shrink = Some(decayed(p.clone()).mul_scalar(lr * self.weight_decay as f64))
                }
            }
        }
        let zeros = || Tensor::<1>::zeros([self.total], &self.device);
        // Parameters without a gradient get their state back after the update (cloned only
        // then: a clone kept alive stops the backends from updating the moments in place).
        let missing = present.iter().any(|&has| !has);
        let (old_first, old_second) = if missing { (self.first.clone(), self.second.clone()) } else { (None, None) };
        for (slot, &has) in self.slots.iter_mut().zip(&present) {
            slot.steps += u64::from(has);
        }
        let new_p = match self.kind {
            OptimizerKind::Adam => {
                let m = self.first.take().unwrap_or_else(zeros);
                let v = self.second.take().unwrap_or_else(zeros);
                let m = m.mul_scalar(BETA_1).add(g.clone().mul_scalar(1.0 - BETA_1));
                let v = v.mul_scalar(BETA_2).add(g.square().mul_scalar(1.0 - BETA_2));
                let update = match self.bias_corrections(&present) {
                    Corrections::Scalars(c, e) => m.clone().mul_scalar(c).div(v.clone().sqrt().add_scalar(e)),
                    Corrections::Elements(c, e) => {
                        let flat = |values: Vec<f32>| {
                            Tensor::<1>::from_data(TensorData::new(values, [self.total]), &self.device)
                        };
                        m.clone().mul(flat(c)).div(v.clone().sqrt().add(flat(e)))
                    }
                };
                self.first = Some(m);
                self.second = Some(v);
                p - update.mul_scalar(lr)
            }
            OptimizerKind::Sgd => {
                let velocity = self.first.take().unwrap_or_else(zeros);
                let velocity = g.mul_scalar(1.0 - DAMPENING).add(velocity.mul_scalar(MOMENTUM));
                self.first = Some(velocity.clone());
                p - velocity.mul_scalar(lr)
            }
        };
        let new_p = match shrink {
            Some(shrink) => new_p - shrink,
            None => new_p,
        };
        // A parameter without a gradient keeps its state (its weights are not replaced).
        if missing {
            let restore = |new: Option<Tensor<1>>, old: Option<Tensor<1>>| {
                new.map(|mut new| {
                    let old = old.unwrap_or_else(zeros);
                    for (slot, _) in self.slots.iter().zip(&present).filter(|(_, has)| !**has) {
                        let range = slot.offset..slot.offset + slot.len;
                        new = new.slice_assign(range.clone(), old.clone().slice(range));
                    }
                    new
                })
            };
            self.first = restore(self.first.take(), old_first);
            self.second = restore(self.second.take(), old_second);
        }
        self.weights = (!missing).then(|| new_p.clone());
        let mut scatter = Scatter { slots: &self.slots, present: &present, next: 0, flat: new_p };
        model.map(&mut scatter)
    }

    /// Adam's two bias-corrected factors, `sqrt(1 − β₂ᵗ) / (1 − β₁ᵗ)` and
    /// `ε · sqrt(1 − β₂ᵗ)`, computed as burn computes them: scalars while every parameter
    /// updated this step has the same `t` (the usual case), else per element.
    fn bias_corrections(&self, present: &[bool]) -> Corrections {
        let of = |steps: u64| {
            let t = steps as i32;
            let bc2 = (1.0 - BETA_2.powi(t)).sqrt();
            (bc2 / (1.0 - BETA_1.powi(t)), EPSILON * bc2)
        };
        let mut times = self.slots.iter().zip(present).filter(|(_, has)| **has).map(|(s, _)| s.steps);
        let first = times.next().unwrap_or(1);
        if times.all(|t| t == first) {
            let (c, e) = of(first);
            return Corrections::Scalars(c, e);
        }
        // Padding and parameters without a gradient get factors that leave their (zero
        // or restored) update harmless: 0 / (0 + 1).
        let (mut c, mut e) = (vec![0.0f32; self.total], vec![1.0f32; self.total]);
        for (slot, _) in self.slots.iter().zip(present).filter(|(_, has)| **has) {
            let (sc, se) = of(slot.steps);
            c[slot.offset..slot.offset + slot.len].fill(sc);
            e[slot.offset..slot.offset + slot.len].fill(se);
        }
        Corrections::Elements(c, e)
    }

    /// Saves the state in burn's optimiser record layout (a burnpack file: per parameter
    /// with state, `{id}.momentum.moment_1` and `moment_2` (Adam) or `velocity` (SGD),
    /// the scalars `{id}.__rank` and Adam's `{id}.momentum.time`, and the parameter's path).
    pub(crate) fn save(&self, path: &Path) -> Result<(), TrainError> {
        let read = |t: &Option<Tensor<1>>| -> Result<Option<Vec<f32>>, TrainError> {
            match t {
                Some(t) => Ok(Some(
                    t.clone()
                        .try_into_data()?
                        .convert::<f32>()
                        .try_to_vec::<f32>()
                        .map_err(|e| optimizer_error("saving", path, format!("{e:?}")))?,
                )),
                None => Ok(None),
            }
        };
        let (first, second) = (read(&self.first)?, read(&self.second)?);
        let mut tensors = Vec::new();
        let mut scalars: BTreeMap<String, burn_pack::Scalar> = BTreeMap::new();
        let mut paths: BTreeMap<String, String> = BTreeMap::new();
        for slot in self.slots.iter().filter(|s| s.steps > 0) {
            let prefix = slot.id.val().to_string();
            let mut push = |leaf: &str, values: &Option<Vec<f32>>| {
                let values = match values {
                    Some(v) => v[slot.offset..slot.offset + slot.len].to_vec(),
                    None => vec![0.0; slot.len],
                };
                let (bytes, shape, dtype) = TensorData::new(values, slot.dims.clone()).into_parts();
                tensors.push(burn_pack::Tensor::new(
                    format!("{prefix}.{leaf}"),
                    dtype,
                    shape,
                    Some(slot.id.val()),
                    bytes,
                ));
            };
            match self.kind {
                OptimizerKind::Adam => {
                    push("momentum.moment_1", &first);
                    push("momentum.moment_2", &second);
                    scalars.insert(format!("{prefix}.momentum.time"), burn_pack::Scalar::UInt(slot.steps));
                }
                OptimizerKind::Sgd => push("momentum.velocity", &first),
            }
            scalars.insert(format!("{prefix}.__rank"), burn_pack::Scalar::UInt(slot.dims.len() as u64));
            paths.insert(prefix, slot.path.clone());
        }
        let mut writer = burn_pack::Writer::new(tensors);
        for (key, value) in &scalars {
            writer = writer.with_scalar(key, *value);
        }
        for (key, value) in &paths {
            writer = writer.with_metadata(key, value);
        }
        writer.write_to_file(path).map_err(|e| optimizer_error("saving", path, format!("{e:?}")))
    }

    /// Loads state saved by [`FlatOptimizer::save`] or by burn's `ModuleOptimizer` (the
    /// same layout), replacing this one's. A parameter the file has no state for starts
    /// fresh, as burn's optimisers do; state of a shape other than its parameter's is an
    /// error naming the parameter.
    pub(crate) fn load(&mut self, path: &Path) -> Result<(), TrainError> {
        let fail = |message: String| optimizer_error("loading", path, message);
        let reader = burn_pack::Reader::from_file(path).map_err(|e| fail(format!("{e:?}")))?;
        let scalars = reader.scalars().clone();
        let mut tensors: BTreeMap<String, TensorData> = BTreeMap::new();
        for t in reader.into_tensors().map_err(|e| fail(format!("{e:?}")))? {
            let (name, dtype, shape, _, bytes) = t.into_parts().map_err(|e| fail(format!("{e:?}")))?;
            tensors.insert(name, TensorData::from_bytes(bytes, shape, dtype));
        }
        let mut loaded = self.fresh();
        let leaves: &[&str] = match self.kind {
            OptimizerKind::Adam => &["momentum.moment_1", "momentum.moment_2"],
            OptimizerKind::Sgd => &["momentum.velocity"],
        };
        let mut flat: Vec<Vec<f32>> = leaves.iter().map(|_| vec![0.0f32; self.total]).collect();
        for slot in &mut loaded.slots {
            let prefix = slot.id.val().to_string();
            let Some(datas) =
                leaves.iter().map(|leaf| tensors.remove(&format!("{prefix}.{leaf}"))).collect::<Option<Vec<_>>>()
            else {
                continue;
            };
            for (data, out) in datas.into_iter().zip(&mut flat) {
                if data.shape().iter().copied().ne(slot.dims.iter().copied()) {
                    return Err(fail(format!(
                        "the state of `{}` has shape {:?}, the parameter {:?}",
                        slot.path,
                        data.shape(),
                        slot.dims
                    )));
                }
                let values = data.convert::<f32>().try_to_vec::<f32>().map_err(|e| fail(format!("{e:?}")))?;
                out[slot.offset..slot.offset + slot.len].copy_from_slice(&values);
            }
            slot.steps = match self.kind {
                OptimizerKind::Adam => match scalars.get(&format!("{prefix}.momentum.time")) {
                    Some(burn_pack::Scalar::UInt(t)) => *t,
                    Some(burn_pack::Scalar::Int(t)) if *t >= 0 => *t as u64,
                    other => return Err(fail(format!("`{}` has moments but no step count ({other:?})", slot.path))),
                },
                OptimizerKind::Sgd => 1,
            };
        }
        if loaded.slots.iter().any(|s| s.steps > 0) {
            let mut flat =
                flat.into_iter().map(|v| Tensor::<1>::from_data(TensorData::new(v, [self.total]), &self.device));
            loaded.first = flat.next();
            loaded.second = flat.next();
        }
        *self = loaded;
        Ok(())
    }
}

/// Adam's two bias-corrected factors (the moment's and the denominator's epsilon): one
/// pair for every element, or one value per element of the flat layout.
enum Corrections {
    Scalars(f32, f32),
    Elements(Vec<f32>, Vec<f32>),
}

/// Whether a visited tensor is a trained parameter: burn also visits the BatchNorms'
/// running statistics, which have no gradient and are not the optimiser's.
fn trained<const D: usize>(param: &Param<Tensor<D>>) -> bool {
    param.val().is_require_grad()
}

/// Builds the flat layout from a module's trained parameters, in visiting order.
#[derive(Default)]
struct Layout {
    path: Vec<String>,
    slots: Vec<Slot>,
    total: usize,
    device: Option<Device>,
}

impl ModuleVisitor for Layout {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if !trained(param) {
            return;
        }
        let value = param.val().inner();
        self.device.get_or_insert_with(|| value.device());
        let dims = value.dims().to_vec();
        let len = dims.iter().product();
        self.slots.push(Slot { id: param.id, path: self.path.join("."), dims, offset: self.total, len, steps: 0 });
        self.total += len.div_ceil(ALIGN) * ALIGN;
    }
}

/// A flat tensor being filled, one trained parameter's range after another, with a check
/// that the module is the one the layout was made for.
struct Flat<'a> {
    slots: &'a [Slot],
    next: usize,
    flat: Option<Tensor<1>>,
    mismatch: Option<String>,
}

impl<'a> Flat<'a> {
    fn new(slots: &'a [Slot], total: usize, device: &Device) -> Flat<'a> {
        Flat { slots, next: 0, flat: Some(Tensor::zeros([total], device)), mismatch: None }
    }

    /// The slot of the next trained parameter, if it is `id` with `len` elements.
    fn slot(&mut self, id: ParamId, len: usize) -> Option<Slot> {
        let at = self.next;
        self.next += 1;
        match self.slots.get(at) {
            Some(s) if s.id == id && s.len == len => Some(s.clone()),
            Some(s) => {
                self.mismatch.get_or_insert_with(|| format!("parameter {at} is not `{}` {:?}", s.path, s.dims));
                None
            }
            None => None,
        }
    }

    /// Copies `value` into `slot`'s range.
    fn put<const D: usize>(&mut self, slot: &Slot, value: Tensor<D>) {
        let flat = self.flat.take().expect("the flat tensor is present between copies");
        self.flat = Some(flat.slice_assign(slot.offset..slot.offset + slot.len, value.reshape([slot.len])));
    }

    /// The filled tensor, or why the module did not fit.
    fn finish(self) -> Result<Tensor<1>, TrainError> {
        if let Some(why) = self.mismatch {
            return Err(TrainError::OptimizerLayout(why));
        }
        if self.next != self.slots.len() {
            return Err(TrainError::OptimizerLayout(format!(
                "the network has {} trained parameters, the optimiser {}",
                self.next,
                self.slots.len()
            )));
        }
        Ok(self.flat.expect("the flat tensor is present"))
    }
}

/// Copies every trained parameter's gradient into the flat layout.
struct Gradients<'a, 'g> {
    flat: Flat<'a>,
    grads: &'g GradientsParams,
    present: Vec<bool>,
}

impl ModuleVisitor for Gradients<'_, '_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if !trained(param) {
            return;
        }
        let grad = self.grads.get::<D>(param.id);
        self.present.push(grad.is_some());
        if let (Some(slot), Some(grad)) = (self.flat.slot(param.id, param.val().shape().num_elements()), grad) {
            self.flat.put(&slot, grad);
        }
    }
}

/// Copies every trained parameter's weights into the flat layout.
struct Weights<'a>(Flat<'a>);

impl ModuleVisitor for Weights<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if !trained(param) {
            return;
        }
        let value = param.val().inner();
        if let Some(slot) = self.0.slot(param.id, value.shape().num_elements()) {
            self.0.put(&slot, value);
        }
    }
}

/// Hands the new weights back to the module: each trained parameter with a gradient
/// becomes a view of its range of the flat result.
struct Scatter<'a> {
    slots: &'a [Slot],
    present: &'a [bool],
    next: usize,
    flat: Tensor<1>,
}

impl ModuleMapper for Scatter<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if !trained(&param) {
            return param;
        }
        let i = self.next;
        self.next += 1;
        if !self.present.get(i).copied().unwrap_or(false) {
            return param;
        }
        let slot = &self.slots[i];
        let (id, _, mapper) = param.consume();
        let dims: [usize; D] = std::array::from_fn(|d| slot.dims[d]);
        let value = self.flat.clone().slice(slot.offset..slot.offset + slot.len).reshape(dims);
        Param::from_mapped_value(id, Tensor::from_inner(value).require_grad(), mapper)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::encode_batch;
    use bredon_netform::config::NetConfig;
    use burn::optim::decay::WeightDecayConfig;
    use burn::optim::momentum::MomentumConfig;
    use burn::optim::{AdamConfig, ModuleOptimizer, SgdConfig};
    use burn::tensor::activation::log_softmax;
    use rand::{Rng, SeedableRng};

    /// burn's optimiser as Bredon configured it before the flat one.
    fn burns(s: &OptimizerSettings) -> ModuleOptimizer {
        let wd = (s.weight_decay > 0.0).then(|| WeightDecayConfig::new(s.weight_decay as f32));
        match s.kind {
            OptimizerKind::Adam => AdamConfig::new().with_weight_decay(wd).init(),
            OptimizerKind::Sgd => SgdConfig::new()
                .with_weight_decay(wd)
                .with_momentum(Some(MomentumConfig::new().with_dampening(0.0)))
                .init(),
        }
    }

    /// Every trained parameter's bits, in order, with its path.
    fn bits(model: &TakNet) -> Vec<(String, Vec<u32>)> {
        let mut layout = Layout::default();
        model.visit(&mut layout);
        struct Read(Vec<Vec<u32>>);
        impl ModuleVisitor for Read {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                if trained(param) {
                    let v = param.val().inner().into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
                    self.0.push(v.iter().map(|x| x.to_bits()).collect());
                }
            }
        }
        let mut read = Read(Vec::new());
        model.visit(&mut read);
        layout.slots.into_iter().map(|s| s.path).zip(read.0).collect()
    }

    fn assert_same(a: &TakNet, b: &TakNet, what: &str) {
        for ((path, x), (_, y)) in bits(a).iter().zip(bits(b)) {
            let differ = x.iter().zip(&y).filter(|(p, q)| p != q).count();
            assert_eq!(differ, 0, "{what}: `{path}` differs in {differ} of {} elements", x.len());
        }
    }

    /// A loss of a tiny network with global pooling and the auxiliary heads; `policy_only`
    /// leaves every value-head parameter without a gradient.
    fn grads(model: &TakNet, seed: u64, policy_only: bool) -> GradientsParams {
        let size = 3;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut positions = Vec::new();
        for _ in 0..6 {
            let mut p = bredon_rules::Position::new(size).unwrap();
            for _ in 0..rng.random_range(0..5) {
                let moves = p.legal_moves();
                if moves.is_empty() || p.result().is_some() {
                    break;
                }
                p.play(moves[rng.random_range(0..moves.len())]).unwrap();
            }
            positions.push(p);
        }
        let device = model.device();
        let x = encode_batch(positions.iter(), model_input_version(model), size, &device);
        let (logits, value) = model.forward(x);
        let [b, n] = logits.dims();
        let t: Vec<f32> = (0..b * n).map(|_| rng.random::<f32>()).collect();
        let t = Tensor::<2>::from_data(TensorData::new(t, [b, n]), &device);
        let mut loss = (log_softmax(logits, 1) * t).sum().neg();
        if !policy_only {
            let z: Vec<f32> = (0..b).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            let d = value - Tensor::<2>::from_data(TensorData::new(z, [b, 1]), &device);
            loss = loss + (d.clone() * d).sum();
        }
        GradientsParams::from_grads(loss.backward(), model)
    }

    fn model_input_version(_: &TakNet) -> u32 {
        NetConfig::default().input_version
    }

    fn net() -> TakNet {
        let cfg = NetConfig {
            size: 3,
            blocks: 2,
            channels: 8,
            value_hidden: 8,
            policy_filters: 2,
            global_pool: true,
            gpool_channels: 4,
            ..NetConfig::default()
        };
        let device = crate::device::cpu().autodiff();
        TakNet::seeded(&cfg, &device, 7).train()
    }

    /// Weight decay with no gradient at all: under L2 (the default) the one-dimensional
    /// parameters (BatchNorm scales, biases) move too, since Adam scales the decay term
    /// alone to a full step; with `decay_vectors` off they keep every bit while the
    /// matrices move; decoupled decay shrinks exactly the decayed weights by
    /// `1 − lr · weight_decay` and leaves the rest.
    #[test]
    fn weight_decay_modes_decay_what_the_settings_say() {
        let model = net();
        let mut layout = Layout::default();
        model.visit(&mut layout);
        let ranks: Vec<usize> = layout.slots.iter().map(|s| s.dims.len()).collect();
        assert!(ranks.contains(&1) && ranks.iter().any(|&r| r >= 2));
        let before = bits(&model);
        let (lr, wd) = (0.01, 0.1);
        let step = |decay_mode, decay_vectors| {
            let s = OptimizerSettings { weight_decay: wd, decay_mode, decay_vectors, ..OptimizerSettings::default() };
            let mut opt = FlatOptimizer::new(&s, &model);
            let grads = FlatGradients {
                flat: Tensor::<1>::zeros([opt.total], &opt.device),
                present: vec![true; opt.slots.len()],
            };
            let weights = opt.weights(&model).unwrap();
            bits(&opt.update(lr, model.clone(), grads, weights))
        };
        let moved = |after: &[(String, Vec<u32>)], i: usize| {
            before[i].1.iter().zip(&after[i].1).filter(|(a, b)| a != b).count()
        };
        let l2 = step(WeightDecayMode::L2, true);
        assert!(ranks.iter().enumerate().any(|(i, &r)| r == 1 && moved(&l2, i) > 0), "L2 decays the vectors");
        let l2_matrices = step(WeightDecayMode::L2, false);
        for (i, &r) in ranks.iter().enumerate() {
            if r == 1 {
                assert_eq!(moved(&l2_matrices, i), 0, "`{}` is not decayed", before[i].0);
            }
        }
        assert!(ranks.iter().enumerate().any(|(i, &r)| r >= 2 && moved(&l2_matrices, i) > 0));
        for decay_vectors in [true, false] {
            let after = step(WeightDecayMode::Decoupled, decay_vectors);
            for (i, &r) in ranks.iter().enumerate() {
                let factor = if r >= 2 || decay_vectors { 1.0 - (lr * wd) as f32 } else { 1.0 };
                for (x, y) in before[i].1.iter().zip(&after[i].1) {
                    let (x, y) = (f32::from_bits(*x), f32::from_bits(*y));
                    assert!(
                        (y - x * factor).abs() <= 1e-6 * x.abs().max(1e-3),
                        "`{}` (vectors decayed: {decay_vectors}): {x} -> {y}, expected x {factor}",
                        before[i].0
                    );
                }
            }
        }
    }

    /// Steps `ours` and burn's optimiser side by side on the same gradients; `policy_only`
    /// per step says which steps leave the value head without gradients.
    fn side_by_side(
        kind: OptimizerKind,
        steps: &[bool],
        ours: &mut FlatOptimizer,
        theirs: &mut ModuleOptimizer,
        a: TakNet,
        b: TakNet,
        seed: u64,
    ) -> (TakNet, TakNet) {
        let (mut a, mut b) = (a, b);
        for (i, &policy_only) in steps.iter().enumerate() {
            let lr = 0.01 / (i + 1) as f64;
            let ga = grads(&a, seed + i as u64, policy_only);
            let gb = grads(&b, seed + i as u64, policy_only);
            let flat = ours.flatten(&a, &ga).unwrap();
            let w = ours.weights(&a).unwrap();
            a = ours.update(lr, a, flat, w);
            b = theirs.step(lr, b, gb);
            assert_same(&a, &b, &format!("{kind:?} step {i}"));
        }
        (a, b)
    }

    /// Settings burn's own optimisers can follow: L2 decay (burn's `WeightDecayConfig`) on
    /// every parameter, not the decoupled default.
    fn burn_like() -> OptimizerSettings {
        OptimizerSettings {
            decay_mode: WeightDecayMode::L2,
            weight_decay: WeightDecayMode::L2.default_factor(),
            decay_vectors: true,
            ..OptimizerSettings::default()
        }
    }

    /// The flat optimiser gives burn's weights to the bit, Adam and SGD with weight decay,
    /// through steps where some parameters have no gradient (their state and weights
    /// stay; Adam's step counts then differ between parameters).
    #[test]
    fn flat_updates_equal_burns_to_the_bit() {
        for kind in [OptimizerKind::Adam, OptimizerKind::Sgd] {
            let settings = OptimizerSettings { kind, weight_decay: 1e-2, ..burn_like() };
            let a = net();
            let b = a.clone();
            let mut ours = FlatOptimizer::new(&settings, &a);
            let mut theirs = burns(&settings);
            let before = bits(&a);
            let (a, _) = side_by_side(kind, &[false, true, false, true, false], &mut ours, &mut theirs, a, b, 10);
            let value_head = |m: &[(String, Vec<u32>)]| m.iter().find(|(p, _)| p.starts_with("value_fc2")).cloned();
            assert_ne!(value_head(&before), value_head(&bits(&a)), "the value head trained");
            let times: Vec<u64> = ours.slots.iter().map(|s| s.steps).collect();
            assert!(times.contains(&5) && times.contains(&3), "{kind:?}: step counts {times:?}");
        }
    }

    /// State saved by either optimiser loads into the other, and both go on giving the
    /// same weights; a file whose state does not fit the network is a clear error.
    #[test]
    fn state_files_read_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        for kind in [OptimizerKind::Adam, OptimizerKind::Sgd] {
            let settings = OptimizerSettings { kind, ..burn_like() };
            let a = net();
            let b = a.clone();
            let mut ours = FlatOptimizer::new(&settings, &a);
            let mut theirs = burns(&settings);
            let (a, b) = side_by_side(kind, &[false, true, false], &mut ours, &mut theirs, a, b, 20);
            // Ours → burn's, and burn's → ours, then three more steps side by side.
            let (p_ours, p_theirs) = (dir.path().join("ours.bpk"), dir.path().join("theirs.bpk"));
            ours.save(&p_ours).unwrap();
            theirs.save(&p_theirs).unwrap();
            let mut ours2 = FlatOptimizer::new(&settings, &a);
            ours2.load(&p_theirs).unwrap();
            let mut theirs2 = burns(&settings).load(&p_ours).unwrap();
            // Adam's step counts come back; SGD keeps only whether there is a velocity.
            let counts = |o: &FlatOptimizer| -> Vec<u64> {
                o.slots.iter().map(|s| if kind == OptimizerKind::Adam { s.steps } else { s.steps.min(1) }).collect()
            };
            assert_eq!(counts(&ours2), counts(&ours), "{kind:?}");
            side_by_side(kind, &[false, false, true], &mut ours2, &mut theirs2, a.clone(), b, 30);
            // A fresh optimiser of a differently shaped network refuses the file by name.
            let other = TakNet::new(
                &NetConfig {
                    size: 3,
                    blocks: 2,
                    channels: 4,
                    value_hidden: 8,
                    policy_filters: 2,
                    ..NetConfig::default()
                },
                &crate::device::cpu().autodiff(),
            );
            let mut other = FlatOptimizer::new(&settings, &other);
            // Its parameters have other ids: nothing in the file is theirs, so they start fresh.
            other.load(&p_ours).unwrap();
            assert!(other.slots.iter().all(|s| s.steps == 0));
            // State of another shape for a parameter of the same id is refused by name.
            let mut wrong = FlatOptimizer::new(&settings, &a);
            wrong.slots[0].dims.reverse();
            let e = wrong.load(&p_ours).unwrap_err().to_string();
            assert!(e.contains(&format!("`{}`", wrong.slots[0].path)) && e.contains("shape"), "{e}");
        }
        let garbage = dir.path().join("garbage.bpk");
        std::fs::write(&garbage, b"not a burnpack").unwrap();
        let mut ours = FlatOptimizer::new(&OptimizerSettings::default(), &net());
        let e = ours.load(&garbage).unwrap_err();
        assert!(e.to_string().contains("loading optimizer state") && e.to_string().contains("garbage.bpk"), "{e}");
    }
}
