//! Perft: counting the leaves of the legal move tree, the standard check of a move generator.
//!
//! Convention: perft(0) = 1; a finished game counts 0 at any depth > 0; perft(1) is the
//! number of legal moves. The last ply is bulk-counted with [`Position::count_moves`].

use crate::moves::Move;
use crate::position::Position;

/// Counts the leaves of the move tree `depth` plies deep.
pub fn perft(pos: &mut Position, depth: u32) -> u64 {
    let mut buffers: Vec<Vec<Move>> = (0..depth).map(|_| Vec::with_capacity(256)).collect();
    perft_inner(pos, depth, &mut buffers)
}

fn perft_inner(pos: &mut Position, depth: u32, buffers: &mut [Vec<Move>]) -> u64 {
    if depth == 0 {
        return 1;
    }
    if pos.result().is_some() {
        return 0;
    }
    if depth == 1 {
        return pos.count_moves();
    }
    let (buf, rest) = buffers.split_first_mut().expect("one buffer per ply");
    buf.clear();
    pos.generate_moves(buf);
    let mut total = 0;
    for &mv in buf.iter() {
        let undo = pos.make(mv);
        total += perft_inner(pos, depth - 1, rest);
        pos.unmake(mv, undo);
    }
    total
}

/// Perft without bulk counting: every leaf is made and checked. Slow; used to test that
/// bulk counting agrees with real move generation.
pub fn perft_slow(pos: &mut Position, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    if pos.result().is_some() {
        return 0;
    }
    let mut total = 0;
    let mut moves = Vec::new();
    pos.generate_moves(&mut moves);
    for mv in moves {
        let undo = pos.make(mv);
        total += perft_slow(pos, depth - 1);
        pos.unmake(mv, undo);
    }
    total
}
