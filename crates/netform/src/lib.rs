//! # bredon-netform
//!
//! The portable form of Bredon's network: what every backend shares, with no ML
//! framework. burn's model and training step (`bredon-nn`), the CPU and GPU kernels
//! (`bredon-kernels`) and the ONNX writer (`bredon-onnx`) all build on it.
//!
//! - [`config`]: the architecture as data ([`NetConfig`], [`PolicyHead`], [`ValueHead`]).
//! - [`encoding`]: the input planes (documented there), from the side to move's view, and
//!   their compact form for the GPU.
//! - [`policy`]: the fixed move index space per board size and the legal-move softmax.
//! - [`folded`]: the weights in inference form ([`FoldedNet`]: BatchNorm folded into the
//!   convolutions) and [`Matrix`], the layout the kernels pack from.
//! - [`health`]: the network's health as its weights show it (dead channels, tiny
//!   weights, norms per layer).
//! - [`meta`]: [`ModelMeta`], what a model file says it is.
//! - [`limits`]: bounds on the architecture and metadata a model file may describe,
//!   checked before anything is allocated ([`ModelFileError`]).
//! - [`denormals`]: denormal floats flushed to zero while a guard lives.
//! - [`positions`]: positions from random games, for start-up checks, tests and benchmarks.
//!
//! **API boundary**: everything here is plain data and pure functions over
//! `bredon_rules` positions. **Invariant**: no ML framework (`.ci/run` checks that no
//! `burn` crate is in its dependency tree).

pub mod config;
pub mod denormals;
pub mod encoding;
pub mod folded;
pub mod health;
pub mod limits;
pub mod meta;
pub mod policy;
pub mod positions;

pub use config::{NetConfig, PolicyHead, ValueHead};
pub use folded::{FoldedConv, FoldedLinear, FoldedNet, Matrix};
pub use limits::ModelFileError;
pub use meta::{ModelMeta, StageProgress};
