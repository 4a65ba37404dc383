//! The network's architecture as data: [`NetConfig`] and its head kinds, what a model
//! file records and every backend (burn's model, the CPU and GPU kernels, the ONNX
//! writer) builds from.

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
    /// How the policy head turns its per-square features into move logits. Absent in the
    /// files of models older than the field, which are `dense` (and not written when
    /// dense, so those files stay readable by older builds).
    #[serde(skip_serializing_if = "PolicyHead::is_dense")]
    pub policy_head: PolicyHead,
    /// Global pooling bias in every residual block (KataGo, "Accelerating Self-Play
    /// Learning in Go", 2019): after the block's first convolution (+ BatchNorm + ReLU),
    /// its first `gpool_channels` channels are pooled over the board ((`bredon_nn::model::global_pool`):
    /// mean, mean × (N − 5)/2, max) and a dense layer (`3 × gpool_channels` to `channels`)
    /// gives a bias per channel, added to the block's activations before its second
    /// convolution. The dense layers start at zero, so a network with global pooling
    /// computes what the same network without it does (a trained model upgraded with
    /// `bredon_nn::TakNet::from_compatible` keeps its strength). Absent (off) in older files, and
    /// not written when off.
    #[serde(skip_serializing_if = "is_false")]
    pub global_pool: bool,
    /// Channels of each block that [`NetConfig::global_pool`] pools (1 to `channels`).
    /// Not written when 16 (the default).
    #[serde(skip_serializing_if = "is_default_gpool_channels")]
    pub gpool_channels: usize,
    /// How the value head reads the value convolution's features. Absent in the files of
    /// models older than the field, which are `dense` (and not written when dense).
    #[serde(skip_serializing_if = "ValueHead::is_dense")]
    pub value_head: ValueHead,
    /// Filters of the value head's 1x1 convolution. Not written when 2 (the default and
    /// the only value of models older than the field). With `value_head = "pool"` the
    /// hidden layer sees only `3 × value_filters` features, so 16 to 32 suit it better.
    #[serde(skip_serializing_if = "is_default_value_filters")]
    pub value_filters: usize,
}

/// The first layer of the value head after its convolution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueHead {
    /// The value convolution's `value_filters × N²` features flattened into the dense
    /// hidden layer (weights sized by the board).
    #[default]
    Dense,
    /// The value convolution's channels pooled over the board ((`bredon_nn::model::global_pool`): mean,
    /// mean × (N − 5)/2, max; `3 × value_filters` features) into the hidden layer: the
    /// value, WDL and flat-margin heads then have no weights sized by the board.
    Pool,
}

impl ValueHead {
    fn is_dense(&self) -> bool {
        *self == ValueHead::Dense
    }
}

/// Default of [`NetConfig::gpool_channels`].
pub const DEFAULT_GPOOL_CHANNELS: usize = 16;
/// Default of [`NetConfig::value_filters`].
pub const DEFAULT_VALUE_FILTERS: usize = 2;

fn is_default_gpool_channels(c: &usize) -> bool {
    *c == DEFAULT_GPOOL_CHANNELS
}

fn is_default_value_filters(c: &usize) -> bool {
    *c == DEFAULT_VALUE_FILTERS
}

/// The scale of the board-size feature of (`bredon_nn::model::global_pool`) on an `n`x`n` board:
/// `(n − 5) / 2` (−1 on 3x3, 0 on 5x5, 1.5 on 8x8; KataGo's `(√area − 14) / 10` moved to
/// Tak's board sizes), so a network can tell board sizes apart from pooled features.
pub fn pool_size_scale(n: usize) -> f32 {
    (n as f32 - 5.0) / 2.0
}

/// The last layer of the policy head (and of the opponent-policy head).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyHead {
    /// A dense layer from all `policy_filters × N²` features to every move: a weight per
    /// feature and move, `policy_filters × N² × policy_size(N)` in all (5.3 M of a 6x6
    /// b6c64 network's 5.8 M, with the opponent's head).
    #[default]
    Dense,
    /// A 1x1 convolution from each square's `policy_filters` features to the logits of
    /// the moves that start there (3 placements, 4 directions × `2^N − 1` drop patterns):
    /// weights shared across squares, `policy_filters × (3 + 4 (2^N − 1))` in all.
    Conv,
}

