//! The one play-time search every front end uses (`bredon tei`, `play`, `analyse`,
//! `serve`, the arena's players): one game's tree, searched by a number of threads,
//! reused from move to move, within a [`Budget`], with no root noise (play measures, it
//! does not explore), and always returning a move when the position has one.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use bredon_rules::{Move, Position};
use rand::Rng;

use crate::config::SearchConfig;
use crate::evaluator::Evaluator;
use crate::search::{Search, SearchLimits, SearchResult};

/// The search settings for play: `bredon_mcts`'s defaults with root noise off, the
/// threat-space solver on ([`PLAY_SOLVER_SHARE`] of each move's budget) and, on a game
/// clock, a move's search stopped once its move is decided
/// ([`SearchConfig::stop_when_decided`]: +49 Elo [0, +98] at 10 s + 0.1 s on 6x6,
/// `experiments/README.md`).
pub fn play_config() -> SearchConfig {
    SearchConfig {
        root_noise: false,
        solver_share: PLAY_SOLVER_SHARE,
        stop_when_decided: true,
        ..SearchConfig::default()
    }
}

/// The threat-space solver's share of a play-time search ([`SearchConfig::solver_share`]).
pub const PLAY_SOLVER_SHARE: f32 = 0.1;

/// How much one play-time search may spend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// This many new visits of the root (at least one), on top of those the tree kept.
    Visits(u64),
    /// This long, wall-clock.
    Time(Duration),
    /// A game clock's share for this move (see [`crate::Clock::share`]): like `Time`,
    /// but with [`SearchConfig::stop_when_decided`] the search may stop once its move
    /// is decided, keeping the rest on the clock.
    Clock(Duration),
    /// Until the stop flag is set.
    Infinite,
}

/// What a play-time search reports while it runs.
pub struct Progress<'f> {
    /// The interval between reports.
    pub every: Duration,
    /// Called with the result so far, on the calling thread.
    pub report: &'f mut dyn FnMut(&SearchResult),
}

/// A game's tree for play, searched by `threads` threads ([`Search::run_shared`]).
pub struct PlaySearch {
    start: Position,
    moves: Vec<Move>,
    tree: Search,
    threads: usize,
}

impl PlaySearch {
    /// A fresh tree rooted at `position`, searched by `threads` (at least 1) threads.
    pub fn new(position: Position, config: SearchConfig, threads: usize) -> PlaySearch {
        PlaySearch {
            start: position.clone(),
            moves: Vec::new(),
            tree: Search::new(position, config),
            threads: threads.max(1),
        }
    }

    /// A fresh tree for the game `start` + `moves` (rooted after the moves), so that
    /// [`PlaySearch::set_game`] reuses it when the game goes on.
    pub fn for_game(start: &Position, moves: &[Move], config: SearchConfig, threads: usize) -> PlaySearch {
        let mut pos = start.clone();
        for &mv in moves {
            pos.make(mv);
        }
        PlaySearch {
            start: start.clone(),
            moves: moves.to_vec(),
            tree: Search::new(pos, config),
            threads: threads.max(1),
        }
    }

    /// The tree for the game `start` + `moves`: this one advanced when that game
    /// continues the one it holds (tree reuse), else a fresh one with the same settings.
    pub fn set_game(&mut self, start: &Position, moves: &[Move]) {
        if self.start == *start && moves.starts_with(&self.moves) {
            for &mv in &moves[self.moves.len()..] {
                self.tree.advance(mv);
            }
        } else {
            let mut pos = start.clone();
            for &mv in moves {
                pos.make(mv);
            }
            self.start = start.clone();
            self.tree = Search::new(pos, self.tree.config().clone());
        }
        self.moves = moves.to_vec();
    }

    /// The root position.
    pub fn position(&self) -> &Position {
        self.tree.position()
    }

    /// The settings.
    pub fn config(&self) -> &SearchConfig {
        self.tree.config()
    }

    /// Threads that search the tree.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Changes the number of threads for the next searches; the tree stays.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// Visits of the root so far.
    pub fn root_visits(&self) -> u64 {
        self.tree.root_visits() as u64
    }

    /// Plays `mv` at the root, keeping its subtree.
    pub fn advance(&mut self, mv: Move) {
        self.tree.advance(mv);
        self.moves.push(mv);
    }

    /// Searches within `budget` (or until `stop` is set). The root is always expanded, so
    /// the result has a move whenever the position has one.
    pub fn search<E: Evaluator + ?Sized>(
        &mut self,
        evaluator: &E,
        budget: Budget,
        stop: Option<Arc<AtomicBool>>,
        rng: &mut impl Rng,
        progress: Option<Progress<'_>>,
    ) -> SearchResult {
        let limits = self.limits(budget, stop, progress.as_ref().map(|p| p.every));
        match progress {
            Some(p) => self.tree.run_shared(evaluator, self.threads, &limits, rng, p.report),
            None => self.tree.run_shared(evaluator, self.threads, &limits, rng, |_| {}),
        }
    }

    /// Searches within `limits` (a front end that combines several, as a TEI `go` does),
    /// calling `report` with the result so far every `limits.progress_every`. The root is
    /// always expanded.
    pub fn search_within<E: Evaluator + ?Sized>(
        &mut self,
        evaluator: &E,
        limits: &SearchLimits,
        rng: &mut impl Rng,
        report: impl FnMut(&SearchResult),
    ) -> SearchResult {
        self.tree.run_shared(evaluator, self.threads, limits, rng, report)
    }

    /// The search limits of `budget` from now.
    fn limits(&self, budget: Budget, stop: Option<Arc<AtomicBool>>, progress_every: Option<Duration>) -> SearchLimits {
        let now = Instant::now();
        let base = SearchLimits { stop, progress_every, ..SearchLimits::default() };
        match budget {
            Budget::Visits(v) => SearchLimits { visits: Some(self.root_visits() + v.max(1)), ..base },
            Budget::Time(t) => SearchLimits { deadline: Some(now + t), ..base },
            Budget::Clock(t) => {
                SearchLimits { deadline: Some(now + t), stop_when_decided: self.config().stop_when_decided, ..base }
            }
            Budget::Infinite => base,
        }
    }
}

/// Searches `position` afresh within `budget` and returns the result: a move whenever
/// the position has one (for players that search each move anew).
pub fn search_once<E: Evaluator + ?Sized>(
    position: &Position,
    evaluator: &E,
    config: &SearchConfig,
    budget: Budget,
    rng: &mut impl Rng,
) -> SearchResult {
    PlaySearch::new(position.clone(), config.clone(), config.threads).search(evaluator, budget, None, rng, None)
}
