//! The network's health as its weights show it, layer by layer (issue 71's first
//! measurement): the output channels that are **dead** (every incoming weight of the folded
//! layer below [`TINY_WEIGHT`] in magnitude, so the channel outputs its bias whatever the
//! position), the share of weights below that bound (and of them the denormal and the
//! exactly zero ones), and the weights' norm.
//!
//! It reads the folded form ([`FoldedNet`]: BatchNorm folded into the convolutions), the
//! form every kernel and the ONNX file run, so a channel whose BatchNorm scale decayed to
//! zero shows as dead here even though its unfolded convolution weights are not small.
//! The activation-based measures (ReDo's dormant units on real positions) need a forward
//! pass and live above this crate.

use serde::Serialize;

use crate::folded::{FoldedConv, FoldedLinear, FoldedNet};

/// Weights of at most this magnitude count as gone: far below what a trained layer's
/// live weights are (1e-3 to 1), and above float rounding of folded weights.
pub const TINY_WEIGHT: f32 = 1e-6;

/// One layer's weights.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayerHealth {
    /// The layer (`stem`, `block3.conv1`, `block3.gpool`, `policy_conv`, …).
    pub name: String,
    /// `conv3x3`, `conv1x1` or `dense`.
    pub kind: &'static str,
    /// Output channels (or outputs of a dense layer).
    pub outputs: usize,
    /// Outputs whose every incoming weight is at most [`TINY_WEIGHT`] in magnitude.
    pub dead_outputs: usize,
    /// Weights (biases not counted).
    pub weights: usize,
    /// Weights at most [`TINY_WEIGHT`] in magnitude.
    pub tiny_weights: usize,
    /// Of those, the nonzero denormal ones (slow on x86 without flushing).
    pub denormal_weights: usize,
    /// Of those, the exactly zero ones.
    pub zero_weights: usize,
    /// The weights' Euclidean norm.
    pub norm: f64,
}

impl LayerHealth {
    /// The share of outputs that are dead, in percent.
    pub fn dead_percent(&self) -> f64 {
        percent(self.dead_outputs, self.outputs)
    }

    /// The share of weights at most [`TINY_WEIGHT`], in percent.
    pub fn tiny_percent(&self) -> f64 {
        percent(self.tiny_weights, self.weights)
    }

    /// Whether the layer is one of the residual blocks' convolutions.
    pub fn in_trunk(&self) -> bool {
        self.name.starts_with("block") && !self.name.ends_with(".gpool")
    }
}

/// A whole network's health: every layer, and the totals the log line and the shipped
/// models' tables quote.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NetHealth {
    /// Every layer, stem first, in the order of the forward pass.
    pub layers: Vec<LayerHealth>,
    /// Dead output channels of the residual blocks' convolutions (both of each block).
    pub dead_trunk_channels: usize,
    /// Output channels of the residual blocks' convolutions.
    pub trunk_channels: usize,
    /// Weights at most [`TINY_WEIGHT`] in the whole network.
    pub tiny_weights: usize,
    /// Weights in the whole network.
    pub weights: usize,
}

impl NetHealth {
    /// The residual blocks' dead channels, in percent.
    pub fn dead_trunk_percent(&self) -> f64 {
        percent(self.dead_trunk_channels, self.trunk_channels)
    }

    /// The share of all weights at most [`TINY_WEIGHT`], in percent.
    pub fn tiny_percent(&self) -> f64 {
        percent(self.tiny_weights, self.weights)
    }
}

/// `part` of `whole` in percent (0 of nothing is 0 %).
pub fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 }
}

/// The health of `weights`, laid out as `outputs` groups by `index(output, i)` for
/// `i < per_output`.
fn layer(
    name: String,
    kind: &'static str,
    weights: &[f32],
    outputs: usize,
    per_output: usize,
    index: impl Fn(usize, usize) -> usize,
) -> LayerHealth {
    let tiny = |w: f32| w.abs() <= TINY_WEIGHT;
    let dead_outputs = (0..outputs).filter(|&o| (0..per_output).all(|i| tiny(weights[index(o, i)]))).count();
    LayerHealth {
        name,
        kind,
        outputs,
        dead_outputs,
        weights: weights.len(),
        tiny_weights: weights.iter().filter(|&&w| tiny(w)).count(),
        denormal_weights: weights.iter().filter(|w| w.is_subnormal()).count(),
        zero_weights: weights.iter().filter(|&&w| w == 0.0).count(),
        norm: weights.iter().map(|&w| w as f64 * w as f64).sum::<f64>().sqrt(),
    }
}