impl PolicyHead {
    fn is_dense(&self) -> bool {
        *self == PolicyHead::Dense
    }

    /// Logits per square of the convolutional head: 3 placements, then 4 directions ×
    /// `2^N − 1` drop patterns (the order of [`crate::policy`]).
    pub fn conv_outputs(size: usize) -> usize {
        policy_size(size) / (size * size)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_default_input_version(v: &u32) -> bool {
    *v == DEFAULT_INPUT_VERSION
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            size: 0,
            blocks: 4,
            channels: 48,
            value_hidden: 64,
            policy_filters: 8,
            input_version: DEFAULT_INPUT_VERSION,
            wdl: false,
            aux: false,
            policy_head: PolicyHead::Dense,
            global_pool: false,
            gpool_channels: DEFAULT_GPOOL_CHANNELS,
            value_head: ValueHead::Dense,
            value_filters: DEFAULT_VALUE_FILTERS,
        }
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
    /// optional heads, `…-convp` with the convolutional policy head, `…-g16` with global
    /// pooling of 16 channels, `…-vf32` with 32 value filters, `…-vp` with the pooling
    /// value head).
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
        if self.policy_head == PolicyHead::Conv {
            s.push_str("-convp");
        }
        if self.global_pool {
            s.push_str(&format!("-g{}", self.gpool_channels));
        }
        if self.value_filters != DEFAULT_VALUE_FILTERS {
            s.push_str(&format!("-vf{}", self.value_filters));
        }
        if self.value_head == ValueHead::Pool {
            s.push_str("-vp");
        }
        s
    }

    /// Inputs of the value head's hidden layer: `value_filters × N²` (dense) or
    /// `3 × value_filters` (pooled).
    pub fn value_features(&self) -> usize {
        match self.value_head {
            ValueHead::Dense => self.value_filters * self.size * self.size,
            ValueHead::Pool => 3 * self.value_filters,
        }
    }

    /// This config with the options that `bredon_nn::TakNet::from_compatible` can change in a
    /// trained network (the board size, global pooling, the value head's kind and filters,
    /// more residual blocks) taken from `other`: equal to `other` exactly when the two
    /// differ in nothing else.
    pub fn with_upgradable_options_of(&self, other: &NetConfig) -> NetConfig {
        NetConfig {
            size: other.size,
            global_pool: other.global_pool,
            gpool_channels: other.gpool_channels,
            value_head: other.value_head,
            value_filters: other.value_filters,
            // Residual blocks can be added (they start as the identity), not removed.
            blocks: self.blocks.max(other.blocks),
            ..self.clone()
        }
    }

    /// No layer of this network is sized by the board (convolutional policy heads, the
    /// pooling value head): `bredon_nn::TakNet::from_compatible` carries it whole to any
    /// other board size, where the moves its own size lacks start at logit 0.
    pub fn plays_every_size(&self) -> bool {
        self.policy_head == PolicyHead::Conv && self.value_head == ValueHead::Pool
    }

    /// Outputs of the value head's last layer: 3 with [`NetConfig::wdl`], else 1.
    pub fn value_outputs(&self) -> usize {
        if self.wdl { 3 } else { 1 }
    }

    /// Input planes of this network.
    pub fn planes(&self) -> usize {
        planes(self.input_version)
    }

    /// This config with `size` filled in (when 0) and `gpool_channels` at its default
    /// when `global_pool` is off.
    pub fn for_size(&self, size: usize) -> NetConfig {
        NetConfig {
            size: if self.size == 0 { size } else { self.size },
            // Without global pooling its channel count means nothing: the default, so that
            // a config that sets it compares equal to the model it trains.
            gpool_channels: if self.global_pool { self.gpool_channels } else { DEFAULT_GPOOL_CHANNELS },
            ..self.clone()
        }
    }
}
