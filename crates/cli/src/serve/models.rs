//! The engines the page can pick: `auto` (the shipped `NxN.bredon` of the game's size,
//! else the uniform evaluator), `uniform`, and models given with `--model` or uploaded.

use bredon_infer::Compute;
use bredon_mcts::{Evaluator, UniformEvaluator};
use bredon_nn::Heads;
use bredon_nn::checkpoint::load_exported_bytes;
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::error::ApiError;
use crate::model_arg::{self, ModelFiles};
use bredon_netform::ModelMeta;

/// Which engine a search uses, parsed once from the request's `model` string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelChoice {
    /// The shipped model of the game's size, else the uniform evaluator.
    Auto,
    /// The uniform evaluator (no network).
    Uniform,
    /// A model listed by `/api/info` (given with `--model` or uploaded).
    Id(String),
}

impl ModelChoice {
    /// `auto` (or absent), `uniform`, or a model id.
    pub fn parse(s: Option<&str>) -> ModelChoice {
        match s.map(str::trim) {
            None | Some("") | Some("auto") => ModelChoice::Auto,
            Some("uniform") => ModelChoice::Uniform,
            Some(id) => ModelChoice::Id(id.to_string()),
        }
    }
}

/// A loaded engine.
pub struct Engine {
    /// What the page calls it (a file name, or "the uniform evaluator").
    pub name: String,
    /// What the search calls.
    pub evaluator: Arc<dyn Evaluator>,
    /// The network's other heads (margin, ownership); `None` for the uniform evaluator.
    pub heads: Option<Arc<Heads>>,
}

/// A model the page can pick by id.
#[derive(Clone, Debug, Serialize)]
pub struct ModelInfo {
    /// Its id for the `model` field of a search.
    pub id: String,
    /// File name.
    pub name: String,
    /// Board size it plays.
    pub size: usize,
    /// Komi (half points) it was trained with.
    pub half_komi: i8,
}

/// The engines, loaded once and shared by every search.
pub struct Models {
    dirs: Vec<PathBuf>,
    named: Mutex<Vec<(ModelInfo, Arc<Engine>)>>,
    added: std::sync::atomic::AtomicUsize,
    shipped: Mutex<HashMap<usize, Arc<Engine>>>,
    /// Where the networks run.
    compute: Compute,
}

/// The largest model file accepted by an upload.
pub const MAX_UPLOAD: usize = 64 * 1024 * 1024;
/// The most uploaded models kept (the oldest upload goes first).
const MAX_UPLOADS: usize = 16;

