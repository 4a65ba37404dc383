// The matrix kernel on cooperative matrices (the tensor cores of NVIDIA's GPUs, the
// matrix cores of others; `VK_KHR_cooperative_matrix` through wgpu), for the trunk's
// layers: gemm_common.wgsl says what it computes, gemm_vec4.wgsl (prepended, after the
// `enable` lines) loads the operands.
//
// The matrix units multiply half-precision numbers and sum in single precision. Operands
// rounded to half precision (11 significant bits) put the shipped 6x6 network's logits
// 8e-3 from single precision's, above the 1e-3 its outputs are held to; so each operand
// x goes in as a pair, hi = half(x) and lo = half(x - hi), and each product of tiles is
// three, a_hi·b_hi + a_hi·b_lo + a_lo·b_hi (a_lo·b_lo, about 2^-22 of the product, is
// left out): single precision's result to within its own rounding, for three times the
// matrix units' work, which they have to spare. operand_f16.wgsl gives the shader-
// arithmetic kernel the same operands, so that any device (lavapipe in CI) measures
// what they do to the network's outputs. Bias, residual and ReLU are applied in single
// precision as in gemm.wgsl.
//
// A workgroup is 32 threads (one subgroup: the host uses this kernel only where
// subgroups have exactly 32 lanes) and computes a 32 x 64 block of the output as 2 x 4
// matrices of 16 x 16. K goes through workgroup memory 32 at a time: the threads gather
// the block's 32 rows (eight threads a row, each row's pixel looked up once) and the
// weights' 32 x 64 tile (sixteen threads a row), both as pairs of halves; then each
// 16-deep half of the tile is three products of 2 loads of A and 4 of B, 24
// multiply-adds in all (unrolled: naga requires cooperative operations in uniform
// control flow, and takes a branch on a loop counter for non-uniform). The tiles take
// 20 KiB of workgroup memory (the host checks the adapter's limit). At the end the
// accumulators go through workgroup memory so that the epilogue writes whole rows, one
// column a thread.

const BM: u32 = 32u;
const BN: u32 = 64u;
const BK: u32 = 32u;

// A tile: row r, K index k at r * BK + k. B tile: K row k, column c at k * BN + c.
// C: row r, column c at r * BN + c.
var<workgroup> tile_a: array<f16, 1024>;
var<workgroup> tile_a_lo: array<f16, 1024>;
var<workgroup> tile_b: array<f16, 2048>;
var<workgroup> tile_b_lo: array<f16, 2048>;
var<workgroup> tile_c: array<f32, 2048>;

