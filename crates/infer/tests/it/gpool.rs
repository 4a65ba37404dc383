//! Global pooling (`[net] global_pool`) and the pooling value head (`value_head = "pool"`)
//! on every path: burn, the fast path, save and load, training, and upgrading a trained
//! network that has neither.

use crate::common;
use bredon_infer::forward_raw;
use bredon_kernels::fast::{FastNet, Isa};
use bredon_netform::meta::ModelMeta;
use bredon_netform::{NetConfig, PolicyHead, ValueHead};
use bredon_nn::Outputs;
use bredon_nn::train::OptimizerSettings;
use bredon_nn::{TakNet, Trainer, export_model, load_exported, load_model, save_model};
use bredon_rules::Position;
use burn::module::Module;
use common::{random_examples, random_positions, trained, with_random_tensors};
use rand::SeedableRng;

/// The values of every tensor of `model` whose name contains `part`.
fn tensor_values(model: &TakNet, part: &str) -> Vec<f32> {
    let bytes = model.clone().into_record().into_bytes().unwrap();
    let tensors = burn_pack::Reader::from_bytes(bytes).unwrap().into_tensors().unwrap();
    let mut out = Vec::new();
    for t in tensors.into_iter().filter(|t| t.name.contains(part)) {
        let bytes = t.into_bytes().unwrap();
        out.extend(bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())));
    }
    out
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / x.abs().max(1.0)).fold(0.0, f32::max)
}

fn gpool_config(size: usize, value_head: ValueHead, wdl: bool) -> NetConfig {
    NetConfig {
        size,
        blocks: 2,
        channels: 24,
        value_hidden: 12,
        policy_filters: 4,
        input_version: 2,
        wdl,
        aux: wdl,
        global_pool: true,
        gpool_channels: 8,
        value_head,
        value_filters: if value_head == ValueHead::Pool { 6 } else { 2 },
        ..NetConfig::default()
    }
}

/// A trained network of `cfg` with its global pooling layers set to random weights large
/// enough to change every output.
fn gpool_network(cfg: &NetConfig, positions: &[Position], seed: u64) -> TakNet {
    let model = trained(cfg, positions, seed);
    with_random_tensors(&model, cfg, &["gpool_fc"], 0.5, seed)
}

