//! The interface between the search and whatever scores positions (a network, a baseline).

use bredon_rules::{Move, Position};

/// What an evaluator says about one position.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// Prior probability of each legal move, in the order of the `legal` slice given to
    /// [`Evaluator::evaluate_batch`]; non-negative, summing to 1.
    pub policy: Vec<f32>,
    /// Expected outcome for the side to move, in [-1, 1].
    pub value: f32,
    /// Probability that the game is drawn, in [0, 1], when the evaluator knows it (a
    /// network with a win/draw/loss head); `None` otherwise. With `value` it gives the
    /// win/draw/loss split: W = (1 + value - draw) / 2, L = (1 - value - draw) / 2.
    pub draw: Option<f32>,
    /// The expected final flat margin in flats for the side to move, komi included, when
    /// the evaluator knows it (a network with the flat-margin head); `None` otherwise.
    pub margin: Option<f32>,
}

impl Evaluation {
    /// An evaluation without a draw probability.
    pub fn new(policy: Vec<f32>, value: f32) -> Evaluation {
        Evaluation { policy, value, draw: None, margin: None }
    }
}

/// Scores a batch of positions. Implementations: the neural network (in `bredon-nn`),
/// the uniform-policy baseline, test doubles. Shared between threads.
pub trait Evaluator: Send + Sync {
    /// Evaluates `positions[i]` whose legal moves are `legal[i]` (never empty: the search
    /// scores finished games itself). Returns one [`Evaluation`] per position, in order.
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation>;

    /// How many leaves one search should gather before calling `evaluate_batch`.
    fn preferred_batch_size(&self) -> usize {
        1
    }
}

impl<E: Evaluator + ?Sized> Evaluator for std::sync::Arc<E> {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        (**self).evaluate_batch(positions, legal)
    }
    fn preferred_batch_size(&self) -> usize {
        (**self).preferred_batch_size()
    }
}

impl<E: Evaluator + ?Sized> Evaluator for Box<E> {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        (**self).evaluate_batch(positions, legal)
    }
    fn preferred_batch_size(&self) -> usize {
        (**self).preferred_batch_size()
    }
}

impl<E: Evaluator + ?Sized> Evaluator for &E {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        (**self).evaluate_batch(positions, legal)
    }
    fn preferred_batch_size(&self) -> usize {
        (**self).preferred_batch_size()
    }
}
