//! Evaluators without a network: baselines and test doubles.

use crate::evaluator::{Evaluation, Evaluator};
use bredon_rules::{Move, Position};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Uniform policy over the legal moves and value 0: plain PUCT search on game results only.
#[derive(Clone, Copy, Debug, Default)]
pub struct UniformEvaluator;

impl Evaluator for UniformEvaluator {
    fn evaluate_batch(&self, _positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        legal.iter().map(|m| Evaluation::new(vec![1.0 / m.len().max(1) as f32; m.len()], 0.0)).collect()
    }
}

/// Uniform policy; the value is the result of random playouts (capped at `max_plies`,
/// then the flat count decides). Deterministic: the playout RNG is seeded from the
/// position's hash and `seed`.
#[derive(Clone, Copy, Debug)]
pub struct RolloutEvaluator {
    /// Random playouts averaged per position.
    pub rollouts: u32,
    /// Plies before a playout is scored by the flat count.
    pub max_plies: u32,
    /// Seed mixed into each position's RNG.
    pub seed: u64,
}

impl Default for RolloutEvaluator {
    fn default() -> Self {
        RolloutEvaluator { rollouts: 1, max_plies: 200, seed: 0 }
    }
}

impl RolloutEvaluator {
    fn rollout(&self, pos: &Position, rng: &mut ChaCha8Rng) -> f32 {
        let me = pos.side_to_move();
        let mut p = pos.clone();
        let mut moves = Vec::with_capacity(256);
        for _ in 0..self.max_plies {
            if let Some(r) = p.result() {
                return r.score_for(me);
            }
            moves.clear();
            p.generate_moves(&mut moves);
            let mv = moves[rng.random_range(0..moves.len())];
            p.make(mv);
        }
        p.result().unwrap_or_else(|| p.flat_result()).score_for(me)
    }
}

impl Evaluator for RolloutEvaluator {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        positions
            .iter()
            .zip(legal)
            .map(|(pos, m)| {
                let mut rng = ChaCha8Rng::seed_from_u64(pos.hash() ^ self.seed);
                let n = self.rollouts.max(1);
                let value = (0..n).map(|_| self.rollout(pos, &mut rng)).sum::<f32>() / n as f32;
                Evaluation::new(vec![1.0 / m.len().max(1) as f32; m.len()], value)
            })
            .collect()
    }
}
