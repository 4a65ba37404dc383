// The matrix kernel in the shader's own arithmetic (gemm_common.wgsl says what it
// computes). `operand` (operand_f32.wgsl or operand_f16.wgsl, prepended) is what each
// operand becomes on its way into workgroup memory: itself, or rounded to half precision
// (the rounding of the cooperative-matrix kernel's operands, for measuring it on any
// device).
//
// Tiling (after the vec4 matrix kernels of WebGPU's ML backends): a workgroup of 256
// threads computes a 128 x 64 block of the output, each thread 8 neighbouring rows x 4
// neighbouring columns. K goes through workgroup memory 16 at a time, both tiles stored as
// vectors of 4 (A along K, B along the columns), so that one vector read from workgroup
// memory feeds 4 or 8 multiply-adds.

const BM: u32 = 128u;
const BN: u32 = 64u;
const BK: u32 = 16u;

// A tile: row r, K quad q at r * 4 + q. B tile: K row k, column quad c at k * 16 + c.
var<workgroup> tile_a: array<vec4<f32>, 512>;
var<workgroup> tile_b: array<vec4<f32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let row0 = wid.x * BM;
    let col0 = wid.y * BN;
    let tx = t % 16u;
    let ty = t / 16u;
    // This thread loads K quad `aq` of tile rows `ar` and `ar + 64` (their pixels looked
    // up once), and K row `bk`, column quad `bq` of the B tile.
    let aq = t % 4u;
    let ar = t / 4u;
    var base = vec2<i32>(-1, -1);
    if (row0 + ar < p.m) {
        base.x = i32(a_rows[row0 + ar]);
    }
    if (row0 + ar + 64u < p.m) {
        base.y = i32(a_rows[row0 + ar + 64u]);
    }
    let bk = t / 16u;
    let bq = t % 16u;
    var acc: array<vec4<f32>, 8>;
    for (var tap = 0u; tap < p.ntaps; tap++) {
        let off = p.taps[tap / 4u][tap % 4u];
        for (var j0 = 0u; j0 < p.seg; j0 += BK) {
            let j = j0 + aq * 4u;
            for (var h = 0u; h < 2u; h++) {
                let rb = base[h];
                var v = vec4<f32>(0.0);
                if (rb >= 0) {
                    v = load_a(rb, off, j);
                }
                tile_a[(ar + 64u * h) * 4u + aq] = operand(v);
            }
            var wv = vec4<f32>(0.0);
            if (j0 + bk < p.seg) {
                wv = load_b((tap * p.seg + j0 + bk) * p.n, col0 + bq * 4u);
            }
            tile_b[bk * 16u + bq] = operand(wv);
            workgroupBarrier();
            for (var q = 0u; q < 4u; q++) {
                let b0 = tile_b[(q * 4u) * 16u + tx];
                let b1 = tile_b[(q * 4u + 1u) * 16u + tx];
                let b2 = tile_b[(q * 4u + 2u) * 16u + tx];
                let b3 = tile_b[(q * 4u + 3u) * 16u + tx];
                for (var i = 0u; i < 8u; i++) {
                    let av = tile_a[(ty * 8u + i) * 4u + q];
                    acc[i] = fma(vec4<f32>(av.x), b0, acc[i]);
                    acc[i] = fma(vec4<f32>(av.y), b1, acc[i]);
                    acc[i] = fma(vec4<f32>(av.z), b2, acc[i]);
                    acc[i] = fma(vec4<f32>(av.w), b3, acc[i]);
                }
            }
            workgroupBarrier();
        }
    }
    for (var i = 0u; i < 8u; i++) {
        let r = row0 + ty * 8u + i;
        if (r < p.m) {
            let o = out_rows[r] * p.out_stride;
            for (var jj = 0u; jj < 4u; jj++) {
                let col = col0 + tx * 4u + jj;
                if (col < p.n) {
                    var v = acc[i][jj] + bias[col];
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
