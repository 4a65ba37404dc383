// Bredon's search-time forward pass on a wgpu device: the value head's last layer: value, draw probability, flat margin.
struct ValueParams {
    b: u32,
    hidden: u32,
    outs: u32,
    has_margin: u32,
    area: f32,
    margin_bias: f32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> op: ValueParams;
@group(0) @binding(1) var<storage, read> hid: array<f32>;
@group(0) @binding(2) var<storage, read> w2: array<f32>;
@group(0) @binding(3) var<storage, read> b2: array<f32>;
@group(0) @binding(4) var<storage, read> wm: array<f32>;
@group(0) @binding(5) var<storage, read_write> vout: array<f32>;

// One thread per position; writes value, draw and margin at i, b + i and 2 b + i.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= op.b) {
        return;
    }
    var z = vec3<f32>(0.0, 0.0, 0.0);
    var m = op.margin_bias;
    for (var j = 0u; j < op.hidden; j++) {
        let h = hid[i * op.hidden + j];
        for (var k = 0u; k < op.outs; k++) {
            z[k] += h * w2[j * op.outs + k];
        }
        if (op.has_margin != 0u) {
            m += h * wm[j];
        }
    }
    for (var k = 0u; k < op.outs; k++) {
        z[k] += b2[k];
    }
    var v = 0.0;
    var d = 0.0;
    if (op.outs == 3u) {
        // Win/draw/loss logits: P(win) - P(loss), a softmax shifted by the maximum.
        let top = max(z.x, max(z.y, z.z));
        let e = exp(z - vec3<f32>(top));
        let sum = e.x + e.y + e.z;
        v = (e.x - e.z) / sum;
        d = e.y / sum;
    } else {
        v = tanh(z.x);
    }
    vout[i] = v;
    vout[op.b + i] = d;
    // The head predicts the margin / N²; the output is in flats.
    vout[2u * op.b + i] = select(0.0, m * op.area, op.has_margin != 0u);
}

