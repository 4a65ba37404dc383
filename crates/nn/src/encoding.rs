//! Input planes: a position as a `[PLANES, N, N]` tensor, seen from the side to move.
//!
//! "Mine" means the side to move's pieces, "theirs" the opponent's (so colours are
//! swapped when black moves; the `white_to_move` plane keeps the absolute colour, which
//! matters because komi favours black). Square `(row, col)` is element `row * N + col`
//! of each plane, rank 1 first.
//!
//! | planes | content |
//! |---|---|
//! | 0–2 | my top piece: flat, wall, capstone |
//! | 3–5 | their top piece: flat, wall, capstone |
//! | 6–17 | the 6 pieces under the top, nearest first: (mine, theirs) per depth |
//! | 18 | stack height / 10, capped at 1 |
//! | 19–20 | my stones, my capstones left (fraction of the start) |
//! | 21–22 | their stones, their capstones left |
//! | 23 | 1 if white is to move |
//! | 24 | komi from my side: komi / 4 if I am black, −komi / 4 if white |
//! | 25 | 1 during the two opening plies (placing the opponent's flat) |
//! | 26 | all ones (lets convolutions see the board edge) |

use bredon_rules::{Color, PieceKind, Position, Square};

/// Version of the plane layout; saved with every model and checked when loading.
pub const INPUT_VERSION: u32 = 1;
/// Number of input planes.
pub const PLANES: usize = 27;
/// Pieces under the top that are encoded.
pub const DEPTH: usize = 6;

/// Floats in one encoded position of `size`.
pub fn input_len(size: usize) -> usize {
    PLANES * size * size
}

/// Writes the planes of `pos` into `out` (length [`input_len`]).
pub fn encode(pos: &Position, out: &mut [f32]) {
    let n = pos.size();
    let area = n * n;
    debug_assert_eq!(out.len(), PLANES * area);
    out.fill(0.0);
    let me = pos.side_to_move();
    let them = me.opposite();
    let mut set = |plane: usize, sq: usize, v: f32| out[plane * area + sq] = v;
    for sq in 0..area {
        let stack = pos.stack(Square(sq as u8));
        if stack.height == 0 {
            continue;
        }
        let top = stack.top().expect("non-empty");
        let base = if top.color == me { 0 } else { 3 };
        let kind = match top.kind {
            PieceKind::Flat => 0,
            PieceKind::Wall => 1,
            PieceKind::Cap => 2,
        };
        set(base + kind, sq, 1.0);
        for d in 0..DEPTH.min(stack.height - 1) {
            let level = stack.height - 2 - d;
            let black = (stack.colors >> level) & 1 == 1;
            let color = if black { Color::Black } else { Color::White };
            set(6 + 2 * d + usize::from(color != me), sq, 1.0);
        }
        set(18, sq, (stack.height as f32 / 10.0).min(1.0));
    }
    let opts = pos.options();
    let frac = |x: u8, of: u8| if of == 0 { 0.0 } else { x as f32 / of as f32 };
    let (ms, mc) = pos.reserves(me);
    let (ts, tc) = pos.reserves(them);
    let komi = pos.half_komi() as f32 / 2.0 / 4.0;
    let constants = [
        (19, frac(ms, opts.stones)),
        (20, frac(mc, opts.caps)),
        (21, frac(ts, opts.stones)),
        (22, frac(tc, opts.caps)),
        (23, if me == Color::White { 1.0 } else { 0.0 }),
        (24, if me == Color::Black { komi } else { -komi }),
        (25, if pos.is_opening() { 1.0 } else { 0.0 }),
        (26, 1.0),
    ];
    for (plane, v) in constants {
        if v != 0.0 {
            out[plane * area..(plane + 1) * area].fill(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bredon_rules::Symmetry;
    use bredon_rules::notation::parse_tps;

    #[test]
    fn planes_follow_symmetries() {
        let pos = parse_tps("x3,12,2S/x,22S,22C,11,21/121,212,12,1121C,1212S/21S,1,21,211S,12S/x,21S,2,x2 1 26").unwrap();
        let n = 5;
        let mut base = vec![0.0; input_len(n)];
        encode(&pos, &mut base);
        for s in Symmetry::ALL {
            let mut t = vec![0.0; input_len(n)];
            encode(&pos.transformed(s), &mut t);
            for p in 0..PLANES {
                for sq in 0..n * n {
                    let to = s.square(Square(sq as u8), n).index();
                    assert_eq!(base[p * n * n + sq], t[p * n * n + to], "plane {p} square {sq} sym {s:?}");
                }
            }
        }
    }

    #[test]
    fn perspective_swaps_with_the_side_to_move() {
        let white = parse_tps("1,x2/x3/x2,2 1 2").unwrap();
        let black = parse_tps("1,x2/x3/x2,2 2 2").unwrap();
        let (mut a, mut b) = (vec![0.0; input_len(3)], vec![0.0; input_len(3)]);
        encode(&white, &mut a);
        encode(&black, &mut b);
        let a1 = Square::from_coords(0, 2, 3).index();
        assert_eq!(a[a1], 1.0); // white flat is "mine" for white
        assert_eq!(b[3 * 9 + a1], 1.0); // and "theirs" for black
        assert_eq!(a[23 * 9], 1.0);
        assert_eq!(b[23 * 9], 0.0);
    }
}
