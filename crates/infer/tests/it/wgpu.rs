//! The network on burn's wgpu backend (built with `--features wgpu`; in CI on Mesa's
//! lavapipe, a Vulkan driver that runs on the CPU). Without an adapter these tests fail:
//! they exist to prove the GPU path works, so there is no skip. (`main.rs` builds this
//! module only with the feature.)

use crate::common;
use bredon_netform::positions::random_positions;
use bredon_netform::{NetConfig, PolicyHead};
use bredon_nn::train::{OptimizerSettings, encode_batch};
use bredon_nn::{Convolutions, DeviceChoice, TakNet, Trainer, compare_devices, load_exported};
use bredon_rules::Position;
use burn::module::Module;
use burn::prelude::{Device, Tensor};
use common::{random_examples, real_positions, trained, with_random_tensors};
use rand::SeedableRng;

fn wgpu() -> Device {
    DeviceChoice::Wgpu(None).open().unwrap_or_else(|e| panic!("no wgpu device: {e}"))
}

fn floats(t: Tensor<2>) -> Vec<f32> {
    t.into_data().convert::<f32>().try_into_vec::<f32>().unwrap()
}

/// Every head of `model` on the CPU and the same weights on wgpu, on `positions`.
fn assert_heads_agree(model: &TakNet, positions: &[Position], size: usize, what: &str) {
    let refs: Vec<&Position> = positions.iter().collect();
    assert_eq!(model.device(), Device::flex());
    let diffs = compare_devices(model, &wgpu(), &refs, size).unwrap();
    for d in &diffs {
        assert!(d.max_difference <= 1e-3, "{what}: {} differs by {} between flex and wgpu", d.head, d.max_difference);
        assert!(!d.near_zero, "{what}: {} is all zero", d.head);
    }
    assert!(diffs.len() >= 2, "{what}: {diffs:?}");
    eprintln!("{what}: {} heads agree on {} positions", diffs.len(), positions.len());
}

#[test]
fn shipped_models_give_the_same_outputs_on_wgpu_as_on_the_cpu() {
    let shipped = common::shipped_dir();
    let real = real_positions();
    assert!(real.len() >= 64, "only {} reference positions", real.len());
    let (m5, meta5) = load_exported(&shipped.join("5x5.bredon")).unwrap();
    assert_heads_agree(&m5, &real[..real.len().min(128)], 5, "shipped 5x5");
    let (m4, meta4) = load_exported(&shipped.join("4x4.bredon")).unwrap();
    assert_heads_agree(&m4, &random_positions(4, 64, 4), 4, "shipped 4x4");
    assert_eq!((meta4.size, meta5.size), (4, 5));
}

#[test]
fn every_head_of_a_trained_conv_net_agrees_on_wgpu() {
    // WDL, auxiliary heads and the convolutional policy head, with BatchNorm statistics
    // moved off the identity by a few training steps, on 6x6.
    let cfg = NetConfig {
        blocks: 2,
        channels: 32,
        input_version: 2,
        wdl: true,
        aux: true,
        policy_head: PolicyHead::Conv,
        policy_filters: 8,
        ..NetConfig::default_for_size(6)
    };
    let positions = random_positions(6, 96, 6);
    let mut trainer = Trainer::new(&cfg, OptimizerSettings::default(), 3).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    for chunk in positions.chunks(32) {
        let batch = random_examples(chunk, &mut rng);
        trainer.step(&batch, 0.01).unwrap();
    }
    assert_heads_agree(&trainer.model(), &positions, 6, "conv 6x6 net");
}

