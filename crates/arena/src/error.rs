//! The arena's errors: one enum per concern, and [`ArenaError`] for the match runner,
//! which wraps the others.
//!
//! | enum | from |
//! |---|---|
//! | [`SpecError`] | parsing a player string (`rollout:1600`, `tei:…;nodes=…`) and building its player |
//! | [`TeiClientError`] | an external engine: it would not start, died, timed out or broke the protocol |
//! | [`PlayerError`] | a player that failed to start a game or to produce a move (the game loop turns it into a forfeit) |
//! | [`OpeningsError`] | loading or drawing openings |
//! | [`ResultsError`] | the results file, game files and atomic writes |
//! | [`RatingsError`] | writing the ratings table |
//! | [`PlotError`] | reading Elo curve tables and drawing the chart |
//! | [`SprtError`] | gate settings |
//! | [`MatchConfigError`] | [`crate::MatchConfig::validate`] |
//! | [`ArenaError`] | [`crate::run_match`], [`crate::run_arena`], [`crate::run_gate`], a run's ladder and gate ([`crate::training`]) and friends |
//!
//! Each error's message says what went wrong at its level and names the file, line,
//! player or engine; what caused it is its [`std::error::Error::source`], so
//! `anyhow`'s `{:#}` (as the `bredon` binary prints errors) shows the whole chain.

use std::path::PathBuf;
use std::time::Duration;

use bredon_rules::RulesError;
use bredon_rules::notation::PtnMoveError;

/// A player string or spec that cannot be turned into a player: the player string (or,
/// for a spec that did not come from a string, the player's name) and what is wrong with
/// it. It prints as `player "SPEC": KIND`; the kind's cause, if it has one (a command
/// line that does not split, a network that does not load), is the
/// [`std::error::Error::source`].
#[derive(Debug)]
pub struct SpecError {
    /// The player string (or the player's name).
    pub spec: String,
    /// What is wrong.
    pub kind: SpecErrorKind,
}

impl SpecError {
    /// The error `kind` about player `spec`.
    pub fn new(spec: impl Into<String>, kind: SpecErrorKind) -> SpecError {
        SpecError { spec: spec.into(), kind }
    }
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "player {:?}: {}", self.spec, self.kind)
    }
}

impl std::error::Error for SpecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.kind)
    }
}

/// What is wrong with a player string or spec ([`SpecError`]).
#[derive(Debug, thiserror::Error)]
pub enum SpecErrorKind {
    /// Nothing but whitespace.
    #[error("empty player description")]
    Empty,
    /// A `;`-separated part without `=`.
    #[error("setting {part:?} is not key=value")]
    NotKeyValue {
        /// The part.
        part: String,
    },
    /// The part before `:` is no kind of player.
    #[error("unknown kind {given:?} (expected random, uniform:VISITS, rollout:VISITS, tei:COMMAND or checkpoint:PATH)")]
    UnknownKind {
        /// The kind given.
        given: String,
    },
    /// The kind needs an argument after `:` (`uniform:VISITS`).
    #[error("expected {expected}")]
    MissingArgument {
        /// The form expected (`uniform:VISITS`).
        expected: &'static str,
    },
    /// `random:…`.
    #[error("`random` takes no argument (use random;seed=N)")]
    RandomTakesNoArgument,
    /// Visits that are not a positive integer.
    #[error("visits {visits:?} is not a positive integer")]
    BadVisits {
        /// What was given.
        visits: String,
    },
    /// `uniform:0`, `rollout:0`.
    #[error("visits must be at least 1")]
    ZeroVisits,
    /// A setting this kind of player does not have.
    #[error("unknown setting {key:?} for a {player_kind} player")]
    UnknownSetting {
        /// The player's kind (`rollout`).
        player_kind: String,
        /// The setting.
        key: String,
    },
    /// A setting whose value is not one it takes.
    #[error("setting {key}={value:?}: expected {expected}")]
    BadSetting {
        /// The setting.
        key: String,
        /// Its value.
        value: String,
        /// What it takes (`on or off`, `fixed or reserves`, `a non-negative integer`).
        expected: &'static str,
    },
    /// `option.=…`.
    #[error("empty option name in {key:?}")]
    EmptyOptionName {
        /// The setting.
        key: String,
    },
    /// A `tei:` command line that cannot be split into words.
    #[error("bad command line")]
    CommandLine(#[source] TeiClientError),
    /// A `tei:` command line without a program.
    #[error("no program")]
    NoProgram,
    /// `name=` with nothing after it.
    #[error("empty name")]
    EmptyName,
    /// A spec (from a config file, say) that cannot make a player.
    #[error("{0}")]
    Invalid(
        /// What is wrong (`a uniform player needs at least 1 visit`).
        &'static str,
    ),
    /// The network of a `checkpoint:PATH` player has layers sized by the board it was
    /// trained on, and the match is on another size.
    #[error("{} is a {trained}x{trained} network with layers sized by its board; it cannot play {size}x{size}", path.display())]
    OtherSize {
        /// The model file or checkpoint directory.
        path: PathBuf,
        /// The size it was trained on.
        trained: usize,
        /// The match's size.
        size: usize,
    },
    /// The network of a `checkpoint:PATH` player could not be loaded.
    #[error("cannot load the network {}", path.display())]
    Checkpoint {
        /// The model file or checkpoint directory.
        path: PathBuf,
        /// Why `bredon_nn` refused it.
        #[source]
        source: Box<bredon_nn::ModelError>,
    },
}

/// What the client was doing when an external engine failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TeiStage {
    /// `tei` … `teiok` and the configured `setoption`s, right after the start.
    Handshake,
    /// `setoption name HalfKomi`, `teinewgame`, `isready` … `readyok` before a game.
    NewGame,
}