#[test]
fn names_and_serialisation_of_the_new_options() {
    let cfg = gpool_config(6, ValueHead::Pool, false);
    assert_eq!(cfg.name(), "b2c24-v2-g8-vf6-vp");
    let json = serde_json::to_string(&cfg).unwrap();
    assert!(json.contains("\"global_pool\":true") && json.contains("\"value_head\":\"pool\""), "{json}");
    assert_eq!(serde_json::from_str::<NetConfig>(&json).unwrap(), cfg);
    // Off (the defaults), none of the new fields is written: older builds read the file.
    let plain = serde_json::to_string(&NetConfig::default_for_size(6)).unwrap();
    for field in ["global_pool", "gpool_channels", "value_head", "value_filters"] {
        assert!(!plain.contains(field), "{plain}");
    }
    assert_eq!(NetConfig::default_for_size(6).name(), "b6c64");
    let e = serde_json::from_str::<NetConfig>(r#"{"value_head": "flat"}"#).unwrap_err().to_string();
    assert!(e.contains("unknown variant"), "{e}");
}

/// The fast path agrees with burn within 1e-4 with global pooling (non-zero weights) and
/// both value heads, on 5x5 and 6x6, for every instruction set of this CPU.
#[test]
fn fast_path_matches_burn_with_global_pooling() {
    for (size, value_head, wdl) in [
        (5, ValueHead::Dense, false),
        (5, ValueHead::Pool, true),
        (6, ValueHead::Dense, true),
        (6, ValueHead::Pool, false),
    ] {
        let cfg = gpool_config(size, value_head, wdl);
        let positions = random_positions(size, 96, 30 + size as u64);
        let model = gpool_network(&cfg, &positions, 11);
        assert_eq!((model.gpool_channels(), model.value_head()), (Some(8), value_head));
        let folded = model.fold(size);
        assert_eq!(folded.config, cfg, "the folded network reads its architecture from the weights");
        let refs: Vec<&Position> = positions.iter().collect();
        // The global pooling changes the outputs (so the comparison below tests it).
        let plain_cfg = NetConfig { global_pool: false, ..cfg.clone() };
        let (plain, report) = TakNet::from_compatible(&plain_cfg, &model, &cfg);
        assert!(report.fresh.is_empty(), "{report:?}");
        let (bl, bv) = forward_raw(&model, &refs, size);
        let (pl, pv) = forward_raw(&plain, &refs, size);
        assert!(max_diff(&bl, &pl) > 1e-2 && max_diff(&bv, &pv) > 1e-3, "global pooling changes nothing");
        assert!(bl.iter().any(|&x| x.abs() > 1e-3));
        let fast: Vec<FastNet> = Isa::available().into_iter().map(|isa| FastNet::from_folded(&folded, isa)).collect();
        for b in [1, 3, 17, 96] {
            for chunk in refs.chunks(b).take(3) {
                // burn's outputs once per chunk, against every instruction set's fast path.
                let (bl, bv) = forward_raw(&model, chunk, size);
                for fast in &fast {
                    let (fl, fv) = fast.forward(chunk);
                    let (dl, dv) = (max_diff(&bl, &fl), max_diff(&bv, &fv));
                    let isa = fast.isa();
                    assert!(dl <= 1e-4 && dv <= 1e-4, "{size}x{size} {value_head:?} {isa:?} batch {b}: {dl} {dv}");
                }
            }
        }
    }
}

/// The pooling value head runs on any board size: its weights are the same for all.
#[test]
fn the_pooling_value_head_has_no_board_sized_weights() {
    let shapes = |size| {
        let cfg = NetConfig {
            size,
            value_head: ValueHead::Pool,
            value_filters: 8,
            policy_head: PolicyHead::Conv,
            global_pool: true,
            aux: true,
            wdl: true,
            ..NetConfig::default()
        };
        bredon_netform::limits::expected_tensors(&cfg)
            .into_iter()
            .filter(|(name, _)| !name.starts_with("policy_out") && !name.starts_with("opponent_policy_out"))
            .collect::<Vec<_>>()
    };
    assert_eq!(shapes(4), shapes(7));
    assert!(shapes(5).iter().any(|(n, s)| n == "value_fc1.weight" && *s == [24, 64]));
}

#[test]
fn a_gpool_model_saves_and_loads_with_identical_outputs() {
    let cfg = gpool_config(5, ValueHead::Pool, true);
    let positions = random_positions(5, 64, 3);
    let model = gpool_network(&cfg, &positions, 5);
    let refs: Vec<&Position> = positions.iter().collect();
    let want = forward_raw(&model, &refs, 5);
    let meta = ModelMeta::new(&cfg, 4, 10, 2);
    let dir = tempfile::tempdir().unwrap();
    save_model(&model, &meta, dir.path()).unwrap();
    let file = dir.path().join("net.bredon");
    export_model(&model, &meta, &file).unwrap();
    for (loaded, m) in [load_model(dir.path()).unwrap(), load_exported(&file).unwrap()] {
        assert_eq!(m, meta);
        assert_eq!(tensor_values(&loaded, "gpool_fc"), tensor_values(&model, "gpool_fc"));
        assert_eq!(forward_raw(&loaded, &refs, 5), want);
    }
}

#[test]
fn a_training_step_trains_the_gpool_layers() {
    let cfg = gpool_config(6, ValueHead::Pool, true);
    let positions = random_positions(6, 32, 8);
    let mut trainer = Trainer::new(&cfg, OptimizerSettings::default(), 1).unwrap();
    let before = tensor_values(&trainer.model(), "gpool_fc");
    assert_eq!(before.len(), 2 * (24 * 24 + 24));
    assert!(before.iter().all(|&w| w == 0.0), "the gpool layers start at zero");
    let value_before = tensor_values(&trainer.model(), "value_fc1");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let losses = trainer.step(&random_examples(&positions, &mut rng), 0.01).unwrap();
    assert!(losses.policy.is_finite() && losses.value.is_finite());
    let after = tensor_values(&trainer.model(), "gpool_fc");
    let changed = after.iter().filter(|&&w| w != 0.0).count();
    assert!(changed > after.len() / 2, "only {changed} of {} gpool weights changed", after.len());
    assert_ne!(tensor_values(&trainer.model(), "value_fc1"), value_before);
}

/// A trained network without global pooling, upgraded to it, computes exactly the same
/// outputs (the new layers are zero) on burn and on the fast path; the report names the
/// new tensors.
#[test]
fn upgrading_a_trained_model_to_global_pooling_keeps_its_outputs() {
    let old = NetConfig {
        size: 5,
        blocks: 3,
        channels: 16,
        value_hidden: 8,
        policy_filters: 4,
        input_version: 2,
        wdl: true,
        aux: true,
        ..NetConfig::default()
    };
    let positions = random_positions(5, 64, 4);
    let model = trained(&old, &positions, 3);
    let new = NetConfig { global_pool: true, gpool_channels: 16, ..old.clone() };
    let (upgraded, report) = TakNet::from_compatible(&new, &model, &old);
    let fresh: Vec<String> =
        (0..3).flat_map(|b| ["weight", "bias"].map(|p| format!("blocks.{b}.gpool_fc.{p}"))).collect();
    assert_eq!(report.fresh, fresh);
    assert_eq!(report.copied.len(), bredon_netform::limits::expected_tensors(&old).len());
    assert!(report.summary().contains("blocks.2.gpool_fc.bias"), "{}", report.summary());
    assert_eq!(upgraded.gpool_channels(), Some(16));
    let refs: Vec<&Position> = positions.iter().collect();
    assert_eq!(forward_raw(&upgraded, &refs, 5), forward_raw(&model, &refs, 5));
    let x = bredon_nn::train::encode_batch(refs.iter().copied(), 2, 5, &model.device());
    let (a, b) = (model.forward_all(x.clone(), Outputs::All), upgraded.forward_all(x, Outputs::All));
    let floats = |t: burn::tensor::Tensor<2>| t.into_data().convert::<f32>().try_into_vec::<f32>().unwrap();
    for (p, q) in [
        (a.wdl.unwrap(), b.wdl.unwrap()),
        (a.flat_margin.unwrap(), b.flat_margin.unwrap()),
        (a.ownership.unwrap(), b.ownership.unwrap()),
        (a.opponent_policy.unwrap(), b.opponent_policy.unwrap()),
    ] {
        assert_eq!(floats(p), floats(q));
    }
    let fast_old = FastNet::new(&model.fold(5)).forward(&refs);
    let fast_new = FastNet::new(&upgraded.fold(5)).forward(&refs);
    assert_eq!(fast_old, fast_new);
    // Trained on, it moves away from the old network.
    let mut trainer = Trainer::from_model(&new, upgraded, OptimizerSettings::default()).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    trainer.step(&random_examples(&positions[..32], &mut rng), 0.01).unwrap();
    assert!(tensor_values(&trainer.model(), "gpool_fc").iter().any(|&w| w != 0.0));

    // Changing the value head's kind keeps everything but its hidden layer.
    let pooled = NetConfig { value_head: ValueHead::Pool, ..old.clone() };
    let (_, report) = TakNet::from_compatible(&pooled, &model, &old);
    assert_eq!(report.fresh, ["value_fc1.weight"]);
}

/// Across board sizes (`--init-from` a 5x5 model into a 6x6 run): a network whose heads
/// are all size-independent (global pooling, the pooling value head, the convolutional
/// policy heads) computes on 6x6 boards exactly what the 5x5 network computes there:
/// the same values, WDL, margin and ownership, the same logit for every move both sizes
/// have, and 0 for the spreads of six pieces. Layers over N² features start fresh.
#[test]
fn a_size_independent_network_carries_to_another_board_size() {
    use bredon_netform::policy::{index_to_move, policy_size};
    let small = NetConfig { policy_head: PolicyHead::Conv, ..gpool_config(5, ValueHead::Pool, true) };
    let model = gpool_network(&small, &random_positions(5, 64, 7), 5);
    let big = NetConfig { size: 6, ..small.clone() };
    let (moved, report) = TakNet::from_compatible(&big, &model, &small);
    assert!(report.fresh.is_empty(), "{report:?}");
    let mut mapped = report.mapped.clone();
    mapped.sort();
    assert_eq!(
        mapped,
        ["opponent_policy_out.bias", "opponent_policy_out.weight", "policy_out.bias", "policy_out.weight"]
    );
    assert!(report.summary().contains("mapped to the new board size: policy_out.weight"), "{}", report.summary());

    // The 5x5 network runs on 6x6 inputs as it is: only its policy layout is 5x5's.
    let six = random_positions(6, 24, 8);
    let refs: Vec<&Position> = six.iter().collect();
    let x = bredon_nn::train::encode_batch(refs.iter().copied(), 2, 6, &model.device());
    let (a, b) = (model.forward_all(x.clone(), Outputs::All), moved.forward_all(x, Outputs::All));
    let floats = |t: burn::tensor::Tensor<2>| t.into_data().convert::<f32>().try_into_vec::<f32>().unwrap();
    for (p, q) in [
        (a.value, b.value),
        (a.wdl.unwrap(), b.wdl.unwrap()),
        (a.flat_margin.unwrap(), b.flat_margin.unwrap()),
        (a.ownership.unwrap(), b.ownership.unwrap()),
    ] {
        assert_eq!(floats(p), floats(q));
    }
    // The source's logits in its own layout on a 6x6 map: placements `kind × 36 + square`,
    // spreads `3 × 36 + (square × 4 + direction) × 31 + pattern − 1`.
    let area = 36;
    let (n_src, n_dst) = ((1 << 5) - 1, policy_size(6));
    for (src, dst) in [(a.policy, b.policy), (a.opponent_policy.unwrap(), b.opponent_policy.unwrap())] {
        let (src, dst) = (floats(src), floats(dst));
        let per_src = src.len() / six.len();
        assert_eq!(per_src, 3 * area + area * 4 * n_src);
        let (mut carried, mut new) = (0, 0);
        for (row, logits) in dst.chunks(n_dst).enumerate() {
            for (i, &logit) in logits.iter().enumerate() {
                let mv = index_to_move(i, 6).unwrap();
                let from = if mv.is_placement() {
                    Some(i)
                } else {
                    let p = mv.pattern() as usize;
                    (p <= n_src).then(|| 3 * area + (mv.square().index() * 4 + mv.direction().index()) * n_src + p - 1)
                };
                match from {
                    Some(j) => {
                        assert_eq!(logit, src[row * per_src + j], "{mv:?}");
                        carried += 1;
                    }
                    None => {
                        assert_eq!(logit, 0.0, "{mv:?} (six pieces carried) starts at zero");
                        new += 1;
                    }
                }
            }
        }
        assert_eq!((carried, new), (six.len() * (3 * area + area * 4 * 31), six.len() * area * 4 * 32));
        assert!(src.iter().any(|&x| x.abs() > 1e-3));
    }

    // Dense heads (over N² features) cannot carry: they start fresh; the trunk still does.
    let dense = gpool_config(5, ValueHead::Dense, true);
    let dense_model = TakNet::new(&dense, &bredon_nn::device::cpu());
    let (_, report) = TakNet::from_compatible(&NetConfig { size: 6, ..dense.clone() }, &dense_model, &dense);
    assert!(report.mapped.is_empty());
    for name in ["policy_fc.weight", "value_fc1.weight", "opponent_policy_fc.weight"] {
        assert!(report.fresh.iter().any(|f| f == name), "{name} in {report:?}");
    }
    assert!(report.copied.iter().any(|c| c == "blocks.1.conv2.weight"), "{report:?}");
}

/// More residual blocks (`--init-from` a trained model into a deeper config): the added
/// blocks start as the identity, so the deeper network computes exactly what the trained
/// one does on the burn and the fast paths, and training then moves them.
#[test]
fn a_trained_network_deepens_with_identity_blocks() {
    let old = NetConfig { policy_head: PolicyHead::Conv, ..gpool_config(5, ValueHead::Pool, true) };
    let positions = random_positions(5, 64, 4);
    let model = trained(&old, &positions, 3);
    let deeper = NetConfig { blocks: old.blocks + 2, ..old.clone() };
    let (grown, report) = TakNet::from_compatible(&deeper, &model, &old);
    assert_eq!(report.identity_blocks, [old.blocks, old.blocks + 1]);
    assert!(report.fresh.is_empty(), "{:?}", report.fresh);
    assert_eq!(report.copied.len(), bredon_netform::limits::expected_tensors(&old).len());
    let added = format!("residual blocks {} to {} added as the identity", old.blocks, old.blocks + 1);
    assert!(report.summary().contains(&added), "{}", report.summary());
    let refs: Vec<&Position> = positions.iter().collect();
    assert_eq!(forward_raw(&grown, &refs, 5), forward_raw(&model, &refs, 5));
    assert_eq!(FastNet::new(&grown.fold(5)).forward(&refs), FastNet::new(&model.fold(5)).forward(&refs));
    let mut trainer = Trainer::from_model(&deeper, grown, OptimizerSettings::default()).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    trainer.step(&random_examples(&positions[..32], &mut rng), 0.01).unwrap();
    let new_scale = tensor_values(&trainer.model(), &format!("blocks.{}.bn2.gamma", old.blocks));
    assert!(new_scale.iter().any(|&g| g != 0.0), "the added block's scale left zero");
}

/// The step with its convolutions as matrix products over rows trains like burn's conv2d
/// on the CPU: from the same weights, each of three steps gives the same losses and the
/// same weights and BatchNorm statistics after, for the global-pooling network with every
/// head and a dense one without.
///
/// Each step starts both ways from the same weights (the direct way's), so that rounding
/// does not compound over the steps. Global pooling's maxima still make the gradients
/// differ past rounding where two squares tie (below): the bound there is relative to
/// the step's change.
#[test]
fn matmul_convolutions_train_like_burns_conv2d() {
    use bredon_nn::Convolutions;
    let dense = NetConfig {
        blocks: 1,
        channels: 8,
        policy_filters: 2,
        value_hidden: 8,
        aux: true,
        policy_head: PolicyHead::Dense,
        ..NetConfig::default_for_size(5)
    };
    for cfg in [gpool_config(6, ValueHead::Pool, true), dense] {
        let positions = random_positions(cfg.size, 48, 4);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let batch = random_examples(&positions, &mut rng);
        let init = if cfg.global_pool { gpool_network(&cfg, &positions, 2) } else { trained(&cfg, &positions, 2) };
        // Plain SGD: a step is the gradient times the learning rate, so equal gradients give
        // equal weights. Adam divides each gradient by its own running size, which turns the
        // last bits of a near-zero gradient (the two ways sum in different orders) into steps
        // a sizeable fraction of the learning rate (4.2e-4 apart after 3 steps, in CI):
        // that would test the optimiser's amplification, not the convolutions.
        let sgd = OptimizerSettings { kind: bredon_nn::OptimizerKind::Sgd, ..OptimizerSettings::default() };
        let trainer = |model: &TakNet, c: Convolutions| {
            let mut t = Trainer::from_model(&cfg, model.clone(), sgd.clone()).unwrap();
            t.set_convolutions(c);
            assert_eq!(t.convolutions(), c);
            t
        };
        let mut model = init.clone();
        for step in 0..3 {
            let mut trainers = [Convolutions::Direct, Convolutions::Matmul].map(|c| trainer(&model, c));
            let [a, b] = [0, 1].map(|i| trainers[i].step(&batch, 0.01).unwrap());
            for (what, x, y) in
                [("policy", a.policy, b.policy), ("value", a.value, b.value), ("total", a.total, b.total)]
            {
                assert!(
                    (x - y).abs() <= 1e-4 * x.abs().max(1.0),
                    "{}, step {step}: {what} loss {x} vs {y}",
                    cfg.name()
                );
            }
            let [a, b] = [0, 1].map(|i| trainers[i].model());
            for part in ["conv", "running_mean", "running_var", "gpool", "fc"] {
                let (after, other) = (tensor_values(&a, part), tensor_values(&b, part));
                if after.is_empty() {
                    assert!(part == "gpool" && !cfg.global_pool, "{}: no {part} tensors", cfg.name());
                    continue;
                }
                // The two ways agree to single precision's rounding (~1e-8 to ~1e-6
                // measured; relative above 1). With global pooling, a maximum between
                // two squares equal to rounding may take the gradient to either square:
                // on an AVX-512 CPU the second step's convolution weights differ by
                // 5.4e-5 where the step changed them by up to 1.26e-3 (4 %), and nothing
                // downstream of the first block's pooling differs. There the bound is
                // 10 % of the step's largest change: a wrong tap or a lost term moves a
                // tensor by the whole of its change.
                let d = max_diff(&after, &other);
                let changed = max_diff(&after, &tensor_values(&model, part));
                let bound = if cfg.global_pool { (0.1 * changed).max(1e-5) } else { 1e-5 };
                assert!(
                    d <= bound,
                    "{}, step {step}: the {part} tensors differ by {d} (the step changed them by up to {changed})",
                    cfg.name()
                );
            }
            model = a;
        }
        // The steps moved every part (by ~1e-3 to ~0.7).
        for part in ["conv", "running_mean", "running_var", "gpool", "fc"] {
            let after = tensor_values(&model, part);
            if after.is_empty() {
                continue;
            }
            let moved = max_diff(&after, &tensor_values(&init, part));
            assert!(moved >= 1e-4, "{}: the {part} tensors moved only {moved} in 3 steps", cfg.name());
        }
    }
}
