//! The residual blocks' convolutions in 8-bit integers (AVX-512 VNNI's `vpdpbusd`): the
//! fast path's [`Precision::Int8`](crate::Precision::Int8). The first block stays f32
//! (`INT8_F32_BLOCKS` in `fast.rs`): its inputs quantise worst.
//!
//! - **Weights**: signed bytes, one scale per output channel and tap of the 3x3 kernel
//!   (the largest magnitude of the tap's `c` weights maps to 127: one scale per column
//!   for all nine taps doubled the error of the outputs on the shipped networks), packed
//!   in column panels of `nr` columns with the inputs in groups of four
//!   (`[panel][k / 4][column][4]`: one 64-byte vector is 16 columns times 4 inputs, what
//!   one `vpdpbusd` multiplies).
//! - **Activations**: unsigned bytes (every input is a ReLU's output), one scale per
//!   position and layer input (its largest value maps to 255), computed from the f32
//!   activations just before the layer, so a position's outputs never depend on the rest
//!   of its batch. Clipping the largest values instead (a percentile) made the outputs
//!   several times worse: the outliers carry the network's meaning. In a block with
//!   global pooling the pooled biases (which may be negative) do not enter the 8-bit
//!   input: they go through the second convolution's f32 weights into its output
//!   (`taps_matrix` and `add_board_taps` in `fast.rs`).
//! - **Accumulation** in 32-bit integers over each tap, exact; each tap's sums become f32
//!   (`sum × the tap's weight scale`, added up in f32), times
//!   the input's scale at the end, and take the same epilogue as the f32 kernels (bias,
//!   residual add, ReLU), so the residual stream stays f32 between layers.
//!
//! The AVX-512 VNNI kernel and the portable one compute the same integers and the same
//! floats from them; the tests check the two agree bit for bit, and both against the f32
//! path within the quantisation's error.

use bredon_netform::folded::Matrix;

use crate::tiles::{Epilogue, MAX_MR, MAX_TILE, TileGrid, check_bounds, run_tiles};

/// Inputs per group: the `k` of one `vpdpbusd` lane.
const GROUP: usize = 4;
/// Columns per vector (16 lanes of 32 bits).
const LANES: usize = 16;

/// Which kernel runs the 8-bit layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Int8Kernel {
    /// AVX-512 with VNNI (`vpdpbusd` on 64-byte vectors).
    Vnni512,
    /// Plain Rust: the same integers, slowly (tests, and CPUs without VNNI when asked).
    Portable,
}

impl Int8Kernel {
    /// Whether this CPU has AVX-512 VNNI (with the byte and word instructions the kernel
    /// uses).
    pub(crate) fn vnni_available() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vnni")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    }
}

/// A layer's weights in signed bytes, packed for the 8-bit kernels.
pub(crate) struct QPacked {
    k: usize,
    /// Inputs a tap (the weight scales' group).
    seg: usize,
    n: usize,
    nv: usize,
    mr: usize,
    nr: usize,
    panels: usize,
    /// `[panel][k / 4][nr][4]`.
    w: Vec<i8>,
    /// Per panel, tap and column (`[panel][tap][nr]`): the weight scale.
    scale: Vec<f32>,
    bias: Vec<f32>,
}

impl QPacked {
    /// `m` (a layer whose inputs are `k / seg` taps of `seg` inputs, `seg` a multiple of
    /// 4) quantised and packed, with `nv` vectors a panel and `mr` rows a tile.
    pub(crate) fn new(m: &Matrix, seg: usize, nv: usize, mr: usize) -> QPacked {
        let (k, n) = (m.k, m.n);
        assert!(seg.is_multiple_of(GROUP) && k.is_multiple_of(seg), "8-bit layer of {k} inputs in taps of {seg}");
        let taps = k / seg;
        let nr = nv * LANES;
        let panels = n.div_ceil(nr);
        // [panel][tap][nr]
        let at = |p: usize, t: usize, jj: usize| (p * taps + t) * nr + jj;
        let mut scale = vec![1.0f32; panels * taps * nr];
        for j in 0..n {
            for t in 0..taps {
                let max = (t * seg..(t + 1) * seg).map(|kk| m.w[kk * n + j].abs()).fold(0.0f32, f32::max);
                if max > 0.0 {
                    scale[at(j / nr, t, j % nr)] = max / 127.0;
                }
            }
        }
        let q = |kk: usize, j: usize| -> i8 {
            if j >= n {
                return 0;
            }
            let s = scale[at(j / nr, kk / seg, j % nr)];
            (m.w[kk * n + j] / s).round().clamp(-127.0, 127.0) as i8
        };
        let mut w = vec![0i8; panels * k * nr];
        for p in 0..panels {
            for g in 0..k / GROUP {
                for jj in 0..nr {
                    for kk in 0..GROUP {
                        let v = q(g * GROUP + kk, p * nr + jj);
                        w[((p * (k / GROUP) + g) * nr + jj) * GROUP + kk] = v;
                    }
                }
            }
        }
        let mut bias = vec![0.0; panels * nr];
        bias[..n].copy_from_slice(&m.bias[..n]);
        QPacked { k, seg, n, nv, mr, nr, panels, w, scale, bias }
    }
}

