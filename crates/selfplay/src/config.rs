//! The run configuration: one struct per concern, read from TOML. Every knob has a
//! default; unknown keys are errors (a typo must not silently fall back to a default).

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Everything a training run needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    /// Board size and komi.
    pub game: GameConfig,
    /// Network architecture.
    pub net: bredon_netform::NetConfig,
    /// Tree search settings used by self-play.
    pub search: bredon_mcts::SearchConfig,
    /// Self-play settings.
    pub selfplay: SelfPlayConfig,
    /// Optimiser and replay window.
    pub train: TrainConfig,
    /// When to stop.
    pub schedule: ScheduleConfig,
    /// Evaluation matches during training.
    pub eval: EvalConfig,
    /// Where the network trains and (for `burn` inference) plays.
    pub device: DeviceConfig,
}

/// The device of a run's process (`bredon train`, `bredon selfplay`); `--device` on the
/// command line overrides it, so one run can train on a GPU box while CPU machines play.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeviceConfig {
    /// `cpu` (the default), `wgpu`, `wgpu:N`, `cuda` or `cuda:N`; a GPU needs a `bredon`
    /// built with that cargo feature (`--features wgpu` or `cuda`).
    pub name: bredon_nn::DeviceChoice,
    /// How the training step computes the network's convolutions: `auto` (the default:
    /// burn's `conv2d`, the faster on the CPU and on an H200), `direct` (burn's `conv2d`)
    /// or `matmul` (matrix products over channels-last rows). The same losses either
    /// way; see docs/gpu.md.
    pub convolutions: bredon_nn::Convolutions,
}

/// The game being learnt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GameConfig {
    /// Board size, 3 to 8.
    pub size: usize,
    /// Komi in points added to black's flat count (multiples of 0.5, e.g. 2 or 2.5 on 6x6).
    pub komi: f32,
}

impl Default for GameConfig {
    fn default() -> Self {
        GameConfig { size: 4, komi: 0.0 }
    }
}

impl GameConfig {
    /// Komi in half points.
    pub fn half_komi(&self) -> i8 {
        (self.komi * 2.0).round() as i8
    }

    /// Rules options for this game.
    pub fn options(&self) -> bredon_rules::GameOptions {
        bredon_rules::GameOptions::new(self.size).with_half_komi(self.half_komi())
    }
}

