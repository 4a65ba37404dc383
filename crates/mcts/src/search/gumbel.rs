//! Gumbel AlphaZero: sequential halving among the root's candidates ([`Halving`]), the
//! completed Q and improved policy, and the deterministic selection below the root.

use super::result::SearchLimits;
use super::stop::Stopper;
use super::tree::{Node, Proof, ROOT, Search};
use bredon_rules::Move;
use rand::Rng;
use std::time::Instant;

/// What sequential halving asks of the next step of a phase.
pub(super) enum NextBatch {
    /// Visit these root children, one playout each.
    Visit(Vec<u32>),
    /// Every candidate has its visits for this phase.
    PhaseDone,
    /// The visit limit is reached.
    BudgetSpent,
}

/// Gumbel AlphaZero's sequential halving at the root: `m` candidates drawn by
/// Gumbel-top-k, each phase giving every candidate an equal share of the budget left, then
/// keeping the better half by `g + logits + σ(completed Q)`, until one is left.
///
/// The budget is the visit limit when there is one; under a deadline it is re-estimated
/// before every phase from the playout rate so far; with neither (`go infinite`), or when
/// budget is left after the halving ends, a new cycle starts among the best candidates
/// with a budget as large as the root's visits so far (so cycles double).
pub(super) struct Halving<'l> {
    limits: &'l SearchLimits,
    /// The root's first child and number of children.
    first: u32,
    k: usize,
    /// Candidates per cycle.
    m: usize,
    /// Gumbel noise per root child (0 without root noise: matches).
    noise: Vec<f32>,
    /// The candidates still in the running (child indices), best first after a ranking.
    cands: Vec<usize>,
    /// Root visits when the cycle started, and the cycle's budget.
    cycle_start: u64,
    cycle_budget: u64,
}

