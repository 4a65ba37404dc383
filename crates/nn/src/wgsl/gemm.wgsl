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
// Tiling: a workgroup of 256 threads computes a 128 x 64 block of the output; each thread
// 8 rows x 4 columns (rows ty + 16 i, columns tx + 16 j, so that neighbouring threads read
// neighbouring columns). The K dimension goes through workgroup memory 16 at a time.

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
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> a_rows: array<u32>;
@group(0) @binding(3) var<storage, read> w: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read> out_rows: array<u32>;

const BM: u32 = 128u;
const BN: u32 = 64u;
const BK: u32 = 16u;
// Row stride of the A tile in workgroup memory (16 + 1: no bank conflicts on the stores).
const AS: u32 = 17u;

var<workgroup> tile_a: array<f32, 2176>; // BM * AS
var<workgroup> tile_b: array<f32, 1024>; // BK * BN

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let row0 = wid.x * BM;
    let col0 = wid.y * BN;
    let tx = t % 16u;
    let ty = t / 16u;
    // The A tile is loaded 16 columns wide: this thread loads column `akk` of rows
    // `ar + 16 q`; their pixels are looked up once.
    let akk = t % 16u;
    let ar = t / 16u;
    var base: array<i32, 8>;
    for (var q = 0u; q < 8u; q++) {
        let r = row0 + ar + 16u * q;
        base[q] = -1;
        if (r < p.m) {
            base[q] = i32(a_rows[r]);
        }
    }
    // The B tile: column `bcol`, rows `bk + 4 q`.
    let bcol = t % 64u;
    let bk = t / 64u;
    var acc: array<vec4<f32>, 8>;
    for (var tap = 0u; tap < p.ntaps; tap++) {
        let off = p.taps[tap / 4u][tap % 4u];
        for (var j0 = 0u; j0 < p.seg; j0 += BK) {
            let j = j0 + akk;
            for (var q = 0u; q < 8u; q++) {
                var v = 0.0;
                if (base[q] >= 0 && j < p.seg) {
                    v = a[u32(base[q] + off) * p.a_stride + p.a_col + j];
                }
                tile_a[(ar + 16u * q) * AS + akk] = v;
            }
            for (var q = 0u; q < 4u; q++) {
                let kk = bk + 4u * q;
                let col = col0 + bcol;
                var v = 0.0;
                if (j0 + kk < p.seg && col < p.n) {
                    v = w[(tap * p.seg + j0 + kk) * p.n + col];
                }
                tile_b[kk * BN + bcol] = v;
            }
            workgroupBarrier();
            for (var kk = 0u; kk < BK; kk++) {
                let b = vec4<f32>(
                    tile_b[kk * BN + tx],
                    tile_b[kk * BN + tx + 16u],
                    tile_b[kk * BN + tx + 32u],
                    tile_b[kk * BN + tx + 48u],
                );
                for (var i = 0u; i < 8u; i++) {
                    acc[i] += tile_a[(ty + 16u * i) * AS + kk] * b;
                }
            }
            workgroupBarrier();
        }
    }
    for (var i = 0u; i < 8u; i++) {
        let r = row0 + ty + 16u * i;
        if (r < p.m) {
            let o = out_rows[r] * p.out_stride;
            for (var jj = 0u; jj < 4u; jj++) {
                let col = col0 + tx + 16u * jj;
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
