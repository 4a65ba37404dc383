//! Time management: how long to think on a game clock.

use bredon_rules::Position;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How a game clock is spent (`[search] time_management`; arena players `time=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeManagement {
    /// A twentieth of the time left per move, whatever the position ([`clock_budget`]).
    #[default]
    Fixed,
    /// The time left divided by the moves the side to move is still expected to play,
    /// estimated from its reserve ([`expected_moves_left`]): a Tak game ends at the latest
    /// when a reserve runs out, so small boards and late positions think longer per move.
    Reserves,
}

/// A name that is not a [`TimeManagement`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a time management: fixed or reserves")]
pub struct UnknownTimeManagement(pub String);

impl std::str::FromStr for TimeManagement {
    type Err = UnknownTimeManagement;

    /// `fixed` or `reserves`, in any case.
    fn from_str(s: &str) -> Result<TimeManagement, UnknownTimeManagement> {
        match s.to_ascii_lowercase().as_str() {
            "fixed" => Ok(TimeManagement::Fixed),
            "reserves" => Ok(TimeManagement::Reserves),
            _ => Err(UnknownTimeManagement(s.to_string())),
        }
    }
}

/// Thinking time for one move with `time_ms` left on the clock and `inc_ms` added per
/// move: a twentieth of the time left plus three quarters of the increment, never more
/// than a third of the time left, minus 10 ms of safety for the move's overhead.
pub fn clock_budget(time_ms: u64, inc_ms: u64) -> Duration {
    budget_for_moves(time_ms, inc_ms, 20)
}

/// The moves the side to move of `pos` is still expected to play: two thirds of its
/// reserve (stones and capstones; spreads leave the reserve as it is) plus two, from 5 to
/// 30.
pub fn expected_moves_left(pos: &Position) -> u64 {
    let (stones, caps) = pos.reserves(pos.side_to_move());
    ((stones as u64 + caps as u64) * 2 / 3 + 2).clamp(5, 30)
}

/// Thinking time for the move of `pos` with `time_ms` left and `inc_ms` added per move,
/// spent as `how` says (the same cap and safety margin as [`clock_budget`]).
pub fn move_budget(pos: &Position, time_ms: u64, inc_ms: u64, how: TimeManagement) -> Duration {
    let moves = match how {
        TimeManagement::Fixed => 20,
        TimeManagement::Reserves => expected_moves_left(pos),
    };
    budget_for_moves(time_ms, inc_ms, moves)
}

/// The mover's game clock at a move, as a TEI `go wtime … winc … movestogo …` gives it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    /// Time left, in milliseconds.
    pub time_ms: u64,
    /// Added after each move, in milliseconds.
    pub inc_ms: u64,
    /// Moves until the next time control, if the clock has one.
    pub moves_to_go: Option<u64>,
}

impl Clock {
    /// The time to spend on the move of `pos`: [`move_budget`] as `how` says, and with
    /// `moves_to_go` at most nine tenths of the clock's share per move (plus three
    /// quarters of the increment).
    pub fn share(&self, pos: &Position, how: TimeManagement) -> Duration {
        let budget = move_budget(pos, self.time_ms, self.inc_ms, how);
        match self.moves_to_go {
            Some(m) => {
                budget.min(Duration::from_millis((self.time_ms / m.max(1) * 9 / 10 + self.inc_ms * 3 / 4).max(1)))
            }
            None => budget,
        }
    }
}

/// The time left spread over `moves` moves, plus three quarters of the increment, at
/// most a third of the time left, minus 10 ms of safety.
fn budget_for_moves(time_ms: u64, inc_ms: u64, moves: u64) -> Duration {
    let spend = time_ms / moves.max(1) + inc_ms * 3 / 4;
    let cap = time_ms / 3;
    Duration::from_millis(spend.min(cap).saturating_sub(10).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_budget_is_sane() {
        assert!(clock_budget(60_000, 0) >= Duration::from_millis(2900));
        assert!(clock_budget(60_000, 0) <= Duration::from_millis(3000));
        assert!(clock_budget(300, 10_000) <= Duration::from_millis(100));
        assert!(clock_budget(0, 0) >= Duration::from_millis(1));
        // 10 s + 0.1 s: about half a second for the first move.
        assert_eq!(clock_budget(10_000, 100), Duration::from_millis(565));
    }

    #[test]
    fn moves_to_go_shortens_the_share() {
        let pos = Position::new(6).unwrap();
        let plain = Clock { time_ms: 10_000, inc_ms: 100, moves_to_go: None };
        assert_eq!(plain.share(&pos, TimeManagement::Fixed), clock_budget(10_000, 100));
        // Two moves to go: 10 s / 2 * 0.9 + 75 ms would be more than the third the cap
        // allows, so the cap holds; forty moves to go: 225 + 75 ms.
        let two = Clock { moves_to_go: Some(2), ..plain };
        assert_eq!(two.share(&pos, TimeManagement::Fixed), clock_budget(10_000, 100));
        let forty = Clock { moves_to_go: Some(40), ..plain };
        assert_eq!(forty.share(&pos, TimeManagement::Fixed), Duration::from_millis(300));
    }

    #[test]
    fn time_management_is_parsed_by_name() {
        assert_eq!("fixed".parse(), Ok(TimeManagement::Fixed));
        assert_eq!("Reserves".parse(), Ok(TimeManagement::Reserves));
        let err = "twentieth".parse::<TimeManagement>().unwrap_err();
        assert_eq!(err.to_string(), "\"twentieth\" is not a time management: fixed or reserves");
    }

    #[test]
    fn reserves_time_management_follows_the_reserve() {
        // 4x4: 15 stones each, so about 12 moves left at the start: 10 s / 12 + 75 ms.
        let start = Position::new(4).unwrap();
        assert_eq!(expected_moves_left(&start), 12);
        assert_eq!(move_budget(&start, 10_000, 100, TimeManagement::Reserves), Duration::from_millis(898));
        assert_eq!(move_budget(&start, 10_000, 100, TimeManagement::Fixed), clock_budget(10_000, 100));
        // 6x6 (30 stones + 1 capstone): 22 moves, close to the fixed twentieth.
        assert_eq!(expected_moves_left(&Position::new(6).unwrap()), 22);
        // Later in a game: fewer moves left, and the cap of a third of the time still holds.
        let mid = bredon_rules::notation::parse_tps("x4/x4/2,2,2,2/1,1,1,1 1 5").unwrap();
        assert_eq!(mid.reserves(mid.side_to_move()), (11, 0));
        assert_eq!(expected_moves_left(&mid), 9);
        let late = bredon_rules::notation::parse_tps("2,2,2,2/1,1,1,1/2,2,2,2/1,1,1,1 1 9").unwrap();
        assert_eq!(late.reserves(late.side_to_move()), (7, 0));
        assert_eq!(expected_moves_left(&late), 6);
        assert_eq!(move_budget(&late, 1_000, 0, TimeManagement::Reserves), Duration::from_millis(156));
        assert_eq!(move_budget(&late, 300, 10_000, TimeManagement::Reserves), Duration::from_millis(90));
    }
}
