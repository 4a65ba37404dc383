//! Expansion and backup: a round of descents gathers leaves into a [`Batch`] (finished
//! games and leaves the rules' tactics decide are backed up at once), the evaluator's
//! answers expand them, and values and proofs go back up their paths.

use super::tree::{Node, Proof, ROOT, Search};
use crate::evaluator::{Evaluation, Evaluator};
use bredon_rules::{Move, Position};

pub(super) struct Leaf {
    node: u32,
    path_start: usize,
    path_len: usize,
    position: Position,
    moves: Vec<Move>,
    /// Indices into `moves` of moves that lose at once (they leave the opponent's
    /// threatened win open): marked proven losses when the leaf is expanded.
    losing: Vec<u16>,
}

/// What one playout adds along its path, from the view of the player who moved into its
/// last node.
struct Backup {
    value: f32,
    draw: f32,
    margin: f32,
}

/// The final flat margin of a finished game (komi included) for the player who made its
/// last move, the auxiliary target the margin head learns.
fn final_margin(pos: &Position) -> f32 {
    let (white, black) = pos.flat_counts();
    let margin = white as f32 - black as f32 - pos.half_komi() as f32 / 2.0;
    match pos.side_to_move().opposite() {
        bredon_rules::Color::White => margin,
        bredon_rules::Color::Black => -margin,
    }
}

/// Leaves gathered by one round of descents, waiting for the evaluator.
pub(super) struct Batch {
    pub(super) leaves: Vec<Leaf>,
    /// The leaves' paths from the root, end to end (`Leaf::path_start`, `path_len`).
    pub(super) paths: Vec<u32>,
    /// Descents of this round already backed up (finished or tactically decided leaves).
    pub(super) done: usize,
}

impl Batch {
    /// Asks `evaluator` about the leaves (no tree access: a shared search runs this
    /// outside its lock).
    pub(super) fn evaluate<E: Evaluator + ?Sized>(&self, evaluator: &E) -> Vec<Evaluation> {
        let positions: Vec<&Position> = self.leaves.iter().map(|l| &l.position).collect();
        let legal: Vec<&[Move]> = self.leaves.iter().map(|l| l.moves.as_slice()).collect();
        evaluator.evaluate_batch(&positions, &legal)
    }
}

/// Where the descents of one gathering round start.
#[derive(Clone, Copy)]
pub(super) enum Descents<'a> {
    /// Up to this many descents from the root, by the selection rule all the way.
    FromRoot(usize),
    /// One descent through each of these root children (sequential halving's choice).
    Through(&'a [u32]),
}

/// A leaf reached by a descent.
enum LeafState {
    /// Its value is known without the evaluator: a finished game or a tactical proof.
    Decided(Proof),
    /// To be evaluated; these moves (indices) lose at once.
    Fresh { losing: Vec<u16> },
}

/// What the rules alone say about a leaf before the network is asked.
enum LeafTactics {
    /// Nothing decided; these moves (indices) lose at once.
    Open(Vec<u16>),
    /// The side to move wins at once.
    MoverWins,
    /// Every move of the side to move loses at once.
    MoverLoses,
}

/// Checks `pos` (not over) with legal `moves` for immediate wins and threats.
fn leaf_tactics(pos: &mut Position, moves: &[Move]) -> LeafTactics {
    if pos.find_immediate_win().is_some() {
        return LeafTactics::MoverWins;
    }
    let mut losing = Vec::new();
    if pos.opponent_threatens() {
        losing = pos.losing_move_indices(moves);
        if losing.len() == moves.len() {
            return LeafTactics::MoverLoses;
        }
    }
    LeafTactics::Open(losing)
}

impl Search {
    /// One round: gathers leaves by `descents`, evaluates them in one batch, backs up.
    /// Returns the number of playouts completed (tactically decided ones included).
    pub(super) fn step<E: Evaluator + ?Sized>(&mut self, evaluator: &E, descents: Descents<'_>) -> usize {
        let batch = self.gather(descents);
        if batch.leaves.is_empty() {
            return batch.done;
        }
        let evals = batch.evaluate(evaluator);
        self.apply(batch, evals)
    }

    /// Descends as `descents` says: a descent that ends in a finished game or a
    /// tactically decided position is backed up at once; one that reaches a fresh leaf
    /// marks its path in flight (virtual loss) and queues the leaf for the evaluator.
    /// Stops early when a descent runs into a leaf already in flight.
    pub(super) fn gather(&mut self, descents: Descents<'_>) -> Batch {
        let max_leaves = match descents {
            Descents::FromRoot(n) => n,
            Descents::Through(children) => children.len(),
        };
        let mut leaves: Vec<Leaf> = Vec::with_capacity(max_leaves);
        let mut paths = Vec::new();
        let mut done = 0;
        let mut attempts = 0;
        while leaves.len() + done < max_leaves && attempts < max_leaves * 2 {
            attempts += 1;
            let through = match descents {
                Descents::FromRoot(_) => None,
                Descents::Through(children) => match children.get(attempts - 1) {
                    Some(&child) => Some(child),
                    None => break,
                },
            };
            let Some((leaf, mut pos)) = self.descend(through) else {
                break; // ran into a pending leaf
            };
            self.seldepth = self.seldepth.max(self.path.len() as u32 - 1);
            match self.classify_leaf(leaf, &mut pos) {
                LeafState::Decided(proof) => {
                    let (value, draw) = match proof {
                        Proof::Win => (1.0, 0.0),
                        Proof::Loss => (-1.0, 0.0),
                        Proof::Draw => (0.0, 1.0),
                        Proof::Unknown => (0.0, 0.0),
                    };
                    let path = std::mem::take(&mut self.path);
                    self.backup(&path, Backup { value, draw, margin: final_margin(&pos) });
                    self.path = path;
                    done += 1;
                }
                LeafState::Fresh { losing } => {
                    // Mark the path in flight and queue the leaf.
                    for &p in &self.path {
                        self.nodes[p as usize].in_flight += 1;
                    }
                    let start = paths.len();
                    paths.extend_from_slice(&self.path);
                    leaves.push(Leaf {
                        node: leaf,
                        path_start: start,
                        path_len: self.path.len(),
                        position: pos,
                        moves: self.move_buf.clone(),
                        losing,
                    });
                }
            }
        }
        Batch { leaves, paths, done }
    }

