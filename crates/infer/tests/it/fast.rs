//! The fast inference path agrees with burn's forward pass.

use crate::common;
use bredon_infer::NetEvaluator;
use bredon_infer::{InferenceKind, forward_raw};
use bredon_kernels::fast::{FastNet, Isa};
use bredon_kernels::{Precision, Scalars};
use bredon_mcts::Evaluator;
use bredon_netform::policy::{move_to_index, policy_size};
use bredon_netform::{NetConfig, PolicyHead};
use bredon_nn::{TakNet, load_exported};
use bredon_rules::{Move, Position};
use common::{random_positions, trained};

/// Every position of the reference games in `shared/data/games` (all 5x5).
fn real_positions() -> Vec<Position> {
    let out = common::real_positions();
    assert!(out.len() >= 64, "only {} positions", out.len());
    out
}

/// Largest absolute difference of logits and of values between burn and the fast path,
/// over batches of several sizes, for every instruction set of this CPU.
fn assert_agree(model: &TakNet, positions: &[Position], size: usize, tol: f32) {
    let refs: Vec<&Position> = positions.iter().collect();
    let folded = model.fold(size);
    let fast: Vec<FastNet> = Isa::available().into_iter().map(|isa| FastNet::from_folded(&folded, isa)).collect();
    assert_eq!(fast.iter().map(FastNet::isa).collect::<Vec<_>>(), Isa::available());
    for batch in [1, 3, 16, 64, refs.len()] {
        for chunk in refs.chunks(batch).take(4) {
            // burn's outputs once per chunk, against every instruction set's fast path.
            let (bl, bv) = forward_raw(model, chunk, size);
            for fast in &fast {
                let isa = fast.isa();
                let (fl, fv) = fast.forward(chunk);
                assert_eq!((bl.len(), bv.len()), (fl.len(), fv.len()));
                // Absolute difference, relative for logits above 1 in size (float rounding
                // of sums of hundreds of products in a different order).
                let dl = bl.iter().zip(&fl).map(|(a, b)| (a - b).abs() / a.abs().max(1.0)).fold(0.0f32, f32::max);
                let dv = bv.iter().zip(&fv).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
                assert!(dl <= tol && dv <= tol, "{isa:?} batch {batch}: logits differ by {dl}, values by {dv}");
                // The outputs are not trivially equal (e.g. all zero).
                assert!(bl.iter().any(|&x| x.abs() > 1e-3));
                // What a search asks, the legal moves' logits only: the same values.
                let legal: Vec<Vec<Move>> = chunk.iter().map(|p| p.legal_moves()).collect();
                let lrefs: Vec<&[Move]> = legal.iter().map(|l| l.as_slice()).collect();
                let (mut ml, mut scalars) = (Vec::new(), Scalars::default());
                fast.forward_moves_into(chunk, &lrefs, &mut ml, &mut scalars);
                let p = policy_size(size);
                let want: Vec<f32> = legal
                    .iter()
                    .enumerate()
                    .flat_map(|(i, ms)| ms.iter().map(move |&m| (i, m)))
                    .map(|(i, m)| fl[i * p + move_to_index(m, size)])
                    .collect();
                assert_eq!(ml.len(), want.len());
                let dm = ml.iter().zip(&want).map(|(a, b)| (a - b).abs() / a.abs().max(1.0)).fold(0.0f32, f32::max);
                assert!(dm <= 1e-5, "{isa:?} batch {batch}: the moves' logits differ from all logits' by {dm}");
                assert_eq!(scalars.values, fv, "{isa:?} batch {batch}: values");
            }
        }
    }
}

#[test]
fn fast_path_matches_burn_on_real_positions() {
    let positions = real_positions();
    let cfg = NetConfig::default_for_size(5);
    let model = trained(&cfg, &positions, 1);
    assert_agree(&model, &positions[..positions.len().min(300)], 5, 1e-4);
}

#[test]
fn fast_path_matches_burn_with_wdl_and_aux_heads() {
    // The fast path computes the value from the WDL logits and ignores the auxiliary heads.
    let positions = real_positions();
    let cfg = NetConfig { input_version: 2, wdl: true, aux: true, ..NetConfig::default_for_size(5) };
    let model = trained(&cfg, &positions, 9);
    assert!(model.wdl() && model.aux());
    assert_agree(&model, &positions[..positions.len().min(200)], 5, 1e-4);
}

#[test]
fn fast_path_matches_burn_with_input_version_2() {
    let positions = real_positions();
    let cfg = NetConfig { input_version: 2, ..NetConfig::default_for_size(5) };
    let model = trained(&cfg, &positions, 7);
    assert_eq!(model.input_version(), 2);
    assert_agree(&model, &positions[..positions.len().min(300)], 5, 1e-4);
    for (size, channels, wdl, aux) in
        [(4, 20, false, false), (6, 16, false, false), (4, 24, true, true), (5, 16, true, false)]
    {
        let cfg = NetConfig {
            size,
            blocks: 1,
            channels,
            value_hidden: 9,
            policy_filters: 3,
            input_version: 2,
            wdl,
            aux,
            ..NetConfig::default()
        };
        let positions = random_positions(size, 96, 10 + size as u64);
        assert_agree(&trained(&cfg, &positions, 8), &positions, size, 1e-4);
    }
}

