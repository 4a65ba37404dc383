//! The network on burn's wgpu backend (built with `--features wgpu`; in CI on Mesa's
//! lavapipe, a Vulkan driver that runs on the CPU). Without an adapter these tests fail:
//! they exist to prove the GPU path works, so there is no skip.
#![cfg(feature = "wgpu")]

mod common;
use bredon_nn::train::{OptimizerSettings, encode_batch};
use bredon_nn::{DeviceChoice, NetConfig, PolicyHead, TakNet, Trainer, compare_devices, load_exported};
use bredon_rules::Position;
use burn::module::Module;
use burn::prelude::{Device, Tensor};
use common::{random_examples, real_positions};
use rand::{Rng, SeedableRng};

fn wgpu() -> Device {
    DeviceChoice::Wgpu(None).open().unwrap_or_else(|e| panic!("no wgpu device: {e}"))
}

/// Legal positions of `size` reached by random play.
fn played_positions(size: usize, n: usize, seed: u64) -> Vec<Position> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    while out.len() < n {
        let mut pos = Position::new(size).unwrap();
        for _ in 0..rng.random_range(0..2 * size * size) {
            let moves = pos.legal_moves();
            if pos.result().is_some() {
                break;
            }
            pos.play(moves[rng.random_range(0..moves.len())]).unwrap();
        }
        if pos.result().is_none() {
            out.push(pos);
        }
    }
    out
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
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped");
    let real = real_positions();
    assert!(real.len() >= 64, "only {} reference positions", real.len());
    let (m5, meta5) = load_exported(&shipped.join("5x5.bredon")).unwrap();
    assert_heads_agree(&m5, &real[..real.len().min(128)], 5, "shipped 5x5");
    let (m4, meta4) = load_exported(&shipped.join("4x4.bredon")).unwrap();
    assert_heads_agree(&m4, &played_positions(4, 64, 4), 4, "shipped 4x4");
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
    let positions = played_positions(6, 96, 6);
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
    // and (nearly) the same weights, and the weights stay finite.
    let cfg = NetConfig { blocks: 1, channels: 16, wdl: true, aux: true, ..NetConfig::default_for_size(4) };
    let positions = played_positions(4, 64, 8);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
    let batch = random_examples(&positions, &mut rng);
    let init = Trainer::new(&cfg, OptimizerSettings::default(), 5).unwrap().model();
    let mut cpu = Trainer::from_model_on(&cfg, init.clone(), OptimizerSettings::default(), &Device::flex()).unwrap();
    let mut gpu = Trainer::from_model_on(&cfg, init, OptimizerSettings::default(), &wgpu()).unwrap();
    for step in 0..3 {
        let a = cpu.step(&batch, 0.01).unwrap();
        let b = gpu.step(&batch, 0.01).unwrap();
        assert!(
            (a.policy - b.policy).abs() < 1e-3 * a.policy.abs().max(1.0),
            "step {step}: policy loss {} vs {}",
            a.policy,
            b.policy
        );
        assert!((a.value - b.value).abs() < 1e-3, "step {step}: value loss {} vs {}", a.value, b.value);
    }
    assert_eq!(gpu.model().device(), wgpu());
    assert_heads_agree(&cpu.model(), &positions, 4, "after 3 steps (cpu weights)");
    let (c, g) = (cpu.model(), gpu.model().to_device(&Device::flex()));
    let x = encode_batch(positions.iter(), 1, 4, &Device::flex());
    let (pc, pg) = (floats(c.forward(x.clone()).0), floats(g.forward(x).0));
    let d = pc.iter().zip(&pg).map(|(p, q)| (p - q).abs() / p.abs().max(1.0)).fold(0.0f32, f32::max);
    assert!(d <= 1e-2, "after 3 steps the two devices' nets differ by {d}");
}

/// The batching service on wgpu (burn's path: the legal moves' priors gathered and
/// softmaxed on the device, only they read back) against the fast path on the CPU, with
/// the shipped 6x6 network and several searches' requests at once.
#[test]
fn the_batching_service_on_wgpu_gives_the_cpu_priors() {
    use bredon_mcts::Evaluator;
    use bredon_nn::inference::{InferenceKind, InferenceService};
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped/6x6.bredon");
    let (model, meta) = load_exported(&shipped).unwrap();
    let cpu = bredon_nn::NetEvaluator::with_kind(model.clone(), 6, InferenceKind::Fast);
    let service = InferenceService::start_with(model.to_device(&wgpu()), meta.size, 256, InferenceKind::Burn);
    let sets: Vec<Vec<Position>> = (0..4).map(|i| played_positions(6, 12 + 5 * i, 40 + i as u64)).collect();
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
                    assert!((g.value - w.value).abs() <= 1e-3, "value {} vs {}", g.value, w.value);
                    let worst = g.policy.iter().zip(&w.policy).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
                    assert!(worst <= 1e-3, "a prior differs by {worst} between wgpu and the CPU");
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
