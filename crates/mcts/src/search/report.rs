//! Reporting: the [`SearchResult`] the tree gives at any moment, its root moves in play
//! order, and the result for root moves proven to win before any search.

use super::result::{Outcome, RootMove, SearchResult, Solved, Wdl, outcome_value, outcome_wdl};
use super::tree::{Node, Proof, ROOT, Search, play_order};
use crate::config::Algorithm;
use bredon_rules::Move;

impl Search {
    /// The result for proven winning root moves `wins` (not empty), each with one visit,
    /// the game ending within `plies`.
    pub(super) fn proven_win(&self, wins: &[Move], plies: u32) -> SearchResult {
        let best = wins[0];
        let root_visits = (self.nodes[ROOT as usize].visits as u64).max(wins.len() as u64 + 1);
        let won = Wdl { win: 1.0, draw: 0.0, loss: 0.0 };
        let root_moves = wins
            .iter()
            .map(|&mv| RootMove {
                mv,
                visits: 1,
                prior: 1.0 / wins.len() as f32,
                value: Some(1.0),
                wdl: Some(won),
                proven: Some(Outcome::Win),
                margin: None,
                pv: vec![mv],
            })
            .collect();
        SearchResult {
            visits: wins.iter().map(|&m| (m, 1)).collect(),
            value: 1.0,
            best_move: Some(best),
            pv: vec![best],
            playouts: 0,
            root_visits,
            proven: true,
            improved_policy: None,
            wdl: Some(won),
            solved: Some(Solved { outcome: Outcome::Win, plies }),
            margin: None,
            root_moves,
            seldepth: 0,
        }
    }

    /// The current result without searching more.
    pub fn result(&self, playouts: u64) -> SearchResult {
        let root = &self.nodes[ROOT as usize];
        let visits: Vec<(Move, u32)> = self.children(ROOT).iter().map(|c| (c.mv, c.visits)).collect();
        // The root's proof is from the view of the player who moved into it.
        let outcome = match root.proof {
            Proof::Win => Some(Outcome::Loss),
            Proof::Loss => Some(Outcome::Win),
            Proof::Draw => Some(Outcome::Draw),
            Proof::Unknown => None,
        };
        let value = match outcome {
            Some(o) => outcome_value(o),
            None if root.visits > 0 => -root.value_sum / root.visits as f32,
            None => 0.0,
        };
        let mut pv = self.principal_line(ROOT);
        let mut best_move = self.best_child(ROOT).map(|c| c.mv);
        let mut improved_policy = None;
        if self.config.algorithm == Algorithm::Gumbel && root.expanded && root.children > 0 {
            let kids = self.children(ROOT);
            let pi = self.improved_policy(ROOT);
            improved_policy = Some(kids.iter().zip(&pi).map(|(c, &p)| (c.mv, p)).collect());
            // The halving's choice, unless a move is proven to win or the choice is lost.
            let won = kids.iter().any(|c| c.proof == Proof::Win);
            if let Some(mv) = self.gumbel_choice
                && !won
                && kids.iter().any(|c| c.mv == mv && c.proof != Proof::Loss)
                && best_move != Some(mv)
            {
                best_move = Some(mv);
                let child = kids.iter().position(|c| c.mv == mv).expect("a root child") as u32 + root.first_child;
                pv = vec![mv];
                pv.extend(self.principal_line(child));
            }
        }
        let wdl = match outcome {
            Some(o) => Some(outcome_wdl(o)),
            None if self.has_draw && root.visits > 0 => {
                Some(Wdl::from_value(value, root.draw_sum / root.visits as f32))
            }
            None => None,
        };
        let solved = outcome.map(|outcome| Solved { outcome, plies: pv.len().max(1) as u32 });
        let margin = (self.has_margin && root.visits > 0).then(|| -root.margin_sum / root.visits as f32);
        SearchResult {
            root_moves: self.root_moves(best_move, &pv),
            best_move,
            visits,
            value: value.clamp(-1.0, 1.0),
            pv,
            playouts,
            root_visits: root.visits as u64,
            proven: outcome.is_some(),
            improved_policy,
            wdl,
            solved,
            margin,
            seldepth: self.seldepth,
        }
    }

    /// Every root move, `best` first (with `best_pv` as its line), then in play order.
    fn root_moves(&self, best: Option<Move>, best_pv: &[Move]) -> Vec<RootMove> {
        let first = self.nodes[ROOT as usize].first_child;
        let mut order: Vec<u32> = (0..self.children(ROOT).len() as u32).map(|i| first + i).collect();
        order.sort_by(|&a, &b| {
            let (na, nb) = (&self.nodes[a as usize], &self.nodes[b as usize]);
            let key = |n: &Node| (Some(n.mv) == best, n.proof == Proof::Win);
            key(nb).cmp(&key(na)).then_with(|| play_order(nb, na))
        });
        order
            .into_iter()
            .map(|i| {
                let c = &self.nodes[i as usize];
                // A child's proof and values are from the root mover's view.
                let proven = match c.proof {
                    Proof::Win => Some(Outcome::Win),
                    Proof::Loss => Some(Outcome::Loss),
                    Proof::Draw => Some(Outcome::Draw),
                    Proof::Unknown => None,
                };
                let value = match proven {
                    Some(o) => Some(outcome_value(o)),
                    None => (c.visits > 0).then(|| (c.value_sum / c.visits as f32).clamp(-1.0, 1.0)),
                };
                let wdl = match (proven, value) {
                    (Some(o), _) => Some(outcome_wdl(o)),
                    (None, Some(v)) if self.has_draw => Some(Wdl::from_value(v, c.draw_sum / c.visits as f32)),
                    _ => None,
                };
                let pv = if Some(c.mv) == best && best_pv.first() == Some(&c.mv) {
                    best_pv.to_vec()
                } else {
                    let mut line = vec![c.mv];
                    line.extend(self.principal_line(i));
                    line
                };
                let margin = (self.has_margin && c.visits > 0).then(|| c.margin_sum / c.visits as f32);
                RootMove { mv: c.mv, visits: c.visits, prior: c.prior, value, wdl, proven, margin, pv }
            })
            .collect()
    }
}
