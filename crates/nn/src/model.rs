//! The residual policy/value network.

use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::prelude::*;
use burn::tensor::activation::{relu, tanh};
use serde::{Deserialize, Serialize};

use crate::encoding::{DEFAULT_INPUT_VERSION, planes};
use crate::policy::policy_size;

/// Architecture of the network: a convolutional stem, `blocks` residual blocks of
/// `channels` filters, a policy head and a value head.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetConfig {
    /// Board size; 0 = take the game's size.
    pub size: usize,
    /// Residual blocks.
    pub blocks: usize,
    /// Filters per convolution.
    pub channels: usize,
    /// Width of the value head's hidden layer.
    pub value_hidden: usize,
    /// Filters of the policy head's 1x1 convolution.
    pub policy_filters: usize,
    /// Input plane layout (`crate::encoding`): 1 = the 27 planes of the first networks,
    /// 2 = those plus road-in-one and road-group reach planes (31). Absent in the files
    /// of models and runs older than the field, which are version 1 (and not written
    /// when 1, so version-1 files stay readable by older builds).
    #[serde(skip_serializing_if = "is_default_input_version")]
    pub input_version: u32,
}

fn is_default_input_version(v: &u32) -> bool {
    *v == DEFAULT_INPUT_VERSION
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig { size: 0, blocks: 4, channels: 48, value_hidden: 64, policy_filters: 8, input_version: DEFAULT_INPUT_VERSION }
    }
}

impl NetConfig {
    /// Small defaults that train in minutes on two CPU cores for small boards.
    pub fn default_for_size(size: usize) -> NetConfig {
        let (blocks, channels) = match size {
            3 => (2, 32),
            4 => (4, 48),
            5 => (6, 64),
            _ => (6, 64),
        };
        NetConfig { size, blocks, channels, ..NetConfig::default() }
    }

    /// Short name such as `b4c48` (`b4c48-v2` for input version 2).
    pub fn name(&self) -> String {
        let mut s = format!("b{}c{}", self.blocks, self.channels);
        if self.input_version != DEFAULT_INPUT_VERSION {
            s.push_str(&format!("-v{}", self.input_version));
        }
        s
    }

    /// Input planes of this network.
    pub fn planes(&self) -> usize {
        planes(self.input_version)
    }

    /// This config with `size` filled in (when 0).
    pub fn for_size(&self, size: usize) -> NetConfig {
        NetConfig { size: if self.size == 0 { size } else { self.size }, ..self.clone() }
    }
}

/// conv-bn-relu-conv-bn + skip + relu.
#[derive(Module, Debug)]
pub struct ResBlock {
    pub(crate) conv1: Conv2d,
    pub(crate) bn1: BatchNorm,
    pub(crate) conv2: Conv2d,
    pub(crate) bn2: BatchNorm,
}

fn conv(i: usize, o: usize, k: usize, device: &Device) -> Conv2d {
    let pad = if k == 1 { PaddingConfig2d::Valid } else { PaddingConfig2d::Same };
    Conv2dConfig::new([i, o], [k, k]).with_padding(pad).with_bias(false).init(device)
}

impl ResBlock {
    fn new(c: usize, device: &Device) -> ResBlock {
        ResBlock {
            conv1: conv(c, c, 3, device),
            bn1: BatchNormConfig::new(c).init(device),
            conv2: conv(c, c, 3, device),
            bn2: BatchNormConfig::new(c).init(device),
        }
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let y = relu(self.bn1.forward(self.conv1.forward(x.clone())));
        let y = self.bn2.forward(self.conv2.forward(y));
        relu(y + x)
    }
}

/// The network. Input `[B, planes(input_version), N, N]`; outputs policy logits `[B, policy_size(N)]`
/// and values `[B, 1]` in [-1, 1] for the side to move.
#[derive(Module, Debug)]
pub struct TakNet {
    pub(crate) stem: Conv2d,
    pub(crate) stem_bn: BatchNorm,
    pub(crate) blocks: Vec<ResBlock>,
    pub(crate) policy_conv: Conv2d,
    pub(crate) policy_bn: BatchNorm,
    pub(crate) policy_fc: Linear,
    pub(crate) value_conv: Conv2d,
    pub(crate) value_bn: BatchNorm,
    pub(crate) value_fc1: Linear,
    pub(crate) value_fc2: Linear,
    /// Input plane layout (not a weight: set from the [`NetConfig`] when built).
    pub(crate) input_version: u32,
}

impl TakNet {
    /// A freshly initialised network for `cfg` (whose size must be set and whose input
    /// version must be known, see [`crate::encoding::check_input_version`]).
    pub fn new(cfg: &NetConfig, device: &Device) -> TakNet {
        let n = cfg.size;
        let c = cfg.channels;
        assert!(cfg.planes() > 0, "unknown input version {}", cfg.input_version);
        TakNet {
            stem: conv(cfg.planes(), c, 3, device),
            stem_bn: BatchNormConfig::new(c).init(device),
            blocks: (0..cfg.blocks).map(|_| ResBlock::new(c, device)).collect(),
            policy_conv: conv(c, cfg.policy_filters, 1, device),
            policy_bn: BatchNormConfig::new(cfg.policy_filters).init(device),
            policy_fc: LinearConfig::new(cfg.policy_filters * n * n, policy_size(n)).init(device),
            value_conv: conv(c, 2, 1, device),
            value_bn: BatchNormConfig::new(2).init(device),
            value_fc1: LinearConfig::new(2 * n * n, cfg.value_hidden).init(device),
            value_fc2: LinearConfig::new(cfg.value_hidden, 1).init(device),
            input_version: cfg.input_version,
        }
    }

    /// The input plane layout the network reads.
    pub fn input_version(&self) -> u32 {
        self.input_version
    }

    /// Policy logits and values.
    pub fn forward(&self, x: Tensor<4>) -> (Tensor<2>, Tensor<2>) {
        let [b, _, _, _] = x.dims();
        let mut h = relu(self.stem_bn.forward(self.stem.forward(x)));
        for block in &self.blocks {
            h = block.forward(h);
        }
        let p = relu(self.policy_bn.forward(self.policy_conv.forward(h.clone())));
        let p: Tensor<2> = p.reshape([b as i32, -1]);
        let logits = self.policy_fc.forward(p);
        let v = relu(self.value_bn.forward(self.value_conv.forward(h)));
        let v: Tensor<2> = v.reshape([b as i32, -1]);
        let v = relu(self.value_fc1.forward(v));
        let value = tanh(self.value_fc2.forward(v));
        (logits, value)
    }
}