impl std::fmt::Display for TeiStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TeiStage::Handshake => "handshake",
            TeiStage::NewGame => "new game",
        })
    }
}

/// An external TEI engine that could not be started or readied. (Failures while it is
/// thinking about a move are [`PlayerError`]s: they lose the game, not the match.)
/// The engine is named by its program (or display name) as configured.
#[derive(Debug, thiserror::Error)]
pub enum TeiClientError {
    /// The configuration names no program.
    #[error("TEI engine: no program given")]
    NoProgram,
    /// A command line with an unterminated double quote.
    #[error("unterminated quote in command line {line:?}")]
    UnterminatedQuote {
        /// The command line.
        line: String,
    },
    /// The process could not be started (wrong path, not executable).
    #[error("cannot start TEI engine {program:?}")]
    Start {
        /// The program.
        program: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The process started but a pipe or a reader thread could not be set up.
    #[error("TEI engine {program:?}: cannot set up {what}")]
    Setup {
        /// The program.
        program: String,
        /// What (`its stdin`, `the stdout reader thread`, …).
        what: &'static str,
        /// Why, where the system said.
        #[source]
        source: Option<std::io::Error>,
    },
    /// The engine exited, closed its output or could not be written to.
    #[error("TEI engine {engine:?}: {stage} failed: engine crashed or exited: {detail}")]
    Died {
        /// The engine.
        engine: String,
        /// What the client was doing.
        stage: TeiStage,
        /// The exit status or write error, and the last lines of its stderr.
        detail: String,
    },
    /// The engine did not answer in time.
    #[error(
        "TEI engine {engine:?}: {stage} failed: no `{waiting_for}` within {waited:?} (last line from the engine: {})",
        last_line.as_deref().map_or_else(|| "none".to_string(), |l| format!("{l:?}"))
    )]
    TimedOut {
        /// The engine.
        engine: String,
        /// What the client was doing.
        stage: TeiStage,
        /// The line it waited for (`teiok`, `readyok`).
        waiting_for: &'static str,
        /// How long it waited.
        waited: Duration,
        /// The last line the engine sent, if any.
        last_line: Option<String>,
    },
    /// The engine sent something the protocol does not allow.
    #[error("TEI engine {engine:?}: {stage} failed: protocol error: {message}")]
    Protocol {
        /// The engine.
        engine: String,
        /// What the client was doing.
        stage: TeiStage,
        /// What was wrong.
        message: String,
    },
    /// Any other failure at that stage.
    #[error("TEI engine {engine:?}: {stage} failed")]
    Failed {
        /// The engine.
        engine: String,
        /// What the client was doing.
        stage: TeiStage,
        /// Why.
        #[source]
        source: Box<PlayerError>,
    },
    /// The engine process is gone and could not be restarted.
    #[error("TEI engine {engine:?}: engine not running")]
    NotRunning {
        /// The engine.
        engine: String,
    },
}

