//! A new run's replay window carried over from another run (`bredon train --window-from`).
//!
//! A run started with `--init-from` begins with an empty replay window: its first
//! generations train on a few thousand samples of its own, and the network fits those
//! (issue 67's diagnosis: on held-out games the error follows the window's length; a 30 k
//! window against an 81 k one costs +0.06 nats of policy). `--window-from RUN` copies the
//! newest games of `RUN` (and of the runs it inherited from) into `<run>/inherited/`, so
//! that the new run's window, and its growth, continue where the old one stood.
//!
//! The copies are hard links where the file system allows (no space used), else atomic
//! copies; the new run holds everything about itself either way, and the source can be
//! deleted. The records keep their checksums, and the window checks them as it loads.
//! A creation killed half way is redone from the start by the next one.

use std::path::{Path, PathBuf};

use crate::config::RunConfig;
use crate::error::{IoContext, Result, RunError};
use crate::fsutil::atomic_write;
use crate::generation::Generation;
use crate::replay::{GameRecord, list_game_files};
use crate::rundir::{Inherited, RunDir, layout};

/// The source's game files, oldest first: its own inherited games, then its generations'
/// (only those played before `before`, when the source is a checkpoint).
fn source_files(source: &Path, cfg: &RunConfig) -> Result<Vec<PathBuf>> {
    // A run directory, or a checkpoint directory `RUN/checkpoints/gen-NNNN` of one.
    let (root, before) = if source.join(layout::CONFIG).is_file() {
        (source.to_path_buf(), None)
    } else {
        let generation = source.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse::<Generation>().ok());
        let root = source.parent().and_then(Path::parent).filter(|r| r.join(layout::CONFIG).is_file());
        match (generation, root) {
            (Some(g), Some(r)) => (r.to_path_buf(), Some(g)),
            _ => {
                return Err(RunError::WindowFrom {
                    path: source.into(),
                    why: "is neither a run directory (no config.toml) nor a checkpoint directory of one".into(),
                });
            }
        }
    };
    let src = RunDir::new(&root);
    let src_cfg = RunConfig::load(&src.config_path())
        .map_err(|e| RunError::WindowFrom { path: source.into(), why: format!("its config.toml: {e}") })?;
    if src_cfg.game.size != cfg.game.size {
        return Err(RunError::WindowFrom {
            path: source.into(),
            why: format!("its games are {0}x{0}, this run's {1}x{1}", src_cfg.game.size, cfg.game.size),
        });
    }
    let mut files = list_game_files(&src.inherited_dir())?;
    let own = list_game_files(&src.games_dir())?;
    files.extend(own.into_iter().filter(|p| match before {
        None => true,
        Some(b) => {
            let g = p
                .parent()
                .and_then(|d| d.file_name())
                .and_then(|n| n.to_str())
                .and_then(|n| n.parse::<Generation>().ok());
            g.is_some_and(|g| g < b)
        }
    }));
    Ok(files)
}

/// Copies the newest games of `source` (a run directory or one of its checkpoint
/// directories: then only the games played before that checkpoint) into `run`'s
/// `inherited/`, at most `cfg.train.window_max` samples of them, in their order. The
/// source must hold games of the run's board size. A game of another komi is carried
/// as it is (its record, and so its samples, name its komi).
pub fn inherit_window(source: &Path, run: &RunDir, cfg: &RunConfig) -> Result<Inherited> {
    let files = source_files(source, cfg)?;
    if files.is_empty() {
        return Err(RunError::WindowFrom { path: source.into(), why: "holds no games".into() });
    }
    // Newest first until the window's largest size is reached.
    let mut chosen: Vec<&PathBuf> = Vec::new();
    let mut samples = 0;
    let mut skipped = 0;
    for path in files.iter().rev() {
        if samples >= cfg.train.window_max {
            break;
        }
        match GameRecord::load(path) {
            Ok((record, s, _)) if usize::from(record.size) == cfg.game.size => {
                samples += s.len();
                chosen.push(path);
            }
            Ok(_) => skipped += 1,
            Err(e) => {
                eprintln!("warning: --window-from: skipping {}", bredon_storage::error_chain(&e));
                skipped += 1;
            }
        }
    }
    chosen.reverse();
    // `inherited/NNNNN-<source dir>/`: one directory per source directory, numbered in
    // order, so that the window lists them oldest first.
    let dest_root = run.inherited_dir();
    // A creation killed half way (perhaps from another source) starts over.
    if dest_root.exists() {
        std::fs::remove_dir_all(&dest_root).io("removing", &dest_root)?;
    }
    let mut dir_index = 0usize;
    let mut last_parent: Option<&Path> = None;
    for path in &chosen {
        let parent = path.parent().expect("a game file is in a directory");
        if last_parent != Some(parent) {
            if last_parent.is_some() {
                dir_index += 1;
            }
            last_parent = Some(parent);
        }
        let name = parent.file_name().and_then(|n| n.to_str()).unwrap_or("games");
        let name = name
            .split_once('-')
            .filter(|(n, _)| n.len() == 5 && n.bytes().all(|b| b.is_ascii_digit()))
            .map_or(name, |(_, rest)| rest);
        let dir = dest_root.join(format!("{dir_index:05}-{name}"));
        std::fs::create_dir_all(&dir).io("creating", &dir)?;
        let dest = dir.join(path.file_name().expect("a game file has a name"));
        if std::fs::hard_link(path, &dest).is_err() {
            let bytes = std::fs::read(path).io("reading", path)?;
            atomic_write(&dest, &bytes)?;
        }
    }
    Ok(Inherited { source: source.display().to_string(), games: chosen.len(), samples, skipped })
}
