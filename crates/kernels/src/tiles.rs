//! The tile driver both CPU kernels share ([`crate::fast`]'s single precision and
//! [`crate::int8`]'s 8-bit integers): bounds checked once per layer, the layer cut into
//! two halves for two threads when it is large enough, each tile's sums computed by the
//! caller's kernel and finished by one epilogue (bias, residual add, ReLU).

use bredon_netform::denormals::FlushDenormals;

/// Largest tile: rows x columns (AVX-512: 6x64, 8x48, 12x32).
pub(crate) const MAX_TILE: usize = 384;
/// Largest rows per tile.
pub(crate) const MAX_MR: usize = 12;

/// Fewest multiply-adds for which a layer is split over two threads (below it the
/// fork-join costs more than it saves).
const PAR_MIN_FLOPS: usize = 1 << 17;

/// `out` as a pointer that may cross threads: the two halves of a split layer write
/// disjoint elements.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: only used by `gemm`, whose parallel halves write disjoint rows or columns.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

/// Checks once per layer that every read (`a_rows` plus each tap plus `seg` elements, in
/// an input of `a_len`) and write (`out_rows` plus `n`, in an output of `out_len`) of a
/// layer of `k` inputs and `n` outputs stays in range.
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_bounds(
    a_len: usize,
    a_rows: &[usize],
    taps: &[isize],
    seg: usize,
    k: usize,
    n: usize,
    out_rows: &[usize],
    out_len: usize,
) {
    assert_eq!(out_rows.len(), a_rows.len());
    assert_eq!(taps.len() * seg, k, "layer input size");
    if a_rows.is_empty() {
        return;
    }
    let (tmin, tmax) = taps.iter().fold((isize::MAX, isize::MIN), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    let (amin, amax) = a_rows.iter().fold((usize::MAX, 0), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    assert!(
        amin as isize + tmin >= 0 && amax as isize + tmax + seg as isize <= a_len as isize,
        "input rows out of range"
    );
    let omax = out_rows.iter().copied().max().unwrap_or(0);
    assert!(omax + n <= out_len, "output rows out of range");
}

/// The tiles of a packed layer: `panels` column panels of `nr` columns (`n` real ones,
/// `k` inputs), `mr` rows a tile, and the columns' biases.
pub(crate) struct TileGrid<'a> {
    pub(crate) n: usize,
    pub(crate) k: usize,
    pub(crate) mr: usize,
    pub(crate) nr: usize,
    pub(crate) panels: usize,
    pub(crate) bias: &'a [f32],
}

/// What happens to a tile's sums: the bias, then the residual (the value already in
/// `out`) and ReLU where asked, written at `out_rows`.
pub(crate) struct Epilogue<'a> {
    pub(crate) out_rows: &'a [usize],
    pub(crate) residual: bool,
    pub(crate) relu: bool,
}

/// Runs a layer tile by tile: `tile(panel, first row, rows, sums)` computes one tile's
/// sums (row-major, `nr` a row), and the epilogue writes them into `out`. With `split`, a
/// layer large enough is cut into two halves (by rows, or by column panels when there are
/// too few rows) run by `rayon::join`. The caller has checked the bounds
/// ([`check_bounds`]).
pub(crate) fn run_tiles<F>(shape: &TileGrid, epilogue: &Epilogue, out: &mut [f32], split: bool, tile: &F)
where
    F: Fn(usize, usize, usize, &mut [f32; MAX_TILE]) + Sync,
{
    let rows = epilogue.out_rows.len();
    if rows == 0 {
        return;
    }
    let out = OutPtr(out.as_mut_ptr());
    let parts = if split && rows * shape.k * shape.n >= PAR_MIN_FLOPS && rayon::current_num_threads() > 1 {
        if rows >= 2 * shape.mr {
            let half = (rows / 2).div_ceil(shape.mr) * shape.mr;
            Some(((0..shape.panels, 0..half), (0..shape.panels, half..rows)))
        } else if shape.panels >= 2 {
            let half = shape.panels / 2;
            Some(((0..half, 0..rows), (half..shape.panels, 0..rows)))
        } else {
            None
        }
    } else {
        None
    };
    match parts {
        // SAFETY (both arms): bounds checked by the caller; the halves write disjoint
        // output rows (distinct `out_rows`) or disjoint column ranges of them.
        Some(((p1, r1), (p2, r2))) => {
            rayon::join(
                || unsafe { tiles_part(shape, epilogue, out, p1, r1, tile) },
                || unsafe { tiles_part(shape, epilogue, out, p2, r2, tile) },
            );
        }
        None => unsafe { tiles_part(shape, epilogue, out, 0..shape.panels, 0..rows, tile) },
    }
}

/// Column panels `panels` of rows `rows` of a layer.
///
/// # Safety
/// The bounds checks of [`check_bounds`] hold, and no other thread writes the same
/// elements of `out`.
unsafe fn tiles_part<F>(
    shape: &TileGrid,
    epilogue: &Epilogue,
    out: OutPtr,
    panels: std::ops::Range<usize>,
    rows: std::ops::Range<usize>,
    tile_fn: &F,
) where
    F: Fn(usize, usize, usize, &mut [f32; MAX_TILE]),
{
    // This may be a rayon worker's half of a layer: it flushes denormals too.
    let _flush = FlushDenormals::new();
    let mut tile = [0.0f32; MAX_TILE];
    let nr = shape.nr;
    for p in panels {
        let j0 = p * nr;
        let jn = nr.min(shape.n - j0);
        let bias = &shape.bias[j0..j0 + jn];
        let mut m0 = rows.start;
        while m0 < rows.end {
            let mr = shape.mr.min(rows.end - m0);
            tile_fn(p, m0, mr, &mut tile);
            for i in 0..mr {
                let o = epilogue.out_rows[m0 + i] + j0;
                // SAFETY: in range (checked by the caller), and written by this thread only.
                let dst = unsafe { std::slice::from_raw_parts_mut(out.0.add(o), jn) };
                let acc = &tile[i * nr..i * nr + jn];
                match (epilogue.residual, epilogue.relu) {
                    (false, false) => dst.iter_mut().zip(acc).zip(bias).for_each(|((d, &a), &b)| *d = a + b),
                    (false, true) => dst.iter_mut().zip(acc).zip(bias).for_each(|((d, &a), &b)| *d = (a + b).max(0.0)),
                    (true, false) => dst.iter_mut().zip(acc).zip(bias).for_each(|((d, &a), &b)| *d += a + b),
                    (true, true) => {
                        dst.iter_mut().zip(acc).zip(bias).for_each(|((d, &a), &b)| *d = (*d + a + b).max(0.0))
                    }
                }
            }
            m0 += mr;
        }
    }
}
