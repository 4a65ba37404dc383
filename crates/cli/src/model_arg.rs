//! Loading a model given on the command line into an evaluator for the search.

use anyhow::{Result, bail};
use bredon_infer::{Compute, NetEvaluator};
use bredon_mcts::{CachedEvaluator, Evaluator, UniformEvaluator};
use bredon_netform::meta::ModelMeta;
use bredon_nn::checkpoint::read_exported_meta;
use bredon_nn::load_exported;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A loaded player brain: the evaluator and, for a network, its metadata.
pub struct LoadedModel {
    /// What the search calls.
    pub evaluator: Arc<dyn Evaluator>,
    /// Metadata of the network; `None` for the uniform evaluator.
    pub meta: Option<ModelMeta>,
}

/// How many copies of a network to load and how their forward passes use the cores
/// ([`bredon_infer::NetEvaluator::with_lanes`], [`bredon_infer::NetEvaluator::on_cores`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lanes {
    /// One copy, for a search on one thread; its passes use every core.
    One,
    /// A copy per search thread, each pass on one core: a search on N threads uses N
    /// cores (`bredon tei`'s `Threads`: one thread, one core).
    Cores(usize),
}

impl LoadedModel {
    /// The evaluator to search with: a network's behind an evaluation cache of `bytes`
    /// ([`cached`]); the uniform evaluator as it is (it costs less than a lookup).
    pub fn cached_evaluator(&self, bytes: usize) -> Arc<dyn Evaluator> {
        match self.meta {
            Some(_) => cached(self.evaluator.clone(), bytes),
            None => self.evaluator.clone(),
        }
    }
}

/// Memory of the evaluation cache in front of the network of `bredon play` and `analyse`
/// (`bredon tei` has `--eval-cache`).
pub const EVAL_CACHE_BYTES: usize = 256 << 20;

/// `evaluator` behind an evaluation cache of `bytes` ([`CachedEvaluator`]: positions met
/// again by another move order cost no forward pass); `evaluator` itself at 0.
pub fn cached(evaluator: Arc<dyn Evaluator>, bytes: usize) -> Arc<dyn Evaluator> {
    if bytes == 0 { evaluator } else { Arc::new(CachedEvaluator::new(evaluator, bytes)) }
}

/// Loads `path` (an exported `.bredon` file or a checkpoint directory), or the uniform
/// evaluator when `path` is `None`. With `size`, checks the model fits that board. The
/// network runs on `compute`.
pub fn load(path: Option<&Path>, size: Option<usize>, lanes: Lanes, compute: &Compute) -> Result<LoadedModel> {
    let Some(path) = path else {
        return Ok(LoadedModel { evaluator: Arc::new(UniformEvaluator), meta: None });
    };
    let (model, meta) = load_exported(path)?;
    if let Some(s) = size
        && s != meta.size
    {
        bail!("{} is a {}x{} model, not {s}x{s}", path.display(), meta.size, meta.size);
    }
    let evaluator = evaluator_for(model, meta.size, lanes, compute);
    Ok(LoadedModel { evaluator: Arc::new(evaluator), meta: Some(meta) })
}

/// Environment variable naming the directory of `NxN.bredon` models that `bredon tei`
/// plays with when it is given no `--model` (instead of the shipped ones).
pub const MODEL_DIR_ENV: &str = "BREDON_MODEL_DIR";

/// Board sizes the rules support, and so the sizes a model set can hold.
const SIZES: std::ops::RangeInclusive<usize> = 3..=8;

/// Directories searched, in order, for `NxN.bredon` when no model is named: only
/// `$BREDON_MODEL_DIR` when it is set; else `checkpoints/shipped` under the working
/// directory, under the repository that holds the executable (`target/release/bredon`),
/// and under the source tree the executable was built from.
pub fn default_model_dirs() -> Vec<PathBuf> {
    if let Some(d) = std::env::var_os(MODEL_DIR_ENV) {
        return vec![PathBuf::from(d)];
    }
    let mut dirs = vec![PathBuf::from("checkpoints/shipped")];
    if let Ok(exe) = std::env::current_exe()
        && let Some(repo) = exe.parent().and_then(Path::parent).and_then(Path::parent)
    {
        dirs.push(repo.join("checkpoints/shipped"));
    }
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped"));
    dirs
}

/// `NxN.bredon` for `size` in the first of `dirs` that has one.
pub fn find_model(dirs: &[PathBuf], size: usize) -> Option<PathBuf> {
    dirs.iter().map(|d| d.join(format!("{size}x{size}.bredon"))).find(|p| p.is_file())
}

