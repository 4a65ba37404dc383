//! The single-precision GEMM of the fast path ([`crate::fast`]): weights packed in column
//! panels ([`Packed`]), one layer as an implicit GEMM over row offsets and taps ([`Gemm`],
//! [`gemm`]), and the `MR x NR` register-tile kernels per instruction set (AVX-512,
//! AVX2+FMA, portable), picked by [`Isa`]. The bf16 (`amx.rs`) and 8-bit (`int8.rs`)
//! kernels are its siblings; `tiles.rs` holds what they share (bounds, the two-thread
//! split, the epilogue).

use bredon_netform::folded::Matrix;

use crate::aligned::Aligned;
use crate::tiles::{Epilogue, MAX_MR, MAX_TILE, TileGrid, check_bounds, run_tiles};

/// The instruction set the kernels use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// x86-64 AVX-512F (16 floats per vector, 32 registers).
    Avx512,
    /// x86-64 AVX2 with FMA (8 floats per vector, 16 registers).
    Avx2,
    /// Plain Rust (auto-vectorised by the compiler for the build target).
    Portable,
}

impl Isa {
    /// Every instruction set this CPU supports, best first.
    pub fn available() -> Vec<Isa> {
        let mut out = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                out.push(Isa::Avx512);
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                out.push(Isa::Avx2);
            }
        }
        out.push(Isa::Portable);
        out
    }

    /// The best available instruction set, or the one named by `BREDON_FAST_ISA`
    /// (`avx512`, `avx2`, `portable`) when it is available.
    pub fn detect() -> Isa {
        let available = Isa::available();
        if let Ok(want) = std::env::var("BREDON_FAST_ISA")
            && let Some(isa) = available.iter().find(|i| i.name() == want.trim().to_ascii_lowercase())
        {
            return *isa;
        }
        available[0]
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Portable => "portable",
        }
    }

    pub(crate) fn lanes(self) -> usize {
        match self {
            Isa::Avx512 => 16,
            Isa::Avx2 | Isa::Portable => 8,
        }
    }

    /// (vectors per column panel, rows per tile) for a layer with `n` output columns:
    /// as many accumulators as the registers hold, with little zero padding.
    pub(crate) fn tile_shape(self, n: usize) -> (usize, usize) {
        match self {
            Isa::Avx512 => {
                let nv = if n <= 16 {
                    1
                } else if n.is_multiple_of(64) {
                    4
                } else if n.is_multiple_of(48) {
                    3
                } else if n <= 32 {
                    2
                } else {
                    4
                };
                (nv, [0, 8, 12, 8, 6][nv])
            }
            Isa::Avx2 | Isa::Portable => {
                if n <= 8 {
                    (1, 8)
                } else {
                    (2, 6)
                }
            }
        }
    }
}

/// A layer's weights as a `k x n` matrix packed in column panels of `nr` columns
/// (`panel p` = rows `0..k` of columns `p*nr..(p+1)*nr`, zero beyond `n`).
pub(crate) struct Packed {
    pub(crate) k: usize,
    pub(crate) n: usize,
    nv: usize,
    mr: usize,
    nr: usize,
    panels: usize,
    w: Aligned<f32>,
    bias: Vec<f32>,
}

impl Packed {
    /// `m` packed for the kernels of `isa`.
    pub(crate) fn new(isa: Isa, m: &Matrix) -> Packed {
        let (k, n) = (m.k, m.n);
        let (nv, mr) = isa.tile_shape(n);
        let nr = nv * isa.lanes();
        let panels = n.div_ceil(nr);
        let mut w = Aligned::zeroed(panels * k * nr);
        let data = &mut w[..];
        for p in 0..panels {
            for kk in 0..k {
                for jj in 0..nr {
                    let j = p * nr + jj;
                    if j < n {
                        data[(p * k + kk) * nr + jj] = m.w[kk * n + j];
                    }
                }
            }
        }
        let mut b = vec![0.0; panels * nr];
        b[..n].copy_from_slice(&m.bias[..n]);
        Packed { k, n, nv, mr, nr, panels, w, bias: b }
    }
}

