//! [`PlayerSpec`]: a player described by a short string (for the command line) or by
//! serde (for config files), and turned into player instances by a factory.
//!
//! # String forms
//! Every form takes optional `;key=value` settings after it.
//!
//! | string | player |
//! |---|---|
//! | `random` | [`RandomPlayer`]; settings `seed`, `name` |
//! | `uniform:VISITS` | [`MctsPlayer`] with the uniform evaluator, `VISITS` visits per move; settings `seed`, `name` and the [`SearchSettings`] `tactics`, `search` (`puct` or `gumbel`), `time` (`fixed` or `reserves`), `search_threads`, `stop_when_decided` (`on` or `off`), `score_utility` (0–2), `solver` (0–1) |
//! | `rollout:VISITS` | [`MctsPlayer`] with `bredon_mcts::RolloutEvaluator` (uniform policy, random-playout values), `VISITS` visits per move; settings `rollouts`, `seed`, `name` and the [`SearchSettings`] |
//! | `tei:PROGRAM ARGS…` | [`TeiPlayer`]; the command line is split on spaces (double quotes group); settings `name`, `nodes`, `movetime` (ms), `timeout` (ms, stall timeout beyond the move's budget), `init_timeout` (ms), `halfkomi=off` (do not send the game's komi), and `option.NAME=VALUE` for `setoption name NAME value VALUE` |
//! | `checkpoint:PATH` | MCTS guided by a trained network: a `bredon export` file or a checkpoint directory, loaded once and shared by all workers; settings `visits`, `name` and the [`SearchSettings`] |
//!
//! Examples: `uniform:200`, `random;seed=7`,
//! `tei:/opt/tiltak tei;name=tiltak;nodes=5000;option.HalfKomi=4`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use bredon_infer::Compute;

use serde::{Deserialize, Serialize};

use crate::error::{SpecError, SpecErrorKind};
use crate::player::{MctsPlayer, MoveLimits, Player, PlayerError, RandomPlayer};
use crate::tei::{TeiConfig, TeiPlayer, split_command_line};

/// A player description. In serde form (config files) an unknown key is an error, the
/// search choices' included.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum PlayerSpec {
    /// Uniformly random legal moves.
    Random {
        /// RNG seed (default: derived from the match seed).
        #[serde(default)]
        seed: Option<u64>,
        /// Display name (default `random`).
        #[serde(default)]
        name: Option<String>,
    },
    /// MCTS with the uniform-policy evaluator.
    Uniform {
        /// Visits per move.
        visits: u32,
        /// RNG seed for tie breaks (default: derived from the match seed).
        #[serde(default)]
        seed: Option<u64>,
        /// Display name (default `uniform-VISITS`).
        #[serde(default)]
        name: Option<String>,
        /// Search choices (`tactics`, `search`, `time`, `search_threads`, `stop_when_decided`,
        /// `score_utility`).
        #[serde(flatten)]
        settings: SearchSettings,
    },
    /// MCTS with a uniform policy and random-playout values: a baseline that, unlike
    /// `Uniform` (value 0 everywhere), gets stronger with more visits.
    Rollout {
        /// Visits per move.
        visits: u32,
        /// Random playouts averaged per evaluated position (default 1).
        #[serde(default)]
        rollouts: Option<u32>,
        /// Seed of the playouts (default: derived from the match seed).
        #[serde(default)]
        seed: Option<u64>,
        /// Display name (default `rollout-VISITS`).
        #[serde(default)]
        name: Option<String>,
        /// Search choices (`tactics`, `search`, `time`, `search_threads`, `stop_when_decided`,
        /// `score_utility`).
        #[serde(flatten)]
        settings: SearchSettings,
    },
    /// An external TEI engine.
    Tei {
        /// How to run it.
        config: TeiConfig,
        /// `go nodes N` (overrides the match's default limit).
        #[serde(default)]
        nodes: Option<u64>,
        /// `go movetime MS` (overrides the match's default limit).
        #[serde(default)]
        movetime_ms: Option<u64>,
    },
    /// MCTS guided by a trained network checkpoint.
    Checkpoint {
        /// The model file.
        path: PathBuf,
        /// Visits per move (default: the match's `visits`).
        #[serde(default)]
        visits: Option<u32>,
        /// Display name (default: the file stem).
        #[serde(default)]
        name: Option<String>,
        /// The search's forward pass for this player (`inference=fast:int8`; default the
        /// command's `--inference`): two players of one model that differ only in it.
        #[serde(default)]
        inference: Option<bredon_infer::InferenceKind>,
        /// Search choices (`tactics`, `search`, `time`, `search_threads`, `stop_when_decided`,
        /// `score_utility`).
        #[serde(flatten)]
        settings: SearchSettings,
    },
}