/// How self-play games are generated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SelfPlayConfig {
    /// Games per generation (each generation trains once on the grown window).
    pub games_per_generation: usize,
    /// Games played at once (threads); their searches share one inference service.
    pub concurrent_games: usize,
    /// Search visits per move for a "full" search (whose visit counts become a training target).
    pub visits: u32,
    /// Playout-cap randomisation (KataGo): probability that a move gets a full search;
    /// other moves get `fast_visits`, no root noise, and are not training samples. 1 = off.
    pub full_search_prob: f64,
    /// Visits of a fast search.
    pub fast_visits: u32,
    /// Games longer than this many plies are stopped and scored by the flat count (with komi).
    pub max_plies: usize,
    /// Resign when the root value stays below `-resign_threshold`... for the side to move; 0 = never resign.
    pub resign_threshold: f32,
    /// Share of games in which resignation is disabled, to measure false resignations.
    pub resign_playthrough: f64,
    /// Largest batch the inference service runs at once.
    pub max_inference_batch: usize,
    /// Forward pass of self-play and evaluation games: `auto` (the default: `fast` on the
    /// CPU, `wgsl` on a GPU device), `fast` (BatchNorm folded, hand-written SIMD kernels,
    /// CPU), `burn` (the training framework's, on the run's device) or `wgsl` (Bredon's own
    /// WGSL kernels on the run's GPU, through wgpu; `fast` on the CPU). `wgsl:tensor` runs
    /// the kernels' trunk on the GPU's tensor cores, where it has them and they agree with
    /// single precision on the network (checked at start-up; otherwise single precision,
    /// with a warning); `wgsl:f32` and `wgsl:f16-pairs` name the other arithmetics.
    pub inference: bredon_infer::InferenceKind,
    /// Arithmetic of the CPU fast path's residual blocks in self-play and evaluation games
    /// (`auto`, `f32`, `bf16` or `int8`; `bredon --precision`): unset (the default) = what
    /// `inference` says, whose own default is `auto` (bf16 on AMX tiles, else 8-bit
    /// integers on AVX-512 VNNI, where the CPU has them and they agree with f32 on the
    /// network; else f32). Only
    /// for an `inference` with a fast path (`auto`, `fast`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<bredon_infer::PrecisionChoice>,
    /// Inference threads of self-play, each with its own copy of the network and a
    /// forward pass on one core; the games' requests are dealt out among them. 0 (the
    /// default) = one per thread of the process (`RAYON_NUM_THREADS`, else the cores) on
    /// the fast CPU path, one on burn's path (a GPU takes whole batches). 1 = a single
    /// service whose forward pass is split across all threads.
    pub inference_threads: usize,
    /// Play the next generation's games while this one trains, with the weights from
    /// before this generation's training (one generation older), on the cores training
    /// leaves idle. Off: self-play and training take turns.
    pub overlap: bool,
    /// A visit budget that grows over the run (MiniZero's progressive simulation): over
    /// the first this-many generations, `visits` and `fast_visits` rise linearly from
    /// `visits_start_fraction` of their values to the full ones. 0 = off (the full
    /// budget from the start).
    pub visits_ramp_generations: u32,
    /// Share of the visit budget at generation 0 when `visits_ramp_generations` is on.
    pub visits_start_fraction: f64,
    /// Reanalyse (MuZero Reanalyse, as TakZero uses it): this share of each generation's
    /// game slots re-searches a stored game of the run with the newest network instead of
    /// playing a new one. Its training positions get fresh policy targets and root values
    /// (a full search each); moves and results stay the stored game's. 0 = off; below 1.
    pub reanalyse: f64,
    /// The stored games reanalysis and endgame starts draw from: the newest this-many of
    /// the run.
    pub reanalyse_games: usize,
    /// Endgame starts (KataGo-style branching from stored games, aimed at the flat race):
    /// this share of each generation's game slots takes a stored game of the run that
    /// reached an endgame (see `endgame_reserves`), replays it to one of its endgame
    /// positions drawn at random, and plays on from there with the usual searches. The
    /// replayed moves are not training samples; the plies played on are, and the result is
    /// the new one. Endgames are short, so this buys many more late-game samples per
    /// CPU-hour. 0 = off; with `reanalyse`, below 1 together.
    pub endgame_starts: f64,
    /// An endgame position for `endgame_starts`: the fewer pieces in hand (stones and
    /// capstones) of the two sides is at most this.
    pub endgame_reserves: u32,
    /// Memory in MB of the evaluation cache that a generation's games share
    /// (`bredon_mcts::CachedEvaluator`): a position met again, by another move order in
    /// one game or in another game (every game starts from the same few openings), costs
    /// no forward pass. The games are the same, only cheaper. 0 = off.
    pub eval_cache_mb: usize,
    /// Komi randomisation (KataGo's): this share of the new games (0 = off, the default;
    /// at most 1) is played at another komi than `[game] komi`, drawn uniformly from the
    /// half-flat steps within `komi_spread` of it (never below 0). The network sees the
    /// komi as an input; the same kind of position ending differently under different komi
    /// teaches the value and margin heads what a flat is worth, where a run at one komi
    /// only learns which side its own games favour. Stored games at those komi are
    /// reanalysed and branched from like the others; the ladder and matches play at
    /// `[game] komi`.
    pub komi_randomise: f64,
    /// How far, in flats (a multiple of 0.5), a randomised komi may lie from `[game] komi`.
    pub komi_spread: f32,
    /// Opening diversity (KataGo's random initial moves): this share of the new games
    /// (0 = off, the default; at most 1) starts with 1 to `opening_plies` plies drawn from
    /// the network's raw policy at `opening_temperature`, without a search. Those plies are
    /// no training samples; the game is searched and recorded from there. Self-play's own
    /// openings are few (the searches agree with themselves), so its value head meets the
    /// positions of other players' openings rarely: on held-out Tiltak games the 6x6
    /// network rates White +0.27 too high in the opening third, on its own games +0.08.
    pub opening_random: f64,
    /// At most this many drawn plies (each game draws how many, uniformly from 1).
    pub opening_plies: u32,
    /// The raw policy's temperature for those plies (1 = as the network has it; higher is
    /// flatter).
    pub opening_temperature: f32,
}

impl SelfPlayConfig {
    /// The forward pass of self-play: `inference` with `precision` applied.
    pub fn inference_kind(&self) -> bredon_infer::InferenceKind {
        match self.precision {
            Some(p) => self.inference.with_precision(p).unwrap_or(self.inference),
            None => self.inference,
        }
    }

    /// The inference threads self-play runs (see `inference_threads`): the setting, or for
    /// 0 one per thread of rayon's pool on the fast path and one on burn's; never more
    /// than the games played at once. `device` is where the network runs.
    pub fn inference_shards(&self, device: &bredon_nn::Device) -> usize {
        let n = match self.inference_threads {
            0 => bredon_infer::auto_shards(self.inference_kind(), device),
            n => n,
        };
        n.clamp(1, self.concurrent_games.max(1))
    }

    /// How many half-flat steps a randomised komi may lie from `[game] komi`
    /// (`komi_spread` doubled); 0 when `komi_randomise` is off.
    pub fn komi_steps(&self) -> i32 {
        if self.komi_randomise > 0.0 { (self.komi_spread * 2.0).round() as i32 } else { 0 }
    }

    /// The (full, fast) visit budgets of `generation`'s games (see
    /// `visits_ramp_generations`); each at least 1.
    pub fn visits_at(&self, generation: u32) -> (u32, u32) {
        let ramp = self.visits_ramp_generations;
        if ramp == 0 || generation >= ramp {
            return (self.visits, self.fast_visits);
        }
        let share = self.visits_start_fraction + (1.0 - self.visits_start_fraction) * generation as f64 / ramp as f64;
        let scale = |v: u32| ((v as f64 * share).round() as u32).clamp(1, v.max(1));
        (scale(self.visits), scale(self.fast_visits))
    }
}

