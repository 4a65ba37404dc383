//! Reviving dormant units (ReDo: Sokar et al., "The Dormant Neuron Phenomenon in Deep
//! Reinforcement Learning", ICML 2023). A unit that is τ-dormant on a batch of positions
//! ([`crate::activity`]) gets fresh incoming weights, drawn as a new layer's would be, and
//! zero outgoing weights, so the unit can learn again from the next step on (its outgoing
//! weights get gradients at once, its incoming ones as soon as those are nonzero). The
//! network computes what it computed before, with one exception: a block with global
//! pooling adds its pooled bias to every channel, the dormant ones too, and that bias
//! reached the next convolution through the weights the revival zeroes. The tests bound
//! that change by a tenth of one training step's.
//!
//! The layers revived are the hidden ones whose every reader can be silenced:
//! - each residual block's first convolution (`blockK.conv1`): its weights into the
//!   channel, the channel's BatchNorm (scale 1, shift 0, running mean 0 and variance 1);
//!   out of it, the block's second convolution and, for a pooled channel, the pooling
//!   bias layer;
//! - the value head's convolution (`value_conv`), read by `value_fc1`;
//! - the value head's hidden layer (`value_fc1`: its column and bias), read by the value
//!   and margin layers.
//!
//! The stem and the blocks' outputs feed the residual stream, which every later block
//! adds to, so their units cannot be silenced without changing the network; the policy
//! head's convolution has had no dormant units in any model measured. They are left alone.

use burn::module::{Param, RunningState};
use burn::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use bredon_netform::config::ValueHead;

use crate::activity::{UnitScores, unit_scores};
use crate::model::TakNet;
use crate::train::{TrainError, Trainer};
use bredon_rules::Position;

/// The units one layer got back.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RevivedLayer {
    /// The layer, named as [`crate::activity`] names it (`block5.conv1`, `value_fc1`).
    pub name: String,
    /// The revived units, in order.
    pub units: Vec<usize>,
}

/// What one revival did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Revival {
    /// The layers with at least one unit revived, in the forward pass's order.
    pub layers: Vec<RevivedLayer>,
}

impl Revival {
    /// Units revived in all.
    pub fn units(&self) -> usize {
        self.layers.iter().map(|l| l.units.len()).sum()
    }
}

impl std::fmt::Display for Revival {
    /// `57 units (block3.conv1 3, block4.conv1 12, …)`, or `no units`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.layers.is_empty() {
            return write!(f, "no units");
        }
        let each: Vec<String> = self.layers.iter().map(|l| format!("{} {}", l.name, l.units.len())).collect();
        write!(f, "{} units ({})", self.units(), each.join(", "))
    }
}

impl Trainer {
    /// Revives the units of the network that are τ-dormant at `tau` on `positions`
    /// (ReDo, this module): fresh incoming weights drawn from `seed`, zero outgoing ones, so
    /// the network's outputs are unchanged but for the pooled-bias path the module's docs
    /// describe; the optimiser forgets those weights' moments. Returns what was revived.
    pub fn revive_dormant(&mut self, positions: &[&Position], tau: f32, seed: u64) -> Result<Revival, TrainError> {
        let scores = unit_scores(&self.model(), positions, self.config.size);
        let model = self.model.take().expect("model present");
        let (model, revival, touched) = revive(model, &scores, tau, seed);
        self.model = Some(model);
        self.optim.forget(&touched.0)?;
        Ok(revival)
    }
}

/// The tensor elements a revival rewrote, by trained parameter (its path in the module, as
/// the optimiser's layout names it): the optimiser forgets their moments.
#[derive(Debug, Default)]
pub(crate) struct Touched(pub(crate) Vec<(String, Vec<usize>)>);