#[test]
fn fast_path_matches_burn_with_the_conv_policy_head() {
    // Every size (the per-square logits count 3 + 4 (2^N - 1) changes with it), filter
    // counts off the vector width, with and without the auxiliary heads.
    for (size, channels, filters, aux) in
        [(3, 8, 2, false), (4, 20, 9, true), (5, 16, 16, true), (6, 24, 5, false), (7, 8, 3, false), (8, 8, 4, false)]
    {
        let cfg = NetConfig {
            size,
            blocks: 1,
            channels,
            value_hidden: 9,
            policy_filters: filters,
            input_version: 2,
            wdl: aux,
            aux,
            policy_head: PolicyHead::Conv,
            ..NetConfig::default()
        };
        let positions = random_positions(size, 96, 20 + size as u64);
        let model = trained(&cfg, &positions, 4);
        assert_eq!(model.policy_head(), PolicyHead::Conv);
        assert_agree(&model, &positions, size, 1e-4);
    }
}

#[test]
fn fast_path_matches_burn_on_the_shipped_models() {
    let shipped = common::shipped_dir();
    // 4x4-v1 predates input versions (it reads version 1); the others have the Tak
    // feature planes and the WDL and auxiliary heads, and 6x6 also global pooling and
    // the pooled value head.
    for (name, version, heads) in
        [("4x4-v1", 1, false), ("4x4", 2, true), ("5x5", 2, true), ("6x6-v1", 2, true), ("6x6", 2, true)]
    {
        let (model, meta) = load_exported(&shipped.join(format!("{name}.bredon"))).unwrap();
        assert_eq!(
            (meta.input_version, meta.net.input_version, model.input_version()),
            (version, version, version),
            "{name}"
        );
        assert_eq!((meta.net.wdl, meta.net.aux), (heads, heads), "{name}");
        assert_agree(&model, &random_positions(meta.size, 200, 3), meta.size, 1e-4);
    }
}

#[test]
fn fast_path_matches_burn_on_odd_shapes_and_sizes() {
    // Channel counts that are not multiples of the vector width, tiny heads, all sizes.
    for (size, channels, filters) in [(3, 8, 2), (4, 20, 3), (6, 40, 5), (7, 33, 8), (8, 16, 1)] {
        let cfg =
            NetConfig { size, blocks: 2, channels, value_hidden: 9, policy_filters: filters, ..NetConfig::default() };
        let positions = random_positions(size, 96, size as u64);
        let model = trained(&cfg, &positions, 2);
        assert_agree(&model, &positions, size, 1e-4);
    }
}

#[test]
fn both_inference_paths_give_the_same_evaluations() {
    for head in [PolicyHead::Dense, PolicyHead::Conv] {
        same_evaluations_on_both_paths(head);
    }
}

fn same_evaluations_on_both_paths(policy_head: PolicyHead) {
    let positions = real_positions();
    let cfg = NetConfig {
        size: 5,
        blocks: 2,
        channels: 32,
        value_hidden: 16,
        policy_filters: 4,
        policy_head,
        ..NetConfig::default()
    };
    let model = trained(&cfg, &positions, 5);
    assert_eq!(model.policy_head(), policy_head);
    let fast = NetEvaluator::with_kind(model.clone(), 5, InferenceKind::FAST_F32);
    let burn = NetEvaluator::with_kind(model.clone(), 5, InferenceKind::Burn);
    assert_eq!((fast.kind(), burn.kind()), (InferenceKind::FAST_F32, InferenceKind::Burn));
    let ps = &positions[..40];
    let legal: Vec<Vec<_>> = ps.iter().map(|p| p.legal_moves()).collect();
    let refs: Vec<&Position> = ps.iter().collect();
    let lrefs: Vec<&[_]> = legal.iter().map(|l| l.as_slice()).collect();
    let (a, b) = (fast.evaluate_batch(&refs, &lrefs), burn.evaluate_batch(&refs, &lrefs));
    for (x, y) in a.iter().zip(&b) {
        assert!((x.value - y.value).abs() <= 1e-4);
        for (p, q) in x.policy.iter().zip(&y.policy) {
            assert!((p - q).abs() <= 1e-4);
        }
    }
    // New weights replace the old ones on the same path.
    let other = trained(&cfg, &positions[40..], 6);
    fast.set_model(other.clone());
    let c = fast.evaluate_batch(&refs, &lrefs);
    let d = NetEvaluator::with_kind(other, 5, InferenceKind::Burn).evaluate_batch(&refs, &lrefs);
    assert!((c[0].value - d[0].value).abs() <= 1e-4);
    assert!(c.iter().zip(&a).any(|(x, y)| (x.value - y.value).abs() > 1e-3), "weights were not replaced");
}