impl Default for SelfPlayConfig {
    fn default() -> Self {
        SelfPlayConfig {
            games_per_generation: 64,
            concurrent_games: 32,
            visits: 64,
            full_search_prob: 1.0,
            fast_visits: 16,
            max_plies: 120,
            resign_threshold: 0.0,
            resign_playthrough: 0.1,
            max_inference_batch: 256,
            inference: bredon_infer::InferenceKind::AUTO,
            precision: None,
            inference_threads: 0,
            overlap: false,
            visits_ramp_generations: 0,
            visits_start_fraction: 0.25,
            reanalyse: 0.0,
            reanalyse_games: 2000,
            endgame_starts: 0.0,
            endgame_reserves: 8,
            eval_cache_mb: 128,
            komi_randomise: 0.0,
            komi_spread: 2.0,
            opening_random: 0.0,
            opening_plies: 4,
            opening_temperature: 1.0,
        }
    }
}

/// Optimiser, learning rate and the replay window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Samples per training step.
    pub batch_size: usize,
    /// Upper bound on steps per generation.
    pub max_steps_per_generation: usize,
    /// Each new sample is used about this many times on average (KataGo's reuse cap): steps
    /// per generation = new samples × reuse / batch size, at most the bound above.
    pub sample_reuse: f64,
    /// Learning rate at the start.
    pub learning_rate: f64,
    /// Steps after which the learning rate is multiplied by `lr_decay` (empty = constant).
    pub lr_decay_steps: Vec<u64>,
    /// Factor applied at each of `lr_decay_steps`.
    pub lr_decay: f64,
    /// Weight decay's factor. Unset, it follows `weight_decay_mode`: 0.1 for `decoupled`
    /// (each weight shrinks by `lr · 0.1` of itself a step), 1e-4 for `l2` (the factor
    /// every model up to gen-0262 trained with). Read it through [`TrainConfig::weight_decay`].
    #[serde(rename = "weight_decay", skip_serializing_if = "Option::is_none")]
    pub weight_decay_factor: Option<f64>,
    /// How weight decay enters the update: `decoupled` (AdamW: `w ← w − lr · weight_decay · w`
    /// beside the optimiser's step; the default) or `l2` (added to the gradient before the
    /// optimiser, which Adam then scales into a full-size step toward zero for any parameter
    /// whose gradient is zero: how the 6x6 network lost 15 % of its channels, issue 71).
    pub weight_decay_mode: bredon_nn::WeightDecayMode,
    /// Whether weight decay also applies to the one-dimensional parameters (BatchNorm
    /// scales and shifts, biases), or only to the convolutions' and dense layers' weights
    /// (the default: a BatchNorm scale pulled to zero silences its channel for good).
    pub decay_norms_and_biases: bool,
    /// Revive dormant units (ReDo, `bredon_nn::revive`) every this many generations, just
    /// before the generation's training steps: each hidden unit of the residual blocks and
    /// the value head whose activity score on `revive_positions` positions of the replay
    /// window is at most `revive_tau` gets fresh incoming weights and zero outgoing ones.
    /// 0 = never. The default 10 brought the 6x6 run's 102 dormant units back and kept
    /// the blocks at 0 % dormant for 150 generations (issue 71).
    pub revive_every: u32,
    /// ReDo's τ: a unit is dormant when its mean activation, over the layer's mean over its
    /// units, is at most this (0 = it never fires; the paper's small value is 0.025).
    pub revive_tau: f32,
    /// Positions drawn from the replay window to score the units on, both for
    /// `revive_every` and for each generation's `dormant` figure.
    pub revive_positions: usize,
    /// `adam` or `sgd` (with momentum 0.9).
    pub optimizer: bredon_nn::OptimizerKind,
    /// Replay window: always at least this many samples (or all there are).
    pub window_min: usize,
    /// Replay window: never more than this many samples.
    pub window_max: usize,
    /// No training step until the run has this many samples (its own and any carried in
    /// with `--window-from`): the generations before play with the weights they started
    /// from. 0 = train from the first generation. A run continued with `--init-from` and
    /// an empty window otherwise fits its first few thousand samples (KataGo waits for a
    /// minimum window the same way).
    pub train_after: usize,
    /// Replay window grows as `window_min * (total / window_min) ^ window_exponent`
    /// (KataGo-style: old data leaves the window as the run goes on).
    pub window_exponent: f64,
    /// Weight of the value loss against the policy loss (the squared error of a tanh
    /// value head; a `[net] wdl` head uses `wdl_loss_weight` instead).
    pub value_loss_weight: f64,
    /// Weight of the win/draw/loss cross-entropy (only with `[net] wdl = true`).
    pub wdl_loss_weight: f64,
    /// Weight of the final flat margin loss (squared error of the margin / N², komi
    /// included; only with `[net] aux = true`).
    pub flat_margin_loss_weight: f64,
    /// Weight of the final ownership loss (squared error per square; only with `[net] aux`).
    pub ownership_loss_weight: f64,
    /// Weight of the opponent's next-move policy loss (cross-entropy against the next
    /// ply's visit distribution; only with `[net] aux`).
    pub opponent_policy_loss_weight: f64,
    /// Share of the search's root value in the value target: the target is
    /// `(1 − w) × game outcome + w × root value` (a WDL head gets the same mixture of the
    /// outcome's one-hot and the root value's win/draw/loss split). 0 = the outcome only,
    /// as in AlphaZero; larger values lower the target's noise and raise its bias.
    pub search_value_weight: f64,
    /// Optimiser states (`optimizer.bpk`, twice the model's size with Adam) kept on disk:
    /// those of the newest this-many checkpoints; older checkpoints keep only their model
    /// (enough to play, rate and export them; a run resumes from the newest). 0 = keep all.
    pub optimizer_states_kept: usize,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            batch_size: 128,
            max_steps_per_generation: 200,
            sample_reuse: 4.0,
            learning_rate: 2e-3,
            lr_decay_steps: Vec::new(),
            lr_decay: 0.3,
            weight_decay_factor: None,
            weight_decay_mode: bredon_nn::WeightDecayMode::default(),
            decay_norms_and_biases: false,
            revive_every: 10,
            revive_tau: 0.025,
            revive_positions: 512,
            optimizer: bredon_nn::OptimizerKind::Adam,
            window_min: 20_000,
            window_max: 500_000,
            train_after: 0,
            window_exponent: 0.75,
            value_loss_weight: 1.0,
            wdl_loss_weight: 1.0,
            flat_margin_loss_weight: 0.5,
            ownership_loss_weight: 0.5,
            opponent_policy_loss_weight: 0.15,
            search_value_weight: 0.0,
            optimizer_states_kept: 3,
        }
    }
}

