//! The search behind [`crate::MctsPlayer`].
//!
//! `bredon-mcts` defines the [`Evaluator`] trait; its PUCT `Search` is still being
//! written. Until it lands, this module holds a small, self-contained PUCT search over any
//! [`Evaluator`] (one leaf per evaluation, no noise, no transpositions), plus the uniform
//! evaluator used as the baseline. When `bredon_mcts::Search` is available, only this
//! module changes.

use bredon_mcts::{Evaluation, Evaluator};
use bredon_rules::{Move, Position};
use rand::Rng;

use crate::player::PlayerError;

/// Settings of the arena's PUCT search.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchConfig {
    /// Exploration constant of the PUCT formula.
    pub c_puct: f32,
    /// Value of a child that has not been visited, from the parent's side to move
    /// (first-play urgency); 0 = neutral.
    pub fpu_value: f32,
}

impl Default for SearchConfig {
    fn default() -> SearchConfig {
        SearchConfig { c_puct: 1.5, fpu_value: 0.0 }
    }
}

/// The uniform-policy, zero-value evaluator: MCTS with it is the baseline that a trained
/// network must beat.
#[derive(Clone, Copy, Debug, Default)]
pub struct UniformEvaluator;

impl Evaluator for UniformEvaluator {
    fn evaluate_batch(&self, _positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        legal
            .iter()
            .map(|moves| {
                let n = moves.len().max(1);
                Evaluation { policy: vec![1.0 / n as f32; moves.len()], value: 0.0 }
            })
            .collect()
    }
}

struct Node {
    /// Moves, priors, and the child node index (`usize::MAX` until visited).
    moves: Vec<Move>,
    priors: Vec<f32>,
    children: Vec<usize>,
    /// Visits and summed value of each edge, from the perspective of the side to move here.
    visits: Vec<u32>,
    value_sum: Vec<f32>,
    total: u32,
}

/// Runs `visits` simulations from `pos` and returns the most visited move (ties broken at
/// random).
pub(crate) fn search_best_move(
    pos: &Position,
    evaluator: &dyn Evaluator,
    config: &SearchConfig,
    visits: u32,
    rng: &mut impl Rng,
) -> Result<Move, PlayerError> {
    if pos.result().is_some() {
        return Err(PlayerError::Other("the game is over".into()));
    }
    let mut nodes: Vec<Node> = Vec::new();
    expand(&mut nodes, pos, evaluator)?;
    for _ in 0..visits.max(1) {
        let mut cur = pos.clone();
        let mut path: Vec<(usize, usize)> = Vec::new();
        let mut node = 0usize;
        // Value of the leaf from the perspective of the side to move at the leaf.
        let leaf_value = loop {
            let edge = select(&nodes[node], config);
            path.push((node, edge));
            let mv = nodes[node].moves[edge];
            cur.make(mv);
            if let Some(result) = cur.result() {
                break result.score_for(cur.side_to_move());
            }
            let child = nodes[node].children[edge];
            if child == usize::MAX {
                let (idx, value) = expand(&mut nodes, &cur, evaluator)?;
                nodes[node].children[edge] = idx;
                break value;
            }
            node = child;
        };
        // Back up: the edge at depth d was chosen by the side to move at its node.
        let mut v = -leaf_value;
        for &(n, e) in path.iter().rev() {
            let nd = &mut nodes[n];
            nd.visits[e] += 1;
            nd.value_sum[e] += v;
            nd.total += 1;
            v = -v;
        }
    }
    let root = &nodes[0];
    let best = root.visits.iter().copied().max().unwrap_or(0);
    let candidates: Vec<usize> = (0..root.moves.len()).filter(|&i| root.visits[i] == best).collect();
    let pick = candidates[rng.random_range(0..candidates.len())];
    Ok(root.moves[pick])
}

fn expand(nodes: &mut Vec<Node>, pos: &Position, evaluator: &dyn Evaluator) -> Result<(usize, f32), PlayerError> {
    let moves = pos.legal_moves();
    if moves.is_empty() {
        return Err(PlayerError::Other("no legal move in a position that is not over".into()));
    }
    let evals = evaluator.evaluate_batch(&[pos], &[&moves]);
    let Some(eval) = evals.into_iter().next() else {
        return Err(PlayerError::Other("the evaluator returned no evaluation".into()));
    };
    let mut priors = eval.policy;
    if priors.len() != moves.len() || priors.iter().any(|p| !p.is_finite() || *p < 0.0) {
        return Err(PlayerError::Other(format!(
            "the evaluator returned a bad policy ({} entries for {} moves)",
            priors.len(),
            moves.len()
        )));
    }
    let sum: f32 = priors.iter().sum();
    if sum > 0.0 {
        priors.iter_mut().for_each(|p| *p /= sum);
    } else {
        let n = priors.len() as f32;
        priors.iter_mut().for_each(|p| *p = 1.0 / n);
    }
    let n = moves.len();
    nodes.push(Node {
        moves,
        priors,
        children: vec![usize::MAX; n],
        visits: vec![0; n],
        value_sum: vec![0.0; n],
        total: 0,
    });
    let value = if eval.value.is_finite() { eval.value.clamp(-1.0, 1.0) } else { 0.0 };
    Ok((nodes.len() - 1, value))
}

fn select(node: &Node, config: &SearchConfig) -> usize {
    let sqrt_total = (node.total as f32).sqrt().max(1.0);
    let mut best = 0;
    let mut best_score = f32::NEG_INFINITY;
    for i in 0..node.moves.len() {
        let n = node.visits[i];
        let q = if n == 0 { config.fpu_value } else { node.value_sum[i] / n as f32 };
        let u = config.c_puct * node.priors[i] * sqrt_total / (1.0 + n as f32);
        let s = q + u;
        if s > best_score {
            best_score = s;
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn finds_a_road_in_one() {
        // White to move with a road in one on a3.
        let pos = bredon_rules::notation::parse_tps("x3/1,1,x/2,2,x 1 3").unwrap();
        let wins = pos.road_wins_in_one();
        assert!(!wins.is_empty());
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mv = search_best_move(&pos, &UniformEvaluator, &SearchConfig::default(), 200, &mut rng).unwrap();
        assert!(wins.contains(&mv), "{}", mv.to_ptn(3));
    }
}
