//! The root at the start of every search: what the rules or the threat-space solver
//! answer without a tree search, the solver's budget, the root's expansion with the moves
//! the solver proved losing, and Dirichlet noise.

use super::expand::Descents;
use super::result::{SearchLimits, SearchResult};
use super::tree::{Proof, ROOT, Search};
use crate::evaluator::Evaluator;
use crate::solver::{RootSolver, SolverBudget};
use rand::Rng;
use rand_distr::{Distribution, Gamma};
use std::time::{Duration, Instant};

/// The threat-space solver's most positions in one search, whatever the budget (a search
/// that runs until stopped gets this many).
const SOLVER_MAX_NODES: u64 = 2_000_000;

/// The threat-space solver's time in a search with neither a deadline nor a visit budget
/// (one that runs until stopped).
const SOLVER_UNTIMED: Duration = Duration::from_millis(500);

impl Search {
    /// Expands the root if it is not, whatever the limits, so that every search returns a
    /// move. Returns the playouts done (0 or 1).
    pub(super) fn expand_root<E: Evaluator + ?Sized>(&mut self, evaluator: &E) -> u64 {
        let playouts =
            if self.nodes[ROOT as usize].expanded { 0 } else { self.step(evaluator, Descents::FromRoot(1)) as u64 };
        self.mark_root_losses();
        playouts
    }

    /// What every search does first: a finished game or a root the rules decide (an
    /// immediate or forced win) is answered without searching; then the threat-space
    /// solver, where it has a share of the budget, may prove a win (answered at once) or
    /// root moves that lose (kept for [`Search::mark_root_losses`]).
    pub(super) fn begin(&mut self, limits: &SearchLimits) -> Option<SearchResult> {
        self.gumbel_choice = None;
        self.seldepth = 0;
        self.root_losses.clear();
        if self.root_pos.result().is_some() {
            return Some(self.result(0));
        }
        if !self.config.tactics {
            return None;
        }
        if let Some(r) = self.root_tactics() {
            return Some(r);
        }
        let budget = self.solver_budget(limits)?;
        let solution = RootSolver::new(budget).solve(&self.root_pos);
        if !solution.wins.is_empty() {
            return Some(self.proven_win(&solution.wins, solution.win_plies));
        }
        // Marked once the root is expanded (`expand_root`, which every search runs next).
        self.root_losses = solution.losing;
        None
    }

    /// The threat-space solver's share of a search with `limits`: a share of the time
    /// to the deadline, or nodes in proportion to the visits asked for, or a fixed cap
    /// for a search that runs until stopped. `None` when the solver is off.
    fn solver_budget(&self, limits: &SearchLimits) -> Option<SolverBudget> {
        let share = self.config.solver_share;
        if share <= 0.0 {
            return None;
        }
        let mut budget = SolverBudget { nodes: SOLVER_MAX_NODES, stop: limits.stop.clone(), ..SolverBudget::default() };
        if let Some(deadline) = limits.deadline {
            let now = Instant::now();
            budget.deadline = Some(now + deadline.saturating_duration_since(now).mul_f32(share.min(1.0)));
        }
        if let Some(visits) = limits.visits {
            let new = visits.saturating_sub(self.root_visits() as u64);
            let nodes = (new as f64 * self.config.solver_nodes_per_visit as f64 * share as f64 / 0.1) as u64;
            budget.nodes = budget.nodes.min(nodes.max(1));
        } else if limits.deadline.is_none() {
            // Until stopped (analysis): the tree search reports soon after it starts.
            budget.deadline = Some(Instant::now() + SOLVER_UNTIMED);
        }
        Some(budget)
    }

    /// Marks the root moves the solver proved losing as proven losses (once the root is
    /// expanded), so that the search avoids them.
    fn mark_root_losses(&mut self) {
        if self.root_losses.is_empty() || !self.nodes[ROOT as usize].expanded {
            return;
        }
        let root = &self.nodes[ROOT as usize];
        let (first, k) = (root.first_child as usize, root.children as usize);
        for c in &mut self.nodes[first..first + k] {
            if self.root_losses.contains(&c.mv) {
                c.terminal = true;
                c.proof = Proof::Loss;
            }
        }
    }

    /// The result without searching when the root has an immediate win or a forced win
    /// in three plies: those moves, one visit each, proven.
    fn root_tactics(&self) -> Option<SearchResult> {
        let mut wins = Vec::new();
        self.root_pos.immediate_wins(&mut wins);
        let mut plies = 1;
        if wins.is_empty() {
            wins = self.root_pos.forced_wins_in_three();
            plies = 3;
        }
        (!wins.is_empty()).then(|| self.proven_win(&wins, plies))
    }

    pub(super) fn apply_noise(&mut self, rng: &mut impl Rng) {
        self.noise_applied = true;
        let root = &self.nodes[ROOT as usize];
        let (first, n) = (root.first_child as usize, root.children as usize);
        if n < 2 {
            return;
        }
        let alpha = if self.config.dirichlet_alpha > 0.0 { self.config.dirichlet_alpha } else { 10.0 / n as f32 };
        let Ok(gamma) = Gamma::new(alpha as f64, 1.0) else { return };
        let noise: Vec<f64> = (0..n).map(|_| gamma.sample(rng)).collect();
        let sum: f64 = noise.iter().sum();
        if sum <= 0.0 {
            return;
        }
        let w = self.config.dirichlet_weight;
        for (k, x) in noise.iter().enumerate() {
            let c = &mut self.nodes[first + k];
            c.prior = (1.0 - w) * c.prior + w * (*x / sum) as f32;
        }
    }
}