/// A layer's input in bytes: `[position][padded pixel][channel]` like the f32
/// activations (same offsets), each position with its own scale.
#[derive(Default)]
pub(crate) struct QInput {
    pub(crate) data: Vec<u8>,
    /// Per row of the layer (each pixel of each position): its position's scale.
    pub(crate) row_scale: Vec<f32>,
}

/// Quantises `src` (`positions` blocks of floats, whose interior pixels start at `rows`,
/// `area` of them a position, `c` channels each, none negative) into `dst` at the same
/// offsets: each interior value rounded to its position's scale (its largest value maps
/// to 255). The padding's bytes are never written: zero since the buffer grew.
pub(crate) fn quantize(src: &[f32], rows: &[usize], area: usize, c: usize, dst: &mut QInput) {
    let positions = rows.len() / area;
    dst.data.resize(src.len(), 0);
    dst.row_scale.resize(rows.len(), 0.0);
    let vector = Int8Kernel::vnni_available() && c.is_multiple_of(LANES);
    for i in 0..positions {
        let pix = &rows[i * area..(i + 1) * area];
        for &r in pix {
            assert!(r + c <= src.len(), "quantised rows out of range");
        }
        #[cfg(target_arch = "x86_64")]
        if vector {
            // SAFETY: AVX-512 checked above; every row's `c` values are in range (checked
            // above) in `src` and in `dst.data` (as long as `src`).
            let scale = unsafe { quantize_avx512(src, pix, c, &mut dst.data) };
            dst.row_scale[i * area..(i + 1) * area].fill(scale);
            continue;
        }
        let max = pix.iter().fold(0.0f32, |m, &r| src[r..r + c].iter().fold(m, |m, &v| m.max(v)));
        let scale = if max > 0.0 { max / 255.0 } else { 1.0 };
        let inv = 1.0 / scale;
        for &r in pix {
            for (d, &v) in dst.data[r..r + c].iter_mut().zip(&src[r..r + c]) {
                // Rounded to nearest; `as u8` saturates (a negative value or NaN to 0).
                *d = (v * inv + 0.5) as u8;
            }
        }
        dst.row_scale[i * area..(i + 1) * area].fill(scale);
    }
}

/// [`quantize`] of one position in AVX-512 (`c` a multiple of 16): the same bytes (the
/// scalar loop's rounding: `v / scale + 0.5` truncated, saturated to 0..255). Returns the
/// position's scale.
///
/// # Safety
/// The CPU has AVX-512 (F, BW); every `r + c` is within `src` and `dst`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn quantize_avx512(src: &[f32], pix: &[usize], c: usize, dst: &mut [u8]) -> f32 {
    use std::arch::x86_64::*;
    unsafe {
        let mut m = _mm512_setzero_ps();
        for &r in pix {
            for k in (0..c).step_by(LANES) {
                m = _mm512_max_ps(m, _mm512_loadu_ps(src.as_ptr().add(r + k)));
            }
        }
        let max = _mm512_reduce_max_ps(m);
        let scale = if max > 0.0 { max / 255.0 } else { 1.0 };
        let (inv, half) = (_mm512_set1_ps(1.0 / scale), _mm512_set1_ps(0.5));
        let zero = _mm512_setzero_ps();
        for &r in pix {
            for k in (0..c).step_by(LANES) {
                let v = _mm512_loadu_ps(src.as_ptr().add(r + k));
                // max(v, 0) first: a negative value becomes 0 as the scalar cast makes it.
                let q = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_max_ps(v, zero), inv), half));
                _mm_storeu_si128(dst.as_mut_ptr().add(r + k) as *mut __m128i, _mm512_cvtusepi32_epi8(q));
            }
        }
        scale
    }
}

/// One 8-bit layer: `f32::Gemm` with its input in bytes.
pub(crate) type QGemm<'a> = crate::f32::Gemm<'a, QInput>;

