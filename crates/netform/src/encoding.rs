//! Input planes: a position as a `[planes(version), N, N]` tensor, seen from the side to
//! move.
//!
//! "Mine" means the side to move's pieces, "theirs" the opponent's (so colours are
//! swapped when black moves; the `white_to_move` plane keeps the absolute colour, which
//! matters because komi favours black). Square `(row, col)` is element `row * N + col`
//! of each plane, rank 1 first.
//!
//! Input version 1 (27 planes):
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
//!
//! Input version 2 (31 planes) adds Tak features computed by the rules crate
//! (`Position::road_completion_squares`, `Position::road_groups`, `SizeInfo::extent`):
//!
//! | planes | content |
//! |---|---|
//! | 0–26 | as version 1 |
//! | 27 | my road in one: empty squares where a flat of mine completes a road (0 if I have no pieces left) |
//! | 28 | their road in one: the same for the opponent, as if they were to move |
//! | 29 | my road-group reach: on each square of one of my road groups (flats and capstones on top, orthogonally connected), the group's extent / N, where the extent is the larger of the rows and the columns it spans |
//! | 30 | their road-group reach |
//!
//! The reach is symmetric under the board's eight symmetries (unlike "touches the north
//! edge" planes), and a group of reach 1 − 1/N needs one more square in its direction.
//!
//! [`encode_compact`] writes the same information as a `u32` per square and the eight
//! constants, for the GPU's kernels to expand into these planes on the device.

use bredon_rules::{BitIter, Color, PieceKind, Position, Square};

/// The newest plane layout, used by new configurations that ask for it.
pub const LATEST_INPUT_VERSION: u32 = 2;
/// The plane layout of models saved without a version in their configuration.
pub const DEFAULT_INPUT_VERSION: u32 = 1;
/// Number of input planes of version 1.
pub const PLANES_V1: usize = 27;
/// Number of input planes of version 2.
pub const PLANES_V2: usize = 31;
/// Pieces under the top that are encoded.
pub const DEPTH: usize = 6;

/// Number of input planes of `input_version` (0 for an unknown version; see
/// [`crate::limits::check_input_version`]).
pub const fn planes(input_version: u32) -> usize {
    match input_version {
        1 => PLANES_V1,
        2 => PLANES_V2,
        _ => 0,
    }
}

/// Floats in one encoded position of `size` in `input_version`.
pub fn input_len(input_version: u32, size: usize) -> usize {
    planes(input_version) * size * size
}

/// Writes the planes of `pos` in `input_version` into `out` (length [`input_len`]).
pub fn encode(pos: &Position, input_version: u32, out: &mut [f32]) {
    let n = pos.size();
    let area = n * n;
    assert!(planes(input_version) > 0, "unknown input version {input_version}");
    debug_assert_eq!(out.len(), planes(input_version) * area);
    out.fill(0.0);
    for_each_stack(pos, |sq, s| {
        out[s.top * area + sq] = 1.0;
        for d in 0..s.under {
            out[(6 + 2 * d + ((s.theirs_under >> d) & 1) as usize) * area + sq] = 1.0;
        }
        out[18 * area + sq] = height_plane(s.height);
    });
    for (k, v) in constant_planes(pos).into_iter().enumerate() {
        if v != 0.0 {
            out[(19 + k) * area..(20 + k) * area].fill(v);
        }
    }
    if input_version >= 2 {
        road_features(pos, |feature, sq, extent| {
            out[(27 + feature) * area + sq] = if feature < 2 { 1.0 } else { reach_plane(extent, n) };
        });
    }
}

/// Per-position values of the compact form: the constant planes 19–26, in order.
pub const COMPACT_CONSTANTS: usize = 8;
/// Entries of [`compact_table`].
pub const COMPACT_TABLE: usize = 32;
/// Where the group extents' reach values start in [`compact_table`].
pub const COMPACT_REACH_AT: usize = 16;
/// Stack heights the compact form tells apart: plane 18 is 1 from 10 up.
const HEIGHT_CAP: usize = 10;

