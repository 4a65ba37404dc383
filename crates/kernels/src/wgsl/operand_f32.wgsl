// The matrix kernel's operands as they are (prepended to gemm.wgsl).
fn operand(v: vec4<f32>) -> vec4<f32> {
    return v;
}
