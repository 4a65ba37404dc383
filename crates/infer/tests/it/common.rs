//! Helpers shared by the nn integration tests.

use bredon_rules::Position;
use bredon_rules::notation::Ptn;

/// `checkpoints/shipped`: the models the repository ships.
pub fn shipped_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped")
}

/// Every unfinished position of the reference games in `shared/data/games` (all 5x5).
pub fn real_positions() -> Vec<Position> {
    let dir =
        bredon_rules::testdata::shared_data_dir().expect("shared/data not found; set BREDON_SHARED_DATA").join("games");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptn"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let replay = Ptn::parse(&std::fs::read_to_string(&f).unwrap()).unwrap().replay().unwrap();
        out.extend(replay.positions().iter().filter(|p| p.result().is_none()).cloned());
    }
    out
}

/// `n` unfinished positions of random games on `size`, each after fewer than 3·N² plies
/// (longer games than the library's default: taller stacks, emptier reserves).
pub fn random_positions(size: usize, n: usize, seed: u64) -> Vec<Position> {
    bredon_netform::positions::random_positions_within(size, n, seed, 3 * size * size)
}

/// `positions` with each position once: random games repeat their first plies, and one
/// position counted a hundred times would weigh as much as a hundred.
pub fn distinct(mut positions: Vec<Position>) -> Vec<Position> {
    let mut seen = std::collections::HashSet::new();
    positions.retain(|p| seen.insert(p.hash()));
    positions
}

/// The shipped networks carried to other sizes (`TakNet::on_size`, the path `--init-from`
/// takes to start a run on another size, and `bredon tei`'s for a size without a model):
/// the 6x6 one to 3x3, 7x7 and 8x8, and the 7x7 one to 8x8, as (the source's name, the
/// carried network, its size).
pub fn carried_shipped() -> Vec<(&'static str, bredon_nn::TakNet, usize)> {
    let mut out = Vec::new();
    for (from, sizes) in [("6x6", &[3, 7, 8][..]), ("7x7", &[8][..])] {
        let (source, meta) = bredon_nn::load_exported(&shipped_dir().join(format!("{from}.bredon"))).unwrap();
        for &size in sizes {
            let (model, _) = source.on_size(&meta.net, size).expect("a size-independent network plays every size");
            out.push((from, model, size));
        }
    }
    out
}

