//! Stopping: every condition that ends a search ([`StopReason`]), checked in one place
//! ([`Stopper`]), and the clock search's early stop once the root's move is decided.

use super::result::SearchLimits;
use super::tree::{Proof, ROOT, Search};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Playouts of a clock search before it may stop as decided: enough for a rate estimate
/// and for the leader to be more than the prior's first guess.
const DECIDED_MIN_PLAYOUTS: u64 = 64;

/// Why a search stops: every stop condition, checked in one place ([`Stopper`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StopReason {
    /// The root has the visits asked for.
    Visits,
    /// The stop flag is set.
    Flag,
    /// The deadline has passed.
    Deadline,
    /// The root's result is proven: more search changes nothing.
    Proven,
}

/// The stop conditions of one search ([`SearchLimits`]), shared by every way to search.
pub(super) struct Stopper<'a> {
    limits: &'a SearchLimits,
    pub(super) start: Instant,
}

impl<'a> Stopper<'a> {
    pub(super) fn new(limits: &'a SearchLimits) -> Stopper<'a> {
        Stopper { limits, start: Instant::now() }
    }

    /// Why the search must stop now, if it must.
    pub(super) fn stop_reason(&self, tree: &Search) -> Option<StopReason> {
        let root = &tree.nodes[ROOT as usize];
        if self.limits.visits.is_some_and(|v| root.visits as u64 >= v) {
            Some(StopReason::Visits)
        } else if self.limits.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
            Some(StopReason::Flag)
        } else if self.limits.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(StopReason::Deadline)
        } else if root.proof != Proof::Unknown && root.visits > 0 {
            Some(StopReason::Proven)
        } else {
            None
        }
    }

    /// Playouts that may still start: the visit limit less the root's visits and those in
    /// flight (no limit: as many as wanted).
    pub(super) fn room(&self, tree: &Search) -> u64 {
        let root = &tree.nodes[ROOT as usize];
        self.limits.visits.map_or(u64::MAX, |v| v.saturating_sub(root.visits as u64 + root.in_flight as u64))
    }

    /// A clock search with [`SearchLimits::stop_when_decided`]: whether the playouts the
    /// time left would give at the rate so far (`playouts` since the start) can no longer
    /// change the most visited root move.
    pub(super) fn decided(&self, tree: &Search, playouts: u64) -> bool {
        let Some(deadline) = self.limits.deadline.filter(|_| self.limits.stop_when_decided) else {
            return false;
        };
        if playouts < DECIDED_MIN_PLAYOUTS {
            return false;
        }
        let now = Instant::now();
        let rate = playouts as f64 / now.duration_since(self.start).as_secs_f64().max(1e-6);
        let left = (rate * deadline.saturating_duration_since(now).as_secs_f64()).ceil() as u64;
        tree.root_decided(left.min(self.room(tree)))
    }
}

impl Search {
    /// Whether `more` playouts can no longer change the root's most visited move: among
    /// the moves not proven lost, the leader's visits exceed the runner-up's (0 when it
    /// is the only one) by more than `more`.
    fn root_decided(&self, more: u64) -> bool {
        let (mut first, mut second) = (0u64, 0u64);
        let mut open = 0;
        for c in self.children(ROOT) {
            if c.proof == Proof::Loss {
                continue;
            }
            open += 1;
            let v = c.visits as u64;
            if v > first {
                second = first;
                first = v;
            } else if v > second {
                second = v;
            }
        }
        open > 0 && first > second + more
    }
}
