//! The network's weights with every BatchNorm folded into the convolution before it.
//!
//! In inference a BatchNorm is an affine map per channel,
//! `y = (x - mean) / sqrt(var + eps) * gamma + beta`, so `conv` followed by it equals one convolution with weights scaled by
//! `s = gamma / sqrt(var + eps)` per output channel and bias `beta - mean * s`. The CPU
//! and GPU kernels (`bredon-kernels`) and the ONNX writer (`bredon-onnx`) start from this
//! form; `bredon-nn` folds a trained network into it (`TakNet::fold`).

use crate::config::{NetConfig, ValueHead};

/// A convolution with its bias: weights `[out][in][k][k]` (burn's and ONNX's order).
#[derive(Clone, Debug)]
pub struct FoldedConv {
    /// Input channels.
    pub cin: usize,
    /// Output channels.
    pub cout: usize,
    /// Kernel side (3 or 1).
    pub k: usize,
    /// `cout * cin * k * k` weights.
    pub weight: Vec<f32>,
    /// `cout` biases.
    pub bias: Vec<f32>,
}

/// A fully connected layer: `y = x W + b` with `W` stored `[in][out]` (burn's order).
#[derive(Clone, Debug)]
pub struct FoldedLinear {
    /// Inputs.
    pub din: usize,
    /// Outputs.
    pub dout: usize,
    /// `din * dout` weights, row `i` holds the weights from input `i`.
    pub weight: Vec<f32>,
    /// `dout` biases.
    pub bias: Vec<f32>,
}

/// The network (`bredon_nn::TakNet`) in inference form. Layer semantics (all convolutions "same" padded):
/// `h = relu(stem(x))`; per block `h = relu(conv2(relu(conv1(h))) + h)`, or with global
/// pooling `y = relu(conv1(h))`, `h = relu(conv2(y + gpool(pool(y[..g]))) + h)` where
/// `pool` is the global pooling of [`crate::config::NetConfig::global_pool`] of the first `g` channels and `gpool`'s output
/// is a bias per channel, the same on every square;
/// policy `policy_fc(flatten(relu(policy_conv(h))))` (dense head) or the per-square
/// logits of `policy_out(relu(policy_conv(h)))` in the order of [`crate::policy`]
/// (convolutional head: the first 3 channels flattened channel-major, then the others
/// square-major); value
/// `tanh(value_fc2(relu(value_fc1(flatten(relu(value_conv(h)))))))` (with the pooling
/// value head `pool` instead of `flatten`; with WDL, `value_fc2`
/// gives 3 logits and the value is `softmax[0] − softmax[2]`), where `flatten` is
/// channel-major (`c * N² + square`). Auxiliary heads (optional): flat margin
/// `margin_fc(relu(value_fc1(..)))`, ownership `tanh(ownership_conv(h))`, opponent policy
/// `opponent_policy_fc(flatten(relu(policy_conv(h))))` (or `opponent_policy_out`).
#[derive(Clone, Debug)]
pub struct FoldedNet {
    /// Architecture with the size set.
    pub config: NetConfig,
    /// 3x3, `planes(input_version)` to `channels`.
    pub stem: FoldedConv,
    /// Residual blocks: (conv1, conv2), 3x3.
    pub blocks: Vec<(FoldedConv, FoldedConv)>,
    /// Per block, its global pooling layer: `3 g` pooled features to `channels` biases
    /// (all `None` without global pooling).
    pub gpool: Vec<Option<FoldedLinear>>,
    /// 1x1, `channels` to `policy_filters`.
    pub policy_conv: FoldedConv,
    /// Dense head: `policy_filters * N²` to `policy_size(N)`.
    pub policy_fc: Option<FoldedLinear>,
    /// Convolutional head: 1x1, `policy_filters` to `3 + 4 (2^N − 1)` (no BatchNorm).
    pub policy_out: Option<FoldedConv>,
    /// 1x1, `channels` to `value_filters`.
    pub value_conv: FoldedConv,
    /// `value_filters * N²` (dense value head) or `3 * value_filters` (pooling value
    /// head) to `value_hidden`.
    pub value_fc1: FoldedLinear,
    /// `value_hidden` to 1 (tanh) or 3 (win/draw/loss logits).
    pub value_fc2: FoldedLinear,
    /// Auxiliary flat margin: `value_hidden` to 1.
    pub margin_fc: Option<FoldedLinear>,
    /// Auxiliary ownership: 1x1, `channels` to 1 (no BatchNorm).
    pub ownership_conv: Option<FoldedConv>,
    /// Auxiliary opponent policy, dense head: `policy_filters * N²` to `policy_size(N)`.
    pub opponent_policy_fc: Option<FoldedLinear>,
    /// Auxiliary opponent policy, convolutional head: like `policy_out`.
    pub opponent_policy_out: Option<FoldedConv>,
}

