//! The training loop's view of the network: create, load, save, train, serve.

use crate::error::{Context, IoContext, Result, RunError};
use bredon_infer::Compute;
use bredon_infer::InferenceService;
use bredon_mcts::Evaluator;
use bredon_netform::NetConfig;
use bredon_netform::meta::ModelMeta;
use bredon_nn::train::{AuxTargets, OptimizerSettings, wdl_of_value};
use bredon_nn::{StepOutcome, TrainExample, Trainer, load_model, save_model};
use bredon_rules::{Position, Symmetry};
use bredon_storage::fsutil::atomic_write_with;
use rand::Rng;
use std::path::Path;
use std::sync::Arc;

use crate::config::RunConfig;
use crate::replay::Sample;
use crate::rundir::{layout, read_state_file};
use bredon_storage::integrity::check_crc;

/// A network under training with its optimiser.
pub struct Learner {
    trainer: Trainer,
    net: NetConfig,
    half_komi: i8,
    inference: bredon_infer::InferenceKind,
    /// `[train] search_value_weight`.
    search_value_weight: f32,
}

/// The optimiser settings and loss weights of the run's `[train]` section.
pub fn optimizer_settings(cfg: &RunConfig) -> OptimizerSettings {
    OptimizerSettings {
        kind: cfg.train.optimizer,
        weight_decay: cfg.train.weight_decay(),
        decay_mode: cfg.train.weight_decay_mode,
        decay_vectors: cfg.train.decay_norms_and_biases,
        value_loss_weight: cfg.train.value_loss_weight,
        wdl_loss_weight: cfg.train.wdl_loss_weight,
        flat_margin_loss_weight: cfg.train.flat_margin_loss_weight,
        ownership_loss_weight: cfg.train.ownership_loss_weight,
        opponent_policy_loss_weight: cfg.train.opponent_policy_loss_weight,
    }
}

/// The run's network architecture with the size filled in.
pub fn net_config(cfg: &RunConfig) -> NetConfig {
    cfg.net.for_size(cfg.game.size)
}

impl Learner {
    /// The learner of `net` (the run's architecture) trained by `trainer`, with the run's
    /// komi, inference and value-target settings.
    fn with_trainer(cfg: &RunConfig, net: NetConfig, mut trainer: Trainer) -> Learner {
        trainer.set_convolutions(cfg.device.convolutions);
        Learner {
            trainer,
            net,
            half_komi: cfg.game.half_komi(),
            inference: cfg.selfplay.inference_kind(),
            search_value_weight: cfg.train.search_value_weight as f32,
        }
    }

    /// A new random network for the run, trained on `compute`'s device.
    pub fn new(cfg: &RunConfig, seed: u64, compute: &Compute) -> Result<Learner> {
        let net = net_config(cfg);
        let trainer = Trainer::new_on(&net, optimizer_settings(cfg), seed, &compute.device)?;
        Ok(Learner::with_trainer(cfg, net, trainer))
    }

    /// Loads a checkpoint directory (model and, if present, optimiser state), verifying
    /// the checksums (the optimiser's is recorded in the checkpoint's `state.json`), onto
    /// `compute`'s device.
    pub fn load(cfg: &RunConfig, dir: &Path, compute: &Compute) -> Result<Learner> {
        let (model, meta) = load_model(dir)?;
        let net = net_config(cfg);
        if meta.net != net {
            return Err(RunError::ArchitectureMismatch {
                model: format!("checkpoint {}", dir.display()),
                found: meta.net.name(),
                wanted: net.name(),
            });
        }
        let mut trainer = Trainer::from_model_on(&net, model, optimizer_settings(cfg), &compute.device)?;
        let opt = dir.join(layout::OPTIMIZER);
        if opt.is_file() {
            let expected = if dir.join(layout::STATE).is_file() { read_state_file(dir)?.1 } else { None };
            let bytes = std::fs::read(&opt).io("reading", &opt)?;
            check_crc(&bytes, expected, &opt).context("delete this checkpoint or restore it from a copy")?;
            trainer.load_optimizer(&opt)?;
        }
        Ok(Learner::with_trainer(cfg, net, trainer))
    }

