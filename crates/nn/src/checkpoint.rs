//! Saving and loading networks: `.bpk` weights (burn's burnpack format) beside a JSON
//! metadata file, and single-file exported models for play.

use burn::prelude::*;
use std::path::Path;

use crate::error::ModelError;
use crate::integrity::check_finite;
use crate::model::TakNet;
use crate::weights::check_weights;
use bredon_netform::limits::{Limits, MAX_MESSAGE, ModelFileError, bounded};
use bredon_netform::meta::ModelMeta;
use bredon_storage::fsutil::{atomic_write, atomic_write_with};
use bredon_storage::integrity::{
    Verified, append_crc, check_crc, crc_field, crc_hex, crc32c, from_checked_json, split_crc, to_checked_json,
};

/// Field of `model.json` holding the CRC-32C of `model.bpk`.
pub const WEIGHTS_CRC_FIELD: &str = "weights_crc32c";

/// Writes `dir/model.bpk` and `dir/model.json` atomically (weights first). The weights
/// must be finite; `model.json` records the checksum of `model.bpk` (read back from disk
/// after the write) and its own.
pub fn save_model(model: &TakNet, meta: &ModelMeta, dir: &Path) -> Result<(), ModelError> {
    check_finite(model).map_err(|e| e.context(format!("refusing to write a checkpoint in {}", dir.display())))?;
    let m = model.clone();
    let weights = dir.join("model.bpk");
    atomic_write_with(&weights, |p| m.save_file(p).map_err(|e| format!("saving weights: {e:?}")))?;
    let bytes = std::fs::read(&weights).map_err(ModelError::read(&weights))?;
    let json =
        to_checked_json(meta, &[(WEIGHTS_CRC_FIELD, crc_hex(crc32c(&bytes)).into())]).map_err(ModelError::Encode)?;
    Ok(atomic_write(&dir.join("model.json"), &json)?)
}

/// Reads a model saved by [`save_model`], checking its metadata, the checksums and that
/// the weights are finite. A checkpoint written before checksums existed loads with a
/// warning on stderr.
pub fn load_model(dir: &Path) -> Result<(TakNet, ModelMeta), ModelError> {
    let (model, meta, verified) = load_model_verified(dir)?;
    if verified == Verified::NoChecksum {
        eprintln!("warning: {} has no checksums (written by an older Bredon); loaded unverified", dir.display());
    }
    Ok((model, meta))
}

/// [`load_model`] without the warning: also says whether checksums were verified.
pub fn load_model_verified(dir: &Path) -> Result<(TakNet, ModelMeta, Verified), ModelError> {
    let meta_path = dir.join("model.json");
    let meta_name = meta_path.display().to_string();
    let len = std::fs::metadata(&meta_path).map_err(ModelError::read(&meta_path))?.len();
    if len > Limits::METADATA_BYTES as u64 {
        let e = ModelFileError::MetadataTooLong { len, max: Limits::METADATA_BYTES };
        return Err(ModelError::invalid(meta_name, e));
    }
    let text = std::fs::read(&meta_path).map_err(ModelError::read(&meta_path))?;
    let (obj, _, v_meta) = from_checked_json::<serde_json::Value>(&text, &meta_path)?;
    let meta = ModelMeta::from_json(obj.clone()).map_err(|e| ModelError::invalid(meta_name, e))?;
    let weights = dir.join("model.bpk");
    let bytes = std::fs::read(&weights).map_err(ModelError::read(&weights))?;
    let v_weights = check_crc(&bytes, crc_field(&obj, WEIGHTS_CRC_FIELD), &weights)
        .map_err(|e| ModelError::from(e).context("delete this checkpoint or restore it from a copy"))?;
    let model = weights_from_bytes(&meta, bytes)
        .map_err(|e| ModelError::invalid(format!("loading {}", weights.display()), e))?;
    check_finite(&model).map_err(|e| e.context(format!("in {}", weights.display())))?;
    let verified =
        if v_meta == Verified::Ok && v_weights == Verified::Ok { Verified::Ok } else { Verified::NoChecksum };
    Ok((model, meta, verified))
}

/// Builds the network of `meta` (already checked) from burnpack bytes held in memory
/// (burn's file loader reads lazily from the path, which must then outlive the model;
/// bytes don't). The stored tensors' names, shapes and dtypes are checked against the
/// architecture first, from the burnpack's header, so a mismatch is refused before the
/// network is built.
fn weights_from_bytes(meta: &ModelMeta, bytes: Vec<u8>) -> Result<TakNet, ModelFileError> {
    let bytes = burn::tensor::Bytes::from_bytes_vec(bytes).shared(); // clones share the data
    check_weights(&meta.net, bytes.clone())?;
    let record = burn::store::ModuleRecord::from_bytes(bytes)
        .map_err(|e| ModelFileError::BadWeights(bounded(&format!("{e}"), MAX_MESSAGE)))?;
    // `check_weights` found every tensor of the architecture: the record sets them all.
    let model = TakNet::unloaded(&meta.net, &crate::device::cpu()).try_load_record(record).map_err(|e| {
        ModelFileError::WeightsMismatch { arch: meta.net.name(), summary: bounded(&format!("{e}"), MAX_MESSAGE) }
    })?;
    Ok(model.valid())
}

/// Magic of the first export format (no checksum; still read, with a warning).
const EXPORT_MAGIC_V1: &[u8; 8] = b"BREDONM1";
/// Magic of the current export format: as version 1, plus a CRC-32C trailer.
const EXPORT_MAGIC: &[u8; 8] = b"BREDONM2";

