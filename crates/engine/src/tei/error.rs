//! The TEI engine's errors. The engine answers them with one `info string error: …` line
//! (their `Display`) and goes on; [`ModelsError`] and [`ListenError`] reach the front end.

use bredon_rules::RulesError;
use bredon_rules::notation::{PtnMoveError, TpsError};

/// A `position` command that does not give a position of the current game.
#[derive(Debug, thiserror::Error)]
pub enum PositionError {
    /// `position startpos` on a board the rules do not allow.
    #[error("position startpos: {0}")]
    StartPos(#[source] RulesError),
    /// The TPS does not parse.
    #[error("position tps {tps:?}: {source}")]
    Tps {
        /// The TPS as sent.
        tps: String,
        /// Why it does not parse.
        source: TpsError,
    },
    /// The position's board is not the game's.
    #[error("position is {position}x{position} but the game is {game}x{game} (send `teinewgame {position}`)")]
    WrongSize {
        /// The position's size.
        position: usize,
        /// The game's size (the last `teinewgame`).
        game: usize,
    },
    /// A move that is not PTN.
    #[error("position: move {number} {text:?}: {source}")]
    MoveSyntax {
        /// 1 for the first move after `moves`.
        number: usize,
        /// The move as sent.
        text: String,
        /// Why it does not parse.
        source: PtnMoveError,
    },
    /// A move the rules do not allow there.
    #[error("position: move {number} {text:?} is illegal: {source}")]
    IllegalMove {
        /// 1 for the first move after `moves`.
        number: usize,
        /// The move as sent.
        text: String,
        /// Why the rules refuse it.
        source: RulesError,
    },
}

/// A set of networks the engine cannot play with.
#[derive(Debug, thiserror::Error)]
pub enum ModelsError {
    /// Two networks for one board size.
    #[error("two {size}x{size} models: {first} and {second}")]
    TwoForOneSize {
        /// The board size.
        size: usize,
        /// The network given first.
        first: String,
        /// The second one.
        second: String,
    },
    /// A board size TEI does not carry.
    #[error("{name}: a {size}x{size} model, but TEI plays 3x3 to 8x8")]
    BadSize {
        /// The board size.
        size: usize,
        /// The network.
        name: String,
    },
}

/// The WebSocket listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// Binding the address failed (in use, not this machine's, no permission).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The listening socket failed.
    #[error("the listening socket failed: {0}")]
    Accept(#[source] std::io::Error),
}

/// A `setoption` the engine refuses (the option keeps its value).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    /// No such option.
    #[error("unknown option {name:?} (the options are HalfKomi, MultiPV, Threads, Hash and Precision)")]
    Unknown {
        /// The name as sent.
        name: String,
    },
    /// `setoption name N` without a value.
    #[error("setoption name {option} needs a value from {min} to {max}")]
    MissingValue {
        /// The option.
        option: &'static str,
        /// Its smallest value.
        min: i64,
        /// Its largest value.
        max: i64,
    },
    /// A value that is not one of a `combo` option's.
    #[error("{option} must be one of {choices}, got {value:?}")]
    NotAChoice {
        /// The option.
        option: &'static str,
        /// The value as sent.
        value: String,
        /// Its values, comma-separated.
        choices: String,
    },
    /// A value that is not an integer in the option's bounds.
    #[error("{option} must be an integer from {min} to {max}, got {value:?}")]
    OutOfRange {
        /// The option.
        option: &'static str,
        /// The value as sent.
        value: String,
        /// Its smallest value.
        min: i64,
        /// Its largest value.
        max: i64,
    },
}
