//! `bredon check --run DIR`: verifies every file of a run directory, or of every stage of
//! a curriculum (checksums, finite weights, legal games, parsable logs), and says what is
//! damaged and what it costs.

use crate::error::{IoContext, Result, RunError};
use bredon_nn::checkpoint::{load_exported_verified, load_model_verified};
use bredon_storage::fsutil::files_under;
use bredon_storage::integrity::{Verified, check_crc, from_checked_json};
use std::path::{Path, PathBuf};

use crate::config::RunConfig;
use crate::curriculum::{CURRICULUM_FILE, Curriculum, STAGE_DONE_FILE, StageDone, stage_dirs};
use crate::replay::{GameRecord, list_game_files};
use crate::rundir::{Generation, InitRecord, RunDir, layout, read_state_file};

/// A damaged file and what its damage means for the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Damage {
    /// The file (or directory).
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
    /// What is lost and what to do.
    pub consequence: String,
}

/// The outcome of [`verify_run`].
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    /// Files read and found intact (checksum verified where the file has one).
    pub ok: usize,
    /// Files read without a checksum to verify (written by an older Bredon).
    pub unverified: Vec<PathBuf>,
    /// Checkpoint directories without `state.json`: interrupted writes, redone on resume.
    pub incomplete: Vec<PathBuf>,
    /// Damaged files.
    pub damaged: Vec<Damage>,
    /// Training samples in the intact game records.
    pub samples: usize,
    /// Intact game records.
    pub games: usize,
}

impl RunReport {
    /// Adds `other`'s counts and findings to this report.
    fn absorb(&mut self, other: RunReport) {
        self.ok += other.ok;
        self.unverified.extend(other.unverified);
        self.incomplete.extend(other.incomplete);
        self.damaged.extend(other.damaged);
        self.samples += other.samples;
        self.games += other.games;
    }

    fn note<E: std::error::Error>(
        &mut self,
        path: &Path,
        r: Result<Verified, E>,
        consequence: impl FnOnce() -> String,
    ) {
        match r {
            Ok(Verified::Ok) => self.ok += 1,
            Ok(Verified::NoChecksum) => self.unverified.push(path.to_path_buf()),
            Err(e) => self.damaged.push(Damage {
                path: path.to_path_buf(),
                problem: bredon_storage::error_chain(&e),
                consequence: consequence(),
            }),
        }
    }
}

/// Checks every file of the run at `run`: `config.toml`, the `latest`/`best` pointers,
/// every checkpoint (`state.json`, `model.json`, `model.bpk`, `optimizer.bpk`: checksums
/// and finite weights), every game record (checksum and legal replay), the generation
/// log, the arena's ratings and results, and exported models. Errors only if `run` is not
/// a run directory; damage is reported in the [`RunReport`].
pub fn verify_run(run: &RunDir) -> Result<RunReport> {
    let root = run.root();
    if !run.config_path().is_file() {
        return Err(RunError::NotARun { path: root.to_path_buf(), config_given: true });
    }
    let mut rep = RunReport::default();
    rep.note(&run.config_path(), RunConfig::load(&run.config_path()).map(|_| Verified::Ok), || {
        "the run cannot be resumed until config.toml is repaired (it is the copy made when the run was created)".into()
    });
    let init = run.init_path();
    if init.is_file() {
        let r = checked_json::<InitRecord>(&init);
        rep.note(&init, r, || {
            "the run cannot be resumed until init.json is repaired: it records the model the run started from, \
             the minutes behind it and the stage progress it carried"
                .into()
        });
    }
    // Pointers.
    let latest = run.latest();
    rep.note(&run.path(layout::LATEST), latest.as_ref().map(|_| Verified::Ok), || {
        "the run cannot resume: write the name of the newest intact checkpoint into `latest`".into()
    });
    if run.path(layout::BEST).exists() {
        rep.note(&run.path(layout::BEST), run.best().map(|_| Verified::Ok), || {
            "self-play with gating cannot start: write the name of an intact checkpoint into `best`".into()
        });
    }
    let latest = latest.ok().flatten();
    // Checkpoints.
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(run.checkpoints_dir())
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if !dir.join(layout::STATE).is_file() {
            rep.incomplete.push(dir);
            continue;
        }
        let lost = || {
            if latest.is_some() && latest == name.parse::<Generation>().ok() {
                format!(
                    "{name} is the newest checkpoint: the run cannot resume from it; delete {} and write the previous \
                     checkpoint's name into `latest` (its generation is then trained again from the games on disk)",
                    dir.display()
                )
            } else {
                format!("checkpoint {name} is lost (it cannot be played, rated or exported); delete {}", dir.display())
            }
        };
        let state = read_state_file(&dir);
        let opt_crc = state.as_ref().ok().and_then(|s| s.1);
        rep.note(&dir.join(layout::STATE), state.map(|s| s.2), lost);
        rep.note(&dir.join(layout::MODEL_FILES[0]), load_model_verified(&dir).map(|m| m.2), lost);
        let opt = dir.join(layout::OPTIMIZER);
        if opt.exists() {
            let r = std::fs::read(&opt).io("reading", &opt).and_then(|b| Ok(check_crc(&b, opt_crc, &opt)?));
            rep.note(&opt, r, lost);
        }
    }
    // Games: those carried in with `--window-from`, then the run's own.
    let mut games = list_game_files(&run.inherited_dir())?;
    games.extend(list_game_files(&run.games_dir())?);
    for path in games {
        let r = GameRecord::load(&path).map(|(_, samples, v)| {
            rep.games += 1;
            rep.samples += samples.len();
            v
        });
        rep.note(&path, r, || "this game is skipped by training (the rest of its generation is used)".into());
    }
    // Logs.
    let log = run.generation_log_path();
    if log.is_file() {
        rep.note(&log, check_json_lines(&log, LinesFile::Rewritten), || {
            "damaged lines are ignored by the run; only the history of those generations' statistics is lost".into()
        });
    }
    // Arena and exports (any depth: gating keeps its own arena under arena/gating/).
    for path in files_under(&run.arena_dir()).into_iter().chain(files_under(&run.exports_dir())) {
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if file == "ratings.json" {
            let r = checked_json::<serde_json::Value>(&path);
            rep.note(&path, r, || "rerun `bredon arena` with the same arguments to rewrite the ratings".into());
        } else if file.ends_with(".jsonl") {
            rep.note(&path, check_json_lines(&path, LinesFile::AppendOnly), || {
                "damaged result lines: remove them and rerun `bredon arena` (it replays only the missing games)".into()
            });
        } else if file.ends_with(".bredon") {
            rep.note(&path, load_exported_verified(&path).map(|m| m.2), || {
                "export the checkpoint again with `bredon export --run`".into()
            });
        }
    }
    Ok(rep)
}

