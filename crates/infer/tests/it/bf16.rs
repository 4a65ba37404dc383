//! The fast path's residual blocks in bfloat16 on the AMX tiles (`Precision::Bf16`): the
//! AMX kernel computes what the portable one does (to f32 rounding: the tiles sum the
//! same products in their own order), and both stay close to single precision on the
//! shipped networks.

use crate::common::{self, fast_outputs, random_positions};
use bredon_infer::Agreement;
use bredon_kernels::Precision;
use bredon_kernels::fast::{FastNet, Isa};
use bredon_nn::load_exported;
use bredon_rules::Position;

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// The AMX kernel and the portable one agree to f32 rounding, for a network with global
/// pooling (whose pooled biases go through the second convolution's f32 weights) and one
/// without, with channels that fill the tiles' 32 inputs (64) and ones that do not (48),
/// at batch sizes whose row tiles pair evenly and oddly.
#[test]
fn the_amx_kernel_computes_what_the_portable_one_does() {
    for (name, folded, positions) in common::low_precision_nets(48, 64) {
        // The single-precision layers (input, heads) on the portable kernels in both, so
        // that only the bf16 kernel differs.
        let portable = FastNet::with_precision(&folded, Isa::Portable, Precision::Bf16).with_portable_low_kernel();
        assert_eq!((portable.precision(), portable.units()), (Precision::Bf16, "portable"));
        let f32_net = FastNet::with_precision(&folded, Isa::detect(), Precision::F32);
        let (pl, ps) = fast_outputs(&portable, &positions);
        let (fl, fs) = fast_outputs(&f32_net, &positions);
        // Rounded, not equal to single precision, but close (a small random net).
        let dv = max_diff(&ps.values, &fs.values);
        assert!(ps.values != fs.values && dv < 0.05, "{}: values differ by {dv}", name);
        assert!(pl != fl && max_diff(&pl, &fl) < 0.5, "{}: logits differ by {}", name, max_diff(&pl, &fl));
        if !common::native_or_say_so(Precision::Bf16, "the_amx_kernel_computes_what_the_portable_one_does") {
            continue;
        }
        let amx = FastNet::with_precision(&folded, Isa::Portable, Precision::Bf16);
        assert_eq!((amx.precision(), amx.units()), (Precision::Bf16, "amx"));
        for batch in [1, 2, 3, 16, 70] {
            for chunk in positions.chunks(batch).take(3) {
                let (a, b) = (fast_outputs(&amx, chunk), fast_outputs(&portable, chunk));
                // The same bf16 products summed in another order: a few f32 roundings
                // of each layer's sums, carried through the blocks (an inner activation
                // that lands on the other side of a bf16 rounding step moves by 2^-8 of
                // itself), far inside the distance to single precision.
                let (dl, dv) = (max_diff(&a.0, &b.0), max_diff(&a.1.values, &b.1.values));
                assert!(dl < 2e-2 && dv < 2e-3, "{} batch {batch}: logits {dl}, values {dv}", name);
                assert!(max_diff(&a.1.draws, &b.1.draws) < 2e-3, "{} batch {batch}: draws", name);
                assert!(max_diff(&a.1.margins, &b.1.margins) < 5e-2, "{} batch {batch}: margins", name);
            }
        }
        // A position's outputs do not depend on the rest of its batch (row tiles of
        // different positions share a pass over the weights, never a sum), nor on which
        // of the batch's cache-sized turns it falls in (the last one's is the last turn).
        let all = fast_outputs(&amx, &positions);
        for k in [5, positions.len() / 2, positions.len() - 1] {
            let one = fast_outputs(&amx, &positions[k..k + 1]);
            assert_eq!(one.1.values[0], all.1.values[k], "{} position {k} of {}", name, positions.len());
        }
    }
}

/// How far bf16 outputs are from single precision's over `positions`.
fn agreement(model: &bredon_nn::TakNet, size: usize, positions: &[Position], portable: bool) -> Agreement {
    let folded = model.fold(size);
    let exact = FastNet::with_precision(&folded, Isa::detect(), Precision::F32);
    let mut bf16 = FastNet::with_precision(&folded, Isa::detect(), Precision::Bf16);
    if portable {
        bf16 = bf16.with_portable_low_kernel();
    }
    assert_eq!(bf16.precision(), Precision::Bf16);
    bredon_infer::precision::agreement(&exact, &bf16, positions)
}

/// On the shipped 4x4, 5x5, 6x6, 7x7 and 8x8 networks, over the reference games' positions (5x5)
/// and random games' (every size), and on the 6x6 network carried to 3x3, 7x7 and 8x8 and
/// the 7x7 one carried to 8x8 (as `bredon tei` played that size before its own model):
/// value within 0.02 at the 99th percentile, the same most likely move in at least 98 %
/// of positions, and a mean policy KL divergence of at most 0.01 (issue 66's bars).
#[test]
fn bf16_agrees_with_single_precision_on_the_shipped_networks() {
    let native = common::native_or_say_so(Precision::Bf16, "bf16_agrees_with_single_precision_on_the_shipped_networks");
    // The portable kernel is slow: fewer positions without AMX.
    let count = |n: usize| if native { n } else { n / 10 };
    let shipped = common::shipped_dir();
    let mut found = Vec::new();
    for name in ["4x4", "5x5", "6x6", "7x7", "8x8"] {
        let (model, meta) = load_exported(&shipped.join(format!("{name}.bredon"))).unwrap();
        let mut positions = random_positions(meta.size, count(2000), 66);
        if meta.size == 5 {
            positions.extend(common::real_positions().into_iter().step_by(if native { 1 } else { 10 }));
        }
        let positions = common::distinct(positions);
        let a = agreement(&model, meta.size, &positions, !native);
        eprintln!("{name} bf16 ({}) vs f32: {a:?}", if native { "amx" } else { "portable" });
        found.push((name.to_string(), a));
    }
    for (from, model, size) in common::carried_shipped() {
        let positions = common::distinct(random_positions(size, count(400), 67));
        let a = agreement(&model, size, &positions, !native);
        eprintln!("{from} carried to {size}x{size} bf16 vs f32: {a:?}");
        found.push((format!("{from} on {size}x{size}"), a));
    }
    for (name, a) in found {
        assert!(a.value_p99 <= 0.02, "{name}: {a:?}");
        assert!(a.same_top_move >= 0.98, "{name}: {a:?}");
        assert!(a.mean_kl <= 0.01, "{name}: {a:?}");
    }
}