/// The 8-bit twin of `f32::gemm`: `out[out_rows[m] + j] = epilogue(bias[j] + s_m
/// sum_t s_tj sum_c q_a q_w)`.
pub(crate) fn gemm_i8(kernel: Int8Kernel, w: &QPacked, g: &QGemm, out: &mut [f32], split: bool) {
    check_bounds(g.a.data.len(), g.a_rows, g.taps, g.seg, w.k, w.n, g.out_rows, out.len());
    assert_eq!(g.seg, w.seg, "8-bit layer's taps");
    assert_eq!(g.a.row_scale.len(), g.a_rows.len(), "one scale a row");
    assert!(kernel == Int8Kernel::Portable || Int8Kernel::vnni_available(), "no AVX-512 VNNI on this CPU");
    let shape = TileGrid { n: w.n, k: w.k, mr: w.mr, nr: w.nr, panels: w.panels, bias: &w.bias };
    let epilogue = Epilogue { out_rows: g.out_rows, residual: g.residual, relu: g.relu };
    let tile = |p: usize, m0: usize, mr: usize, tile: &mut [f32; MAX_TILE]| {
        let mut ap = [std::ptr::null::<u8>(); MAX_MR];
        let mut rs = [0.0f32; MAX_MR];
        for i in 0..mr {
            // SAFETY: in range, checked by `check_bounds`.
            ap[i] = unsafe { g.a.data.as_ptr().add(g.a_rows[m0 + i]) };
            rs[i] = g.a.row_scale[m0 + i];
        }
        // The panel's scales, `[tap][nr]`.
        let cols = p * g.taps.len() * w.nr..(p + 1) * g.taps.len() * w.nr;
        let ops = QTile {
            mr,
            nv: w.nv,
            a: ap.as_ptr(),
            // SAFETY: the panel lies inside the packed weights (`panels * k * nr` bytes).
            b: unsafe { w.w.as_ptr().add(p * w.k * w.nr) },
            scale: w.scale[cols].as_ptr(),
            row_scale: rs,
            out: tile.as_mut_ptr(),
        };
        // SAFETY: the row pointers plus every tap offset plus `seg` stay inside the input
        // (checked by `check_bounds`); the panel holds `k * nr` bytes, the scales
        // `taps * nr`, the tile `mr * nr` floats; VNNI is checked above.
        unsafe { qkernel(kernel, ops, g.taps, g.seg) };
    };
    run_tiles(&shape, &epilogue, out, split, &tile);
}

/// The operands of one 8-bit tile.
struct QTile {
    mr: usize,
    nv: usize,
    a: *const *const u8,
    b: *const i8,
    scale: *const f32,
    row_scale: [f32; MAX_MR],
    out: *mut f32,
}

macro_rules! by_mr_nv {
    ($k:ident, $t:expr, $($arg:expr),*) => {
        match ($t.nv, $t.mr) {
            (1, 1) => $k::<1, 1>($t, $($arg),*),
            (1, 2) => $k::<2, 1>($t, $($arg),*),
            (1, 3) => $k::<3, 1>($t, $($arg),*),
            (1, 4) => $k::<4, 1>($t, $($arg),*),
            (1, 5) => $k::<5, 1>($t, $($arg),*),
            (1, 6) => $k::<6, 1>($t, $($arg),*),
            (1, 7) => $k::<7, 1>($t, $($arg),*),
            (1, 8) => $k::<8, 1>($t, $($arg),*),
            (2, 1) => $k::<1, 2>($t, $($arg),*),
            (2, 2) => $k::<2, 2>($t, $($arg),*),
            (2, 3) => $k::<3, 2>($t, $($arg),*),
            (2, 4) => $k::<4, 2>($t, $($arg),*),
            (2, 5) => $k::<5, 2>($t, $($arg),*),
            (2, 6) => $k::<6, 2>($t, $($arg),*),
            (2, 7) => $k::<7, 2>($t, $($arg),*),
            (2, 8) => $k::<8, 2>($t, $($arg),*),
            (2, 9) => $k::<9, 2>($t, $($arg),*),
            (2, 10) => $k::<10, 2>($t, $($arg),*),
            (2, 11) => $k::<11, 2>($t, $($arg),*),
            (2, 12) => $k::<12, 2>($t, $($arg),*),
            (3, 1) => $k::<1, 3>($t, $($arg),*),
            (3, 2) => $k::<2, 3>($t, $($arg),*),
            (3, 3) => $k::<3, 3>($t, $($arg),*),
            (3, 4) => $k::<4, 3>($t, $($arg),*),
            (3, 5) => $k::<5, 3>($t, $($arg),*),
            (3, 6) => $k::<6, 3>($t, $($arg),*),
            (3, 7) => $k::<7, 3>($t, $($arg),*),
            (3, 8) => $k::<8, 3>($t, $($arg),*),
            (4, 1) => $k::<1, 4>($t, $($arg),*),
            (4, 2) => $k::<2, 4>($t, $($arg),*),
            (4, 3) => $k::<3, 4>($t, $($arg),*),
            (4, 4) => $k::<4, 4>($t, $($arg),*),
            (4, 5) => $k::<5, 4>($t, $($arg),*),
            (4, 6) => $k::<6, 4>($t, $($arg),*),
            _ => unreachable!("8-bit tile shape"),
        }
    };
}

