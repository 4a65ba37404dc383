//! The network's units at work on a batch of positions: ReDo's τ-dormant score (Sokar et
//! al., "The Dormant Neuron Phenomenon in Deep Reinforcement Learning", ICML 2023) for
//! every hidden ReLU layer. A unit's score is its mean activation over the batch and the
//! board's squares divided by the layer's mean over its units; a unit is τ-dormant when its
//! score is at most τ (τ = 0: it never fires on these positions).
//!
//! The weight-based measure (`bredon_netform::health`) finds the units that can never fire;
//! this one also finds those that could but do not on real play.

use bredon_netform::config::ValueHead;
use bredon_rules::Position;
use burn::prelude::*;
use burn::tensor::activation::relu;

use crate::model::{TakNet, global_pool};
use crate::train::encode_batch;

/// The τ values every report gives: never firing, and ReDo's threshold for a unit doing
/// almost nothing.
pub const TAUS: [f32; 2] = [0.0, 0.025];

/// One hidden ReLU layer's units on the batch.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LayerActivity {
    /// The layer (`stem`, `block3.conv1`, `block3`, `policy_conv`, `value_conv`,
    /// `value_fc1`).
    pub name: String,
    /// Its units (channels, or the dense layer's outputs).
    pub units: usize,
    /// Per τ of [`TAUS`], the τ-dormant units.
    pub dormant: Vec<usize>,
}

/// Each unit's mean activation over every axis but the channels (`[C]`).
fn per_unit<const D: usize>(a: Tensor<D>) -> Vec<f32> {
    let dims = a.dims();
    let c = dims[1];
    let a = a.abs();
    let flat: Tensor<2> = if D == 2 {
        a.reshape([dims[0] as i32, c as i32])
    } else {
        // [B, C, N, N] to [B·N², C].
        a.swap_dims(1, D - 1).reshape([-1, c as i32])
    };
    flat.mean_dim(0).into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 activations")
}

/// One hidden ReLU layer's units scored on a batch: each unit's mean activation over the
/// layer's mean over its units (every score 0 when the whole layer is silent).
#[derive(Clone, Debug, PartialEq)]
pub struct UnitScores {
    /// The layer, named as in [`LayerActivity::name`].
    pub name: String,
    /// One score per unit; the unit is τ-dormant when its score is at most τ.
    pub scores: Vec<f32>,
}

impl UnitScores {
    fn of(name: String, means: Vec<f32>) -> UnitScores {
        let avg = means.iter().sum::<f32>() / means.len().max(1) as f32;
        let scores = means.iter().map(|&m| if avg > 0.0 { m / avg } else { 0.0 }).collect();
        UnitScores { name, scores }
    }

    /// The units whose score is at most `tau`, in order.
    pub fn dormant(&self, tau: f32) -> Vec<usize> {
        self.scores.iter().enumerate().filter(|&(_, &s)| s <= tau).map(|(i, _)| i).collect()
    }

    fn activity(&self) -> LayerActivity {
        let dormant = TAUS.iter().map(|&tau| self.dormant(tau).len()).collect();
        LayerActivity { name: self.name.clone(), units: self.scores.len(), dormant }
    }
}

/// The τ-dormant units of every hidden ReLU layer of `model` (in inference mode: BatchNorm
/// on its running statistics) on `positions`, boards of `size`, in the order of the
/// forward pass.
pub fn activity(model: &TakNet, positions: &[&Position], size: usize) -> Vec<LayerActivity> {
    unit_scores(model, positions, size).iter().map(UnitScores::activity).collect()
}

/// Every hidden ReLU layer's [`UnitScores`] on `positions` (what [`activity`] counts).
pub fn unit_scores(model: &TakNet, positions: &[&Position], size: usize) -> Vec<UnitScores> {
    let x = encode_batch(positions.iter().copied(), model.input_version(), size, &model.device());
    let mut out = Vec::new();
    let mut h = relu(model.stem_bn.forward(model.stem.forward(x)));
    out.push(UnitScores::of("stem".into(), per_unit(h.clone())));
    for (i, block) in model.blocks.iter().enumerate() {
        let (y, mid) = block.forward_traced(h);
        out.push(UnitScores::of(format!("block{}.conv1", i + 1), per_unit(mid)));
        out.push(UnitScores::of(format!("block{}", i + 1), per_unit(y.clone())));
        h = y;
    }
    let p = relu(model.policy_bn.forward(model.policy_conv.forward(h.clone())));
    out.push(UnitScores::of("policy_conv".into(), per_unit(p)));
    let v = relu(model.value_bn.forward(model.value_conv.forward(h)));
    out.push(UnitScores::of("value_conv".into(), per_unit(v.clone())));
    let [b, ..] = v.dims();
    let v: Tensor<2> = match model.value_head() {
        ValueHead::Dense => v.reshape([b as i32, -1]),
        ValueHead::Pool => global_pool(v),
    };
    let hidden = relu(model.value_fc1.forward(v));
    out.push(UnitScores::of("value_fc1".into(), per_unit(hidden)));
    out
}

