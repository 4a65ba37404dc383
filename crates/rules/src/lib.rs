//! # bredon-rules
//!
//! Fast rules of Tak for board sizes 3 to 8: bitboards, compact 16-bit moves, legal move
//! generation, checked `play` and unchecked `make`/`unmake`, road and flat wins with komi,
//! Zobrist hashing, the eight board symmetries, scoring, PTN and TPS notation, and perft.
//!
//! This crate has no machine-learning dependency; everything else in Bredon builds on it.
//!
//! ```
//! use bredon_rules::{Position, perft::perft};
//! let mut pos = Position::new(5).unwrap();
//! assert_eq!(perft(&mut pos, 2), 600);
//! ```

pub mod bitboard;
mod display;
pub mod moves;
pub mod notation;
pub mod perft;
pub mod position;
pub mod scoring;
pub mod symmetry;
pub mod tactics;
pub mod testdata;
pub mod types;
mod zobrist;

pub use bitboard::{BitIter, Bitboard, SizeInfo};
pub use moves::Move;
pub use position::{GameOptions, Position, RulesError, Stack, Undo};
pub use symmetry::Symmetry;
pub use types::{
    Color, Direction, GameResult, MAX_SIZE, MIN_SIZE, Piece, PieceKind, Square, WinKind, default_reserves,
};
