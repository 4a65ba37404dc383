// Bredon's search-time forward pass on a wgpu device: each position's priors over its legal moves (or its raw logits).
struct GatherParams {
    b: u32,
    block: u32,
    softmax: u32,
    out_at: u32,
}

@group(0) @binding(0) var<uniform> sp: GatherParams;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> offs: array<u32>;
// The moves' offsets, two to a word (the low half first): every block of logits up to
// 8x8's 65,472 fits in 16 bits.
@group(0) @binding(3) var<storage, read> idx: array<u32>;
@group(0) @binding(4) var<storage, read_write> sout: array<f32>;

var<workgroup> red: array<f32, 64>;

fn move_at(k: u32) -> u32 {
    return (idx[k >> 1u] >> ((k & 1u) * 16u)) & 0xffffu;
}

fn reduce_max(t: u32) -> f32 {
    for (var s = 32u; s > 0u; s >>= 1u) {
        if (t < s) {
            red[t] = max(red[t], red[t + s]);
        }
        workgroupBarrier();
    }
    return red[0];
}

fn reduce_sum(t: u32) -> f32 {
    for (var s = 32u; s > 0u; s >>= 1u) {
        if (t < s) {
            red[t] = red[t] + red[t + s];
        }
        workgroupBarrier();
    }
    return red[0];
}

// One workgroup per position: its moves are move_at(offs[i]..offs[i + 1]) (offsets into the
// position's block of logits); out[out_at + k] is the softmax over them, or the logit.
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let i = wid.x;
    let lo = offs[i];
    let hi = offs[i + 1u];
    let base = i * sp.block;
    if (sp.softmax == 0u) {
        for (var k = lo + t; k < hi; k += 64u) {
            sout[sp.out_at + k] = logits[base + move_at(k)];
        }
        return;
    }
    var most = -3.0e38;
    for (var k = lo + t; k < hi; k += 64u) {
        most = max(most, logits[base + move_at(k)]);
    }
    red[t] = most;
    workgroupBarrier();
    let top = reduce_max(t);
    workgroupBarrier();
    var sum = 0.0;
    for (var k = lo + t; k < hi; k += 64u) {
        sum += exp(logits[base + move_at(k)] - top);
    }
    red[t] = sum;
    workgroupBarrier();
    let total = reduce_sum(t);
    for (var k = lo + t; k < hi; k += 64u) {
        sout[sp.out_at + k] = exp(logits[base + move_at(k)] - top) / total;
    }
}
