//! # bredon-infer
//!
//! The network serving the search: the forward pass chosen for a device, a direct
//! evaluator and a batching service that implement `bredon_mcts::Evaluator`, and the
//! opened device as a [`Compute`] value.
//!
//! - [`kind`]: [`InferenceKind`], which forward pass the search uses (`auto`, `fast`,
//!   `burn`, `wgsl[:ARITHMETIC]`), parsed once.
//! - [`precision`]: [`PrecisionChoice`], the fast path's arithmetic (`auto`, `f32`,
//!   `int8`), and the agreement check `auto` holds an 8-bit pass to.
//! - [`engine`]: [`Engine`], a network ready for one of the passes (burn's forward pass,
//!   the CPU fast path or the WGSL kernels of `bredon-kernels`), and the passes' outputs.
//! - [`evaluator`]: [`NetEvaluator`], the direct evaluator for single searches.
//! - [`service`]: [`InferenceService`] and its [`InferenceHandle`]s, the batching pattern
//!   of self-play: one thread (per shard) owns the network, many searches send it positions.
//! - [`compute`]: [`Compute`], the opened device and the search's forward pass.
//! - `gpu` (feature `wgpu`): the WGSL kernels for a model on a burn device.
//!
//! **API boundary**: the rest of the workspace reaches a network's forward pass only
//! through `NetEvaluator`, `InferenceHandle` and `Compute`. **Invariant**: knows nothing
//! of runs, generations or matches.

pub mod compute;
pub mod engine;
pub mod evaluator;
#[cfg(feature = "wgpu")]
pub mod gpu;
pub mod kind;
pub mod precision;
pub mod service;

pub use bredon_kernels::Precision;
pub use compute::Compute;
pub use engine::{Engine, Forward, PolicyReadback, forward_raw, forward_timed};
pub use evaluator::NetEvaluator;
pub use kind::{InferenceKind, UnknownInference};
pub use precision::{Agreement, PrecisionChoice, UnknownPrecisionChoice};
pub use service::{InferenceHandle, InferenceService, ServiceTimes, auto_shards};