#[test]
fn draws_and_margins_agree_on_both_paths_and_across_lanes() {
    // A network with the win/draw/loss and auxiliary heads.
    let positions = real_positions();
    let cfg = NetConfig {
        size: 5,
        blocks: 2,
        channels: 24,
        value_hidden: 16,
        policy_filters: 4,
        wdl: true,
        aux: true,
        ..NetConfig::default()
    };
    let model = trained(&cfg, &positions, 7);
    let fast = NetEvaluator::with_kind(model.clone(), 5, InferenceKind::FAST_F32);
    let burn = NetEvaluator::with_kind(model.clone(), 5, InferenceKind::Burn);
    let lanes = NetEvaluator::with_lanes(model.clone(), 5, InferenceKind::FAST_F32, 3);
    assert_eq!(lanes.lanes(), 3);
    let ps = &positions[..40];
    let legal: Vec<Vec<_>> = ps.iter().map(|p| p.legal_moves()).collect();
    let refs: Vec<&Position> = ps.iter().collect();
    let lrefs: Vec<&[_]> = legal.iter().map(|l| l.as_slice()).collect();
    let a = fast.evaluate_batch(&refs, &lrefs);
    let b = burn.evaluate_batch(&refs, &lrefs);
    // Three threads at once through a three-lane evaluator: the same answers.
    let c: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..3).map(|_| s.spawn(|| lanes.evaluate_batch(&refs, &lrefs))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (x, y) in a.iter().zip(&b) {
        let (dx, dy) = (x.draw.expect("a WDL head gives draws"), y.draw.expect("on both paths"));
        assert!((0.0..=1.0).contains(&dx) && (dx - dy).abs() <= 1e-4, "{dx} {dy}");
        let (mx, my) = (x.margin.expect("the aux heads give margins"), y.margin.expect("on both paths"));
        assert!(mx.abs() <= 25.0 * 4.0 && (mx - my).abs() <= 1e-3 * 25.0, "{mx} {my}");
    }
    for run in &c {
        for (x, y) in a.iter().zip(run) {
            assert!((x.value - y.value).abs() <= 1e-5 && x.draw == y.draw && x.margin == y.margin);
        }
    }
    // One copy on one core (`bredon tei --threads 1`): its passes run alone, with the
    // same answers; a plain single copy may use every thread of rayon's pool.
    let one_core = NetEvaluator::on_cores(model.clone(), 5, InferenceKind::FAST_F32, 1);
    assert_eq!((one_core.lanes(), one_core.pass_threads()), (1, 1));
    assert_eq!((lanes.pass_threads(), fast.pass_threads()), (1, rayon::current_num_threads()));
    for (x, y) in a.iter().zip(&one_core.evaluate_batch(&refs, &lrefs)) {
        assert!((x.value - y.value).abs() <= 1e-5 && x.draw == y.draw && x.margin == y.margin);
    }
    // A network without those heads gives neither.
    let plain = trained(&NetConfig { wdl: false, aux: false, ..cfg }, &positions, 8);
    let e = NetEvaluator::with_kind(plain, 5, InferenceKind::FAST_F32).evaluate_batch(&refs[..2], &lrefs[..2]);
    assert!(e.iter().all(|x| x.draw.is_none() && x.margin.is_none()));
}

/// A batch's outputs do not depend on how it is cut into chunks over threads: each position
/// gets what it gets alone, in every precision (natively where the CPU has the units, else
/// the portable kernel of that arithmetic). Built and run in a pool of four threads, so a
/// batch splits into one chunk a thread and, from 64 positions, several a thread, on any
/// machine; the scratch buffers are each pool thread's own.
#[test]
fn a_batch_gives_each_position_what_it_gets_alone() {
    let shipped = common::shipped_dir().join("6x6.bredon");
    let (model, meta) = load_exported(&shipped).unwrap();
    let folded = model.fold(meta.size);
    let positions = random_positions(meta.size, 130, 11);
    let refs: Vec<&Position> = positions.iter().collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    let p = policy_size(meta.size);
    for precision in [Precision::F32, Precision::Int8, Precision::Bf16] {
        common::native_or_say_so(precision, "a_batch_gives_each_position_what_it_gets_alone");
        let net = pool.install(|| FastNet::with_precision(&folded, Isa::detect(), precision));
        let alone: Vec<(Vec<f32>, Vec<f32>)> = refs.iter().map(|p| pool.install(|| net.forward(&[*p]))).collect();
        for batch in [2, 9, 64, 130] {
            let (logits, values) = pool.install(|| net.forward(&refs[..batch]));
            for (i, (al, av)) in alone[..batch].iter().enumerate() {
                // Each row's sums run in the same order whatever its neighbours: only the
                // kernels' remainder paths could round differently, far under this bound.
                let dl = logits[i * p..(i + 1) * p].iter().zip(al).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
                let dv = (values[i] - av[0]).abs();
                assert!(dl <= 1e-5 && dv <= 1e-5, "{precision} batch {batch}, position {i}: logits {dl}, value {dv}");
            }
        }
    }
}
