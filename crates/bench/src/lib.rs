//! # bredon-bench
//!
//! The measuring logic of `bredon bench`: each benchmark takes plain arguments (a
//! network, a run config, a device, batch sizes, seconds) and returns what it measured as
//! plain report structs (rates, times, counts); the binary parses the flags and prints.
//!
//! Entry points, one module per benchmark:
//! - [`nn`]: forward-pass throughput per path and batch ([`nn::forward_table`], built on
//!   [`nn::forward_rate`], `nn::pipelined_rate` and [`nn::pass_times`]).
//! - `arithmetic` (feature `wgpu`): the WGSL kernels by the arithmetic of their trunk
//!   (`arithmetic::arithmetic_table`).
//! - [`compare`]: a network's heads on its device against the CPU, and the WGSL
//!   kernels against the fast path ([`compare::compare_with_cpu`]).
//! - [`selfplay`]: self-play through the batching service against the raw forward pass,
//!   and the host's share of it ([`selfplay::run`], [`selfplay::host_ceiling`]).
//! - [`train`]: the training step's throughput and its phases ([`train::train_rate`],
//!   [`train::step_phases`], [`train::compare_with_cpu`]).
//! - [`search`]: play-time search speed per thread count and evaluation cache
//!   ([`search::run`]).
//! - [`error`]: the benchmarks' errors, [`BenchError`].
//!
//! **API boundary**: measures and returns numbers; prints nothing. The tables that take
//! long hand each row to a callback as soon as it is measured, so that the front end can
//! print as they come. Reads no flags and no files (the self-play benchmark writes its
//! games to a temporary directory). **Invariant**: every rate's loop runs at least one
//! pass or step (and for about the seconds asked for), so no rate divides by zero; the
//! timing loops are the ones `bredon bench` always ran, so their numbers compare with
//! earlier ones. No `anyhow` (`.ci/run` checks it).

#[cfg(feature = "wgpu")]
pub mod arithmetic;
pub mod compare;
pub mod error;
pub mod nn;
pub mod search;
pub mod selfplay;
pub mod train;

pub use error::BenchError;
