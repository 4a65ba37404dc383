//! [`Models`]: the networks the engine plays with, one per board size, given as values.

use std::collections::BTreeMap;
use std::sync::Arc;

use bredon_mcts::Evaluator;

use super::error::ModelsError;

/// One board size's network as the engine sees it: what the search calls, the komi it was
/// trained for and a name for messages (its file, for the engine of `bredon tei`).
#[derive(Clone)]
pub struct Model {
    /// What the search calls.
    pub evaluator: Arc<dyn Evaluator>,
    /// The komi (half points) the network was trained with, if known: a game with another
    /// komi gets one `info string warning` (the network's values are biased there).
    pub trained_half_komi: Option<i8>,
    /// Named in warnings (a file path, a model id).
    pub name: String,
}

/// The engine's networks by board size. A size without one is searched with the uniform
/// evaluator (and a warning, unless the set is empty: an engine asked to play without
/// networks).
#[derive(Clone, Default)]
pub struct Models {
    by_size: BTreeMap<usize, Model>,
}

impl Models {
    /// No network: every size is searched with the uniform evaluator.
    pub fn none() -> Models {
        Models::default()
    }

    /// Adds the network for `size`; a second one for the same size is an error.
    pub fn insert(&mut self, size: usize, model: Model) -> Result<(), ModelsError> {
        if !bredon_tei::SIZES.contains(&size) {
            return Err(ModelsError::BadSize { size, name: model.name });
        }
        if let Some(first) = self.by_size.get(&size) {
            return Err(ModelsError::TwoForOneSize { size, first: first.name.clone(), second: model.name });
        }
        self.by_size.insert(size, model);
        Ok(())
    }

    /// The network for `size`.
    pub fn get(&self, size: usize) -> Option<&Model> {
        self.by_size.get(&size)
    }

    /// The board sizes that have a network, smallest first.
    pub fn sizes(&self) -> impl Iterator<Item = usize> + '_ {
        self.by_size.keys().copied()
    }

    /// No network at all.
    pub fn is_empty(&self) -> bool {
        self.by_size.is_empty()
    }
}
