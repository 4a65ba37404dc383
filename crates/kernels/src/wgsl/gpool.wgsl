// Bredon's search-time forward pass on a wgpu device: global pooling in a block (KataGo): y[.., :c] += fc(pool(y[.., :g])).
struct GpoolParams {
    c: u32,
    g: u32,
    area: u32,
    scale: f32,
}

@group(0) @binding(0) var<uniform> gp: GpoolParams;
@group(0) @binding(1) var<storage, read_write> gy: array<f32>;
@group(0) @binding(2) var<storage, read> gpix: array<u32>;
@group(0) @binding(3) var<storage, read> gw: array<f32>;
@group(0) @binding(4) var<storage, read> gbias: array<f32>;

var<workgroup> pooled: array<f32, 192>;

// One workgroup per position: the mean, the scaled mean and the maximum of the first g
// channels over the board's squares, then one bias per channel added on every square.
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let first = wid.x * gp.area;
    for (var ch = t; ch < gp.g; ch += 64u) {
        var sum = 0.0;
        var most = -3.0e38;
        for (var s = 0u; s < gp.area; s++) {
            let v = gy[gpix[first + s] * gp.c + ch];
            sum += v;
            most = max(most, v);
        }
        let mean = sum / f32(gp.area);
        pooled[ch] = mean;
        pooled[gp.g + ch] = mean * gp.scale;
        pooled[2u * gp.g + ch] = most;
    }
    workgroupBarrier();
    for (var o = t; o < gp.c; o += 64u) {
        var b = gbias[o];
        for (var k = 0u; k < 3u * gp.g; k++) {
            b += pooled[k] * gw[k * gp.c + o];
        }
        for (var s = 0u; s < gp.area; s++) {
            let at = gpix[first + s] * gp.c + o;
            gy[at] = gy[at] + b;
        }
    }
}

