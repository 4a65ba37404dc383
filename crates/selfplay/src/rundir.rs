//! The run directory: everything about one training run lives under it, and this module
//! is the one place that knows where ([`layout`]: the relative paths, which are also the
//! keys of a run on an object store; [`RunDir`]: those paths under a local root).
//!
//! ```text
//! <run>/
//!   config.toml            the run's configuration (copied at creation, read on resume)
//!   init.json              with `--init-from`: the trained model gen-0000 started from
//!   latest                 name of the newest complete checkpoint (written last)
//!   best                   with gating: the checkpoint that plays self-play
//!   train.lock             held (advisory lock) by the one `train` process of the run
//!   checkpoints/gen-0003/  model.bpk, model.json, optimizer.bpk, state.json
//!   games/gen-0003/        <id>.game (training record) + <id>.ptn, played by gen-0003
//!   inherited/00000-gen-0070/  with `--window-from`: another run's games, the window's start
//!   logs/tensorboard/      TensorBoard event files
//!   logs/generations.jsonl one JSON line per generation (the summary line, machine-readable)
//!   arena/                 the Elo ladder's games, results, ratings, elo.svg, elo-curve.csv
//!   arena/gating/          gating matches
//!   exports/               `bredon export --run` output
//! ```

use crate::error::{IoContext, Result, RunError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use crate::fsutil::{atomic_write, remove_stale_temps};
use bredon_storage::integrity::{Verified, crc_field, crc_hex, crc32c, from_checked_json, to_checked_json};

pub use crate::generation::{Generation, GenerationNameError};

/// Field of `state.json` holding the CRC-32C of the checkpoint's `optimizer.bpk`.
pub const OPTIMIZER_CRC_FIELD: &str = "optimizer_crc32c";

/// The run's files as relative paths (`/`-separated): the paths under a local run
/// directory ([`RunDir`] joins them to its root) and the keys of a run on an object store
/// (`crate::remote`).
pub mod layout {
    use crate::generation::Generation;

    /// The run's configuration.
    pub const CONFIG: &str = "config.toml";
    /// Where `gen-0000` came from, for a run started with `--init-from`.
    pub const INIT: &str = "init.json";
    /// The pointer to the newest complete checkpoint.
    pub const LATEST: &str = "latest";
    /// The pointer to the checkpoint that plays self-play, with gating.
    pub const BEST: &str = "best";
    /// The trainer's advisory lock (local runs).
    pub const LOCK: &str = "train.lock";
    /// The trainer's lease (runs on an object store).
    pub const LEASE: &str = "train.lease";
    /// The checkpoints, one directory each.
    pub const CHECKPOINTS: &str = "checkpoints";
    /// The self-play games, one directory per generation.
    pub const GAMES: &str = "games";
    /// Games carried over from another run (`--window-from`), oldest first: the start
    /// of the replay window.
    pub const INHERITED: &str = "inherited";
    /// Logs.
    pub const LOGS: &str = "logs";
    /// TensorBoard event files.
    pub const TENSORBOARD: &str = "logs/tensorboard";
    /// One JSON line per generation.
    pub const GENERATION_LOG: &str = "logs/generations.jsonl";
    /// The arena's Elo ladder: games, results, ratings, plot, curve.
    pub const ARENA: &str = "arena";
    /// The Elo curve table (`name,generation,step,minutes,elo,lo95,hi95`).
    pub const ELO_CURVE: &str = "arena/elo-curve.csv";
    /// The Elo curve as a chart.
    pub const ELO_PLOT: &str = "arena/elo.svg";
    /// TensorBoard scalars of the Elo ladder.
    pub const ARENA_TENSORBOARD: &str = "logs/tensorboard/arena";
    /// Gating matches.
    pub const GATING: &str = "arena/gating";
    /// The outside anchor's matches (`[eval.anchor]`): games, results, ratings.
    pub const ANCHOR: &str = "arena/anchor";
    /// The Elo curve on the anchor's scale (the columns of [`ELO_CURVE`]).
    pub const ANCHOR_ELO_CURVE: &str = "arena/anchor/elo-curve.csv";
    /// That curve as a chart.
    pub const ANCHOR_ELO_PLOT: &str = "arena/anchor/elo.svg";
    /// Exported models.
    pub const EXPORTS: &str = "exports";
    /// The model files of a checkpoint (written by `bredon_nn`).
    pub const MODEL_FILES: [&str; 2] = ["model.bpk", "model.json"];
    /// A checkpoint's optimiser state.
    pub const OPTIMIZER: &str = "optimizer.bpk";
    /// A checkpoint's training state: the file that makes a checkpoint complete, written
    /// (and uploaded) last.
    pub const STATE: &str = "state.json";

    /// A checkpoint's directory.
    pub fn checkpoint(generation: Generation) -> String {
        format!("{CHECKPOINTS}/{generation}")
    }

    /// A file of a checkpoint.
    pub fn checkpoint_file(generation: Generation, file: &str) -> String {
        format!("{}/{file}", checkpoint(generation))
    }

    /// The directory of a generation's self-play games.
    pub fn games(generation: Generation) -> String {
        format!("{GAMES}/{generation}")
    }
}

/// A local run directory: the [`layout`]'s paths under its root.
#[derive(Clone, Debug)]
pub struct RunDir {
    root: PathBuf,
}

/// What `--window-from` carried into a new run (recorded in its `init.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Inherited {
    /// The run (or checkpoint of a run) given.
    pub source: String,
    /// Games copied.
    pub games: usize,
    /// Their training samples.
    pub samples: usize,
    /// Records of the source skipped as unreadable or damaged.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
    /// The games carried into the replay window with `--window-from`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_from: Option<Inherited>,
    /// How far `source` had got into the curriculum stage this run goes on with, when it
    /// was exported inside that stage (see [`crate::curriculum`]): the stage's limits
    /// count it, across resumes too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<bredon_netform::StageProgress>,
}

