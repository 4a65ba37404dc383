//! # bredon-kernels
//!
//! The network's forward pass outside any ML framework, for search: both paths start from
//! the folded weights ([`bredon_netform::FoldedNet`]) and give the search what it uses
//! (policy logits or priors, value, draw probability, flat margin).
//!
//! - [`fast`]: the CPU fast path ([`FastNet`]): channels-last implicit-GEMM kernels,
//!   AVX-512 / AVX2+FMA / portable, picked at run time ([`Isa`]), the residual blocks in
//!   single precision, bfloat16 on the AMX tiles or 8-bit integers on AVX-512 VNNI
//!   ([`Precision`]).
//! - [`wgsl`] (feature `wgpu`): Bredon's own WGSL kernels on a wgpu adapter, the GPU
//!   twin of the fast path, the trunk in an [`Arithmetic`].
//! - [`arithmetic`], [`times`]: the WGSL trunk's arithmetic, and a pass's time phase by
//!   phase (for benchmarks).
//!
//! **API boundary**: a kernel set is built from a `FoldedNet` and takes positions; it
//! knows nothing of burn, devices as burn sees them, or the search. **Invariants**: no
//! ML framework in the dependency tree (`.ci/run` checks it; the tests compare with burn
//! through a dev-dependency); the fast path agrees with burn's forward pass within 1e-4
//! (its bf16 and 8-bit blocks with single precision within issue 66's bars: value p99 0.02, the
//! same top move in 98 % of positions, policy KL 0.01), and the WGSL kernels with it
//! within 1e-3.

mod aligned;
mod amx;
pub mod arithmetic;
mod f32;
pub mod fast;
mod int8;
pub mod precision;
mod tiles;
pub mod times;
#[cfg(feature = "wgpu")]
pub mod wgsl;

pub use arithmetic::{Arithmetic, UnknownArithmetic};
pub use fast::{FastNet, Isa, Scalars};
pub use precision::{Precision, UnknownPrecision};
pub use times::PassTimes;
