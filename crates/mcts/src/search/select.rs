//! Selection: the walk from the root to a leaf, taking at each node a proven win or else
//! the child maximising the PUCT score (in a Gumbel search, [`Search::gumbel_select`]).

use super::tree::{Proof, ROOT, Search};
use crate::config::Algorithm;
use bredon_rules::Position;

impl Search {
    /// Walks from the root (through root child `through`, if given) by the selection rule
    /// to a terminal node or an unexpanded one, recording the path in `self.path`. A leaf
    /// that is a finished game is marked terminal with its proof. Returns the leaf and its
    /// position, or `None` when the walk ends at a leaf already in flight.
    pub(super) fn descend(&mut self, through: Option<u32>) -> Option<(u32, Position)> {
        let mut pos = self.root_pos.clone();
        self.path.clear();
        let mut node = ROOT;
        self.path.push(node);
        if let Some(child) = through {
            pos.make(self.nodes[child as usize].mv);
            node = child;
            self.path.push(node);
        }
        loop {
            let n = &self.nodes[node as usize];
            if n.terminal {
                return Some((node, pos));
            }
            if !n.expanded {
                if n.in_flight > 0 {
                    return None;
                }
                if let Some(r) = pos.result() {
                    let s = r.score_for(pos.side_to_move().opposite());
                    let nn = &mut self.nodes[node as usize];
                    nn.terminal = true;
                    nn.proof = if s > 0.0 {
                        Proof::Win
                    } else if s < 0.0 {
                        Proof::Loss
                    } else {
                        Proof::Draw
                    };
                }
                return Some((node, pos));
            }
            let child = self.select_child(node);
            pos.make(self.nodes[child as usize].mv);
            node = child;
            self.path.push(node);
        }
    }

    fn select_child(&self, node: u32) -> u32 {
        let n = &self.nodes[node as usize];
        let (first, k) = (n.first_child as usize, n.children as usize);
        let kids = &self.nodes[first..first + k];
        if let Some(i) = kids.iter().position(|c| c.proof == Proof::Win) {
            return (first + i) as u32;
        }
        if self.config.algorithm == Algorithm::Gumbel {
            return self.gumbel_select(node);
        }
        let parent_visits = n.visits + n.in_flight;
        let c = self.config.c_at(n.visits);
        let sqrt_n = (parent_visits.max(1) as f32).sqrt();
        // First-play urgency: the parent's value (for the player choosing) minus a reduction.
        let parent_q = if n.visits > 0 { -n.value_sum / n.visits as f32 } else { 0.0 };
        let visited_mass: f32 = kids.iter().filter(|c| c.visits > 0).map(|c| c.prior).sum();
        let fpu = parent_q - self.config.fpu_reduction * visited_mass.sqrt();
        let vl = self.config.virtual_loss;
        // Score utility: the expected flat margin, squashed, added to the value.
        let su = self.config.score_utility;
        let parent_margin = if n.visits > 0 { -n.margin_sum / n.visits as f32 } else { 0.0 };
        let mut best = first;
        let mut best_score = f32::NEG_INFINITY;
        for (i, ch) in kids.iter().enumerate() {
            let q = match ch.proof {
                // Never chosen while another move is not lost.
                Proof::Loss => f32::MIN,
                Proof::Draw => 0.0,
                _ => {
                    let n_eff = ch.visits as f32 + ch.in_flight as f32 * vl;
                    let q = if n_eff > 0.0 { (ch.value_sum - ch.in_flight as f32 * vl) / n_eff } else { fpu };
                    if su != 0.0 {
                        let m = if ch.visits > 0 { ch.margin_sum / ch.visits as f32 } else { parent_margin };
                        q + su * self.config.score_utility_of(m)
                    } else {
                        q
                    }
                }
            };
            let u = c * ch.prior * sqrt_n / (1.0 + ch.visits as f32 + ch.in_flight as f32);
            let score = q + u;
            if score > best_score {
                best_score = score;
                best = first + i;
            }
        }
        best as u32
    }
}