/// Training state saved with every checkpoint (everything needed to continue exactly).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainState {
    /// Generation of the model in this checkpoint (0 = the initial random network).
    pub generation: Generation,
    /// Optimiser steps taken so far.
    pub step: u64,
    /// Training samples consumed so far (steps × batch).
    pub samples_trained: u64,
    /// State of the training RNG (sampling minibatches, symmetries).
    pub rng: rand_chacha::ChaCha8Rng,
    /// Wall-clock seconds spent by the run so far, across restarts.
    pub elapsed_secs: f64,
}

/// Which model plays a generation's self-play games.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelfPlayModel {
    /// The generation's own checkpoint.
    Own,
    /// The gated `best` checkpoint, once gating has chosen one (`[eval.gate] enabled`).
    Best,
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

    /// A path of the [`layout`] under the root.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// `config.toml`.
    pub fn config_path(&self) -> PathBuf {
        self.path(layout::CONFIG)
    }

    /// `init.json` (see [`InitRecord`]).
    pub fn init_path(&self) -> PathBuf {
        self.path(layout::INIT)
    }

    /// The run's [`InitRecord`], if it was started from a trained model.
    pub fn init_record(&self) -> Result<Option<InitRecord>> {
        let p = self.init_path();
        if !p.is_file() {
            return Ok(None);
        }
        let bytes = std::fs::read(&p).io("reading", &p)?;
        // Written with a checksum since 2026-12-07; older runs' files have none.
        Ok(Some(from_checked_json::<InitRecord>(&bytes, &p)?.0))
    }

    /// `games/`.
    pub fn games_dir(&self) -> PathBuf {
        self.path(layout::GAMES)
    }

    /// `inherited/`: games carried over from another run (`--window-from`).
    pub fn inherited_dir(&self) -> PathBuf {
        self.path(layout::INHERITED)
    }

    /// `games/gen-NNNN/`: the games `generation` played.
    pub fn generation_games_dir(&self, generation: Generation) -> PathBuf {
        self.path(&layout::games(generation))
    }

    /// The generations with a directory under `games/`, oldest first.
    pub fn game_generations(&self) -> Vec<Generation> {
        generations_in(&self.games_dir())
    }

    /// `checkpoints/`.
    pub fn checkpoints_dir(&self) -> PathBuf {
        self.path(layout::CHECKPOINTS)
    }

    /// Directory of one checkpoint.
    pub fn checkpoint_dir(&self, generation: Generation) -> PathBuf {
        self.path(&layout::checkpoint(generation))
    }

    /// The run and generation of a checkpoint directory (`<run>/checkpoints/gen-NNNN`,
    /// as given or relative): the inverse of [`RunDir::checkpoint_dir`]; `None` for a path
    /// not laid out so.
    pub fn of_checkpoint(dir: &Path) -> Option<(RunDir, Generation)> {
        let dir = std::path::absolute(dir).ok()?;
        let generation = dir.file_name()?.to_str()?.parse::<Generation>().ok()?;
        let checkpoints = dir.parent().filter(|p| p.file_name().is_some_and(|n| n == layout::CHECKPOINTS))?;
        Some((RunDir::new(checkpoints.parent()?), generation))
    }

    /// `logs/`.
    pub fn logs_dir(&self) -> PathBuf {
        self.path(layout::LOGS)
    }

    /// `logs/tensorboard/`.
    pub fn tensorboard_dir(&self) -> PathBuf {
        self.path(layout::TENSORBOARD)
    }

    /// `logs/generations.jsonl`.
    pub fn generation_log_path(&self) -> PathBuf {
        self.path(layout::GENERATION_LOG)
    }

    /// `arena/`.
    pub fn arena_dir(&self) -> PathBuf {
        self.path(layout::ARENA)
    }

    /// `exports/`.
    pub fn exports_dir(&self) -> PathBuf {
        self.path(layout::EXPORTS)
    }

    /// Creates the directory tree and removes leftovers of interrupted writes.
    pub fn prepare(&self) -> Result<()> {
        for d in [self.games_dir(), self.checkpoints_dir(), self.logs_dir(), self.arena_dir()] {
            std::fs::create_dir_all(&d).io("creating", &d)?;
        }
        remove_stale_temps(&self.root);
        remove_stale_temps(&self.checkpoints_dir());
        for dir in [self.games_dir(), self.checkpoints_dir(), self.inherited_dir()] {
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    remove_stale_temps(&e.path());
                }
            }
        }
        Ok(())
    }

    /// Reads a pointer file (`latest`, `best`) naming a checkpoint: `None` if absent, an
    /// error if it names no complete checkpoint (never a silent restart).
    fn read_pointer(&self, file: &str) -> Result<Option<Generation>> {
        let p = self.path(file);
        match std::fs::read_to_string(&p) {
            Ok(s) => {
                let name = s.trim().to_string();
                match name.parse::<Generation>() {
                    Ok(g) if self.checkpoint_dir(g).join(layout::STATE).is_file() => Ok(Some(g)),
                    _ => Err(RunError::BadPointer { pointer: p.display().to_string(), name }),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).io("reading", &p),
        }
    }

    /// Points a pointer file at `generation` (atomically).
    fn write_pointer(&self, file: &str, generation: Generation) -> Result<()> {
        Ok(atomic_write(&self.path(file), format!("{generation}\n").as_bytes())?)
    }

    /// The newest complete checkpoint, from the `latest` pointer.
    pub fn latest(&self) -> Result<Option<Generation>> {
        self.read_pointer(layout::LATEST)
    }

    /// Points `latest` at `generation` (atomically; call after the checkpoint is fully
    /// written).
    pub fn set_latest(&self, generation: Generation) -> Result<()> {
        self.write_pointer(layout::LATEST, generation)
    }

    /// The self-play model chosen by gating (`best` pointer), if gating has run.
    pub fn best(&self) -> Result<Option<Generation>> {
        self.read_pointer(layout::BEST)
    }

    /// Points `best` at a checkpoint (atomically).
    pub fn set_best(&self, generation: Generation) -> Result<()> {
        self.write_pointer(layout::BEST, generation)
    }

    /// The model that plays the self-play games of `generation`: with
    /// [`SelfPlayModel::Best`] the gated `best` model once gating has chosen one, else
    /// that generation's own checkpoint.
    pub fn self_play_model(&self, generation: Generation, which: SelfPlayModel) -> Result<Generation> {
        match which {
            SelfPlayModel::Best => Ok(self.best()?.unwrap_or(generation)),
            SelfPlayModel::Own => Ok(generation),
        }
    }

    /// Writes the training state of a checkpoint (`state.json`, the file that makes a
    /// checkpoint complete) with its checksum and the checksum of the checkpoint's
    /// `optimizer.bpk` as found on disk (write the optimiser first).
    pub fn write_state(&self, generation: Generation, state: &TrainState) -> Result<()> {
        let dir = self.checkpoint_dir(generation);
        let opt = dir.join(layout::OPTIMIZER);
        let mut extra = Vec::new();
        match std::fs::read(&opt) {
            Ok(bytes) => extra.push((OPTIMIZER_CRC_FIELD, crc_hex(crc32c(&bytes)).into())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).io("reading back", &opt),
        }
        Ok(atomic_write(&dir.join(layout::STATE), &to_checked_json(state, &extra)?)?)
    }

    /// Reads the training state of a checkpoint, verifying its checksum.
    pub fn read_state(&self, generation: Generation) -> Result<TrainState> {
        Ok(read_state_file(&self.checkpoint_dir(generation))?.0)
    }

    /// The training step of the run's first checkpoint (`gen-0000`): where `[schedule]
    /// steps` and a curriculum stage's `steps` count from.
    pub fn first_step(&self) -> Result<u64> {
        Ok(self.read_state(Generation(0))?.step)
    }

    /// The run's advisory lock, taken by the trainer for its lifetime (see [`RunLock`]).
    pub fn lock_path(&self) -> PathBuf {
        self.path(layout::LOCK)
    }

    /// All complete checkpoints (those with a `state.json`), oldest first.
    pub fn checkpoints(&self) -> Vec<Generation> {
        let dir = self.checkpoints_dir();
        generations_in(&dir).into_iter().filter(|g| dir.join(g.to_string()).join(layout::STATE).is_file()).collect()
    }
}