/// `model` (a network of `cfg`) with every tensor whose name contains one of `names`
/// replaced by values drawn from N(0, `std`²): weights that start at zero (the global
/// pooling layers) made to matter.
pub fn with_random_tensors(
    model: &bredon_nn::TakNet,
    cfg: &bredon_netform::NetConfig,
    names: &[&str],
    std: f32,
    seed: u64,
) -> bredon_nn::TakNet {
    use burn::module::Module;
    use rand::{Rng, SeedableRng};
    // A standard normal sample (Box–Muller).
    let normal = |rng: &mut rand_chacha::ChaCha8Rng| {
        let u: f32 = rng.random_range(f32::EPSILON..1.0);
        let v: f32 = rng.random_range(0.0..1.0);
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let bytes = model.clone().into_record().into_bytes().unwrap();
    let tensors = burn_pack::Reader::from_bytes(bytes).unwrap().into_tensors().unwrap();
    let mut replaced = 0;
    let tensors: Vec<burn_pack::Tensor> = tensors
        .into_iter()
        .map(|t| {
            if !names.iter().any(|n| t.name.contains(n)) {
                return t;
            }
            replaced += 1;
            let (name, dtype, shape, id, bytes) = t.into_parts().unwrap();
            let data: Vec<u8> = (0..bytes.len() / 4).flat_map(|_| (normal(&mut rng) * std).to_le_bytes()).collect();
            burn_pack::Tensor::new(name, dtype, shape, id, burn::tensor::Bytes::from_bytes_vec(data))
        })
        .collect();
    assert!(replaced > 0, "no tensor named like {names:?}");
    let bytes = burn_pack::Writer::new(tensors).into_bytes().unwrap();
    let record = burn::store::ModuleRecord::from_bytes(bytes).unwrap();
    bredon_nn::TakNet::new(cfg, &model.device()).try_load_record(record).unwrap()
}

/// A random legal move as the policy target and a random value for each position.
pub fn random_examples(positions: &[Position], rng: &mut impl rand::Rng) -> Vec<bredon_nn::TrainExample> {
    positions
        .iter()
        .map(|p| {
            let moves = p.legal_moves();
            bredon_nn::TrainExample {
                policy: vec![(moves[rng.random_range(0..moves.len())], 1.0)],
                value: rng.random_range(-1.0..1.0),
                position: p.clone(),
                wdl: None,
                aux: Default::default(),
            }
        })
        .collect()
}

/// A few training steps (BatchNorm statistics no longer the identity).
pub fn trained(cfg: &bredon_netform::NetConfig, positions: &[Position], seed: u64) -> bredon_nn::TakNet {
    use rand::SeedableRng;
    let mut trainer = bredon_nn::Trainer::new(cfg, bredon_nn::train::OptimizerSettings::default(), seed).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for chunk in positions.chunks(32).take(3) {
        trainer.step(&random_examples(chunk, &mut rng), 0.01).unwrap();
    }
    trainer.model()
}

/// Every output of `net`'s fast pass over `positions`: the policy logits and the scalars.
pub fn fast_outputs(net: &bredon_kernels::FastNet, positions: &[Position]) -> (Vec<f32>, bredon_kernels::Scalars) {
    let refs: Vec<&Position> = positions.iter().collect();
    let mut logits = Vec::new();
    let mut scalars = bredon_kernels::Scalars::default();
    net.forward_scalars_into(&refs, &mut logits, &mut scalars);
    (logits, scalars)
}

/// The two small networks the lower-precision kernels are checked on, trained a little
/// and folded, each with its name and the 70 random-game positions it trained on: a plain
/// 5x5 one of `plain_channels`, and a 6x6 one of `pooled_channels` with global pooling
/// (its pooling layers' weights made to matter) and the pooling value head.
pub fn low_precision_nets(
    plain_channels: usize,
    pooled_channels: usize,
) -> Vec<(String, bredon_netform::FoldedNet, Vec<Position>)> {
    use bredon_netform::{NetConfig, ValueHead};
    let plain = NetConfig {
        size: 5,
        blocks: 2,
        channels: plain_channels,
        value_hidden: 16,
        policy_filters: 4,
        ..NetConfig::default()
    };
    let pooled = NetConfig {
        size: 6,
        blocks: 2,
        channels: pooled_channels,
        value_hidden: 12,
        policy_filters: 4,
        input_version: 2,
        wdl: true,
        aux: true,
        global_pool: true,
        gpool_channels: 8,
        value_head: ValueHead::Pool,
        value_filters: 6,
        ..NetConfig::default()
    };
    [plain, pooled]
        .into_iter()
        .map(|cfg| {
            let positions = random_positions(cfg.size, 70, 11);
            let mut model = trained(&cfg, &positions, 3);
            if cfg.global_pool {
                model = with_random_tensors(&model, &cfg, &["gpool_fc"], 0.5, 3);
            }
            (cfg.name(), model.fold(cfg.size), positions)
        })
        .collect()
}

/// Whether this CPU runs `precision`'s blocks on their own units; when not, says loudly
/// that `what` tests only the portable kernel.
pub fn native_or_say_so(precision: bredon_kernels::Precision, what: &str) -> bool {
    let native = precision.is_native();
    if !native {
        eprintln!(
            "NOTE: this CPU lacks the {} (or Linux refused them): {what} runs the portable {precision} kernel only (the {} kernel is NOT tested here)",
            precision.units(),
            precision.units()
        );
    }
    native
}