/// One layer as a matrix product: for each row `m`,
/// `out[out_rows[m] + j] = epilogue(bias[j] + sum_t sum_c a[a_rows[m] + taps[t] + c] * W[t*seg + c][j])`.
/// `A` is the input's storage: f32 here, bytes with their scales for the 8-bit layers
/// (`int8::QGemm`).
pub(crate) struct Gemm<'a, A: ?Sized = [f32]> {
    pub(crate) a: &'a A,
    pub(crate) a_rows: &'a [usize],
    pub(crate) taps: &'a [isize],
    pub(crate) seg: usize,
    pub(crate) out_rows: &'a [usize],
    /// Add the value already in `out` (residual connection, computed in place).
    pub(crate) residual: bool,
    pub(crate) relu: bool,
}

/// Computes the layer `g` with weights `w` into `out`. With `split`, a layer large enough
/// is cut into two halves (by rows, or by column panels when there are too few rows) run
/// by `rayon::join`: this is how a single position (batch 1) uses both cores.
pub(crate) fn gemm(isa: Isa, w: &Packed, g: &Gemm, out: &mut [f32], split: bool) {
    check_bounds(g.a.len(), g.a_rows, g.taps, g.seg, w.k, w.n, g.out_rows, out.len());
    let shape = TileGrid { n: w.n, k: w.k, mr: w.mr, nr: w.nr, panels: w.panels, bias: &w.bias };
    let epilogue = Epilogue { out_rows: g.out_rows, residual: g.residual, relu: g.relu };
    let tile = |p: usize, m0: usize, mr: usize, tile: &mut [f32; MAX_TILE]| {
        let mut ap = [std::ptr::null::<f32>(); MAX_MR];
        for (i, a) in ap.iter_mut().enumerate().take(mr) {
            // SAFETY: in range, checked by `check_bounds`.
            *a = unsafe { g.a.as_ptr().add(g.a_rows[m0 + i]) };
        }
        // SAFETY: the panel lies inside the packed weights (`panels * k * nr` floats); the
        // row pointers plus every tap offset plus `seg` stay inside `a` (checked by
        // `check_bounds`); the tile holds `mr * nr`.
        let b = unsafe { w.w.as_ptr().add(p * w.k * w.nr) };
        let operands = TileOperands { mr, nv: w.nv, a: ap.as_ptr(), b, out: tile.as_mut_ptr() };
        unsafe { kernel(isa, operands, g.taps, g.seg) };
    };
    run_tiles(&shape, &epilogue, out, split, &tile);
}

macro_rules! by_mr {
    ($k:ident, $nv:literal, $mr:expr, $($arg:expr),*) => {
        match $mr {
            1 => $k::<1, $nv>($($arg),*),
            2 => $k::<2, $nv>($($arg),*),
            3 => $k::<3, $nv>($($arg),*),
            4 => $k::<4, $nv>($($arg),*),
            5 => $k::<5, $nv>($($arg),*),
            6 => $k::<6, $nv>($($arg),*),
            7 => $k::<7, $nv>($($arg),*),
            8 => $k::<8, $nv>($($arg),*),
            9 => $k::<9, $nv>($($arg),*),
            10 => $k::<10, $nv>($($arg),*),
            11 => $k::<11, $nv>($($arg),*),
            12 => $k::<12, $nv>($($arg),*),
            _ => unreachable!("tile rows"),
        }
    };
}

macro_rules! by_shape {
    ($k:ident, $mr:expr, $nv:expr, $($arg:expr),*) => {
        match $nv {
            1 => by_mr!($k, 1, $mr, $($arg),*),
            2 => by_mr!($k, 2, $mr, $($arg),*),
            3 => by_mr!($k, 3, $mr, $($arg),*),
            4 => by_mr!($k, 4, $mr, $($arg),*),
            _ => unreachable!("tile columns"),
        }
    };
}

/// The operands of one tile of [`kernel`]: `mr` rows of the input (as row pointers) times
/// a panel of `nv` vectors of packed weights, into `out`.
struct TileOperands {
    mr: usize,
    nv: usize,
    a: *const *const f32,
    b: *const f32,
    out: *mut f32,
}

