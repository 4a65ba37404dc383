//! [`OnnxError`]: writing or reading an ONNX model.

use std::path::PathBuf;

use bredon_storage::StorageError;

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
