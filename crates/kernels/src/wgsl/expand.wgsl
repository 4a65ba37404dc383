// Bredon's search-time forward pass on a wgpu device: the input planes, channels-last on
// the zero-padded board, from each position's compact form (crate::encoding::encode_compact:
// a u32 per square and the eight constant planes' values). One workgroup a position.
struct ExpandParams {
    n: u32,
    planes: u32,
    pad0: u32,
    pad1: u32,
    // Plane 18's value by the capped height (0-10), the reach planes' by the group's
    // extent (16-24): computed on the host by encode's own expressions.
    table: array<vec4<f32>, 8>,
}

@group(0) @binding(0) var<uniform> ep: ExpandParams;
@group(0) @binding(1) var<storage, read> squares: array<u32>;
@group(0) @binding(2) var<storage, read> per_position: array<f32>;
@group(0) @binding(3) var<storage, read_write> x: array<f32>;

fn table_at(k: u32) -> f32 {
    return ep.table[k / 4u][k % 4u];
}

fn plane(code: u32, p: u32, i: u32) -> f32 {
    if p < 6u {
        return select(0.0, 1.0, (code & 7u) == p + 1u);
    }
    if p < 18u {
        let d = (p - 6u) / 2u;
        let under = d < ((code >> 9u) & 7u);
        return select(0.0, 1.0, under && ((code >> (3u + d)) & 1u) == (p - 6u) % 2u);
    }
    if p == 18u {
        return table_at((code >> 12u) & 15u);
    }
    if p < 27u {
        return per_position[i * 8u + p - 19u];
    }
    if p < 29u {
        return select(0.0, 1.0, ((code >> (16u + p - 27u)) & 1u) == 1u);
    }
    return table_at(16u + ((code >> (18u + 4u * (p - 29u))) & 15u));
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let i = wid.x;
    let side = ep.n + 2u;
    let padded = side * side;
    for (var pix = t; pix < padded; pix += 64u) {
        let at = (i * padded + pix) * ep.planes;
        let r = pix / side;
        let c = pix % side;
        if r == 0u || c == 0u || r > ep.n || c > ep.n {
            for (var p = 0u; p < ep.planes; p++) {
                x[at + p] = 0.0;
            }
            continue;
        }
        let code = squares[i * ep.n * ep.n + (r - 1u) * ep.n + c - 1u];
        for (var p = 0u; p < ep.planes; p++) {
            x[at + p] = plane(code, p, i);
        }
    }
}
