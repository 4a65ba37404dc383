//! Tree parallelism for one move: a single tree of the position searched by several
//! threads at once ([`Search::run_shared`]: virtual loss keeps their leaf batches apart,
//! the evaluations run side by side outside the tree's lock). For matches and `bredon tei`
//! (`[search] threads`); self-play already runs many games at once.

use bredon_rules::{Move, Position};
use rand::Rng;

use crate::{Evaluator, Search, SearchConfig, SearchLimits, SearchResult};

/// One tree searched by `threads` threads, reused from move to move.
pub struct ParallelSearch {
    tree: Search,
    threads: usize,
}

impl ParallelSearch {
    /// A fresh tree rooted at `position`, searched by `threads` (at least 1) threads.
    pub fn new(position: Position, config: SearchConfig, threads: usize) -> ParallelSearch {
        ParallelSearch { tree: Search::new(position, config), threads: threads.max(1) }
    }

    /// The root position.
    pub fn position(&self) -> &Position {
        self.tree.position()
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
    }

    /// Searches until a limit ([`Search::run_shared`]); `on_progress` is called on the
    /// calling thread.
    pub fn run_with<E: Evaluator + ?Sized>(
        &mut self,
        evaluator: &E,
        limits: &SearchLimits,
        rng: &mut impl Rng,
        on_progress: impl FnMut(&SearchResult),
    ) -> SearchResult {
        self.tree.run_shared(evaluator, self.threads, limits, rng, on_progress)
    }
}
