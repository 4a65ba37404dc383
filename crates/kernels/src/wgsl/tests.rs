//! The WGSL kernels' own tests: shaders compile to SPIR-V, the device's input planes are
//! the host's, and the emulated tensor kernel agrees with single precision.

use super::error::*;
use super::net::*;

use bredon_netform::positions::random_positions;
use bredon_rules::Position;

use crate::arithmetic::Arithmetic;

use wgpu::naga;

/// `source` parsed, validated with every capability and written as SPIR-V 1.6, as
/// wgpu does on a Vulkan device that has the features the kernel enables.
fn spirv(what: &str, source: &str) -> Vec<u32> {
    let module =
        naga::front::wgsl::parse_str(source).unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
    let options = naga::back::spv::Options { lang_version: (1, 6), ..Default::default() };
    naga::back::spv::write_vec(&module, &info, &options, None).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Lavapipe has no cooperative matrices, so the tests that run kernels never compile
/// this one: here naga (wgpu's shader compiler) checks that every trunk kernel is
/// valid WGSL and becomes SPIR-V, the cooperative-matrix one with its matrix loads,
/// products and stores.
#[test]
fn every_trunk_kernel_compiles_to_spirv() {
    for a in Arithmetic::ALL {
        let (source, rows) = a.trunk_kernel();
        let words = spirv(a.name(), &source);
        assert!(words.len() > 100, "{}: {} words of SPIR-V", a.name(), words.len());
        assert_eq!(rows, if a == Arithmetic::Tensor { COOP_TILE_M } else { TILE_M });
    }
    // SPIR-V's opcodes for the cooperative matrices' load, store and product
    // (SPV_KHR_cooperative_matrix: 4457, 4458, 4459); none in the shader-arithmetic kernels.
    let opcodes = |a: Arithmetic| -> std::collections::HashSet<u32> {
        let words = spirv(a.name(), &a.trunk_kernel().0);
        let mut ops = std::collections::HashSet::new();
        let mut at = 5;
        while at < words.len() {
            ops.insert(words[at] & 0xffff);
            at += (words[at] >> 16).max(1) as usize;
        }
        ops
    };
    let coop = opcodes(Arithmetic::Tensor);
    for op in [4457, 4458, 4459] {
        assert!(coop.contains(&op), "the cooperative-matrix kernel has no opcode {op}");
        assert!(!opcodes(Arithmetic::F32).contains(&op));
    }
    spirv("scalar", SCALAR_KERNEL);
}

/// `source` with each `call(&tile[index], stride)` or `call(matrix, &tile[index],
/// stride)` replaced by `make(matrix, tile, index, stride)`.
fn rewrite(source: &str, call: &str, make: impl Fn(Option<&str>, &str, &str, &str) -> String) -> String {
    let (mut out, mut rest) = (String::new(), source);
    while let Some(at) = rest.find(call) {
        out.push_str(&rest[..at]);
        let tail = &rest[at + call.len()..];
        let close = tail.find(')').expect("a closing parenthesis");
        let args = &tail[..close];
        let (matrix, place) = match args.split_once(", &") {
            Some((m, p)) => (Some(m), p),
            None => (None, args.strip_prefix('&').expect("a pointer")),
        };
        let (tile, index) = place.split_once('[').expect("an indexed tile");
        let (index, stride) = index.split_once("], ").expect("a stride");
        out.push_str(&make(matrix, tile, index, stride));
        rest = &tail[close + 1..];
    }
    out + rest
}

/// gemm_coop.wgsl with its cooperative-matrix operations done in the shader's own
/// arithmetic, so that a device without matrix units (lavapipe) runs everything else
/// the tensor kernel does: its staging of both operands' halves through workgroup
/// memory, the tiles' offsets and strides, the three products per tile, the stores of
/// the sums and the epilogue. A matrix operand becomes its place in workgroup memory
/// (which tile, where, the row stride: what `coopLoadT` is given, row-major), an
/// accumulator a slot of 256 sums in workgroup memory of which each of the 32 lanes
/// holds 8, and a product of 16 x 16 tiles each lane's 8 sums of 16 products, in
/// single precision as the matrix units sum.
fn emulated_coop_kernel() -> String {
    let coop: String = include_str!("gemm_coop.wgsl")
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let tile_id = |tile: &str| ["tile_a", "tile_a_lo", "tile_b", "tile_b_lo"].iter().position(|t| *t == tile);
    let mut body = rewrite(&coop, "coopLoadT<coop_mat16x16<f16, A>>(", |_, t, i, s| {
        format!("vec3<u32>({}u, {i}, {s})", tile_id(t).expect("an A tile"))
    });
    body = rewrite(&body, "coopLoadT<coop_mat16x16<f16, B>>(", |_, t, i, s| {
        format!("vec3<u32>({}u, {i}, {s})", tile_id(t).expect("a B tile"))
    });
    body = rewrite(&body, "coopStoreT(", |m, t, i, s| {
        assert_eq!(t, "tile_c");
        format!("emu_store({}, {i}, {s})", m.expect("a matrix"))
    });
    for slot in 0..8 {
        let c = format!("c{}{}", slot / 4, slot % 4);
        let zero = format!("var {c} = coop_mat16x16<f32, C>();");
        assert!(body.contains(&zero), "{zero}");
        body = body.replace(&zero, &format!("var {c} = emu_zero({slot}u);"));
    }
    body = body.replace("coopMultiplyAdd(", "emu_mma(");
    let entry = "@builtin(local_invocation_index) t: u32) {";
    assert!(body.contains(entry));
    body = body.replace(entry, &format!("{entry}\n    emu_lane = t;"));
    assert!(!body.contains("coop"), "an operation left unemulated:\n{body}");
    let emulation = r"
var<private> emu_lane: u32;
var<workgroup> emu_acc: array<f32, 2048>;

fn emu_at(tile: u32, i: u32) -> f32 {
switch tile {
    case 0u: { return f32(tile_a[i]); }
    case 1u: { return f32(tile_a_lo[i]); }
    case 2u: { return f32(tile_b[i]); }
    default: { return f32(tile_b_lo[i]); }
}
}

fn emu_zero(c: u32) -> u32 {
for (var e = 0u; e < 8u; e++) {
    emu_acc[c * 256u + emu_lane * 8u + e] = 0.0;
}
return c;
}

fn emu_mma(a: vec3<u32>, b: vec3<u32>, c: u32) -> u32 {
for (var e = 0u; e < 8u; e++) {
    let i = emu_lane * 8u + e;
    let r = i / 16u;
    let col = i % 16u;
    var s = 0.0;
    for (var k = 0u; k < 16u; k++) {
        s += emu_at(a.x, a.y + r * a.z + k) * emu_at(b.x, b.y + k * b.z + col);
    }
    emu_acc[c * 256u + i] += s;
}
return c;
}

fn emu_store(c: u32, at: u32, stride: u32) {
for (var e = 0u; e < 8u; e++) {
    let i = emu_lane * 8u + e;
    tile_c[at + (i / 16u) * stride + i % 16u] = emu_acc[c * 256u + i];
}
}
";
    ["enable f16;\n", include_str!("gemm_vec4.wgsl"), include_str!("gemm_common.wgsl"), &body, emulation].concat()
}

/// The input planes the expansion kernel writes on the device from the compact form
/// are `bredon_netform::encoding::encode`'s on the host to the bit, on the padded board with
/// a zero border, for the shipped networks of both input versions, in a batch that
/// reuses a set of buffers written by a larger one.
#[test]
fn the_planes_expanded_on_the_device_are_the_hosts() {
    use bredon_netform::encoding::{encode, input_len};
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped");
    let mut versions = std::collections::BTreeSet::new();
    for (size, name) in [(4, ""), (5, ""), (6, ""), (4, "-v1"), (6, "-v1")] {
        let (model, _) = bredon_nn::load_exported(&shipped.join(format!("{size}x{size}{name}.bredon"))).unwrap();
        let adapter = adapter_named(None).unwrap_or_else(|e| panic!("{e}"));
        let net = WgslNet::new(&model.fold(size), &adapter).unwrap_or_else(|e| panic!("{e}"));
        let s = net.shape;
        versions.insert(s.input_version);
        let mut positions = random_positions(size, 70, 90 + size as u64);
        if size == 5 {
            // A stack taller than plane 18 tells apart, a capstone on top, black to move.
            positions.push(bredon_rules::notation::parse_tps("1212121212121C,x4/x5/x5/x5/x5 2 30").unwrap());
        }
        for batch in [positions.len(), 9] {
            let chunk: Vec<&Position> = positions[..batch].iter().collect();
            let ticket = net.launch(&chunk, None).unwrap();
            let floats = batch * s.padded * s.planes;
            let staging = net.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("planes read back"),
                size: (floats * 4) as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let x = ticket.set.as_ref().expect("a set of buffers").act(Act::X);
            let mut encoder = net.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            encoder.copy_buffer_to_buffer(x, 0, &staging, 0, (floats * 4) as u64);
            let submission = net.queue.submit([encoder.finish()]);
            staging.slice(..).map_async(wgpu::MapMode::Read, |_| {});
            net.wait(submission).unwrap();
            let got: Vec<f32> = bytemuck::cast_slice(&staging.slice(..).get_mapped_range().unwrap()).to_vec();
            drop(ticket);
            let mut planes = vec![0.0; input_len(s.input_version, size)];
            for (i, pos) in chunk.iter().enumerate() {
                encode(pos, s.input_version, &mut planes);
                for pix in 0..s.padded {
                    let (r, c) = (pix / (size + 2), pix % (size + 2));
                    let inside = (1..=size).contains(&r) && (1..=size).contains(&c);
                    for p in 0..s.planes {
                        let want = if inside { planes[p * s.area + (r - 1) * size + c - 1] } else { 0.0 };
                        let have = got[(i * s.padded + pix) * s.planes + p];
                        assert_eq!(
                            have.to_bits(),
                            want.to_bits(),
                            "{size}x{size} v{}, position {i}, plane {p}, pixel ({r}, {c}): {have} vs {want}",
                            s.input_version
                        );
                    }
                }
            }
        }
    }
    assert_eq!(versions.len(), 2, "the shipped networks have both input versions: {versions:?}");
}

/// The tensor kernel with its matrix operations emulated ([`emulated_coop_kernel`])
/// gives the single-precision kernels' logits, values, draws and margins on the
/// shipped 6x6 and 4x4 networks to within the pairs' own rounding, in batches that end
/// inside a workgroup's 32 rows and across many: what is left for a device with matrix units to show is
/// only that its `coopLoadT`, `coopMultiplyAdd` and `coopStoreT` do what the
/// extension says (`bench nn --arithmetic tensor --compare-cpu`, scripts/gpu-check.sh).
#[test]
fn the_tensor_kernel_with_its_matrix_operations_emulated_agrees_with_f32() {
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped");
    let source = emulated_coop_kernel();
    spirv("emulated tensor kernel", &source);
    // Rows are positions x squares, in tiles of COOP_TILE_M (32): 6x6 batches of 1 and 7
    // end 4 and 28 rows into a tile, 4x4 batches of 3 and 4 end half-way and on an edge;
    // every batch spans more than one tile (6x6's 7 spans eight). Lavapipe runs the
    // emulation at about a third of a second a tile, so the batches are no larger than
    // that needs.
    for (size, batches) in [(6, [1usize, 7]), (4, [3, 4])] {
        let (model, _) = bredon_nn::load_exported(&shipped.join(format!("{size}x{size}.bredon"))).unwrap();
        let adapter = adapter_named(None).unwrap_or_else(|e| panic!("{e}"));
        let folded = model.fold(size);
        let f32s = WgslNet::with_arithmetic(&folded, &adapter, Arithmetic::F32).unwrap();
        let emulated = match Arithmetic::F16Pairs.check(&adapter) {
            Ok(()) => {
                WgslNet::with_trunk_kernel(&folded, &adapter, Arithmetic::F16Pairs, (source.clone(), COOP_TILE_M))
                    .unwrap_or_else(|e| panic!("{e}"))
            }
            Err(e) => panic!("the emulation needs shader-f16 ({e}); CI's lavapipe has it"),
        };
        let positions = random_positions(size, 64, 70 + size as u64);
        let mut at = 0;
        let mut worst = [0.0f32; 4];
        for b in batches {
            let chunk: Vec<&Position> = positions[at..at + b].iter().collect();
            at += b;
            let (got, want) = (emulated.logits(&chunk).unwrap(), f32s.logits(&chunk).unwrap());
            let far = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
            for (g, w) in got.policy.iter().zip(&want.policy) {
                assert_eq!(g.len(), w.len());
                worst[0] = worst[0].max(far(g, w));
            }
            worst[1] = worst[1].max(far(&got.values, &want.values));
            worst[2] = worst[2].max(far(got.draws.as_deref().unwrap_or(&[]), want.draws.as_deref().unwrap_or(&[])));
            worst[3] = worst[3].max(far(got.margins.as_deref().unwrap_or(&[]), want.margins.as_deref().unwrap_or(&[])));
            assert_eq!((got.draws.is_some(), got.margins.is_some()), (want.draws.is_some(), want.margins.is_some()));
        }
        eprintln!(
            "{size}x{size}, emulated tensor kernel against f32: logits {:.1e}, values {:.1e}, draws {:.1e}, margins {:.1e}",
            worst[0], worst[1], worst[2], worst[3]
        );
        // The pairs in the shader's arithmetic (`F16Pairs`) are about 2e-5 from single
        // precision on these networks; a tile read from the wrong place, even only a
        // remainder's, moves the logits by 3e-3 or more. 1e-4 tells the two apart.
        assert!(worst.iter().all(|w| w.is_finite() && *w <= 1e-4), "{size}x{size}: {worst:?}");
        let probe: Vec<&Position> = positions[..5].iter().collect();
        emulated.agrees_with(&f32s, &probe).unwrap();
    }
}

#[test]
fn arithmetic_names_parse_back() {
    for a in Arithmetic::ALL {
        assert_eq!(a.name().parse::<Arithmetic>(), Ok(a));
    }
    assert_eq!(" Tensor ".parse::<Arithmetic>(), Ok(Arithmetic::Tensor));
    let e = "bf16".parse::<Arithmetic>().unwrap_err();
    assert!(e.to_string().contains("\"bf16\"") && e.to_string().contains("f32, f16-pairs or tensor"), "{e}");
}
