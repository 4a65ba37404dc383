//! Bredon's run storage: the files of a run, on a local disk or an S3-compatible object
//! store, written atomically and checksummed. Knows bytes and JSON, not networks, games
//! or runs (no ML dependency: it sits below `bredon-nn`).
//!
//! - [`fsutil`]: crash-safe local writes (temp file, fsync, rename), stale-temp cleanup.
//! - [`integrity`]: CRC-32C trailers and checked JSON.
//! - [`RunLocation`]: `--run` parsed once: a local path or `s3://BUCKET/PREFIX`.
//! - [`Store`]: atomic put, get, list by prefix, delete, create-if-absent and conditional
//!   replace, on a local directory or an object store (`object_store`, with retries).
//! - [`Lease`]: one holder of an object at a time, renewed, lapsing when the holder dies.
//! - [`bundle`]: several files in one object (a batch of games in one upload).
//!
//! **API boundary**: all of the above; errors are [`StorageError`].

pub mod bundle;
mod error;
pub mod fsutil;
pub mod integrity;
mod lease;
mod location;
mod store;

pub use error::{Result, StorageError, error_chain};
pub use lease::{Lease, LeaseRecord, holder_name, unique_token};
pub use location::RunLocation;
pub use store::{RETRY_ENV, RetryPolicy, Store, Version};
