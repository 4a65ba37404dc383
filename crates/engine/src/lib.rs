//! Bredon at play time: the engines that front ends (`bredon tei`, `bredon analyse
//! --json`, the WebSocket listener) drive line by line. The binary only wires them to
//! stdin/stdout or a socket.
//!
//! **API boundary**: the engine types of each module; errors are this crate's own enums.

pub mod analysis;
pub mod tei;
