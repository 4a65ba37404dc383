//! A training run's files as the dashboard reads them: the generation log, the arena's
//! Elo curve and the newest self-play games. Everything is read fresh on each request,
//! so the page follows a run that is writing.

use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

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

/// One point of the Elo curve (`arena/elo-curve.csv`).
#[derive(Clone, Debug, Serialize)]
pub struct EloPoint {
    /// Checkpoint name.
    pub name: String,
    /// Generation.
    pub generation: u64,
    /// Training step.
    pub step: u64,
    /// Minutes of training.
    pub minutes: f64,
    /// Elo (the first checkpoint is 0).
    pub elo: f64,
    /// Lower end of the 95 % interval.
    pub lo95: f64,
    /// Upper end of the 95 % interval.
    pub hi95: f64,
}

/// A self-play game listed on the dashboard.
#[derive(Clone, Debug, Serialize)]
pub struct GameEntry {
    /// Generation that played it.
    pub generation: u32,
    /// Game id (the file stem).
    pub id: String,
    /// Result in PTN, if the file has one.
    pub result: Option<String>,
}

/// The dashboard's data.
#[derive(Debug, Serialize)]
pub struct RunView {
    /// The run's name.
    pub name: String,
    /// The run directory.
    pub path: PathBuf,
    /// The newest complete checkpoint (`latest`).
    pub latest: Option<String>,
    /// `logs/generations.jsonl`, one object per generation (the newest 1000).
    pub generations: Vec<Value>,
    /// `arena/elo-curve.csv` (empty before `bredon arena --run`).
    pub elo: Vec<EloPoint>,
    /// Why the Elo curve could not be read, if it could not.
    pub elo_error: Option<String>,
    /// The newest self-play games, newest first.
    pub games: Vec<GameEntry>,
}

/// Games listed on the dashboard.
const GAMES_LISTED: usize = 24;
/// Generation lines sent.
const GENERATIONS_SENT: usize = 1000;

/// Reads the dashboard's data of the run in `dir`.
pub fn read_run(info: &RunInfo) -> Result<RunView, ApiError> {
    let dir = &info.path;
    if !dir.is_dir() {
        return Err(ApiError::Internal(format!("{} is not a directory (was the run deleted?)", dir.display())));
    }
    let latest = std::fs::read_to_string(dir.join("latest")).ok().map(|s| s.trim().to_string());
    let mut generations = Vec::new();
    if let Ok(text) = std::fs::read_to_string(dir.join("logs/generations.jsonl")) {
        // A torn last line (the trainer is writing it) is left for the next poll.
        generations = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect();
        let skip = generations.len().saturating_sub(GENERATIONS_SENT);
        generations.drain(..skip);
    }
    let (elo, elo_error) = match std::fs::read_to_string(dir.join("arena/elo-curve.csv")) {
        Ok(text) => match parse_curve(&text) {
            Ok(v) => (v, None),
            Err(e) => (vec![], Some(format!("arena/elo-curve.csv: {e}"))),
        },
        Err(_) => (vec![], None),
    };
    Ok(RunView {
        name: info.name.clone(),
        path: dir.clone(),
        latest,
        generations,
        elo,
        elo_error,
        games: newest_games(dir),
    })
}

/// Parses `name,generation,step,minutes,elo,lo95,hi95` rows (header first).
pub fn parse_curve(text: &str) -> Result<Vec<EloPoint>, String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').map(str::trim).collect();
    let col = |name: &str| header.iter().position(|h| *h == name).ok_or(format!("no `{name}` column"));
    let (cn, cg, cs, cm, ce, cl, ch) =
        (col("name")?, col("generation")?, col("step")?, col("minutes")?, col("elo")?, col("lo95")?, col("hi95")?);
    let mut out = Vec::new();
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let num = |c: usize| -> Result<f64, String> {
            f.get(c).and_then(|s| s.parse::<f64>().ok()).ok_or(format!(
                "line {}: bad number in column {}",
                i + 2,
                c + 1
            ))
        };
        out.push(EloPoint {
            name: f.get(cn).unwrap_or(&"").to_string(),
            generation: num(cg)? as u64,
            step: num(cs)? as u64,
            minutes: num(cm)?,
            elo: num(ce)?,
            lo95: num(cl)?,
            hi95: num(ch)?,
        });
    }
    Ok(out)
}

/// The newest games of the newest generations that have any.
fn newest_games(dir: &Path) -> Vec<GameEntry> {
    let mut gens: Vec<u32> = std::fs::read_dir(dir.join("games"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_prefix("gen-")?.parse().ok())
        .collect();
    gens.sort_unstable_by(|a, b| b.cmp(a));
    let mut out = Vec::new();
    for g in gens {
        let gdir = dir.join(format!("games/gen-{g:04}"));
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&gdir)
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
            out.push(GameEntry { generation: g, id, result });
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
    let path = info.path.join(format!("games/gen-{generation:04}/{id}.ptn"));
    std::fs::read_to_string(&path)
        .map_err(|_| ApiError::NotFound(format!("run {} has no game {id} in generation {generation}", info.name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_curve_parses_and_a_bad_one_names_the_line() {
        let c = parse_curve("name,generation,step,minutes,elo,lo95,hi95\ngen-0000,0,0,0.00,0.0,0.0,0.0\ngen-0005,5,203,24.21,132.5,-31.0,295.9\n").unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!((c[1].generation, c[1].lo95), (5, -31.0));
        let e = parse_curve("name,generation,step,minutes,elo,lo95,hi95\ngen-0000,0,0,x,0,0,0\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        assert!(parse_curve("a,b\n").unwrap_err().contains("no `name` column"));
    }
}