impl TrainConfig {
    /// Weight decay's factor: `weight_decay` when the config sets it, else the mode's own
    /// default ([`bredon_nn::WeightDecayMode::default_factor`]).
    pub fn weight_decay(&self) -> f64 {
        self.weight_decay_factor.unwrap_or_else(|| self.weight_decay_mode.default_factor())
    }

    /// Learning rate at `step`.
    pub fn lr_at(&self, step: u64) -> f64 {
        let decays = self.lr_decay_steps.iter().filter(|&&s| step >= s).count();
        self.learning_rate * self.lr_decay.powi(decays as i32)
    }

    /// Replay window size when `total` samples have been produced.
    pub fn window_size(&self, total: usize) -> usize {
        if total <= self.window_min {
            return total;
        }
        let grown = self.window_min as f64 * (total as f64 / self.window_min as f64).powf(self.window_exponent);
        (grown as usize).clamp(self.window_min, self.window_max).min(total)
    }
}

/// When the run stops (whichever comes first; Ctrl-C always stops cleanly).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScheduleConfig {
    /// Stop after this many generations (0 = no limit).
    pub generations: u32,
    /// Stop after this many minutes of this process (0 = no limit).
    pub max_minutes: f64,
    /// Stop once the run has trained this many steps, counted from its first checkpoint
    /// (`gen-0000`, whose step an `--init-from` model sets; 0 = no limit). The same
    /// amount of training on any machine, where minutes depend on its speed; the
    /// generation that reaches it trains only the steps left.
    pub steps: u64,
    /// Seed of the run's random numbers (network init, self-play, sampling).
    pub seed: u64,
}

impl ScheduleConfig {
    /// Training steps left before `steps` ends a run whose first checkpoint was at
    /// `first_step` and which is at `step` (none without a step limit).
    pub fn steps_left(&self, first_step: u64, step: u64) -> Option<u64> {
        (self.steps > 0).then(|| (first_step + self.steps).saturating_sub(step))
    }
}

/// Evaluation matches during training.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvalConfig {
    /// Evaluate every this many generations (0 = never).
    pub every: u32,
    /// Games per opponent (played in colour-swapped pairs).
    pub games: usize,
    /// Visits per move for both sides.
    pub visits: u32,
    /// Every this many generations, `bredon train` also updates the arena's Elo ladder
    /// in `<run>/arena` (the checkpoints every `arena_every` generations against the
    /// uniform search and each other, as `bredon arena --run --every arena_every` does):
    /// ratings, `elo.svg` and TensorBoard curves. 0 = never.
    pub arena_every: u32,
    /// Games per pairing in those ladder matches.
    pub arena_games: usize,
    /// Gating: each new checkpoint plays the current self-play model and replaces it only
    /// if it wins the test. Off by default (the newest checkpoint always plays).
    pub gate: GateSettings,
    /// An outside anchor for the run's Elo (`[eval.anchor]`): checkpoints play a fixed
    /// player, such as another engine over TEI, and are rated on its scale. Off by default.
    pub anchor: AnchorSettings,
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            every: 1,
            games: 20,
            visits: 64,
            arena_every: 0,
            arena_games: 10,
            gate: GateSettings::default(),
            anchor: AnchorSettings::default(),
        }
    }
}

/// Which statistical test a gate uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateTest {
    /// A sequential probability ratio test (stops as soon as it decides).
    Sprt,
    /// A fixed number of games and a score threshold.
    Fixed,
}