/// Revives in `model` every unit of the layers above whose score in `scores` (taken on
/// `model`) is at most `tau`; `seed` draws the fresh weights.
pub(crate) fn revive(mut model: TakNet, scores: &[UnitScores], tau: f32, seed: u64) -> (TakNet, Revival, Touched) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut touched = Touched::default();
    let mut revival = Revival::default();
    let dormant = |name: &str| scores.iter().find(|l| l.name == name).map(|l| l.dormant(tau)).unwrap_or_default();
    let mut record = |name: String, units: Vec<usize>| {
        if !units.is_empty() {
            revival.layers.push(RevivedLayer { name, units });
        }
    };
    let gpool = model.gpool_channels();
    for (i, block) in model.blocks.iter_mut().enumerate() {
        let units = dormant(&format!("block{}.conv1", i + 1));
        if units.is_empty() {
            continue;
        }
        let at = |field: &str| format!("blocks.{i}.{field}");
        block.conv1.weight =
            fresh_rows(block.conv1.weight.clone(), &units, &at("conv1.weight"), &mut rng, &mut touched);
        reset_norm(&mut block.bn1, &units, &at("bn1"), &mut touched);
        block.conv2.weight = zero_columns(block.conv2.weight.clone(), &units, &at("conv2.weight"), &mut touched);
        if let (Some(fc), Some(g)) = (block.gpool_fc.as_mut(), gpool) {
            // The pooled features of channel c are rows c, g + c and 2g + c (mean, scaled
            // mean, maximum) of the `[3g, C]` weight.
            let rows: Vec<usize> = units.iter().filter(|&&c| c < g).flat_map(|&c| [c, g + c, 2 * g + c]).collect();
            fc.weight = zero_rows(fc.weight.clone(), &rows, &at("gpool_fc.weight"), &mut touched);
        }
        record(format!("block{}.conv1", i + 1), units);
    }
    let units = dormant("value_conv");
    if !units.is_empty() {
        let filters = model.value_conv.weight.dims()[0];
        let rows: Vec<usize> = match model.value_head() {
            ValueHead::Pool => units.iter().flat_map(|&c| [c, filters + c, 2 * filters + c]).collect(),
            ValueHead::Dense => {
                let squares = model.value_fc1.weight.dims()[0] / filters;
                units.iter().flat_map(|&c| c * squares..(c + 1) * squares).collect()
            }
        };
        model.value_conv.weight =
            fresh_rows(model.value_conv.weight.clone(), &units, "value_conv.weight", &mut rng, &mut touched);
        reset_norm(&mut model.value_bn, &units, "value_bn", &mut touched);
        model.value_fc1.weight = zero_rows(model.value_fc1.weight.clone(), &rows, "value_fc1.weight", &mut touched);
        record("value_conv".into(), units);
    }
    let units = dormant("value_fc1");
    if !units.is_empty() {
        // A dense layer's weight is `[inputs, outputs]`: unit j is column j.
        let fc1 = &mut model.value_fc1;
        fc1.weight = fresh_columns(fc1.weight.clone(), &units, "value_fc1.weight", &mut rng, &mut touched);
        if let Some(bias) = fc1.bias.take() {
            fc1.bias = Some(edit(bias, "value_fc1.bias", &mut touched, |v, _| set(v, &units, 0.0)));
        }
        model.value_fc2.weight = zero_rows(model.value_fc2.weight.clone(), &units, "value_fc2.weight", &mut touched);
        if let Some(fc) = model.margin_fc.as_mut() {
            fc.weight = zero_rows(fc.weight.clone(), &units, "margin_fc.weight", &mut touched);
        }
        record("value_fc1".into(), units);
    }
    (model, revival, touched)
}

/// `param` rewritten on the host by `f` (given its values and dims, returning the elements
/// it changed), on the same device, with the same autodiff state and the same id (the
/// optimiser finds its slot by it); the changed elements are added to `touched` under
/// `path`.
fn edit<const D: usize>(
    param: Param<Tensor<D>>,
    path: &str,
    touched: &mut Touched,
    f: impl FnOnce(&mut [f32], [usize; D]) -> Vec<usize>,
) -> Param<Tensor<D>> {
    let (id, value, mapper) = param.consume();
    let (autodiff, grad) = (value.is_autodiff(), value.is_require_grad());
    let dims = value.dims();
    let inner = value.inner();
    let device = inner.device();
    let mut v = inner.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 weights");
    let changed = f(&mut v, dims);
    touched.0.push((path.to_string(), changed));
    let mut t = Tensor::<D>::from_data(TensorData::new(v, dims), &device);
    if autodiff {
        t = t.autodiff();
    }
    if grad {
        t = t.require_grad();
    }
    Param::from_mapped_value(id, t, mapper)
}

