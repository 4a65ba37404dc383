// One layer as a matrix product over gathered rows (Bredon's search-time forward pass on
// a wgpu device; the GPU twin of the CPU fast path's `gemm` in fast.rs):
//
//   out[out_rows[r] * out_stride + j] = epilogue(bias[j]
//       + sum_t sum_c a[(a_rows[r] + taps[t]) * a_stride + a_col + c] * w[(t * seg + c) * n + j])
//
// for rows r < m and columns j < n. A 3x3 convolution over the zero-padded channels-last
// board is 9 taps (pixel offsets of the neighbours); a 1x1 convolution one tap; a dense
// layer over every square's features one tap per square. The epilogue adds the value
// already in `out` (a residual connection, computed in place) and applies ReLU when the
// flags say so.
//
// This file holds the kernels' parameters and bindings; gemm.wgsl (shader arithmetic)
// and gemm_coop.wgsl (cooperative matrices) each add a `main`, and gemm_scalar.wgsl or
// gemm_vec4.wgsl the operand loads.

struct Params {
    m: u32,
    n: u32,
    seg: u32,
    ntaps: u32,
    a_stride: u32,
    out_stride: u32,
    a_col: u32,
    // 1: add the value already in `out`; 2: ReLU.
    flags: u32,
    // Up to 64 tap offsets in pixels, four to a vector.
    taps: array<vec4<i32>, 16>,
}

@group(0) @binding(0) var<uniform> p: Params;
// Bindings 1 (a) and 3 (w), and the functions load_a and load_b that read them, come from
// gemm_scalar.wgsl (any layout) or gemm_vec4.wgsl (K segments, strides and column
// counts that are multiples of 4: one vector load instead of four).
@group(0) @binding(2) var<storage, read> a_rows: array<u32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read> out_rows: array<u32>;