impl<'l> Halving<'l> {
    /// The first cycle's candidates at the expanded root of `tree`, `None` if the root has
    /// no moves.
    pub(super) fn new(tree: &Search, limits: &'l SearchLimits, rng: &mut impl Rng) -> Option<Halving<'l>> {
        let root = &tree.nodes[ROOT as usize];
        let (first, k) = (root.first_child, root.children as usize);
        if k == 0 {
            return None;
        }
        // Gumbel noise only where the search explores (self-play); matches use g = 0.
        let noise: Vec<f32> = (0..k)
            .map(|_| {
                if tree.config.root_noise {
                    let u: f32 = rng.random::<f32>().clamp(1e-12, 1.0 - 1e-7);
                    -(-u.ln()).ln()
                } else {
                    0.0
                }
            })
            .collect();
        let root_visits = root.visits as u64;
        // As in the paper, m = min(n, gumbel_actions): never more candidates than visits.
        let budget_now = limits.visits.map_or(u64::MAX, |v| v.saturating_sub(root_visits));
        let m = tree.config.gumbel_actions.min(k).min(budget_now.max(2) as usize).max(1);
        let mut halving =
            Halving { limits, first, k, m, noise, cands: (0..k).collect(), cycle_start: root_visits, cycle_budget: 0 };
        // Gumbel-top-k: before any visit, σ is the same for every move.
        let prior_score = |h: &Halving, i: usize| h.noise[i] + h.logit(tree, i);
        let mut cands = std::mem::take(&mut halving.cands);
        cands.sort_by(|&a, &b| prior_score(&halving, b).total_cmp(&prior_score(&halving, a)));
        let open: Vec<usize> = cands.iter().copied().filter(|&i| halving.child(tree, i).proof != Proof::Loss).collect();
        if !open.is_empty() {
            cands = open;
        }
        cands.truncate(m);
        halving.cands = cands;
        halving.cycle_budget = limits.visits.map_or((4 * m as u64).max(root_visits), |v| v.saturating_sub(root_visits));
        Some(halving)
    }

    fn child<'t>(&self, tree: &'t Search, i: usize) -> &'t Node {
        &tree.nodes[self.first as usize + i]
    }

    fn logit(&self, tree: &Search, i: usize) -> f32 {
        self.child(tree, i).prior.max(1e-30).ln()
    }

    /// The score halving ranks by and the final choice maximises.
    fn score(&self, tree: &Search, i: usize, q: &[f32], max_n: u32) -> f32 {
        if self.child(tree, i).proof == Proof::Loss {
            return f32::NEG_INFINITY;
        }
        self.noise[i] + self.logit(tree, i) + tree.config.gumbel_sigma(q[i], max_n)
    }

    /// Orders the candidates best first.
    pub(super) fn rank(&mut self, tree: &Search) {
        let q = tree.completed_q(ROOT);
        let max_n = tree.children(ROOT).iter().map(|c| c.visits).max().unwrap_or(0);
        let mut cands = std::mem::take(&mut self.cands);
        cands.sort_by(|&a, &b| self.score(tree, b, &q, max_n).total_cmp(&self.score(tree, a, &q, max_n)));
        self.cands = cands;
    }

    /// The leading candidate's move.
    pub(super) fn leader(&self, tree: &Search) -> Option<Move> {
        self.cands.first().map(|&i| self.child(tree, i).mv)
    }

    /// The visit count each candidate should reach in this phase: its visits plus an
    /// equal share of the budget left for the phases still to come.
    pub(super) fn phase_targets(&self, tree: &Search, stopper: &Stopper<'_>, playouts: u64) -> Vec<u64> {
        let limits = self.limits;
        let root_visits = tree.root_visits() as u64;
        let n = self.cands.len() as u64;
        let phases = (usize::BITS - (self.cands.len() - 1).leading_zeros()).max(1) as u64;
        let remaining = match (limits.visits, limits.deadline) {
            (Some(v), None) => v.saturating_sub(root_visits),
            (v, Some(d)) => {
                let elapsed = stopper.start.elapsed().as_secs_f64();
                let est = if playouts >= 8 && elapsed > 0.0 {
                    (playouts as f64 / elapsed * d.saturating_duration_since(Instant::now()).as_secs_f64()) as u64
                } else {
                    n // a first phase of one visit each measures the rate
                };
                v.map_or(est, |v| est.min(v.saturating_sub(root_visits)))
            }
            (None, None) => (self.cycle_start + self.cycle_budget).saturating_sub(root_visits),
        };
        let per = if n <= 2 { remaining / n } else { remaining / (phases * n) }.max(1);
        self.cands.iter().map(|&i| self.child(tree, i).visits as u64 + per).collect()
    }

    /// The root children to visit in the next step: the candidates short of their
    /// `targets`, in turn, up to a leaf batch and the visits left.
    pub(super) fn next_batch(&self, tree: &Search, targets: &[u64]) -> NextBatch {
        let room = self.limits.visits.map(|v| v.saturating_sub(tree.root_visits() as u64) as usize);
        if room == Some(0) {
            return NextBatch::BudgetSpent;
        }
        let batch = tree.config.leaf_batch.max(1);
        let mut want: Vec<u64> = self
            .cands
            .iter()
            .zip(targets)
            .map(|(&i, &t)| t.saturating_sub(self.child(tree, i).visits as u64))
            .collect();
        let mut forced = Vec::with_capacity(batch);
        while forced.len() < batch {
            let mut any = false;
            for (j, &i) in self.cands.iter().enumerate() {
                // A proven move needs no more visits (and a terminal child's visits would
                // only inflate its count).
                if want[j] > 0 && forced.len() < batch && !self.child(tree, i).terminal {
                    forced.push(self.first + i as u32);
                    want[j] -= 1;
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
        if let Some(room) = room {
            forced.truncate(room);
        }
        if forced.is_empty() { NextBatch::PhaseDone } else { NextBatch::Visit(forced) }
    }

    /// Ends a phase: keeps the better half of the candidates, or when one is left starts
    /// a new cycle among the best moves that can still learn from visits. `false`: no
    /// candidate can (every move is proven), the search is over.
    pub(super) fn end_phase(&mut self, tree: &Search) -> bool {
        self.rank(tree);
        if self.cands.len() > 1 {
            self.cands.truncate(self.cands.len().div_ceil(2));
            return true;
        }
        let best = self.cands[0];
        self.cands = (0..self.k).filter(|&i| !self.child(tree, i).terminal).collect();
        if self.cands.is_empty() {
            self.cands = vec![best];
            return false;
        }
        self.rank(tree);
        self.cands.truncate(self.m);
        self.cycle_start = tree.root_visits() as u64;
        self.cycle_budget =
            self.limits.visits.map_or(self.cycle_start.max(4 * self.m as u64), |v| v.saturating_sub(self.cycle_start));
        true
    }
}

impl Search {
    /// The completed Q of the Gumbel paper for every child of `node`, from the view of
    /// the player choosing at `node`, in [-1, 1]: a visited (or proven) child's mean value;
    /// an unvisited one gets `v_mix`, the network's value at `node` mixed with the
    /// prior-weighted values of the visited children.
    fn completed_q(&self, node: u32) -> Vec<f32> {
        let n = &self.nodes[node as usize];
        let kids = self.children(node);
        let known = |c: &Node| match c.proof {
            Proof::Win => Some(1.0),
            Proof::Loss => Some(-1.0),
            Proof::Draw => Some(0.0),
            Proof::Unknown if c.visits > 0 => Some(c.value_sum / c.visits as f32),
            Proof::Unknown => None,
        };
        let (mut sum_n, mut mass, mut pq) = (0.0f32, 0.0f32, 0.0f32);
        for c in kids {
            sum_n += c.visits as f32;
            if let Some(q) = known(c) {
                mass += c.prior;
                pq += c.prior * q;
            }
        }
        let v_mix = if mass > 0.0 { (n.eval + sum_n * pq / mass) / (1.0 + sum_n) } else { n.eval };
        kids.iter().map(|c| known(c).unwrap_or(v_mix).clamp(-1.0, 1.0)).collect()
    }

    /// The improved policy softmax(logits + σ(completed Q)) over the children of `node`
    /// (proven losses get nothing while another move is open).
    pub(super) fn improved_policy(&self, node: u32) -> Vec<f32> {
        let kids = self.children(node);
        let q = self.completed_q(node);
        let max_n = kids.iter().map(|c| c.visits + c.in_flight).max().unwrap_or(0);
        let all_lost = kids.iter().all(|c| c.proof == Proof::Loss);
        let z: Vec<f32> = kids
            .iter()
            .zip(&q)
            .map(|(c, &q)| {
                if c.proof == Proof::Loss && !all_lost {
                    f32::NEG_INFINITY
                } else {
                    c.prior.max(1e-30).ln() + self.config.gumbel_sigma(q, max_n)
                }
            })
            .collect();
        let top = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut p: Vec<f32> = z.iter().map(|&x| (x - top).exp()).collect();
        let sum: f32 = p.iter().sum();
        p.iter_mut().for_each(|x| *x /= sum);
        p
    }

    /// The Gumbel paper's deterministic selection below the root: the child whose share
    /// of visits lags furthest behind the improved policy (pending visits count).
    pub(super) fn gumbel_select(&self, node: u32) -> u32 {
        let n = &self.nodes[node as usize];
        let first = n.first_child;
        let kids = self.children(node);
        let pi = self.improved_policy(node);
        let total: u32 = kids.iter().map(|c| c.visits + c.in_flight).sum();
        let mut best = 0;
        let mut best_score = f32::NEG_INFINITY;
        for (i, c) in kids.iter().enumerate() {
            let score = pi[i] - (c.visits + c.in_flight) as f32 / (1.0 + total as f32);
            if score > best_score {
                best_score = score;
                best = i;
            }
        }
        first + best as u32
    }
}