/// Makes fresh instances of one player (each match worker calls it for its own).
pub type PlayerFactory = Arc<dyn Fn() -> Result<Box<dyn Player>, PlayerError> + Send + Sync>;

/// A player entered in a match: its name, its per-move limits and a factory.
#[derive(Clone)]
pub struct Entrant {
    /// Unique name in the match (used in results and ratings).
    pub name: String,
    /// Limits passed to every `choose_move`.
    pub limits: MoveLimits,
    /// Makes instances.
    pub factory: PlayerFactory,
}

impl fmt::Debug for Entrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entrant").field("name", &self.name).field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl Entrant {
    /// An entrant from a name, limits and a factory closure.
    pub fn new(
        name: impl Into<String>,
        limits: MoveLimits,
        factory: impl Fn() -> Result<Box<dyn Player>, PlayerError> + Send + Sync + 'static,
    ) -> Entrant {
        Entrant { name: name.into(), limits, factory: Arc::new(factory) }
    }
}

/// The search choices an MCTS player (`uniform`, `rollout`, `checkpoint`) may set; each
/// unset one keeps the match search config's value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchSettings {
    /// Tactical checks in the search (default on; `tactics=off` for A/B matches).
    #[serde(default)]
    pub tactics: Option<bool>,
    /// Search algorithm (`search=puct|gumbel`; default PUCT).
    #[serde(default)]
    pub search: Option<bredon_mcts::Algorithm>,
    /// Time management on a game clock (`time=fixed|reserves`; default the search's).
    #[serde(default)]
    pub time: Option<bredon_mcts::TimeManagement>,
    /// Threads searching one tree per move (`search_threads=N`, each with its own copy
    /// of the network; default 1).
    #[serde(default)]
    pub search_threads: Option<usize>,
    /// On a game clock, stop a move's search once its move cannot change
    /// (`stop_when_decided=on|off`; default the play-time search's, on).
    #[serde(default)]
    pub stop_when_decided: Option<bool>,
    /// Weight of the score utility (`score_utility=W`, the expected flat margin added to
    /// the value in selection; default the search's, 0: off).
    #[serde(default)]
    pub score_utility: Option<f32>,
    /// Share of each move's budget for the threat-space solver (`solver=S`, 0 to 1; 0
    /// turns it off; default the play-time search's, [`bredon_mcts::PLAY_SOLVER_SHARE`]).
    #[serde(default)]
    pub solver: Option<f32>,
}

impl SearchSettings {
    /// The match search settings with these choices applied.
    fn config(&self) -> crate::search_glue::SearchConfig {
        let mut config = crate::search_glue::match_search_config();
        config.tactics = self.tactics.unwrap_or(config.tactics);
        config.algorithm = self.search.unwrap_or(config.algorithm);
        config.time_management = self.time.unwrap_or(config.time_management);
        config.threads = self.search_threads.unwrap_or(config.threads).max(1);
        config.stop_when_decided = self.stop_when_decided.unwrap_or(config.stop_when_decided);
        config.score_utility = self.score_utility.unwrap_or(config.score_utility);
        config.solver_share = self.solver.unwrap_or(config.solver_share);
        config
    }