/// Checks every file of the curriculum in `root` (`curriculum.toml` and its `stages/`):
/// the curriculum's config, each stage's `stage-done.json`, and each stage directory that
/// holds a run as [`verify_run`] does, in one report. The stage directories are found on
/// disk, so a damaged `curriculum.toml` does not hide them. Errors only if `root` is not a
/// curriculum.
pub fn verify_curriculum(root: &Path) -> Result<RunReport> {
    let config = root.join(CURRICULUM_FILE);
    if !config.is_file() {
        return Err(RunError::NotARun { path: root.to_path_buf(), config_given: true });
    }
    let mut rep = RunReport::default();
    rep.note(&config, Curriculum::load(&config).map(|_| Verified::Ok), || {
        "the curriculum cannot be resumed until curriculum.toml is repaired (it is the copy made when it was created)"
            .into()
    });
    for dir in stage_dirs(root) {
        let run = RunDir::new(&dir);
        let done = dir.join(STAGE_DONE_FILE);
        if done.is_file() {
            let r = checked_json::<StageDone>(&done);
            let trained = run.config_path().is_file();
            rep.note(&done, r, || {
                if trained {
                    format!(
                        "the curriculum cannot resume past this stage: delete {} and resume, which finds the stage's \
                         limits reached and writes the file again without training",
                        done.display()
                    )
                } else {
                    "the curriculum cannot resume: this stage was skipped for a given model, which the file names; \
                     start the curriculum again with --start-stage and --init-from"
                        .into()
                }
            });
        }
        if run.config_path().is_file() {
            rep.absorb(verify_run(&run)?);
        }
    }
    Ok(rep)
}

/// Reads a JSON file written with a checksum (`to_checked_json`) as a `T`: whether its
/// checksum was verified (older files have none), or what is wrong with it.
fn checked_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Verified> {
    let bytes = std::fs::read(path).io("reading", path)?;
    Ok(from_checked_json::<T>(&bytes, path)?.2)
}

/// How a JSON-lines file is written, which decides whether a torn last line is damage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LinesFile {
    /// Rewritten whole and atomically (`logs/generations.jsonl`): every line must parse.
    Rewritten,
    /// Appended to (the arena's `results.jsonl`): a torn last line is an interrupted
    /// append, not damage.
    AppendOnly,
}

/// Every line of a JSON-lines file parses (but a torn last line of an append-only file).
fn check_json_lines(path: &Path, file: LinesFile) -> Result<Verified> {
    let text = std::fs::read(path).io("reading", path)?;
    let text = String::from_utf8(text).map_err(|_| RunError::NotText { path: path.into() })?;
    let complete = match file {
        LinesFile::AppendOnly => text.rfind('\n').map_or("", |i| &text[..=i]),
        LinesFile::Rewritten => &text[..],
    };
    for (i, line) in complete.lines().enumerate() {
        if !line.trim().is_empty() && serde_json::from_str::<serde_json::Value>(line).is_err() {
            return Err(RunError::BadJsonLine { path: path.into(), line: i + 1 });
        }
    }
    Ok(Verified::Ok)
}
