// The matrix kernel's operands as vectors of 4, for layers whose K segment, input stride,
// input column and column count are all multiples of 4 (the trunk's convolutions): one
// load instead of four (prepended to gemm.wgsl).

@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> w: array<vec4<f32>>;

// K indices j..j + 4 of a row (0 beyond seg; j and seg are multiples of 4).
fn load_a(base: i32, off: i32, j: u32) -> vec4<f32> {
    if (j < p.seg) {
        return a[(u32(base + off) * p.a_stride + p.a_col + j) >> 2u];
    }
    return vec4<f32>(0.0);
}

// Columns col..col + 4 of the weights' row that starts at `at` (0 beyond n; at, col and
// n are multiples of 4).
fn load_b(at: u32, col: u32) -> vec4<f32> {
    if (col < p.n) {
        return w[(at + col) >> 2u];
    }
    return vec4<f32>(0.0);
}
