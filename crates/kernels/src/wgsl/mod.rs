//! Bredon's own forward pass for the search on a wgpu device (Vulkan, Metal, DirectX 12):
//! WGSL kernels over the folded weights ([`FoldedNet`]), the GPU twin of the CPU's fast
//! path ([`crate::fast`]). burn stays for training.
//!
//! A pass is one submission: the positions are encoded on the host in a compact form (a
//! `u32` per square and eight constants, `bredon_netform::encoding::encode_compact`: 176 bytes a
//! 6x6 position instead of 7,936 of planes) and uploaded with each position's legal moves;
//! a first kernel (`wgsl/expand.wgsl`) writes the input planes, channels-last on the
//! zero-padded board, from it on the device (the same floats as the host's planes, to the
//! bit); every layer runs as one matrix kernel (`wgsl/gemm.wgsl`: the stem, two 3x3
//! convolutions per residual block with the residual added in place, the 1x1 heads, the
//! policy's last layer and the value head's dense layer), with global pooling, value
//! pooling, the value head's last layer and the legal moves' softmax as small kernels of
//! their own; only the search's outputs come back (per position its value, draw
//! probability, flat margin and priors over its legal moves: a few hundred floats on 6x6,
//! not 9,180 logits). All activations stay on the device. Each [`WgslNet`] holds two sets
//! of buffers so that a batch can be launched while the previous one is still running
//! ([`WgslNet::launch`], [`Ticket::finish`]).
//!
//! The kernels run any network the fast path runs (dense or convolutional policy head,
//! pooled or dense value head, global pooling of up to 64 channels, boards up to 8x8).

mod arith;
mod build;
mod error;
mod net;
mod pass;
#[cfg(test)]
mod tests;

pub use error::{WgslError, adapter_named};
pub use net::{AGREEMENT_TOLERANCE, SEARCH_CHECK_POSITIONS, Ticket, WgslNet, WgslOutputs};
/// The wgpu this crate runs on (the same as burn's wgpu backend's).
pub use wgpu;