/// A position in the compact form that the GPU's kernels expand into the planes of
/// [`encode`] on the device (`bredon_kernels::wgsl`): a `u32` per square in `squares` (length
/// N²) and the constant planes' values in `constants` (length [`COMPACT_CONSTANTS`]),
/// about 25 times fewer bytes than the planes on 6x6. A square's bits, seen from the
/// side to move:
///
/// | bits | content |
/// |---|---|
/// | 0–2 | the top piece: 0 none, 1 + its plane (1–3 mine flat, wall, capstone; 4–6 theirs) |
/// | 3–8 | the pieces under the top, nearest first: 1 if theirs |
/// | 9–11 | how many of those are encoded (at most [`DEPTH`]) |
/// | 12–15 | the stack's height, capped at 10 (a row of [`compact_table`]) |
/// | 16, 17 | my, their road in one (version 2) |
/// | 18–21, 22–25 | the extent of my, their road group on it, 0 if none (version 2; a row of [`compact_table`] from [`COMPACT_REACH_AT`]) |
///
/// The values that are not 0 or 1 come from [`compact_table`], computed on the host by
/// the same expressions as [`encode`]'s, so the expansion gives the same floats to the bit.
pub fn encode_compact(pos: &Position, input_version: u32, squares: &mut [u32], constants: &mut [f32]) {
    assert!(planes(input_version) > 0, "unknown input version {input_version}");
    debug_assert_eq!(squares.len(), pos.size() * pos.size());
    squares.fill(0);
    for_each_stack(pos, |sq, s| {
        squares[sq] = (s.top as u32 + 1)
            | (s.theirs_under << 3)
            | ((s.under as u32) << 9)
            | ((s.height.min(HEIGHT_CAP) as u32) << 12);
    });
    constants.copy_from_slice(&constant_planes(pos));
    if input_version >= 2 {
        road_features(pos, |feature, sq, extent| {
            squares[sq] |= match feature {
                0 => 1 << 16,
                1 => 1 << 17,
                f => (extent as u32) << (18 + 4 * (f - 2)),
            };
        });
    }
}

/// The values a compact square's height (rows 0–10) and group extent (rows
/// [`COMPACT_REACH_AT`] + 0–8) stand for on a board of `size`.
pub fn compact_table(size: usize) -> [f32; COMPACT_TABLE] {
    let mut t = [0.0; COMPACT_TABLE];
    for (h, v) in t[..=HEIGHT_CAP].iter_mut().enumerate() {
        *v = height_plane(h);
    }
    for (e, v) in t[COMPACT_REACH_AT..=COMPACT_REACH_AT + 8].iter_mut().enumerate() {
        *v = reach_plane(e, size);
    }
    t
}

/// Plane 18: the stack's height / 10, capped at 1.
fn height_plane(height: usize) -> f32 {
    (height as f32 / 10.0).min(1.0)
}

/// Planes 29–30: a road group's extent / N.
fn reach_plane(extent: usize, n: usize) -> f32 {
    extent as f32 / n as f32
}

/// An occupied square seen from the side to move.
struct StackView {
    /// The plane of its top piece (0–5).
    top: usize,
    /// Bit `d`: the `d`-th piece under the top is theirs.
    theirs_under: u32,
    /// How many pieces under the top are encoded.
    under: usize,
    height: usize,
}

/// Every occupied square of `pos` with what planes 0–18 read of it.
fn for_each_stack(pos: &Position, mut f: impl FnMut(usize, StackView)) {
    let me = pos.side_to_move();
    for sq in 0..pos.size() * pos.size() {
        let stack = pos.stack(Square(sq as u8));
        let Some(top) = stack.top() else { continue };
        let kind = match top.kind {
            PieceKind::Flat => 0,
            PieceKind::Wall => 1,
            PieceKind::Cap => 2,
        };
        let under = DEPTH.min(stack.height - 1);
        let mut theirs_under = 0;
        for d in 0..under {
            let level = stack.height - 2 - d;
            let black = (stack.colors >> level) & 1 == 1;
            let color = if black { Color::Black } else { Color::White };
            theirs_under |= u32::from(color != me) << d;
        }
        let top = if top.color == me { kind } else { 3 + kind };
        f(sq, StackView { top, theirs_under, under, height: stack.height });
    }
}

/// Planes 19–26: the same value on every square.
fn constant_planes(pos: &Position) -> [f32; COMPACT_CONSTANTS] {
    let me = pos.side_to_move();
    let them = me.opposite();
    let opts = pos.options();
    let frac = |x: u8, of: u8| if of == 0 { 0.0 } else { x as f32 / of as f32 };
    let (ms, mc) = pos.reserves(me);
    let (ts, tc) = pos.reserves(them);
    // komi / 4 from my side (halves over 8, exact), negated as an integer so that no
    // plane holds −0.0
    let half_komi = i32::from(pos.half_komi());
    let komi = |half: i32| half as f32 / 8.0;
    [
        frac(ms, opts.stones),
        frac(mc, opts.caps),
        frac(ts, opts.stones),
        frac(tc, opts.caps),
        if me == Color::White { 1.0 } else { 0.0 },
        komi(if me == Color::Black { half_komi } else { -half_komi }),
        if pos.is_opening() { 1.0 } else { 0.0 },
        1.0,
    ]
}