/// A convolution's health: weights `[out][in][k][k]`, an output dead when its `in·k·k`
/// weights are all tiny.
pub fn conv_health(name: impl Into<String>, c: &FoldedConv) -> LayerHealth {
    let per = c.cin * c.k * c.k;
    let kind = if c.k == 3 { "conv3x3" } else { "conv1x1" };
    layer(name.into(), kind, &c.weight, c.cout, per, |o, i| o * per + i)
}

/// A dense layer's health: weights `[in][out]`, an output dead when its column is tiny.
pub fn dense_health(name: impl Into<String>, l: &FoldedLinear) -> LayerHealth {
    layer(name.into(), "dense", &l.weight, l.dout, l.din, |o, i| i * l.dout + o)
}

/// Every layer of `net`, in the order of the forward pass, and the totals.
pub fn net_health(net: &FoldedNet) -> NetHealth {
    let mut layers = vec![conv_health("stem", &net.stem)];
    for (b, (c1, c2)) in net.blocks.iter().enumerate() {
        layers.push(conv_health(format!("block{}.conv1", b + 1), c1));
        if let Some(Some(g)) = net.gpool.get(b) {
            layers.push(dense_health(format!("block{}.gpool", b + 1), g));
        }
        layers.push(conv_health(format!("block{}.conv2", b + 1), c2));
    }
    layers.push(conv_health("policy_conv", &net.policy_conv));
    if let Some(fc) = &net.policy_fc {
        layers.push(dense_health("policy_fc", fc));
    }
    if let Some(out) = &net.policy_out {
        layers.push(conv_health("policy_out", out));
    }
    layers.push(conv_health("value_conv", &net.value_conv));
    layers.push(dense_health("value_fc1", &net.value_fc1));
    layers.push(dense_health("value_fc2", &net.value_fc2));
    if let Some(m) = &net.margin_fc {
        layers.push(dense_health("margin_fc", m));
    }
    if let Some(o) = &net.ownership_conv {
        layers.push(conv_health("ownership_conv", o));
    }
    if let Some(fc) = &net.opponent_policy_fc {
        layers.push(dense_health("opponent_policy_fc", fc));
    }
    if let Some(out) = &net.opponent_policy_out {
        layers.push(conv_health("opponent_policy_out", out));
    }
    let trunk = || layers.iter().filter(|l| l.in_trunk());
    NetHealth {
        dead_trunk_channels: trunk().map(|l| l.dead_outputs).sum(),
        trunk_channels: trunk().map(|l| l.outputs).sum(),
        tiny_weights: layers.iter().map(|l| l.tiny_weights).sum(),
        weights: layers.iter().map(|l| l.weights).sum(),
        layers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(cin: usize, cout: usize, k: usize, seed: u32) -> FoldedConv {
        // Weights well above the bound: 0.01 to 0.5, signs mixed.
        let weight = (0..cout * cin * k * k)
            .map(|i| {
                let x = ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 2000.0 + 0.01;
                if i % 3 == 0 { -x } else { x }
            })
            .collect();
        FoldedConv { cin, cout, k, weight, bias: vec![0.1; cout] }
    }

    #[test]
    fn a_zeroed_output_channel_is_dead_and_a_live_one_is_not() {
        let mut c = conv(4, 6, 3, 1);
        assert_eq!(conv_health("c", &c).dead_outputs, 0);
        // Channel 2's incoming weights: one exactly zero, the rest tiny or denormal.
        let per = 4 * 9;
        for (i, w) in c.weight[2 * per..3 * per].iter_mut().enumerate() {
            *w = match i % 3 {
                0 => 0.0,
                1 => 1e-40, // denormal
                _ => -5e-7,
            };
        }
        // Channel 4 keeps one live weight among tiny ones: not dead.
        for w in &mut c.weight[4 * per..5 * per - 1] {
            *w = 1e-8;
        }
        let h = conv_health("c", &c);
        assert_eq!((h.outputs, h.dead_outputs), (6, 1), "{h:?}");
        assert_eq!(h.weights, 6 * per);
        assert_eq!(h.tiny_weights, 2 * per - 1);
        assert_eq!(h.zero_weights, per / 3);
        assert_eq!(h.denormal_weights, per / 3);
        assert!((h.dead_percent() - 100.0 / 6.0).abs() < 1e-9);
        assert!(h.norm > 1.0);
    }

    #[test]
    fn a_dense_layer_is_read_by_columns() {
        // [in][out] = 3 x 4: output 1's column is zero, row 0 is zero (not a dead output).
        let mut weight = vec![0.3f32; 12];
        for i in 0..3 {
            weight[i * 4 + 1] = 0.0;
        }
        for w in &mut weight[..4] {
            *w = 0.0;
        }
        let l = FoldedLinear { din: 3, dout: 4, weight, bias: vec![0.0; 4] };
        let h = dense_health("d", &l);
        assert_eq!((h.outputs, h.dead_outputs, h.tiny_weights), (4, 1, 6), "{h:?}");
    }
}
