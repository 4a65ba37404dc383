//! # bredon-mcts
//!
//! PUCT Monte Carlo tree search for Tak, AlphaZero-style. The search sees networks only
//! through the [`Evaluator`] trait (a batch of positions in, priors and values out), so this
//! crate has no machine-learning dependency.
//!
//! One [`Search`] holds one game's tree. A playout walks from the root choosing the child
//! maximising `Q + c · P · √N / (1 + n)` (with the log-growing `c` of AlphaZero and
//! first-play urgency for unvisited children), until it reaches an unexpanded node. Up to
//! [`SearchConfig::leaf_batch`] such leaves are gathered per evaluator call; paths in
//! flight carry a virtual loss so that the leaves differ. Finished games are scored
//! exactly, and proven results propagate (a move into a won position is taken, moves into
//! lost positions are avoided: an MCTS-solver). Dirichlet noise goes on the root priors
//! for self-play; [`Search::advance`] keeps the subtree of the move played.

pub mod baseline;
pub mod cache;
pub mod config;
pub mod evaluator;
pub mod play;
pub mod search;
pub mod solver;
pub mod time;

pub use baseline::{RolloutEvaluator, UniformEvaluator};
pub use cache::{CacheStats, CachedEvaluator};
pub use config::{Algorithm, SearchConfig};
pub use evaluator::{Evaluation, Evaluator};
pub use play::{Budget, PLAY_SOLVER_SHARE, PlaySearch, Progress, play_config, search_once};
pub use search::{Outcome, RootMove, Search, SearchLimits, SearchResult, Solved, Wdl, draw_with_temperature};
pub use solver::{RootSolution, RootSolver, SolverBudget};
pub use time::{Clock, TimeManagement, UnknownTimeManagement, clock_budget, expected_moves_left, move_budget};