/// Settings of the gate (`[eval.gate]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GateSettings {
    /// Turn gating on.
    pub enabled: bool,
    /// `sprt` or `fixed`.
    pub test: GateTest,
    /// Games at most (SPRT: a candidate still undecided then is rejected; fixed: the games).
    pub games: usize,
    /// Fixed test: the score the candidate needs (e.g. 0.55).
    pub threshold: f64,
    /// SPRT: Elo under H0 (candidate not stronger).
    pub elo0: f64,
    /// SPRT: Elo under H1 (candidate stronger).
    pub elo1: f64,
    /// SPRT: false acceptance rate.
    pub alpha: f64,
    /// SPRT: false rejection rate.
    pub beta: f64,
    /// Visits per move in gate games (0 = `[eval] visits`).
    pub visits: u32,
}

impl Default for GateSettings {
    fn default() -> Self {
        GateSettings {
            enabled: false,
            test: GateTest::Sprt,
            games: 100,
            threshold: 0.55,
            elo0: 0.0,
            elo1: 50.0,
            alpha: 0.05,
            beta: 0.1,
            visits: 0,
        }
    }
}

/// Settings of the outside anchor (`[eval.anchor]`): every `every`-th checkpoint plays
/// `games` games against `player` right after it is written, at `[eval] visits` a move.
/// The fit rates `player` at 0, so `<run>/arena/anchor/elo-curve.csv` and `elo.svg` draw
/// the run on its scale: "gen-0040 is 120 Elo below Tiltak at 20,000 nodes".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnchorSettings {
    /// The anchor, spelled as `bredon arena --player` takes it, e.g.
    /// `"tei:/opt/tiltak/tei;name=tiltak;nodes=20000;option.HalfKomi=4"`. Give it a limit
    /// of its own (`nodes=`, `movetime=`), or it searches `[eval] visits` nodes a move.
    /// Unset: no anchor matches.
    pub player: Option<String>,
    /// Play the anchor after every this many generations (at least 1).
    pub every: u32,
    /// Games per checkpoint, in colour-swapped pairs from the match's default openings (the
    /// same openings for every checkpoint, so their scores compare).
    pub games: usize,
}

impl Default for AnchorSettings {
    fn default() -> Self {
        AnchorSettings { player: None, every: 10, games: 20 }
    }
}

/// The dotted key of the first NaN or infinite float in `v`, if any.
fn non_finite_key(v: &toml::Value, at: &str) -> Option<String> {
    match v {
        toml::Value::Float(f) if !f.is_finite() => Some(at.to_string()),
        toml::Value::Table(t) => {
            t.iter().find_map(|(k, x)| non_finite_key(x, &if at.is_empty() { k.clone() } else { format!("{at}.{k}") }))
        }
        toml::Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| non_finite_key(x, &format!("{at}[{i}]"))),
        _ => None,
    }
}

/// Returns [`ConfigError::Invalid`] with a formatted message.
macro_rules! invalid {
    ($($arg:tt)*) => {
        return Err(ConfigError::Invalid(format!($($arg)*)))
    };
}

