//! Bitboards: one bit per square (`row * size + col`), and the per-size masks used to
//! shift them without wrapping around the board edges.

use crate::types::{Direction, MAX_SIZE, MIN_SIZE, Square};

/// A set of squares, one bit per square index.
pub type Bitboard = u64;

/// Masks and rays for one board size, computed once (`const`) for every size 3..=8.
#[derive(Clone, Copy, Debug)]
pub struct SizeInfo {
    /// Board size N.
    pub size: usize,
    /// All N² squares.
    pub full: Bitboard,
    /// Column `a`.
    pub left: Bitboard,
    /// The last column.
    pub right: Bitboard,
    /// Rank 1.
    pub bottom: Bitboard,
    /// The last rank.
    pub top: Bitboard,
    /// For each square and direction, the squares from the neighbour to the edge.
    pub rays: [[Bitboard; 4]; 64],
}

const fn make_info(size: usize) -> SizeInfo {
    let full: u64 = if size * size == 64 { u64::MAX } else { (1u64 << (size * size)) - 1 };
    let mut left = 0u64;
    let mut right = 0u64;
    let mut r = 0;
    while r < size {
        left |= 1u64 << (r * size);
        right |= 1u64 << (r * size + size - 1);
        r += 1;
    }
    let bottom = (1u64 << size) - 1;
    let top = bottom << (size * (size - 1));
    let mut rays = [[0u64; 4]; 64];
    let mut sq = 0;
    while sq < size * size {
        let (c, rr) = ((sq % size) as isize, (sq / size) as isize);
        let mut d = 0;
        while d < 4 {
            let (dc, dr) = Direction::from_index(d).delta();
            let (mut x, mut y) = (c + dc, rr + dr);
            let mut ray = 0u64;
            while x >= 0 && y >= 0 && x < size as isize && y < size as isize {
                ray |= 1u64 << (y as usize * size + x as usize);
                x += dc;
                y += dr;
            }
            rays[sq][d] = ray;
            d += 1;
        }
        sq += 1;
    }
    SizeInfo { size, full, left, right, bottom, top, rays }
}

/// Size information for sizes 0..=8 (entries below 3 are unused placeholders).
pub static SIZE_INFO: [SizeInfo; MAX_SIZE + 1] = {
    let mut t = [make_info(MIN_SIZE); MAX_SIZE + 1];
    let mut s = MIN_SIZE;
    while s <= MAX_SIZE {
        t[s] = make_info(s);
        s += 1;
    }
    t
};

impl SizeInfo {
    /// The information for `size` (3..=8).
    #[inline]
    pub fn get(size: usize) -> &'static SizeInfo {
        &SIZE_INFO[size]
    }

    /// Every square adjacent to a square of `b` (not including `b` itself unless adjacent).
    #[inline]
    pub fn neighbours(&self, b: Bitboard) -> Bitboard {
        let n = self.size;
        ((b << n) | (b >> n) | ((b & !self.right) << 1) | ((b & !self.left) >> 1)) & self.full
    }

    /// Grows `seed` inside `within` until it stops changing (orthogonal connectivity).
    #[inline]
    pub fn flood(&self, seed: Bitboard, within: Bitboard) -> Bitboard {
        let mut f = seed & within;
        loop {
            let g = (f | self.neighbours(f)) & within;
            if g == f {
                return f;
            }
            f = g;
        }
    }

    /// Rows and columns the squares of `b` span: (last row − first row + 1, last column −
    /// first column + 1); (0, 0) for an empty set.
    #[inline]
    pub fn extent(&self, b: Bitboard) -> (usize, usize) {
        if b == 0 {
            return (0, 0);
        }
        let n = self.size;
        let rows = (63 - b.leading_zeros() as usize) / n - b.trailing_zeros() as usize / n + 1;
        let row_mask = (1u64 << n) - 1;
        let mut cols = 0u64;
        let mut x = b;
        while x != 0 {
            cols |= x & row_mask;
            x >>= n;
        }
        let cols = (63 - cols.leading_zeros() as usize) - cols.trailing_zeros() as usize + 1;
        (rows, cols)
    }

    /// Whether the squares of `road` connect two opposite edges.
    #[inline]
    pub fn has_road(&self, road: Bitboard) -> bool {
        if road.count_ones() < self.size as u32 {
            return false;
        }
        if road & self.left != 0 && road & self.right != 0 {
            let f = self.flood(road & self.left, road);
            if f & self.right != 0 {
                return true;
            }
        }
        if road & self.bottom != 0 && road & self.top != 0 {
            let f = self.flood(road & self.bottom, road);
            if f & self.top != 0 {
                return true;
            }
        }
        false
    }

    /// Free squares from `sq` in `dir` before the first blocker or the edge, and the
    /// first blocker (if any) as a square.
    #[inline]
    pub fn slide(&self, sq: Square, dir: Direction, blockers: Bitboard) -> (usize, Option<Square>) {
        let ray = self.rays[sq.index()][dir.index()];
        let hit = ray & blockers;
        if hit == 0 {
            return (ray.count_ones() as usize, None);
        }
        let (b, dist) = match dir {
            Direction::Up => {
                let b = hit.trailing_zeros() as usize;
                (b, (b - sq.index()) / self.size - 1)
            }
            Direction::Right => {
                let b = hit.trailing_zeros() as usize;
                (b, b - sq.index() - 1)
            }
            Direction::Down => {
                let b = 63 - hit.leading_zeros() as usize;
                (b, (sq.index() - b) / self.size - 1)
            }
            Direction::Left => {
                let b = 63 - hit.leading_zeros() as usize;
                (b, sq.index() - b - 1)
            }
        };
        (dist, Some(Square(b as u8)))
    }
}

/// Iterates over the squares of a bitboard, lowest index first.
#[derive(Clone, Copy, Debug)]
pub struct BitIter(pub Bitboard);

impl Iterator for BitIter {
    type Item = Square;
    #[inline]
    fn next(&mut self) -> Option<Square> {
        if self.0 == 0 {
            None
        } else {
            let i = self.0.trailing_zeros();
            self.0 &= self.0 - 1;
            Some(Square(i as u8))
        }
    }
}
