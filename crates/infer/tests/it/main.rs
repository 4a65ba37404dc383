//! The network stack's end-to-end tests (burn's model, the CPU and WGSL kernels, the
//! inference service, the ONNX export), built as one binary instead of one per file: each
//! test binary is compiled and linked with every crate under it on its own, which made
//! these files several times dearer to build than their code (docs/testing.md). One
//! file's tests: `cargo test --release -p bredon-infer --test it <file>::`.

mod bf16;
mod common;
mod fast;
mod gpool;
mod int8;
mod nn;
mod onnx;
#[cfg(feature = "wgpu")]
mod wgpu;
