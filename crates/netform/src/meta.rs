//! [`ModelMeta`]: what a model file says it is (board size, komi, architecture, input
//! version, policy size, training step and generation), parsed and checked against
//! [`crate::limits`] before anything is built from the file.

use serde::{Deserialize, Serialize};

use crate::config::NetConfig;
use crate::limits::{MAX_MESSAGE, ModelFileError, bounded, check_meta, check_meta_json};
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
    /// Input plane layout version (the same as `net.input_version`; see [`crate::encoding`]).
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
            input_version: net.input_version,
            policy_size: policy_size(net.size),
            step,
            generation,
        }
    }

    /// Checks the metadata against [`crate::limits::Limits`] and for consistency (board
    /// sizes, input versions, policy size, the network's parameter count): the error names
    /// the field and the limit.
    pub fn check(&self) -> Result<(), ModelFileError> {
        check_meta(self.size, self.input_version, self.policy_size, &self.net)
    }

    /// Parses and checks a model's metadata from its JSON object: numeric fields are
    /// checked to be whole numbers before parsing and against the limits after, so a
    /// hostile value is refused with an error naming its field before anything is built.
    pub fn from_json(value: serde_json::Value) -> Result<ModelMeta, ModelFileError> {
        check_meta_json(&value)?;
        let meta: ModelMeta = serde_json::from_value(value)
            .map_err(|e| ModelFileError::BadMetadata(bounded(&e.to_string(), MAX_MESSAGE)))?;
        meta.check()?;
        Ok(meta)
    }
}
