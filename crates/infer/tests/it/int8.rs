//! The fast path's residual blocks in 8-bit integers (`Precision::Int8`): the AVX-512 VNNI
//! kernel computes exactly what the portable one does, and both stay close to single
//! precision on the shipped networks.

use crate::common::{self, fast_outputs, random_positions};
use bredon_infer::Agreement;
use bredon_kernels::Precision;
use bredon_kernels::fast::{FastNet, Isa};
use bredon_nn::load_exported;
use bredon_rules::Position;

/// The VNNI kernel and the portable one give the same bits, for a network with global
/// pooling (whose second convolutions read signed inputs, zero at 128) and one without,
/// at batch sizes that split layers by rows and by columns.
#[test]
fn the_vnni_kernel_computes_what_the_portable_one_does() {
    for (name, folded, positions) in common::low_precision_nets(32, 24) {
        // The single-precision layers (input, heads) on the portable kernels in both, so
        // that only the 8-bit kernel differs.
        let portable = FastNet::with_precision(&folded, Isa::Portable, Precision::Int8).with_portable_low_kernel();
        assert_eq!(portable.precision(), Precision::Int8);
        let f32_net = FastNet::with_precision(&folded, Isa::detect(), Precision::F32);
        let (pl, ps) = fast_outputs(&portable, &positions);
        let (fl, fs) = fast_outputs(&f32_net, &positions);
        // Quantised, not equal to single precision, but close (a small random net).
        let dv = ps.values.iter().zip(&fs.values).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(ps.values != fs.values && dv < 0.1, "{}: values differ by {dv}", name);
        assert!(pl.iter().zip(&fl).any(|(a, b)| a != b));
        if !common::native_or_say_so(Precision::Int8, "the_vnni_kernel_computes_what_the_portable_one_does") {
            continue;
        }
        let vnni = FastNet::with_precision(&folded, Isa::Portable, Precision::Int8);
        assert_eq!(vnni.precision(), Precision::Int8);
        for batch in [1, 3, 16, 70] {
            for chunk in positions.chunks(batch).take(3) {
                let (a, b) = (fast_outputs(&vnni, chunk), fast_outputs(&portable, chunk));
                assert!(a.0 == b.0, "{} batch {batch}: the logits differ", name);
                assert_eq!(a.1.values, b.1.values, "{} batch {batch}: values", name);
                assert_eq!(a.1.draws, b.1.draws, "{} batch {batch}: draws", name);
                assert_eq!(a.1.margins, b.1.margins, "{} batch {batch}: margins", name);
            }
        }
        // A position's outputs do not depend on the rest of its batch.
        let one = fast_outputs(&vnni, &positions[5..6]);
        let all = fast_outputs(&vnni, &positions);
        assert_eq!(one.1.values[0], all.1.values[5]);
    }
}

/// How far 8-bit outputs (on `int8_isa`) are from single precision's over `positions`.
fn agreement(model: &bredon_nn::TakNet, size: usize, positions: &[Position], int8_isa: Isa) -> Agreement {
    let folded = model.fold(size);
    let exact = FastNet::with_precision(&folded, Isa::detect(), Precision::F32);
    let int8 = FastNet::with_precision(&folded, int8_isa, Precision::Int8);
    assert_eq!(int8.precision(), Precision::Int8);
    bredon_infer::precision::agreement(&exact, &int8, positions)
}

