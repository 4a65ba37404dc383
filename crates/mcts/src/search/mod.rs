//! The search tree and the PUCT playout loop.
//!
//! The entry points that run a search ([`Search::run`], [`Search::run_with`],
//! [`Search::run_shared`], and the Gumbel root loop `run_with` hands over to) live here;
//! the steps they take live in submodules, each using only those listed before it:
//!
//! - `tree`: the nodes, their proofs, and the [`Search`] that owns them;
//! - `result`: the public types a search is asked with and answers ([`SearchLimits`],
//!   [`SearchResult`], ...);
//! - `stop`: every stop condition, checked in one place;
//! - `gumbel`: Gumbel AlphaZero's sequential halving, completed Q and improved policy;
//! - `select`: the descent from the root by PUCT (or Gumbel) selection;
//! - `expand`: gathering leaves into a batch, expansion and backup;
//! - `report`: the [`SearchResult`] of the tree as it stands;
//! - `driver`: the shared multi-thread search;
//! - `root`: what every search does first (rules, threat-space solver, root expansion,
//!   noise).

mod driver;
mod expand;
mod gumbel;
mod report;
mod result;
mod root;
mod select;
mod stop;
mod tree;

pub use result::{Outcome, RootMove, SearchLimits, SearchResult, Solved, Wdl, draw_with_temperature};
pub use tree::Search;

use crate::config::Algorithm;
use crate::evaluator::Evaluator;
use driver::{Progress, Shared, shared_worker};
use expand::Descents;
use gumbel::{Halving, NextBatch};
use rand::Rng;
use std::sync::Mutex;
use std::time::Instant;
use stop::Stopper;
use tree::ROOT;

impl Search {
    /// Searches until the root has `visits` visits.
    pub fn run<E: Evaluator + ?Sized>(&mut self, evaluator: &E, visits: u64, rng: &mut impl Rng) -> SearchResult {
        let limits = SearchLimits { visits: Some(visits), ..Default::default() };
        self.run_with(evaluator, &limits, rng, |_| {})
    }

    /// Searches until a limit is reached, calling `on_progress` periodically.
    pub fn run_with<E: Evaluator + ?Sized>(
        &mut self,
        evaluator: &E,
        limits: &SearchLimits,
        rng: &mut impl Rng,
        mut on_progress: impl FnMut(&SearchResult),
    ) -> SearchResult {
        if let Some(r) = self.begin(limits) {
            return r;
        }
        if self.config.algorithm == Algorithm::Gumbel {
            return self.run_gumbel(evaluator, limits, rng, on_progress);
        }
        let stopper = Stopper::new(limits);
        let mut playouts = self.expand_root(evaluator);
        let mut last_progress = Instant::now();
        loop {
            if stopper.stop_reason(self).is_some() {
                break;
            }
            if self.nodes[ROOT as usize].expanded && self.config.root_noise && !self.noise_applied {
                self.apply_noise(rng);
            }
            let room = stopper.room(self);
            let done =
                self.step(evaluator, Descents::FromRoot(room.min(self.config.leaf_batch.max(1) as u64) as usize));
            if done == 0 {
                break;
            }
            playouts += done as u64;
            if let Some(every) = limits.progress_every
                && last_progress.elapsed() >= every
            {
                last_progress = Instant::now();
                on_progress(&self.result(playouts));
            }
            if stopper.decided(self, playouts) {
                break;
            }
        }
        self.result(playouts)
    }

    /// Searches one tree with `threads` threads until a limit is reached (PUCT; a Gumbel
    /// root search, or one thread, is [`Search::run_with`]). Each thread descends under
    /// the tree's lock, gathering a batch of leaves kept apart by virtual loss, asks
    /// `evaluator` about them with the lock released, and backs them up under the lock
    /// again: the evaluations, the expensive part, run side by side. `on_progress` is
    /// called on the calling thread, which searches too.
    pub fn run_shared<E: Evaluator + ?Sized>(
        &mut self,
        evaluator: &E,
        threads: usize,
        limits: &SearchLimits,
        rng: &mut impl Rng,
        mut on_progress: impl FnMut(&SearchResult),
    ) -> SearchResult {
        if threads <= 1 || self.config.algorithm == Algorithm::Gumbel {
            return self.run_with(evaluator, limits, rng, on_progress);
        }
        if let Some(r) = self.begin(limits) {
            return r;
        }
        let stopper = Stopper::new(limits);
        // The root first, so that the threads have moves to spread over.
        let playouts = self.expand_root(evaluator);
        if self.nodes[ROOT as usize].expanded && self.config.root_noise && !self.noise_applied {
            self.apply_noise(rng);
        }
        let shared = Mutex::new(Shared { tree: self, playouts, halted: false });
        let progress_every = limits.progress_every;
        std::thread::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(|| shared_worker(&shared, evaluator, &stopper, None));
            }
            let mut report = |r: &SearchResult| on_progress(r);
            shared_worker(
                &shared,
                evaluator,
                &stopper,
                progress_every.map(|every| Progress { every, report: &mut report }),
            );
        });
        let Shared { tree, playouts, .. } = shared.into_inner().unwrap_or_else(|e| e.into_inner());
        tree.result(playouts)
    }

    /// Gumbel AlphaZero's root search: Gumbel-top-k candidates, sequential halving of
    /// the budget among them ([`Halving`]), the final choice by `g + logits + σ(completed
    /// Q)`.
    fn run_gumbel<E: Evaluator + ?Sized>(
        &mut self,
        evaluator: &E,
        limits: &SearchLimits,
        rng: &mut impl Rng,
        mut on_progress: impl FnMut(&SearchResult),
    ) -> SearchResult {
        let stopper = Stopper::new(limits);
        let mut last_progress = stopper.start;
        // The root is always expanded, whatever the limits: a search returns a move.
        let mut playouts = self.expand_root(evaluator);
        let Some(mut halving) = Halving::new(self, limits, rng) else {
            return self.result(playouts);
        };
        'search: while stopper.stop_reason(self).is_none() {
            let targets = halving.phase_targets(self, &stopper, playouts);
            loop {
                if stopper.stop_reason(self).is_some() {
                    break 'search;
                }
                let forced = match halving.next_batch(self, &targets) {
                    NextBatch::Visit(forced) => forced,
                    NextBatch::PhaseDone => break,
                    NextBatch::BudgetSpent => break 'search,
                };
                let done = self.step(evaluator, Descents::Through(&forced));
                if done == 0 {
                    break 'search;
                }
                playouts += done as u64;
                if let Some(every) = limits.progress_every
                    && last_progress.elapsed() >= every
                {
                    last_progress = Instant::now();
                    self.gumbel_choice = halving.leader(self);
                    on_progress(&self.result(playouts));
                }
            }
            if !halving.end_phase(self) {
                break;
            }
        }
        halving.rank(self);
        self.gumbel_choice = halving.leader(self);
        self.result(playouts)
    }
}
