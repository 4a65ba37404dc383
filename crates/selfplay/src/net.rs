//! The training loop's view of the network: create, load, save, train, serve.

use anyhow::{Context, Result};
use bredon_mcts::Evaluator;
use bredon_nn::checkpoint::ModelMeta;
use bredon_nn::fsutil::atomic_write_with;
use bredon_nn::inference::InferenceService;
use bredon_nn::train::OptimizerSettings;
use bredon_nn::{NetConfig, StepOutcome, TrainExample, Trainer, load_model, save_model};
use bredon_rules::Symmetry;
use rand::Rng;
use std::path::Path;
use std::sync::Arc;

use crate::config::RunConfig;
use crate::rundir::read_state_file;
use bredon_nn::integrity::check_crc;
use crate::replay::Sample;

/// A network under training with its optimiser.
pub struct Learner {
    trainer: Trainer,
    net: NetConfig,
    half_komi: i8,
    inference: bredon_nn::InferenceKind,
}

fn settings(cfg: &RunConfig) -> OptimizerSettings {
    OptimizerSettings {
        kind: cfg.train.optimizer.clone(),
        weight_decay: cfg.train.weight_decay,
        value_loss_weight: cfg.train.value_loss_weight,
    }
}

/// The run's network architecture with the size filled in.
pub fn net_config(cfg: &RunConfig) -> NetConfig {
    cfg.net.for_size(cfg.game.size)
}

impl Learner {
    /// A new random network for the run.
    pub fn new(cfg: &RunConfig, seed: u64) -> Result<Learner> {
        let net = net_config(cfg);
        Ok(Learner { trainer: Trainer::new(&net, settings(cfg), seed)?, net, half_komi: cfg.game.half_komi(), inference: cfg.selfplay.inference })
    }

    /// Loads a checkpoint directory (model and, if present, optimiser state), verifying
    /// the checksums (the optimiser's is recorded in the checkpoint's `state.json`).
    pub fn load(cfg: &RunConfig, dir: &Path) -> Result<Learner> {
        let (model, meta) = load_model(dir)?;
        let net = net_config(cfg);
        if meta.net != net {
            anyhow::bail!("checkpoint {} is a {} network, the config asks for {}", dir.display(), meta.net.name(), net.name());
        }
        let mut trainer = Trainer::from_model(&net, model, settings(cfg))?;
        let opt = dir.join("optimizer.bpk");
        if opt.is_file() {
            let expected = if dir.join("state.json").is_file() { read_state_file(dir)?.1 } else { None };
            let bytes = std::fs::read(&opt).with_context(|| format!("reading {}", opt.display()))?;
            check_crc(&bytes, expected, &opt).context("delete this checkpoint or restore it from a copy")?;
            trainer.load_optimizer(&opt)?;
        }
        Ok(Learner { trainer, net, half_komi: cfg.game.half_komi(), inference: cfg.selfplay.inference })
    }

    /// Writes the model, its metadata and the optimiser state into `dir` (atomically).
    pub fn save(&self, dir: &Path, step: u64, generation: u32) -> Result<()> {
        let meta = ModelMeta::new(&self.net, self.half_komi, step, generation);
        save_model(&self.trainer.model(), &meta, dir)?;
        atomic_write_with(&dir.join("optimizer.bpk"), |p| self.trainer.save_optimizer(p))
            .with_context(|| format!("saving optimizer state in {}", dir.display()))
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
    /// `[selfplay] inference` path).
    pub fn start_inference(&self, max_batch: usize) -> Result<(Arc<dyn Evaluator>, InferenceService)> {
        let service = InferenceService::start_with(self.trainer.model(), self.net.size, max_batch, self.inference);
        Ok((Arc::new(service.handle()), service))
    }

    /// One training step on `samples`, each under a random board symmetry. A non-finite
    /// loss or gradient skips the step (nothing changes) and says why.
    pub fn step(&mut self, samples: &[&Sample], lr: f64, rng: &mut impl Rng) -> Result<StepOutcome> {
        let n = self.net.size;
        let batch: Vec<TrainExample> = samples
            .iter()
            .map(|s| {
                let sym = Symmetry::ALL[rng.random_range(0..8)];
                TrainExample {
                    position: s.position.transformed(sym),
                    policy: s.policy.iter().map(|&(m, p)| (sym.apply_move(m, n), p)).collect(),
                    value: s.value,
                }
            })
            .collect();
        self.trainer.try_step(&batch, lr)
    }
}
