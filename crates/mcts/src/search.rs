//! The search tree and the PUCT playout loop.

use crate::config::{Algorithm, SearchConfig};
use crate::evaluator::{Evaluation, Evaluator};
use crate::solver::{RootSolver, SolverBudget};
use bredon_rules::{Move, Position};
use rand::Rng;
use rand_distr::{Distribution, Gamma};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const NONE: u32 = u32::MAX;
/// The root is always the first node of the arena.
const ROOT: u32 = 0;

/// A proven game-theoretic value, from the view of the player who moved into the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Proof {
    Unknown,
    /// The player who moved into this node wins.
    Win,
    /// The player who moved into this node loses.
    Loss,
    /// A finished drawn game.
    Draw,
}

#[derive(Clone, Debug)]
struct Node {
    mv: Move,
    prior: f32,
    visits: u32,
    /// Sum of values from the view of the player who moved into this node.
    value_sum: f32,
    /// Sum of draw probabilities (1 per drawn finished game, the evaluator's estimate at a
    /// leaf, 0 where it gives none).
    draw_sum: f32,
    /// Sum of final flat margins (komi included) from the view of the player who moved
    /// into this node: exact for finished games, the evaluator's estimate at a leaf, 0
    /// where it gives none.
    margin_sum: f32,
    in_flight: u32,
    first_child: u32,
    children: u16,
    expanded: bool,
    terminal: bool,
    proof: Proof,
    /// The network's value of this node for its side to move (set at expansion).
    eval: f32,
}

impl Node {
    fn new(mv: Move, prior: f32) -> Node {
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

/// Playouts of a clock search before it may stop as decided: enough for a rate estimate
/// and for the leader to be more than the prior's first guess.
const DECIDED_MIN_PLAYOUTS: u64 = 64;

/// The threat-space solver's most positions in one search, whatever the budget (a search
/// that runs until stopped gets this many).
const SOLVER_MAX_NODES: u64 = 2_000_000;

/// The threat-space solver's time in a search with neither a deadline nor a visit budget
/// (one that runs until stopped).
const SOLVER_UNTIMED: Duration = Duration::from_millis(500);

/// When a search stops.
#[derive(Clone, Debug, Default)]
pub struct SearchLimits {
    /// Stop when the root has this many visits (reused ones included).
    pub visits: Option<u64>,
    /// Stop when this flag is set (e.g. by a TEI `stop`).
    pub stop: Option<Arc<AtomicBool>>,
    /// Stop at this time.
    pub deadline: Option<Instant>,
    /// Call the progress callback at most this often.
    pub progress_every: Option<Duration>,
    /// The deadline is a game clock's share, so time saved is kept: the PUCT search may
    /// stop before it once the most visited root move cannot change
    /// ([`SearchConfig::stop_when_decided`], which callers pass here for clock budgets).
    pub stop_when_decided: bool,
}

/// A game result, from the view of one player.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// That player wins.
    Win,
    /// That player loses.
    Loss,
    /// The game is drawn.
    Draw,
}

/// A result the search proved for the side to move at the root, and in how many plies
/// the game ends along the proven line (the principal variation as searched: a bound, not
/// always the shortest way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Solved {
    /// The proven result for the side to move.
    pub outcome: Outcome,
    /// Plies until the game ends along the proven line (1: the move itself wins).
    pub plies: u32,
}

/// Win, draw and loss probabilities for one player, summing to 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wdl {
    /// Probability of a win.
    pub win: f32,
    /// Probability of a draw.
    pub draw: f32,
    /// Probability of a loss.
    pub loss: f32,
}

impl Wdl {
    /// The split given by an expected outcome `value` in [-1, 1] and a draw probability.
    pub fn from_value(value: f32, draw: f32) -> Wdl {
        let value = value.clamp(-1.0, 1.0);
        // A draw probability larger than the value allows is cut to what it allows.
        let draw = draw.clamp(0.0, 1.0 - value.abs());
        Wdl { win: (1.0 + value - draw) / 2.0, draw, loss: (1.0 - value - draw) / 2.0 }
    }

    /// The same probabilities from the other side's view (win and loss swapped).
    pub fn flipped(self) -> Wdl {
        Wdl { win: self.loss, draw: self.draw, loss: self.win }
    }

    /// The split in per mille, rounded so that the three sum to 1000.
    pub fn per_mille(&self) -> [u32; 3] {
        let w = (self.win * 1000.0).round().clamp(0.0, 1000.0) as u32;
        let l = (self.loss * 1000.0).round().clamp(0.0, (1000 - w) as f32) as u32;
        [w, 1000 - w - l, l]
    }
}

