//! The one place the analysis engine calls `bredon-mcts`: a search of one position,
//! turned into plain data for the side to move.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

pub use bredon_mcts::RootMove;
use bredon_mcts::{Evaluator, Outcome, PlaySearch, SearchLimits, Wdl, play_config};
use bredon_rules::{Move, Position};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::query::Limits;

/// What a search of one position found, for the side to move.
#[derive(Clone, Debug, PartialEq)]
pub struct Searched {
    /// Expected outcome, −1 to 1 (±1 when proven).
    pub value: f32,
    /// Win/draw/loss (an evaluator with draw probabilities, or a proof).
    pub wdl: Option<Wdl>,
    /// Expected final flat margin in flats, komi included (an evaluator with margins).
    pub margin: Option<f32>,
    /// The proven result and the plies to the game's end along the proven line.
    pub solved: Option<(Outcome, u32)>,
    /// The move to play.
    pub best: Option<Move>,
    /// The principal variation.
    pub pv: Vec<Move>,
    /// Root moves, the move to play first, then by the search's order.
    pub moves: Vec<RootMove>,
    /// Root visits.
    pub visits: u64,
}

/// Searches `pos` (a game not over) afresh within `limits` or until `stop`, on one
/// thread with the play settings (no root noise) and a fixed seed.
pub fn search(pos: &Position, evaluator: &dyn Evaluator, limits: Limits, stop: &Arc<AtomicBool>) -> Searched {
    let mut search = PlaySearch::new(pos.clone(), play_config(), 1);
    let limits = SearchLimits {
        visits: limits.visits,
        deadline: limits.movetime.map(|t| Instant::now() + t),
        stop: Some(stop.clone()),
        ..SearchLimits::default()
    };
    let r = search.search_within(evaluator, &limits, &mut ChaCha8Rng::seed_from_u64(0), |_| {});
    Searched {
        value: r.value,
        wdl: r.wdl,
        margin: r.margin,
        solved: r.solved.map(|s| (s.outcome, s.plies)),
        best: r.best_move,
        pv: r.pv,
        moves: r.root_moves,
        visits: r.root_visits,
    }
}