impl Models {
    /// Models from `dirs` (searched for `NxN.bredon`) and the files in `extra`, run on
    /// `compute`.
    pub fn new(dirs: Vec<PathBuf>, extra: &[PathBuf], compute: Compute) -> anyhow::Result<Models> {
        let models = Models {
            dirs,
            named: Mutex::new(Vec::new()),
            added: Default::default(),
            shipped: Mutex::new(HashMap::new()),
            compute,
        };
        for path in extra {
            let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
            let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into());
            models.add(&bytes, &name, "model").map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        }
        Ok(models)
    }

    /// The `NxN.bredon` file the `auto` choice plays `size` with, if there is one.
    pub fn shipped_file(&self, size: usize) -> Option<PathBuf> {
        model_arg::find_model(&self.dirs, size)
    }

    /// The model `auto` plays `size` with when it has none of its own: the nearest size's
    /// that has no layer sized by its board, carried to `size` (as `bredon tei` does;
    /// [`ModelFiles::for_size`]).
    pub fn carried_file(&self, size: usize) -> Option<(PathBuf, ModelMeta)> {
        if self.shipped_file(size).is_some() {
            return None;
        }
        ModelFiles::find(&self.dirs).ok()?.for_size(size).cloned()
    }

    /// Loads a model from the bytes of a `.bredon` file and lists it under a new id
    /// (`PREFIX-N`).
    pub fn add(&self, bytes: &[u8], name: &str, prefix: &str) -> Result<ModelInfo, ApiError> {
        let (net, meta, _) = load_exported_bytes(bytes, name)
            .map_err(|e| ApiError::bad(format!("{name} is not a model Bredon can load: {e:#}")))?;
        let mut named = self.named.lock().unwrap_or_else(|p| p.into_inner());
        let n = self.added.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let id = format!("{prefix}-{n}");
        let info = ModelInfo { id, name: name.to_string(), size: meta.size, half_komi: meta.half_komi };
        let engine = network(name.to_string(), net, meta.size, &self.compute);
        if prefix == "upload" && named.iter().filter(|(m, _)| m.id.starts_with("upload")).count() >= MAX_UPLOADS {
            let oldest = named.iter().position(|(m, _)| m.id.starts_with("upload")).expect("counted");
            named.remove(oldest);
        }
        named.push((info.clone(), Arc::new(engine)));
        Ok(info)
    }

    /// The models that can be picked by id.
    pub fn list(&self) -> Vec<ModelInfo> {
        self.named.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(m, _)| m.clone()).collect()
    }

    /// Checks `choice` for a game of `size` now (an unknown id or a model of another size
    /// is a 400), without loading anything.
    pub fn check(&self, choice: &ModelChoice, size: usize) -> Result<(), ApiError> {
        if let ModelChoice::Id(id) = choice {
            let named = self.named.lock().unwrap_or_else(|p| p.into_inner());
            let Some((info, _)) = named.iter().find(|(m, _)| &m.id == id) else {
                return Err(ApiError::bad(format!("no model {id:?} (see /api/info for the models)")));
            };
            if info.size != size {
                return Err(ApiError::bad(format!(
                    "model {} plays {2}x{2}, the game is {1}x{1}",
                    info.name, size, info.size
                )));
            }
        }
        Ok(())
    }

    /// The engine for `choice` on `size`, loading the shipped model the first time it is
    /// needed (slow: call it off the request path).
    pub fn engine(&self, choice: &ModelChoice, size: usize) -> Result<Arc<Engine>, ApiError> {
        self.check(choice, size)?;
        match choice {
            ModelChoice::Uniform => Ok(uniform()),
            ModelChoice::Id(id) => {
                let named = self.named.lock().unwrap_or_else(|p| p.into_inner());
                Ok(named.iter().find(|(m, _)| &m.id == id).map(|(_, e)| e.clone()).expect("checked"))
            }
            ModelChoice::Auto => {
                let mut shipped = self.shipped.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(e) = shipped.get(&size) {
                    return Ok(e.clone());
                }
                let engine = match self.shipped_file(size) {
                    Some(path) => Arc::new(load_file(&path, &self.compute)?),
                    None => match self.carried_file(size) {
                        Some((path, meta)) => Arc::new(load_carried(&path, &meta, size, &self.compute)?),
                        None => uniform(),
                    },
                };
                shipped.insert(size, engine.clone());
                Ok(engine)
            }
        }
    }
}

fn uniform() -> Arc<Engine> {
    Arc::new(Engine { name: "the uniform evaluator".into(), evaluator: Arc::new(UniformEvaluator), heads: None })
}

/// A network's engine: the search's evaluator and its heads.
fn network(name: String, net: bredon_nn::TakNet, size: usize, compute: &Compute) -> Engine {
    let heads = Some(Arc::new(Heads::new(net.clone(), size)));
    Engine { name, evaluator: Arc::new(compute.evaluator(net, size, 1)), heads }
}

fn load_file(path: &Path, compute: &Compute) -> Result<Engine, ApiError> {
    let (net, meta) =
        bredon_nn::load_exported(path).map_err(|e| ApiError::Internal(format!("loading {}: {e:#}", path.display())))?;
    Ok(network(path.display().to_string(), net, meta.size, compute))
}

/// The model at `path` (trained on `meta.size`) carried to `size` boards.
fn load_carried(path: &Path, meta: &ModelMeta, size: usize, compute: &Compute) -> Result<Engine, ApiError> {
    let (net, _) = model_arg::load_net_for_size(path, size)
        .map_err(|e| ApiError::Internal(format!("loading {}: {e:#}", path.display())))?;
    let t = meta.size;
    Ok(network(format!("{} (a {t}x{t} network carried to {size}x{size})", path.display()), net, size, compute))
}
