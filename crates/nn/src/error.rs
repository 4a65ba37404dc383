//! The errors of this crate's file functions: [`ModelError`] (checkpoints and exported
//! models) and [`OnnxError`] (the ONNX writer and reader). Each message names the file
//! and, where the user can fix it, says how; `{:#}` (as the `bredon` binary prints
//! errors) shows the whole chain of sources.

use std::path::PathBuf;

use bredon_storage::StorageError;
use bredon_storage::integrity::IntegrityError;

use crate::limits::ModelFileError;

/// Saving or loading a network: a checkpoint directory (`model.bpk` + `model.json`) or an
/// exported `.bredon` file.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A scratch file or directory beside the target could not be written.
    #[error("writing {}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// burn could not write the weights.
    #[error("saving weights: {0}")]
    SaveWeights(String),
    /// An atomic write, a checksum or a checked JSON file failed (the error names the file).
    #[error(transparent)]
    Store(#[from] StorageError),
    /// The metadata could not be encoded as checked JSON.
    #[error("encoding model metadata")]
    Encode(#[source] IntegrityError),
    /// A weight is NaN or infinite (refused on write and on load).
    #[error("non-finite weights: {bad} of {total} values of `{tensor}` are NaN or infinite")]
    NonFinite {
        /// The parameter's path in the module tree (`trunk.0.conv1.weight`).
        tensor: String,
        /// Non-finite values.
        bad: usize,
        /// Values in the tensor.
        total: usize,
    },
    /// The metadata or weights describe a network this build refuses (limits, mismatch).
    #[error("in {name}")]
    Invalid {
        /// The file.
        name: String,
        /// What is wrong.
        #[source]
        source: ModelFileError,
    },
    /// Not an exported model (wrong magic).
    #[error("{name} is not a Bredon model file")]
    NotAModel {
        /// The file.
        name: String,
    },
    /// An exported model shorter than its header says.
    #[error("{name} is truncated")]
    Truncated {
        /// The file.
        name: String,
    },
    /// An exported model whose checksum trailer does not match.
    #[error("{name}: {source}; export the model again or restore it from a copy")]
    Damaged {
        /// The file.
        name: String,
        /// The checksum problem.
        #[source]
        source: IntegrityError,
    },
    /// An exported model's metadata is not JSON.
    #[error("metadata of {name} is not valid JSON: {detail}")]
    BadJson {
        /// The file.
        name: String,
        /// The parser's message (bounded).
        detail: String,
    },
    /// Context for an error from an inner step: `{context}: {source}`.
    #[error("{context}")]
    In {
        /// What was being done (`refusing to write a checkpoint in DIR`, `in FILE`).
        context: String,
        /// The error.
        #[source]
        source: Box<ModelError>,
    },
}

impl ModelError {
    /// `self` with `context` in front (the chain shows `context: self`).
    pub fn context(self, context: impl Into<String>) -> ModelError {
        ModelError::In { context: context.into(), source: Box::new(self) }
    }

    /// A [`ModelFileError`] found in `name`.
    pub(crate) fn invalid(name: impl Into<String>, source: ModelFileError) -> ModelError {
        ModelError::Invalid { name: name.into(), source }
    }

    /// An I/O error reading `path`.
    pub(crate) fn read(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ModelError {
        let path = path.into();
        move |source| ModelError::Read { path, source }
    }
}

/// Writing or reading an ONNX model.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    /// The metadata passed with the network describes another network.
    #[error("metadata ({meta}) does not describe the network ({net})")]
    MetaMismatch {
        /// Size and architecture in the metadata.
        meta: String,
        /// Size and architecture of the network.
        net: String,
    },
    /// The network has neither policy head for an output.
    #[error("the network has no policy head for {0}")]
    NoPolicyHead(String),
    /// protobuf could not serialise the graph.
    #[error("serialising the ONNX model")]
    Serialise(#[source] protobuf::Error),
    /// The file could not be written.
    #[error(transparent)]
    Store(#[from] StorageError),
    /// The file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file does not parse as an ONNX `ModelProto`.
    #[error("{} is not an ONNX model", path.display())]
    NotOnnx {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: protobuf::Error,
    },
    /// The model has no graph.
    #[error("{} has no graph", path.display())]
    NoGraph {
        /// The file.
        path: PathBuf,
    },
}
