//! The run directory: everything about one training run lives under it.
//!
//! ```text
//! <run>/
//!   config.toml            the run's configuration (copied at creation, read on resume)
//!   latest                 name of the newest complete checkpoint (written last)
//!   checkpoints/gen-0003/  model.bpk, model.json, optimizer.bpk, state.json
//!   games/gen-0003/        <id>.game (training record) + <id>.ptn, played by gen-0003
//!   logs/tensorboard/      TensorBoard event files
//!   logs/generations.jsonl one JSON line per generation (the summary line, machine-readable)
//!   arena/                 evaluation games, results, ratings, plots
//! ```

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use crate::fsutil::{atomic_write, remove_stale_temps};

/// Paths inside a run directory.
#[derive(Clone, Debug)]
pub struct RunDir {
    root: PathBuf,
}

/// Training state saved with every checkpoint (everything needed to continue exactly).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainState {
    /// Generation of the model in this checkpoint (0 = the initial random network).
    pub generation: u32,
    /// Optimiser steps taken so far.
    pub step: u64,
    /// Training samples consumed so far (steps × batch).
    pub samples_trained: u64,
    /// State of the training RNG (sampling minibatches, symmetries).
    pub rng: rand_chacha::ChaCha8Rng,
    /// Wall-clock seconds spent by the run so far, across restarts.
    pub elapsed_secs: f64,
}

impl RunDir {
    /// A run directory at `root` (not created yet).
    pub fn new(root: impl Into<PathBuf>) -> RunDir {
        RunDir { root: root.into() }
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `config.toml`.
    pub fn config_path(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    /// `games/`.
    pub fn games_dir(&self) -> PathBuf {
        self.root.join("games")
    }

    /// `checkpoints/`.
    pub fn checkpoints_dir(&self) -> PathBuf {
        self.root.join("checkpoints")
    }

    /// Directory of one checkpoint.
    pub fn checkpoint_dir(&self, name: &str) -> PathBuf {
        self.checkpoints_dir().join(name)
    }

    /// `logs/`.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// `logs/tensorboard/`.
    pub fn tensorboard_dir(&self) -> PathBuf {
        self.logs_dir().join("tensorboard")
    }

    /// `arena/`.
    pub fn arena_dir(&self) -> PathBuf {
        self.root.join("arena")
    }

    /// Name of the checkpoint of generation `g`.
    pub fn model_name(generation: u32) -> String {
        format!("gen-{generation:04}")
    }

    /// Creates the directory tree and removes leftovers of interrupted writes.
    pub fn prepare(&self) -> Result<()> {
        for d in [self.games_dir(), self.checkpoints_dir(), self.logs_dir(), self.arena_dir()] {
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        }
        remove_stale_temps(&self.root);
        remove_stale_temps(&self.checkpoints_dir());
        if let Ok(rd) = std::fs::read_dir(self.games_dir()) {
            for e in rd.flatten() {
                remove_stale_temps(&e.path());
            }
        }
        if let Ok(rd) = std::fs::read_dir(self.checkpoints_dir()) {
            for e in rd.flatten() {
                remove_stale_temps(&e.path());
            }
        }
        Ok(())
    }

    /// Reads a pointer file (`latest`, `best`) naming a checkpoint: `None` if absent, an
    /// error if it names an incomplete checkpoint (never a silent restart).
    fn read_pointer(&self, file: &str) -> Result<Option<String>> {
        let p = self.root.join(file);
        match std::fs::read_to_string(&p) {
            Ok(s) => {
                let name = s.trim().to_string();
                if name.is_empty() || !self.checkpoint_dir(&name).join("state.json").is_file() {
                    bail!("{} points to {name:?}, which is not a complete checkpoint", p.display());
                }
                Ok(Some(name))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
        }
    }

    /// Points a pointer file at checkpoint `name` (atomically).
    fn write_pointer(&self, file: &str, name: &str) -> Result<()> {
        atomic_write(&self.root.join(file), format!("{name}\n").as_bytes())
    }

    /// The newest complete checkpoint's name, from the `latest` pointer.
    pub fn latest(&self) -> Result<Option<String>> {
        self.read_pointer("latest")
    }

    /// Points `latest` at `name` (atomically; call after the checkpoint is fully written).
    pub fn set_latest(&self, name: &str) -> Result<()> {
        self.write_pointer("latest", name)
    }

    /// The self-play model chosen by gating (`best` pointer), if gating has run.
    pub fn best(&self) -> Result<Option<String>> {
        self.read_pointer("best")
    }

    /// Points `best` at a checkpoint (atomically).
    pub fn set_best(&self, name: &str) -> Result<()> {
        self.write_pointer("best", name)
    }

    /// The model that plays the self-play games of checkpoint `generation_model`'s
    /// generation: the gated `best` model when gating is on and has chosen one, else that
    /// checkpoint itself.
    pub fn self_play_model(&self, generation_model: &str, gating: bool) -> Result<String> {
        if gating && let Some(best) = self.best()? {
            return Ok(best);
        }
        Ok(generation_model.to_string())
    }

    /// Writes the training state of a checkpoint.
    pub fn write_state(&self, name: &str, state: &TrainState) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(state)?;
        atomic_write(&self.checkpoint_dir(name).join("state.json"), &bytes)
    }

    /// Reads the training state of a checkpoint.
    pub fn read_state(&self, name: &str) -> Result<TrainState> {
        let p = self.checkpoint_dir(name).join("state.json");
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))
    }

    /// All complete checkpoints (those with a `state.json`), oldest first.
    pub fn checkpoints(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.checkpoints_dir())
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.path().join("state.json").is_file())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn latest_pointer_and_state_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        run.prepare().unwrap();
        assert_eq!(run.latest().unwrap(), None);
        let st = TrainState {
            generation: 2,
            step: 40,
            samples_trained: 5120,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(7),
            elapsed_secs: 1.5,
        };
        run.write_state("gen-0002", &st).unwrap();
        run.set_latest("gen-0002").unwrap();
        assert_eq!(run.latest().unwrap().as_deref(), Some("gen-0002"));
        assert_eq!(run.read_state("gen-0002").unwrap(), st);
        assert_eq!(run.checkpoints(), vec!["gen-0002".to_string()]);
        // Gating's `best` pointer: absent means the generation's own checkpoint plays.
        assert_eq!(run.self_play_model("gen-0002", true).unwrap(), "gen-0002");
        run.set_best("gen-0002").unwrap();
        assert_eq!(run.self_play_model("gen-0005", true).unwrap(), "gen-0002");
        assert_eq!(run.self_play_model("gen-0005", false).unwrap(), "gen-0005");
        // A pointer to an incomplete checkpoint is an error, not a silent restart.
        run.set_latest("gen-0003").unwrap();
        assert!(run.latest().is_err());
    }
}
