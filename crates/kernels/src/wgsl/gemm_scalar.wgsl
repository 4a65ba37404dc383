// The matrix kernel's operands as scalars: any K segment, stride and column count
// (prepended to gemm.wgsl).

@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> w: array<f32>;

// a at row pixel `base` + tap offset, K index j of this segment (0 beyond seg).
fn a_at(base: i32, off: i32, j: u32) -> f32 {
    if (j < p.seg) {
        return a[u32(base + off) * p.a_stride + p.a_col + j];
    }
    return 0.0;
}

// K indices j..j + 4 of a row (0 beyond seg).
fn load_a(base: i32, off: i32, j: u32) -> vec4<f32> {
    return vec4<f32>(a_at(base, off, j), a_at(base, off, j + 1u), a_at(base, off, j + 2u), a_at(base, off, j + 3u));
}

// Columns col..col + 4 of the weights' row that starts at `at` (0 beyond n).
fn load_b(at: u32, col: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    for (var e = 0u; e < 4u; e++) {
        if (col + e < p.n) {
            v[e] = w[at + col + e];
        }
    }
    return v;
}
