//! The crate's errors: [`ConfigError`] (run configs), [`RecordError`] (`.game` records)
//! and [`RunError`] (everything a run does: its directory, checkpoints, self-play,
//! training, the object store). Each message names the file and, where the user can fix
//! it, says how; `{:#}` (as the `bredon` binary prints errors) or
//! [`bredon_storage::error_chain`] shows the whole chain of sources.

use std::path::PathBuf;

use bredon_nn::{ModelError, TrainError};
use bredon_rules::RulesError;
use bredon_storage::StorageError;
use bredon_storage::integrity::IntegrityError;

/// The result of this crate's run functions.
pub type Result<T, E = RunError> = std::result::Result<T, E>;

/// A run config (`config.toml`) that cannot be read or used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Not TOML, an unknown key, or a value of the wrong type (the message names the line
    /// and the key).
    #[error("{0}")]
    Parse(String),
    /// A value that parses but breaks a rule (the message names the key and the rule).
    #[error("{0}")]
    Invalid(String),
    /// `[net]` describes a network outside what a model file may hold (an unknown input
    /// version, a size out of its limits, more pooled channels than channels).
    #[error("in [net]")]
    Net(#[source] bredon_netform::limits::ModelFileError),
    /// The error is in this config file.
    #[error("in config {}", path.display())]
    In {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: Box<ConfigError>,
    },
}

