//! A [`TakNet`] in inference form ([`FoldedNet`]): every BatchNorm folded into the
//! convolution before it.
//!
//! In inference a BatchNorm is an affine map per channel,
//! `y = (x - mean) / sqrt(var + eps) * gamma + beta`, so `conv` followed by it equals one
//! convolution with weights scaled by `s = gamma / sqrt(var + eps)` per output channel and
//! bias `beta - mean * s`. The CPU and GPU kernels (`bredon-kernels`) and the ONNX writer
//! (`bredon-onnx`) start from this form.

use burn::prelude::*;

use bredon_netform::config::{DEFAULT_GPOOL_CHANNELS, NetConfig, PolicyHead};
use bredon_netform::encoding::planes;
use bredon_netform::folded::{FoldedConv, FoldedLinear, FoldedNet};
use bredon_netform::policy::policy_size;

use crate::model::TakNet;

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 tensor data")
}

fn fold_conv(conv: &burn::nn::conv::Conv2d, bn: &burn::nn::BatchNorm) -> FoldedConv {
    let w = conv.weight.val();
    let [cout, cin, k, _] = w.dims();
    let mut weight = floats(w);
    let gamma = floats(bn.gamma.val());
    let beta = floats(bn.beta.val());
    let mean = floats(bn.running_mean.value());
    let var = floats(bn.running_var.value());
    let conv_bias = conv.bias.as_ref().map(|b| floats(b.val()));
    let per_out = cin * k * k;
    let mut bias = vec![0.0; cout];
    for o in 0..cout {
        // In f64 so folding adds no rounding beyond the final f32 store.
        let s = gamma[o] as f64 / (var[o] as f64 + bn.epsilon).sqrt();
        for w in &mut weight[o * per_out..(o + 1) * per_out] {
            *w = (*w as f64 * s) as f32;
        }
        let b0 = conv_bias.as_ref().map_or(0.0, |b| b[o] as f64);
        bias[o] = ((b0 - mean[o] as f64) * s + beta[o] as f64) as f32;
    }
    FoldedConv { cin, cout, k, weight, bias }
}

fn plain_conv(conv: &burn::nn::conv::Conv2d) -> FoldedConv {
    let w = conv.weight.val();
    let [cout, cin, k, _] = w.dims();
    let bias = conv.bias.as_ref().map(|b| floats(b.val())).unwrap_or_else(|| vec![0.0; cout]);
    FoldedConv { cin, cout, k, weight: floats(w), bias }
}

fn linear(l: &burn::nn::Linear) -> FoldedLinear {
    let w = l.weight.val();
    let [din, dout] = w.dims();
    let bias = l.bias.as_ref().map(|b| floats(b.val())).unwrap_or_else(|| vec![0.0; dout]);
    FoldedLinear { din, dout, weight: floats(w), bias }
}

impl TakNet {
    /// This network in inference form: its BatchNorms folded into the convolutions before
    /// them, for boards of `size`. A network for boards of `size` (the rest of the
    /// architecture is read from the weights' shapes).
    pub fn fold(&self, size: usize) -> FoldedNet {
        let model = self;
        let mut net = FoldedNet {
            config: NetConfig::default(),
            stem: fold_conv(&model.stem, &model.stem_bn),
            blocks: model.blocks.iter().map(|b| (fold_conv(&b.conv1, &b.bn1), fold_conv(&b.conv2, &b.bn2))).collect(),
            gpool: model.blocks.iter().map(|b| b.gpool_fc.as_ref().map(linear)).collect(),
            policy_conv: fold_conv(&model.policy_conv, &model.policy_bn),
            policy_fc: model.policy_fc.as_ref().map(linear),
            policy_out: model.policy_out.as_ref().map(plain_conv),
            value_conv: fold_conv(&model.value_conv, &model.value_bn),
            value_fc1: linear(&model.value_fc1),
            value_fc2: linear(&model.value_fc2),
            margin_fc: model.margin_fc.as_ref().map(linear),
            ownership_conv: model.ownership_conv.as_ref().map(plain_conv),
            opponent_policy_fc: model.opponent_policy_fc.as_ref().map(linear),
            opponent_policy_out: model.opponent_policy_out.as_ref().map(plain_conv),
        };
        net.config = NetConfig {
            size,
            blocks: net.blocks.len(),
            channels: net.stem.cout,
            value_hidden: net.value_fc1.dout,
            policy_filters: net.policy_conv.cout,
            input_version: model.input_version,
            wdl: net.value_fc2.dout == 3,
            aux: net.margin_fc.is_some(),
            policy_head: model.policy_head(),
            global_pool: model.gpool_channels().is_some(),
            gpool_channels: model.gpool_channels().unwrap_or(DEFAULT_GPOOL_CHANNELS),
            value_head: model.value_head(),
            value_filters: net.value_conv.cout,
        };
        debug_assert!(net.gpool.iter().all(|g| g.is_some() == net.config.global_pool));
        debug_assert_eq!(net.value_fc1.din, net.config.value_features());
        assert_eq!(net.stem.cin, planes(model.input_version), "stem inputs of input version {}", model.input_version);
        match (&net.policy_fc, &net.policy_out) {
            (Some(fc), None) => debug_assert_eq!(fc.dout, policy_size(size)),
            (None, Some(out)) => debug_assert_eq!(out.cout, PolicyHead::conv_outputs(size)),
            _ => unreachable!("a network has one policy head"),
        }
        net
    }
}
