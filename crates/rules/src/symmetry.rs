//! The eight symmetries of the square board (rotations and reflections), acting on
//! squares, directions, moves and positions, plus the colour swap. Used for training
//! data augmentation and to canonicalise positions.

use crate::bitboard::BitIter;
use crate::moves::Move;
use crate::position::Position;
use crate::types::{Color, Direction, Piece, Square};

/// One of the 8 symmetries of the square: first an optional mirror of the columns
/// (bit 2), then 0–3 quarter turns counter-clockwise (bits 0–1). `Symmetry(0)` is the identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Symmetry(pub u8);

impl Symmetry {
    /// The identity.
    pub const IDENTITY: Symmetry = Symmetry(0);
    /// All eight, identity first.
    pub const ALL: [Symmetry; 8] =
        [Symmetry(0), Symmetry(1), Symmetry(2), Symmetry(3), Symmetry(4), Symmetry(5), Symmetry(6), Symmetry(7)];

    fn turns(self) -> u8 {
        self.0 & 3
    }

    fn mirrored(self) -> bool {
        self.0 & 4 != 0
    }

    /// Maps board coordinates (col, row) on a board of `size`.
    pub fn coords(self, col: usize, row: usize, size: usize) -> (usize, usize) {
        let m = size - 1;
        let (mut x, mut y) = (col, row);
        if self.mirrored() {
            x = m - x;
        }
        for _ in 0..self.turns() {
            (x, y) = (m - y, x);
        }
        (x, y)
    }

    /// Maps a square.
    pub fn square(self, sq: Square, size: usize) -> Square {
        let (x, y) = self.coords(sq.col(size), sq.row(size), size);
        Square::from_coords(x, y, size)
    }

    /// Maps a direction.
    pub fn direction(self, dir: Direction) -> Direction {
        let (mut dx, mut dy) = dir.delta();
        if self.mirrored() {
            dx = -dx;
        }
        for _ in 0..self.turns() {
            (dx, dy) = (-dy, dx);
        }
        match (dx, dy) {
            (0, 1) => Direction::Up,
            (0, -1) => Direction::Down,
            (1, 0) => Direction::Right,
            _ => Direction::Left,
        }
    }

    /// Maps a move (its square, and the direction of a spread; drop counts are unchanged).
    pub fn apply_move(self, mv: Move, size: usize) -> Move {
        let sq = self.square(mv.square(), size);
        if mv.is_placement() {
            Move::place(sq, mv.kind())
        } else {
            Move::spread(sq, self.direction(mv.direction()), mv.pattern())
        }
    }

    /// The symmetry that undoes this one.
    pub fn inverse(self) -> Symmetry {
        // A reflection is its own inverse; a pure rotation by k is undone by 4 - k.
        if self.mirrored() { self } else { Symmetry((4 - self.turns()) & 3) }
    }
}

impl Position {
    /// This position with the board transformed by `sym` (reserves, side to move, ply and
    /// komi unchanged).
    pub fn transformed(&self, sym: Symmetry) -> Position {
        let n = self.size();
        let mut stacks: Vec<Vec<Piece>> = vec![Vec::new(); n * n];
        for sq in BitIter(self.occupied()) {
            stacks[sym.square(sq, n).index()] = self.stack(sq).pieces().collect();
        }
        self.rebuilt(&stacks, self.side_to_move(), self.reserves_array(), self.half_komi())
    }

    /// This position with every piece's colour swapped, reserves swapped, the other side
    /// to move and komi negated: the same game seen from the other player's chair.
    pub fn color_swapped(&self) -> Position {
        let n = self.size();
        let mut stacks: Vec<Vec<Piece>> = vec![Vec::new(); n * n];
        for sq in BitIter(self.occupied()) {
            stacks[sq.index()] = self.stack(sq).pieces().map(|p| Piece::new(p.color.opposite(), p.kind)).collect();
        }
        let r = self.reserves_array();
        self.rebuilt(&stacks, self.side_to_move().opposite(), [r[1], r[0]], self.half_komi().saturating_neg())
    }

    fn reserves_array(&self) -> [[u8; 2]; 2] {
        Color::ALL.map(|c| {
            let (s, k) = self.reserves(c);
            [s, k]
        })
    }

    fn rebuilt(&self, stacks: &[Vec<Piece>], to_move: Color, reserves: [[u8; 2]; 2], half_komi: i8) -> Position {
        let mut opts = self.options();
        opts.half_komi = half_komi;
        let mut p = Position::from_stacks(opts, stacks, to_move, self.ply()).expect("same size is valid");
        p.set_reserves(reserves);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notation::parse_tps;

    #[test]
    fn group_laws() {
        for size in 3..=8 {
            for s in Symmetry::ALL {
                for i in 0..size * size {
                    let sq = Square(i as u8);
                    assert_eq!(s.inverse().square(s.square(sq, size), size), sq);
                }
            }
            if size == 3 {
                continue; // no square of 3x3 has an orbit of eight
            }
            // All eight are distinct on a square off the diagonals and middle lines.
            let images: std::collections::HashSet<_> =
                Symmetry::ALL.iter().map(|s| s.square(Square::from_coords(1, 0, size), size)).collect();
            assert_eq!(images.len(), 8);
        }
    }

    #[test]
    fn moves_map_with_the_position() {
        let pos =
            parse_tps("x3,12,2S/x,22S,22C,11,21/121,212,12,1121C,1212S/21S,1,21,211S,12S/x,21S,2,x2 1 26").unwrap();
        let legal = pos.legal_moves();
        for s in Symmetry::ALL {
            let t = pos.transformed(s);
            assert_eq!(t.hash(), t.compute_hash());
            let mut mapped: Vec<Move> = legal.iter().map(|&m| s.apply_move(m, 5)).collect();
            let mut expected = t.legal_moves();
            mapped.sort();
            expected.sort();
            assert_eq!(mapped, expected, "symmetry {s:?}");
            assert_eq!(t.transformed(s.inverse()), pos);
            assert_eq!(t.result(), pos.result());
        }
        let swapped = pos.color_swapped();
        assert_eq!(swapped.color_swapped(), pos);
        assert_eq!(swapped.legal_moves().len(), legal.len());
    }
}
