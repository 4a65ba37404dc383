//! An exact threat-space solver for the root: forced wins (by road or on the flat count)
//! that the tree search might not see, because the network misjudges them.
//!
//! A forced win is a sequence of the mover's threats (after each of its moves it could win
//! at once if it were its turn again: a road, or an ending of the game on flats in its
//! favour) where every reply of the opponent either loses at once or leaves another such
//! threat, ending in a win. The search looks only at threatening moves for the attacker,
//! and at every reply for the defender, so a win it reports is proven over all replies;
//! a win it does not find may still exist (a quiet move can win too). That is the
//! threat-space search of Go-Moku and Tak engines, with the flat count as a threat like a
//! road: near the end of a game, when a player's reserves or the empty squares are nearly
//! gone, placing or covering a flat threatens to end the game on the count, and the solver
//! counts those races out exactly where the value head guesses.
//!
//! [`RootSolver::solve`] deepens 3, 5, 7, … plies until its budget (a node count, a
//! deadline, a stop flag) runs out, and reports a winning root move, or the root moves
//! after which the opponent has such a win (to be avoided by the tree search). Every
//! reported result is proven; an unfinished depth adds what it proved before it stopped.

use bredon_rules::{Color, Move, Position};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What the solver may spend.
#[derive(Clone, Debug, Default)]
pub struct SolverBudget {
    /// At most this many positions visited (every move tried counts, the attacker's
    /// candidate threats as much as the defender's replies).
    pub nodes: u64,
    /// Stop at this time.
    pub deadline: Option<Instant>,
    /// Stop when this flag is set.
    pub stop: Option<Arc<AtomicBool>>,
    /// The deepest forced win looked for, in plies (odd; 0 for no limit but the budget).
    pub max_plies: u32,
}

/// What [`RootSolver::solve`] proved about the root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RootSolution {
    /// Root moves that force a win, and in how many plies at most (the shortest depth at
    /// which they were found), in the order found.
    pub wins: Vec<Move>,
    /// The plies of the win in `wins` (0 when there is none).
    pub win_plies: u32,
    /// Root moves after which the opponent forces a win (or which lose at once).
    pub losing: Vec<Move>,
    /// The deepest attacker depth finished for every root move, in plies (0 if none).
    pub depth: u32,
    /// Positions visited.
    pub nodes: u64,
}

/// Proven facts about a position for its side to move, by depth.
#[derive(Clone, Copy, Default)]
struct Entry {
    /// Wins within this many plies (0: not known to win).
    win_within: u8,
    /// The search found no forced win within this many plies (threat moves only).
    none_within: u8,
}

/// Positions between two looks at the clock and the stop flag. A position costs a move
/// made and a threat test: a few microseconds, up to about 20 where tall stacks spread
/// many ways, so the deadline is kept to well under a millisecond.
const CLOCK_EVERY: u64 = 32;

/// The threat-space search at one root.
pub struct RootSolver {
    budget: SolverBudget,
    nodes: u64,
    aborted: bool,
    table: HashMap<u64, Entry>,
    /// Per depth, the last reply that refuted a threat (tried first next time).
    killers: Vec<Option<Move>>,
    /// Whether the depth limit cut a line in the current iteration (when none was cut,
    /// deeper iterations would find nothing new).
    cut: bool,
}

impl RootSolver {
    /// A solver that spends at most `budget`.
    pub fn new(budget: SolverBudget) -> RootSolver {
        RootSolver { budget, nodes: 0, aborted: false, table: HashMap::new(), killers: Vec::new(), cut: false }
    }

    /// Deepens over `root` until the budget runs out or the root is decided. The side to
    /// move's immediate wins and the moves that lose at once are the tree search's own
    /// tactics; this adds wins in 3, 5, … plies and moves the opponent punishes in 3, 5, ….
    pub fn solve(&mut self, root: &Position) -> RootSolution {
        let mut out = RootSolution::default();
        if root.result().is_some() || root.is_opening() {
            return out;
        }
        let mut pos = root.clone();
        if let Some(mv) = pos.find_immediate_win() {
            // An immediate win: nothing deeper to prove.
            out.wins = vec![mv];
            out.win_plies = 1;
            return out;
        }
        // Root moves not yet known to lose (a move that ends the game in a draw stays
        // open: nothing after it is a win for anyone).
        let (losing, mut open) = pos.partition_losing_moves(&ordered_moves(&pos));
        out.losing = losing;
        let mut plies = 3u32;
        loop {
            if self.budget.max_plies > 0 && plies > self.budget.max_plies {
                break;
            }
            self.cut = false;
            // A win in `plies` for the side to move.
            if let Some(mv) = self.winning_move(&mut pos, plies, 0) {
                out.wins = vec![mv];
                out.win_plies = plies;
                break;
            }
            if self.aborted {
                break;
            }
            // Root moves after which the opponent wins within `plies`.
            let mut i = 0;
            while i < open.len() {
                let mv = open[i];
                let undo = pos.make(mv);
                let lost = self.wins(&mut pos, plies, 0);
                pos.unmake(mv, undo);
                if lost {
                    out.losing.push(mv);
                    open.swap_remove(i);
                } else {
                    i += 1;
                }
                if self.aborted {
                    break;
                }
            }
            if self.aborted || open.is_empty() {
                break;
            }
            out.depth = plies;
            if !self.cut || plies >= u8::MAX as u32 - 2 {
                break;
            }
            plies += 2;
        }
        out.nodes = self.nodes;
        out
    }

