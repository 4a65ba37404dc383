//! The residual blocks' convolutions in bfloat16 on the AMX tiles (`tdpbf16ps`): the fast
//! path's [`Precision::Bf16`](crate::Precision::Bf16).
//!
//! - **Tiles**: eight tile registers of 16 rows x 64 bytes. One step multiplies two row
//!   tiles of the input (16 pixels x 32 bf16 inputs each) by two tiles of weights (32
//!   inputs x 16 columns, in pairs) into four 16 x 16 f32 accumulators: 32 pixels x 32
//!   output channels per pass over the layer's `9 c` inputs.
//! - **Rows**: a tile loads 16 rows at a fixed stride, so the left matrix is read in place
//!   from the padded channels-last layout the f32 kernels use (`[position][padded
//!   pixel][channel]`), one load per tap: a row tile is 16 consecutive pixels of the padded
//!   board. A position's interior spans `(n - 1)(n + 2) + n` of them (46 for 6x6: three
//!   tiles for 36 squares); the padding pixels inside the span are computed and never
//!   written ([`RowTile::mask`]). Row tiles of different positions pair freely.
//! - **Weights**: packed once, `[column pair][tap][32 inputs][half][16 input pairs][16
//!   columns][2]` (the pair-interleaved layout `tdpbf16ps` reads), rounded to nearest even,
//!   denormals flushed (the tiles read them as zero).
//! - **Activations**: each layer writes its output twice, in f32 (the residual stream,
//!   pooling and the heads stay f32) and in bf16 (the next layer's input), from one
//!   epilogue (bias, residual add, ReLU); only the first block's input is converted on its
//!   own.
//! - **Accumulation** in f32. In a block with global pooling the pooled biases are added
//!   to the first convolution's f32 output as it is converted to the second's bf16 input
//!   ([`to_bf16_plus`]).
//!
//! The AMX kernel and the portable one compute the same products of the same bf16 values;
//! the tests check that the two agree to f32 rounding and both stay close to f32.

use bredon_netform::folded::Matrix;

use crate::aligned::Aligned;

/// Pixels (rows) of a tile.
pub(crate) const TILE_ROWS: usize = 16;
/// bf16 inputs per tile row (64 bytes).
const KC: usize = 32;
/// f32 columns of an accumulator tile.
const NT: usize = 16;
/// bf16 values in one packed weight tile (16 input pairs x 16 columns x 2).
const B_TILE: usize = KC * NT;

/// Which kernel runs the bf16 layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bf16Kernel {
    /// Intel AMX (`tdpbf16ps` on the tile registers).
    Amx,
    /// Plain Rust: the same bf16 products, slowly (tests, and CPUs without AMX when asked).
    Portable,
}

