//! What a search is asked and what it answers: [`SearchLimits`], and [`SearchResult`]
//! with its root moves, proven result and win/draw/loss split.

use bredon_rules::Move;
use rand::Rng;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// When a search stops.
#[derive(Clone, Debug, Default)]
pub struct SearchLimits {
    /// Stop when the root has this many visits (reused ones included).
    pub visits: Option<u64>,
    /// Stop when this flag is set (e.g. by a TEI `stop`).
    pub stop: Option<Arc<AtomicBool>>,
    /// Stop at this time.
    pub deadline: Option<Instant>,
    /// Call the progress callback at most this often.
    pub progress_every: Option<Duration>,
    /// The deadline is a game clock's share, so time saved is kept: the PUCT search may
    /// stop before it once the most visited root move cannot change
    /// ([`SearchConfig::stop_when_decided`](crate::SearchConfig::stop_when_decided),
    /// which callers pass here for clock budgets).
    pub stop_when_decided: bool,
}

/// A game result, from the view of one player.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// That player wins.
    Win,
    /// That player loses.
    Loss,
    /// The game is drawn.
    Draw,
}

/// A result the search proved for the side to move at the root, and in how many plies
/// the game ends along the proven line (the principal variation as searched: a bound, not
/// always the shortest way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Solved {
    /// The proven result for the side to move.
    pub outcome: Outcome,
    /// Plies until the game ends along the proven line (1: the move itself wins).
    pub plies: u32,
}

/// Win, draw and loss probabilities for one player, summing to 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wdl {
    /// Probability of a win.
    pub win: f32,
    /// Probability of a draw.
    pub draw: f32,
    /// Probability of a loss.
    pub loss: f32,
}

impl Wdl {
    /// The split given by an expected outcome `value` in [-1, 1] and a draw probability.
    pub fn from_value(value: f32, draw: f32) -> Wdl {
        let value = value.clamp(-1.0, 1.0);
        // A draw probability larger than the value allows is cut to what it allows.
        let draw = draw.clamp(0.0, 1.0 - value.abs());
        Wdl { win: (1.0 + value - draw) / 2.0, draw, loss: (1.0 - value - draw) / 2.0 }
    }

    /// The same probabilities from the other side's view (win and loss swapped).
    pub fn flipped(self) -> Wdl {
        Wdl { win: self.loss, draw: self.draw, loss: self.win }
    }

    /// The split in per mille, rounded so that the three sum to 1000.
    pub fn per_mille(&self) -> [u32; 3] {
        let w = (self.win * 1000.0).round().clamp(0.0, 1000.0) as u32;
        let l = (self.loss * 1000.0).round().clamp(0.0, (1000 - w) as f32) as u32;
        [w, 1000 - w - l, l]
    }
}

/// One root move as the search saw it: the lines of a MultiPV report.
#[derive(Clone, Debug, PartialEq)]
pub struct RootMove {
    /// The move.
    pub mv: Move,
    /// Its visits.
    pub visits: u32,
    /// The evaluator's prior for it (after root noise, if any).
    pub prior: f32,
    /// Mean value after it for the side to move at the root, in [-1, 1] (±1 or 0 when
    /// proven); `None` while unvisited.
    pub value: Option<f32>,
    /// Win/draw/loss for the side to move at the root after this move, when the value
    /// is known and the evaluator gives draw probabilities (or the move is proven).
    pub wdl: Option<Wdl>,
    /// A result the search proved for this move, from the root mover's view.
    pub proven: Option<Outcome>,
    /// The expected final flat margin after this move for the root mover, when visited
    /// and the evaluator gives margins.
    pub margin: Option<f32>,
    /// The principal variation starting with this move.
    pub pv: Vec<Move>,
}

/// What a search found.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchResult {
    /// Visits per root move (the training target). They sum to the root's visits minus
    /// one: the root's own first visit is its expansion.
    pub visits: Vec<(Move, u32)>,
    /// Expected outcome for the side to move at the root, in [-1, 1] (±1 when proven).
    pub value: f32,
    /// The move to play: a proven win if there is one, else the most visited move that is
    /// not a proven loss.
    pub best_move: Option<Move>,
    /// Principal variation: most visited moves from the root.
    pub pv: Vec<Move>,
    /// Playouts done by this call (not counting reused visits).
    pub playouts: u64,
    /// Total visits of the root.
    pub root_visits: u64,
    /// Whether the root's value is proven (a forced result).
    pub proven: bool,
    /// Gumbel search only: the improved policy softmax(logits + σ(completed Q)) over the
    /// root moves, the policy training target (PUCT trains on `visits`).
    pub improved_policy: Option<Vec<(Move, f32)>>,
    /// Win/draw/loss for the side to move at the root, when the evaluator gives draw
    /// probabilities or the result is proven.
    pub wdl: Option<Wdl>,
    /// The proven result and its length, when `proven`.
    pub solved: Option<Solved>,
    /// The expected final flat margin in flats for the side to move at the root (komi
    /// included), when the evaluator gives margins.
    pub margin: Option<f32>,
    /// Every root move, the move to play first, then by the same order `best_move`
    /// uses (proven wins, visits, value, prior).
    pub root_moves: Vec<RootMove>,
    /// The deepest ply below the root that a playout of this search reached.
    pub seldepth: u32,
}

impl SearchResult {
    /// Picks a move: temperature 0 gives `best_move`; otherwise moves are drawn with
    /// probability ∝ visits^(1/temperature), never a proven loss while others exist.
    /// Returns `None` only if the root has no legal moves.
    pub fn select_move(&self, temperature: f32, rng: &mut impl Rng) -> Move {
        self.try_select_move(temperature, rng).expect("select_move on a finished game")
    }

    /// Like [`SearchResult::select_move`], `None` if the root has no moves.
    pub fn try_select_move(&self, temperature: f32, rng: &mut impl Rng) -> Option<Move> {
        if temperature <= 1e-3 || self.proven {
            return self.best_move;
        }
        match draw_with_temperature(self.visits.iter().map(|&(_, v)| v as f64), temperature, rng) {
            Some(i) => Some(self.visits[i].0),
            None => self.best_move,
        }
    }
}

/// Draws an index with probability ∝ `weights[i]^(1/temperature)`: one uniform draw from
/// `rng`, then the running sum. `None` when the weights sum to nothing (zero or not
/// finite) or the draw falls past the last one by rounding; the caller picks its default.
/// Used for move selection by visits here and for self-play's openings drawn from the
/// raw policy.
pub fn draw_with_temperature(
    weights: impl Iterator<Item = f64>,
    temperature: f32,
    rng: &mut impl Rng,
) -> Option<usize> {
    let inv_t = 1.0 / f64::from(temperature);
    let weights: Vec<f64> = weights.map(|w| w.powf(inv_t)).collect();
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let mut x = rng.random::<f64>() * total;
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return Some(i);
        }
        x -= w;
    }
    None
}

/// The value of a game result for the player it is of.
pub(super) fn outcome_value(o: Outcome) -> f32 {
    match o {
        Outcome::Win => 1.0,
        Outcome::Loss => -1.0,
        Outcome::Draw => 0.0,
    }
}

/// The certain win/draw/loss split of a game result.
pub(super) fn outcome_wdl(o: Outcome) -> Wdl {
    match o {
        Outcome::Win => Wdl { win: 1.0, draw: 0.0, loss: 0.0 },
        Outcome::Loss => Wdl { win: 0.0, draw: 0.0, loss: 1.0 },
        Outcome::Draw => Wdl { win: 0.0, draw: 1.0, loss: 0.0 },
    }
}