#[test]
fn training_steps_on_wgpu_follow_the_cpu() {
    // The same initial weights and batches: a step on each device gives the same losses
    // and (nearly) the same weights, and the weights stay finite; on the GPU with each way
    // of computing the convolutions (the default: burn's conv2d; and matrix products over
    // rows), on the CPU with burn's conv2d.
    let cfg = NetConfig { blocks: 1, channels: 16, wdl: true, aux: true, ..NetConfig::default_for_size(4) };
    let positions = random_positions(4, 64, 8);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
    let batch = random_examples(&positions, &mut rng);
    let init = Trainer::new(&cfg, OptimizerSettings::default(), 5).unwrap().model();
    for convolutions in [Convolutions::Auto, Convolutions::Matmul] {
        let mut cpu =
            Trainer::from_model_on(&cfg, init.clone(), OptimizerSettings::default(), &Device::flex()).unwrap();
        assert_eq!(cpu.convolutions(), Convolutions::Direct);
        let mut gpu = Trainer::from_model_on(&cfg, init.clone(), OptimizerSettings::default(), &wgpu()).unwrap();
        assert_eq!(gpu.convolutions(), Convolutions::Direct, "the default on a GPU too");
        gpu.set_convolutions(convolutions);
        let what = gpu.convolutions().name();
        for step in 0..3 {
            let a = cpu.step(&batch, 0.01).unwrap();
            let b = gpu.step(&batch, 0.01).unwrap();
            assert!(
                (a.policy - b.policy).abs() < 1e-3 * a.policy.abs().max(1.0),
                "{what}, step {step}: policy loss {} vs {}",
                a.policy,
                b.policy
            );
            assert!((a.value - b.value).abs() < 1e-3, "{what}, step {step}: value loss {} vs {}", a.value, b.value);
        }
        assert_eq!(gpu.model().device(), wgpu());
        assert_heads_agree(&cpu.model(), &positions, 4, "after 3 steps (cpu weights)");
        let (c, g) = (cpu.model(), gpu.model().to_device(&Device::flex()));
        let x = encode_batch(positions.iter(), 1, 4, &Device::flex());
        let (pc, pg) = (floats(c.forward(x.clone()).0), floats(g.forward(x).0));
        let d = pc.iter().zip(&pg).map(|(p, q)| (p - q).abs() / p.abs().max(1.0)).fold(0.0f32, f32::max);
        assert!(d <= 1e-2, "{what}: after 3 steps the two devices' nets differ by {d}");
    }
}

/// Bredon's WGSL kernels against the CPU's fast path on `positions`, batch by batch: every
/// policy logit, the priors over the legal moves, value, draw probability and margin.
fn assert_wgsl_agrees(model: &TakNet, positions: &[Position], size: usize, batches: &[usize], what: &str) {
    assert_wgsl_agrees_in(bredon_kernels::Arithmetic::DEFAULT, model, positions, size, batches, what)
}

/// [`assert_wgsl_agrees`] with the trunk in `arithmetic`.
fn assert_wgsl_agrees_in(
    arithmetic: bredon_kernels::Arithmetic,
    model: &TakNet,
    positions: &[Position],
    size: usize,
    batches: &[usize],
    what: &str,
) {
    use bredon_kernels::fast::{FastNet, Scalars};
    let fast = FastNet::new(&model.fold(size));
    let gpu = bredon_infer::gpu::wgsl_for_model(model, size, arithmetic).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(gpu.arithmetic(), arithmetic, "{what}");
    assert!(gpu.max_batch() >= 2048, "{what}: the adapter's buffers take only {} positions a pass", gpu.max_batch());
    let close = |a: f32, b: f32| (a - b).abs() <= 1e-3 * a.abs().max(1.0);
    let mut at = 0;
    for &b in batches {
        let chunk: Vec<&Position> = positions[at..at + b].iter().collect();
        at += b;
        let mut logits = Vec::new();
        let mut want = Scalars::default();
        fast.forward_scalars_into(&chunk, &mut logits, &mut want);
        let got = gpu.logits(&chunk).unwrap();
        let p = logits.len() / b;
        for (i, row) in got.policy.iter().enumerate() {
            assert_eq!(row.len(), p, "{what}: logits per position");
            for (k, (&g, &w)) in row.iter().zip(&logits[i * p..(i + 1) * p]).enumerate() {
                assert!(close(g, w), "{what}, batch {b}: position {i} logit {k}: wgsl {g} vs fast {w}");
            }
        }
        for i in 0..b {
            assert!(close(got.values[i], want.values[i]), "{what}: value {} vs {}", got.values[i], want.values[i]);
            if fast.has_wdl() {
                let d = got.draws.as_ref().expect("draws")[i];
                assert!(close(d, want.draws[i]), "{what}: draw {d} vs {}", want.draws[i]);
            }
            if fast.has_margin() {
                let m = got.margins.as_ref().expect("margins")[i];
                assert!(close(m, want.margins[i]), "{what}: margin {m} vs {}", want.margins[i]);
            }
        }
        assert_eq!((got.draws.is_some(), got.margins.is_some()), (fast.has_wdl(), fast.has_margin()), "{what}");
        // The search's form: priors over the legal moves, softmaxed on the device.
        let legal: Vec<Vec<bredon_rules::Move>> = chunk.iter().map(|p| p.legal_moves()).collect();
        let legal: Vec<&[bredon_rules::Move]> = legal.iter().map(|m| m.as_slice()).collect();
        let priors = gpu.evaluate(&chunk, &legal).unwrap();
        for (i, (row, moves)) in priors.policy.iter().zip(&legal).enumerate() {
            let want = bredon_netform::policy::masked_softmax(&logits[i * p..(i + 1) * p], moves, size);
            assert_eq!(row.len(), moves.len());
            let worst = row.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
            assert!(worst <= 1e-4, "{what}: a prior differs by {worst}");
        }
    }
    // Two passes in flight, read back in order, give what one at a time gives.
    let (a, b): (Vec<&Position>, Vec<&Position>) = (positions[..7].iter().collect(), positions[7..20].iter().collect());
    let (ta, tb) = (gpu.launch(&a, None).unwrap(), gpu.launch(&b, None).unwrap());
    let (ra, rb) = (ta.finish().unwrap(), tb.finish().unwrap());
    assert_eq!(ra.values, gpu.logits(&a).unwrap().values, "{what}: first of two in flight");
    assert_eq!(rb.values, gpu.logits(&b).unwrap().values, "{what}: second of two in flight");
    // A pass launched and dropped unread leaves its buffers ready for the next one.
    drop(gpu.launch(&a, None).unwrap());
    drop(gpu.launch(&b, None).unwrap());
    assert_eq!(gpu.logits(&a).unwrap().values, ra.values, "{what}: after two passes dropped unread");
    eprintln!("{what}: wgsl agrees with the fast path on {at} positions ({})", gpu.adapter());
}

