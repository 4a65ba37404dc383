enable f16;
// The matrix kernel's operands as the cooperative-matrix kernel (gemm_coop.wgsl) holds
// them, a pair of half-precision numbers each (the value rounded to half precision, and
// what that rounding left, rounded too), summed again in single precision (prepended to
// gemm.wgsl; needs the adapter's `shader-f16`). The tensor kernel multiplies the pairs
// out less their two remainders' product, about 2^-22 of the value's: so this kernel's
// outputs, which any device with half-precision shaders computes (lavapipe in CI), are
// the tensor kernel's up to that and the order of the sums.
fn operand(v: vec4<f32>) -> vec4<f32> {
    let hi = vec4<f16>(v);
    return vec4<f32>(hi) + vec4<f32>(vec4<f16>(v - vec4<f32>(hi)));
}