/// Why a player failed to start a game or to produce a move. In a match, any of these
/// loses the game for that player (the match goes on).
#[derive(Debug, thiserror::Error)]
pub enum PlayerError {
    /// The engine process exited or closed its output.
    #[error("engine crashed or exited: {0}")]
    Crashed(String),
    /// No move within the per-move timeout.
    #[error("no move within {0:?}")]
    Timeout(Duration),
    /// The move text could not be parsed as a PTN move.
    #[error("unparsable move {text:?}: {reason}")]
    Unparsable {
        /// What the engine sent.
        text: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The move is not legal in the position (set by the game loop, which checks every move).
    #[error("illegal move {0}")]
    Illegal(String),
    /// The engine sent something the protocol does not allow.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The player ran out of time on the game clock.
    #[error("lost on time")]
    OutOfTime,
    /// An external engine that could not be started or readied for a game.
    #[error(transparent)]
    Engine(#[from] TeiClientError),
    /// Asked for a move in a finished game.
    #[error("the game is over")]
    GameOver,
    /// Asked for a move in a position without one.
    #[error("the position has no legal move")]
    NoLegalMove,
    /// An external engine asked for a move with no limit to search within (no nodes,
    /// movetime or clock, neither the player's own nor the match's).
    #[error("no limit (nodes, movetime or clock) configured for the TEI engine")]
    NoLimit,
}

/// An opening that cannot be used, or openings that cannot be loaded or drawn.
#[derive(Debug, thiserror::Error)]
pub enum OpeningsError {
    /// The game options make no position (size out of range).
    #[error(transparent)]
    Options(#[from] RulesError),
    /// A word that is not a PTN move.
    #[error("move {index} {word:?}")]
    BadMove {
        /// 1-based position in the opening.
        index: usize,
        /// The word.
        word: String,
        /// Why it is not a move.
        #[source]
        source: PtnMoveError,
    },
    /// A move that is not legal where it is played.
    #[error("move {index} {word:?} is illegal")]
    IllegalMove {
        /// 1-based position in the opening.
        index: usize,
        /// The word.
        word: String,
        /// Why.
        #[source]
        source: RulesError,
    },
    /// A move after which the game is over.
    #[error("move {index} {word:?} ends the game")]
    EndsGame {
        /// 1-based position in the opening.
        index: usize,
        /// The word.
        word: String,
    },
    /// The openings file cannot be read.
    #[error("reading openings file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line of the openings file is not an opening for the board size.
    #[error("{}:{line}: bad opening for size {size}", path.display())]
    BadLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The board size.
        size: usize,
        /// What is wrong with it.
        #[source]
        source: Box<OpeningsError>,
    },
    /// The openings file holds no opening.
    #[error("openings file {} has no openings", path.display())]
    NoOpenings {
        /// The file.
        path: PathBuf,
    },
    /// `count = 0`.
    #[error("openings count must be at least 1")]
    ZeroCount,
    /// No random opening of that length exists (every sequence ends the game).
    #[error("could not draw any random opening of {plies} plies")]
    NoRandomOpening {
        /// Plies asked for.
        plies: usize,
    },
}

/// The results file, game files and atomic writes.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// A directory could not be created.
    #[error("creating {}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The storage layer failed (an atomic write, a checked JSON encoding).
    #[error(transparent)]
    Store(#[from] bredon_storage::StorageError),
    /// A record could not be appended to the results file.
    #[error("appending to {}", path.display())]
    Append {
        /// The results file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The results file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The results file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A complete line of the results file is not a record.
    #[error("{}:{line}: bad result record", path.display())]
    BadRecord {
        /// The results file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// A record could not be encoded as JSON.
    #[error("encoding a result record")]
    Encode(#[source] serde_json::Error),
    /// The game's options make no position (so no PTN file).
    #[error(transparent)]
    GameOptions(#[from] RulesError),
}

/// Writing the ratings table.
#[derive(Debug, thiserror::Error)]
pub enum RatingsError {
    /// The file could not be written.
    #[error(transparent)]
    Write(#[from] ResultsError),
    /// The table could not be encoded as checked JSON.
    #[error("encoding the ratings table as checked JSON")]
    Encode(#[source] bredon_storage::integrity::IntegrityError),
}

/// Reading Elo curve tables and drawing the Elo chart.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Nothing (finite) to draw.
    #[error("no points to plot")]
    NoPoints,
    /// plotters failed.
    #[error("drawing the Elo chart: {0}")]
    Draw(String),
    /// The SVG file could not be written.
    #[error(transparent)]
    Write(#[from] ResultsError),
    /// A curve table without a header line.
    #[error("empty table: no header line")]
    EmptyTable,
    /// The header lacks a column the chart needs.
    #[error("line 1: no `{column}` column (columns: {header})")]
    MissingColumn {
        /// The column.
        column: String,
        /// The header line.
        header: String,
    },
    /// A line with another number of fields than the header.
    #[error("line {line}: {found} fields, the header has {expected}")]
    FieldCount {
        /// 1-based line number.
        line: usize,
        /// Fields on the line.
        found: usize,
        /// Fields in the header.
        expected: usize,
    },
    /// A field that should be a number.
    #[error("line {line}: `{value}` is not a number ({column})")]
    NotANumber {
        /// 1-based line number.
        line: usize,
        /// The field's text.
        value: String,
        /// Its column.
        column: String,
    },
}

/// Gate settings that make no test.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SprtError {
    /// `elo0 >= elo1` (or a NaN).
    #[error("SPRT needs elo0 < elo1 (got {elo0} and {elo1})")]
    Hypotheses {
        /// Elo under H0.
        elo0: f64,
        /// Elo under H1.
        elo1: f64,
    },
    /// `alpha` or `beta` outside (0, 1).
    #[error("SPRT alpha and beta must be in (0, 1) (got {alpha} and {beta})")]
    ErrorRates {
        /// False positive rate.
        alpha: f64,
        /// False negative rate.
        beta: f64,
    },
}

/// Match settings that cannot be played ([`crate::MatchConfig::validate`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchConfigError {
    /// A board size outside 3 to 8.
    #[error("size {0} is not supported (3 to 8)")]
    Size(usize),
    /// `games_per_pairing = 0`.
    #[error("games_per_pairing must be at least 1")]
    NoGames,
    /// `threads = 0`.
    #[error("threads must be at least 1")]
    NoThreads,
    /// A results file name with a path in it, or none.
    #[error("results_file must be a plain file name, got {0:?}")]
    ResultsFile(String),
}

/// Why a match (or the arena, or a gate) could not be run or completed.
#[derive(Debug, thiserror::Error)]
pub enum ArenaError {
    /// The match settings.
    #[error(transparent)]
    Config(#[from] MatchConfigError),
    /// Fewer than two players.
    #[error("a match needs at least two players, got {0}")]
    TooFewPlayers(usize),
    /// A player with an empty name.
    #[error("a player has an empty name")]
    EmptyName,
    /// Two players with the same name.
    #[error("two players are named {0:?}: give one another name (name=…)")]
    DuplicateName(String),
    /// A player spec that cannot make a player (`index` counts from 1).
    #[error("player {index}")]
    Player {
        /// 1-based position in the player list.
        index: usize,
        /// What is wrong with it.
        #[source]
        source: SpecError,
    },
    /// The run's `[eval.anchor] player` cannot make a player, or it does not start.
    #[error("[eval.anchor] player = {spec:?}")]
    Anchor {
        /// The spec as the config gives it.
        spec: String,
        /// What is wrong with it ([`SpecError`], or [`ArenaError::StartPlayer`]).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A player that could not be started before the match.
    #[error("starting player {name}")]
    StartPlayer {
        /// The player's name.
        name: String,
        /// Why.
        #[source]
        source: PlayerError,
    },
    /// The openings.
    #[error("loading openings")]
    Openings(#[from] OpeningsError),
    /// The output directory could not be created.
    #[error("creating {}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The results file or a game file.
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// The ratings table.
    #[error(transparent)]
    Ratings(#[from] RatingsError),
    /// The gate settings.
    #[error(transparent)]
    Gate(#[from] SprtError),
    /// A directory without a run config (`config.toml`) given as a training run.
    #[error("{} is not a run directory", path.display())]
    NotARun {
        /// The directory.
        path: PathBuf,
        /// Why its config could not be read.
        #[source]
        source: bredon_selfplay::error::ConfigError,
    },
    /// A run without a complete checkpoint to rate.
    #[error("{} has no checkpoints yet", run.display())]
    NoCheckpoints {
        /// The run directory.
        run: PathBuf,
    },
    /// The training run's files (pointers, checkpoints' training state, `init.json`).
    #[error(transparent)]
    Run(#[from] bredon_selfplay::error::RunError),
    /// The Elo chart.
    #[error("drawing the Elo curve")]
    Plot(#[from] PlotError),
}
