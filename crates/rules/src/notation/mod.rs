//! Notation: TPS positions and PTN moves and games. Parsing is kept apart from the rules
//! and reports typed errors that say what is wrong and where.

pub mod ptn;
pub mod tps;

pub use ptn::{Ptn, PtnError, PtnErrorKind, PtnMove, PtnMoveError, Replay, parse_move, write_move};
pub use tps::{TpsError, parse_tps, parse_tps_with, write_tps};
