//! # bredon-nn
//!
//! Bredon's policy/value network on burn (flex backend, pure Rust CPU; `wgpu` and `cuda`
//! backends behind the cargo features of those names): the model, its training step,
//! checkpoints and exports. The network's portable form (architecture, encoding, policy
//! index, folded weights, file limits) is `bredon-netform`; the search's forward pass is
//! served by `bredon-infer`.
//!
//! - [`model`]: the residual CNN ([`TakNet`]) built from a `NetConfig`.
//! - [`rows`]: the same forward pass with channels-last rows ([`Convolutions`]).
//! - [`fold`]: [`TakNet::fold`], the network in inference form (`FoldedNet`).
//! - [`train`]: the training step ([`Trainer`]); `optim`: the flat optimiser.
//! - [`activity`]: ReDo's τ-dormant units of every hidden ReLU layer on a batch.
//! - [`revive`]: ReDo's revival of those units (fresh weights in, zero weights out).
//! - [`heads`]: every head of a network for a few positions, for analysis front ends.
//! - [`checkpoint`]: `.bpk` weights with JSON metadata, optimiser state, exported models.
//! - [`weights`]: stored tensors checked against the architecture before loading.
//! - [`integrity`]: finite-weight checks (checksums are `bredon_storage::integrity`).
//! - [`draws`]: random draws from burn's one generator per process, reproducible across threads.
//! - [`device`]: where the network runs ([`DeviceChoice`]: cpu, wgpu, cuda), opened once.
//! - [`error`]: [`ModelError`] (checkpoints, exports).

pub mod activity;
pub mod average;
pub mod checkpoint;
pub mod device;
pub mod draws;
pub mod error;
pub mod fold;
pub mod heads;
pub mod integrity;
pub mod model;
mod optim;
pub mod revive;
pub mod rows;
pub mod train;
pub mod weights;

pub use average::{AverageError, average};
pub use checkpoint::{export_model, load_exported, load_model, save_model};
pub use error::ModelError;
pub use heads::{HeadDifference, HeadValues, Heads, HeadsError, Wdl, compare_devices};
pub use model::{Outputs, TakNet, TransferReport};
pub use rows::Convolutions;
pub use train::{
    LossSum, Losses, OptimizerKind, StepOutcome, StepPhase, TrainError, TrainExample, Trainer, WeightDecayMode,
};

pub use burn::prelude::Device;
pub use device::{DeviceChoice, DeviceError};
