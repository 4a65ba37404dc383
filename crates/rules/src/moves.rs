//! The compact move type and the precomputed spread (drop pattern) tables.

use crate::types::{Direction, PieceKind, Square};

/// A move in 16 bits.
///
/// Layout: bits 0..6 the square, bits 6..8 the piece kind (placement) or the direction
/// (spread), bits 8..16 the drop pattern, 0 for a placement.
///
/// The drop pattern of a spread carrying `k` pieces numbers the carried pieces 0..k from
/// the bottom; bit `i` is set when a drop ends with piece `i`. So bit `k - 1` is always set,
/// `k` is the index of the highest set bit plus one, and the number of squares the spread
/// covers is the number of set bits. Example: `3a1>12` is pattern `0b101` (drop 1 piece,
/// then 2).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Move(pub u16);

impl Move {
    /// Place a piece of `kind` on `sq`.
    #[inline]
    pub const fn place(sq: Square, kind: PieceKind) -> Move {
        Move(sq.0 as u16 | ((kind as u16) << 6))
    }

    /// Spread from `sq` in `dir` with a drop `pattern` (see the type docs). `pattern` must not be 0.
    #[inline]
    pub const fn spread(sq: Square, dir: Direction, pattern: u8) -> Move {
        Move(sq.0 as u16 | ((dir as u16) << 6) | ((pattern as u16) << 8))
    }

    /// Spread from `sq` in `dir` with drop counts in order (first square first).
    /// Returns `None` if a count is 0, there are no drops, or more than 8 pieces are carried.
    pub fn spread_from_drops(sq: Square, dir: Direction, drops: &[u8]) -> Option<Move> {
        let mut pattern = 0u32;
        let mut total = 0u32;
        if drops.is_empty() {
            return None;
        }
        for &d in drops {
            if d == 0 {
                return None;
            }
            total += d as u32;
            if total > 8 {
                return None;
            }
            pattern |= 1 << (total - 1);
        }
        Some(Move::spread(sq, dir, pattern as u8))
    }

    /// The origin square of a spread, or the target of a placement.
    #[inline]
    pub const fn square(self) -> Square {
        Square((self.0 & 63) as u8)
    }

    /// Whether this is a placement.
    #[inline]
    pub const fn is_placement(self) -> bool {
        self.0 >> 8 == 0
    }

    /// The placed kind (meaningful for placements only).
    #[inline]
    pub const fn kind(self) -> PieceKind {
        PieceKind::from_index(((self.0 >> 6) & 3) as usize)
    }

    /// The direction (meaningful for spreads only).
    #[inline]
    pub const fn direction(self) -> Direction {
        Direction::from_index(((self.0 >> 6) & 3) as usize)
    }

    /// The drop pattern (0 for placements).
    #[inline]
    pub const fn pattern(self) -> u8 {
        (self.0 >> 8) as u8
    }

    /// Number of pieces picked up (0 for placements).
    #[inline]
    pub const fn carry(self) -> usize {
        8 - self.pattern().leading_zeros() as usize
    }

    /// Number of squares a spread drops on (0 for placements).
    #[inline]
    pub const fn distance(self) -> usize {
        self.pattern().count_ones() as usize
    }

    /// Drop counts in order (first square first).
    pub fn drops(self) -> impl Iterator<Item = u8> {
        let mut p = self.pattern() as u32;
        std::iter::from_fn(move || {
            if p == 0 {
                None
            } else {
                let d = p.trailing_zeros() + 1;
                p >>= d;
                Some(d as u8)
            }
        })
    }

    /// PTN text on a board of `size`, in the short form (`a1`, `Sb2`, `c3+`, `3d4<12`).
    pub fn to_ptn(self, size: usize) -> String {
        let sq = self.square().name(size);
        if self.is_placement() {
            return match self.kind() {
                PieceKind::Flat => sq,
                k => format!("{}{}", k.letter(), sq),
            };
        }
        let k = self.carry();
        let mut s = String::new();
        if k > 1 {
            s.push_str(&k.to_string());
        }
        s.push_str(&sq);
        s.push(self.direction().symbol());
        if self.distance() > 1 {
            for d in self.drops() {
                s.push((b'0' + d) as char);
            }
        }
        s
    }
}

