//! The policy index space: every move of a board size has a fixed index.
//!
//! Placements come first: `kind * N² + square` (kinds flat, wall, capstone). Spreads follow:
//! `3N² + (square * 4 + direction) * P + pattern - 1`, where `pattern` is the move's drop
//! pattern (1..2^N, carry ≤ N) and `P = 2^N - 1`. Some indices are never legal (patterns
//! running off the board); they cost a few outputs and keep the mapping a pure function.
//! Sizes: 3x3 123, 4x4 1008, 5x5 3175, 6x6 9180, 7x7 25039, 8x8 65472.

use bredon_rules::{Direction, Move, PieceKind, Square, Symmetry};

/// Number of policy outputs for `size`.
pub const fn policy_size(size: usize) -> usize {
    3 * size * size + size * size * 4 * ((1 << size) - 1)
}

/// The index of `mv` on a board of `size`.
#[inline]
pub fn move_to_index(mv: Move, size: usize) -> usize {
    let sq = mv.square().index();
    let area = size * size;
    if mv.is_placement() {
        mv.kind().index() * area + sq
    } else {
        let p = (1usize << size) - 1;
        3 * area + (sq * 4 + mv.direction().index()) * p + mv.pattern() as usize - 1
    }
}

/// The move with index `i` on a board of `size`, if `i` is in range.
pub fn index_to_move(i: usize, size: usize) -> Option<Move> {
    let area = size * size;
    if i < 3 * area {
        return Some(Move::place(Square((i % area) as u8), PieceKind::from_index(i / area)));
    }
    let p = (1usize << size) - 1;
    let j = i - 3 * area;
    let (cell, pattern) = (j / p, j % p + 1);
    let (sq, dir) = (cell / 4, cell % 4);
    (sq < area).then(|| Move::spread(Square(sq as u8), Direction::from_index(dir), pattern as u8))
}

/// Softmax of `logits[index(m)]` over `moves`: the prior of each legal move.
pub fn masked_softmax(logits: &[f32], moves: &[Move], size: usize) -> Vec<f32> {
    softmax(moves.iter().map(|&m| logits[move_to_index(m, size)]).collect())
}

/// Softmax of the logits of some moves (what [`masked_softmax`] does after gathering
/// them): uniform where they give no distribution (no finite logit).
pub fn softmax(mut out: Vec<f32>) -> Vec<f32> {
    let max = out.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for x in out.iter_mut() {
        *x = (*x - max).exp();
        sum += *x;
    }
    if sum > 0.0 && sum.is_finite() {
        out.iter_mut().for_each(|x| *x /= sum);
    } else {
        let u = 1.0 / out.len().max(1) as f32;
        out.iter_mut().for_each(|x| *x = u);
    }
    out
}

/// The index permutation of a symmetry: `perm[i]` is the index of the image of move `i`.
pub fn symmetry_permutation(sym: Symmetry, size: usize) -> Vec<usize> {
    (0..policy_size(size))
        .map(|i| {
            let mv = index_to_move(i, size).expect("in range");
            move_to_index(sym.apply_move(mv, size), size)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bredon_rules::Position;
    use rand::{Rng, SeedableRng};

    #[test]
    fn every_legal_move_round_trips_on_all_sizes() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for size in 3..=8 {
            assert_eq!(policy_size(size), 3 * size * size + size * size * 4 * ((1 << size) - 1));
            for _game in 0..5 {
                let mut pos = Position::new(size).unwrap();
                while pos.result().is_none() && pos.ply() < 150 {
                    let moves = pos.legal_moves();
                    let mut seen = std::collections::HashSet::new();
                    for &m in &moves {
                        let i = move_to_index(m, size);
                        assert!(i < policy_size(size));
                        assert_eq!(index_to_move(i, size), Some(m));
                        assert!(seen.insert(i), "two moves share index {i}");
                    }
                    pos.play(moves[rng.random_range(0..moves.len())]).unwrap();
                }
            }
        }
    }

    #[test]
    fn symmetries_permute_indices_consistently_with_positions() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let size = 5;
        let mut pos = Position::new(size).unwrap();
        for _ in 0..30 {
            let moves = pos.legal_moves();
            pos.play(moves[rng.random_range(0..moves.len())]).unwrap();
        }
        for s in Symmetry::ALL {
            let perm = symmetry_permutation(s, size);
            let mut sorted = perm.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), perm.len(), "a symmetry must be a permutation");
            let t = pos.transformed(s);
            let mut mapped: Vec<usize> = pos.legal_moves().iter().map(|&m| perm[move_to_index(m, size)]).collect();
            let mut direct: Vec<usize> = t.legal_moves().iter().map(|&m| move_to_index(m, size)).collect();
            mapped.sort();
            direct.sort();
            assert_eq!(mapped, direct);
        }
    }

    #[test]
    fn masked_softmax_sums_to_one_over_legal_moves() {
        let pos = Position::new(4).unwrap();
        let moves = pos.legal_moves();
        let logits: Vec<f32> = (0..policy_size(4)).map(|i| (i % 7) as f32 - 3.0).collect();
        let p = masked_softmax(&logits, &moves, 4);
        assert_eq!(p.len(), moves.len());
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        assert!(p.iter().all(|&x| x > 0.0));
    }
}