#[test]
fn the_wgsl_kernels_give_the_fast_paths_outputs() {
    // The shipped 6x6 network: convolutional policy head, pooled value head, global
    // pooling, win/draw/loss and margin heads. Batches across tile edges (128 rows = 3.6
    // positions) and one (70) that grows the buffers past the 64 positions they start with.
    let shipped = common::shipped_dir();
    use bredon_infer::InferenceKind;
    // On a wgpu device `auto` is these kernels; burn's pass is there when asked for.
    assert_eq!(InferenceKind::WGSL.resolve_for(&wgpu()), InferenceKind::WGSL);
    assert_eq!(InferenceKind::AUTO.resolve_for(&wgpu()), InferenceKind::WGSL);
    assert_eq!(InferenceKind::Burn.resolve_for(&wgpu()), InferenceKind::Burn);
    let (m6, _) = load_exported(&shipped.join("6x6.bredon")).unwrap();
    assert_wgsl_agrees(&m6, &random_positions(6, 156, 61), 6, &[1, 3, 37, 70, 45], "shipped 6x6");
    let (m4, _) = load_exported(&shipped.join("4x4.bredon")).unwrap();
    assert_wgsl_agrees(&m4, &random_positions(4, 80, 41), 4, &[1, 79], "shipped 4x4");
    // The dense heads (policy to every move, value over every square's features), global
    // pooling made to matter, tanh value, no auxiliary heads, on 5x5 with odd widths.
    let cfg = NetConfig {
        blocks: 2,
        channels: 24,
        global_pool: true,
        gpool_channels: 8,
        policy_filters: 6,
        value_filters: 5,
        ..NetConfig::default_for_size(5)
    };
    let positions = random_positions(5, 120, 51);
    let model = with_random_tensors(&trained(&cfg, &positions, 5), &cfg, &["gpool"], 0.3, 9);
    assert_wgsl_agrees(&model, &positions, 5, &[2, 65, 33], "dense-head 5x5");
}