/// On the shipped 4x4, 5x5, 6x6, 7x7 and 8x8 networks, over the reference games' positions (5x5)
/// and random games' (every size): value within 0.02 at the 99th percentile, the same
/// most likely move in at least 98 % of positions, and a mean policy KL divergence of at
/// most 0.01 (issue 66's bars). The 6x6 network carried to 3x3, 7x7 and 8x8, and the 7x7
/// one carried to 8x8 (as `bredon tei` plays that size), pass `auto`'s looser check.
#[test]
fn int8_agrees_with_single_precision_on_the_shipped_networks() {
    let native = common::native_or_say_so(Precision::Int8, "int8_agrees_with_single_precision_on_the_shipped_networks");
    let isa = Isa::detect();
    let shipped = common::shipped_dir();
    let mut found = Vec::new();
    for name in ["4x4", "5x5", "6x6", "7x7", "8x8"] {
        let (model, meta) = load_exported(&shipped.join(format!("{name}.bredon"))).unwrap();
        let mut positions = random_positions(meta.size, if native { 2000 } else { 1000 }, 66);
        if meta.size == 5 {
            positions.extend(common::real_positions());
        }
        let positions = common::distinct(positions);
        let a = agreement(&model, meta.size, &positions, isa);
        eprintln!("{name} int8 ({}) vs f32: {a:?}", if native { "vnni" } else { "portable" });
        found.push((name.to_string(), a));
    }
    for (from, model, size) in common::carried_shipped() {
        let positions = common::distinct(random_positions(size, if native { 400 } else { 200 }, 67));
        let a = agreement(&model, size, &positions, isa);
        eprintln!("{from} carried to {size}x{size} int8 vs f32: {a:?}");
        // Not held to the bars below: with one activation scale a position, a network
        // carried untrained to 8x8's 64 squares quantises more coarsely (2026-12-07, the
        // first block in f32: the 6x6 network there p99 0.016 and the same top move in
        // 97.8 %). The shipped 8x8 model, trained on its size, meets the bars below
        // (p99 0.0055, 98.9 %); carried networks get `auto`'s own check.
        assert!(a.good_enough(), "{from} on {size}x{size}: {a:?}");
    }
    for (name, a) in found {
        assert!(a.value_p99 <= 0.02, "{name}: {a:?}");
        assert!(a.same_top_move >= 0.98, "{name}: {a:?}");
        assert!(a.mean_kl <= 0.01, "{name}: {a:?}");
    }
}

/// `auto` runs the shipped networks in bf16 where the CPU has AMX, in 8 bits where it has
/// VNNI (they pass its check by a wide margin), in f32 elsewhere, and always says nothing on the way; a network
/// whose 8-bit pass is far off stays in f32 and says why.
#[test]
fn auto_picks_int8_where_it_is_native_and_agrees() {
    use bredon_infer::PrecisionChoice;
    use bredon_infer::precision::fast_net;
    let native = common::native_or_say_so(Precision::Int8, "auto_picks_int8_where_it_is_native_and_agrees");
    let shipped = common::shipped_dir().join("6x6.bredon");
    let (model, meta) = load_exported(&shipped).unwrap();
    let folded = model.fold(meta.size);
    let (net, why) = fast_net(&folded, PrecisionChoice::Auto);
    assert_eq!(why, None);
    // The fastest this CPU has: bf16 where it has AMX tiles, else 8-bit integers on VNNI.
    let best = bredon_infer::precision::AUTO_ORDER.into_iter().find(|p| p.is_native()).unwrap_or(Precision::F32);
    assert_eq!(net.precision(), best);
    assert_eq!(best == Precision::Int8, native && !Precision::Bf16.is_native());
    let (net, why) = fast_net(&folded, PrecisionChoice::Exactly(Precision::F32));
    assert_eq!((net.precision(), why), (Precision::F32, None));
    let (net, why) = fast_net(&folded, PrecisionChoice::Exactly(Precision::Int8));
    assert_eq!(net.precision(), if native { Precision::Int8 } else { Precision::F32 });
    assert_eq!(why.is_some(), !native, "{why:?}");
    // The check itself: the same network against itself agrees exactly; against a network
    // with other weights it does not pass.
    let positions = random_positions(meta.size, 64, 3);
    let exact = FastNet::with_precision(&folded, Isa::detect(), Precision::F32);
    let same = bredon_infer::precision::agreement(&exact, &exact, &positions);
    assert!(same.good_enough() && same.value_max == 0.0 && same.policy_tv == 0.0, "{same:?}");
    let other = bredon_nn::TakNet::new(&meta.net, &bredon_nn::device::cpu()).fold(meta.size);
    let other = FastNet::with_precision(&other, Isa::detect(), Precision::F32);
    let far = bredon_infer::precision::agreement(&exact, &other, &positions);
    assert!(!far.good_enough(), "{far:?}");
}