/// Sets elements `at` of `v` to `x`; returns them.
fn set(v: &mut [f32], at: &[usize], x: f32) -> Vec<usize> {
    at.iter().for_each(|&i| v[i] = x);
    at.to_vec()
}

/// A fresh draw of burn's default initialisation for a layer with `fan_in` inputs
/// (Kaiming uniform with gain 1/√3: uniform on ±1/√fan_in).
fn draw(rng: &mut ChaCha8Rng, fan_in: usize) -> f32 {
    let bound = 1.0 / (fan_in.max(1) as f32).sqrt();
    rng.random_range(-bound..bound)
}

/// Fresh weights into the output channels `units` of a convolution weight `[out, in, k, k]`.
fn fresh_rows(
    w: Param<Tensor<4>>,
    units: &[usize],
    path: &str,
    rng: &mut ChaCha8Rng,
    touched: &mut Touched,
) -> Param<Tensor<4>> {
    edit(w, path, touched, |v, [_, i, kh, kw]| {
        let per = i * kh * kw;
        let at: Vec<usize> = units.iter().flat_map(|&c| c * per..(c + 1) * per).collect();
        at.iter().for_each(|&e| v[e] = draw(rng, per));
        at
    })
}

/// Zero weights out of the input channels `units` of a convolution weight `[out, in, k, k]`.
fn zero_columns(w: Param<Tensor<4>>, units: &[usize], path: &str, touched: &mut Touched) -> Param<Tensor<4>> {
    edit(w, path, touched, |v, [o, i, kh, kw]| {
        let taps = kh * kw;
        let at: Vec<usize> = (0..o)
            .flat_map(|out| units.iter().flat_map(move |&c| (out * i + c) * taps..(out * i + c + 1) * taps))
            .collect();
        set(v, &at, 0.0)
    })
}

/// Fresh weights into the outputs `units` of a dense weight `[in, out]` (its columns).
fn fresh_columns(
    w: Param<Tensor<2>>,
    units: &[usize],
    path: &str,
    rng: &mut ChaCha8Rng,
    touched: &mut Touched,
) -> Param<Tensor<2>> {
    edit(w, path, touched, |v, [i, o]| {
        let at: Vec<usize> = (0..i).flat_map(|r| units.iter().map(move |&j| r * o + j)).collect();
        at.iter().for_each(|&e| v[e] = draw(rng, i));
        at
    })
}

/// Zero weights out of the inputs `rows` of a dense weight `[in, out]` (its rows).
fn zero_rows(w: Param<Tensor<2>>, rows: &[usize], path: &str, touched: &mut Touched) -> Param<Tensor<2>> {
    edit(w, path, touched, |v, [_, o]| {
        let at: Vec<usize> = rows.iter().flat_map(|&r| r * o..(r + 1) * o).collect();
        set(v, &at, 0.0)
    })
}

/// A BatchNorm's channels `units` as a new layer's: scale 1, shift 0, running mean 0 and
/// variance 1 (the running statistics are not trained parameters, so not `touched`).
fn reset_norm(bn: &mut burn::nn::BatchNorm, units: &[usize], path: &str, touched: &mut Touched) {
    bn.gamma = edit(bn.gamma.clone(), &format!("{path}.gamma"), touched, |v, _| set(v, units, 1.0));
    bn.beta = edit(bn.beta.clone(), &format!("{path}.beta"), touched, |v, _| set(v, units, 0.0));
    reset_running(&bn.running_mean, units, 0.0);
    reset_running(&bn.running_var, units, 1.0);
}

