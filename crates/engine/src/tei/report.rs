//! The `info` lines of a search: one per reported line of play (`MultiPV`), from a
//! [`SearchResult`].

use std::time::Instant;

use bredon_mcts::{RootMove, SearchResult, Solved};
use bredon_rules::Move;
use bredon_tei::{Dialect, Info, Outcome, Score, Wdl, proven_cp, value_to_cp};

/// How the `info` lines of one search are written.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReportStyle {
    /// The board size (for PTN).
    pub size: usize,
    /// Proven results as `score solved …` (PTN Ninja) or `score cp ±(10000 − plies)`.
    pub dialect: Dialect,
    /// Lines per report: the best `multi_pv` root moves (1: the search's own line).
    pub multi_pv: u32,
    /// When the search began.
    pub began: Instant,
}

/// The tree's memory use, for `hashfull`: root visits against those `Hash` allows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HashUse {
    /// Visits of the root.
    pub visits: u64,
    /// The visits `Hash` allows.
    pub capacity: u64,
}

impl HashUse {
    fn per_mille(&self) -> u64 {
        (self.visits.saturating_mul(1000) / self.capacity.max(1)).min(1000)
    }
}

impl ReportStyle {
    /// The `info` lines for `r`: with `MultiPV` 1 one line (the search's value and
    /// principal variation); with more, `multipv K` lines for the K best root moves that
    /// the search visited (or proved), best first (the one line while there is none).
    pub fn lines(&self, r: &SearchResult, hash: Option<HashUse>) -> Vec<Info> {
        let ms = self.began.elapsed().as_millis().max(1) as u64;
        let common = Info {
            seldepth: (r.seldepth > 0).then_some(u64::from(r.seldepth)),
            nodes: Some(r.playouts),
            time_ms: Some(ms),
            nps: Some(r.playouts * 1000 / ms),
            hashfull: hash.map(|h| h.per_mille()),
            ..Info::default()
        };
        let known = |m: &&RootMove| m.value.is_some() || m.proven.is_some();
        if self.multi_pv <= 1 || !r.root_moves.iter().any(|m| known(&m)) {
            let score = match r.solved {
                Some(solved) => self.solved_score(solved),
                None => Score::Cp(value_to_cp(r.value)),
            };
            return vec![Info {
                depth: Some(r.pv.len().max(1) as u64),
                score: Some(score),
                wdl: r.wdl.map(per_mille),
                pv: Some(self.ptn(&r.pv)),
                ..common
            }];
        }
        r.root_moves
            .iter()
            .filter(known)
            .take(self.multi_pv as usize)
            .enumerate()
            .map(|(k, m)| Info {
                depth: Some(m.pv.len().max(1) as u64),
                multipv: Some(k as u32 + 1),
                score: Some(self.root_move_score(m, r.solved)),
                wdl: m.wdl.map(per_mille),
                pv: Some(self.ptn(&m.pv)),
                ..common.clone()
            })
            .collect()
    }

    fn ptn(&self, line: &[Move]) -> Vec<String> {
        line.iter().map(|m| m.to_ptn(self.size)).collect()
    }

    fn solved_score(&self, solved: Solved) -> Score {
        let outcome = outcome(solved.outcome);
        match self.dialect {
            Dialect::PtnNinja => Score::Solved { outcome, plies: solved.plies },
            Dialect::MatchRunner => Score::Cp(proven_cp(outcome, solved.plies as usize)),
        }
    }

    /// A root move's score. A proven move's result is as long as its line, as far as the
    /// search followed it, and no shorter than the root's proof when they agree (the
    /// rules' forced wins in three come with a one-move line).
    fn root_move_score(&self, m: &RootMove, root: Option<Solved>) -> Score {
        match m.proven {
            Some(o) => {
                let mut plies = m.pv.len().max(1) as u32;
                if let Some(root) = root.filter(|s| s.outcome == o) {
                    plies = plies.max(root.plies);
                }
                self.solved_score(Solved { outcome: o, plies })
            }
            None => Score::Cp(value_to_cp(m.value.unwrap_or(0.0))),
        }
    }
}

fn outcome(o: bredon_mcts::Outcome) -> Outcome {
    match o {
        bredon_mcts::Outcome::Win => Outcome::Win,
        bredon_mcts::Outcome::Loss => Outcome::Loss,
        bredon_mcts::Outcome::Draw => Outcome::Draw,
    }
}

fn per_mille(w: bredon_mcts::Wdl) -> Wdl {
    Wdl::from_probabilities(w.win, w.draw, w.loss)
}
