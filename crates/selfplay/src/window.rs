//! The replay window: samples of the stored games, newest last, loaded incrementally.

use crate::error::Result;
use rand::Rng;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::replay::{GameRecord, Sample, list_game_files};
use bredon_rules::Position;

/// Samples from every stored game, in the order the games were found (model, then name).
#[derive(Default)]
pub struct ReplayWindow {
    samples: Vec<Sample>,
    /// Samples dropped from the front (older than any window can reach).
    dropped: usize,
    loaded: HashSet<PathBuf>,
    games: usize,
    skipped: usize,
}

impl ReplayWindow {
    /// An empty window.
    pub fn new() -> ReplayWindow {
        ReplayWindow::default()
    }

    /// Loads games not seen yet. Unreadable, damaged (checksum mismatch) or illegal
    /// records are skipped with a warning and counted (they are written atomically, so
    /// this means outside damage, which must not stop a run). Returns the number of new
    /// samples.
    pub fn refresh(&mut self, games_dir: &Path) -> Result<usize> {
        let mut added = 0;
        for path in list_game_files(games_dir)? {
            if self.loaded.contains(&path) {
                continue;
            }
            match GameRecord::load(&path) {
                Ok((_, s, _)) => {
                    added += s.len();
                    self.samples.extend(s);
                    self.games += 1;
                }
                Err(e) => {
                    eprintln!("warning: skipping damaged game record: {}", bredon_storage::error_chain(&e));
                    self.skipped += 1;
                }
            }
            self.loaded.insert(path);
        }
        Ok(added)
    }

    /// Game records skipped as unreadable since the window was created.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// Samples ever loaded (including dropped ones).
    pub fn total_samples(&self) -> usize {
        self.dropped + self.samples.len()
    }

    /// Samples held now (those a window can draw from).
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether no sample is held.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Games loaded.
    pub fn games(&self) -> usize {
        self.games
    }

    /// Forgets samples older than the newest `keep`.
    pub fn trim(&mut self, keep: usize) {
        if self.samples.len() > keep {
            let n = self.samples.len() - keep;
            self.samples.drain(..n);
            self.dropped += n;
        }
    }

    /// Draws `batch` samples uniformly from the newest `window` samples.
    pub fn sample<'a>(&'a self, window: usize, batch: usize, rng: &mut impl Rng) -> Vec<&'a Sample> {
        let window = window.min(self.samples.len());
        if window == 0 {
            return Vec::new();
        }
        let start = self.samples.len() - window;
        (0..batch).map(|_| &self.samples[start + rng.random_range(0..window)]).collect()
    }

    /// The positions of `n` samples drawn as [`ReplayWindow::sample`] draws them.
    pub fn sample_positions<'a>(&'a self, window: usize, n: usize, rng: &mut impl Rng) -> Vec<&'a Position> {
        self.sample(window, n, rng).into_iter().map(|s| &s.position).collect()
    }
}
