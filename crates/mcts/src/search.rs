//! The search tree and the PUCT playout loop.

use crate::config::{Algorithm, SearchConfig};
use crate::evaluator::{Evaluation, Evaluator};
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
        for (i, &mv) in moves.iter().enumerate() {
            if pos.move_loses_at_once(mv) {
                losing.push(i as u16);
            }
        }
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
                s.tree.gather(room.min(leaf_batch) as usize, &[])
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
    /// The deepest ply below the root reached since the last search started.
    seldepth: u32,
    // Scratch buffers reused across playouts.
    path: Vec<u32>,
    move_buf: Vec<Move>,
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
            seldepth: 0,
            path: Vec::new(),
            move_buf: Vec::new(),
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

    /// The root moves proven to lose (for merging several trees' results).
    pub fn root_lost_moves(&self) -> Vec<Move> {
        self.children(ROOT).iter().filter(|c| c.proof == Proof::Loss).map(|c| c.mv).collect()
    }

    /// Nodes held by the tree.
    pub fn tree_size(&self) -> usize {
        self.nodes.len()
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
        if let Some(r) = self.begin() {
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
            let done = self.step(evaluator, room.min(self.config.leaf_batch.max(1) as u64) as usize, &[]);
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
        if let Some(r) = self.begin() {
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
        if self.nodes[ROOT as usize].expanded { 0 } else { self.step(evaluator, 1, &[]) as u64 }
    }

    /// What every search does first: a finished game or a root the rules decide (an
    /// immediate or forced win) is answered without searching.
    fn begin(&mut self) -> Option<SearchResult> {
        self.gumbel_choice = None;
        self.seldepth = 0;
        if self.root_pos.result().is_some() {
            return Some(self.result(0));
        }
        if self.config.tactics {
            return self.root_tactics();
        }
        None
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
        let best = *wins.first()?;
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
                pv: vec![mv],
            })
            .collect();
        Some(SearchResult {
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
            root_moves,
            seldepth: 0,
        })
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

    /// One round: gathers up to `max_leaves` leaves, evaluates them in one batch, backs
    /// up. Returns the number of playouts completed (terminal ones included). With
    /// `forced` non-empty, playout `i` goes through root child `forced[i]` (at most
    /// `forced.len()` playouts).
    fn step<E: Evaluator + ?Sized>(&mut self, evaluator: &E, max_leaves: usize, forced: &[u32]) -> usize {
        let batch = self.gather(max_leaves, forced);
        if batch.leaves.is_empty() {
            return batch.done;
        }
        let evals = batch.evaluate(evaluator);
        self.apply(batch, evals)
    }

    /// Descends from the root up to `max_leaves` times (through root child `forced[i]` on
    /// descent `i` when `forced` is non-empty): a descent that ends in a finished game or a
    /// tactically decided position is backed up at once; one that reaches a fresh leaf
    /// marks its path in flight (virtual loss) and queues the leaf for the evaluator. Stops
    /// early when a descent runs into a leaf already in flight.
    fn gather(&mut self, max_leaves: usize, forced: &[u32]) -> Batch {
        let max_leaves = if forced.is_empty() { max_leaves } else { forced.len() };
        let mut leaves: Vec<Leaf> = Vec::with_capacity(max_leaves);
        let mut paths = Vec::new();
        let mut done = 0;
        let mut attempts = 0;
        while leaves.len() + done < max_leaves && attempts < max_leaves * 2 {
            attempts += 1;
            let mut pos = self.root_pos.clone();
            self.path.clear();
            let mut node = ROOT;
            self.path.push(node);
            if !forced.is_empty() {
                let Some(&child) = forced.get(attempts - 1) else { break };
                pos.make(self.nodes[child as usize].mv);
                node = child;
                self.path.push(node);
            }
            let collision = loop {
                let n = &self.nodes[node as usize];
                if n.terminal {
                    break false;
                }
                if !n.expanded {
                    if n.in_flight > 0 {
                        break true;
                    }
                    if let Some(r) = pos.result() {
                        let mover = pos.side_to_move().opposite();
                        let nn = &mut self.nodes[node as usize];
                        nn.terminal = true;
                        let s = r.score_for(mover);
                        nn.proof = if s > 0.0 {
                            Proof::Win
                        } else if s < 0.0 {
                            Proof::Loss
                        } else {
                            Proof::Draw
                        };
                    }
                    break false;
                }
                let child = self.select_child(node);
                pos.make(self.nodes[child as usize].mv);
                node = child;
                self.path.push(node);
            };
            if collision {
                break;
            }
            self.seldepth = self.seldepth.max(self.path.len() as u32 - 1);
            let leaf = node;
            let mut losing = Vec::new();
            if !self.nodes[leaf as usize].terminal {
                self.move_buf.clear();
                pos.generate_moves(&mut self.move_buf);
                if self.config.tactics {
                    // The root is always expanded, so that it has moves to choose from
                    // (its immediate wins were handled before the search).
                    let at_root = leaf == ROOT;
                    let proof = match leaf_tactics(&mut pos, &self.move_buf) {
                        LeafTactics::Open(l) => {
                            losing = l;
                            Proof::Unknown
                        }
                        LeafTactics::MoverLoses if at_root => {
                            losing = (0..self.move_buf.len() as u16).collect();
                            Proof::Unknown
                        }
                        LeafTactics::MoverWins if at_root => Proof::Unknown,
                        LeafTactics::MoverWins => Proof::Loss,
                        LeafTactics::MoverLoses => Proof::Win,
                    };
                    if proof != Proof::Unknown {
                        let n = &mut self.nodes[leaf as usize];
                        n.terminal = true;
                        n.proof = proof;
                    }
                }
            }
            if self.nodes[leaf as usize].terminal {
                let v = match self.nodes[leaf as usize].proof {
                    Proof::Win => 1.0,
                    Proof::Loss => -1.0,
                    _ => 0.0,
                };
                let draw = if self.nodes[leaf as usize].proof == Proof::Draw { 1.0 } else { 0.0 };
                let path = std::mem::take(&mut self.path);
                self.backup(&path, v, draw);
                self.path = path;
                done += 1;
                continue;
            }
            // A fresh leaf: mark the path in flight and queue it.
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
        Batch { leaves, paths, done }
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
            self.backup(path, -ev.value.clamp(-1.0, 1.0), ev.draw.unwrap_or(0.0).clamp(0.0, 1.0));
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
    fn backup(&mut self, path: &[u32], value: f32, draw: f32) {
        let mut v = value;
        for &p in path.iter().rev() {
            let n = &mut self.nodes[p as usize];
            n.visits += 1;
            n.value_sum += v;
            n.draw_sum += draw;
            v = -v;
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
        let mut best = first;
        let mut best_score = f32::NEG_INFINITY;
        for (i, ch) in kids.iter().enumerate() {
            let q = match ch.proof {
                // Never chosen while another move is not lost.
                Proof::Loss => f32::MIN,
                Proof::Draw => 0.0,
                _ => {
                    let n_eff = ch.visits as f32 + ch.in_flight as f32 * vl;
                    if n_eff > 0.0 { (ch.value_sum - ch.in_flight as f32 * vl) / n_eff } else { fpu }
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
    /// the budget among them, the final choice by `g + logits + σ(completed Q)`.
    ///
    /// The budget is the visit limit when there is one; under a deadline it is
    /// re-estimated before every halving phase from the playout rate so far; with
    /// neither (`go infinite`), or when budget is left after the halving ends, a new
    /// halving cycle starts among the best candidates with a budget as large as the
    /// root's visits so far (so cycles double).
    fn run_gumbel<E: Evaluator + ?Sized>(
        &mut self,
        evaluator: &E,
        limits: &SearchLimits,
        rng: &mut impl Rng,
        mut on_progress: impl FnMut(&SearchResult),
    ) -> SearchResult {
        let start = Instant::now();
        let mut last_progress = start;
        let mut playouts = 0u64;
        let root_visits = |s: &Search| s.nodes[ROOT as usize].visits as u64;
        let stopper = Stopper::new(limits);
        let out_of_budget = |s: &Search| stopper.stop_reason(s).is_some();
        // The root is always expanded, whatever the limits: a search returns a move.
        playouts += self.expand_root(evaluator);
        let root = &self.nodes[ROOT as usize];
        let (first, k) = (root.first_child, root.children as usize);
        if k == 0 {
            return self.result(playouts);
        }
        // Gumbel noise only where the search explores (self-play); matches use g = 0.
        let noise: Vec<f32> = (0..k)
            .map(|_| {
                if self.config.root_noise {
                    let u: f32 = rng.random::<f32>().clamp(1e-12, 1.0 - 1e-7);
                    -(-u.ln()).ln()
                } else {
                    0.0
                }
            })
            .collect();
        let logit = |s: &Search, i: usize| s.nodes[first as usize + i].prior.max(1e-30).ln();
        // The score that halving ranks by and the final choice maximises.
        let score = |s: &Search, i: usize, q: &[f32], max_n: u32| {
            if s.nodes[first as usize + i].proof == Proof::Loss {
                return f32::NEG_INFINITY;
            }
            noise[i] + logit(s, i) + s.config.gumbel_sigma(q[i], max_n)
        };
        let rank = |s: &Search, cands: &mut Vec<usize>| {
            let q = s.completed_q(ROOT);
            let max_n = s.children(ROOT).iter().map(|c| c.visits).max().unwrap_or(0);
            cands.sort_by(|&a, &b| score(s, b, &q, max_n).total_cmp(&score(s, a, &q, max_n)));
        };
        // As in the paper, m = min(n, gumbel_actions): never more candidates than visits.
        let budget_now = limits.visits.map_or(u64::MAX, |v| v.saturating_sub(root_visits(self)));
        let m = self.config.gumbel_actions.min(k).min(budget_now.max(2) as usize).max(1);
        let mut cands: Vec<usize> = (0..k).collect();
        // Gumbel-top-k: before any visit, σ is the same for every move.
        cands.sort_by(|&a, &b| (noise[b] + logit(self, b)).total_cmp(&(noise[a] + logit(self, a))));
        let open: Vec<usize> =
            cands.iter().copied().filter(|&i| self.nodes[first as usize + i].proof != Proof::Loss).collect();
        if !open.is_empty() {
            cands = open;
        }
        cands.truncate(m);
        let mut cycle_start = root_visits(self);
        let mut cycle_budget = limits.visits.map_or((4 * m as u64).max(cycle_start), |v| v.saturating_sub(cycle_start));
        'search: while !out_of_budget(self) {
            // One halving phase among `cands`.
            let phases = (usize::BITS - (cands.len() - 1).leading_zeros()).max(1) as u64;
            let remaining = match (limits.visits, limits.deadline) {
                (Some(v), _) if limits.deadline.is_none() => v.saturating_sub(root_visits(self)),
                (v, Some(d)) => {
                    let elapsed = start.elapsed().as_secs_f64();
                    let est = if playouts >= 8 && elapsed > 0.0 {
                        (playouts as f64 / elapsed * d.saturating_duration_since(Instant::now()).as_secs_f64()) as u64
                    } else {
                        cands.len() as u64 // a first phase of one visit each measures the rate
                    };
                    v.map_or(est, |v| est.min(v.saturating_sub(root_visits(self))))
                }
                _ => (cycle_start + cycle_budget).saturating_sub(root_visits(self)),
            };
            let per = if cands.len() <= 2 {
                remaining / cands.len() as u64
            } else {
                remaining / (phases * cands.len() as u64)
            }
            .max(1);
            let targets: Vec<u64> = cands.iter().map(|&i| self.nodes[first as usize + i].visits as u64 + per).collect();
            loop {
                if out_of_budget(self) {
                    break 'search;
                }
                let batch = self.config.leaf_batch.max(1);
                let mut forced = Vec::with_capacity(batch);
                let mut want: Vec<u64> = cands
                    .iter()
                    .zip(&targets)
                    .map(|(&i, &t)| t.saturating_sub(self.nodes[first as usize + i].visits as u64))
                    .collect();
                if let Some(v) = limits.visits {
                    let room = v.saturating_sub(root_visits(self)) as usize;
                    if room == 0 {
                        break 'search;
                    }
                }
                'fill: while forced.len() < batch {
                    let mut any = false;
                    for (j, &i) in cands.iter().enumerate() {
                        // A proven move needs no more visits (and a terminal child's
                        // visits would only inflate its count).
                        if want[j] > 0 && forced.len() < batch && !self.nodes[first as usize + i].terminal {
                            forced.push(first + i as u32);
                            want[j] -= 1;
                            any = true;
                        }
                    }
                    if !any {
                        break 'fill;
                    }
                }
                if let Some(v) = limits.visits {
                    forced.truncate(v.saturating_sub(root_visits(self)) as usize);
                }
                if forced.is_empty() {
                    break; // phase done
                }
                let done = self.step(evaluator, forced.len(), &forced);
                if done == 0 {
                    break 'search;
                }
                playouts += done as u64;
                if let Some(every) = limits.progress_every
                    && last_progress.elapsed() >= every
                {
                    last_progress = Instant::now();
                    self.gumbel_choice = cands.first().map(|&i| self.nodes[first as usize + i].mv);
                    on_progress(&self.result(playouts));
                }
            }
            rank(self, &mut cands);
            if cands.len() > 1 {
                cands.truncate(cands.len().div_ceil(2));
            } else {
                // Halving is over with budget left: a new cycle among the best moves that
                // can still learn from visits (a proven child cannot).
                let best = cands[0];
                cands = (0..k).filter(|&i| !self.nodes[first as usize + i].terminal).collect();
                if cands.is_empty() {
                    cands = vec![best];
                    break 'search;
                }
                rank(self, &mut cands);
                cands.truncate(m);
                cycle_start = root_visits(self);
                cycle_budget = limits.visits.map_or(cycle_start.max(4 * m as u64), |v| v.saturating_sub(cycle_start));
            }
        }
        rank(self, &mut cands);
        self.gumbel_choice = cands.first().map(|&i| self.nodes[first as usize + i].mv);
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
                RootMove { mv: c.mv, visits: c.visits, prior: c.prior, value, wdl, proven, pv }
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