/// Writes one self-contained file: magic, metadata length (u32 LE), JSON metadata,
/// burnpack bytes, and the CRC-32C (u32 LE) of everything before it. The weights must be
/// finite.
pub fn export_model(model: &TakNet, meta: &ModelMeta, path: &Path) -> Result<(), ModelError> {
    check_finite(model).map_err(|e| e.context(format!("refusing to write {}", path.display())))?;
    let tmp = tempdir_near(path)?;
    let bpk = tmp.join("model.bpk");
    let saved = model.clone().save_file(&bpk).map_err(|e| ModelError::SaveWeights(format!("{e:?}")));
    let weights = saved.and_then(|_| std::fs::read(&bpk).map_err(ModelError::read(&bpk)));
    let _ = std::fs::remove_dir_all(&tmp);
    let weights = weights?;
    let json = serde_json::to_vec(meta).expect("model metadata serialises");
    let mut out = EXPORT_MAGIC.to_vec();
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(&weights);
    append_crc(&mut out);
    Ok(atomic_write(path, &out)?)
}

/// Loads a model from a file written by [`export_model`], or from a checkpoint directory.
/// A version-1 export (no checksum) loads with a warning on stderr.
pub fn load_exported(path: &Path) -> Result<(TakNet, ModelMeta), ModelError> {
    let (model, meta, verified) = load_exported_verified(path)?;
    if verified == Verified::NoChecksum && !path.is_dir() {
        eprintln!(
            "warning: {} has no checksum (an older export format); loaded unverified — re-export it with `bredon export`",
            path.display()
        );
    } else if verified == Verified::NoChecksum {
        eprintln!("warning: {} has no checksums (written by an older Bredon); loaded unverified", path.display());
    }
    Ok((model, meta))
}

/// [`load_exported`] without the warning: also says whether a checksum was verified.
pub fn load_exported_verified(path: &Path) -> Result<(TakNet, ModelMeta, Verified), ModelError> {
    if path.is_dir() {
        return load_model_verified(path);
    }
    let bytes = std::fs::read(path).map_err(ModelError::read(path))?;
    load_exported_bytes(&bytes, &path.display().to_string())
}

/// [`load_exported_verified`] of a file's contents; `name` names it in errors. Checks, in
/// order: the magic and checksum, the metadata's length, fields and limits
/// ([`ModelMeta::from_json`]), the stored tensors against the architecture, then builds
/// the network and checks that its weights are finite.
pub fn load_exported_bytes(bytes: &[u8], name: &str) -> Result<(TakNet, ModelMeta, Verified), ModelError> {
    let (meta, weights, verified) = split_export(bytes, name)?;
    let model = weights_from_bytes(&meta, weights.to_vec())
        .map_err(|e| ModelError::invalid(format!("loading weights of {name}"), e))?;
    check_finite(&model).map_err(|e| e.context(format!("in {name}")))?;
    Ok((model, meta, verified))
}

/// The metadata of a model file or checkpoint directory, with its checksum verified but
/// its weights not built: what a program that loads networks only when it needs them
/// (`bredon tei`, one per board size) reads at startup.
pub fn read_exported_meta(path: &Path) -> Result<ModelMeta, ModelError> {
    if path.is_dir() {
        return Ok(load_model_verified(path)?.1);
    }
    let bytes = std::fs::read(path).map_err(ModelError::read(path))?;
    Ok(split_export(&bytes, &path.display().to_string())?.0)
}

/// An export's metadata and weight bytes: the magic and checksum checked, then the
/// metadata's length, fields and limits ([`ModelMeta::from_json`]).
fn split_export<'a>(bytes: &'a [u8], name: &str) -> Result<(ModelMeta, &'a [u8], Verified), ModelError> {
    let (body, verified) = if bytes.len() >= 8 && &bytes[..8] == EXPORT_MAGIC {
        let body = split_crc(bytes).map_err(|source| ModelError::Damaged { name: name.into(), source })?;
        (body, Verified::Ok)
    } else if bytes.len() >= 8 && &bytes[..8] == EXPORT_MAGIC_V1 {
        (bytes, Verified::NoChecksum)
    } else {
        return Err(ModelError::NotAModel { name: name.into() });
    };
    if body.len() < 12 {
        return Err(ModelError::Truncated { name: name.into() });
    }
    let len = u32::from_le_bytes(body[8..12].try_into().expect("4 bytes"));
    if len as usize > Limits::METADATA_BYTES {
        let e = ModelFileError::MetadataTooLong { len: len.into(), max: Limits::METADATA_BYTES };
        return Err(ModelError::invalid(name, e));
    }
    let len = len as usize;
    if body.len() < 12 + len {
        return Err(ModelError::Truncated { name: name.into() });
    }
    let json: serde_json::Value = serde_json::from_slice(&body[12..12 + len])
        .map_err(|e| ModelError::BadJson { name: name.into(), detail: bounded(&e.to_string(), MAX_MESSAGE) })?;
    let meta = ModelMeta::from_json(json).map_err(|e| ModelError::invalid(name, e))?;
    Ok((meta, &body[12 + len..], verified))
}

fn tempdir_near(path: &Path) -> Result<std::path::PathBuf, ModelError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let t = dir.join(format!(".tmp-export-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&t).map_err(|source| ModelError::Write { path: t.clone(), source })?;
    Ok(t)
}
