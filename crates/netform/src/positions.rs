//! Positions from random games: varied stack heights, reserves and move counts, for the
//! checks a forward pass makes of itself at start-up (`bredon_kernels::wgsl::WgslNet::for_search`)
//! and for benchmarks.

use bredon_rules::{GameOptions, Position};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `n` positions of `size` (a board size the rules take), each after a random number of
/// random plies (fewer than twice the board's squares) of a game not yet over; the same
/// `seed` gives the same positions.
pub fn random_positions(size: usize, n: usize, seed: u64) -> Vec<Position> {
    random_positions_within(size, n, seed, 2 * size * size)
}

/// [`random_positions`] after fewer than `max_plies` plies each (a `max_plies` of 0
/// counts as 1: the empty board).
pub fn random_positions_within(size: usize, n: usize, seed: u64, max_plies: usize) -> Vec<Position> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let mut pos = Position::with_options(GameOptions::new(size)).expect("a board size the rules take");
        let plies = rng.random_range(0..max_plies.max(1));
        for _ in 0..plies {
            if pos.result().is_some() {
                break;
            }
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            pos.make(moves[rng.random_range(0..moves.len())]);
        }
        if pos.result().is_none() {
            out.push(pos);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_positions_are_varied_unfinished_and_repeatable() {
        let a = random_positions(5, 40, 3);
        assert_eq!(a.len(), 40);
        assert!(a.iter().all(|p| p.result().is_none() && p.size() == 5));
        assert_eq!(a, random_positions(5, 40, 3));
        let distinct: std::collections::HashSet<u64> = a.iter().map(|p| p.hash()).collect();
        assert!(distinct.len() > 30, "{} distinct positions of 40", distinct.len());
        assert_ne!(random_positions(5, 40, 4), a);
    }
}
