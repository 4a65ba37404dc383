//! # bredon-selfplay
//!
//! The main job of Bredon: generations of self-play with the current network, a replay
//! window of stored games, training, checkpoints, and evaluation — resumable after a kill.

pub use bredon_storage::fsutil;
pub mod config;
pub mod curriculum;
pub mod error;
pub mod evaluate;
pub mod fit;
pub mod generation;
pub mod health;
pub mod heldout;
pub mod inherit;
pub mod net;
pub mod remote;
pub mod replay;
pub mod rundir;
pub mod tb;
pub mod to_go;
pub mod train;
pub mod verify;
pub mod window;
pub mod worker;
