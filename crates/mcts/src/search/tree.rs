//! The tree: one arena of nodes (a node's children side by side), their proven values,
//! and the [`Search`] that owns them, with what reads or reshapes the tree as a whole: a
//! node's children, its best child and principal line, and [`Search::advance`].

use crate::config::SearchConfig;
use bredon_rules::{Move, Position};

const NONE: u32 = u32::MAX;
/// The root is always the first node of the arena.
pub(super) const ROOT: u32 = 0;

/// A proven game-theoretic value, from the view of the player who moved into the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Proof {
    Unknown,
    /// The player who moved into this node wins.
    Win,
    /// The player who moved into this node loses.
    Loss,
    /// A finished drawn game.
    Draw,
}

#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) mv: Move,
    pub(super) prior: f32,
    pub(super) visits: u32,
    /// Sum of values from the view of the player who moved into this node.
    pub(super) value_sum: f32,
    /// Sum of draw probabilities (1 per drawn finished game, the evaluator's estimate at a
    /// leaf, 0 where it gives none).
    pub(super) draw_sum: f32,
    /// Sum of final flat margins (komi included) from the view of the player who moved
    /// into this node: exact for finished games, the evaluator's estimate at a leaf, 0
    /// where it gives none.
    pub(super) margin_sum: f32,
    pub(super) in_flight: u32,
    pub(super) first_child: u32,
    pub(super) children: u16,
    pub(super) expanded: bool,
    pub(super) terminal: bool,
    pub(super) proof: Proof,
    /// The network's value of this node for its side to move (set at expansion).
    pub(super) eval: f32,
}

impl Node {
    pub(super) fn new(mv: Move, prior: f32) -> Node {
        Node {
            mv,
            prior,
            visits: 0,
            value_sum: 0.0,
            draw_sum: 0.0,
            margin_sum: 0.0,
            in_flight: 0,
            first_child: NONE,
            children: 0,
            expanded: false,
            terminal: false,
            proof: Proof::Unknown,
            eval: 0.0,
        }
    }
}

/// The order in which moves are worth playing, worst first (for `max_by`), proven wins
/// aside: most visits among moves not proven lost; equal visits (common with a flat policy
/// and few visits) are split by the mean value, then the prior. Among proven losses (a
/// lost position), one that loses later beats one that loses at once (a terminal or
/// tactically refuted child): make the opponent find it.
pub(super) fn play_order(a: &Node, b: &Node) -> std::cmp::Ordering {
    let q = |c: &Node| if c.visits > 0 { c.value_sum / c.visits as f32 } else { f32::NEG_INFINITY };
    let key = |c: &Node| (c.proof != Proof::Loss, c.proof != Proof::Loss || !c.terminal, c.visits);
    key(a).cmp(&key(b)).then(q(a).total_cmp(&q(b))).then(a.prior.total_cmp(&b.prior))
}

/// The tree of one game. Reuse it from move to move with [`Search::advance`].
pub struct Search {
    pub(super) config: SearchConfig,
    pub(super) root_pos: Position,
    pub(super) nodes: Vec<Node>,
    pub(super) noise_applied: bool,
    /// Gumbel search: the root move chosen by the last sequential halving.
    pub(super) gumbel_choice: Option<Move>,
    /// Whether an evaluation has given a draw probability (so the tree's WDL is known).
    pub(super) has_draw: bool,
    /// Whether an evaluation has given a flat margin (so the tree's margin is known).
    pub(super) has_margin: bool,
    /// The deepest ply below the root reached since the last search started.
    pub(super) seldepth: u32,
    // Scratch buffers reused across playouts.
    pub(super) path: Vec<u32>,
    pub(super) move_buf: Vec<Move>,
    /// Root moves the threat-space solver proved losing in this search.
    pub(super) root_losses: Vec<Move>,
}

impl Search {
    /// A new tree rooted at `position`.
    pub fn new(position: Position, config: SearchConfig) -> Search {
        let mut nodes = Vec::with_capacity(1024);
        nodes.push(Node::new(Move::default(), 1.0));
        Search {
            config,
            root_pos: position,
            nodes,
            noise_applied: false,
            gumbel_choice: None,
            has_draw: false,
            has_margin: false,
            seldepth: 0,
            path: Vec::new(),
            move_buf: Vec::new(),
            root_losses: Vec::new(),
        }
    }