/// The generations named by the entries of `dir` (others skipped), oldest first.
fn generations_in(dir: &Path) -> Vec<Generation> {
    let mut found: Vec<Generation> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    found.sort_unstable();
    found
}

/// Reads `state.json` of the checkpoint directory `dir`: the state, the recorded
/// checksum of `optimizer.bpk` (if any) and whether the file's own checksum was verified.
pub fn read_state_file(dir: &Path) -> Result<(TrainState, Option<u32>, Verified)> {
    let p = dir.join(layout::STATE);
    let bytes = std::fs::read(&p).io("reading", &p)?;
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
            .io("opening", &path)?;
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
                return Err(e).io("locking", &path);
            }
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .io("writing", &path)?;
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
            generation: Generation(2),
            step: 40,
            samples_trained: 5120,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(7),
            elapsed_secs: 1.5,
        };
        let (g2, g3, g5) = (Generation(2), Generation(3), Generation(5));
        run.write_state(g2, &st).unwrap();
        // The file holds the generation as a plain number, as it always has.
        let text = std::fs::read_to_string(dir.path().join("checkpoints/gen-0002/state.json")).unwrap();
        assert!(text.contains("\"generation\": 2,"), "{text}");
        run.set_latest(g2).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("latest")).unwrap(), "gen-0002\n");
        assert_eq!(run.latest().unwrap(), Some(g2));
        assert_eq!(run.read_state(g2).unwrap(), st);
        assert_eq!(run.checkpoints(), vec![g2]);
        // Gating's `best` pointer: absent means the generation's own checkpoint plays.
        assert_eq!(run.self_play_model(g2, SelfPlayModel::Best).unwrap(), g2);
        run.set_best(g2).unwrap();
        assert_eq!(run.self_play_model(g5, SelfPlayModel::Best).unwrap(), g2);
        assert_eq!(run.self_play_model(g5, SelfPlayModel::Own).unwrap(), g5);
        // A pointer to an incomplete checkpoint is an error, not a silent restart; so is
        // one naming no generation.
        run.set_latest(g3).unwrap();
        assert!(run.latest().is_err());
        std::fs::write(run.path(layout::LATEST), "../elsewhere\n").unwrap();
        let e = run.latest().unwrap_err().to_string();
        assert!(e.contains("latest") && e.contains("../elsewhere"), "{e}");
    }

    #[test]
    fn state_json_is_checksummed_with_the_optimizer() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        let st = TrainState {
            generation: Generation(1),
            step: 4,
            samples_trained: 64,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(1),
            elapsed_secs: 0.25,
        };
        let ck = run.checkpoint_dir(Generation(1));
        std::fs::create_dir_all(&ck).unwrap();
        std::fs::write(ck.join("optimizer.bpk"), b"adam moments").unwrap();
        run.write_state(Generation(1), &st).unwrap();
        let (back, opt, v) = read_state_file(&ck).unwrap();
        assert_eq!((back, opt, v), (st.clone(), Some(crc32c(b"adam moments")), Verified::Ok));
        let text = std::fs::read_to_string(ck.join("state.json")).unwrap();
        std::fs::write(ck.join("state.json"), text.replace("\"step\": 4", "\"step\": 5")).unwrap();
        let err = bredon_storage::error_chain(&run.read_state(Generation(1)).unwrap_err());
        assert!(err.contains("state.json") && err.contains("checksum mismatch"), "{err}");
        // A state.json from before checksums reads, unverified.
        std::fs::write(ck.join("state.json"), serde_json::to_vec(&st).unwrap()).unwrap();
        assert_eq!(read_state_file(&ck).unwrap(), (st, None, Verified::NoChecksum));
    }

    #[test]
    fn generation_names_parse_and_sort_by_number() {
        for (g, name) in [(0, "gen-0000"), (42, "gen-0042"), (12345, "gen-12345")] {
            assert_eq!(Generation(g).to_string(), name);
            assert_eq!(name.parse::<Generation>(), Ok(Generation(g)));
        }
        for bad in ["gen-12", "gen-", "gen-00x1", "gen--001", "Gen-0001", "0001", "gen-0001/..", " gen-0001"] {
            let e = bad.parse::<Generation>().unwrap_err();
            assert_eq!(e.name, bad);
            assert!(e.to_string().contains("gen-NNNN"), "{e}");
        }
        assert_eq!(Generation(3).next(), Generation(4));
        assert_eq!((Generation(3).previous(), Generation::FIRST.previous()), (Some(Generation(2)), None));
        // Listed in order of the number, past 9999 too; other names are skipped.
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        for name in ["gen-10000", "gen-9999", "gen-0002", "notes", ".gen-0001.tmp"] {
            std::fs::create_dir_all(run.games_dir().join(name)).unwrap();
        }
        assert_eq!(run.game_generations(), [Generation(2), Generation(9999), Generation(10000)]);
        assert_eq!(run.generation_games_dir(Generation(2)), dir.path().join("games/gen-0002"));
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