/// Planes 27–30 of version 2 (see the module documentation), as `f(feature, square,
/// extent)`: feature 0 and 1 my and their road-in-one squares, 2 and 3 the squares of my
/// and their road groups with the group's extent.
fn road_features(pos: &Position, mut f: impl FnMut(usize, usize, usize)) {
    let info = pos.info();
    let me = pos.side_to_move();
    for (i, color) in [me, me.opposite()].into_iter().enumerate() {
        let (stones, caps) = pos.reserves(color);
        if stones > 0 || caps > 0 {
            for sq in BitIter(pos.road_completion_squares(color)) {
                f(i, sq.index(), 0);
            }
        }
        for group in pos.road_groups(color) {
            let (rows, cols) = info.extent(group);
            let extent = rows.max(cols);
            for sq in BitIter(group) {
                f(2 + i, sq.index(), extent);
            }
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
        let pos =
            parse_tps("x3,12,2S/x,22S,22C,11,21/121,212,12,1121C,1212S/21S,1,21,211S,12S/x,21S,2,x2 1 26").unwrap();
        let n = 5;
        for v in [1, 2] {
            let mut base = vec![0.0; input_len(v, n)];
            encode(&pos, v, &mut base);
            for s in Symmetry::ALL {
                let mut t = vec![0.0; input_len(v, n)];
                encode(&pos.transformed(s), v, &mut t);
                for p in 0..planes(v) {
                    for sq in 0..n * n {
                        let to = s.square(Square(sq as u8), n).index();
                        assert_eq!(base[p * n * n + sq], t[p * n * n + to], "plane {p} square {sq} sym {s:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn perspective_swaps_with_the_side_to_move() {
        let white = parse_tps("1,x2/x3/x2,2 1 2").unwrap();
        let black = parse_tps("1,x2/x3/x2,2 2 2").unwrap();
        let (mut a, mut b) = (vec![0.0; input_len(1, 3)], vec![0.0; input_len(1, 3)]);
        encode(&white, 1, &mut a);
        encode(&black, 1, &mut b);
        let a1 = Square::from_coords(0, 2, 3).index();
        assert_eq!(a[a1], 1.0); // white flat is "mine" for white
        assert_eq!(b[3 * 9 + a1], 1.0); // and "theirs" for black
        assert_eq!(a[23 * 9], 1.0);
        assert_eq!(b[23 * 9], 0.0);
    }

    /// The value of `plane` on the square named in PTN (`"a1"`).
    fn at(planes: &[f32], n: usize, plane: usize, name: &str) -> f32 {
        let b = name.as_bytes();
        let sq = Square::from_coords((b[0] - b'a') as usize, (b[1] - b'1') as usize, n);
        planes[plane * n * n + sq.index()]
    }

    #[test]
    fn version_2_starts_with_version_1() {
        let pos =
            parse_tps("x3,12,2S/x,22S,22C,11,21/121,212,12,1121C,1212S/21S,1,21,211S,12S/x,21S,2,x2 2 26").unwrap();
        let (mut a, mut b) = (vec![0.0; input_len(1, 5)], vec![0.0; input_len(2, 5)]);
        encode(&pos, 1, &mut a);
        encode(&pos, 2, &mut b);
        assert_eq!(a[..], b[..a.len()]);
        assert_eq!((planes(1), planes(2), planes(3)), (27, 31, 0));
        assert!(crate::limits::check_input_version(2).is_ok());
        assert!(format!("{}", crate::limits::check_input_version(7).unwrap_err()).contains("version 7"));
    }

    #[test]
    fn road_in_one_planes_for_both_sides() {
        // 4x4, black to move. White a2 b2 c2: d2 completes rank 2. Black c4 d4 c3 d3 d1:
        // d2 completes the d-file (b4 would not: a4 is empty).
        let pos = parse_tps("x,x,2,2/x,x,2,2/1,1,1,x/x3,2 2 6").unwrap();
        let v = 2;
        let mut x = vec![0.0; input_len(v, 4)];
        encode(&pos, v, &mut x);
        // Black to move: "mine" = black. d2 completes black's d-file and white's rank 2.
        assert_eq!(at(&x, 4, 27, "d2"), 1.0);
        assert_eq!(at(&x, 4, 28, "d2"), 1.0);
        let mine: f32 = x[27 * 16..28 * 16].iter().sum();
        let theirs: f32 = x[28 * 16..29 * 16].iter().sum();
        assert_eq!((mine, theirs), (1.0, 1.0));
        // White to move, only white has a road in one: b1 c1 d1 and an empty a1.
        let pos = parse_tps("2,x3/x4/2,x3/x,1,1,1 1 4").unwrap();
        encode(&pos, v, &mut x);
        assert_eq!(at(&x, 4, 27, "a1"), 1.0);
        assert_eq!(x[27 * 16..28 * 16].iter().sum::<f32>(), 1.0);
        assert_eq!(x[28 * 16..29 * 16].iter().sum::<f32>(), 0.0);
        // The same board with black to move: the plane swaps to "theirs".
        let pos = parse_tps("2,x3/x4/2,x3/x,1,1,1 2 4").unwrap();
        encode(&pos, v, &mut x);
        assert_eq!(at(&x, 4, 28, "a1"), 1.0);
        assert_eq!(x[27 * 16..28 * 16].iter().sum::<f32>(), 0.0);
    }

    /// The compact form's planes as the GPU's expansion kernel (`wgsl/expand.wgsl`) reads
    /// them, on the host.
    fn expand(squares: &[u32], constants: &[f32], version: u32, n: usize) -> Vec<f32> {
        let area = n * n;
        let table = compact_table(n);
        let mut out = vec![0.0; input_len(version, n)];
        for (sq, &c) in squares.iter().enumerate() {
            for p in 0..planes(version) {
                out[p * area + sq] = match p {
                    0..6 => f32::from(c & 7 == p as u32 + 1),
                    6..18 => {
                        let d = (p - 6) / 2;
                        f32::from(d < ((c >> 9) & 7) as usize && (c >> (3 + d)) & 1 == ((p - 6) % 2) as u32)
                    }
                    18 => table[((c >> 12) & 15) as usize],
                    19..27 => constants[p - 19],
                    27 | 28 => f32::from((c >> (16 + p - 27)) & 1 == 1),
                    _ => table[COMPACT_REACH_AT + ((c >> (18 + 4 * (p - 29))) & 15) as usize],
                };
            }
        }
        out
    }

    /// The compact form expands to [`encode`]'s planes to the bit, in both versions, on
    /// random positions of every size (tall stacks, empty reserves, both sides to move)
    /// and the ones of the tests above.
    #[test]
    fn the_compact_form_expands_to_the_same_planes() {
        let mut positions = Vec::new();
        for n in 3..=8 {
            positions.extend(crate::positions::random_positions(n, 60, n as u64));
        }
        for tps in [
            "x3,12,2S/x,22S,22C,11,21/121,212,12,1121C,1212S/21S,1,21,211S,12S/x,21S,2,x2 1 26",
            "x,x,2,2/x,x,2,2/1,1,1,x/x3,2 2 6",
            "2,2,x,2S/1,x3/x4/x,1,1,1 1 5",
            "1212121212121C,x4/x5/x5/x5/x5 2 30",
        ] {
            positions.push(parse_tps(tps).unwrap());
        }
        assert!(positions.iter().any(|p| (0..p.size() * p.size()).any(|s| p.stack(Square(s as u8)).height > 10)));
        for pos in &positions {
            let n = pos.size();
            for v in [1, 2] {
                let mut want = vec![0.0; input_len(v, n)];
                encode(pos, v, &mut want);
                let (mut squares, mut constants) = (vec![7; n * n], [9.0; COMPACT_CONSTANTS]);
                encode_compact(pos, v, &mut squares, &mut constants);
                let got = expand(&squares, &constants, v, n);
                let bad: Vec<(usize, f32, f32)> = want
                    .iter()
                    .zip(&got)
                    .enumerate()
                    .filter(|(_, (a, b))| a.to_bits() != b.to_bits())
                    .map(|(i, (a, b))| (i / (n * n), *a, *b))
                    .take(5)
                    .collect();
                let tps = bredon_rules::notation::write_tps(pos);
                assert!(bad.is_empty(), "{tps} v{v}: (plane, encoded, expanded) {bad:?}");
            }
        }
    }

    #[test]
    fn road_group_reach_planes() {
        // White (to move): b1 c1 d1 spans 3 columns; a3 alone. Black: a4 b4 (2 columns)
        // and a wall d4 (not a road square).
        let pos = parse_tps("2,2,x,2S/1,x3/x4/x,1,1,1 1 5").unwrap();
        let mut x = vec![0.0; input_len(2, 4)];
        encode(&pos, 2, &mut x);
        assert_eq!(at(&x, 4, 29, "b1"), 0.75);
        assert_eq!(at(&x, 4, 29, "d1"), 0.75);
        assert_eq!(at(&x, 4, 29, "a3"), 0.25);
        assert_eq!(at(&x, 4, 29, "a1"), 0.0);
        assert_eq!(at(&x, 4, 30, "a4"), 0.5);
        assert_eq!(at(&x, 4, 30, "b4"), 0.5);
        assert_eq!(at(&x, 4, 30, "d4"), 0.0);
        // Road in one for white at a1 (a1 b1 c1 d1).
        assert_eq!(at(&x, 4, 27, "a1"), 1.0);
    }
}
