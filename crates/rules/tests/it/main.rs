//! bredon-rules's integration tests, built as one binary instead of one per file: each test
//! binary is compiled and linked with every crate under it on its own, which made these
//! files several times dearer to build than their code (docs/testing.md). One file's
//! tests: `cargo test --release -p bredon-rules --test it <file>::`.

mod games;
mod perft;
mod proptests;
mod tactics;
