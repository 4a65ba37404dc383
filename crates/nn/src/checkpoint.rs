//! Saving and loading networks: `.bpk` weights (burn's burnpack format) beside a JSON
//! metadata file, and single-file exported models for play.

use anyhow::{Context, Result, bail};
use burn::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::encoding::INPUT_VERSION;
use crate::fsutil::{atomic_write, atomic_write_with};
use crate::model::{NetConfig, TakNet};
use crate::policy::policy_size;

/// What a model file is: enough to rebuild the network and to refuse a mismatch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelMeta {
    /// Board size.
    pub size: usize,
    /// Komi (half points) the model was trained with.
    pub half_komi: i8,
    /// Architecture.
    pub net: NetConfig,
    /// Input plane layout version ([`INPUT_VERSION`]).
    pub input_version: u32,
    /// Policy outputs.
    pub policy_size: usize,
    /// Optimiser steps trained.
    pub step: u64,
    /// Generation within its run.
    pub generation: u32,
}

impl ModelMeta {
    /// Metadata for a model of `net` (size set).
    pub fn new(net: &NetConfig, half_komi: i8, step: u64, generation: u32) -> ModelMeta {
        ModelMeta {
            size: net.size,
            half_komi,
            net: net.clone(),
            input_version: INPUT_VERSION,
            policy_size: policy_size(net.size),
            step,
            generation,
        }
    }

    fn check(&self) -> Result<()> {
        if self.input_version != INPUT_VERSION {
            bail!(
                "model uses input format version {}, this build reads version {INPUT_VERSION}",
                self.input_version
            );
        }
        if self.size != self.net.size || self.policy_size != policy_size(self.size) {
            bail!("model metadata is inconsistent (size {}, policy size {})", self.size, self.policy_size);
        }
        Ok(())
    }
}

/// Writes `dir/model.bpk` and `dir/model.json` atomically (weights first).
pub fn save_model(model: &TakNet, meta: &ModelMeta, dir: &Path) -> Result<()> {
    let m = model.clone();
    atomic_write_with(&dir.join("model.bpk"), |p| {
        m.save_file(p).map_err(|e| anyhow::anyhow!("saving weights: {e:?}"))
    })?;
    atomic_write(&dir.join("model.json"), serde_json::to_string_pretty(meta)?.as_bytes())
}

/// Reads a model saved by [`save_model`], checking its metadata.
pub fn load_model(dir: &Path) -> Result<(TakNet, ModelMeta)> {
    let meta_path = dir.join("model.json");
    let text = std::fs::read_to_string(&meta_path).with_context(|| format!("reading {}", meta_path.display()))?;
    let meta: ModelMeta = serde_json::from_str(&text).with_context(|| format!("parsing {}", meta_path.display()))?;
    meta.check().with_context(|| format!("in {}", meta_path.display()))?;
    let weights = dir.join("model.bpk");
    let bytes = std::fs::read(&weights).with_context(|| format!("reading {}", weights.display()))?;
    let model = weights_from_bytes(&meta, bytes).with_context(|| format!("loading {}", weights.display()))?;
    Ok((model, meta))
}

/// Builds the network of `meta` from burnpack bytes held in memory (burn's file loader
/// reads lazily from the path, which must then outlive the model; bytes don't).
fn weights_from_bytes(meta: &ModelMeta, bytes: Vec<u8>) -> Result<TakNet> {
    let record = burn::store::ModuleRecord::from_bytes(burn::tensor::Bytes::from_bytes_vec(bytes))
        .map_err(|e| anyhow::anyhow!("bad weights: {e:?}"))?;
    let model = TakNet::new(&meta.net, &crate::device())
        .try_load_record(record)
        .map_err(|e| anyhow::anyhow!("weights do not fit the architecture {}: {e:?}", meta.net.name()))?;
    Ok(model.valid())
}

const EXPORT_MAGIC: &[u8; 8] = b"BREDONM1";

/// Writes one self-contained file: magic, metadata length, JSON metadata, burnpack bytes.
pub fn export_model(model: &TakNet, meta: &ModelMeta, path: &Path) -> Result<()> {
    let tmp = tempdir_near(path)?;
    let bpk = tmp.join("model.bpk");
    model.clone().save_file(&bpk).map_err(|e| anyhow::anyhow!("saving weights: {e:?}"))?;
    let weights = std::fs::read(&bpk)?;
    let _ = std::fs::remove_dir_all(&tmp);
    let json = serde_json::to_vec(meta)?;
    let mut out = EXPORT_MAGIC.to_vec();
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(&weights);
    atomic_write(path, &out)
}

/// Loads a model from a file written by [`export_model`], or from a checkpoint directory.
pub fn load_exported(path: &Path) -> Result<(TakNet, ModelMeta)> {
    if path.is_dir() {
        return load_model(path);
    }
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() < 12 || &bytes[..8] != EXPORT_MAGIC {
        bail!("{} is not a Bredon model file", path.display());
    }
    let len = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
    if bytes.len() < 12 + len {
        bail!("{} is truncated", path.display());
    }
    let meta: ModelMeta = serde_json::from_slice(&bytes[12..12 + len]).with_context(|| format!("metadata of {}", path.display()))?;
    meta.check().with_context(|| format!("in {}", path.display()))?;
    let model = weights_from_bytes(&meta, bytes[12 + len..].to_vec())
        .with_context(|| format!("loading weights of {}", path.display()))?;
    Ok((model, meta))
}

fn tempdir_near(path: &Path) -> Result<std::path::PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let t = dir.join(format!(".tmp-export-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&t)?;
    Ok(t)
}
