//! The search behind [`crate::MctsPlayer`]: `bredon_mcts::Search` (or, with `[search]
//! threads` above 1, that many trees side by side: `ParallelSearch`) with a fresh tree per
//! move, no root noise, and the most visited move (a proven win if there is one).

use std::time::{Duration, Instant};

use bredon_mcts::{Evaluator, ParallelSearch, SearchLimits};
use bredon_rules::{Move, Position};
use rand::Rng;

pub use bredon_mcts::{SearchConfig, UniformEvaluator};

/// The search settings [`crate::MctsPlayer`] uses by default: `bredon_mcts`'s defaults
/// with root noise off (matches measure strength, they do not explore).
pub fn match_search_config() -> SearchConfig {
    SearchConfig { root_noise: false, ..SearchConfig::default() }
}

/// How long a search may run: a number of visits, or a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Budget {
    /// Root visits.
    Visits(u64),
    /// Wall-clock time (at least one visit is made).
    Time(Duration),
    /// A game clock's share for this move: like `Time`, but the search may stop early
    /// once its move is decided (`[search] stop_when_decided`), keeping the rest.
    Clock(Duration),
}

/// Searches `pos` within `budget` and returns the move to play, or why there is none (the
/// player turns the reason into its error: this module knows nothing of players).
pub(crate) fn search_best_move(
    pos: &Position,
    evaluator: &dyn Evaluator,
    config: &SearchConfig,
    budget: Budget,
    rng: &mut impl Rng,
) -> Result<Move, String> {
    if pos.result().is_some() {
        return Err("the game is over".into());
    }
    let mut search = ParallelSearch::new(pos.clone(), config.clone(), config.threads);
    let limits = match budget {
        Budget::Visits(v) => SearchLimits { visits: Some(v.max(1)), ..SearchLimits::default() },
        Budget::Time(t) => SearchLimits { deadline: Some(Instant::now() + t), ..SearchLimits::default() },
        Budget::Clock(t) => SearchLimits {
            deadline: Some(Instant::now() + t),
            stop_when_decided: config.stop_when_decided,
            ..SearchLimits::default()
        },
    };
    let result = search.run_with(evaluator, &limits, rng, |_| {});
    result.best_move.ok_or_else(|| "the search found no move".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn finds_a_road_in_one() {
        // White to move with a road in one on c2.
        let pos = bredon_rules::notation::parse_tps("x3/1,1,x/2,2,x 1 3").unwrap();
        let wins = pos.road_wins_in_one();
        assert!(!wins.is_empty());
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for budget in
            [Budget::Visits(200), Budget::Time(Duration::from_millis(20)), Budget::Clock(Duration::from_millis(20))]
        {
            let mv = search_best_move(&pos, &UniformEvaluator, &match_search_config(), budget, &mut rng).unwrap();
            assert!(wins.contains(&mv), "{}", mv.to_ptn(3));
        }
    }
}
