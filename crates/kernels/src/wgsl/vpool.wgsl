// Bredon's search-time forward pass on a wgpu device: pooling of the value features (the pooled value head).
struct VpoolParams {
    stride: u32,
    col: u32,
    vf: u32,
    area: u32,
    scale: f32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> vp: VpoolParams;
@group(0) @binding(1) var<storage, read> vsrc: array<f32>;
@group(0) @binding(2) var<storage, read_write> vdst: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let i = wid.x;
    for (var ch = t; ch < vp.vf; ch += 64u) {
        var sum = 0.0;
        var most = -3.0e38;
        for (var s = 0u; s < vp.area; s++) {
            let v = vsrc[(i * vp.area + s) * vp.stride + vp.col + ch];
            sum += v;
            most = max(most, v);
        }
        let mean = sum / f32(vp.area);
        let at = i * 3u * vp.vf;
        vdst[at + ch] = mean;
        vdst[at + vp.vf + ch] = mean * vp.scale;
        vdst[at + 2u * vp.vf + ch] = most;
    }
}