    /// What the leaf reached by a descent is: decided (terminal, or proven by the rules'
    /// tactical checks, which mark it terminal) or fresh, its legal moves then in
    /// `self.move_buf` and the indices of those that lose at once returned.
    fn classify_leaf(&mut self, leaf: u32, pos: &mut Position) -> LeafState {
        if self.nodes[leaf as usize].terminal {
            return LeafState::Decided(self.nodes[leaf as usize].proof);
        }
        self.move_buf.clear();
        pos.generate_moves(&mut self.move_buf);
        if !self.config.tactics {
            return LeafState::Fresh { losing: Vec::new() };
        }
        // The root is always expanded, so that it has moves to choose from (its immediate
        // wins were handled before the search).
        let at_root = leaf == ROOT;
        let proof = match leaf_tactics(pos, &self.move_buf) {
            LeafTactics::Open(losing) => return LeafState::Fresh { losing },
            LeafTactics::MoverLoses if at_root => {
                return LeafState::Fresh { losing: (0..self.move_buf.len() as u16).collect() };
            }
            LeafTactics::MoverWins if at_root => return LeafState::Fresh { losing: Vec::new() },
            LeafTactics::MoverWins => Proof::Loss,
            LeafTactics::MoverLoses => Proof::Win,
        };
        let n = &mut self.nodes[leaf as usize];
        n.terminal = true;
        n.proof = proof;
        LeafState::Decided(proof)
    }

    /// Expands and backs up the leaves of `batch` with their evaluations. Returns the
    /// playouts completed by the batch (its tactically decided descents included).
    pub(super) fn apply(&mut self, batch: Batch, evals: Vec<Evaluation>) -> usize {
        let Batch { leaves, paths, mut done } = batch;
        for (leaf, ev) in leaves.iter().zip(evals) {
            let path = &paths[leaf.path_start..leaf.path_start + leaf.path_len];
            for &p in path {
                self.nodes[p as usize].in_flight -= 1;
            }
            self.expand(leaf.node, &leaf.moves, &ev.policy);
            self.nodes[leaf.node as usize].eval = ev.value.clamp(-1.0, 1.0);
            let first = self.nodes[leaf.node as usize].first_child;
            for &i in &leaf.losing {
                let child = &mut self.nodes[(first + i as u32) as usize];
                child.terminal = true;
                child.proof = Proof::Loss;
            }
            if ev.draw.is_some() {
                self.has_draw = true;
            }
            // The evaluator's value is for the side to move at the leaf; the node stores
            // values for the player who moved into it.
            if ev.margin.is_some() {
                self.has_margin = true;
            }
            self.backup(
                path,
                Backup {
                    value: -ev.value.clamp(-1.0, 1.0),
                    draw: ev.draw.unwrap_or(0.0).clamp(0.0, 1.0),
                    margin: -ev.margin.filter(|m| m.is_finite()).unwrap_or(0.0),
                },
            );
            done += 1;
        }
        done
    }

    fn expand(&mut self, node: u32, moves: &[Move], policy: &[f32]) {
        let first = self.nodes.len() as u32;
        let total: f32 = policy.iter().take(moves.len()).filter(|p| p.is_finite() && **p > 0.0).sum();
        for (i, &mv) in moves.iter().enumerate() {
            let p = policy.get(i).copied().filter(|p| p.is_finite() && *p > 0.0).unwrap_or(0.0);
            let prior = if total > 0.0 { p / total } else { 1.0 / moves.len() as f32 };
            self.nodes.push(Node::new(mv, prior));
        }
        let n = &mut self.nodes[node as usize];
        n.first_child = first;
        n.children = moves.len() as u16;
        n.expanded = true;
    }

    /// Adds `value` (for the player who moved into the last node of `path`) along the path,
    /// flipping sign each ply, then propagates proofs upwards.
    fn backup(&mut self, path: &[u32], b: Backup) {
        let (mut v, mut m) = (b.value, b.margin);
        for &p in path.iter().rev() {
            let n = &mut self.nodes[p as usize];
            n.visits += 1;
            n.value_sum += v;
            n.draw_sum += b.draw;
            n.margin_sum += m;
            v = -v;
            m = -m;
        }
        // Proof propagation: a node whose mover-to-play has a winning child is lost for the
        // player who moved into it; a node all of whose children lose is won.
        for &p in path.iter().rev() {
            let n = &self.nodes[p as usize];
            if n.proof != Proof::Unknown || !n.expanded || n.children == 0 {
                if n.proof == Proof::Unknown {
                    break;
                }
                continue;
            }
            let (first, k) = (n.first_child as usize, n.children as usize);
            let kids = &self.nodes[first..first + k];
            let proof = if kids.iter().any(|c| c.proof == Proof::Win) {
                Proof::Loss
            } else if kids.iter().all(|c| c.proof == Proof::Loss) {
                Proof::Win
            } else {
                break;
            };
            self.nodes[p as usize].proof = proof;
        }
    }
}