/// One 8-bit tile into `t.out` (row-major, `nv * 16` floats a row).
///
/// # Safety
/// As `fast::kernel`, with bytes; `kernel` is supported by the CPU.
unsafe fn qkernel(kernel: Int8Kernel, t: QTile, taps: &[isize], seg: usize) {
    unsafe {
        match kernel {
            #[cfg(target_arch = "x86_64")]
            Int8Kernel::Vnni512 => by_mr_nv!(kvnni, t, taps, seg),
            _ => by_mr_nv!(kport, t, taps, seg),
        }
    }
}

/// The portable 8-bit kernel: the VNNI kernel's integers and floats, in plain Rust (the
/// same fused multiply-adds, in the same order).
#[allow(clippy::needless_range_loop)] // fixed-size accumulator tiles read clearest by index
unsafe fn kport<const MR: usize, const NV: usize>(t: QTile, taps: &[isize], seg: usize) {
    unsafe {
        let mut sum = [[[0.0f32; LANES]; NV]; MR];
        let mut bp = t.b;
        for (ti, &tap) in taps.iter().enumerate() {
            let mut acc = [[[0i32; LANES]; NV]; MR];
            let mut rows = [std::ptr::null::<u8>(); MR];
            for (m, r) in rows.iter_mut().enumerate() {
                *r = (*t.a.add(m)).offset(tap);
            }
            for c in (0..seg).step_by(GROUP) {
                for m in 0..MR {
                    let x = [0, 1, 2, 3].map(|i| *rows[m].add(c + i) as i32);
                    for j in 0..NV {
                        for l in 0..LANES {
                            let w = bp.add((j * LANES + l) * GROUP);
                            acc[m][j][l] += (0..GROUP).map(|i| x[i] * *w.add(i) as i32).sum::<i32>();
                        }
                    }
                }
                bp = bp.add(LANES * GROUP * NV);
            }
            let at = ti * NV * LANES;
            for m in 0..MR {
                for j in 0..NV {
                    for l in 0..LANES {
                        let col = at + j * LANES + l;
                        let v = acc[m][j][l] as f32;
                        sum[m][j][l] = v.mul_add(*t.scale.add(col), sum[m][j][l]);
                    }
                }
            }
        }
        for m in 0..MR {
            for j in 0..NV {
                for l in 0..LANES {
                    *t.out.add((m * NV + j) * LANES + l) = sum[m][j][l] * t.row_scale[m];
                }
            }
        }
    }
}

/// The AVX-512 VNNI kernel: `MR x NV` accumulators of 16 32-bit sums, one `vpdpbusd` per
/// accumulator and group of four inputs; after each tap the sums are scaled into the
/// f32 tile in `t.out` (in the L1 cache: the registers hold the integer sums).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
#[allow(clippy::needless_range_loop)]
unsafe fn kvnni<const MR: usize, const NV: usize>(t: QTile, taps: &[isize], seg: usize) {
    use std::arch::x86_64::*;
    unsafe {
        for i in 0..MR * NV {
            _mm512_storeu_ps(t.out.add(i * LANES), _mm512_setzero_ps());
        }
        let mut bp = t.b;
        for (ti, &tap) in taps.iter().enumerate() {
            let mut acc = [[_mm512_setzero_si512(); NV]; MR];
            let mut rows = [std::ptr::null::<u8>(); MR];
            for (m, r) in rows.iter_mut().enumerate() {
                *r = (*t.a.add(m)).offset(tap);
            }
            for c in (0..seg).step_by(GROUP) {
                let mut bv = [_mm512_setzero_si512(); NV];
                for (j, v) in bv.iter_mut().enumerate() {
                    *v = _mm512_loadu_si512(bp.add(j * LANES * GROUP) as *const __m512i);
                }
                for m in 0..MR {
                    let x = _mm512_set1_epi32((rows[m].add(c) as *const i32).read_unaligned());
                    for j in 0..NV {
                        acc[m][j] = _mm512_dpbusd_epi32(acc[m][j], x, bv[j]);
                    }
                }
                bp = bp.add(LANES * GROUP * NV);
            }
            let at = ti * NV * LANES;
            for j in 0..NV {
                let ws = _mm512_loadu_ps(t.scale.add(at + j * LANES));
                for m in 0..MR {
                    let o = t.out.add((m * NV + j) * LANES);
                    let v = _mm512_cvtepi32_ps(acc[m][j]);
                    _mm512_storeu_ps(o, _mm512_fmadd_ps(v, ws, _mm512_loadu_ps(o)));
                }
            }
        }
        for m in 0..MR {
            let rs = _mm512_set1_ps(t.row_scale[m]);
            for j in 0..NV {
                let o = t.out.add((m * NV + j) * LANES);
                _mm512_storeu_ps(o, _mm512_mul_ps(_mm512_loadu_ps(o), rs));
            }
        }
    }
}
