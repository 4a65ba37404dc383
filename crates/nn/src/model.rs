//! The residual policy/value network.

use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::prelude::*;
use burn::tensor::activation::{relu, softmax, tanh};
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
    /// Win/draw/loss value head: the value head ends in 3 logits (win, draw, loss for the
    /// side to move) trained by cross-entropy against the game's outcome, and the value
    /// the search uses is P(win) − P(loss). Off: one tanh output trained by squared error.
    #[serde(skip_serializing_if = "is_false")]
    pub wdl: bool,
    /// Auxiliary heads (KataGo-style), trained but not used by the search: the final flat
    /// margin (from the value head's hidden layer), the final owner of every square (a
    /// 1x1 convolution of the trunk, tanh), and the opponent's reply policy (a second
    /// dense layer on the policy head's features).
    #[serde(skip_serializing_if = "is_false")]
    pub aux: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_default_input_version(v: &u32) -> bool {
    *v == DEFAULT_INPUT_VERSION
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig { size: 0, blocks: 4, channels: 48, value_hidden: 64, policy_filters: 8, input_version: DEFAULT_INPUT_VERSION, wdl: false, aux: false }
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

    /// Short name such as `b4c48` (`b4c48-v2-wdl-aux` for input version 2 with the
    /// optional heads).
    pub fn name(&self) -> String {
        let mut s = format!("b{}c{}", self.blocks, self.channels);
        if self.input_version != DEFAULT_INPUT_VERSION {
            s.push_str(&format!("-v{}", self.input_version));
        }
        if self.wdl {
            s.push_str("-wdl");
        }
        if self.aux {
            s.push_str("-aux");
        }
        s
    }

    /// Outputs of the value head's last layer: 3 with [`NetConfig::wdl`], else 1.
    pub fn value_outputs(&self) -> usize {
        if self.wdl { 3 } else { 1 }
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

/// Every output of the network for a batch of `B` positions.
#[derive(Clone, Debug)]
pub struct NetOutput {
    /// Policy logits `[B, policy_size(N)]`.
    pub policy: Tensor<2>,
    /// Values `[B, 1]` in [-1, 1] for the side to move (P(win) − P(loss) with WDL).
    pub value: Tensor<2>,
    /// Win/draw/loss logits `[B, 3]` (with [`NetConfig::wdl`]).
    pub wdl: Option<Tensor<2>>,
    /// Predicted final flat margin / N² for the side to move `[B, 1]` (with `aux`).
    pub flat_margin: Option<Tensor<2>>,
    /// Predicted final owner of each square `[B, N²]` in [-1, 1], +1 = the side to move
    /// (with `aux`).
    pub ownership: Option<Tensor<2>>,
    /// The opponent's next-move policy logits `[B, policy_size(N)]` (with `aux`).
    pub opponent_policy: Option<Tensor<2>>,
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
    /// `value_hidden` to 1 (tanh value) or 3 (WDL logits).
    pub(crate) value_fc2: Linear,
    /// Auxiliary: `value_hidden` to the flat margin.
    pub(crate) margin_fc: Option<Linear>,
    /// Auxiliary: 1x1 convolution of the trunk to one ownership plane (with bias, no BN).
    pub(crate) ownership_conv: Option<Conv2d>,
    /// Auxiliary: the policy features to the opponent's policy logits.
    pub(crate) opponent_policy_fc: Option<Linear>,
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
            value_fc2: LinearConfig::new(cfg.value_hidden, cfg.value_outputs()).init(device),
            margin_fc: cfg.aux.then(|| LinearConfig::new(cfg.value_hidden, 1).init(device)),
            ownership_conv: cfg.aux.then(|| Conv2dConfig::new([c, 1], [1, 1]).with_bias(true).init(device)),
            opponent_policy_fc: cfg
                .aux
                .then(|| LinearConfig::new(cfg.policy_filters * n * n, policy_size(n)).init(device)),
            input_version: cfg.input_version,
        }
    }

    /// Whether the value head gives win/draw/loss logits.
    pub fn wdl(&self) -> bool {
        self.value_fc2.weight.dims()[1] == 3
    }

    /// Whether the auxiliary heads are present.
    pub fn aux(&self) -> bool {
        self.margin_fc.is_some()
    }

    /// The input plane layout the network reads.
    pub fn input_version(&self) -> u32 {
        self.input_version
    }

    /// Policy logits and values.
    pub fn forward(&self, x: Tensor<4>) -> (Tensor<2>, Tensor<2>) {
        let out = self.forward_all(x, false);
        (out.policy, out.value)
    }

    /// Every output; the auxiliary heads only with `aux` (and when the network has them).
    pub fn forward_all(&self, x: Tensor<4>, aux: bool) -> NetOutput {
        let [b, _, _, _] = x.dims();
        let mut h = relu(self.stem_bn.forward(self.stem.forward(x)));
        for block in &self.blocks {
            h = block.forward(h);
        }
        let p = relu(self.policy_bn.forward(self.policy_conv.forward(h.clone())));
        let p: Tensor<2> = p.reshape([b as i32, -1]);
        let logits = self.policy_fc.forward(p.clone());
        let aux = aux && self.aux();
        let ownership = self.ownership_conv.as_ref().filter(|_| aux).map(|conv| {
            let o: Tensor<2> = conv.forward(h.clone()).reshape([b as i32, -1]);
            tanh(o)
        });
        let opponent_policy = self.opponent_policy_fc.as_ref().filter(|_| aux).map(|fc| fc.forward(p));
        let v = relu(self.value_bn.forward(self.value_conv.forward(h)));
        let v: Tensor<2> = v.reshape([b as i32, -1]);
        let v = relu(self.value_fc1.forward(v));
        let flat_margin = self.margin_fc.as_ref().filter(|_| aux).map(|fc| fc.forward(v.clone()));
        let z = self.value_fc2.forward(v);
        let (value, wdl) = if self.wdl() {
            let prob = softmax(z.clone(), 1);
            (prob.clone().narrow(1, 0, 1) - prob.narrow(1, 2, 1), Some(z))
        } else {
            (tanh(z), None)
        };
        NetOutput { policy: logits, value, wdl, flat_margin, ownership, opponent_policy }
    }
}