/// Sets elements `units` of a running statistic to `x`. The state first takes in every
/// thread's pending update (`valid` does; `value_sync` would take only this thread's, and
/// the training step's forward pass may have run on another, whose update would later be
/// averaged with this one); then this thread's update, synchronised at once.
fn reset_running(state: &RunningState<Tensor<1>>, units: &[usize], x: f32) {
    let _ = burn::module::Module::valid(state);
    let value = state.value();
    let autodiff = value.is_autodiff();
    let inner = value.inner();
    let device = inner.device();
    let n = inner.dims()[0];
    let mut v = inner.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 statistics");
    set(&mut v, units, x);
    let mut t = Tensor::<1>::from_data(TensorData::new(v, [n]), &device);
    if autodiff {
        t = t.autodiff();
    }
    state.update(t);
    state.value_sync();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::unit_scores;
    use crate::model::Outputs;
    use crate::train::{OptimizerSettings, TrainExample, Trainer, encode_batch};
    use bredon_netform::config::NetConfig;
    use bredon_rules::Position;

    fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().convert::<f32>().try_into_vec::<f32>().unwrap()
    }

    /// Every output of `model` on `positions`, end to end.
    fn outputs(model: &TakNet, positions: &[&Position]) -> Vec<f32> {
        let x = encode_batch(positions.iter().copied(), model.input_version(), 4, &model.device());
        let out = model.forward_all(x, Outputs::All);
        let mut all = values(out.policy);
        for t in [Some(out.value), out.wdl, out.flat_margin, out.ownership, out.opponent_policy].into_iter().flatten() {
            all.extend(values(t));
        }
        all
    }

    /// A network with two units killed the way the long runs killed them: channel 1 of
    /// block 2's first convolution (a pooled one, with `global_pool`) has no incoming
    /// weights and a negative shift, unit 3 of the value head's hidden layer no incoming
    /// weights and a negative bias.
    fn with_dead_units(global_pool: bool) -> (NetConfig, TakNet) {
        let cfg = NetConfig {
            size: 4,
            blocks: 2,
            channels: 8,
            value_hidden: 8,
            policy_filters: 2,
            value_filters: 4,
            global_pool,
            gpool_channels: 4,
            value_head: ValueHead::Pool,
            wdl: true,
            aux: true,
            ..NetConfig::default()
        };
        let device = crate::device::cpu();
        let mut model = TakNet::seeded(&cfg, &device, 11);
        let mut scratch = Touched::default();
        let b = &mut model.blocks[1];
        b.conv1.weight = edit(b.conv1.weight.clone(), "k", &mut scratch, |v, [_, i, kh, kw]| {
            set(v, &(i * kh * kw..2 * i * kh * kw).collect::<Vec<_>>(), 0.0)
        });
        b.bn1.beta = edit(b.bn1.beta.clone(), "k", &mut scratch, |v, _| set(v, &[1], -1.0));
        let fc1 = &mut model.value_fc1;
        fc1.weight = edit(fc1.weight.clone(), "k", &mut scratch, |v, [i, o]| {
            set(v, &(0..i).map(|r| r * o + 3).collect::<Vec<_>>(), 0.0)
        });
        fc1.bias = fc1.bias.take().map(|bias| edit(bias, "k", &mut scratch, |v, _| set(v, &[3], -1.0)));
        (cfg, model)
    }

    fn example(p: &Position) -> TrainExample {
        let moves = p.legal_moves();
        let share = 1.0 / moves.len() as f32;
        TrainExample {
            position: p.clone(),
            policy: moves.iter().map(|&m| (m, share)).collect(),
            value: 0.5,
            wdl: None,
            aux: Default::default(),
        }
    }

    fn largest_change(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max)
    }

    /// The killed units are found dormant and revived; the revived channel fires again,
    /// and a few training steps give it outgoing weights (it is learning, where before
    /// its gradient was zero). Returns the largest change of any output the revival made,
    /// and that of the one training step before it.
    fn revive_killed_units(global_pool: bool) -> (f32, f32) {
        let (cfg, model) = with_dead_units(global_pool);
        let positions = bredon_netform::positions::random_positions(4, 64, 9);
        let refs: Vec<&Position> = positions.iter().collect();
        let settings = OptimizerSettings { weight_decay: 0.0, ..OptimizerSettings::default() };
        let mut trainer = Trainer::from_model(&cfg, model, settings).unwrap();
        let batch: Vec<TrainExample> = positions.iter().take(32).map(example).collect();
        // A step first: optimiser state to forget, and a trained pooling bias.
        let untrained = outputs(&trainer.model(), &refs);
        trainer.step(&batch, 1e-3).unwrap();
        let before = trainer.model();
        let scores = unit_scores(&before, &refs, 4);
        let dormant = |name: &str, s: &[UnitScores]| s.iter().find(|l| l.name == name).unwrap().dormant(0.0);
        assert!(dormant("block2.conv1", &scores).contains(&1), "{scores:?}");
        assert!(dormant("value_fc1", &scores).contains(&3), "{scores:?}");

        let revival = trainer.revive_dormant(&refs, 0.0, 5).unwrap();
        let revived = |name: &str| revival.layers.iter().find(|l| l.name == name).map(|l| l.units.clone());
        assert!(revived("block2.conv1").unwrap().contains(&1), "{revival:?}");
        assert!(revived("value_fc1").unwrap().contains(&3), "{revival:?}");
        assert!(revival.to_string().starts_with(&format!("{} units (", revival.units())), "{revival}");

        let after = trainer.model();
        let a = outputs(&before, &refs);
        let by_revival = largest_change(&a, &outputs(&after, &refs));
        let by_step = largest_change(&untrained, &a);
        let incoming = values(after.blocks[1].conv1.weight.val());
        let per = incoming.len() / 8;
        assert!(incoming[per..2 * per].iter().all(|w| *w != 0.0), "fresh weights into channel 1");
        let column: Vec<f32> = values(after.value_fc1.weight.val()).chunks(8).map(|row| row[3]).collect();
        assert!(column.iter().all(|w| *w != 0.0), "fresh weights into unit 3");
        assert!(!dormant("block2.conv1", &unit_scores(&after, &refs, 4)).contains(&1), "channel 1 fires again");

        // Out of channel 1: zero after the revival, nonzero after a few steps.
        let out_of_1 = |m: &TakNet| -> f32 {
            let w = values(m.blocks[1].conv2.weight.val());
            (0..8).flat_map(|o| w[(o * 8 + 1) * 9..(o * 8 + 2) * 9].to_vec()).map(f32::abs).sum()
        };
        assert_eq!(out_of_1(&after), 0.0);
        for _ in 0..3 {
            trainer.step(&batch, 1e-3).unwrap();
        }
        assert!(out_of_1(&trainer.model()) > 0.0, "the revived channel gets gradients");
        (by_revival, by_step)
    }

    /// Without global pooling a revival changes no output: a dormant unit contributed
    /// nothing, and its revived self contributes nothing until it has learned weights out.
    #[test]
    fn revival_keeps_the_outputs_and_the_units_learn_again() {
        let (by_revival, by_step) = revive_killed_units(false);
        assert!(by_revival < 1e-6, "the revival moved an output by {by_revival}");
        assert!(by_step > 1e-3, "{by_step}");
    }

    /// With global pooling a revival changes the outputs a little: the pooled bias of the
    /// block is added to every channel, the dormant one too, and reached the block's second
    /// convolution through the weights out of it, which the revival zeroes. The change is
    /// a small part of one training step's.
    #[test]
    fn with_global_pooling_the_revival_moves_the_outputs_less_than_a_step() {
        let (by_revival, by_step) = revive_killed_units(true);
        assert!(by_revival > 0.0, "the pooled bias through the channel was nonzero after a step");
        assert!(by_revival < 0.1 * by_step, "revival {by_revival}, step {by_step}");
    }

    /// Nothing dormant, nothing revived, nothing changed.
    #[test]
    fn a_live_network_is_left_alone() {
        let (cfg, model) = with_dead_units(true);
        let positions = bredon_netform::positions::random_positions(4, 32, 2);
        let refs: Vec<&Position> = positions.iter().collect();
        let mut trainer = Trainer::from_model(&cfg, model, OptimizerSettings::default()).unwrap();
        let before = outputs(&trainer.model(), &refs);
        // τ below every score: no unit qualifies.
        let revival = trainer.revive_dormant(&refs, -1.0, 5).unwrap();
        assert_eq!(revival, Revival::default());
        assert_eq!(revival.to_string(), "no units");
        assert_eq!(before, outputs(&trainer.model(), &refs));
    }
}
