//! The [`Player`] trait and the in-process players: [`RandomPlayer`] and [`MctsPlayer`].
//! External engines are in [`crate::tei`].

use std::sync::Arc;
use std::time::Duration;

use bredon_mcts::Evaluator;
use bredon_rules::{GameOptions, Move, Position};
use rand::SeedableRng;
use rand::seq::IndexedRandom;
use rand_chacha::ChaCha8Rng;

pub use crate::error::PlayerError;

/// Game clock state sent to engines that manage their own time (`go wtime … btime …`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockState {
    /// White's remaining time.
    pub wtime: Duration,
    /// Black's remaining time.
    pub btime: Duration,
    /// White's increment per move.
    pub winc: Duration,
    /// Black's increment per move.
    pub binc: Duration,
}

/// How much a player may think about one move. The match runner fills this from the
/// player's configured limits; fields that are `None` are not constrained. A player uses
/// the first of `nodes`, `movetime`, `clock` that it supports and its own default otherwise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MoveLimits {
    /// Search this many nodes (MCTS visits / engine playouts).
    pub nodes: Option<u64>,
    /// Think this long.
    pub movetime: Option<Duration>,
    /// The game clock, when the match is played with one.
    pub clock: Option<ClockState>,
}

impl MoveLimits {
    /// Limits of `nodes` visits only.
    pub fn nodes(nodes: u64) -> MoveLimits {
        MoveLimits { nodes: Some(nodes), ..MoveLimits::default() }
    }

    /// Limits of a fixed time per move only.
    pub fn movetime(movetime: Duration) -> MoveLimits {
        MoveLimits { movetime: Some(movetime), ..MoveLimits::default() }
    }
}

/// Someone who plays games: a baseline, an MCTS search, an external engine.
///
/// The match runner calls [`Player::new_game`] before every game, then
/// [`Player::choose_move`] on each of the player's turns. Players are used from one worker
/// thread at a time (hence `Send`); each worker makes its own instances.
pub trait Player: Send {
    /// A short name for tables and PTN tags (e.g. `uniform-100`, `tiltak`).
    fn name(&self) -> String;

    /// Prepares for a new game with these options (size, komi, reserves). An error here
    /// forfeits the game that was about to start.
    fn new_game(&mut self, opts: GameOptions) -> Result<(), PlayerError>;

    /// The move to play in `pos`, which was reached by playing `history` from the empty
    /// board of the game's options. The move need not be checked: the game loop checks it
    /// and an illegal move loses the game.
    fn choose_move(&mut self, pos: &Position, history: &[Move], limits: &MoveLimits) -> Result<Move, PlayerError>;
}

/// Plays a uniformly random legal move; deterministic for a given seed.
pub struct RandomPlayer {
    rng: ChaCha8Rng,
    name: String,
}

impl RandomPlayer {
    /// A random player seeded with `seed`.
    pub fn new(seed: u64) -> RandomPlayer {
        RandomPlayer { rng: ChaCha8Rng::seed_from_u64(seed), name: "random".to_string() }
    }

    /// The same player under another name.
    pub fn with_name(mut self, name: impl Into<String>) -> RandomPlayer {
        self.name = name.into();
        self
    }
}

impl Player for RandomPlayer {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn new_game(&mut self, _opts: GameOptions) -> Result<(), PlayerError> {
        Ok(())
    }

    fn choose_move(&mut self, pos: &Position, _history: &[Move], _limits: &MoveLimits) -> Result<Move, PlayerError> {
        let moves = pos.legal_moves();
        moves.choose(&mut self.rng).copied().ok_or(PlayerError::NoLegalMove)
    }
}

/// Monte Carlo tree search (PUCT or Gumbel, by its config) with any [`Evaluator`]. With [`crate::UniformEvaluator`] it is the uniform-policy baseline.
///
/// Budget per move: on a game clock, the time [`bredon_mcts::move_budget`] gives with the
/// config's `time_management` (the same time management as `bredon tei`); otherwise `MoveLimits::nodes` if given, else
/// `MoveLimits::movetime` (searched until the deadline), else the player's own visits.
/// The search is `bredon_mcts::Search` with a fresh tree each move and no root noise
/// (see [`crate::search_glue`]).
pub struct MctsPlayer {
    evaluator: Arc<dyn Evaluator>,
    visits: u32,
    config: crate::search_glue::SearchConfig,
    rng: ChaCha8Rng,
    name: String,
}