impl Bf16Kernel {
    /// Whether this CPU has AMX with bf16 (and the AVX-512 BF16 conversions the epilogue
    /// uses), and Linux lets this process use the tile registers. Asked once per process:
    /// the first call requests the permission, which then holds for every thread.
    pub(crate) fn amx_available() -> bool {
        static AMX: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AMX.get_or_init(detect_amx)
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn detect_amx() -> bool {
    use std::arch::x86_64::__cpuid_count;
    // CPUID leaf 7, EDX: bit 22 AMX-BF16, bit 24 AMX-TILE.
    #[allow(unused_unsafe)]
    let edx = unsafe {
        if __cpuid_count(0, 0).eax < 7 {
            return false;
        }
        __cpuid_count(7, 0).edx
    };
    let units = edx & (1 << 22) != 0 && edx & (1 << 24) != 0;
    if !(units
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512bf16"))
    {
        return false;
    }
    // arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): Linux gives the tile data state
    // to processes that ask (5.16 on); without it a tile instruction faults.
    let ret: i64;
    // SAFETY: a system call that only changes this process's permissions.
    unsafe {
        std::arch::asm!("syscall", inlateout("rax") 158i64 => ret, in("rdi") 0x1023i64, in("rsi") 18i64,
             lateout("rcx") _, lateout("r11") _, options(nostack));
    }
    ret == 0
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn detect_amx() -> bool {
    false
}

/// `x` in bfloat16, rounded to nearest even, a denormal flushed to zero (as the tiles and
/// `vcvtneps2bf16` read it). The bits of a finite `x` only.
pub(crate) fn bf16_bits(x: f32) -> u16 {
    let b = if x.abs() < f32::MIN_POSITIVE { x.to_bits() & 0x8000_0000 } else { x.to_bits() };
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// The f32 value of bfloat16 bits.
fn bf16_value(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// A 3x3 convolution's weights in bfloat16, packed for the tiles.
pub(crate) struct BPacked {
    /// Inputs a tap.
    c: usize,
    /// Chunks of 32 inputs a tap (the last one's weights past `c` are zero).
    kcs: usize,
    taps: usize,
    /// Output columns (a multiple of 16).
    pub(crate) n: usize,
    /// Column pairs of 32 (the last may hold 16 real columns).
    pairs: usize,
    /// `[pair][tap][c / 32][half][16][16][2]`.
    w: Aligned<u16>,
    /// `pairs * 32`.
    bias: Vec<f32>,
}

impl BPacked {
    /// Whether a layer of `c` inputs a tap and `n` outputs fits the tiles: the epilogue
    /// writes 16 columns at a time. (Any `c`: a tap's last chunk of 32 inputs reads on into
    /// the next pixel, times zero weights.)
    pub(crate) fn fits(c: usize, n: usize) -> bool {
        n.is_multiple_of(NT) && c > 0 && n > 0
    }

    /// `m` (inputs in `k / c` taps of `c`, tap-major) rounded to bf16 and packed.
    pub(crate) fn new(m: &Matrix, c: usize) -> BPacked {
        let (k, n) = (m.k, m.n);
        assert!(Self::fits(c, n) && k.is_multiple_of(c), "a bf16 layer of {k} inputs in taps of {c}, {n} outputs");
        let taps = k / c;
        let kcs = c.div_ceil(KC);
        let pairs = n.div_ceil(2 * NT);
        let mut w = Aligned::zeroed(pairs * taps * kcs * 2 * B_TILE);
        let data = &mut w[..];
        for jp in 0..pairs {
            for t in 0..taps {
                for kc in 0..kcs {
                    for half in 0..2 {
                        let tile = (((jp * taps + t) * kcs + kc) * 2 + half) * B_TILE;
                        for kk in 0..KC {
                            for col in 0..NT {
                                let j = jp * 2 * NT + half * NT + col;
                                if j < n && kc * KC + kk < c {
                                    let row = t * c + kc * KC + kk;
                                    data[tile + (kk / 2) * 2 * NT + col * 2 + kk % 2] = bf16_bits(m.w[row * n + j]);
                                }
                            }
                        }
                    }
                }
            }
        }
        let mut bias = vec![0.0; pairs * 2 * NT];
        bias[..n].copy_from_slice(&m.bias[..n]);
        BPacked { c, kcs, taps, n, pairs, w, bias }
    }
}

/// 16 consecutive pixels of the padded layout a tile computes: the first, and which of
/// the 16 are board squares (bit `r`: pixel `first + r`), the only ones written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RowTile {
    pub(crate) first: usize,
    pub(crate) mask: u16,
}

/// Row tiles per position of an `n`x`n` board.
pub(crate) fn tiles_per_position(n: usize) -> usize {
    ((n - 1) * (n + 2) + n).div_ceil(TILE_ROWS)
}

/// The row tiles of `positions` positions of an `n`x`n` board padded by one square, in
/// order ([`tiles_per_position`] each): each position's span from its first square to
/// its last.
pub(crate) fn row_tiles(positions: usize, n: usize) -> Vec<RowTile> {
    let side = n + 2;
    let padded = side * side;
    let per = tiles_per_position(n);
    let mut out = Vec::with_capacity(positions * per);
    for i in 0..positions {
        let start = side + 1;
        for t in 0..per {
            let first = start + t * TILE_ROWS;
            let mut mask = 0u16;
            for r in 0..TILE_ROWS {
                let q = first + r;
                let (y, x) = (q / side, q % side);
                if (1..=n).contains(&y) && (1..=n).contains(&x) {
                    mask |= 1 << r;
                }
            }
            out.push(RowTile { first: i * padded + first, mask });
        }
    }
    out
}

/// Pixels past the last position's end that a layer's tiles may read (the last tile's
/// overrun plus a tap's reach): the bf16 buffers hold this many more, zero.
pub(crate) fn margin_pixels(n: usize) -> usize {
    TILE_ROWS + 2 * (n + 2) + 2
}

/// Writes the bf16 of the `c` values at each of `rows` (offsets) of `src` to `dst` at the
/// same offsets ([`bf16_bits`] of each), with `bias` added first where given: `(biases,
/// area)`, the `c` biases of position `i` (`biases[i c..]`) added to its `area` rows
/// (rows `i area..(i + 1) area`).
pub(crate) fn to_bf16_plus(src: &[f32], rows: &[usize], bias: Option<(&[f32], usize)>, c: usize, dst: &mut [u16]) {
    for &r in rows {
        assert!(r + c <= src.len().min(dst.len()), "bf16 rows out of range");
    }
    if let Some((b, area)) = bias {
        assert!(area > 0 && rows.len().div_ceil(area) * c <= b.len(), "a bias for every position");
    }
    #[cfg(target_arch = "x86_64")]
    if c.is_multiple_of(NT) && Bf16Kernel::amx_available() {
        // SAFETY: every row and bias in range (checked above); AVX-512 BF16 comes with
        // AMX here.
        return unsafe { to_bf16_avx512(src, rows, bias, c, dst) };
    }
    for (i, &r) in rows.iter().enumerate() {
        let bias = bias.map(|(b, area)| &b[i / area * c..(i / area + 1) * c]);
        for (k, (d, &v)) in dst[r..r + c].iter_mut().zip(&src[r..r + c]).enumerate() {
            *d = bf16_bits(v + bias.map_or(0.0, |b| b[k]));
        }
    }
}

/// [`to_bf16_plus`] in AVX-512 BF16 (`vcvtneps2bf16`: the same rounding, denormals read
/// as zero), 16 values at a time.
///
/// # Safety
/// The CPU has AVX-512 BF16; `c` is a multiple of 16, every `r + c` is within `src` and
/// `dst`, and the biases hold `c` for every position of `rows`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn to_bf16_avx512(src: &[f32], rows: &[usize], bias: Option<(&[f32], usize)>, c: usize, dst: &mut [u16]) {
    use std::arch::x86_64::*;
    let zeros = [0.0f32; NT];
    unsafe {
        for (i, &r) in rows.iter().enumerate() {
            for k in (0..c).step_by(NT) {
                let add = match bias {
                    Some((b, area)) => b.as_ptr().add(i / area * c + k),
                    None => zeros.as_ptr(),
                };
                let v = _mm512_add_ps(_mm512_loadu_ps(src.as_ptr().add(r + k)), _mm512_loadu_ps(add));
                let b: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(v));
                _mm256_storeu_si256(dst.as_mut_ptr().add(r + k) as *mut __m256i, b);
            }
        }
    }
}

/// One bf16 layer: for each square pixel `p` of `tiles`, `out[p n + j] = epilogue(bias[j] +
/// sum_t sum_c a[(p + taps[t]) c + c'] W[t c + c'][j])`, also written in bf16 to `out_b`.
pub(crate) struct Bf16Layer<'a> {
    /// The input, bf16 `[pixel][c]`.
    pub(crate) a: &'a [u16],
    pub(crate) tiles: &'a [RowTile],
    /// Tap offsets in pixels.
    pub(crate) taps: &'a [isize],
    pub(crate) residual: bool,
    pub(crate) relu: bool,
}

/// Computes `g` with weights `w` into `out` (f32) and `out_b` (bf16), both `[pixel][n]`.
pub(crate) fn gemm_bf16(kernel: Bf16Kernel, w: &BPacked, g: &Bf16Layer, out: &mut [f32], out_b: &mut [u16]) {
    assert_eq!(g.taps.len(), w.taps, "bf16 layer's taps");
    assert!(kernel == Bf16Kernel::Portable || Bf16Kernel::amx_available(), "no AMX on this CPU");
    // Every read: a tile's 16 pixels plus each tap, `c` values each; every write: the
    // squares' `n` values.
    let (tmin, tmax) = g.taps.iter().fold((0isize, 0isize), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    let overrun = w.kcs * KC - w.c;
    for t in g.tiles {
        assert!(t.first as isize + tmin >= 0, "bf16 layer reads before its input");
        assert!(
            ((t.first + TILE_ROWS) as isize + tmax) as usize * w.c + overrun <= g.a.len(),
            "bf16 layer reads past its input"
        );
        if t.mask != 0 {
            let last = t.first + 15 - t.mask.leading_zeros() as usize;
            assert!((last + 1) * w.n <= out.len().min(out_b.len()), "bf16 layer writes past its output");
        }
    }
    match kernel {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: bounds checked above; AMX (and its permission) checked above.
        Bf16Kernel::Amx => unsafe { layer_amx(w, g, out, out_b) },
        _ => layer_portable(w, g, out, out_b),
    }
}

/// The epilogue of one accumulator tile, in plain Rust: rows `mask` of `acc` (16 x 16,
/// columns `j0..j0 + 16`) into the pixels from `first`.
#[allow(clippy::too_many_arguments)]
fn epilogue_portable(
    acc: &[f32],
    tile: RowTile,
    j0: usize,
    w: &BPacked,
    g: &Bf16Layer,
    out: &mut [f32],
    out_b: &mut [u16],
) {
    for r in 0..TILE_ROWS {
        if tile.mask & (1 << r) == 0 {
            continue;
        }
        let o = (tile.first + r) * w.n + j0;
        for col in 0..NT {
            let mut v = acc[r * NT + col] + w.bias[j0 + col];
            if g.residual {
                v += out[o + col];
            }
            if g.relu {
                v = v.max(0.0);
            }
            out[o + col] = v;
            out_b[o + col] = bf16_bits(v);
        }
    }
}

/// The portable kernel: each accumulator tile as the tiles compute it (for each pair of
/// inputs, both products added to the sum), in plain Rust.
fn layer_portable(w: &BPacked, g: &Bf16Layer, out: &mut [f32], out_b: &mut [u16]) {
    let kcs = w.kcs;
    let mut acc = [0.0f32; TILE_ROWS * NT];
    for &tile in g.tiles {
        for jp in 0..w.pairs {
            for half in 0..2 {
                let j0 = jp * 2 * NT + half * NT;
                if j0 >= w.n {
                    continue;
                }
                acc.fill(0.0);
                for (t, &tap) in g.taps.iter().enumerate() {
                    for kc in 0..kcs {
                        let b = &w.w[(((jp * w.taps + t) * kcs + kc) * 2 + half) * B_TILE..][..B_TILE];
                        for r in 0..TILE_ROWS {
                            let px = (tile.first as isize + r as isize + tap) as usize;
                            let a = &g.a[px * w.c + kc * KC..][..KC];
                            for col in 0..NT {
                                let s = &mut acc[r * NT + col];
                                for kp in 0..KC / 2 {
                                    let w0 = bf16_value(b[kp * 2 * NT + col * 2]);
                                    let w1 = bf16_value(b[kp * 2 * NT + col * 2 + 1]);
                                    *s += bf16_value(a[2 * kp]) * w0 + bf16_value(a[2 * kp + 1]) * w1;
                                }
                            }
                        }
                    }
                }
                epilogue_portable(&acc, tile, j0, w, g, out, out_b);
            }
        }
    }
}

/// Pairs of row tiles that share one column pair's weights (for 64 channels: 36 KB)
/// before the next column pair's. (1, 2, 4, 8 and 16 measured within 5 % of each other
/// on one 6x6 layer; so did prefetching the next step's weights.)
const PAIRS_PER_BLOCK: usize = 8;

/// AMX's tile configuration (palette 1, eight tiles of 16 rows x 64 bytes).
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

impl TileConfig {
    fn sixteen_by_64() -> TileConfig {
        let mut c = [0u8; 64];
        c[0] = 1;
        for t in 0..8 {
            c[16 + 2 * t] = 64;
            c[48 + t] = TILE_ROWS as u8;
        }
        TileConfig(c)
    }
}

/// Four 16 x 16 accumulators, where the tiles are stored for the epilogue.
#[repr(C, align(64))]
struct Acc([f32; 4 * TILE_ROWS * NT]);

/// The AMX kernel: for each pair of row tiles and each column pair, the four
/// accumulators over every tap and input chunk (tmm0..3 = rows 0/1 x columns 0/1; tmm4,5
/// the inputs, tmm6,7 the weights), stored and finished by the AVX-512 epilogue.
///
/// # Safety
/// The reads and writes are in range (checked by [`gemm_bf16`]); the CPU has AMX-BF16 and
/// AVX-512 BF16 and this process holds the tile permission ([`Bf16Kernel::amx_available`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn layer_amx(w: &BPacked, g: &Bf16Layer, out: &mut [f32], out_b: &mut [u16]) {
    use std::arch::asm;
    let cfg = TileConfig::sixteen_by_64();
    let kcs = w.kcs;
    let stride = w.c * 2;
    let a = g.a.as_ptr();
    let wp = w.w.as_ptr();
    let mut acc = Acc([0.0; 4 * TILE_ROWS * NT]);
    // SAFETY (every block below): the tile loads read 16 rows of 64 bytes at `stride` from
    // pixels inside the input, and the weights' tiles inside the packed weights (the
    // caller's bounds checks); the stores write the 4 KB of `acc`.
    unsafe {
        asm!("ldtilecfg [{}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly));
        for block in g.tiles.chunks(2 * PAIRS_PER_BLOCK) {
            for jp in 0..w.pairs {
                for pair in block.chunks(2) {
                    let t0 = pair[0];
                    // An odd tile out is paired with itself, and its copy is never written.
                    let t1 = pair.get(1).copied().unwrap_or(RowTile { first: t0.first, mask: 0 });
                    let mut bp = wp.add(jp * w.taps * kcs * 2 * B_TILE);
                    asm!("tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3", options(nostack, nomem));
                    for &tap in g.taps {
                        let a0 = a.offset((t0.first as isize + tap) * w.c as isize);
                        let a1 = a.offset((t1.first as isize + tap) * w.c as isize);
                        for kc in 0..kcs {
                            asm!(
                                "tileloadd tmm4, [{a0} + {s}*1]",
                                "tileloadd tmm6, [{b0} + {bs}*1]",
                                "tileloadd tmm5, [{a1} + {s}*1]",
                                "tileloadd tmm7, [{b1} + {bs}*1]",
                                "tdpbf16ps tmm0, tmm4, tmm6",
                                "tdpbf16ps tmm1, tmm4, tmm7",
                                "tdpbf16ps tmm2, tmm5, tmm6",
                                "tdpbf16ps tmm3, tmm5, tmm7",
                                a0 = in(reg) a0.add(kc * KC),
                                a1 = in(reg) a1.add(kc * KC),
                                s = in(reg) stride,
                                b0 = in(reg) bp,
                                b1 = in(reg) bp.add(B_TILE),
                                bs = in(reg) 2 * NT * 2,
                                options(nostack, readonly),
                            );
                            bp = bp.add(2 * B_TILE);
                        }
                    }
                    let p = acc.0.as_mut_ptr();
                    asm!(
                        "tilestored [{p0} + {s}*1], tmm0",
                        "tilestored [{p1} + {s}*1], tmm1",
                        "tilestored [{p2} + {s}*1], tmm2",
                        "tilestored [{p3} + {s}*1], tmm3",
                        p0 = in(reg) p,
                        p1 = in(reg) p.add(TILE_ROWS * NT),
                        p2 = in(reg) p.add(2 * TILE_ROWS * NT),
                        p3 = in(reg) p.add(3 * TILE_ROWS * NT),
                        s = in(reg) NT * 4,
                        options(nostack),
                    );
                    for (i, (tile, half)) in [(t0, 0), (t0, 1), (t1, 0), (t1, 1)].into_iter().enumerate() {
                        let j0 = jp * 2 * NT + half * NT;
                        if j0 < w.n {
                            epilogue_avx512(
                                &acc.0[i * TILE_ROWS * NT..(i + 1) * TILE_ROWS * NT],
                                tile,
                                j0,
                                w,
                                g,
                                out,
                                out_b,
                            );
                        }
                    }
                }
            }
        }
        asm!("tilerelease", options(nostack, nomem));
    }
}

/// [`epilogue_portable`] in AVX-512: the same values, 16 columns at a time.
///
/// # Safety
/// As [`layer_amx`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
#[allow(clippy::too_many_arguments)]
unsafe fn epilogue_avx512(
    acc: &[f32],
    tile: RowTile,
    j0: usize,
    w: &BPacked,
    g: &Bf16Layer,
    out: &mut [f32],
    out_b: &mut [u16],
) {
    use std::arch::x86_64::*;
    unsafe {
        let bias = _mm512_loadu_ps(w.bias.as_ptr().add(j0));
        let zero = _mm512_setzero_ps();
        let mut mask = tile.mask;
        while mask != 0 {
            let r = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let o = (tile.first + r) * w.n + j0;
            let mut v = _mm512_add_ps(_mm512_loadu_ps(acc.as_ptr().add(r * NT)), bias);
            if g.residual {
                v = _mm512_add_ps(v, _mm512_loadu_ps(out.as_ptr().add(o)));
            }
            if g.relu {
                v = _mm512_max_ps(v, zero);
            }
            _mm512_storeu_ps(out.as_mut_ptr().add(o), v);
            let b: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(v));
            _mm256_storeu_si256(out_b.as_mut_ptr().add(o) as *mut __m256i, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even_and_flushes_denormals() {
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(bf16_value(bf16_bits(-2.5)), -2.5);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to the even one, 1.
        assert_eq!(bf16_bits(1.0 + 1.0 / 256.0), 0x3f80);
        // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: to the even one.
        assert_eq!(bf16_bits(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(bf16_bits(1.0 + 1.5 / 256.0), 0x3f81);
        assert_eq!(bf16_bits(1e-40), 0);
        assert_eq!(bf16_bits(-1e-40), 0x8000);
    }

    #[test]
    fn row_tiles_cover_every_square_once() {
        for n in 3..=8 {
            let side = n + 2;
            let tiles = row_tiles(3, n);
            assert_eq!(tiles.len(), 3 * tiles_per_position(n));
            let mut seen = Vec::new();
            for t in &tiles {
                for r in 0..TILE_ROWS {
                    if t.mask & (1 << r) != 0 {
                        seen.push(t.first + r);
                    }
                }
            }
            let squares: Vec<usize> = (0..3)
                .flat_map(|i| (0..n * n).map(move |sq| i * side * side + (sq / n + 1) * side + sq % n + 1))
                .collect();
            assert_eq!(seen, squares, "{n}x{n}");
        }
    }
}

/// A measurement run by hand, not a check: one 6x6 layer of 32 positions from a
/// cache-line aligned input and from one 48 bytes off, alternating 400 rounds of 20 calls
/// so both see the same neighbours, medians and minima in µs a position:
/// `cargo test --release -p bredon-kernels --lib amx_layer_timing -- --ignored --nocapture`.
#[cfg(test)]
mod timing {
    use super::*;

    #[test]
    #[ignore = "a benchmark: prints timings, run by hand on an AMX machine"]
    fn amx_layer_timing() {
        if !Bf16Kernel::amx_available() {
            eprintln!("NOTE: no AMX here, nothing timed");
            return;
        }
        let (n, c, b) = (6usize, 64usize, 32usize);
        let side = n + 2;
        let k = 9 * c;
        let weights = (0..k * c).map(|i| ((i * 7919 % 1000) as f32 - 500.0) * 1e-3).collect();
        let w = BPacked::new(&Matrix { k, n: c, w: weights, bias: vec![0.1; c] }, c);
        let len = (b * side * side + margin_pixels(n)) * c;
        let mut aligned = Aligned::<u16>::zeroed(len + 32);
        for (i, v) in aligned.iter_mut().enumerate() {
            *v = bf16_bits((i * 31 % 97) as f32 * 0.01);
        }
        let (mut out, mut out_b) = (Aligned::<f32>::zeroed(len), Aligned::<u16>::zeroed(len));
        let tiles = row_tiles(b, n);
        let taps: Vec<isize> = (0..9).map(|t| (t / 3 - 1) * side as isize + (t % 3 - 1)).collect();
        let mut times: [Vec<f64>; 2] = [vec![], vec![]];
        for round in 0..400 {
            for (v, a) in [&aligned[24..24 + len], &aligned[..len]].into_iter().enumerate() {
                let g = Bf16Layer { a, tiles: &tiles, taps: &taps, residual: true, relu: true };
                let t = std::time::Instant::now();
                for _ in 0..20 {
                    gemm_bf16(Bf16Kernel::Amx, &w, &g, &mut out, &mut out_b);
                }
                if round > 0 {
                    times[v].push(t.elapsed().as_secs_f64() / 20.0 / b as f64 * 1e6);
                }
            }
        }
        for (name, t) in ["48 bytes off", "aligned"].iter().zip(&mut times) {
            t.sort_by(f64::total_cmp);
            eprintln!("{name}: median {:.3}, least {:.3} µs a position", t[t.len() / 2], t[0]);
        }
    }
}
