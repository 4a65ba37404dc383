//! # bredon-arena
//!
//! Is the network getting stronger, and by how much? This crate plays matches between
//! players — checkpoints, the uniform-policy MCTS baseline, a random mover, and any
//! external engine that speaks TEI (such as Tiltak) — and turns the results into Elo
//! ratings, gating decisions and plots.
//!
//! - [`Player`]: the trait every player implements; [`RandomPlayer`], [`MctsPlayer`]
//!   (any [`bredon_mcts::Evaluator`], fixed visits per move; with [`UniformEvaluator`]
//!   it is the baseline) and [`TeiPlayer`] (an external engine process).
//! - [`PlayerSpec`]: players from strings such as `uniform:200` or
//!   `tei:/opt/tiltak tei;nodes=5000` (see [`spec`]).
//! - [`MatchConfig`], [`run_match`], [`run_arena`]: round robins or gauntlets in colour
//!   swapped pairs from the same opening, in parallel, with a PTN file per game and an
//!   append-only JSONL results file that survives being killed (see [`results`]).
//! - [`RatingsTable`], [`fit_elo`]: maximum-likelihood Bradley–Terry Elo with 95%
//!   confidence intervals and per-colour scores (see [`elo`]).
//! - [`Sprt`], [`FixedGames`], [`Gate`], [`run_gate`]: deciding whether a candidate beats the incumbent.
//! - [`plot_elo`]: Elo over training (steps or minutes) as SVG; [`read_elo_curve`] and
//!   [`write_elo_curve`]: a run's Elo curve table.
//! - [`training`]: a training run's checkpoints: the Elo [`Ladder`], gating
//!   ([`gate_generation`]) and the training loop's [`training_hook`]. The run is read
//!   through `bredon_selfplay`'s `RunDir`, which owns its layout.
//! - Errors ([`error`]): an enum per concern ([`SpecError`], [`TeiClientError`],
//!   [`PlayerError`], [`OpeningsError`], …) and [`ArenaError`] for the match runner.
//!
//! ```no_run
//! use bredon_arena::{MatchConfig, PlayerSpec, run_arena};
//! let config = MatchConfig { size: 5, games_per_pairing: 10, ..MatchConfig::default() };
//! let players: Vec<PlayerSpec> = ["random", "uniform:100"].iter().map(|s| s.parse().unwrap()).collect();
//! let table = run_arena(&config, &players, std::path::Path::new("arena-out"), &mut |_| {}).unwrap();
//! println!("{table}");
//! ```

#![warn(missing_docs)]

pub mod arena;
pub mod elo;
pub mod error;
pub mod game;
pub mod openings;
pub mod player;
pub mod plot;
pub mod results;
pub mod search_glue;
pub mod spec;
pub mod sprt;
pub mod tei;
pub mod training;

pub use arena::{
    ArenaPaths, GateReport, MatchConfig, Schedule, check_players, entrants_from_specs, pairings, rate_results,
    run_arena, run_arena_on, run_gate, run_match,
};
pub use elo::{EloFit, EloOptions, RatingRow, RatingsTable, fit_elo};
pub use error::{
    ArenaError, MatchConfigError, OpeningsError, PlayerError, PlotError, RatingsError, ResultsError, SpecError,
    SpecErrorKind, SprtError, TeiClientError, TeiStage,
};
pub use game::{Adjudication, ClockConfig, GameOutcome, GameSettings, Termination, play_game};
pub use openings::{Opening, OpeningsConfig, load_openings};
pub use player::{ClockState, MctsPlayer, MoveLimits, Player, RandomPlayer};
pub use plot::{
    ELO_CURVE_HEADER, EloCurveRow, EloPoint, parse_elo_curve, plot_elo, read_elo_curve, render_elo_svg, write_elo_curve,
};
pub use results::{GameRecord, append_record, load_records};
pub use search_glue::{SearchConfig, UniformEvaluator, match_search_config};
pub use spec::{Entrant, PlayerFactory, PlayerSpec, SearchSettings};
pub use sprt::{FixedGames, Gate, GateConfig, GateState, Sprt, SprtModel};
pub use tei::{TeiConfig, TeiPlayer};
pub use training::{
    Anchor, AnchorOutcome, GateOutcome, Ladder, LadderOptions, LadderVisits, gate_generation, pick_checkpoints,
    training_hook,
};
