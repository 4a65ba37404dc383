//! The search behind [`crate::MctsPlayer`]: `bredon_mcts`'s play-time search
//! ([`bredon_mcts::search_once`]: one tree per move, `[search] threads` threads, no root
//! noise, the root always expanded) and the most visited move (a proven win if there is
//! one).

use bredon_mcts::{Evaluator, search_once};
use bredon_rules::{Move, Position};
use rand::Rng;

pub(crate) use bredon_mcts::Budget;
pub use bredon_mcts::{SearchConfig, UniformEvaluator};

/// The search settings [`crate::MctsPlayer`] uses by default: `bredon_mcts`'s play
/// settings (its defaults with root noise off: matches measure strength, they do not
/// explore).
pub fn match_search_config() -> SearchConfig {
    bredon_mcts::play_config()
}

/// Searches `pos` within `budget` and returns the move to play, or why there is none (the
/// player turns the reason into its error: this module knows nothing of players). The
/// root is always expanded, so a position with a legal move always gets one, however
/// small the budget.
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
    let result = search_once(pos, evaluator, config, budget, rng);
    result.best_move.ok_or_else(|| "the position has no legal move".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::time::Duration;

    #[test]
    fn finds_a_road_in_one() {
        // White to move with a road in one on c2.
        let pos = bredon_rules::notation::parse_tps("x3/1,1,x/2,2,x 1 3").unwrap();
        let wins = pos.road_wins_in_one();
        assert!(!wins.is_empty());
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for budget in [
            Budget::Visits(200),
            Budget::Time(Duration::from_millis(20)),
            Budget::Clock(Duration::from_millis(20)),
            // No time at all: the root is still expanded, and the road is found by the rules.
            Budget::Time(Duration::ZERO),
        ] {
            let mv = search_best_move(&pos, &UniformEvaluator, &match_search_config(), budget, &mut rng).unwrap();
            assert!(wins.contains(&mv), "{}", mv.to_ptn(3));
        }
    }
}