/// One root move as the search saw it: the lines of a MultiPV report.
#[derive(Clone, Debug, PartialEq)]
pub struct RootMove {
    /// The move.
    pub mv: Move,
    /// Its visits.
    pub visits: u32,
    /// The evaluator's prior for it (after root noise, if any).
    pub prior: f32,
    /// Mean value after it for the side to move at the root, in [-1, 1] (±1 or 0 when
    /// proven); `None` while unvisited.
    pub value: Option<f32>,
    /// Win/draw/loss for the side to move at the root after this move, when the value
    /// is known and the evaluator gives draw probabilities (or the move is proven).
    pub wdl: Option<Wdl>,
    /// A result the search proved for this move, from the root mover's view.
    pub proven: Option<Outcome>,
    /// The expected final flat margin after this move for the root mover, when visited
    /// and the evaluator gives margins.
    pub margin: Option<f32>,
    /// The principal variation starting with this move.
    pub pv: Vec<Move>,
}

/// What a search found.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchResult {
    /// Visits per root move (the training target). They sum to the root's visits minus
    /// one: the root's own first visit is its expansion.
    pub visits: Vec<(Move, u32)>,
    /// Expected outcome for the side to move at the root, in [-1, 1] (±1 when proven).
    pub value: f32,
    /// The move to play: a proven win if there is one, else the most visited move that is
    /// not a proven loss.
    pub best_move: Option<Move>,
    /// Principal variation: most visited moves from the root.
    pub pv: Vec<Move>,
    /// Playouts done by this call (not counting reused visits).
    pub playouts: u64,
    /// Total visits of the root.
    pub root_visits: u64,
    /// Whether the root's value is proven (a forced result).
    pub proven: bool,
    /// Gumbel search only: the improved policy softmax(logits + σ(completed Q)) over the
    /// root moves, the policy training target (PUCT trains on `visits`).
    pub improved_policy: Option<Vec<(Move, f32)>>,
    /// Win/draw/loss for the side to move at the root, when the evaluator gives draw
    /// probabilities or the result is proven.
    pub wdl: Option<Wdl>,
    /// The proven result and its length, when `proven`.
    pub solved: Option<Solved>,
    /// The expected final flat margin in flats for the side to move at the root (komi
    /// included), when the evaluator gives margins.
    pub margin: Option<f32>,
    /// Every root move, the move to play first, then by the same order `best_move`
    /// uses (proven wins, visits, value, prior).
    pub root_moves: Vec<RootMove>,
    /// The deepest ply below the root that a playout of this search reached.
    pub seldepth: u32,
}

impl SearchResult {
    /// Picks a move: temperature 0 gives `best_move`; otherwise moves are drawn with
    /// probability ∝ visits^(1/temperature), never a proven loss while others exist.
    /// Returns `None` only if the root has no legal moves.
    pub fn select_move(&self, temperature: f32, rng: &mut impl Rng) -> Move {
        self.try_select_move(temperature, rng).expect("select_move on a finished game")
    }

    /// Like [`SearchResult::select_move`], `None` if the root has no moves.
    pub fn try_select_move(&self, temperature: f32, rng: &mut impl Rng) -> Option<Move> {
        if temperature <= 1e-3 || self.proven {
            return self.best_move;
        }
        let weights: Vec<f64> = self.visits.iter().map(|&(_, v)| (v as f64).powf(1.0 / temperature as f64)).collect();
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return self.best_move;
        }
        let mut x = rng.random::<f64>() * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return Some(self.visits[i].0);
            }
            x -= w;
        }
        self.best_move
    }
}

struct Leaf {
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
struct Batch {
    leaves: Vec<Leaf>,
    /// The leaves' paths from the root, end to end (`Leaf::path_start`, `path_len`).
    paths: Vec<u32>,
    /// Descents of this round already backed up (finished or tactically decided leaves).
    done: usize,
}

impl Batch {
    /// Asks `evaluator` about the leaves (no tree access: a shared search runs this
    /// outside its lock).
    fn evaluate<E: Evaluator + ?Sized>(&self, evaluator: &E) -> Vec<Evaluation> {
        let positions: Vec<&Position> = self.leaves.iter().map(|l| &l.position).collect();
        let legal: Vec<&[Move]> = self.leaves.iter().map(|l| l.moves.as_slice()).collect();
        evaluator.evaluate_batch(&positions, &legal)
    }
}

/// Where the descents of one gathering round start.
#[derive(Clone, Copy)]
enum Descents<'a> {
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

/// Why a search stops: every stop condition, checked in one place ([`Stopper`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StopReason {
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
struct Stopper<'a> {
    limits: &'a SearchLimits,
    start: Instant,
}

