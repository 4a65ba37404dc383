//! The errors of this crate's file functions: [`ModelError`] (checkpoints and exported
//! models) and [`OnnxError`] (the ONNX writer and reader). Each message names the file
//! and, where the user can fix it, says how; `{:#}` (as the `bredon` binary prints
//! errors) shows the whole chain of sources.

use std::path::PathBuf;

use bredon_storage::StorageError;
use bredon_storage::integrity::IntegrityError;

use bredon_netform::limits::{MAX_MESSAGE, ModelFileError, bounded};

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

/// What can go wrong in training.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// The network's configuration is not one that can be trained.
    #[error("network size {0} is not a board size (3 to 8)")]
    BadSize(usize),
    /// The network's input format is unknown.
    #[error(transparent)]
    Model(#[from] ModelFileError),
    /// A step was asked for with no examples.
    #[error("empty training batch")]
    EmptyBatch,
    /// An example does not fit the network.
    #[error("example {index} of the batch is for {found}x{found}, the network is {size}x{size}")]
    ExampleSize {
        /// Its place in the batch.
        index: usize,
        /// The example's board size.
        found: usize,
        /// The network's.
        size: usize,
    },
    /// An ownership target has the wrong number of squares.
    #[error("example {index}'s ownership target has {found} squares, a {size}x{size} board has {}", size * size)]
    OwnershipSize {
        /// Its place in the batch.
        index: usize,
        /// Squares in the target.
        found: usize,
        /// The network's board size.
        size: usize,
    },
    /// [`Trainer::step`] had to skip the step (the reason names what was non-finite).
    #[error("training step skipped: {0}")]
    Skipped(String),
    /// The device failed while the step's losses were read back.
    #[error("the training device failed: {0}")]
    Device(#[from] burn::tensor::ExecutionError),
    /// The network handed to the optimiser is not the one its state is laid out for (a
    /// bug: the trainer keeps both together).
    #[error("the optimiser's layout does not fit the network: {0}")]
    OptimizerLayout(String),
    /// The optimiser state could not be saved or loaded (burn's message, shortened).
    #[error("{action} optimizer state {path}: {message}")]
    OptimizerState {
        /// `saving` or `loading`.
        action: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// What burn said.
        message: String,
    },
}

/// The error for a failed save or load of the optimiser state; burn's message can list
/// every tensor of the state, so it is shortened.
pub(crate) fn optimizer_error(action: &'static str, path: &std::path::Path, message: String) -> TrainError {
    let message = bounded(&message, MAX_MESSAGE);
    TrainError::OptimizerState { action, path: path.to_path_buf(), message }
}
