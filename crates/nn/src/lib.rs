//! # bredon-nn
//!
//! Bredon's policy/value network on burn (flex backend, pure Rust CPU; `wgpu` and `cuda`
//! backends behind the cargo features of those names).
//!
//! - [`encoding`]: the input planes (documented there), from the side to move's view.
//! - [`policy`]: the fixed move index space per board size and the legal-move softmax.
//! - [`device`]: where the network runs ([`DeviceChoice`]: cpu, wgpu, cuda), chosen once.
//! - [`model`]: the residual CNN ([`NetConfig`], [`TakNet`]).
//! - [`folded`]: the weights with BatchNorm folded into the convolutions (inference form).
//! - [`fast`]: the fast inference path ([`fast::FastNet`]): channels-last implicit-GEMM
//!   kernels (AVX-512 / AVX2 / portable) outside burn; burn stays for training.
//! - [`wgsl`] (feature `wgpu`): the search's forward pass as Bredon's own WGSL kernels on
//!   a wgpu device, the GPU twin of the fast path.
//! - [`inference`]: [`NetEvaluator`] (implements `bredon_mcts::Evaluator`) and the batching
//!   [`InferenceService`]: one thread owns the model, many searches send it positions.
//! - [`positions`]: positions from random games, for start-up checks and benchmarks.
//! - [`train`]: the training step (policy cross-entropy against visit counts + value MSE).
//! - [`checkpoint`]: `.bpk` weights with JSON metadata, optimiser state, exported models.
//! - [`error`]: [`ModelError`] (checkpoints, exports) and [`error::OnnxError`].
//! - [`integrity`]: finite-weight checks (checksums are `bredon_storage::integrity`).
//! - [`limits`]: bounds on the architecture and weights a model file may describe,
//!   checked before anything is allocated.

pub mod checkpoint;
pub mod device;
pub mod encoding;
pub mod error;
pub mod fast;
pub mod folded;
pub mod heads;
pub mod inference;
pub mod integrity;
pub mod limits;
pub mod model;
pub mod onnx;
mod optim;
pub mod policy;
pub mod positions;
pub mod rows;
pub mod train;
#[cfg(feature = "wgpu")]
pub mod wgsl;

pub use checkpoint::{ModelMeta, export_model, load_exported, load_model, save_model};
pub use error::{ModelError, OnnxError};
pub use heads::{HeadDifference, HeadValues, Heads, HeadsError, Wdl, compare_devices};
pub use inference::{Arithmetic, InferenceKind, InferenceService, NetEvaluator, PassTimes, ServiceTimes};
pub use model::{NetConfig, Outputs, PolicyHead, TakNet, TransferReport, ValueHead};
pub use rows::Convolutions;
pub use train::{LossSum, Losses, OptimizerKind, StepOutcome, StepPhase, TrainError, TrainExample, Trainer};

pub use burn::prelude::Device;
pub use device::{Compute, DeviceChoice, DeviceError};
