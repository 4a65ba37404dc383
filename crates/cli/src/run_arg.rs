//! `--run DIR|s3://BUCKET/PREFIX`: a run's location, and for a run on an object store the
//! local copy that the commands work in (see `bredon_selfplay::remote`).

use anyhow::{Context, Result};
use bredon_selfplay::remote::Remote;
use bredon_storage::{RunLocation, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A run opened for a command: the directory to work in and, for a run on an object
/// store, the store (the directory is then a local copy under the cache).
pub struct OpenedRun {
    /// The run directory (or the local copy).
    pub dir: PathBuf,
    /// The object store, for `s3://` runs.
    pub remote: Option<Arc<Remote>>,
}

/// The default cache root: `$BREDON_CACHE`, else `$XDG_CACHE_HOME/bredon`, else
/// `~/.cache/bredon`.
fn cache_root() -> PathBuf {
    if let Some(p) = std::env::var_os("BREDON_CACHE") {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(p).join("bredon");
    }
    std::env::var_os("HOME").map_or_else(|| PathBuf::from(".bredon-cache"), |h| PathBuf::from(h).join(".cache/bredon"))
}

/// Opens `location` for a process of kind `role` (`train`, `selfplay`, `check`, …): a
/// local run as it is; an object-store run with its local copy at
/// `<cache>/s3/BUCKET/PREFIX/<role>` (`cache`: `--cache`, else the default root).
pub fn open(location: &RunLocation, cache: Option<&Path>, role: &str) -> Result<OpenedRun> {
    match location {
        RunLocation::Local(dir) => Ok(OpenedRun { dir: dir.clone(), remote: None }),
        RunLocation::S3 { .. } => {
            let store = Store::open(location)?;
            let dir = cache.map_or_else(cache_root, Path::to_path_buf).join(location.cache_name()).join(role);
            let remote =
                Remote::new(store, &dir).with_context(|| format!("opening the local copy {}", dir.display()))?;
            Ok(OpenedRun { dir, remote: Some(Arc::new(remote)) })
        }
    }
}

/// Opens `location` whole, for reading (`check`, `arena`, `export`): an object-store run
/// is fetched into its local copy first.
pub fn open_whole(
    location: &RunLocation,
    role: &str,
) -> Result<(OpenedRun, Option<bredon_selfplay::remote::PullReport>)> {
    let run = open(location, None, role)?;
    let report = match &run.remote {
        Some(r) => {
            let rep = r.pull_all()?;
            eprintln!(
                "fetched {location} into {} ({} game bundles, {} requests)",
                run.dir.display(),
                rep.bundles,
                r.store().requests()
            );
            Some(rep)
        }
        None => None,
    };
    Ok((run, report))
}

/// Refuses a curriculum's directory where `command` works on one run: the error names
/// the curriculum's stage directories that hold a run (`bredon check`, `bredon export`
/// and `bredon selfplay` take the curriculum itself).
pub fn one_run(dir: &Path, command: &str) -> Result<()> {
    use bredon_selfplay::curriculum::{CURRICULUM_FILE, stage_dirs};
    if !dir.join(CURRICULUM_FILE).is_file() {
        return Ok(());
    }
    let runs: Vec<String> = stage_dirs(dir)
        .into_iter()
        .filter(|d| d.join(bredon_selfplay::rundir::layout::CONFIG).is_file())
        .map(|d| d.display().to_string())
        .collect();
    let list =
        if runs.is_empty() { "no stage has a run yet".to_string() } else { format!("its stages: {}", runs.join(", ")) };
    anyhow::bail!(
        "{} is a curriculum, not one run: `bredon {command}` takes one stage's directory ({list})",
        dir.display()
    )
}