    /// The root position.
    pub fn position(&self) -> &Position {
        &self.root_pos
    }

    /// The settings.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// Turns root noise on or off for the next searches (e.g. off for fast searches under
    /// playout-cap randomisation).
    pub fn set_root_noise(&mut self, on: bool) {
        self.config.root_noise = on;
    }

    /// Visits of the root so far.
    pub fn root_visits(&self) -> u32 {
        self.nodes[ROOT as usize].visits
    }

    /// Priors of the children of the node reached from the root by `path`, if that node
    /// is expanded (for inspection and tests).
    pub fn priors_at(&self, path: &[Move]) -> Option<Vec<(Move, f32)>> {
        let mut node = ROOT;
        for &mv in path {
            let n = &self.nodes[node as usize];
            if !n.expanded {
                return None;
            }
            node = (n.first_child..n.first_child + n.children as u32).find(|&c| self.nodes[c as usize].mv == mv)?;
        }
        let n = &self.nodes[node as usize];
        n.expanded.then(|| self.children(node).iter().map(|c| (c.mv, c.prior)).collect())
    }

    /// Plays `mv` at the root, keeping its subtree (compacted into a fresh arena).
    pub fn advance(&mut self, mv: Move) {
        self.root_pos.make(mv);
        let root = &self.nodes[ROOT as usize];
        let child = (root.expanded)
            .then(|| {
                (root.first_child..root.first_child + root.children as u32).find(|&c| self.nodes[c as usize].mv == mv)
            })
            .flatten();
        let mut fresh = Vec::with_capacity(1024);
        match child {
            Some(c) => {
                // Breadth-first copy of the subtree.
                let mut top = self.nodes[c as usize].clone();
                top.in_flight = 0;
                if !top.expanded {
                    // A leaf judged by tactics alone becomes a root that must be searched:
                    // its visits (backed-up proofs) say nothing about its moves, and a
                    // root with visits but no children would end a search with no move.
                    top.terminal = false;
                    top.proof = Proof::Unknown;
                    top.visits = 0;
                    top.value_sum = 0.0;
                }
                fresh.push(top);
                let mut i = 0;
                while i < fresh.len() {
                    let n = fresh[i].clone();
                    if n.expanded && n.children > 0 {
                        let first = fresh.len() as u32;
                        for k in 0..n.children as u32 {
                            fresh.push(self.nodes[(n.first_child + k) as usize].clone());
                        }
                        fresh[i].first_child = first;
                    }
                    i += 1;
                }
            }
            None => fresh.push(Node::new(mv, 1.0)),
        }
        self.nodes = fresh;
        self.noise_applied = false;
        self.gumbel_choice = None;
    }

    pub(super) fn children(&self, node: u32) -> &[Node] {
        let n = &self.nodes[node as usize];
        if !n.expanded {
            return &[];
        }
        &self.nodes[n.first_child as usize..n.first_child as usize + n.children as usize]
    }

    pub(super) fn best_child(&self, node: u32) -> Option<&Node> {
        let kids = self.children(node);
        if let Some(w) = kids.iter().find(|c| c.proof == Proof::Win) {
            return Some(w);
        }
        // Most visits among moves not proven lost; equal visits (common with a flat policy
        // and few visits) are split by the mean value, then the prior.
        kids.iter().max_by(|a, b| play_order(a, b))
    }

    /// The most visited line below `node` (proven wins first), at most 65 moves.
    pub(super) fn principal_line(&self, from: u32) -> Vec<Move> {
        let mut line = Vec::new();
        let mut node = from;
        while let Some(c) = self.best_child(node) {
            if (c.visits == 0 && c.proof != Proof::Win) || line.len() > 64 {
                break;
            }
            line.push(c.mv);
            node = ((c as *const Node as usize - self.nodes.as_ptr() as usize) / std::mem::size_of::<Node>()) as u32;
        }
        line
    }
}