/// The tensor kernel's operands (each a pair of half-precision numbers) in the shader's
/// arithmetic keep every output within the bound single precision is held to, on the
/// shipped networks and a dense-head one; `auto` runs single precision, and on an adapter
/// without cooperative matrices (lavapipe) the tensor kernel is a clear error.
#[test]
fn the_tensor_kernels_operands_keep_every_output_within_1e_3() {
    use bredon_kernels::Arithmetic;
    let shipped = common::shipped_dir();
    let (m6, _) = load_exported(&shipped.join("6x6.bredon")).unwrap();
    let pairs = Arithmetic::F16Pairs;
    assert_wgsl_agrees_in(pairs, &m6, &random_positions(6, 108, 62), 6, &[1, 37, 70], "shipped 6x6, f16 pairs");
    let (m4, _) = load_exported(&shipped.join("4x4.bredon")).unwrap();
    assert_wgsl_agrees_in(pairs, &m4, &random_positions(4, 80, 42), 4, &[80], "shipped 4x4, f16 pairs");
    let cfg =
        NetConfig { blocks: 2, channels: 24, policy_filters: 6, value_filters: 5, ..NetConfig::default_for_size(5) };
    let positions = random_positions(5, 70, 52);
    let model = trained(&cfg, &positions, 5);
    assert_wgsl_agrees_in(pairs, &model, &positions, 5, &[70], "dense-head 5x5, f16 pairs");
    let auto = bredon_infer::gpu::wgsl_for_model(&m4, 4, Arithmetic::DEFAULT).unwrap();
    assert_eq!(auto.arithmetic(), Arithmetic::F32, "single precision unless asked");
    let probe = random_positions(4, 64, 43);
    let probe: Vec<&Position> = probe.iter().collect();
    match bredon_infer::gpu::wgsl_for_model(&m4, 4, Arithmetic::Tensor) {
        Ok(net) => {
            // A device with cooperative matrices (a real GPU): they agree too.
            assert_eq!(net.arithmetic(), Arithmetic::Tensor);
            net.agrees_with(&auto, &probe).unwrap();
            assert_wgsl_agrees_in(Arithmetic::Tensor, &m6, &random_positions(6, 200, 63), 6, &[1, 150], "tensor");
        }
        Err(e) => {
            assert!(e.to_string().contains("tensor arithmetic is not on this adapter: the adapter has no"), "{e}");
            eprintln!("no cooperative matrices on {}: {e}", auto.adapter());
        }
    }
    let pairs = bredon_infer::gpu::wgsl_for_model(&m4, 4, Arithmetic::F16Pairs).unwrap();
    pairs.agrees_with(&auto, &probe).expect("f16 pairs agree with single precision");
    // The search's engines: an arithmetic the adapter runs and that agrees with single
    // precision on the network is what they run; one the adapter lacks is single
    // precision (with a warning), not burn's pass.
    use bredon_infer::Engine;
    use bredon_infer::InferenceKind;
    let on_gpu = m4.clone().to_device(&wgpu());
    let engine = Engine::new(on_gpu.clone(), 4, InferenceKind::Wgsl(Arithmetic::F16Pairs));
    assert_eq!(engine.kind(), InferenceKind::Wgsl(Arithmetic::F16Pairs));
    assert_eq!(engine.kind().to_string(), "wgsl:f16-pairs");
    let tensor = Engine::new(on_gpu, 4, InferenceKind::Wgsl(Arithmetic::Tensor)).kind();
    let has_tensor = bredon_infer::gpu::wgsl_for_model(&m4, 4, Arithmetic::Tensor).is_ok();
    assert_eq!(tensor, InferenceKind::Wgsl(if has_tensor { Arithmetic::Tensor } else { Arithmetic::F32 }));
    let (net, fallback) = bredon_infer::gpu::wgsl_for_search(&m6, 6, Arithmetic::F16Pairs)
        .expect("the wgsl kernels run the shipped 6x6 net");
    assert!(fallback.is_none(), "f16 pairs fail the search's start-up check on 6x6: {fallback:?}");
    assert_eq!(net.arithmetic(), Arithmetic::F16Pairs);
    if !has_tensor {
        let (net, fallback) =
            bredon_infer::gpu::wgsl_for_search(&m6, 6, Arithmetic::Tensor).expect("the f32 kernels run");
        assert_eq!(net.arithmetic(), Arithmetic::F32);
        assert!(
            matches!(fallback, Some(bredon_kernels::wgsl::WgslError::NotOnAdapter { .. })),
            "an adapter without matrix units falls back and says why: {fallback:?}"
        );
    }
}