/// A `.game` record that cannot be read or replayed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// A ply's visit counts name a move that is not legal in the position searched.
    #[error("record ply {ply}: its visit counts name an illegal move (code {mv})")]
    IllegalPolicyMove {
        /// The ply (from 1).
        ply: usize,
        /// The move's code (`Move.0`).
        mv: u16,
    },
    /// A played move is illegal (or the record's game options are).
    #[error("record ply {ply} is illegal")]
    IllegalMove {
        /// The ply (from 1; 0 for the game options).
        ply: usize,
        /// The rules' reason.
        #[source]
        source: RulesError,
    },
    /// The file does not start with the record magic.
    #[error("not a Bredon game record (bad magic)")]
    BadMagic,
    /// Shorter than its header.
    #[error("game record truncated ({len} bytes)")]
    Truncated {
        /// The file's length.
        len: usize,
    },
    /// A format version this build does not read.
    #[error("game record format {found}, this build reads 1 and {latest}")]
    UnknownFormat {
        /// The file's version.
        found: u32,
        /// The newest this build reads.
        latest: u32,
    },
    /// The checksum trailer does not match.
    #[error(transparent)]
    Damaged(#[from] IntegrityError),
    /// The body does not decode.
    #[error("undecodable record")]
    Undecodable(#[source] postcard::Error),
    /// A field out of range.
    #[error("record has {0}")]
    OutOfRange(String),
    /// The record could not be encoded.
    #[error("encoding a game record")]
    Encode(#[source] postcard::Error),
    /// The file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The error is in this file.
    #[error("{}", path.display())]
    In {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: Box<RecordError>,
    },
}

/// What can stop a run (or a check of one).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The operating system refused an operation on a file or directory.
    #[error("{doing} {}", path.display())]
    Io {
        /// What was being done (`reading`, `creating`, `locking`).
        doing: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A thread could not be started (`the background self-play thread`).
    #[error("starting {what}")]
    Spawn {
        /// The thread.
        what: &'static str,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// Local or object storage (the error names the file or object).
    #[error(transparent)]
    Store(#[from] StorageError),
    /// A checkpoint's JSON could not be encoded.
    #[error("encoding checked JSON")]
    Encode(#[from] IntegrityError),
    /// A model file.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The training step.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// The run config.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A game record.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The rules refused a game's options or a move.
    #[error(transparent)]
    Rules(#[from] RulesError),
    /// A directory that is no run.
    #[error("{} is not a run directory (no config.toml){}", path.display(), if *config_given { "" } else { " and no --config was given" })]
    NotARun {
        /// The directory.
        path: PathBuf,
        /// Whether a config was given (to create the run).
        config_given: bool,
    },
    /// A curriculum stage's process settings (its device) could not be made.
    #[error("setting up curriculum {stage}")]
    Stage {
        /// The stage (`stage N/M name`).
        stage: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `--start-stage` names no stage of the curriculum.
    #[error("--start-stage {given}: the curriculum's stages are {names} (give a name or a number from 1)")]
    UnknownStage {
        /// What was given.
        given: String,
        /// The stages' names, listed.
        names: String,
    },
    /// `--start-stage` on a curriculum that exists already, or without a model to start from.
    #[error("--start-stage {stage}: {why}")]
    StartStage {
        /// The stage given.
        stage: String,
        /// Why it cannot apply.
        why: &'static str,
    },
    /// The model a curriculum goes on from was exported at or past the end of the stage
    /// it would go on with.
    #[error(
        "{model} was exported after {steps} steps, {generations} generations and {minutes:.1} minutes of stage {stage}, which runs {limits}: {next}"
    )]
    StageAlreadyDone {
        /// The model.
        model: PathBuf,
        /// The stage.
        stage: String,
        /// Its steps behind the model.
        steps: u64,
        /// Its generations behind the model.
        generations: u32,
        /// Its minutes behind the model.
        minutes: f64,
        /// The stage's limits, in words.
        limits: String,
        /// What to do instead (start at the next stage, naming it).
        next: String,
    },
    /// The model a new curriculum would go on from was trained inside a stage of the same
    /// name, but on another board or with another network than this curriculum's stage of
    /// that name: a stage of another curriculum, whose progress does not count here.
    #[error(
        "{} was trained inside a stage named {stage}, but not this curriculum's stage {number}/{count} {stage}: {why}; give --start-stage to say where the curriculum begins (a stage started from the model then trains all of itself)",
        model.display()
    )]
    StageMismatch {
        /// The model.
        model: PathBuf,
        /// The stage's name.
        stage: String,
        /// The stage's number, from 1.
        number: usize,
        /// How many stages the curriculum has.
        count: usize,
        /// How the model differs from what the stage trains, in words.
        why: String,
    },
    /// Another trainer holds the run's lock.
    #[error("{} is in use: {holder} is training it (lock {}); stop that trainer first (`bredon selfplay` may run beside it)", run.display(), lock.display())]
    Locked {
        /// The run.
        run: PathBuf,
        /// `process PID` or `another process`.
        holder: String,
        /// The lock file.
        lock: PathBuf,
    },
    /// A pointer (`latest`, `best`) names something that is not a complete checkpoint.
    #[error("{pointer} points to {name:?}, which is not a complete checkpoint")]
    BadPointer {
        /// The pointer file or object.
        pointer: String,
        /// What it names.
        name: String,
    },
    /// A checkpoint on the object store lacks a file.
    #[error("{object} is missing: the checkpoint is incomplete")]
    IncompleteCheckpoint {
        /// The missing object.
        object: String,
    },
    /// A model of another architecture than the config's.
    #[error("{model} is a {found} network, the config asks for {wanted}")]
    ArchitectureMismatch {
        /// The model (file or checkpoint).
        model: String,
        /// Its architecture (`b6c64`).
        found: String,
        /// The config's.
        wanted: String,
    },
    /// A model trained with another komi than the config's.
    #[error("{model} was trained with komi {found}, the config asks for {wanted}")]
    KomiMismatch {
        /// The model file.
        model: String,
        /// Its komi.
        found: f64,
        /// The config's.
        wanted: f64,
    },
    /// `--init-minutes` that is no number of minutes.
    #[error("--init-minutes must be a number of minutes, 0 or more (got {0})")]
    InitMinutes(f64),
    /// `--window-from` names no usable source of games.
    #[error("--window-from {}: {why}", path.display())]
    WindowFrom {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Too many training steps in a row were non-finite.
    #[error(
        "training diverged: {steps} training steps in a row had a non-finite loss or gradient (last: {last}); \
         nothing was written, the run stays at its last good checkpoint {checkpoint}. \
         Lower [train] lr (or check the replay games with `bredon check --run`) and resume"
    )]
    Diverged {
        /// Skipped steps in a row.
        steps: usize,
        /// The last reason.
        last: String,
        /// The last good checkpoint.
        checkpoint: crate::generation::Generation,
    },
    /// Training asked for on no stored samples (`bredon fit` with no games).
    #[error("no training samples: the games given hold no stored game with a searched move")]
    NoSamples,
    /// A search returned no move in a live game, twice.
    #[error("the search found no move at ply {0}")]
    NoMove(u32),
    /// A thread of this crate panicked (`an evaluation game`, `the background self-play thread`).
    #[error("{0} panicked")]
    Panicked(&'static str),
    /// A text file that is not UTF-8.
    #[error("{} is not UTF-8 text", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// A line of a JSON-lines file that does not parse.
    #[error("{}:{line}: not valid JSON", path.display())]
    BadJsonLine {
        /// The file.
        path: PathBuf,
        /// The line (from 1).
        line: usize,
    },
    /// What was being done when the error happened: `{context}: {source}`.
    #[error("{context}")]
    In {
        /// What was being done (`reading FILE`, `loading checkpoint gen-0003`).
        context: String,
        /// The error.
        #[source]
        source: Box<RunError>,
    },
}

impl RunError {
    /// `self` with `context` in front (the chain shows `context: self`).
    pub fn context(self, context: impl Into<String>) -> RunError {
        RunError::In { context: context.into(), source: Box::new(self) }
    }
}

/// `.io(doing, path)` on I/O results: the error as [`RunError::Io`], naming the file.
pub(crate) trait IoContext<T> {
    /// The I/O error as [`RunError::Io`] about `path` (`doing`: `reading`, `creating`, …).
    fn io(self, doing: &'static str, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for std::result::Result<T, std::io::Error> {
    fn io(self, doing: &'static str, path: &std::path::Path) -> Result<T> {
        self.map_err(|source| RunError::Io { doing, path: path.to_path_buf(), source })
    }
}

/// `.context(..)` and `.with_context(|| ..)` on results whose error converts into a
/// [`RunError`] (the crate's replacement for `anyhow::Context`).
pub(crate) trait Context<T> {
    /// The error with `context` in front.
    fn context(self, context: impl Into<String>) -> Result<T>;
    /// The error with the context `f` makes in front (made only on error).
    fn with_context<S: Into<String>>(self, f: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: Into<RunError>> Context<T> for std::result::Result<T, E> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|e| e.into().context(context))
    }

    fn with_context<S: Into<String>>(self, f: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| e.into().context(f()))
    }
}