impl<'a> Stopper<'a> {
    fn new(limits: &'a SearchLimits) -> Stopper<'a> {
        Stopper { limits, start: Instant::now() }
    }

    /// Why the search must stop now, if it must.
    fn stop_reason(&self, tree: &Search) -> Option<StopReason> {
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
    fn room(&self, tree: &Search) -> u64 {
        let root = &tree.nodes[ROOT as usize];
        self.limits.visits.map_or(u64::MAX, |v| v.saturating_sub(root.visits as u64 + root.in_flight as u64))
    }

    /// A clock search with [`SearchLimits::stop_when_decided`]: whether the playouts the
    /// time left would give at the rate so far (`playouts` since the start) can no longer
    /// change the most visited root move.
    fn decided(&self, tree: &Search, playouts: u64) -> bool {
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

/// A tree searched by several threads ([`Search::run_shared`]), behind one lock.
struct Shared<'t> {
    tree: &'t mut Search,
    /// Playouts completed by all threads.
    playouts: u64,
    /// Set by the first thread that sees a stop condition (or no work left for anyone).
    halted: bool,
}

/// The calling thread's progress reports in a shared search.
struct Progress<'f> {
    every: Duration,
    report: &'f mut dyn FnMut(&SearchResult),
}

/// One thread of a shared search: gather under the lock, evaluate outside it, back up
/// under it, until a stop condition.
fn shared_worker<E: Evaluator + ?Sized>(
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

/// What sequential halving asks of the next step of a phase.
enum NextBatch {
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
struct Halving<'l> {
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
    fn new(tree: &Search, limits: &'l SearchLimits, rng: &mut impl Rng) -> Option<Halving<'l>> {
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
    fn rank(&mut self, tree: &Search) {
        let q = tree.completed_q(ROOT);
        let max_n = tree.children(ROOT).iter().map(|c| c.visits).max().unwrap_or(0);
        let mut cands = std::mem::take(&mut self.cands);
        cands.sort_by(|&a, &b| self.score(tree, b, &q, max_n).total_cmp(&self.score(tree, a, &q, max_n)));
        self.cands = cands;
    }

    /// The leading candidate's move.
    fn leader(&self, tree: &Search) -> Option<Move> {
        self.cands.first().map(|&i| self.child(tree, i).mv)
    }

    /// The visit count each candidate should reach in this phase: its visits plus an
    /// equal share of the budget left for the phases still to come.
    fn phase_targets(&self, tree: &Search, stopper: &Stopper<'_>, playouts: u64) -> Vec<u64> {
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
    fn next_batch(&self, tree: &Search, targets: &[u64]) -> NextBatch {
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
    fn end_phase(&mut self, tree: &Search) -> bool {
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

/// The order in which moves are worth playing, worst first (for `max_by`), proven wins
/// aside: most visits among moves not proven lost; equal visits (common with a flat policy
/// and few visits) are split by the mean value, then the prior. Among proven losses (a
/// lost position), one that loses later beats one that loses at once (a terminal or
/// tactically refuted child): make the opponent find it.
fn play_order(a: &Node, b: &Node) -> std::cmp::Ordering {
    let q = |c: &Node| if c.visits > 0 { c.value_sum / c.visits as f32 } else { f32::NEG_INFINITY };
    let key = |c: &Node| (c.proof != Proof::Loss, c.proof != Proof::Loss || !c.terminal, c.visits);
    key(a).cmp(&key(b)).then(q(a).total_cmp(&q(b))).then(a.prior.total_cmp(&b.prior))
}

/// The tree of one game. Reuse it from move to move with [`Search::advance`].
pub struct Search {
    config: SearchConfig,
    root_pos: Position,
    nodes: Vec<Node>,
    noise_applied: bool,
    /// Gumbel search: the root move chosen by the last sequential halving.
    gumbel_choice: Option<Move>,
    /// Whether an evaluation has given a draw probability (so the tree's WDL is known).
    has_draw: bool,
    /// Whether an evaluation has given a flat margin (so the tree's margin is known).
    has_margin: bool,
    /// The deepest ply below the root reached since the last search started.
    seldepth: u32,
    // Scratch buffers reused across playouts.
    path: Vec<u32>,
    move_buf: Vec<Move>,
    /// Root moves the threat-space solver proved losing in this search.
    root_losses: Vec<Move>,
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

    /// Searches until the root has `visits` visits.
    pub fn run<E: Evaluator + ?Sized>(&mut self, evaluator: &E, visits: u64, rng: &mut impl Rng) -> SearchResult {
        let limits = SearchLimits { visits: Some(visits), ..Default::default() };
        self.run_with(evaluator, &limits, rng, |_| {})
    }

    /// Searches until a limit is reached, calling `on_progress` periodically.
    pub fn run_with<E: Evaluator + ?Sized>(
        &mut self,
        evaluator: &E,
        limits: &SearchLimits,
        rng: &mut impl Rng,
        mut on_progress: impl FnMut(&SearchResult),
    ) -> SearchResult {
        if let Some(r) = self.begin(limits) {
            return r;
        }
        if self.config.algorithm == Algorithm::Gumbel {
            return self.run_gumbel(evaluator, limits, rng, on_progress);
        }
        let stopper = Stopper::new(limits);
        let mut playouts = self.expand_root(evaluator);
        let mut last_progress = Instant::now();
        loop {
            if stopper.stop_reason(self).is_some() {
                break;
            }
            if self.nodes[ROOT as usize].expanded && self.config.root_noise && !self.noise_applied {
                self.apply_noise(rng);
            }
            let room = stopper.room(self);
            let done =
                self.step(evaluator, Descents::FromRoot(room.min(self.config.leaf_batch.max(1) as u64) as usize));
            if done == 0 {
                break;
            }
            playouts += done as u64;
            if let Some(every) = limits.progress_every
                && last_progress.elapsed() >= every
            {
                last_progress = Instant::now();
                on_progress(&self.result(playouts));
            }
            if stopper.decided(self, playouts) {
                break;
            }
        }
        self.result(playouts)
    }

    /// Searches one tree with `threads` threads until a limit is reached (PUCT; a Gumbel
    /// root search, or one thread, is [`Search::run_with`]). Each thread descends under
    /// the tree's lock, gathering a batch of leaves kept apart by virtual loss, asks
    /// `evaluator` about them with the lock released, and backs them up under the lock
    /// again: the evaluations, the expensive part, run side by side. `on_progress` is
    /// called on the calling thread, which searches too.
    pub fn run_shared<E: Evaluator + ?Sized>(
        &mut self,
        evaluator: &E,
        threads: usize,
        limits: &SearchLimits,
        rng: &mut impl Rng,
        mut on_progress: impl FnMut(&SearchResult),
    ) -> SearchResult {
        if threads <= 1 || self.config.algorithm == Algorithm::Gumbel {
            return self.run_with(evaluator, limits, rng, on_progress);
        }
        if let Some(r) = self.begin(limits) {
            return r;
        }
        let stopper = Stopper::new(limits);
        // The root first, so that the threads have moves to spread over.
        let playouts = self.expand_root(evaluator);
        if self.nodes[ROOT as usize].expanded && self.config.root_noise && !self.noise_applied {
            self.apply_noise(rng);
        }
        let shared = Mutex::new(Shared { tree: self, playouts, halted: false });
        let progress_every = limits.progress_every;
        std::thread::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(|| shared_worker(&shared, evaluator, &stopper, None));
            }
            let mut report = |r: &SearchResult| on_progress(r);
            shared_worker(
                &shared,
                evaluator,
                &stopper,
                progress_every.map(|every| Progress { every, report: &mut report }),
            );
        });
        let Shared { tree, playouts, .. } = shared.into_inner().unwrap_or_else(|e| e.into_inner());
        tree.result(playouts)
    }

    /// Expands the root if it is not, whatever the limits, so that every search returns a
    /// move. Returns the playouts done (0 or 1).
    fn expand_root<E: Evaluator + ?Sized>(&mut self, evaluator: &E) -> u64 {
        let playouts =
            if self.nodes[ROOT as usize].expanded { 0 } else { self.step(evaluator, Descents::FromRoot(1)) as u64 };
        self.mark_root_losses();
        playouts
    }

    /// What every search does first: a finished game or a root the rules decide (an
    /// immediate or forced win) is answered without searching; then the threat-space
    /// solver, where it has a share of the budget, may prove a win (answered at once) or
    /// root moves that lose (kept for [`Search::mark_root_losses`]).
    fn begin(&mut self, limits: &SearchLimits) -> Option<SearchResult> {
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

    /// The result for proven winning root moves `wins` (not empty), each with one visit,
    /// the game ending within `plies`.
    fn proven_win(&self, wins: &[Move], plies: u32) -> SearchResult {
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

    fn apply_noise(&mut self, rng: &mut impl Rng) {
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

    /// One round: gathers leaves by `descents`, evaluates them in one batch, backs up.
    /// Returns the number of playouts completed (tactically decided ones included).
    fn step<E: Evaluator + ?Sized>(&mut self, evaluator: &E, descents: Descents<'_>) -> usize {
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
    fn gather(&mut self, descents: Descents<'_>) -> Batch {
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

    /// Walks from the root (through root child `through`, if given) by the selection rule
    /// to a terminal node or an unexpanded one, recording the path in `self.path`. A leaf
    /// that is a finished game is marked terminal with its proof. Returns the leaf and its
    /// position, or `None` when the walk ends at a leaf already in flight.
    fn descend(&mut self, through: Option<u32>) -> Option<(u32, Position)> {
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
    fn apply(&mut self, batch: Batch, evals: Vec<Evaluation>) -> usize {
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

    fn children(&self, node: u32) -> &[Node] {
        let n = &self.nodes[node as usize];
        if !n.expanded {
            return &[];
        }
        &self.nodes[n.first_child as usize..n.first_child as usize + n.children as usize]
    }

    fn best_child(&self, node: u32) -> Option<&Node> {
        let kids = self.children(node);
        if let Some(w) = kids.iter().find(|c| c.proof == Proof::Win) {
            return Some(w);
        }
        // Most visits among moves not proven lost; equal visits (common with a flat policy
        // and few visits) are split by the mean value, then the prior.
        kids.iter().max_by(|a, b| play_order(a, b))
    }

    /// Gumbel AlphaZero's root search: Gumbel-top-k candidates, sequential halving of
    /// the budget among them ([`Halving`]), the final choice by `g + logits + σ(completed
    /// Q)`.
    fn run_gumbel<E: Evaluator + ?Sized>(
        &mut self,
        evaluator: &E,
        limits: &SearchLimits,
        rng: &mut impl Rng,
        mut on_progress: impl FnMut(&SearchResult),
    ) -> SearchResult {
        let stopper = Stopper::new(limits);
        let mut last_progress = stopper.start;
        // The root is always expanded, whatever the limits: a search returns a move.
        let mut playouts = self.expand_root(evaluator);
        let Some(mut halving) = Halving::new(self, limits, rng) else {
            return self.result(playouts);
        };
        'search: while stopper.stop_reason(self).is_none() {
            let targets = halving.phase_targets(self, &stopper, playouts);
            loop {
                if stopper.stop_reason(self).is_some() {
                    break 'search;
                }
                let forced = match halving.next_batch(self, &targets) {
                    NextBatch::Visit(forced) => forced,
                    NextBatch::PhaseDone => break,
                    NextBatch::BudgetSpent => break 'search,
                };
                let done = self.step(evaluator, Descents::Through(&forced));
                if done == 0 {
                    break 'search;
                }
                playouts += done as u64;
                if let Some(every) = limits.progress_every
                    && last_progress.elapsed() >= every
                {
                    last_progress = Instant::now();
                    self.gumbel_choice = halving.leader(self);
                    on_progress(&self.result(playouts));
                }
            }
            if !halving.end_phase(self) {
                break;
            }
        }
        halving.rank(self);
        self.gumbel_choice = halving.leader(self);
        self.result(playouts)
    }

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
    fn improved_policy(&self, node: u32) -> Vec<f32> {
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
    fn gumbel_select(&self, node: u32) -> u32 {
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

    /// The most visited line below `node` (proven wins first), at most 65 moves.
    fn principal_line(&self, from: u32) -> Vec<Move> {
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

/// The value of a game result for the player it is of.
fn outcome_value(o: Outcome) -> f32 {
    match o {
        Outcome::Win => 1.0,
        Outcome::Loss => -1.0,
        Outcome::Draw => 0.0,
    }
}

/// The certain win/draw/loss split of a game result.
fn outcome_wdl(o: Outcome) -> Wdl {
    match o {
        Outcome::Win => Wdl { win: 1.0, draw: 0.0, loss: 0.0 },
        Outcome::Loss => Wdl { win: 0.0, draw: 0.0, loss: 1.0 },
        Outcome::Draw => Wdl { win: 0.0, draw: 1.0, loss: 0.0 },
    }
}