    /// Starts from the weights of a trained model (a checkpoint directory or an exported
    /// `.bredon` file, checksums verified) with a fresh optimiser: the network must be the
    /// run's architecture and komi. Returns the model's metadata too (its step and
    /// generation in the run that trained it).
    ///
    /// A model of another board size is a transfer (KataGo's one net for all sizes): what
    /// carries over does ([`bredon_nn::TakNet::from_compatible`]) and its komi may differ.
    pub fn from_model_file(cfg: &RunConfig, path: &Path, compute: &Compute) -> Result<(Learner, ModelMeta)> {
        let (model, meta) = bredon_nn::checkpoint::load_exported(path)?;
        let net = net_config(cfg);
        // A model that lacks only options that can be added to a trained network (global
        // pooling, the value head's kind and filters) or is of another board size is
        // upgraded: matching tensors are copied, the policy channels of moves both sizes
        // have are mapped, the others start fresh (the global pooling layers at zero).
        if meta.net.with_upgradable_options_of(&net) != net {
            return Err(RunError::ArchitectureMismatch {
                model: path.display().to_string(),
                found: meta.net.name(),
                wanted: net.name(),
            });
        }
        let transfer = meta.net.size != net.size;
        let model = if meta.net != net {
            let (upgraded, report) = bredon_nn::TakNet::from_compatible(&net, &model, &meta.net);
            let (from, to) = (meta.net.size, net.size);
            let what = if transfer { format!("transferred {from}x{from} → {to}x{to}") } else { "upgraded".into() };
            eprintln!("{what} {} from {} to {}: {}", path.display(), meta.net.name(), net.name(), report.summary());
            upgraded
        } else {
            model
        };
        if transfer {
            if meta.half_komi != cfg.game.half_komi() {
                eprintln!(
                    "note: {} was trained with komi {}; this run's komi is {}",
                    path.display(),
                    meta.half_komi as f64 / 2.0,
                    cfg.game.half_komi() as f64 / 2.0
                );
            }
        } else if meta.half_komi != cfg.game.half_komi() {
            return Err(RunError::KomiMismatch {
                model: path.display().to_string(),
                found: meta.half_komi as f64 / 2.0,
                wanted: cfg.game.half_komi() as f64 / 2.0,
            });
        }
        let trainer = Trainer::from_model_on(&net, model, optimizer_settings(cfg), &compute.device)?;
        let learner = Learner::with_trainer(cfg, net, trainer);
        Ok((learner, meta))
    }

    /// Writes the model, its metadata and the optimiser state into `dir` (atomically).
    pub fn save(&self, dir: &Path, step: u64, generation: u32) -> Result<()> {
        let meta = ModelMeta::new(&self.net, self.half_komi, step, generation);
        save_model(&self.trainer.model(), &meta, dir)?;
        atomic_write_with(&dir.join(layout::OPTIMIZER), |p| self.trainer.save_optimizer(p))
            .with_context(|| format!("saving optimizer state in {}", dir.display()))
    }

    /// Writes the current weights as one self-contained model file (`bredon export`'s
    /// format, checksummed, atomically), recording `step` and `generation`.
    pub fn export(&self, path: &Path, step: u64, generation: u32) -> Result<()> {
        let meta = ModelMeta::new(&self.net, self.half_komi, step, generation);
        Ok(bredon_nn::export_model(&self.trainer.model(), &meta, path)?)
    }

    /// The current weights as an inference model.
    pub fn model(&self) -> bredon_nn::TakNet {
        self.trainer.model()
    }

    /// A description such as `b4c48`.
    pub fn describe(&self) -> String {
        self.net.name()
    }

    /// Starts a batching inference service on the current weights (run by the config's
    /// `[selfplay] inference` path) with `shards` threads (see
    /// [`SelfPlayConfig::inference_shards`](crate::config::SelfPlayConfig::inference_shards)).
    pub fn start_inference(&self, max_batch: usize, shards: usize) -> Result<(Arc<dyn Evaluator>, InferenceService)> {
        let service =
            InferenceService::start_sharded(self.trainer.model(), self.net.size, max_batch, self.inference, shards);
        Ok((Arc::new(service.handle()), service))
    }

    /// Revives the network's units that are τ-dormant at `tau` on `positions` (ReDo:
    /// `bredon_nn::Trainer::revive_dormant`); `seed` draws their fresh weights.
    pub fn revive(&mut self, positions: &[&Position], tau: f32, seed: u64) -> Result<bredon_nn::revive::Revival> {
        Ok(self.trainer.revive_dormant(positions, tau, seed)?)
    }