impl std::fmt::Debug for Move {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Debug without the board size: show it as if on an 8x8 board index.
        write!(f, "Move({:#06x}: {})", self.0, self.to_ptn(8))
    }
}

/// Flat table of drop patterns, grouped per (max carry, max squares) and (crush) lists.
pub(crate) struct SpreadTables {
    pub data: [u8; TABLE_LEN],
    /// `(start, len)` into `data`: patterns with carry ≤ c and squares ≤ s.
    pub normal: [[(u16, u16); 9]; 9],
    /// `(start, len)` into `data`: patterns with carry ≤ c, exactly s + 1 squares, whose last
    /// drop is one piece: the capstone flattening a wall s + 1 squares away.
    pub crush: [[(u16, u16); 9]; 9],
}

const TABLE_LEN: usize = 2 * 9 * 9 * 255;

const fn last_drop_is_single(p: u32) -> bool {
    let k = 32 - p.leading_zeros();
    k == 1 || (p >> (k - 2)) & 1 == 1
}

const fn build_tables() -> SpreadTables {
    let mut t = SpreadTables { data: [0; TABLE_LEN], normal: [[(0, 0); 9]; 9], crush: [[(0, 0); 9]; 9] };
    let mut pos = 0usize;
    let mut c = 0;
    while c <= 8 {
        let mut s = 0;
        while s <= 8 {
            let start = pos;
            let mut p: u32 = 1;
            while p < (1u32 << c) {
                if p.count_ones() as usize <= s {
                    t.data[pos] = p as u8;
                    pos += 1;
                }
                p += 1;
            }
            t.normal[c][s] = (start as u16, (pos - start) as u16);
            let start = pos;
            let mut p: u32 = 1;
            while p < (1u32 << c) {
                if p.count_ones() as usize == s + 1 && last_drop_is_single(p) {
                    t.data[pos] = p as u8;
                    pos += 1;
                }
                p += 1;
            }
            t.crush[c][s] = (start as u16, (pos - start) as u16);
            s += 1;
        }
        c += 1;
    }
    t
}

pub(crate) static SPREADS: SpreadTables = build_tables();

impl SpreadTables {
    /// Patterns carrying at most `carry` pieces over at most `squares` squares.
    #[inline]
    pub fn normal(&self, carry: usize, squares: usize) -> &[u8] {
        let (s, l) = self.normal[carry][squares];
        &self.data[s as usize..(s + l) as usize]
    }
    /// Capstone-flattening patterns for a wall `squares + 1` away.
    #[inline]
    pub fn crush(&self, carry: usize, squares: usize) -> &[u8] {
        let (s, l) = self.crush[carry][squares];
        &self.data[s as usize..(s + l) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_round_trip() {
        let m = Move::spread_from_drops(Square(5), Direction::Right, &[1, 2]).unwrap();
        assert_eq!(m.pattern(), 0b101);
        assert_eq!(m.carry(), 3);
        assert_eq!(m.distance(), 2);
        assert_eq!(m.drops().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(m.direction(), Direction::Right);
        assert!(!m.is_placement());
        assert!(Move::spread_from_drops(Square(0), Direction::Up, &[5, 4]).is_none());
    }

    #[test]
    fn table_counts() {
        // Carry up to 3 over up to 3 squares: compositions of 1,2,3 → 1 + 2 + 4 = 7.
        assert_eq!(SPREADS.normal(3, 3).len(), 7);
        // Over 1 square only: one pattern per carry count.
        assert_eq!(SPREADS.normal(5, 1).len(), 5);
        assert_eq!(SPREADS.normal(0, 5).len(), 0);
        // Wall right next to the capstone: only the lone capstone itself (pattern 1... k pieces in one drop of 1 → k == 1).
        assert_eq!(SPREADS.crush(3, 0), &[1]);
        // Wall two squares away, carry ≤ 3: (1,1) and (2,1).
        assert_eq!(SPREADS.crush(3, 1).len(), 2);
    }
}
