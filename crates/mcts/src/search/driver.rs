//! The multi-thread driver of [`Search::run_shared`]: one tree behind a lock
//! ([`Shared`]), each thread gathering leaves under it, evaluating them outside it and
//! backing them up under it again.

use super::expand::{Batch, Descents};
use super::result::SearchResult;
use super::stop::Stopper;
use super::tree::{ROOT, Search};
use crate::evaluator::Evaluator;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A tree searched by several threads ([`Search::run_shared`]), behind one lock.
pub(super) struct Shared<'t> {
    pub(super) tree: &'t mut Search,
    /// Playouts completed by all threads.
    pub(super) playouts: u64,
    /// Set by the first thread that sees a stop condition (or no work left for anyone).
    pub(super) halted: bool,
}

/// The calling thread's progress reports in a shared search.
pub(super) struct Progress<'f> {
    pub(super) every: Duration,
    pub(super) report: &'f mut dyn FnMut(&SearchResult),
}

/// One thread of a shared search: gather under the lock, evaluate outside it, back up
/// under it, until a stop condition.
pub(super) fn shared_worker<E: Evaluator + ?Sized>(
    shared: &Mutex<Shared<'_>>,
    evaluator: &E,
    stopper: &Stopper<'_>,
    mut progress: Option<Progress<'_>>,
) {
    let lock = || shared.lock().unwrap_or_else(|e| e.into_inner());
    let mut last_progress = Instant::now();
    loop {
        let batch = {
            let mut s = lock();
            if s.halted {
                return;
            }
            if stopper.stop_reason(s.tree).is_some() || stopper.decided(s.tree, s.playouts) {
                s.halted = true;
                return;
            }
            let room = stopper.room(s.tree);
            let batch = if room > 0 {
                let leaf_batch = s.tree.config.leaf_batch.max(1) as u64;
                s.tree.gather(Descents::FromRoot(room.min(leaf_batch) as usize))
            } else {
                Batch { leaves: Vec::new(), paths: Vec::new(), done: 0 }
            };
            if batch.leaves.is_empty() {
                s.playouts += batch.done as u64;
                if batch.done == 0 {
                    if s.tree.nodes[ROOT as usize].in_flight == 0 {
                        // Nothing to search and nobody searching: the tree is exhausted.
                        s.halted = true;
                        return;
                    }
                    // Every open path ends in another thread's pending leaf: wait for it.
                    drop(s);
                    std::thread::sleep(Duration::from_micros(50));
                }
                continue;
            }
            batch
        };
        let evals = batch.evaluate(evaluator);
        let mut s = lock();
        let done = s.tree.apply(batch, evals);
        s.playouts += done as u64;
        if let Some(p) = progress.as_mut()
            && last_progress.elapsed() >= p.every
        {
            last_progress = Instant::now();
            (p.report)(&s.tree.result(s.playouts));
        }
    }
}
