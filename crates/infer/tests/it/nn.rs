//! Behaviour of the network crate with tiny nets.

use bredon_infer::NetEvaluator;
use bredon_infer::{InferenceKind, InferenceService, PolicyReadback};
use bredon_mcts::Evaluator;
use bredon_netform::NetConfig;
use bredon_netform::meta::ModelMeta;
use bredon_nn::train::OptimizerSettings;
use bredon_nn::{TrainExample, Trainer, export_model, load_exported, load_model, save_model};
use bredon_rules::Position;
use rand::{Rng, SeedableRng};
use std::time::Duration;

fn tiny(size: usize) -> NetConfig {
    NetConfig { size, blocks: 1, channels: 8, value_hidden: 8, policy_filters: 2, ..NetConfig::default() }
}

fn positions(size: usize, n: usize, seed: u64) -> Vec<Position> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    while out.len() < n {
        let mut pos = Position::new(size).unwrap();
        let plies = rng.random_range(0..12);
        for _ in 0..plies {
            let moves = pos.legal_moves();
            if moves.is_empty() {
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

fn evaluate(ev: &dyn Evaluator, ps: &[Position]) -> Vec<bredon_mcts::Evaluation> {
    let legal: Vec<Vec<_>> = ps.iter().map(|p| p.legal_moves()).collect();
    let refs: Vec<&Position> = ps.iter().collect();
    let lrefs: Vec<&[_]> = legal.iter().map(|l| l.as_slice()).collect();
    ev.evaluate_batch(&refs, &lrefs)
}

#[test]
fn save_load_and_export_give_identical_outputs() {
    check_save_load_and_export(&tiny(4));
}

#[test]
fn save_load_and_export_input_version_2() {
    check_save_load_and_export(&NetConfig { input_version: 2, ..tiny(4) });
}

fn check_save_load_and_export(cfg: &NetConfig) {
    let cfg = cfg.clone();
    let trainer = Trainer::new(&cfg, OptimizerSettings::default(), 1).unwrap();
    let model = trainer.model();
    let ps = positions(4, 5, 2);
    let before = evaluate(&NetEvaluator::new(model.clone(), 4), &ps);
    for e in &before {
        assert!((e.policy.iter().sum::<f32>() - 1.0).abs() < 1e-4);
        assert!((-1.0..=1.0).contains(&e.value));
    }
    let dir = tempfile::tempdir().unwrap();
    let meta = ModelMeta::new(&cfg, 0, 7, 1);
    save_model(&model, &meta, dir.path()).unwrap();
    let (loaded, m2) = load_model(dir.path()).unwrap();
    assert_eq!(m2, meta);
    assert_eq!(loaded.input_version(), cfg.input_version);
    assert_eq!(evaluate(&NetEvaluator::new(loaded, 4), &ps), before);
    let file = dir.path().join("exported.bredon");
    export_model(&model, &meta, &file).unwrap();
    let (exp, m3) = load_exported(&file).unwrap();
    assert_eq!(m3, meta);
    assert_eq!(evaluate(&NetEvaluator::new(exp, 4), &ps), before);
    // An unknown input version is refused with a message naming it; a metadata whose
    // two versions disagree too.
    let mut bad = meta.clone();
    bad.input_version = 9;
    bad.net.input_version = 9;
    std::fs::write(dir.path().join("model.json"), serde_json::to_string(&bad).unwrap()).unwrap();
    let err = bredon_storage::error_chain(&load_model(dir.path()).unwrap_err());
    assert!(err.contains("input format version 9"), "{err}");
    let mut bad = meta.clone();
    bad.input_version = 3 - cfg.input_version;
    std::fs::write(dir.path().join("model.json"), serde_json::to_string(&bad).unwrap()).unwrap();
    let err = bredon_storage::error_chain(&load_model(dir.path()).unwrap_err());
    assert!(err.contains("inconsistent"), "{err}");
    assert!(load_exported(&dir.path().join("model.json")).is_err());
}

#[test]
fn save_load_and_export_with_wdl_and_aux_heads() {
    check_save_load_and_export(&NetConfig { input_version: 2, wdl: true, aux: true, ..tiny(4) });
    // A WDL network without auxiliary heads, on version-1 inputs.
    check_save_load_and_export(&NetConfig { wdl: true, ..tiny(4) });
}

#[test]
fn wdl_and_auxiliary_heads_train_on_a_fixed_batch() {
    let cfg = NetConfig { input_version: 2, wdl: true, aux: true, ..tiny(3) };
    let mut trainer = Trainer::new(&cfg, OptimizerSettings::default(), 3).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    let batch: Vec<TrainExample> = positions(3, 16, 5)
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let moves = p.legal_moves();
            let target = moves[rng.random_range(0..moves.len())];
            let white = p.side_to_move() == bredon_rules::Color::White;
            let mut next = p.clone();
            next.play(target).unwrap();
            let reply = next.legal_moves().first().copied();
            let aux = bredon_nn::train::AuxTargets {
                flat_margin: Some(if white { 0.2 } else { -0.2 }),
                ownership: Some((0..9).map(|sq| if (sq + i) % 3 == 0 { 1.0 } else { -1.0 }).collect()),
                // Some examples have no opponent target (the game ended, or a fast search).
                opponent_policy: reply.filter(|_| i % 4 != 0).map(|m| vec![(m, 1.0)]),
            };
            TrainExample { value: [1.0, 0.0, -1.0][i % 3], wdl: None, policy: vec![(target, 1.0)], position: p, aux }
        })
        .collect();
    let first = trainer.step(&batch, 0.01).unwrap();
    assert!(
        first.wdl > 0.0 && first.flat_margin > 0.0 && first.ownership > 0.0 && first.opponent_policy > 0.0,
        "{first:?}"
    );
    let mut last = first;
    for _ in 0..100 {
        last = trainer.step(&batch, 0.01).unwrap();
    }
    for (name, a, b) in [
        ("policy", first.policy, last.policy),
        ("value", first.value, last.value),
        ("wdl", first.wdl, last.wdl),
        ("flat margin", first.flat_margin, last.flat_margin),
        ("ownership", first.ownership, last.ownership),
        ("opponent policy", first.opponent_policy, last.opponent_policy),
    ] {
        assert!(b < a * 0.7, "{name} loss {a} -> {b}");
    }
    // The value the search sees is P(win) - P(loss), within [-1, 1].
    let model = trainer.model();
    let ps: Vec<Position> = batch.iter().map(|e| e.position.clone()).collect();
    let ev = evaluate(&NetEvaluator::new(model.clone(), 3), &ps);
    for e in &ev {
        assert!((-1.0..=1.0).contains(&e.value));
    }
    // In inference mode (BatchNorm running statistics) the values follow the targets.
    let agree: f32 = ev.iter().zip(&batch).map(|(e, ex)| e.value * ex.value).sum::<f32>() / batch.len() as f32;
    assert!(agree > 0.2, "values {:?}", ev.iter().map(|e| e.value).collect::<Vec<_>>());
    // Examples without any auxiliary target train too (the auxiliary losses are 0).
    let plain: Vec<TrainExample> =
        batch.iter().map(|e| TrainExample { aux: Default::default(), ..e.clone() }).collect();
    let l = trainer.step(&plain, 0.01).unwrap();
    assert!(l.wdl > 0.0 && l.flat_margin == 0.0 && l.ownership == 0.0 && l.opponent_policy == 0.0, "{l:?}");
}

/// A batch that does not fit the network is refused with an error that says which
/// example and why, before anything is computed: the trainer still trains afterwards.
#[test]
fn a_batch_that_does_not_fit_is_refused_and_the_trainer_still_works() {
    use bredon_nn::TrainError;
    let cfg = NetConfig { aux: true, ..tiny(3) };
    let mut trainer = Trainer::new(&cfg, OptimizerSettings::default(), 3).unwrap();
    let example = |p: Position| {
        let mv = p.legal_moves()[0];
        TrainExample { value: 0.5, wdl: None, policy: vec![(mv, 1.0)], position: p, aux: Default::default() }
    };
    let good: Vec<TrainExample> = positions(3, 4, 7).into_iter().map(example).collect();
    assert!(matches!(trainer.step(&[], 0.01), Err(TrainError::EmptyBatch)));
    let mut wrong_size = good.clone();
    wrong_size.push(example(Position::new(4).unwrap()));
    let e = trainer.step(&wrong_size, 0.01).unwrap_err();
    assert!(matches!(e, TrainError::ExampleSize { index: 4, found: 4, size: 3 }), "{e:?}");
    assert!(e.to_string().contains("example 4"), "{e}");
    let mut bad_ownership = good.clone();
    bad_ownership[2].aux.ownership = Some(vec![1.0; 16]);
    let e = trainer.step(&bad_ownership, 0.01).unwrap_err();
    assert!(matches!(e, TrainError::OwnershipSize { index: 2, found: 16, size: 3 }), "{e:?}");
    assert!(e.to_string().contains("9"), "{e}");
    assert!(trainer.step(&good, 0.01).unwrap().total.is_finite(), "the trainer trains after refusing batches");
    assert!(matches!(
        Trainer::new(&NetConfig { size: 9, ..tiny(3) }, OptimizerSettings::default(), 1),
        Err(TrainError::BadSize(9))
    ));
    // A global pooling of more channels than the blocks have is refused, not a panic.
    let pooled = NetConfig { global_pool: true, gpool_channels: 16, channels: 4, ..tiny(3) };
    let e = Trainer::new(&pooled, OptimizerSettings::default(), 1).err().expect("refused");
    assert!(e.to_string().contains("net.gpool_channels") && e.to_string().contains("1 to 4"), "{e}");
}

#[test]
fn training_reduces_the_loss_on_a_fixed_batch() {
    let cfg = tiny(3);
    let mut trainer = Trainer::new(&cfg, OptimizerSettings::default(), 3).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    let batch: Vec<TrainExample> = positions(3, 16, 5)
        .into_iter()
        .map(|p| {
            let moves = p.legal_moves();
            let target = moves[rng.random_range(0..moves.len())];
            TrainExample {
                value: if p.side_to_move() == bredon_rules::Color::White { 0.8 } else { -0.8 },
                policy: vec![(target, 1.0)],
                position: p,
                wdl: None,
                aux: Default::default(),
            }
        })
        .collect();
    let first = trainer.step(&batch, 0.01).unwrap();
    let mut last = first;
    for _ in 0..100 {
        last = trainer.step(&batch, 0.01).unwrap();
    }
    assert!(last.policy < first.policy * 0.5, "policy loss {} -> {}", first.policy, last.policy);
    assert!(last.value < first.value, "value loss {} -> {}", first.value, last.value);
    // Optimiser state survives a save/load round trip.
    let dir = tempfile::tempdir().unwrap();
    trainer.save_optimizer(&dir.path().join("optim.bpk")).unwrap();
    trainer.load_optimizer(&dir.path().join("optim.bpk")).unwrap();
    let after = trainer.step(&batch, 0.01).unwrap();
    assert!(after.total.is_finite());
}

#[test]
fn a_probed_step_reports_every_phase_in_order_and_trains_as_a_plain_step() {
    let cfg = tiny(3);
    let mut plain = Trainer::new(&cfg, OptimizerSettings::default(), 6).unwrap();
    let mut probed = Trainer::from_model(&cfg, plain.model(), OptimizerSettings::default()).unwrap();
    let batch: Vec<TrainExample> = positions(3, 12, 7)
        .into_iter()
        .map(|p| {
            let m = p.legal_moves()[0];
            TrainExample { value: 0.5, policy: vec![(m, 1.0)], position: p, wdl: None, aux: Default::default() }
        })
        .collect();
    for _ in 0..3 {
        let mut seen = Vec::new();
        let a = plain.step(&batch, 0.01).unwrap();
        let b = match probed.try_step_probed(&batch, 0.01, &mut |phase| seen.push(phase)).unwrap() {
            bredon_nn::StepOutcome::Trained(l) => l,
            bredon_nn::StepOutcome::Skipped(why) => panic!("skipped: {why}"),
        };
        assert_eq!(seen, bredon_nn::StepPhase::ALL.to_vec());
        // The same step: the same losses, and the same weights after it (so the next
        // step's losses agree too).
        assert_eq!((a.policy, a.value, a.total), (b.policy, b.value, b.total));
    }
}

#[test]
fn batching_service_matches_direct_evaluation_across_threads() {
    let cfg = tiny(5);
    let trainer = Trainer::new(&cfg, OptimizerSettings::default(), 9).unwrap();
    let direct = NetEvaluator::new(trainer.model(), 5);
    let sets: Vec<Vec<Position>> = (0..6).map(|i| positions(5, 3 + i, 10 + i as u64)).collect();
    let expected: Vec<_> = sets.iter().map(|s| evaluate(&direct, s)).collect();
    // One service thread (its pass split over rayon's pool), and three shards, each with
    // its own copy of the network on a pool of one, the requests dealt out in turn; and
    // burn's path, which computes the priors over each position's legal moves on the
    // device (gathered from the logits, padded to the batch's widest position) and sends
    // back only those.
    for (kind, shards) in [(InferenceKind::FAST_F32, 1), (InferenceKind::FAST_F32, 3), (InferenceKind::Burn, 1)] {
        let service = InferenceService::start_sharded(trainer.model(), 5, 64, kind, shards);
        assert_eq!(service.shards(), shards);
        std::thread::scope(|scope| {
            for (s, e) in sets.iter().zip(&expected) {
                let h = service.handle();
                scope.spawn(move || {
                    for _ in 0..5 {
                        let got = evaluate(&h, s);
                        assert_eq!(got.len(), e.len());
                        for (g, w) in got.iter().zip(e) {
                            assert!((g.value - w.value).abs() < 1e-4, "{kind}, {shards} shard(s)");
                            assert_eq!(g.policy.len(), w.policy.len(), "{kind}, {shards} shard(s)");
                            for (a, b) in g.policy.iter().zip(&w.policy) {
                                assert!((a - b).abs() < 1e-4, "{kind}, {shards} shard(s)");
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(service.evaluations(), sets.iter().map(|s| s.len() as u64 * 5).sum::<u64>());
        // 30 requests: at least one pass per shard, at most one per request.
        assert!((shards as u64..=30).contains(&service.batches()), "{} batches", service.batches());
        // Where the time went: every pass and request counted; the fast path's whole pass
        // as `forward` (it has no separate encode or readback), burn's split into encode,
        // forward (upload and launch) and readback.
        let t = service.times();
        assert_eq!((t.batches, t.positions, t.requests), (service.batches(), service.evaluations(), 30));
        assert!(t.forward > Duration::ZERO && t.round_trip >= t.forward, "{t:?}");
        match kind {
            InferenceKind::Burn => assert!(t.encode > Duration::ZERO && t.readback > Duration::ZERO, "{t:?}"),
            _ => assert_eq!((t.encode, t.readback), (Duration::ZERO, Duration::ZERO), "{t:?}"),
        }
        service.shutdown();
    }
}

/// The timed pass of `bench nn`: the same evaluations as the search's, each phase timed.
#[test]
fn a_timed_forward_pass_gives_the_search_evaluations_and_every_phase() {
    let cfg = tiny(5);
    let trainer = Trainer::new(&cfg, OptimizerSettings::default(), 4).unwrap();
    let direct = NetEvaluator::with_kind(trainer.model(), 5, InferenceKind::Burn);
    let set = positions(5, 9, 3);
    let refs: Vec<&Position> = set.iter().collect();
    let legal: Vec<Vec<bredon_rules::Move>> = set.iter().map(|p| p.legal_moves()).collect();
    let legal: Vec<&[bredon_rules::Move]> = legal.iter().map(|m| m.as_slice()).collect();
    let want = direct.evaluate_batch(&refs, &legal);
    // The legal moves' counts differ across the positions: the priors gathered on the
    // device are padded to one width, and the padding must not leak into any of them.
    assert!(legal.iter().any(|m| m.len() != legal[0].len()));
    let mut times = Vec::new();
    for readback in [PolicyReadback::Logits, PolicyReadback::LegalPriors] {
        let (got, t) = bredon_infer::forward_timed(&trainer.model(), &refs, &legal, 5, readback).unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert!((g.value - w.value).abs() < 1e-5, "{readback}");
            assert_eq!(g.policy.len(), w.policy.len(), "{readback}");
            assert!(g.policy.iter().zip(&w.policy).all(|(a, b)| (a - b).abs() < 1e-5), "{readback}");
        }
        for (phase, d) in
            [("encode", t.encode), ("kernels", t.kernels), ("readback", t.readback), ("convert", t.convert)]
        {
            assert!(d > Duration::ZERO, "{readback} {phase}: {t:?}");
        }
        times.push(t);
    }
    let t = times[0];
    assert_eq!(t.total(), t.encode + t.upload + t.kernels + t.readback + t.convert);
    let mut twice = t;
    twice += t;
    assert_eq!(twice.per(2), t);
}
