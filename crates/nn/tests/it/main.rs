//! bredon-nn's integration tests, built as one binary instead of one per file: each test
//! binary is compiled and linked with every crate under it on its own, which made these
//! files several times dearer to build than their code (docs/testing.md). One file's
//! tests: `cargo test --release -p bredon-nn --test it <file>::`. The tests that need
//! the forward passes of `bredon-kernels` and `bredon-infer` or the ONNX writer are in
//! `crates/infer/tests/it`.

mod hostile;
mod integrity;
