//! Search settings.

use serde::{Deserialize, Serialize};

/// How the root chooses which moves to search (below the root each algorithm has its own
/// selection rule too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// AlphaZero's PUCT everywhere, Dirichlet noise at the root, training target = visit
    /// counts.
    #[default]
    Puct,
    /// Gumbel AlphaZero (Danihelka et al., ICLR 2022): Gumbel-top-k sampling of
    /// `gumbel_actions` root moves, sequential halving of the visit budget among them,
    /// the deterministic selection of the paper below the root, training target =
    /// softmax(logits + σ(completed Q)). Improves the policy even with few visits.
    Gumbel,
}

/// Settings of the search. Every field has a default; in TOML only the keys that
/// differ need to be written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Exploration constant at the start (AlphaZero's `c_init`).
    pub c_puct: f32,
    /// Exploration grows as `c_puct + ln((N + c_base + 1) / c_base)` with the parent's
    /// visits N (AlphaZero's log-growing form); 0 turns the growth off.
    pub c_base: f32,
    /// First-play urgency: an unvisited child is valued at the parent's value minus this
    /// reduction (times the square root of the visited children's prior mass).
    pub fpu_reduction: f32,
    /// Add Dirichlet noise to the root priors (self-play exploration). Off for matches.
    pub root_noise: bool,
    /// Dirichlet concentration; 0 means `10 / number of legal moves` (KataGo-style scaling).
    pub dirichlet_alpha: f32,
    /// Share of the root priors replaced by noise.
    pub dirichlet_weight: f32,
    /// Move-selection temperature for the first `temperature_plies` plies.
    pub temperature: f32,
    /// Plies played with `temperature`.
    pub temperature_plies: usize,
    /// Temperature afterwards (0 = always the most visited move).
    pub final_temperature: f32,
    /// Each pending (in-flight) visit counts as this many lost visits while a leaf batch is
    /// being gathered, steering the next selections elsewhere.
    pub virtual_loss: f32,
    /// Leaves gathered per evaluator call by one search.
    pub leaf_batch: usize,
    /// Tactical checks from the rules (no network call needed): a node whose side to
    /// move has an immediate win is a proven loss for the player who moved into it; when
    /// the opponent threatens to win, moves that leave the win open are proven losses at
    /// once; the root plays an immediate win or a forced win in three plies without
    /// searching. Off only for A/B comparisons.
    pub tactics: bool,
    /// Root search: `"puct"` or `"gumbel"`.
    pub algorithm: Algorithm,
    /// Gumbel: root moves sampled (Gumbel-top-k) and compared by sequential halving.
    pub gumbel_actions: usize,
    /// Gumbel: `c_visit` of σ(q) = (c_visit + max visits) · c_scale · q, q in [0, 1].
    pub gumbel_c_visit: f32,
    /// Gumbel: `c_scale` of σ (how far search values move the policy away from the prior).
    pub gumbel_c_scale: f32,
    /// How a game clock is spent in matches and `bredon tei` (`"fixed"` or `"reserves"`;
    /// no effect on self-play, which counts visits).
    pub time_management: crate::time::TimeManagement,
    /// On a game clock (matches and `bredon tei`), stop a move's search once the most
    /// visited root move can no longer be overtaken: its lead over the second is larger
    /// than the playouts the time left would give at the rate so far. The move is the one
    /// the full search would play; the time saved stays on the clock for later moves. No
    /// effect on searches limited by visits (self-play) or by a fixed `movetime`, nor on
    /// the Gumbel root search (its sequential halving spends the budget by design). Off
    /// here, on in [`crate::play_config`] (matches and `bredon tei`), where a clock match
    /// measured it (`experiments/README.md`).
    pub stop_when_decided: bool,
    /// Threads searching one tree per move in matches and `bredon tei`
    /// ([`crate::PlaySearch`], [`crate::Search::run_shared`]); self-play ignores it (it runs
    /// many games at once instead).
    pub threads: usize,
    /// Weight of the score utility in PUCT selection (KataGo's): a child's expected final
    /// flat margin m (komi included, backed up from the evaluator's margin head and the
    /// exact margins of finished games) adds `score_utility · (2/π) · atan(m /
    /// score_scale)` to its value. 0 turns it off.
    pub score_utility: f32,
    /// The margin, in flats, at which the score utility reaches half its weight.
    pub score_scale: f32,
    /// Share of a search's budget given first to the threat-space solver
    /// ([`crate::RootSolver`]): exact forced wins by road or on the flat count in 3, 5, 7, …
    /// plies, played at once when found, and root moves the opponent punishes that way,
    /// avoided. With a deadline it is this share of the time; with a visit budget,
    /// `solver_nodes_per_visit` positions per visit at a share of 0.1 (in proportion
    /// otherwise). 0 turns it off (the default for self-play; [`crate::play_config`] turns
    /// it on). Needs `tactics`.
    pub solver_share: f32,
    /// Solver positions per visit asked for, at a `solver_share` of 0.1 (visit budgets).
    pub solver_nodes_per_visit: u32,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            c_puct: 1.25,
            c_base: 19652.0,
            fpu_reduction: 0.2,
            root_noise: true,
            dirichlet_alpha: 0.0,
            dirichlet_weight: 0.25,
            temperature: 1.0,
            temperature_plies: 8,
            final_temperature: 0.1,
            virtual_loss: 1.0,
            leaf_batch: 8,
            tactics: true,
            algorithm: Algorithm::Puct,
            gumbel_actions: 16,
            gumbel_c_visit: 50.0,
            gumbel_c_scale: 1.0,
            time_management: crate::time::TimeManagement::Fixed,
            stop_when_decided: false,
            threads: 1,
            score_utility: 0.0,
            score_scale: 3.0,
            solver_share: 0.0,
            solver_nodes_per_visit: 50,
        }
    }
}

impl SearchConfig {
    /// The move-selection temperature at `ply`.
    pub fn temperature(&self, ply: usize) -> f32 {
        if ply < self.temperature_plies { self.temperature } else { self.final_temperature }
    }

    /// σ of the Gumbel paper: the transform of a value `q` in [-1, 1] (mapped to [0, 1])
    /// when the most visited sibling has `max_visits` visits.
    #[inline]
    pub fn gumbel_sigma(&self, q: f32, max_visits: u32) -> f32 {
        (self.gumbel_c_visit + max_visits as f32) * self.gumbel_c_scale * (q + 1.0) * 0.5
    }

    /// The score utility's squashing of a flat margin `m` into (-1, 1).
    #[inline]
    pub fn score_utility_of(&self, m: f32) -> f32 {
        std::f32::consts::FRAC_2_PI * (m / self.score_scale.max(1e-3)).atan()
    }

    /// Exploration constant for a parent with `visits` visits.
    #[inline]
    pub fn c_at(&self, visits: u32) -> f32 {
        if self.c_base > 0.0 {
            self.c_puct + ((visits as f32 + self.c_base + 1.0) / self.c_base).ln()
        } else {
            self.c_puct
        }
    }
}