@compute @workgroup_size(32)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let row0 = wid.x * BM;
    let col0 = wid.y * BN;
    // This thread stages K quad `aq` of the block's rows `ar + 4 i` (i < 8), their pixels
    // looked up once: eight neighbouring threads read one row's 32 consecutive K values.
    let aq = t % 8u;
    let ar = t / 8u;
    var base: array<i32, 8>;
    for (var i = 0u; i < 8u; i++) {
        base[i] = -1;
        if (row0 + ar + 4u * i < p.m) {
            base[i] = i32(a_rows[row0 + ar + 4u * i]);
        }
    }
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    for (var tap = 0u; tap < p.ntaps; tap++) {
        let off = p.taps[tap / 4u][tap % 4u];
        for (var j0 = 0u; j0 < p.seg; j0 += BK) {
            for (var i = 0u; i < 8u; i++) {
                var v = vec4<f32>(0.0);
                if (base[i] >= 0) {
                    v = load_a(base[i], off, j0 + aq * 4u);
                }
                let h = vec4<f16>(v);
                let l = vec4<f16>(v - vec4<f32>(h));
                let at = (ar + 4u * i) * BK + aq * 4u;
                for (var e = 0u; e < 4u; e++) {
                    tile_a[at + e] = h[e];
                    tile_a_lo[at + e] = l[e];
                }
            }
            for (var i = 0u; i < 16u; i++) {
                // 512 column quads of the B tile, 16 a thread: K row k, quad c.
                let e = i * 32u + t;
                let k = e / 16u;
                let c = e % 16u;
                var wv = vec4<f32>(0.0);
                if (j0 + k < p.seg) {
                    wv = load_b((tap * p.seg + j0 + k) * p.n, col0 + c * 4u);
                }
                let h = vec4<f16>(wv);
                let l = vec4<f16>(wv - vec4<f32>(h));
                let at = k * BN + c * 4u;
                for (var e = 0u; e < 4u; e++) {
                    tile_b[at + e] = h[e];
                    tile_b_lo[at + e] = l[e];
                }
            }
            workgroupBarrier();
            for (var kk = 0u; kk < BK; kk += 16u) {
                // a_hi·b_hi
                {
                    let a0 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[kk], BK);
                    let a1 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[16u * BK + kk], BK);
                    let b0 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[kk * BN], BN);
                    let b1 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[kk * BN + 16u], BN);
                    let b2 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[kk * BN + 32u], BN);
                    let b3 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[kk * BN + 48u], BN);
                    c00 = coopMultiplyAdd(a0, b0, c00);
                    c01 = coopMultiplyAdd(a0, b1, c01);
                    c02 = coopMultiplyAdd(a0, b2, c02);
                    c03 = coopMultiplyAdd(a0, b3, c03);
                    c10 = coopMultiplyAdd(a1, b0, c10);
                    c11 = coopMultiplyAdd(a1, b1, c11);
                    c12 = coopMultiplyAdd(a1, b2, c12);
                    c13 = coopMultiplyAdd(a1, b3, c13);
                }
                // a_hi·b_lo
                {
                    let a0 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[kk], BK);
                    let a1 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[16u * BK + kk], BK);
                    let b0 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b_lo[kk * BN], BN);
                    let b1 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b_lo[kk * BN + 16u], BN);
                    let b2 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b_lo[kk * BN + 32u], BN);
                    let b3 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b_lo[kk * BN + 48u], BN);
                    c00 = coopMultiplyAdd(a0, b0, c00);
                    c01 = coopMultiplyAdd(a0, b1, c01);
                    c02 = coopMultiplyAdd(a0, b2, c02);
                    c03 = coopMultiplyAdd(a0, b3, c03);
                    c10 = coopMultiplyAdd(a1, b0, c10);
                    c11 = coopMultiplyAdd(a1, b1, c11);
                    c12 = coopMultiplyAdd(a1, b2, c12);
                    c13 = coopMultiplyAdd(a1, b3, c13);
                }
                // a_lo·b_hi
                {
                    let a0 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a_lo[kk], BK);
                    let a1 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a_lo[16u * BK + kk], BK);
                    let b0 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[kk * BN], BN);
                    let b1 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[kk * BN + 16u], BN);
                    let b2 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[kk * BN + 32u], BN);
                    let b3 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[kk * BN + 48u], BN);
                    c00 = coopMultiplyAdd(a0, b0, c00);
                    c01 = coopMultiplyAdd(a0, b1, c01);
                    c02 = coopMultiplyAdd(a0, b2, c02);
                    c03 = coopMultiplyAdd(a0, b3, c03);
                    c10 = coopMultiplyAdd(a1, b0, c10);
                    c11 = coopMultiplyAdd(a1, b1, c11);
                    c12 = coopMultiplyAdd(a1, b2, c12);
                    c13 = coopMultiplyAdd(a1, b3, c13);
                }
            }
            workgroupBarrier();
        }
    }
    coopStoreT(c00, &tile_c[0u], BN);
    coopStoreT(c01, &tile_c[16u], BN);
    coopStoreT(c02, &tile_c[32u], BN);
    coopStoreT(c03, &tile_c[48u], BN);
    coopStoreT(c10, &tile_c[16u * BN], BN);
    coopStoreT(c11, &tile_c[16u * BN + 16u], BN);
    coopStoreT(c12, &tile_c[16u * BN + 32u], BN);
    coopStoreT(c13, &tile_c[16u * BN + 48u], BN);
    workgroupBarrier();
    for (var r = 0u; r < BM; r++) {
        let row = row0 + r;
        if (row < p.m) {
            let o = out_rows[row] * p.out_stride;
            for (var h = 0u; h < 2u; h++) {
                let col = col0 + h * 32u + t;
                if (col < p.n) {
                    var v = tile_c[r * BN + h * 32u + t] + bias[col];
                    if ((p.flags & 1u) != 0u) {
                        v += out[o + col];
                    }
                    if ((p.flags & 2u) != 0u) {
                        v = max(v, 0.0);
                    }
                    out[o + col] = v;
                }
            }
        }
    }
}
