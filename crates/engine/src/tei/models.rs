//! [`Models`]: the networks the engine plays with, one per board size, given as values or
//! loaded on first use.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

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

/// Builds a board size's network when the engine first needs it; an error is a message
/// for an `info string` line.
pub type Loader = dyn Fn() -> Result<Net, String> + Send + Sync;

/// One board size's network as the engine sees it: given, or built by a [`Loader`] the first
/// time a game of its size needs it (then kept, and shared by every clone: the engines of
/// `bredon tei --listen`'s connections load a network once). A name for messages (its
/// file, for the engine of `bredon tei`) and, for a network trained on another size
/// that plays this one, that size.
#[derive(Clone)]
pub struct Model {
    /// Named in warnings (a file path, a model id).
    pub name: String,
    /// The board size the network was trained on when it is not the size it plays here
    /// (a network carried to another size: no model of this size was given).
    pub trained_size: Option<usize>,
    loader: Option<Arc<Loader>>,
    net: Arc<OnceLock<Result<Net, String>>>,
}

impl Model {
    /// A network that is already built.
    pub fn ready(net: Net, name: impl Into<String>) -> Model {
        let cell = OnceLock::new();
        let _ = cell.set(Ok(net));
        Model { name: name.into(), trained_size: None, loader: None, net: Arc::new(cell) }
    }

    /// A network `load` builds the first time a game needs it.
    pub fn lazy(name: impl Into<String>, load: Arc<Loader>) -> Model {
        Model { name: name.into(), trained_size: None, loader: Some(load), net: Arc::new(OnceLock::new()) }
    }

    /// The same, said to be a network trained on `size` boards playing another size.
    pub fn trained_on(self, size: usize) -> Model {
        Model { trained_size: Some(size), ..self }
    }

    /// The network, built now if this is its first use; the loader's error (kept: a
    /// network that failed to load is not tried at every move).
    pub fn net(&self) -> Result<&Net, &str> {
        let built = self.net.get_or_init(|| match &self.loader {
            Some(load) => load(),
            None => Err("no network".to_string()),
        });
        built.as_ref().map_err(String::as_str)
    }

    /// Whether the network has been built (or failed to be).
    pub fn is_loaded(&self) -> bool {
        self.net.get().is_some()
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