impl FoldedNet {
    /// Board size.
    pub fn size(&self) -> usize {
        self.config.size
    }

    /// Whether the value head pools its features ([`ValueHead::Pool`]).
    pub fn value_pool(&self) -> bool {
        self.config.value_head == ValueHead::Pool
    }

    /// The policy and value 1x1 convolutions as one layer over the trunk's channels
    /// (policy filters first), as both matrix kernels run them.
    pub fn head_matrix(&self) -> Matrix {
        let c = self.config.channels;
        let (p, v) = (&self.policy_conv, &self.value_conv);
        let pf = p.cout;
        let bias: Vec<f32> = p.bias.iter().chain(&v.bias).copied().collect();
        Matrix::from_fn(
            c,
            pf + v.cout,
            |ci, j| if j < pf { p.weight[j * c + ci] } else { v.weight[(j - pf) * c + ci] },
            &bias,
        )
    }

    /// The policy head's last layer over the policy features (channels-last): the dense
    /// layer to every move, or the convolutional head's per-square 1x1 layer.
    pub fn policy_matrix(&self) -> Matrix {
        let area = self.size() * self.size();
        match (&self.policy_fc, &self.policy_out) {
            (Some(fc), _) => Matrix::dense_from_nchw(fc, area, self.policy_conv.cout),
            (None, Some(out)) => Matrix::conv1(out),
            (None, None) => unreachable!("a network has a policy head"),
        }
    }

    /// The value head's first dense layer over its input: the pooled value features, or
    /// the channels-last value features of every square.
    pub fn value_fc1_matrix(&self) -> Matrix {
        let area = self.size() * self.size();
        if self.value_pool() {
            Matrix::dense(&self.value_fc1)
        } else {
            Matrix::dense_from_nchw(&self.value_fc1, area, self.value_conv.cout)
        }
    }
}

/// A layer as one matrix product, `out[j] = bias[j] + sum_k in[k] * w[k][j]`, with the
/// rows in the order the matrix kernels read their input: the form the CPU's fast path
/// (`bredon_kernels::fast`) and the GPU's kernels pack their weights from.
#[derive(Clone, Debug)]
pub struct Matrix {
    /// Rows (inputs).
    pub k: usize,
    /// Columns (outputs).
    pub n: usize,
    /// `k * n` weights, row-major (`w[k * n + j]`).
    pub w: Vec<f32>,
    /// `n` biases.
    pub bias: Vec<f32>,
}

impl Matrix {
    /// The `k x n` matrix with `weight(row, column)` and `bias`.
    pub fn from_fn(k: usize, n: usize, weight: impl Fn(usize, usize) -> f32, bias: &[f32]) -> Matrix {
        let mut w = Vec::with_capacity(k * n);
        for kk in 0..k {
            w.extend((0..n).map(|j| weight(kk, j)));
        }
        Matrix { k, n, w, bias: bias[..n].to_vec() }
    }

    /// A 3x3 convolution over a channels-last board: row `t * cin + ci` (tap
    /// `t = dy * 3 + dx`), column `co`.
    pub fn conv3(c: &FoldedConv) -> Matrix {
        assert_eq!(c.k, 3, "a 3x3 convolution");
        let cin = c.cin;
        Matrix::from_fn(
            9 * cin,
            c.cout,
            |kk, j| {
                let (t, ci) = (kk / cin, kk % cin);
                c.weight[((j * cin + ci) * 3 + t / 3) * 3 + t % 3]
            },
            &c.bias,
        )
    }

    /// A 1x1 convolution: row `ci`, column `co`.
    pub fn conv1(c: &FoldedConv) -> Matrix {
        assert_eq!(c.k, 1, "a 1x1 convolution");
        Matrix::from_fn(c.cin, c.cout, |ci, j| c.weight[j * c.cin + ci], &c.bias)
    }

    /// A dense layer as stored (`[in][out]`).
    pub fn dense(l: &FoldedLinear) -> Matrix {
        Matrix { k: l.din, n: l.dout, w: l.weight.clone(), bias: l.bias.clone() }
    }

    /// A dense layer reading a channels-last `[square][channel]` input of `channels`
    /// channels where `l` expects burn's channel-major flatten (`channel * area + square`).
    pub fn dense_from_nchw(l: &FoldedLinear, area: usize, channels: usize) -> Matrix {
        assert_eq!(l.din, area * channels, "dense input size");
        let dout = l.dout;
        Matrix::from_fn(
            l.din,
            dout,
            |kk, j| {
                let (sq, c) = (kk / channels, kk % channels);
                l.weight[(c * area + sq) * dout + j]
            },
            &l.bias,
        )
    }
}