/// The share of the blocks' first-convolution units (the hidden layers inside the
/// residual blocks) that are τ-dormant at `tau`, in percent: the generation log's
/// `dormant` column.
pub fn dormant_block_percent(scores: &[UnitScores], tau: f32) -> f64 {
    dormant_percent_where(scores, tau, |name| name.ends_with(".conv1"))
}

/// The share of the value head's hidden units (`value_fc1`) that are τ-dormant at `tau`,
/// in percent: the generation log's `value dormant` figure.
pub fn dormant_value_percent(scores: &[UnitScores], tau: f32) -> f64 {
    dormant_percent_where(scores, tau, |name| name == "value_fc1")
}

fn dormant_percent_where(scores: &[UnitScores], tau: f32, layer: impl Fn(&str) -> bool) -> f64 {
    let hidden = scores.iter().filter(|l| layer(&l.name));
    let (d, u) = hidden.fold((0, 0), |(d, u), l| (d + l.dormant(tau).len(), u + l.scores.len()));
    if u == 0 { 0.0 } else { 100.0 * d as f64 / u as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bredon_netform::config::NetConfig;
    use burn::module::Param;

    /// A 4x4 network of two 8-channel blocks and 32 random positions to score it on.
    fn tiny_net() -> (TakNet, Vec<Position>, Device) {
        let cfg =
            NetConfig { size: 4, blocks: 2, channels: 8, value_hidden: 8, policy_filters: 2, ..NetConfig::default() };
        let device = crate::device::cpu();
        (TakNet::seeded(&cfg, &device, 3), bredon_netform::positions::random_positions(4, 32, 5), device)
    }

    /// A channel whose BatchNorm scale and shift are zero outputs ReLU(0) = 0 on every
    /// position: it is dormant at τ = 0, in that layer, and the same network without the
    /// change has fewer dormant units there.
    #[test]
    fn a_zeroed_channel_is_dormant() {
        let (model, positions, device) = tiny_net();
        let refs: Vec<&Position> = positions.iter().collect();
        let before = activity(&model, &refs, 4);
        let names: Vec<&str> = before.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            ["stem", "block1.conv1", "block1", "block2.conv1", "block2", "policy_conv", "value_conv", "value_fc1"]
        );
        assert!(before.iter().all(|l| l.dormant.len() == TAUS.len() && l.dormant[0] <= l.dormant[1]));
        let mut dead = model.clone();
        let zero_at = |p: &Param<Tensor<1>>| {
            let mut v = p.val().into_data().convert::<f32>().try_into_vec::<f32>().unwrap();
            v[5] = 0.0;
            Param::from_tensor(Tensor::<1>::from_data(TensorData::new(v, [8]), &device))
        };
        dead.blocks[1].bn1.gamma = zero_at(&dead.blocks[1].bn1.gamma);
        dead.blocks[1].bn1.beta = zero_at(&dead.blocks[1].bn1.beta);
        let after = activity(&dead, &refs, 4);
        let at = |ls: &[LayerActivity]| ls.iter().find(|l| l.name == "block2.conv1").unwrap().dormant[0];
        assert_eq!(at(&after), at(&before) + 1, "{before:?} / {after:?}");
        // The layers before it are untouched.
        assert_eq!(before[..3], after[..3]);
    }

    /// Value-head units held below zero whatever their input are counted in the value
    /// head's share, not in the blocks'.
    #[test]
    fn silenced_value_units_count_in_the_value_heads_share() {
        let (model, positions, device) = tiny_net();
        let refs: Vec<&Position> = positions.iter().collect();
        let tau = TAUS[1];
        let before = unit_scores(&model, &refs, 4);
        let mut silenced = model.clone();
        let bias = silenced.value_fc1.bias.as_ref().expect("value_fc1 has a bias");
        let mut b = bias.val().into_data().convert::<f32>().try_into_vec::<f32>().unwrap();
        b[..4].fill(-1e4);
        silenced.value_fc1.bias = Some(Param::from_tensor(Tensor::<1>::from_data(TensorData::new(b, [8]), &device)));
        let after = unit_scores(&silenced, &refs, 4);
        let dormant = |scores: &[UnitScores]| scores.iter().find(|l| l.name == "value_fc1").unwrap().dormant(tau);
        let (was, now) = (dormant(&before), dormant(&after));
        assert!((0..4).all(|u| now.contains(&u)), "{now:?}");
        assert!(was.iter().all(|u| now.contains(u)) && now.len() > was.len(), "{was:?} / {now:?}");
        assert_eq!(dormant_value_percent(&after, tau), 100.0 * now.len() as f64 / 8.0);
        assert_eq!(dormant_value_percent(&before, tau), 100.0 * was.len() as f64 / 8.0);
        assert_eq!(dormant_block_percent(&after, tau), dormant_block_percent(&before, tau));
    }
}