/// Computes one `mr x (nv * lanes)` tile into `out` (row-major, `nv * lanes` per row).
///
/// # Safety
/// `a` points to `mr` row pointers; for every row `r` and tap `t`, `r + t .. r + t + seg`
/// is readable; `b` holds `taps.len() * seg * nv * lanes` floats; `out` has room for the
/// tile; `isa` is supported by the CPU.
unsafe fn kernel(isa: Isa, tile: TileOperands, taps: &[isize], seg: usize) {
    let TileOperands { mr, nv, a, b, out } = tile;
    unsafe {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                use x86::k512;
                by_shape!(k512, mr, nv, a, taps, seg, b, out)
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                use x86::k256;
                by_shape!(k256, mr, nv, a, taps, seg, b, out)
            }
            _ => by_shape!(kport, mr, nv, a, taps, seg, b, out),
        }
    }
}

/// The portable kernel (8 lanes per "vector").
#[allow(clippy::needless_range_loop)] // fixed-size accumulator tiles read clearest by index
unsafe fn kport<const MR: usize, const NV: usize>(
    a: *const *const f32,
    taps: &[isize],
    seg: usize,
    b: *const f32,
    out: *mut f32,
) {
    unsafe {
        let mut acc = [[[0.0f32; 8]; NV]; MR];
        let mut bp = b;
        for &t in taps {
            let mut rows = [std::ptr::null::<f32>(); MR];
            for (m, r) in rows.iter_mut().enumerate() {
                *r = (*a.add(m)).offset(t);
            }
            for c in 0..seg {
                let bv: &[[f32; 8]; NV] = &*(bp as *const [[f32; 8]; NV]);
                for m in 0..MR {
                    let x = *rows[m].add(c);
                    for j in 0..NV {
                        for l in 0..8 {
                            acc[m][j][l] += x * bv[j][l];
                        }
                    }
                }
                bp = bp.add(8 * NV);
            }
        }
        for m in 0..MR {
            for j in 0..NV {
                std::ptr::copy_nonoverlapping(acc[m][j].as_ptr(), out.add((m * NV + j) * 8), 8);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(clippy::needless_range_loop)] // fixed-size accumulator tiles read clearest by index
mod x86 {
    use std::arch::x86_64::*;

    /// One body for every SIMD width: `$name` keeps `MR x NV` accumulators of `$lanes`
    /// floats, using the `$feature` intrinsics named after it.
    macro_rules! simd_kernel {
        ($(#[$doc:meta])* $name:ident, $feature:literal, $lanes:literal,
         $zero:ident, $load:ident, $splat:ident, $fmadd:ident, $store:ident) => {
            $(#[$doc])*
            #[target_feature(enable = $feature)]
            pub(super) unsafe fn $name<const MR: usize, const NV: usize>(
                a: *const *const f32,
                taps: &[isize],
                seg: usize,
                b: *const f32,
                out: *mut f32,
            ) {
                unsafe {
                    let mut acc = [[$zero(); NV]; MR];
                    let mut bp = b;
                    for &t in taps {
                        let mut rows = [std::ptr::null::<f32>(); MR];
                        for (m, r) in rows.iter_mut().enumerate() {
                            *r = (*a.add(m)).offset(t);
                        }
                        for c in 0..seg {
                            let mut bv = [$zero(); NV];
                            for (j, v) in bv.iter_mut().enumerate() {
                                *v = $load(bp.add($lanes * j));
                            }
                            for m in 0..MR {
                                let x = $splat(*rows[m].add(c));
                                for j in 0..NV {
                                    acc[m][j] = $fmadd(x, bv[j], acc[m][j]);
                                }
                            }
                            bp = bp.add($lanes * NV);
                        }
                    }
                    for m in 0..MR {
                        for j in 0..NV {
                            $store(out.add((m * NV + j) * $lanes), acc[m][j]);
                        }
                    }
                }
            }
        };
    }

    simd_kernel!(
        /// AVX-512 kernel: `MR x NV` accumulators of 16 floats.
        k512, "avx512f", 16,
        _mm512_setzero_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_storeu_ps
    );
    simd_kernel!(
        /// AVX2+FMA kernel: `MR x NV` accumulators of 8 floats.
        k256, "avx2,fma", 8,
        _mm256_setzero_ps, _mm256_loadu_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_storeu_ps
    );
}