/// A network outside what the WGSL kernels run is a clear error for them, and `auto` on a
/// wgpu device then runs burn's forward pass instead of failing.
#[test]
fn a_network_the_wgsl_kernels_cannot_run_falls_back_to_burn() {
    use bredon_infer::Engine;
    use bredon_infer::InferenceKind;
    // Global pooling of 68 channels: the kernels pool at most 64.
    let cfg =
        NetConfig { blocks: 1, channels: 72, global_pool: true, gpool_channels: 68, ..NetConfig::default_for_size(3) };
    let model = TakNet::new(&cfg, &Device::flex());
    let e = bredon_infer::gpu::wgsl_for_model(&model, 3, bredon_kernels::Arithmetic::DEFAULT)
        .err()
        .expect("an error for 68 pooled channels");
    assert!(e.to_string().contains("global pooling of 68 channels"), "{e}");
    let engine = Engine::new(model.to_device(&wgpu()), 3, InferenceKind::AUTO);
    assert_eq!(engine.kind(), InferenceKind::Burn);
    let pos = Position::new(3).unwrap();
    let legal = pos.legal_moves();
    let evals = engine.evaluate(&[&pos], &[&legal]);
    assert_eq!(evals[0].policy.len(), legal.len());
}

/// The batching service on wgpu (burn's path and Bredon's WGSL kernels: the legal moves'
/// priors gathered and softmaxed on the device, only they read back) against the fast path
/// on the CPU, with the shipped 6x6 network and several searches' requests at once.
#[test]
fn the_batching_service_on_wgpu_gives_the_cpu_priors() {
    for kind in [bredon_infer::InferenceKind::Burn, bredon_infer::InferenceKind::WGSL] {
        service_gives_the_cpu_priors(kind);
    }
}

fn service_gives_the_cpu_priors(kind: bredon_infer::InferenceKind) {
    use bredon_infer::{InferenceKind, InferenceService};
    use bredon_mcts::Evaluator;
    let shipped = common::shipped_dir().join("6x6.bredon");
    let (model, meta) = load_exported(&shipped).unwrap();
    let cpu = bredon_infer::NetEvaluator::with_kind(model.clone(), 6, InferenceKind::FAST_F32);
    let service = InferenceService::start_with(model.to_device(&wgpu()), meta.size, 256, kind);
    let sets: Vec<Vec<Position>> = (0..4).map(|i| random_positions(6, 12 + 5 * i, 40 + i as u64)).collect();
    std::thread::scope(|scope| {
        for set in &sets {
            let (handle, cpu) = (service.handle(), &cpu);
            scope.spawn(move || {
                let refs: Vec<&Position> = set.iter().collect();
                let legal: Vec<Vec<bredon_rules::Move>> = set.iter().map(|p| p.legal_moves()).collect();
                let legal: Vec<&[bredon_rules::Move]> = legal.iter().map(|m| m.as_slice()).collect();
                let got = handle.evaluate_batch(&refs, &legal);
                let want = cpu.evaluate_batch(&refs, &legal);
                for ((g, w), moves) in got.iter().zip(&want).zip(&legal) {
                    assert_eq!(g.policy.len(), moves.len());
                    assert!((g.value - w.value).abs() <= 1e-3, "{kind}: value {} vs {}", g.value, w.value);
                    if kind.is_wgsl() {
                        let (gd, wd) = (g.draw.expect("a draw"), w.draw.expect("a draw"));
                        assert!((gd - wd).abs() <= 1e-3, "draw {gd} vs {wd}");
                        let (gm, wm) = (g.margin.expect("a margin"), w.margin.expect("a margin"));
                        assert!((gm - wm).abs() <= 1e-3 * wm.abs().max(1.0), "margin {gm} vs {wm}");
                    }
                    let worst = g.policy.iter().zip(&w.policy).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
                    assert!(worst <= 1e-3, "{kind}: a prior differs by {worst} between wgpu and the CPU");
                    assert!((g.policy.iter().sum::<f32>() - 1.0).abs() < 1e-3);
                }
            });
        }
    });
    assert_eq!(service.evaluations(), sets.iter().map(|s| s.len() as u64).sum::<u64>());
    let t = service.times();
    assert!(t.readback > std::time::Duration::ZERO, "{t:?}");
    drop(cpu);
    service.shutdown();
}
