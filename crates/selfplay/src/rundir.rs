//! The run directory: everything about one training run lives under it.
//!
//! ```text
//! <run>/
//!   config.toml            the run's configuration (copied at creation, read on resume)
//!   init.json              with `--init-from`: the trained model gen-0000 started from
//!   latest                 name of the newest complete checkpoint (written last)
//!   train.lock             held (advisory lock) by the one `train` process of the run
//!   checkpoints/gen-0003/  model.bpk, model.json, optimizer.bpk, state.json
//!   games/gen-0003/        <id>.game (training record) + <id>.ptn, played by gen-0003
//!   logs/tensorboard/      TensorBoard event files
//!   logs/generations.jsonl one JSON line per generation (the summary line, machine-readable)
//!   arena/                 evaluation games, results, ratings, plots
//! ```

use crate::error::{Context, Result, RunError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use crate::fsutil::{atomic_write, remove_stale_temps};
use bredon_storage::integrity::{Verified, crc_field, crc_hex, crc32c, from_checked_json, to_checked_json};

/// Field of `state.json` holding the CRC-32C of the checkpoint's `optimizer.bpk`.
pub const OPTIMIZER_CRC_FIELD: &str = "optimizer_crc32c";

/// Paths inside a run directory.
#[derive(Clone, Debug)]
pub struct RunDir {
    root: PathBuf,
}

/// Where a run's `gen-0000` weights came from (`<run>/init.json`, written when a run is
/// created with `--init-from`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InitRecord {
    /// The model file or checkpoint directory given.
    pub source: String,
    /// Its optimiser step in the run that trained it (this run's steps continue from it).
    pub step: u64,
    /// Its generation in that run.
    pub generation: u32,
    /// Minutes of training behind it, when known (`--init-minutes`, or the source
    /// checkpoint's `state.json`): the run's Elo curve counts its minutes from there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minutes: Option<f64>,
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

    /// `init.json` (see [`InitRecord`]).
    pub fn init_path(&self) -> PathBuf {
        self.root.join("init.json")
    }

    /// The run's [`InitRecord`], if it was started from a trained model.
    pub fn init_record(&self) -> Result<Option<InitRecord>> {
        let p = self.init_path();
        if !p.is_file() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        let rec = serde_json::from_str(&text).map_err(|source| RunError::Json { path: p.clone(), source })?;
        Ok(Some(rec))
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
                    return Err(RunError::BadPointer { pointer: p.display().to_string(), name });
                }
                Ok(Some(name))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
        }
    }

    /// Points a pointer file at checkpoint `name` (atomically).
    fn write_pointer(&self, file: &str, name: &str) -> Result<()> {
        Ok(atomic_write(&self.root.join(file), format!("{name}\n").as_bytes())?)
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

    /// Writes the training state of a checkpoint (`state.json`, the file that makes a
    /// checkpoint complete) with its checksum and the checksum of the checkpoint's
    /// `optimizer.bpk` as found on disk (write the optimiser first).
    pub fn write_state(&self, name: &str, state: &TrainState) -> Result<()> {
        let dir = self.checkpoint_dir(name);
        let opt = dir.join("optimizer.bpk");
        let mut extra = Vec::new();
        match std::fs::read(&opt) {
            Ok(bytes) => extra.push((OPTIMIZER_CRC_FIELD, crc_hex(crc32c(&bytes)).into())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("reading back {}", opt.display())),
        }
        Ok(atomic_write(&dir.join("state.json"), &to_checked_json(state, &extra)?)?)
    }

    /// Reads the training state of a checkpoint, verifying its checksum.
    pub fn read_state(&self, name: &str) -> Result<TrainState> {
        Ok(read_state_file(&self.checkpoint_dir(name))?.0)
    }

    /// The run's advisory lock, taken by the trainer for its lifetime (see [`RunLock`]).
    pub fn lock_path(&self) -> PathBuf {
        self.root.join("train.lock")
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

/// Reads `state.json` of the checkpoint directory `dir`: the state, the recorded
/// checksum of `optimizer.bpk` (if any) and whether the file's own checksum was verified.
pub fn read_state_file(dir: &Path) -> Result<(TrainState, Option<u32>, Verified)> {
    let p = dir.join("state.json");
    let bytes = std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?;
    let (state, obj, verified) = from_checked_json::<TrainState>(&bytes, &p)?;
    Ok((state, crc_field(&obj, OPTIMIZER_CRC_FIELD), verified))
}

/// One trainer per run directory: an exclusive advisory lock (`flock` on Unix, through
/// `std::fs::File::try_lock`) on `<run>/train.lock`, held while this value lives. The
/// file holds the holder's pid for the error message. The operating system releases the
/// lock when the process dies, however it dies, so a lock file left by a killed trainer
/// never blocks the next one. `bredon selfplay` processes don't take it.
#[derive(Debug)]
pub struct RunLock {
    _file: std::fs::File,
}

impl RunLock {
    /// Takes the lock of `run`, or errors naming the pid of the process holding it.
    pub fn acquire(run: &RunDir) -> Result<RunLock> {
        use std::io::{Read, Seek, Write};
        let path = run.lock_path();
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let holder =
                    if holder.is_empty() { "another process".to_string() } else { format!("process {holder}") };
                return Err(RunError::Locked { run: run.root().to_path_buf(), holder, lock: path });
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", path.display()));
            }
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(RunLock { _file: file })
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

    #[test]
    fn state_json_is_checksummed_with_the_optimizer() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        let st = TrainState {
            generation: 1,
            step: 4,
            samples_trained: 64,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(1),
            elapsed_secs: 0.25,
        };
        let ck = run.checkpoint_dir("gen-0001");
        std::fs::create_dir_all(&ck).unwrap();
        std::fs::write(ck.join("optimizer.bpk"), b"adam moments").unwrap();
        run.write_state("gen-0001", &st).unwrap();
        let (back, opt, v) = read_state_file(&ck).unwrap();
        assert_eq!((back, opt, v), (st.clone(), Some(crc32c(b"adam moments")), Verified::Ok));
        let text = std::fs::read_to_string(ck.join("state.json")).unwrap();
        std::fs::write(ck.join("state.json"), text.replace("\"step\": 4", "\"step\": 5")).unwrap();
        let err = bredon_storage::error_chain(&run.read_state("gen-0001").unwrap_err());
        assert!(err.contains("state.json") && err.contains("checksum mismatch"), "{err}");
        // A state.json from before checksums reads, unverified.
        std::fs::write(ck.join("state.json"), serde_json::to_vec(&st).unwrap()).unwrap();
        assert_eq!(read_state_file(&ck).unwrap(), (st, None, Verified::NoChecksum));
    }

    #[test]
    fn one_trainer_per_run() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        // A lock file left by a killed process (its pid inside, no lock held) is no obstacle.
        std::fs::write(run.lock_path(), "999999\n").unwrap();
        let lock = RunLock::acquire(&run).unwrap();
        assert_eq!(std::fs::read_to_string(run.lock_path()).unwrap().trim(), std::process::id().to_string());
        // A second trainer (another open file description, as another process has) is refused.
        let err = bredon_storage::error_chain(&RunLock::acquire(&run).unwrap_err());
        assert!(err.contains(&format!("process {}", std::process::id())) && err.contains("train.lock"), "{err}");
        drop(lock);
        let _again = RunLock::acquire(&run).unwrap();
    }
}