    /// Takes the string setting `k=v` if it is one of these (`Ok(false)`: not one).
    fn parse(&mut self, spec: &str, k: &str, v: &str) -> Result<bool, SpecError> {
        match k {
            "tactics" => self.tactics = Some(parse_switch(spec, k, v)?),
            "search" => self.search = Some(parse_algorithm(spec, k, v)?),
            "time" => self.time = Some(parse_time(spec, k, v)?),
            "search_threads" => self.search_threads = Some(parse_u64(spec, k, v)?.clamp(1, 256) as usize),
            "stop_when_decided" => self.stop_when_decided = Some(parse_switch(spec, k, v)?),
            "score_utility" => self.score_utility = Some(parse_in(spec, k, v, 0.0..=2.0, "a weight from 0 to 2")?),
            "solver" => self.solver = Some(parse_in(spec, k, v, 0.0..=1.0, "a share from 0 to 1")?),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A number setting within `range`.
fn parse_in(
    spec: &str,
    k: &str,
    v: &str,
    range: std::ops::RangeInclusive<f32>,
    expected: &'static str,
) -> Result<f32, SpecError> {
    v.parse::<f32>().ok().filter(|w| range.contains(w)).ok_or_else(|| bad_setting(spec, k, v, expected))
}

/// The error for setting `key=value` of player `spec`, which takes `expected`.
fn bad_setting(spec: &str, key: &str, value: &str, expected: &'static str) -> SpecError {
    SpecError::new(spec, SpecErrorKind::BadSetting { key: key.to_string(), value: value.to_string(), expected })
}

/// A `fixed`/`reserves` setting.
fn parse_time(spec: &str, k: &str, v: &str) -> Result<bredon_mcts::TimeManagement, SpecError> {
    v.parse().map_err(|_| bad_setting(spec, k, v, "fixed or reserves"))
}

/// A `puct`/`gumbel` setting.
fn parse_algorithm(spec: &str, k: &str, v: &str) -> Result<bredon_mcts::Algorithm, SpecError> {
    match v.to_ascii_lowercase().as_str() {
        "puct" => Ok(bredon_mcts::Algorithm::Puct),
        "gumbel" => Ok(bredon_mcts::Algorithm::Gumbel),
        _ => Err(bad_setting(spec, k, v, "puct or gumbel")),
    }
}

/// An `on`/`off` setting.
fn parse_switch(spec: &str, key: &str, v: &str) -> Result<bool, SpecError> {
    match v {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        _ => Err(bad_setting(spec, key, v, "on or off")),
    }
}

fn parse_u64(spec: &str, key: &str, v: &str) -> Result<u64, SpecError> {
    v.trim().parse().map_err(|_| bad_setting(spec, key, v, "a non-negative integer"))
}

/// `VISITS` of `uniform:VISITS`, `rollout:VISITS` or `checkpoint:…;visits=VISITS`.
fn parse_visits(spec: &str, v: &str) -> Result<u32, SpecError> {
    v.parse().map_err(|_| SpecError::new(spec, SpecErrorKind::BadVisits { visits: v.to_string() }))
}

impl PlayerSpec {
    /// The name used in results and ratings.
    pub fn name(&self) -> String {
        match self {
            PlayerSpec::Random { name, .. } => name.clone().unwrap_or_else(|| "random".into()),
            PlayerSpec::Uniform { visits, name, .. } => name.clone().unwrap_or_else(|| format!("uniform-{visits}")),
            PlayerSpec::Rollout { visits, name, .. } => name.clone().unwrap_or_else(|| format!("rollout-{visits}")),
            PlayerSpec::Tei { config, .. } => config.display_name(),
            PlayerSpec::Checkpoint { path, name, .. } => name.clone().unwrap_or_else(|| {
                path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
            }),
        }
    }

    /// Turns the spec into an [`Entrant`] for games on `size` boards. `default_limits`
    /// applies to players that do not set their own; `seed` seeds players that have no
    /// seed of their own; networks run on `compute`. A network trained on another size
    /// plays `size` when none of its layers is sized by its board (carried there by
    /// [`bredon_nn::TakNet::on_size`]); else it is refused.
    pub fn entrant(
        &self,
        size: usize,
        default_limits: MoveLimits,
        seed: u64,
        compute: &Compute,
    ) -> Result<Entrant, SpecError> {
        let name = self.name();
        match self.clone() {
            PlayerSpec::Random { seed: s, .. } => {
                let s = s.unwrap_or(seed);
                let n = name.clone();
                Ok(Entrant::new(name, default_limits, move || {
                    Ok(Box::new(RandomPlayer::new(s).with_name(n.clone())) as Box<dyn Player>)
                }))
            }
            PlayerSpec::Uniform { visits, seed: s, settings, .. } => {
                if visits == 0 {
                    return Err(SpecError::new(
                        name,
                        SpecErrorKind::Invalid("a uniform player needs at least 1 visit"),
                    ));
                }
                let s = s.unwrap_or(seed);
                let n = name.clone();
                let limits = MoveLimits::nodes(visits as u64);
                Ok(Entrant::new(name, limits, move || {
                    let evaluator = Arc::new(crate::search_glue::UniformEvaluator);
                    Ok(Box::new(MctsPlayer::new(evaluator, visits, s, n.clone()).with_config(settings.config()))
                        as Box<dyn Player>)
                }))
            }
            PlayerSpec::Rollout { visits, rollouts, seed: s, settings, .. } => {
                if visits == 0 || rollouts == Some(0) {
                    return Err(SpecError::new(
                        name,
                        SpecErrorKind::Invalid("a rollout player needs at least 1 visit and 1 rollout"),
                    ));
                }
                let s = s.unwrap_or(seed);
                let n = name.clone();
                let limits = MoveLimits::nodes(visits as u64);
                let evaluator: Arc<dyn bredon_mcts::Evaluator> = Arc::new(bredon_mcts::RolloutEvaluator {
                    rollouts: rollouts.unwrap_or(1),
                    max_plies: 200,
                    seed: s,
                });
                Ok(Entrant::new(name, limits, move || {
                    Ok(
                        Box::new(
                            MctsPlayer::new(evaluator.clone(), visits, s, n.clone()).with_config(settings.config()),
                        ) as Box<dyn Player>,
                    )
                }))
            }
            PlayerSpec::Tei { mut config, nodes, movetime_ms } => {
                if config.program.trim().is_empty() {
                    return Err(SpecError::new(name, SpecErrorKind::Invalid("a tei player needs a program")));
                }
                config.name = Some(name.clone());
                let limits = match (nodes, movetime_ms) {
                    (Some(n), _) => MoveLimits::nodes(n),
                    (None, Some(ms)) => MoveLimits::movetime(Duration::from_millis(ms)),
                    (None, None) => default_limits,
                };
                Ok(Entrant::new(name, limits, move || Ok(Box::new(TeiPlayer::new(config.clone())?) as Box<dyn Player>)))
            }
            PlayerSpec::Checkpoint { path, visits, settings, inference, .. } => {
                // Load once; every worker's player shares the (thread-safe) evaluator.
                let (model, meta) = bredon_nn::load_exported(&path).map_err(|e| {
                    SpecError::new(&name, SpecErrorKind::Checkpoint { path: path.clone(), source: Box::new(e) })
                })?;
                let Some((model, _)) = model.on_size(&meta.net, size) else {
                    let kind = SpecErrorKind::OtherSize { path: path.clone(), trained: meta.size, size };
                    return Err(SpecError::new(&name, kind));
                };
                // One copy of the network per search thread, so that they evaluate side by side.
                let lanes = settings.config().threads;
                // Behind an evaluation cache that the player's games share: a transposition
                // costs no forward pass (the same answers, sooner).
                let own;
                let compute = match inference {
                    Some(kind) => {
                        own = bredon_infer::Compute { inference: kind, ..compute.clone() };
                        &own
                    }
                    None => compute,
                };
                let evaluator: Arc<dyn bredon_mcts::Evaluator> = Arc::new(bredon_mcts::CachedEvaluator::new(
                    compute.evaluator(model, size, lanes),
                    CHECKPOINT_EVAL_CACHE_BYTES,
                ));
                let limits = match visits {
                    Some(v) => MoveLimits::nodes(v as u64),
                    None => default_limits,
                };
                let n = name.clone();
                let v = limits.nodes.unwrap_or(100) as u32;
                Ok(Entrant::new(name, limits, move || {
                    Ok(Box::new(MctsPlayer::new(evaluator.clone(), v, seed, n.clone()).with_config(settings.config()))
                        as Box<dyn Player>)
                }))
            }
        }
    }
}

/// Memory of each `checkpoint:` player's evaluation cache ([`bredon_mcts::CachedEvaluator`]).
pub const CHECKPOINT_EVAL_CACHE_BYTES: usize = 128 << 20;

impl FromStr for PlayerSpec {
    type Err = SpecError;

    /// Parses the string forms in the [module docs](self).
    fn from_str(s: &str) -> Result<PlayerSpec, SpecError> {
        let s = s.trim();
        let mut parts = s.split(';');
        let head = parts.next().unwrap_or("").trim();
        let mut settings: Vec<(String, String)> = Vec::new();
        for part in parts {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| SpecError::new(s, SpecErrorKind::NotKeyValue { part: part.to_string() }))?;
            settings.push((k.trim().to_string(), v.trim().to_string()));
        }
        let (kind, arg) = match head.split_once(':') {
            Some((k, a)) => (k.trim().to_ascii_lowercase(), Some(a.trim())),
            None => (head.to_ascii_lowercase(), None),
        };
        let unknown = |k: &str| {
            SpecError::new(s, SpecErrorKind::UnknownSetting { player_kind: kind.clone(), key: k.to_string() })
        };
        let missing = |expected| SpecError::new(s, SpecErrorKind::MissingArgument { expected });
        let spec = match kind.as_str() {
            "random" => {
                if arg.is_some_and(|a| !a.is_empty()) {
                    return Err(SpecError::new(s, SpecErrorKind::RandomTakesNoArgument));
                }
                let (mut seed, mut name) = (None, None);
                for (k, v) in &settings {
                    match k.as_str() {
                        "seed" => seed = Some(parse_u64(s, k, v)?),
                        "name" => name = Some(v.clone()),
                        _ => return Err(unknown(k)),
                    }
                }
                PlayerSpec::Random { seed, name }
            }
            "uniform" => {
                let a = arg.filter(|a| !a.is_empty()).ok_or_else(|| missing("uniform:VISITS"))?;
                let visits = parse_visits(s, a)?;
                if visits == 0 {
                    return Err(SpecError::new(s, SpecErrorKind::ZeroVisits));
                }
                let (mut seed, mut name, mut search_settings) = (None, None, SearchSettings::default());
                for (k, v) in &settings {
                    match k.as_str() {
                        "seed" => seed = Some(parse_u64(s, k, v)?),
                        "name" => name = Some(v.clone()),
                        _ if search_settings.parse(s, k, v)? => {}
                        _ => return Err(unknown(k)),
                    }
                }
                PlayerSpec::Uniform { visits, seed, name, settings: search_settings }
            }
            "rollout" => {
                let a = arg.filter(|a| !a.is_empty()).ok_or_else(|| missing("rollout:VISITS"))?;
                let visits = parse_visits(s, a)?;
                if visits == 0 {
                    return Err(SpecError::new(s, SpecErrorKind::ZeroVisits));
                }
                let (mut seed, mut name, mut rollouts, mut search_settings) =
                    (None, None, None, SearchSettings::default());
                for (k, v) in &settings {
                    match k.as_str() {
                        "seed" => seed = Some(parse_u64(s, k, v)?),
                        "name" => name = Some(v.clone()),
                        "rollouts" => rollouts = Some(parse_u64(s, k, v)?.clamp(1, 1000) as u32),
                        _ if search_settings.parse(s, k, v)? => {}
                        _ => return Err(unknown(k)),
                    }
                }
                PlayerSpec::Rollout { visits, rollouts, seed, name, settings: search_settings }
            }
            "tei" => {
                let a = arg.filter(|a| !a.is_empty()).ok_or_else(|| missing("tei:PROGRAM [ARGS…]"))?;
                let words = split_command_line(a).map_err(|e| SpecError::new(s, SpecErrorKind::CommandLine(e)))?;
                let (program, args) = words.split_first().ok_or_else(|| SpecError::new(s, SpecErrorKind::NoProgram))?;
                let mut config = TeiConfig::new(program.clone(), args.iter().cloned());
                let (mut nodes, mut movetime_ms) = (None, None);
                for (k, v) in &settings {
                    if let Some(opt) = k.strip_prefix("option.") {
                        if opt.is_empty() {
                            return Err(SpecError::new(s, SpecErrorKind::EmptyOptionName { key: k.clone() }));
                        }
                        config.options.push((opt.to_string(), v.clone()));
                        continue;
                    }
                    match k.as_str() {
                        "name" => config.name = Some(v.clone()),
                        "nodes" => nodes = Some(parse_u64(s, k, v)?),
                        "movetime" => movetime_ms = Some(parse_u64(s, k, v)?),
                        "timeout" => config.move_timeout_ms = parse_u64(s, k, v)?,
                        "init_timeout" => config.init_timeout_ms = parse_u64(s, k, v)?,
                        "halfkomi" => config.send_half_komi = parse_switch(s, k, v)?,
                        _ => return Err(unknown(k)),
                    }
                }
                PlayerSpec::Tei { config, nodes, movetime_ms }
            }
            "checkpoint" => {
                let a = arg.filter(|a| !a.is_empty()).ok_or_else(|| missing("checkpoint:PATH"))?;
                let (mut visits, mut name, mut search_settings) = (None, None, SearchSettings::default());
                let (mut inference, mut precision) = (None, None);
                for (k, v) in &settings {
                    match k.as_str() {
                        "visits" => visits = Some(parse_visits(s, v)?),
                        "name" => name = Some(v.clone()),
                        "inference" => {
                            inference = Some(v.parse().map_err(|_| {
                                bad_setting(s, k, v, "auto, fast, fast:int8, burn, wgsl or wgsl:ARITHMETIC")
                            })?)
                        }
                        "precision" => {
                            let p: bredon_infer::PrecisionChoice =
                                v.parse().map_err(|_| bad_setting(s, k, v, "auto, f32, bf16 or int8"))?;
                            precision = Some((p, v));
                        }
                        _ if search_settings.parse(s, k, v)? => {}
                        _ => return Err(unknown(k)),
                    }
                }
                // `precision=` sets the fast path's arithmetic of this player's pass (its
                // `inference=`, else `auto`), whichever key came first.
                if let Some((p, v)) = precision {
                    let kind: bredon_infer::InferenceKind = inference.unwrap_or_default();
                    inference = Some(kind.with_precision(p).ok_or_else(|| {
                        bad_setting(s, "precision", v, "no precision: this player's inference has no fast path")
                    })?);
                }
                PlayerSpec::Checkpoint { path: PathBuf::from(a), visits, name, inference, settings: search_settings }
            }
            "" => return Err(SpecError::new(s, SpecErrorKind::Empty)),
            other => return Err(SpecError::new(s, SpecErrorKind::UnknownKind { given: other.to_string() })),
        };
        if spec.name().is_empty() {
            return Err(SpecError::new(s, SpecErrorKind::EmptyName));
        }
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_forms() {
        assert_eq!("random".parse::<PlayerSpec>().unwrap(), PlayerSpec::Random { seed: None, name: None });
        assert_eq!(
            "random;seed=7;name=r7".parse::<PlayerSpec>().unwrap(),
            PlayerSpec::Random { seed: Some(7), name: Some("r7".into()) }
        );
        assert_eq!("uniform:200".parse::<PlayerSpec>().unwrap().name(), "uniform-200");
        assert_eq!(
            "rollout:300;rollouts=2".parse::<PlayerSpec>().unwrap(),
            PlayerSpec::Rollout {
                visits: 300,
                rollouts: Some(2),
                seed: None,
                name: None,
                settings: SearchSettings::default()
            }
        );
        assert_eq!(
            "rollout:30;search=gumbel;tactics=off".parse::<PlayerSpec>().unwrap(),
            PlayerSpec::Rollout {
                visits: 30,
                rollouts: None,
                seed: None,
                name: None,
                settings: SearchSettings {
                    tactics: Some(false),
                    search: Some(bredon_mcts::Algorithm::Gumbel),
                    time: None,
                    search_threads: None,
                    stop_when_decided: None,
                    score_utility: None,
                    solver: None
                }
            }
        );
        assert!("uniform:30;search=alphabeta".parse::<PlayerSpec>().is_err());
        // A checkpoint player's own forward pass (two players of one model that differ in it).
        let int8 = bredon_infer::InferenceKind::fast(bredon_infer::Precision::Int8);
        let auto_int8 =
            bredon_infer::InferenceKind::Auto(bredon_infer::PrecisionChoice::Exactly(bredon_infer::Precision::Int8));
        for (spec, kind) in [
            ("checkpoint:m.bredon;inference=fast:int8", int8),
            ("checkpoint:m.bredon;precision=int8;inference=fast", int8),
            ("checkpoint:m.bredon;inference=fast:f32;precision=int8", int8),
            ("checkpoint:m.bredon;precision=INT8", auto_int8),
            (
                "checkpoint:m.bredon;precision=bf16",
                bredon_infer::InferenceKind::Auto(bredon_infer::PrecisionChoice::Exactly(
                    bredon_infer::Precision::Bf16,
                )),
            ),
        ] {
            match spec.parse::<PlayerSpec>().unwrap() {
                PlayerSpec::Checkpoint { inference, .. } => assert_eq!(inference, Some(kind), "{spec}"),
                other => panic!("{other:?}"),
            }
        }
        let e = "checkpoint:m.bredon;precision=fp16".parse::<PlayerSpec>().unwrap_err().to_string();
        assert!(e.contains("precision") && e.contains("auto, f32, bf16 or int8"), "{e}");
        let e = "checkpoint:m.bredon;inference=burn;precision=int8".parse::<PlayerSpec>().unwrap_err().to_string();
        assert!(e.contains("no fast path"), "{e}");
        let e = "checkpoint:m.bredon;inference=fast:int4".parse::<PlayerSpec>().unwrap_err().to_string();
        assert!(e.contains("inference") && e.contains("fast:int8"), "{e}");
        assert!("uniform:30;inference=fast".parse::<PlayerSpec>().is_err(), "only checkpoints run a network");
        match "uniform:30;solver=0.25".parse::<PlayerSpec>().unwrap() {
            PlayerSpec::Uniform { settings, .. } => assert_eq!(settings.config().solver_share, 0.25),
            other => panic!("{other:?}"),
        }
        for bad in ["uniform:30;solver=2", "uniform:30;solver=-0.1", "uniform:30;solver=x"] {
            let e = bad.parse::<PlayerSpec>().unwrap_err().to_string();
            assert!(e.contains("a share from 0 to 1"), "{e}");
        }
        match "checkpoint:m.bredon;time=reserves;search_threads=2;stop_when_decided=off".parse::<PlayerSpec>().unwrap()
        {
            PlayerSpec::Checkpoint { settings, .. } => {
                assert_eq!(
                    (settings.time, settings.search_threads, settings.stop_when_decided),
                    (Some(bredon_mcts::TimeManagement::Reserves), Some(2), Some(false))
                );
                assert!(!settings.config().stop_when_decided);
                assert!(SearchSettings::default().config().stop_when_decided, "on unless a player turns it off");
                assert_eq!(SearchSettings::default().config().solver_share, bredon_mcts::PLAY_SOLVER_SHARE);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            "checkpoint:m.bredon;stop_when_decided=sometimes"
                .parse::<PlayerSpec>()
                .unwrap_err()
                .to_string()
                .contains("on or off")
        );
        assert!(
            "checkpoint:m.bredon;time=forever"
                .parse::<PlayerSpec>()
                .unwrap_err()
                .to_string()
                .contains("fixed or reserves")
        );
        // In config files the search choices sit beside the player's other fields.
        let spec: PlayerSpec =
            serde_json::from_str(r#"{"kind": "checkpoint", "path": "m.bredon", "tactics": false, "time": "reserves"}"#)
                .unwrap();
        match &spec {
            PlayerSpec::Checkpoint { settings, .. } => {
                assert_eq!(
                    (settings.tactics, settings.time),
                    (Some(false), Some(bredon_mcts::TimeManagement::Reserves))
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(serde_json::from_str::<PlayerSpec>(&serde_json::to_string(&spec).unwrap()).unwrap(), spec);
        assert_eq!("rollout:300".parse::<PlayerSpec>().unwrap().name(), "rollout-300");
        let t: PlayerSpec =
            "tei:/opt/tiltak tei;name=tiltak;nodes=5000;option.HalfKomi=4;timeout=1500".parse().unwrap();
        match &t {
            PlayerSpec::Tei { config, nodes, movetime_ms } => {
                assert_eq!(config.program, "/opt/tiltak");
                assert_eq!(config.args, vec!["tei"]);
                assert_eq!(config.options, vec![("HalfKomi".to_string(), "4".to_string())]);
                assert_eq!(config.move_timeout_ms, 1500);
                assert_eq!(*nodes, Some(5000));
                assert_eq!(*movetime_ms, None);
            }
            _ => panic!(),
        }
        assert_eq!(t.name(), "tiltak");
        assert_eq!("tei:\"/a b/eng\" x".parse::<PlayerSpec>().unwrap().name(), "eng");
        assert_eq!("checkpoint:runs/a/step-1000.mpk".parse::<PlayerSpec>().unwrap().name(), "step-1000");
    }

    #[test]
    fn rejects_bad_specs() {
        for bad in [
            "",
            "uniform",
            "uniform:",
            "uniform:abc",
            "uniform:0",
            "rollout:0",
            "rollout:5;depth=3",
            "uniform:-3",
            "random:5",
            "random;seed",
            "random;seed=x",
            "random;colour=red",
            "tei:",
            "tei:\"unterminated",
            "tei:eng;nodes=many",
            "tei:eng;halfkomi=maybe",
            "tei:eng;option.=1",
            "alphazero:1",
            "checkpoint:",
        ] {
            let e = bad.parse::<PlayerSpec>();
            assert!(e.is_err(), "{bad:?} should be rejected");
            assert!(!e.unwrap_err().to_string().is_empty());
        }
    }

    #[test]
    fn a_network_plays_another_size_only_when_no_layer_is_sized_by_its_board() {
        let shipped =
            |name: &str| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped").join(name);
        // The dense 4x4 network in a 5x5 match: a clear error before any game.
        let spec: PlayerSpec = format!("checkpoint:{}", shipped("4x4.bredon").display()).parse().unwrap();
        let e = spec.entrant(5, MoveLimits::nodes(10), 0, &Compute::cpu()).expect_err("refused");
        assert!(matches!(e.kind, SpecErrorKind::OtherSize { trained: 4, size: 5, .. }), "{e:?}");
        assert!(e.to_string().contains("cannot play 5x5"), "{e}");
        // The 5x5 network (convolutional policy, pooled value) plays 7x7 legal moves.
        let spec: PlayerSpec = format!("checkpoint:{};visits=8", shipped("5x5.bredon").display()).parse().unwrap();
        let entrant = spec.entrant(7, MoveLimits::nodes(8), 0, &Compute::cpu()).unwrap();
        let mut player = (entrant.factory)().unwrap();
        let opts = bredon_rules::GameOptions::new(7);
        player.new_game(opts).unwrap();
        let mut pos = bredon_rules::Position::with_options(opts).unwrap();
        let mut history = Vec::new();
        for _ in 0..6 {
            let mv = player.choose_move(&pos, &history, &MoveLimits::nodes(8)).unwrap();
            pos.play(mv).unwrap();
            history.push(mv);
        }
    }

    #[test]
    fn missing_checkpoint_is_a_clear_error() {
        let spec: PlayerSpec = "checkpoint:no-such-model.bredon".parse().unwrap();
        let e = spec.entrant(4, MoveLimits::nodes(10), 0, &Compute::cpu()).unwrap_err();
        assert!(
            matches!(&e.kind, SpecErrorKind::Checkpoint { path, .. } if path.ends_with("no-such-model.bredon")),
            "{e:?}"
        );
        let chain = bredon_storage::error_chain(&e);
        assert!(
            chain.starts_with(r#"player "no-such-model": cannot load the network no-such-model.bredon: "#),
            "{chain}"
        );
    }

    /// Each bad spec gives its own variant, naming the bad part.
    #[test]
    fn bad_specs_name_the_bad_part() {
        let full = |s: &str| s.parse::<PlayerSpec>().unwrap_err();
        let err = |s: &str| full(s).kind;
        assert!(matches!(err("   "), SpecErrorKind::Empty));
        assert!(matches!(err("rollout:abc"), SpecErrorKind::BadVisits { visits } if visits == "abc"));
        assert!(
            matches!(full("uniform:0"), SpecError { spec, kind: SpecErrorKind::ZeroVisits } if spec == "uniform:0")
        );
        assert!(matches!(err("uniform"), SpecErrorKind::MissingArgument { expected: "uniform:VISITS" }));
        assert!(matches!(err("alphazero:1"), SpecErrorKind::UnknownKind { given } if given == "alphazero"));
        assert!(matches!(err("random:5"), SpecErrorKind::RandomTakesNoArgument));
        assert!(matches!(err("random;seed"), SpecErrorKind::NotKeyValue { part } if part == "seed"));
        assert!(matches!(
            err("rollout:5;depth=3"),
            SpecErrorKind::UnknownSetting { player_kind, key } if player_kind == "rollout" && key == "depth"
        ));
        let e = full("uniform:30;search=alphabeta");
        assert!(matches!(
            &e.kind,
            SpecErrorKind::BadSetting { key, value, expected: "puct or gumbel" } if key == "search" && value == "alphabeta"
        ));
        assert_eq!(
            e.to_string(),
            r#"player "uniform:30;search=alphabeta": setting search="alphabeta": expected puct or gumbel"#
        );
        assert!(matches!(err("tei:eng;halfkomi=maybe"), SpecErrorKind::BadSetting { expected: "on or off", .. }));
        assert!(matches!(
            err("tei:eng;nodes=many"),
            SpecErrorKind::BadSetting { expected: "a non-negative integer", .. }
        ));
        assert!(matches!(err("tei:eng;option.=1"), SpecErrorKind::EmptyOptionName { key } if key == "option."));
        let e = full("tei:\"unterminated");
        assert!(matches!(&e.kind, SpecErrorKind::CommandLine(crate::TeiClientError::UnterminatedQuote { .. })));
        let chain = bredon_storage::error_chain(&e);
        assert!(chain.starts_with(r#"player "tei:\"unterminated": bad command line: unterminated quote"#), "{chain}");
        assert!(matches!(err("random;name="), SpecErrorKind::EmptyName));
        let uniform0 = PlayerSpec::Uniform { visits: 0, seed: None, name: None, settings: SearchSettings::default() };
        assert!(matches!(
            uniform0.entrant(4, MoveLimits::nodes(1), 0, &Compute::cpu()),
            Err(SpecError { spec, kind: SpecErrorKind::Invalid(_) }) if spec == "uniform-0"
        ));
    }
}