    /// One training step on `samples`, each under a random board symmetry. A non-finite
    /// loss or gradient skips the step (nothing changes) and says why.
    pub fn step(&mut self, samples: &[&Sample], lr: f64, rng: &mut impl Rng) -> Result<StepOutcome> {
        let (aux, w) = (self.net.aux, self.search_value_weight);
        let batch: Vec<TrainExample> = samples
            .iter()
            .map(|s| {
                let sym = Symmetry::ALL[rng.random_range(0..8)];
                example(s, sym, aux, w)
            })
            .collect();
        Ok(self.trainer.try_step(&batch, lr)?)
    }
}

/// The training example of `s` under `sym`: the position, the policy targets and the
/// ownership map all transformed (the auxiliary targets only with `aux`), the value target
/// the outcome blended with the search value by `search_value_weight`.
pub fn example(s: &Sample, sym: Symmetry, aux: bool, search_value_weight: f32) -> TrainExample {
    let n = s.position.size();
    let map_policy =
        |p: &[(bredon_rules::Move, f32)]| p.iter().map(|&(m, q)| (sym.apply_move(m, n), q)).collect::<Vec<_>>();
    let aux = if aux {
        let mut ownership = vec![0.0f32; n * n];
        for (sq, o) in s.ownership_for_mover().into_iter().enumerate() {
            ownership[sym.square(bredon_rules::Square(sq as u8), n).index()] = o as f32;
        }
        AuxTargets {
            flat_margin: Some(s.flat_margin),
            ownership: (s.final_ownership.len() == n * n).then_some(ownership),
            opponent_policy: s.opponent_policy.as_deref().map(map_policy),
        }
    } else {
        AuxTargets::default()
    };
    let w = search_value_weight;
    let q = s.search_value.clamp(-1.0, 1.0);
    let (z_wdl, q_wdl) = (wdl_of_value(s.value), wdl_of_value(q));
    let wdl = std::array::from_fn(|i| (1.0 - w) * z_wdl[i] + w * q_wdl[i]);
    TrainExample {
        position: s.position.transformed(sym),
        policy: map_policy(&s.policy),
        value: (1.0 - w) * s.value + w * q,
        wdl: Some(wdl),
        aux,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{GameRecord, PlyRecord, StoredResult};
    use bredon_rules::Position;

    /// A fresh network of `cfg` exported at `step` to a `.bredon` file in a temporary
    /// directory (kept alive by the returned guard).
    fn exported_model(cfg: &RunConfig, step: u64) -> (tempfile::TempDir, std::path::PathBuf, bredon_nn::TakNet) {
        let net = net_config(cfg);
        let model = bredon_nn::TakNet::new(&net, &bredon_nn::device::cpu());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("model.bredon");
        bredon_nn::export_model(&model, &ModelMeta::new(&net, cfg.game.half_komi(), step, 1), &file).unwrap();
        (dir, file, model)
    }

    /// `--init-from` a model without global pooling into a config with it: upgraded, the
    /// same outputs (the new layers are zero); any other difference is still refused.
    #[test]
    fn init_from_adds_global_pooling_and_refuses_other_changes() {
        let mut cfg = RunConfig::default();
        cfg.game.size = 4;
        cfg.net = NetConfig { blocks: 2, channels: 8, value_hidden: 8, policy_filters: 2, ..NetConfig::default() };
        let old = net_config(&cfg);
        let (_dir, file, model) = exported_model(&cfg, 5);
        let mut gpool = cfg.clone();
        gpool.net.global_pool = true;
        gpool.net.gpool_channels = 4;
        let (learner, meta) = Learner::from_model_file(&gpool, &file, &Compute::cpu()).unwrap();
        assert_eq!((meta.net, learner.describe()), (old, "b2c8-g4".to_string()));
        let positions: Vec<Position> = (0..4)
            .map(|i| {
                let mut p = Position::new(4).unwrap();
                for _ in 0..i * 3 {
                    p.play(p.legal_moves()[i]).unwrap();
                }
                p
            })
            .collect();
        let refs: Vec<&Position> = positions.iter().collect();
        let forward = |m: &bredon_nn::TakNet| bredon_infer::forward_raw(m, &refs, 4);
        assert_eq!(forward(&learner.model()), forward(&model));
        let mut wider = gpool.clone();
        wider.net.channels = 16;
        let e = Learner::from_model_file(&wider, &file, &Compute::cpu()).err().unwrap().to_string();
        assert!(e.contains("is a b2c8 network, the config asks for b2c16-g4"), "{e}");
    }

    /// A 5x5 run config with a small size-independent network (b2c8: conv policy head,
    /// global pooling, pooled value head).
    fn size_independent_5x5() -> RunConfig {
        use bredon_netform::{PolicyHead, ValueHead};
        let mut cfg = RunConfig::default();
        cfg.game.size = 5;
        cfg.net = NetConfig {
            blocks: 2,
            channels: 8,
            value_hidden: 8,
            policy_filters: 2,
            policy_head: PolicyHead::Conv,
            global_pool: true,
            gpool_channels: 4,
            value_head: ValueHead::Pool,
            ..NetConfig::default()
        };
        cfg
    }

    /// `--init-from` a model into a config with more residual blocks: the new blocks start
    /// as the identity (same outputs on every position), then train like the others; fewer
    /// blocks are refused.
    #[test]
    fn init_from_adds_residual_blocks_as_the_identity() {
        let mut cfg = size_independent_5x5();
        cfg.net.aux = true;
        let mut p = Position::new(5).unwrap();
        let (mut positions, mut played) = (vec![p.clone()], Vec::new());
        for i in 0..12 {
            let moves = p.legal_moves();
            let mv = moves[(i * 7) % moves.len()];
            p.play(mv).unwrap();
            positions.push(p.clone());
            played.push(mv.0);
        }
        let refs: Vec<&Position> = positions.iter().collect();
        let forward = |m: &bredon_nn::TakNet| bredon_infer::forward_raw(m, &refs, 5);
        // A net this small, freshly initialised, sometimes has every value unit dead (the
        // same value everywhere), which would make "same outputs" say little: draw again.
        let (_dir, file, before) = (0..20)
            .map(|_| {
                let (dir, file, model) = exported_model(&cfg, 9);
                (dir, file, forward(&model))
            })
            .find(|(_, _, out)| out.1.iter().any(|&v| v != out.1[0]))
            .expect("a freshly initialised net whose values vary by position");
        let mut deeper = cfg.clone();
        deeper.net.blocks = 4;
        let (mut learner, _) = Learner::from_model_file(&deeper, &file, &Compute::cpu()).unwrap();
        assert_eq!(learner.describe(), "b4c8-aux-convp-g4-vp");
        assert_eq!(forward(&learner.model()), before);
        // The added blocks learn: a few steps move the deeper net away from the source.
        let record = GameRecord {
            size: 5,
            half_komi: 0,
            model: "m".into(),
            plies: played.iter().map(|&mv| PlyRecord { mv, visits: vec![(mv, 4)], root_value: 0.5 }).collect(),
            result: StoredResult::Adjudicated { outcome: 0 },
        };
        let samples = record.samples().unwrap();
        let batch: Vec<&Sample> = samples.iter().collect();
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(3);
        for _ in 0..3 {
            learner.step(&batch, 0.01, &mut rng).unwrap();
        }
        assert_ne!(forward(&learner.model()), before);
        let mut shallower = cfg.clone();
        shallower.net.blocks = 1;
        let e = Learner::from_model_file(&shallower, &file, &Compute::cpu()).err().unwrap().to_string();
        assert!(e.contains("is a b2c8-aux-convp-g4-vp network, the config asks for b1c8-aux-convp-g4-vp"), "{e}");
    }

    /// `--init-from` a 5x5 model into a 6x6 run with komi 2: carried to the new size (the
    /// policy heads mapped, the new moves at zero), whatever its komi; at the same size
    /// another komi is still refused.
    #[test]
    fn init_from_carries_a_model_to_another_board_size() {
        let cfg = size_independent_5x5();
        let (_dir, file, _) = exported_model(&cfg, 700);
        let mut six = cfg.clone();
        six.game.size = 6;
        six.game.komi = 2.0;
        let (learner, meta) = Learner::from_model_file(&six, &file, &Compute::cpu()).unwrap();
        assert_eq!((meta.net.size, meta.step), (5, 700));
        let pos = Position::new(6).unwrap();
        let (logits, _) = bredon_infer::forward_raw(&learner.model(), &[&pos], 6);
        assert_eq!(logits.len(), bredon_netform::policy::policy_size(6));
        let mut komi = cfg.clone();
        komi.game.komi = 2.0;
        let e = Learner::from_model_file(&komi, &file, &Compute::cpu()).err().unwrap().to_string();
        assert!(e.contains("komi"), "{e}");
    }

    #[test]
    fn symmetries_transform_the_auxiliary_targets() {
        // A short 4x4 game with visits on every ply.
        let mut pos = Position::new(4).unwrap();
        let mut plies = Vec::new();
        for i in 0..9 {
            let moves = pos.legal_moves();
            let mv = moves[(i * 5 + 3) % moves.len()];
            plies.push(PlyRecord { mv: mv.0, visits: vec![(mv.0, 3), (moves[0].0, 1)], root_value: 0.0 });
            pos.play(mv).unwrap();
        }
        let record = GameRecord {
            size: 4,
            half_komi: 0,
            model: "m".into(),
            plies,
            result: StoredResult::Adjudicated { outcome: 2 },
        };
        let samples = record.samples().unwrap();
        for s in &samples[..samples.len() - 1] {
            for sym in Symmetry::ALL {
                let e = example(s, sym, true, 0.0);
                let own = e.aux.ownership.as_ref().unwrap();
                // The transformed ownership is the ownership of the transformed final board.
                let last = {
                    let mut p = Position::new(4).unwrap();
                    for ply in &record.plies {
                        p.play(bredon_rules::Move(ply.mv)).unwrap();
                    }
                    p.transformed(sym)
                };
                let (white, _) = crate::replay::final_ownership(&last);
                let sign = if s.position.side_to_move() == bredon_rules::Color::White { 1.0 } else { -1.0 };
                assert_eq!(own, &white.iter().map(|&o| o as f32 * sign).collect::<Vec<_>>());
                // The opponent policy's moves are legal in the transformed next position.
                let mut next = e.position.clone();
                next.play(e.policy[0].0).unwrap();
                for &(mv, _) in e.aux.opponent_policy.as_ref().unwrap() {
                    assert!(next.is_legal(mv), "{sym:?}");
                }
                assert_eq!(example(s, sym, false, 0.0).aux, AuxTargets::default());
            }
        }
    }

    #[test]
    fn value_target_blends_outcome_and_search_value() {
        // Three plies searched with root values 0.5, -0.25, 0.75; white wins by road.
        let mut pos = Position::new(4).unwrap();
        let mut plies = Vec::new();
        for (i, q) in [0.5f32, -0.25, 0.75].into_iter().enumerate() {
            let moves = pos.legal_moves();
            let mv = moves[i % moves.len()];
            plies.push(PlyRecord { mv: mv.0, visits: vec![(mv.0, 1)], root_value: q });
            pos.play(mv).unwrap();
        }
        let result = StoredResult::finished(bredon_rules::GameResult::Win {
            color: bredon_rules::Color::White,
            kind: bredon_rules::WinKind::Road,
        });
        let record = GameRecord { size: 4, half_komi: 0, model: "m".into(), plies, result };
        let samples = record.samples().unwrap();
        let outcomes: Vec<f32> = samples.iter().map(|s| s.value).collect();
        assert_eq!(outcomes, [1.0, -1.0, 1.0], "white, black, white to move");
        assert_eq!(samples.iter().map(|s| s.search_value).collect::<Vec<_>>(), [0.5, -0.25, 0.75]);
        for s in &samples {
            // Weight 0: the outcome, one-hot.
            let e = example(s, Symmetry::ALL[0], false, 0.0);
            assert_eq!(e.value, s.value);
            assert_eq!(e.wdl.unwrap(), wdl_of_value(s.value));
            // Weight 1: the search value and its least-draw split.
            let e = example(s, Symmetry::ALL[0], false, 1.0);
            assert_eq!(e.value, s.search_value);
            assert_eq!(e.wdl.unwrap(), wdl_of_value(s.search_value));
        }
        // Weight 0.5 on the second sample (outcome -1, search -0.25): the mixture of
        // (0, 0, 1) and (0, 0.75, 0.25), whose expectation is the blended value.
        let e = example(&samples[1], Symmetry::ALL[3], false, 0.5);
        assert_eq!(e.value, -0.625);
        let wdl = e.wdl.unwrap();
        assert_eq!(wdl, [0.0, 0.375, 0.625]);
        assert!((wdl[0] - wdl[2] - e.value).abs() < 1e-6);
    }
}
