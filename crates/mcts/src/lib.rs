//! # bredon-mcts
//!
//! PUCT Monte Carlo tree search for Tak. The search sees the network only through the
//! [`Evaluator`] trait, so this crate has no machine-learning dependency.

pub mod evaluator;

pub use evaluator::{Evaluation, Evaluator};
