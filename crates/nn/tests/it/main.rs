//! bredon-nn's integration tests, built as one binary instead of one per file: each test
//! binary is compiled and linked with every crate under it on its own, which made these
//! files several times dearer to build than their code (docs/testing.md). One file's
//! tests: `cargo test --release -p bredon-nn --test it <file>::`.

mod common;
mod fast;
mod gpool;
mod hostile;
mod integrity;
mod nn;
mod onnx;
#[cfg(feature = "wgpu")]
mod wgpu;
