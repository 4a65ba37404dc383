//! bredon-cli's integration tests, built as one binary instead of one per file: each test
//! binary is compiled and linked with every crate under it on its own, which made these
//! files several times dearer to build than their code (docs/testing.md). One file's
//! tests: `cargo test --release -p bredon-cli --test it <file>::`.

mod analysis_engine;
mod browser;
mod cli_rules;
mod common;
mod docs;
mod inspect;
mod object_store;
mod reliability;
mod tei;
mod tei_ws;
mod train;
#[cfg(feature = "wgpu")]
mod wgpu;
mod workers;