    /// A threat of the side to move at `pos` that forces a win within `plies` (≥ 3), `ply`
    /// plies from the root; `None` also when the budget ran out first.
    fn winning_move(&mut self, pos: &mut Position, plies: u32, ply: usize) -> Option<Move> {
        let me = pos.side_to_move();
        for mv in ordered_moves(pos) {
            // Every candidate counts: most are not threats, but each costs a threat test
            // (slow where tall stacks spread many ways).
            if self.tick() {
                return None;
            }
            let undo = pos.make(mv);
            let wins = self.threat_wins(pos, me, plies, ply);
            pos.unmake(mv, undo);
            if wins {
                return Some(mv);
            }
            if self.aborted {
                return None;
            }
        }
        None
    }

    /// Counts a visited position; true once the budget is spent.
    fn tick(&mut self) -> bool {
        self.nodes += 1;
        if self.aborted {
            return true;
        }
        if self.nodes >= self.budget.nodes {
            self.aborted = true;
        } else if self.nodes.is_multiple_of(CLOCK_EVERY) {
            let late = self.budget.deadline.is_some_and(|d| Instant::now() >= d);
            let stopped = self.budget.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed));
            self.aborted = late || stopped;
        }
        self.aborted
    }

    /// Whether the side to move at `pos` forces a win within `plies` plies (odd), by
    /// threats. `ply` is the distance from the root (for the killer replies). False when
    /// the budget ran out before a proof.
    fn wins(&mut self, pos: &mut Position, plies: u32, ply: usize) -> bool {
        if self.tick() {
            return false;
        }
        if pos.find_immediate_win().is_some() {
            return true;
        }
        if plies < 3 {
            self.cut = true;
            return false;
        }
        let key = pos.hash();
        let known = self.table.get(&key).copied().unwrap_or_default();
        if known.win_within > 0 && known.win_within as u32 <= plies {
            return true;
        }
        if known.none_within as u32 >= plies {
            // Not searched again: it may have been cut before.
            self.cut = true;
            return false;
        }
        let found = self.winning_move(pos, plies, ply).is_some();
        if self.aborted && !found {
            return false;
        }
        let entry = self.table.entry(key).or_default();
        if found {
            entry.win_within = plies as u8;
        } else {
            entry.none_within = entry.none_within.max(plies as u8);
        }
        found
    }

    /// After `me`'s move (the position `pos`, opponent to move): whether it is a threat
    /// that wins within `plies` counted from that move, over every reply.
    fn threat_wins(&mut self, pos: &mut Position, me: Color, plies: u32, ply: usize) -> bool {
        // A move that ends the game was an immediate win (found before) or not a win.
        if pos.result().is_some() {
            return false;
        }
        // Only threats; and the opponent must not win at once.
        if !pos.opponent_threatens() || pos.find_immediate_win().is_some() {
            return false;
        }
        self.all_replies_lose(pos, me, plies - 2, ply + 1)
    }

    /// Whether every reply of the side to move at `pos` (the defender) ends the game in
    /// `me`'s favour or leaves `me` a forced win within `plies`.
    fn all_replies_lose(&mut self, pos: &mut Position, me: Color, plies: u32, ply: usize) -> bool {
        if self.killers.len() <= ply {
            self.killers.resize(ply + 1, None);
        }
        let mut replies = ordered_moves(pos);
        if let Some(k) = self.killers[ply]
            && let Some(i) = replies.iter().position(|&m| m == k)
        {
            replies[..=i].rotate_right(1);
        }
        for reply in replies {
            let undo = pos.make(reply);
            let lost = match pos.result() {
                Some(r) => r.winner() == Some(me),
                None => self.wins(pos, plies, ply + 1),
            };
            pos.unmake(reply, undo);
            if !lost {
                self.killers[ply] = Some(reply);
                return false;
            }
        }
        !self.aborted
    }
}

/// The legal moves of `pos`, placements first (flats, capstones, walls), then spreads:
/// threats and their refutations are most often placements.
fn ordered_moves(pos: &Position) -> Vec<Move> {
    let mut moves = Vec::new();
    pos.generate_moves(&mut moves);
    moves.sort_by_key(|m| !m.is_placement());
    moves
}
