//! [`Models`]: the networks the engine plays with, one per board size, given as values or
//! loaded on first use.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use bredon_infer::PrecisionChoice;
use bredon_mcts::Evaluator;

use super::error::ModelsError;

/// A network ready to search with: what the search calls and the komi it was trained for.
#[derive(Clone)]
pub struct Net {
    /// What the search calls.
    pub evaluator: Arc<dyn Evaluator>,
    /// The komi (half points) the network was trained with, if known: a game with another
    /// komi gets one `info string warning` (the network's values are biased there).
    pub trained_half_komi: Option<i8>,
}

/// Builds a board size's network, in the fast path's arithmetic asked for, when the engine
/// first needs it; an error is a message for an `info string` line.
pub type Loader = dyn Fn(PrecisionChoice) -> Result<Net, String> + Send + Sync;

/// What a model holds: one network whatever the precision, or those a loader built.
#[derive(Clone)]
enum Built {
    Ready(Net),
    Lazy { load: Arc<Loader>, built: Arc<Mutex<HashMap<PrecisionChoice, Result<Net, String>>>> },
}

/// One board size's network as the engine sees it: given, or built by a [`Loader`] the first
/// time a game of its size needs it in a precision (then kept, and shared by every clone:
/// the engines of `bredon tei --listen`'s connections load a network once). A name for
/// messages (its file, for the engine of `bredon tei`) and, for a network trained on
/// another size that plays this one, that size.
#[derive(Clone)]
pub struct Model {
    /// Named in warnings (a file path, a model id).
    pub name: String,
    /// The board size the network was trained on when it is not the size it plays here
    /// (a network carried to another size: no model of this size was given).
    pub trained_size: Option<usize>,
    built: Built,
}

impl Model {
    /// A network that is already built (it plays in whatever precision it was built in).
    pub fn ready(net: Net, name: impl Into<String>) -> Model {
        Model { name: name.into(), trained_size: None, built: Built::Ready(net) }
    }

    /// A network `load` builds the first time a game needs it in a precision.
    pub fn lazy(name: impl Into<String>, load: Arc<Loader>) -> Model {
        let built = Built::Lazy { load, built: Arc::default() };
        Model { name: name.into(), trained_size: None, built }
    }

    /// The same, said to be a network trained on `size` boards playing another size.
    pub fn trained_on(self, size: usize) -> Model {
        Model { trained_size: Some(size), ..self }
    }

    /// The network in `precision`, built now if this is its first use so; the loader's
    /// error (kept: a network that failed to load is not tried at every move).
    pub fn net(&self, precision: PrecisionChoice) -> Result<Net, String> {
        match &self.built {
            Built::Ready(net) => Ok(net.clone()),
            Built::Lazy { load, built } => {
                let mut built = built.lock().unwrap_or_else(|p| p.into_inner());
                built.entry(precision).or_insert_with(|| load(precision)).clone()
            }
        }
    }

    /// Whether the network has been built in `precision` (or failed to be).
    pub fn is_loaded(&self, precision: PrecisionChoice) -> bool {
        match &self.built {
            Built::Ready(_) => true,
            Built::Lazy { built, .. } => built.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&precision),
        }
    }
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