impl RunConfig {
    /// Parses TOML text; errors name the line and the key.
    pub fn from_toml(text: &str) -> Result<RunConfig, ConfigError> {
        let cfg: RunConfig = toml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Reads and parses a config file.
    pub fn load(path: &Path) -> Result<RunConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.into(), source })?;
        RunConfig::from_toml(&text).map_err(|e| ConfigError::In { path: path.into(), source: Box::new(e) })
    }

    /// Checks values that parse but make no sense.
    pub fn validate(&self) -> Result<(), ConfigError> {
        // TOML has `nan` and `inf`: no knob means anything with them.
        let value = toml::Value::try_from(self).expect("a config serialises");
        if let Some(key) = non_finite_key(&value, "") {
            invalid!("{key} is not a finite number");
        }
        let g = &self.game;
        if !(3..=8).contains(&g.size) {
            invalid!("game.size = {} is not a Tak board size (3 to 8)", g.size);
        }
        if (g.komi * 2.0).fract() != 0.0 || g.komi.abs() > 60.0 {
            invalid!("game.komi = {} must be a multiple of 0.5", g.komi);
        }
        if self.net.size != 0 && self.net.size != g.size {
            invalid!("net.size = {} differs from game.size = {}", self.net.size, g.size);
        }
        // The network's own limits, as a model file of it is checked (input version,
        // sizes of every part, pooled channels, parameter count).
        let net = self.net.for_size(g.size);
        bredon_netform::limits::check_meta(
            g.size,
            net.input_version,
            bredon_netform::policy::policy_size(g.size),
            &net,
        )
        .map_err(ConfigError::Net)?;
        let s = &self.selfplay;
        if s.games_per_generation == 0 || s.concurrent_games == 0 || s.visits == 0 {
            invalid!("selfplay.games_per_generation, concurrent_games and visits must be positive");
        }
        if !(0.0..=1.0).contains(&s.full_search_prob) || !(0.0..=1.0).contains(&s.resign_playthrough) {
            invalid!("selfplay.full_search_prob and resign_playthrough are probabilities (0 to 1)");
        }
        if let Some(p) = s.precision
            && s.inference.with_precision(p).is_none()
        {
            invalid!(
                "selfplay.precision = \"{p}\" sets the CPU fast path's arithmetic; selfplay.inference = \"{}\" has none",
                s.inference
            );
        }
        if !(0.0..1.0).contains(&s.reanalyse) {
            invalid!("selfplay.reanalyse = {} must be in [0, 1): a run needs new games too", s.reanalyse);
        }
        if !(0.0..1.0).contains(&s.endgame_starts) || s.reanalyse + s.endgame_starts >= 1.0 {
            invalid!(
                "selfplay.endgame_starts = {} must be in [0, 1) and, with selfplay.reanalyse = {}, below 1 together: a run needs games from the start too",
                s.endgame_starts,
                s.reanalyse
            );
        }
        if !(0.0..=1.0).contains(&s.komi_randomise) {
            invalid!("selfplay.komi_randomise = {} is a share of the games (0 to 1)", s.komi_randomise);
        }
        if !(0.0..=1.0).contains(&s.opening_random) {
            invalid!("selfplay.opening_random = {} is a share of the games (0 to 1)", s.opening_random);
        }
        if s.opening_random > 0.0 && s.opening_plies == 0 {
            invalid!("selfplay.opening_plies must be at least 1 when selfplay.opening_random is on");
        }
        if !(s.opening_temperature > 0.0 && s.opening_temperature <= 100.0) {
            invalid!("selfplay.opening_temperature = {} must be in (0, 100]", s.opening_temperature);
        }
        if !(0.0..=20.0).contains(&s.komi_spread) || (s.komi_spread * 2.0).fract() != 0.0 {
            invalid!("selfplay.komi_spread = {} must be a multiple of 0.5 from 0 to 20 (flats)", s.komi_spread);
        }
        if !(s.visits_start_fraction > 0.0 && s.visits_start_fraction <= 1.0) {
            invalid!("selfplay.visits_start_fraction = {} must be in (0, 1]", s.visits_start_fraction);
        }
        let t = &self.train;
        if t.batch_size == 0 || t.learning_rate <= 0.0 {
            invalid!("train.batch_size and train.learning_rate must be positive");
        }
        if !(t.lr_decay > 0.0 && t.lr_decay <= 1.0) {
            invalid!("train.lr_decay = {} must be in (0, 1]", t.lr_decay);
        }
        let last_lr = t.lr_at(u64::MAX);
        if last_lr.is_nan() || last_lr <= 0.0 {
            invalid!("train.learning_rate decays to {last_lr} after train.lr_decay_steps: it must stay positive");
        }
        let wd = t.weight_decay();
        if wd < 0.0 {
            invalid!("train.weight_decay = {wd} must not be negative");
        }
        if t.weight_decay_mode == bredon_nn::WeightDecayMode::Decoupled && t.learning_rate * wd >= 1.0 {
            invalid!(
                "train.weight_decay = {wd} with train.learning_rate = {} would shrink every weight to zero or past it in one step (decoupled decay takes lr · weight_decay of each weight); AdamW's usual size is 0.01 to 0.1",
                t.learning_rate
            );
        }
        if !(0.0..=1.0).contains(&t.search_value_weight) {
            invalid!("train.search_value_weight = {} must be from 0 to 1", t.search_value_weight);
        }
        if t.window_min == 0 || t.window_max < t.window_min {
            invalid!("train.window_min must be positive and at most train.window_max");
        }
        if !(0.0..1.0).contains(&t.revive_tau) {
            invalid!(
                "train.revive_tau = {} must be from 0 to below 1 (a unit's share of its layer's mean activity)",
                t.revive_tau
            );
        }
        if t.revive_positions == 0 || t.revive_positions > 65_536 {
            invalid!("train.revive_positions = {} must be from 1 to 65536", t.revive_positions);
        }
        let search = &self.search;
        if search.gumbel_actions == 0 || search.gumbel_c_visit < 0.0 || search.gumbel_c_scale <= 0.0 {
            invalid!("search.gumbel_actions and gumbel_c_scale must be positive, gumbel_c_visit at least 0");
        }
        if search.leaf_batch == 0 {
            invalid!("search.leaf_batch must be at least 1");
        }
        let gate = &self.eval.gate;
        if gate.enabled {
            if gate.games < 2 {
                invalid!(
                    "eval.gate.games = {} must be at least 2 (games are played in colour-swapped pairs)",
                    gate.games
                );
            }
            if !(0.0..=1.0).contains(&gate.threshold) {
                invalid!("eval.gate.threshold = {} must be a score from 0 to 1", gate.threshold);
            }
            if gate.elo1 <= gate.elo0 || !(0.0..0.5).contains(&gate.alpha) || !(0.0..0.5).contains(&gate.beta) {
                invalid!("eval.gate needs elo1 > elo0 and alpha, beta in (0, 0.5)");
            }
        }
        let anchor = &self.eval.anchor;
        if anchor.player.is_some() {
            if anchor.every == 0 {
                invalid!("eval.anchor.every must be at least 1 (remove eval.anchor.player to play no anchor)");
            }
            if anchor.games < 2 {
                invalid!(
                    "eval.anchor.games = {} must be at least 2 (games are played in colour-swapped pairs)",
                    anchor.games
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        bredon_storage::error_chain(&RunConfig::from_toml(text).unwrap_err())
    }

    use bredon_nn::OptimizerKind;

    #[test]
    fn the_visit_budget_ramps_up_linearly_then_stays() {
        let s = SelfPlayConfig {
            visits: 128,
            fast_visits: 32,
            visits_ramp_generations: 10,
            visits_start_fraction: 0.25,
            ..SelfPlayConfig::default()
        };
        assert_eq!(s.visits_at(0), (32, 8));
        assert_eq!(s.visits_at(5), (80, 20));
        assert_eq!(s.visits_at(10), (128, 32));
        assert_eq!(s.visits_at(1000), (128, 32));
        let budgets: Vec<u32> = (0..=10).map(|g| s.visits_at(g).0).collect();
        assert!(budgets.windows(2).all(|w| w[0] <= w[1]), "{budgets:?}");
        let off = SelfPlayConfig { visits_ramp_generations: 0, ..s.clone() };
        assert_eq!(off.visits_at(0), (128, 32));
        let tiny = SelfPlayConfig { visits: 1, fast_visits: 1, visits_start_fraction: 0.01, ..s };
        assert_eq!(tiny.visits_at(0), (1, 1), "never below one visit");
    }

    #[test]
    fn inference_threads_follow_the_setting_the_path_and_the_games() {
        let s = |toml: &str| RunConfig::from_toml(toml).unwrap().selfplay.inference_shards(&bredon_nn::device::cpu());
        assert_eq!(s("[selfplay]\ninference_threads = 3\nconcurrent_games = 8"), 3);
        assert_eq!(s("[selfplay]\ninference_threads = 3\nconcurrent_games = 2"), 2, "no more than the games");
        assert_eq!(s("[selfplay]\ninference = \"burn\""), 1, "burn's path: one service");
        // Automatic on the fast path: one per thread of rayon's pool (the games allowing).
        let auto = s("[selfplay]\ninference = \"fast\"\nconcurrent_games = 1000");
        assert_eq!(auto, bredon_infer::auto_shards(bredon_infer::InferenceKind::FAST, &bredon_nn::device::cpu()));
        assert!(auto >= 1);
    }

    /// Every file in the repository folder `dir` that `keep(name, text)` picks, loaded as a
    /// run config (a config that does not load fails the test, naming the file).
    fn repo_configs(dir: &str, keep: impl Fn(&str, &str) -> bool) -> Vec<(String, RunConfig)> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(dir);
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            if keep(&name, &text) {
                let cfg = RunConfig::load(&p).unwrap_or_else(|e| panic!("{name}: {}", bredon_storage::error_chain(&e)));
                out.push((name, cfg));
            }
        }
        out
    }

    #[test]
    fn shipped_configs_load() {
        // Every config in configs/ loads and plays the board size its name starts with.
        let curriculum = |text: &str| crate::curriculum::Curriculum::is_curriculum(text);
        let configs = repo_configs("configs", |name, text| name.ends_with(".toml") && !curriculum(text));
        // Curricula (`[[stage]]` entries): every stage a valid config, the last one on the
        // size the file's name starts with.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
        let mut curricula = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".toml") && curriculum(&std::fs::read_to_string(&p).unwrap()) {
                let c = crate::curriculum::Curriculum::load(&p)
                    .unwrap_or_else(|e| panic!("{name}: {}", bredon_storage::error_chain(&e)));
                let last = c.stages.last().unwrap();
                assert_eq!(last.config.game.size.to_string(), name[..1], "configs/{name}");
                curricula += 1;
            }
        }
        assert!(curricula >= 1, "no curriculum in configs/");
        for (name, cfg) in &configs {
            let size = name[..1].parse::<usize>().unwrap_or_else(|_| panic!("configs/{name}: no board size first"));
            assert_eq!(cfg.game.size, size, "configs/{name}");
        }
        assert!(configs.len() >= 7, "configs/*.toml: {} found", configs.len());
        for size in 3..=6 {
            let name = format!("{size}x{size}.toml");
            let (_, cfg) =
                configs.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("configs/{name} is missing"));
            // 4x4 and up run with the Tak features and the extra heads (they won their A/B
            // on 4x4 and 5x5); 3x3, the end-to-end tests' size, keeps the first network's.
            let want = if size >= 4 { (2, true, true) } else { (1, false, false) };
            assert_eq!((cfg.net.input_version, cfg.net.wdl, cfg.net.aux), want, "configs/{name}");
        }
        assert!(err("[net]\ninput_version = 3").contains("input format version 3"));
        // The network's limits, as for a model file: pooled channels are some of the channels.
        let e = err("[net]\nchannels = 8\nglobal_pool = true\ngpool_channels = 9");
        assert!(e.contains("in [net]") && e.contains("`net.gpool_channels` is 9") && e.contains("1 to 8"), "{e}");
        // The A/Bs' training configs (experiments/ab-*.toml with a [game] table; the others
        // there are arena configs) load too.
        let candidates = repo_configs("experiments", |name, text| {
            name.starts_with("ab-") && name.ends_with(".toml") && text.lines().any(|l| l.trim() == "[game]")
        })
        .len();
        assert!(candidates >= 8, "experiments/ab-*.toml training configs: {candidates} found");
    }

    /// Weight decay's factor follows its mode unless the config sets it (the two modes'
    /// factors are on scales 1,000 apart), and a factor that would wipe the weights out
    /// in a step, or a negative one, is refused by name.
    #[test]
    fn weight_decay_defaults_follow_the_mode() {
        use bredon_nn::WeightDecayMode;
        let t = |text: &str| RunConfig::from_toml(text).unwrap().train;
        let default = t("");
        assert_eq!((default.weight_decay_mode, default.weight_decay()), (WeightDecayMode::Decoupled, 0.1));
        assert!(!default.decay_norms_and_biases);
        assert_eq!(default.revive_every, 10);
        let old = t("[train]\nweight_decay_mode = \"l2\"");
        assert_eq!((old.weight_decay_mode, old.weight_decay()), (WeightDecayMode::L2, 1e-4));
        assert_eq!(t("[train]\nweight_decay = 0.02").weight_decay(), 0.02);
        assert_eq!(t("[train]\nweight_decay = 0.0\nweight_decay_mode = \"l2\"").weight_decay(), 0.0);
        assert!(err("[train]\nweight_decay = -0.1").contains("train.weight_decay = -0.1 must not be negative"));
        let e = err("[train]\nweight_decay = 1000.0\nlearning_rate = 0.002");
        assert!(e.contains("train.weight_decay = 1000") && e.contains("one step"), "{e}");
        // L2 at the same factor is only a strong pull, not a wipe-out: not refused.
        assert_eq!(t("[train]\nweight_decay = 1000.0\nweight_decay_mode = \"l2\"").weight_decay(), 1000.0);
    }

    /// Findings of the `run_config` fuzz target (see fuzz/README.md).
    #[test]
    fn non_finite_and_degenerate_numbers_are_refused() {
        assert!(err("[train]\nlearning_rate = nan").contains("train.learning_rate is not a finite number"));
        assert!(err("[train]\nlearning_rate = inf").contains("train.learning_rate is not a finite number"));
        assert!(err("[search]\nc_puct = -inf").contains("search.c_puct is not a finite number"));
        assert!(err("[search]\ngumbel_actions = 0").contains("gumbel_actions"));
        assert!(err("[search]\nalgorithm = \"alphabeta\"").contains("algorithm"));
        assert!(err("[eval.gate]\nenabled = true\nelo0 = nan").contains("eval.gate.elo0 is not a finite number"));
        assert!(err("[selfplay]\nresign_threshold = nan").contains("selfplay.resign_threshold"));
        assert!(err("[train]\nlr_decay = 0.0\nlr_decay_steps = [10]").contains("train.lr_decay"));
        assert!(err("[train]\nlr_decay = 1e-300\nlr_decay_steps = [1, 2, 3]").contains("must stay positive"));
        assert!(err("[train]\nlr_decay = 2.0").contains("train.lr_decay"));
        assert!(err("[train]\nsearch_value_weight = 1.5").contains("train.search_value_weight"));
        assert!(err("[selfplay]\nvisits_start_fraction = 0.0").contains("selfplay.visits_start_fraction"));
        assert!(err("[selfplay]\nkomi_randomise = 1.5").contains("selfplay.komi_randomise = 1.5"));
        assert!(err("[selfplay]\nopening_random = 2").contains("selfplay.opening_random = 2"));
        assert!(err("[selfplay]\nopening_random = 0.5\nopening_plies = 0").contains("selfplay.opening_plies"));
        assert!(err("[selfplay]\nopening_temperature = 0").contains("selfplay.opening_temperature = 0"));
        assert!(err("[selfplay]\nkomi_spread = 0.3").contains("selfplay.komi_spread = 0.3 must be a multiple of 0.5"));
        assert!(err("[selfplay]\nkomi_spread = -1.0").contains("selfplay.komi_spread"));
        let ok = RunConfig::from_toml("[selfplay]\nkomi_randomise = 0.5\nkomi_spread = 1.5").unwrap();
        assert_eq!((ok.selfplay.komi_randomise, ok.selfplay.komi_spread), (0.5, 1.5));
        let e = err("[train]\noptimizer = \"rmsprop\"");
        assert!(e.contains("rmsprop") && e.contains("adam") && e.contains("sgd"), "{e}");
        assert_eq!(RunConfig::from_toml("[train]\noptimizer = \"sgd\"").unwrap().train.optimizer, OptimizerKind::Sgd);
        // Unknown keys and wrong types name the line.
        assert!(err("[train]\nlearning_rat = 0.1").contains("unknown field"));
        assert!(err("[game]\n\nsize = \"big\"").contains("line 3"));
        RunConfig::from_toml("[train]\nlr_decay = 0.5\nlr_decay_steps = [100, 200]").unwrap();
    }

    /// Every table of a run config refuses a key it does not have, naming the key: a typo
    /// never falls back to a default unnoticed.
    #[test]
    fn every_table_refuses_an_unknown_key() {
        for table in [
            "",
            "[game]",
            "[net]",
            "[search]",
            "[selfplay]",
            "[train]",
            "[schedule]",
            "[eval]",
            "[eval.gate]",
            "[device]",
        ] {
            let e = err(&format!("{table}\nno_such_key_h3 = 1\n"));
            assert!(e.contains("unknown field") && e.contains("no_such_key_h3"), "{table}: {e}");
        }
    }
}