/// The model at `path` (checked to be for `size`), or without a path the one of
/// [`default_model_dirs`] for `size`, or else the uniform evaluator; with the file used.
pub fn load_or_default(
    path: Option<&Path>,
    size: usize,
    lanes: Lanes,
    compute: &Compute,
) -> Result<(LoadedModel, Option<PathBuf>)> {
    let path = path.map(Path::to_path_buf).or_else(|| find_model(&default_model_dirs(), size));
    Ok((load(path.as_deref(), Some(size), lanes, compute)?, path))
}

/// Model files by board size, for an engine that plays games of several sizes (a TEI
/// engine told the size by `teinewgame`). Only their metadata is read here (checksums
/// verified): the networks are built when a game needs them, so that startup time and
/// memory do not grow with the sizes on offer.
#[derive(Default)]
pub struct ModelFiles {
    by_size: BTreeMap<usize, (PathBuf, ModelMeta)>,
}

impl ModelFiles {
    /// Reads each file's metadata; two models for the same board size are an error.
    pub fn read(paths: &[PathBuf]) -> Result<ModelFiles> {
        let mut files = ModelFiles::default();
        for path in paths {
            let meta = read_exported_meta(path)?;
            if let Some((other, _)) = files.by_size.get(&meta.size) {
                bail!("two {0}x{0} models: {1} and {2}", meta.size, other.display(), path.display());
            }
            files.by_size.insert(meta.size, (path.clone(), meta));
        }
        Ok(files)
    }

    /// For each board size, `NxN.bredon` from the first of `dirs` that has one (a file
    /// of that name holding a model of another size is an error).
    pub fn find(dirs: &[PathBuf]) -> Result<ModelFiles> {
        let paths: Vec<(usize, PathBuf)> = SIZES.filter_map(|n| Some((n, find_model(dirs, n)?))).collect();
        let files = ModelFiles::read(&paths.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>())?;
        for (n, path) in &paths {
            if files.get(*n).is_none_or(|(p, _)| p != path) {
                bail!("{} is not a {n}x{n} model", path.display());
            }
        }
        Ok(files)
    }

    /// The file of `size`'s own model and its metadata.
    pub fn get(&self, size: usize) -> Option<&(PathBuf, ModelMeta)> {
        self.by_size.get(&size)
    }

    /// The model that plays `size`: its own, else the one of the nearest size whose
    /// network plays every size ([`bredon_netform::config::NetConfig::plays_every_size`];
    /// the larger on a tie), else none.
    pub fn for_size(&self, size: usize) -> Option<&(PathBuf, ModelMeta)> {
        self.get(size).or_else(|| {
            self.by_size
                .values()
                .filter(|(_, meta)| meta.net.plays_every_size())
                .min_by_key(|(_, meta)| (meta.size.abs_diff(size), std::cmp::Reverse(meta.size)))
        })
    }

    /// No model at all: every size is searched with the uniform evaluator.
    pub fn is_empty(&self) -> bool {
        self.by_size.is_empty()
    }
}

/// The network of the model at `path` for games on `size` boards, with the model's
/// metadata: carried there when it was trained on another size
/// ([`bredon_nn::TakNet::on_size`]); an error naming the file when it cannot be.
pub fn load_net_for_size(path: &Path, size: usize) -> Result<(bredon_nn::TakNet, ModelMeta)> {
    let (model, meta) = load_exported(path)?;
    let Some((model, _)) = model.on_size(&meta.net, size) else {
        bail!(
            "{} is a {1}x{1} network with layers sized by its board: it plays no other size",
            path.display(),
            meta.size
        );
    };
    Ok((model, meta))
}

/// [`load_net_for_size`] as an evaluator, `lanes` copies of it.
pub fn load_for_size(path: &Path, size: usize, lanes: Lanes, compute: &Compute) -> Result<(NetEvaluator, ModelMeta)> {
    let (model, meta) = load_net_for_size(path, size)?;
    Ok((evaluator_for(model, size, lanes, compute), meta))
}

/// `model` as an evaluator of `size` positions, `lanes` copies of it.
fn evaluator_for(model: bredon_nn::TakNet, size: usize, lanes: Lanes, compute: &Compute) -> NetEvaluator {
    match lanes {
        Lanes::One => compute.evaluator(model, size, 1),
        Lanes::Cores(n) => compute.evaluator_on_cores(model, size, n),
    }
}
