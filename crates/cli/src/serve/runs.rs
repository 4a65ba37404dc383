//! A training run's files as the dashboard reads them: the generation log, the arena's
//! Elo curve and the newest self-play games. Everything is read fresh on each request,
//! so the page follows a run that is writing.

use bredon_arena::{EloCurveRow, read_elo_curve};
use bredon_selfplay::curriculum::{CURRICULUM_FILE, newest_stage_dir};
use bredon_selfplay::rundir::{Generation, RunDir, layout};
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;

use super::error::ApiError;

/// A run given with `--run`.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    /// Its index in `/api/runs/{id}`.
    pub id: usize,
    /// The directory's name.
    pub name: String,
    /// The directory.
    pub path: PathBuf,
}

/// A self-play game listed on the dashboard.
#[derive(Clone, Debug, Serialize)]
pub struct GameEntry {
    /// Generation that played it (its number).
    pub generation: Generation,
    /// Game id (the file stem).
    pub id: String,
    /// Result in PTN, if the file has one.
    pub result: Option<String>,
}

/// The dashboard's data.
#[derive(Debug, Serialize)]
pub struct RunView {
    /// The run's name (a curriculum's: with the stage shown).
    pub name: String,
    /// The run directory (a curriculum's: the stage shown).
    pub path: PathBuf,
    /// A curriculum's stage shown (its directory's name, `02-6x6`): the one with the
    /// newest checkpoint.
    pub stage: Option<String>,
    /// The newest complete checkpoint (`latest`).
    pub latest: Option<String>,
    /// `logs/generations.jsonl`, one object per generation (the newest 1000).
    pub generations: Vec<Value>,
    /// `arena/elo-curve.csv` (empty before `bredon arena --run`).
    pub elo: Vec<EloCurveRow>,
    /// Why the Elo curve could not be read, if it could not.
    pub elo_error: Option<String>,
    /// The newest self-play games, newest first.
    pub games: Vec<GameEntry>,
}

/// Games listed on the dashboard.
const GAMES_LISTED: usize = 24;
/// Generation lines sent.
const GENERATIONS_SENT: usize = 1000;

/// The run directory the dashboard reads for `info`: the run itself, or for a
/// curriculum's directory the stage with the newest checkpoint (the first stage before
/// any), with that stage's directory name. Read on each request, so the page follows a
/// curriculum from stage to stage.
fn view_dir(info: &RunInfo) -> Result<(PathBuf, Option<String>), ApiError> {
    if !info.path.join(CURRICULUM_FILE).is_file() {
        return Ok((info.path.clone(), None));
    }
    let newest = newest_stage_dir(&info.path).map_err(|e| {
        ApiError::Internal(format!("curriculum {}: {}", info.path.display(), bredon_storage::error_chain(&e)))
    })?;
    Ok(match newest {
        Some(dir) => {
            let stage = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            (dir, stage)
        }
        None => (info.path.clone(), None),
    })
}

/// Reads the dashboard's data of the run in `dir`.
pub fn read_run(info: &RunInfo) -> Result<RunView, ApiError> {
    if !info.path.is_dir() {
        return Err(ApiError::Internal(format!("{} is not a directory (was the run deleted?)", info.path.display())));
    }
    let (dir, stage) = view_dir(info)?;
    let dir = &dir;
    let run = RunDir::new(dir);
    // A pointer to a checkpoint still being written (or a damaged one) shows as none yet.
    let latest = run.latest().ok().flatten().map(|g| g.to_string());
    let mut generations = Vec::new();
    if let Ok(text) = std::fs::read_to_string(run.generation_log_path()) {
        // A torn last line (the trainer is writing it) is left for the next poll.
        generations = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect();
        let skip = generations.len().saturating_sub(GENERATIONS_SENT);
        generations.drain(..skip);
    }
    let (elo, elo_error) = match std::fs::read_to_string(run.path(layout::ELO_CURVE)) {
        Ok(text) => match read_elo_curve(&text) {
            Ok(v) => (v, None),
            Err(e) => (vec![], Some(format!("{}: {e}", layout::ELO_CURVE))),
        },
        Err(_) => (vec![], None),
    };
    Ok(RunView {
        name: match &stage {
            Some(stage) => format!("{} / {stage}", info.name),
            None => info.name.clone(),
        },
        stage,
        path: dir.clone(),
        latest,
        generations,
        elo,
        elo_error,
        games: newest_games(&run),
    })
}

/// The newest games of the newest generations that have any.
fn newest_games(run: &RunDir) -> Vec<GameEntry> {
    let mut out = Vec::new();
    for generation in run.game_generations().into_iter().rev() {
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(run.generation_games_dir(generation))
            .into_iter()
            .flatten()
            .filter_map(|e| {
                let e = e.ok()?;
                let p = e.path();
                (p.extension()? == "ptn").then_some((e.metadata().ok()?.modified().ok()?, p))
            })
            .collect();
        files.sort_by_key(|f| std::cmp::Reverse(f.0));
        for (_, p) in files {
            if out.len() >= GAMES_LISTED {
                return out;
            }
            let id = p.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
            let result = std::fs::read_to_string(&p).ok().and_then(|t| result_tag(&t));
            out.push(GameEntry { generation, id, result });
        }
    }
    out
}

fn result_tag(ptn: &str) -> Option<String> {
    let line = ptn.lines().find(|l| l.starts_with("[Result "))?;
    let v = line.trim_start_matches("[Result ").trim_end_matches(']').trim().trim_matches('"');
    (!v.is_empty() && v != "0-0").then(|| v.to_string())
}

/// The text of game `id` of generation `generation`. The id must be a plain file stem
/// (letters, digits, `-`, `_`), so no request reaches outside the run's `games/`.
pub fn read_game(info: &RunInfo, generation: u32, id: &str) -> Result<String, ApiError> {
    if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(ApiError::bad(format!("bad game id {id:?} (letters, digits, - and _ only)")));
    }
    let path = RunDir::new(view_dir(info)?.0).generation_games_dir(Generation(generation)).join(format!("{id}.ptn"));
    std::fs::read_to_string(&path)
        .map_err(|_| ApiError::NotFound(format!("run {} has no game {id} in generation {generation}", info.name)))
}
