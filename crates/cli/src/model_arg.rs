//! Loading a model given on the command line into an evaluator for the search.

use anyhow::{Result, bail};
use bredon_mcts::{Evaluator, UniformEvaluator};
use bredon_nn::checkpoint::ModelMeta;
use bredon_nn::{NetEvaluator, load_exported};
use std::path::Path;
use std::sync::Arc;

/// A loaded player brain: the evaluator and, for a network, its metadata.
pub struct LoadedModel {
    /// What the search calls.
    pub evaluator: Arc<dyn Evaluator>,
    /// Metadata of the network; `None` for the uniform evaluator.
    pub meta: Option<ModelMeta>,
}

/// Loads `path` (an exported `.bredon` file or a checkpoint directory), or the uniform
/// evaluator when `path` is `None`. With `size`, checks the model fits that board.
pub fn load(path: Option<&Path>, size: Option<usize>) -> Result<LoadedModel> {
    let Some(path) = path else {
        return Ok(LoadedModel { evaluator: Arc::new(UniformEvaluator), meta: None });
    };
    let (model, meta) = load_exported(path)?;
    if let Some(s) = size
        && s != meta.size
    {
        bail!("{} is a {}x{} model, not {s}x{s}", path.display(), meta.size, meta.size);
    }
    Ok(LoadedModel { evaluator: Arc::new(NetEvaluator::new(model, meta.size)), meta: Some(meta) })
}