impl MctsPlayer {
    /// A player searching `visits` visits per move with `evaluator`,
    /// [`crate::search_glue::match_search_config`] and an RNG seeded with `seed`.
    pub fn new(evaluator: Arc<dyn Evaluator>, visits: u32, seed: u64, name: impl Into<String>) -> MctsPlayer {
        MctsPlayer {
            evaluator,
            visits: visits.max(1),
            config: crate::search_glue::match_search_config(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            name: name.into(),
        }
    }

    /// A player with a concrete evaluator type.
    pub fn with_evaluator<E: Evaluator + 'static>(
        evaluator: E,
        visits: u32,
        seed: u64,
        name: impl Into<String>,
    ) -> MctsPlayer {
        MctsPlayer::new(Arc::new(evaluator), visits, seed, name)
    }

    /// The uniform-policy baseline: MCTS with [`crate::UniformEvaluator`], named
    /// `uniform-VISITS`.
    pub fn uniform(visits: u32, seed: u64) -> MctsPlayer {
        MctsPlayer::with_evaluator(crate::search_glue::UniformEvaluator, visits, seed, format!("uniform-{visits}"))
    }

    /// Replaces the search configuration.
    pub fn with_config(mut self, config: crate::search_glue::SearchConfig) -> MctsPlayer {
        self.config = config;
        self
    }

    /// Visits per move when the limits do not say.
    pub fn visits(&self) -> u32 {
        self.visits
    }
}

impl Player for MctsPlayer {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn new_game(&mut self, _opts: GameOptions) -> Result<(), PlayerError> {
        Ok(())
    }

    fn choose_move(&mut self, pos: &Position, _history: &[Move], limits: &MoveLimits) -> Result<Move, PlayerError> {
        use crate::search_glue::{Budget, search_best_move};
        let budget = match (limits.clock, limits.nodes, limits.movetime) {
            (Some(c), _, _) => {
                let (left, inc) = if pos.side_to_move() == bredon_rules::Color::White {
                    (c.wtime, c.winc)
                } else {
                    (c.btime, c.binc)
                };
                Budget::Clock(bredon_mcts::move_budget(
                    pos,
                    left.as_millis() as u64,
                    inc.as_millis() as u64,
                    self.config.time_management,
                ))
            }
            (None, Some(n), _) => Budget::Visits(n.max(1)),
            (None, None, Some(t)) => Budget::Time(t),
            (None, None, None) => Budget::Visits(self.visits as u64),
        };
        if pos.result().is_some() {
            return Err(PlayerError::GameOver);
        }
        // With the game not over, the search's only reason for no move is that there is none.
        search_best_move(pos, &*self.evaluator, &self.config, budget, &mut self.rng)
            .map_err(|_| PlayerError::NoLegalMove)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A finished game has no move to give, and the error says so.
    #[test]
    fn a_finished_game_is_a_typed_error() {
        let over = bredon_rules::notation::parse_tps("x3/x3/1,1,1 2 3").unwrap();
        assert!(over.result().is_some());
        let mut player = MctsPlayer::uniform(1, 1);
        let e = player.choose_move(&over, &[], &MoveLimits::nodes(1)).unwrap_err();
        assert!(matches!(e, PlayerError::GameOver), "{e:?}");
        assert_eq!(e.to_string(), "the game is over");
    }

    #[test]
    fn on_a_clock_the_search_thinks_for_the_clock_budget() {
        let pos = Position::new(5).unwrap();
        let mut player = MctsPlayer::uniform(1, 1);
        // One visit, no clock: immediate.
        let t = Instant::now();
        player.choose_move(&pos, &[], &MoveLimits::nodes(1)).unwrap();
        let one_visit = t.elapsed();
        // The same limits with 4 s on white's clock: clock_budget(4000, 0) = 190 ms.
        let clock = ClockState {
            wtime: Duration::from_millis(4000),
            btime: Duration::from_millis(10),
            winc: Duration::ZERO,
            binc: Duration::ZERO,
        };
        let limits = MoveLimits { clock: Some(clock), ..MoveLimits::nodes(1) };
        let t = Instant::now();
        player.choose_move(&pos, &[], &limits).unwrap();
        let on_clock = t.elapsed();
        assert!(on_clock >= Duration::from_millis(150), "thought {on_clock:?} (one visit took {one_visit:?})");
        assert!(on_clock < Duration::from_secs(2), "thought {on_clock:?}, far beyond its budget");
    }
}
