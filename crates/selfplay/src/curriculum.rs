//! A curriculum: one config whose `[[stage]]` entries walk a run through board sizes,
//! networks, visits and learning rates (5x5 → 6x6 → a deeper net), each stage a normal
//! run directory under `<run>/stages/`, started from the previous stage's newest
//! checkpoint (`--init-from` across sizes and added blocks).
//!
//! The config is an ordinary run config (every section, the shared settings) plus stages:
//!
//! ```toml
//! [game]
//! size = 5
//! [net]
//! blocks = 6
//! channels = 64
//!
//! [[stage]]
//! name = "5x5"
//! minutes = 60              # of this stage's own training clock
//!
//! [[stage]]
//! name = "6x6"
//! minutes = 300
//! game = { size = 6, komi = 2.0 }
//! selfplay = { visits = 200 }
//!
//! [[stage]]
//! name = "6x6-b10"          # the last stage may be open-ended (no minutes, no generations)
//! net = { blocks = 10 }
//! ```
//!
//! A stage's sections are merged key by key into the shared ones (a stage's `net` sets
//! only the keys it names). A stage ends after `minutes` on its own clock (which survives
//! restarts), at its `generations`-th generation or after `steps` training steps of its
//! own, whichever comes first; it is then
//! marked done (`stage-done.json`, checksummed, written atomically) and the next stage
//! starts. A killed curriculum resumes inside the stage it was in, from that stage's
//! newest checkpoint, with `bredon train --run RUN`. A new one can begin at a later
//! stage from a given model ([`CurriculumStart::start_stage`]); a model exported inside
//! that stage ([`stage_progress`]) goes on with the rest of it.

use crate::config::RunConfig;
use crate::error::{ConfigError, Result, RunError};
use crate::fsutil::atomic_write;
use crate::generation::Generation;
use crate::net::net_config;
use crate::rundir::RunDir;
use crate::train::{StageTag, TrainOptions, open_run, train};
use bredon_netform::{NetConfig, StageProgress};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The curriculum's own copy of its config, in the run directory.
pub const CURRICULUM_FILE: &str = "curriculum.toml";
/// The folder of the stages' run directories.
pub const STAGES_DIR: &str = "stages";
/// The marker a finished stage leaves in its run directory.
pub const STAGE_DONE_FILE: &str = "stage-done.json";

/// One stage of a curriculum.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    /// Its name (letters, digits, `-`, `_`, `.`): the folder `stages/NN-<name>`.
    pub name: String,
    /// Minutes of the stage's own training clock (0 = no limit).
    pub minutes: f64,
    /// The stage ends when it reaches this generation (0 = no limit).
    pub generations: u32,
    /// The stage ends once it has trained this many steps (0 = no limit): the same
    /// training on any machine, where its minutes depend on the machine's speed.
    pub steps: u64,
    /// The shared config with the stage's sections merged in.
    pub config: RunConfig,
}

impl Stage {
    /// When the stage ends, in words: "until 2700 steps or 120 minutes", "open-ended".
    pub fn limits(&self) -> String {
        let mut parts = Vec::new();
        if self.steps > 0 {
            parts.push(format!("{} steps", self.steps));
        }
        if self.generations > 0 {
            parts.push(format!("generation {}", self.generations));
        }
        if self.minutes > 0.0 {
            parts.push(format!("{} minutes", self.minutes));
        }
        if parts.is_empty() { "open-ended: until stopped".to_string() } else { format!("until {}", parts.join(" or ")) }
    }
}

/// A parsed, checked curriculum.
#[derive(Clone, Debug, PartialEq)]
pub struct Curriculum {
    /// The stages in order.
    pub stages: Vec<Stage>,
}

/// The keys of a `[[stage]]` entry besides config sections.
const STAGE_KEYS: [&str; 4] = ["name", "minutes", "generations", "steps"];

impl Curriculum {
    /// Whether a config text is a curriculum (has `[[stage]]` entries) rather than a
    /// single run's config. Text that is not TOML is not a curriculum (the run config's
    /// parser then names the problem).
    pub fn is_curriculum(text: &str) -> bool {
        toml::from_str::<toml::Table>(text).is_ok_and(|t| t.contains_key("stage"))
    }

    /// Parses and checks a curriculum: every stage's merged config must be a valid run
    /// config; names are unique; only the last stage may be open-ended.
    pub fn from_toml(text: &str) -> Result<Curriculum, ConfigError> {
        let mut base: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))?;
        let Some(raw) = base.remove("stage") else {
            return Err(ConfigError::Invalid("a curriculum needs [[stage]] entries".into()));
        };
        let toml::Value::Array(raw) = raw else {
            return Err(ConfigError::Invalid("`stage` must be a list of tables: write [[stage]]".into()));
        };
        if raw.is_empty() {
            return Err(ConfigError::Invalid("a curriculum needs at least one [[stage]]".into()));
        }
        let count = raw.len();
        let mut stages: Vec<Stage> = Vec::with_capacity(count);
        for (i, entry) in raw.into_iter().enumerate() {
            let which = |name: &str| format!("[[stage]] {} ({name})", i + 1);
            let toml::Value::Table(mut entry) = entry else {
                return Err(ConfigError::Invalid(format!("[[stage]] {} is not a table", i + 1)));
            };
            let name = match entry.remove("name") {
                Some(toml::Value::String(s)) => s,
                Some(_) => return Err(ConfigError::Invalid(format!("[[stage]] {}: name must be a string", i + 1))),
                None => return Err(ConfigError::Invalid(format!("[[stage]] {} has no name", i + 1))),
            };
            if !StageProgress::is_valid_name(&name) {
                return Err(ConfigError::Invalid(format!(
                    "{}: a stage name is 1 to {} letters, digits, '-', '_' or '.' (it names a folder)",
                    which(&name),
                    StageProgress::MAX_NAME
                )));
            }
            if stages.iter().any(|s| s.name == name) {
                return Err(ConfigError::Invalid(format!("{}: two stages have this name", which(&name))));
            }
            let minutes = match entry.remove("minutes") {
                None => 0.0,
                Some(v) => match v.as_float().or_else(|| v.as_integer().map(|n| n as f64)) {
                    Some(m) if m.is_finite() && m > 0.0 => m,
                    _ => {
                        return Err(ConfigError::Invalid(format!(
                            "{}: minutes must be a positive number",
                            which(&name)
                        )));
                    }
                },
            };
            // A positive whole number under `key`, 0 when absent.
            let mut count_of = |key: &str| -> Result<u64, ConfigError> {
                match entry.remove(key) {
                    None => Ok(0),
                    Some(v) => match v.as_integer().and_then(|n| u64::try_from(n).ok()) {
                        Some(n) if n > 0 => Ok(n),
                        _ => Err(ConfigError::Invalid(format!(
                            "{}: {key} must be a positive whole number",
                            which(&name)
                        ))),
                    },
                }
            };
            let generations = u32::try_from(count_of("generations")?).map_err(|_| {
                ConfigError::Invalid(format!("{}: generations must be at most {}", which(&name), u32::MAX))
            })?;
            let steps = count_of("steps")?;
            if minutes == 0.0 && generations == 0 && steps == 0 && i + 1 < count {
                return Err(ConfigError::Invalid(format!(
                    "{}: only the last stage may run without minutes, generations or steps",
                    which(&name)
                )));
            }
            let mut merged = base.clone();
            merge(&mut merged, entry);
            let config: RunConfig = toml::Value::Table(merged).try_into().map_err(|e: toml::de::Error| {
                ConfigError::Parse(format!(
                    "{}: {} (a stage's keys: {}, or config sections)",
                    which(&name),
                    e.message(),
                    STAGE_KEYS.join(", ")
                ))
            })?;
            config.validate().map_err(|e| ConfigError::Invalid(format!("{}: {e}", which(&name))))?;
            stages.push(Stage { name, minutes, generations, steps, config });
        }
        Ok(Curriculum { stages })
    }

    /// Reads and parses a curriculum file.
    pub fn load(path: &Path) -> Result<Curriculum, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.into(), source })?;
        Curriculum::from_toml(&text).map_err(|e| ConfigError::In { path: path.into(), source: Box::new(e) })
    }

    /// The run directory of stage `index` (from 0) of a curriculum in `root`.
    pub fn stage_dir(&self, root: &Path, index: usize) -> PathBuf {
        root.join(STAGES_DIR).join(format!("{:02}-{}", index + 1, self.stages[index].name))
    }
}

/// Merges `over` into `base` key by key: tables recursively, anything else replaced.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(key, v);
            }
        }
    }
}

/// What a finished stage records (`stage-done.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageDone {
    /// The stage's name.
    pub name: String,
    /// Its newest checkpoint's generation.
    pub generation: u32,
    /// Minutes on the stage's own clock.
    pub stage_minutes: f64,
    /// Minutes of training behind its newest checkpoint, earlier stages (and the
    /// curriculum's `--init-from` model) included.
    pub total_minutes: f64,
    /// Set when the stage was not trained here: the curriculum began at a later stage
    /// (`--start-stage`) from this model, which stands for this stage's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_for: Option<PathBuf>,
}

fn read_done(path: &Path) -> Result<Option<StageDone>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bredon_storage::integrity::from_checked_json::<StageDone>(&bytes, path)?.0)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(RunError::Io { doing: "reading", path: path.into(), source }),
    }
}

/// Makes a stage's [`TrainOptions`] from its config and run directory (its device, its
/// checkpoint hook).
pub type StageOptions<'a> =
    dyn Fn(&RunConfig, &RunDir) -> std::result::Result<TrainOptions, Box<dyn std::error::Error + Send + Sync>> + 'a;

/// How a curriculum session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CurriculumEnd {
    /// Every stage is done.
    Finished,
    /// Stopped (Ctrl-C) inside a stage; `bredon train --run` resumes it.
    Stopped,
}

/// How a new curriculum starts (`bredon train`'s `--init-from`, `--init-minutes`,
/// `--window-from` and `--start-stage`); a curriculum that exists ignores it.
#[derive(Clone, Debug, Default)]
pub struct CurriculumStart {
    /// The first stage trained starts from this model instead of random weights.
    pub init_from: Option<PathBuf>,
    /// Minutes of training behind `init_from` (for the Elo curves).
    pub init_minutes: Option<f64>,
    /// The first stage trained starts its replay window with this run's games.
    pub window_from: Option<PathBuf>,
    /// Begin at this stage (its name, or its number from 1), from `init_from`: the
    /// stages before it are marked skipped (their `stage-done.json` names the model).
    /// For a model trained elsewhere (a shipped 5x5 network for the 6x6 stage) or a
    /// curriculum whose directory was lost with its machine.
    pub start_stage: Option<String>,
}

impl Curriculum {
    /// The index of the stage `given` names: its name, or its number from 1.
    pub fn stage_index(&self, given: &str) -> Result<usize> {
        if let Some(i) = self.stages.iter().position(|s| s.name == given) {
            return Ok(i);
        }
        match given.parse::<usize>() {
            Ok(n) if (1..=self.stages.len()).contains(&n) => Ok(n - 1),
            _ => Err(RunError::UnknownStage {
                given: given.to_string(),
                names: self
                    .stages
                    .iter()
                    .enumerate()
                    .map(|(i, s)| format!("{} {}", i + 1, s.name))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }
}

/// Marks the stages before `first` done without training them: `from` (with `minutes`
/// of training behind it) stands for their result.
fn mark_skipped(c: &Curriculum, root: &Path, first: usize, from: &Path, minutes: f64) -> Result<()> {
    for (index, stage) in c.stages.iter().enumerate().take(first) {
        let dir = c.stage_dir(root, index);
        std::fs::create_dir_all(&dir).map_err(|source| RunError::Io {
            doing: "creating",
            path: dir.clone(),
            source,
        })?;
        let skipped = StageDone {
            name: stage.name.clone(),
            generation: 0,
            stage_minutes: 0.0,
            total_minutes: minutes,
            skipped_for: Some(from.to_path_buf()),
        };
        atomic_write(&dir.join(STAGE_DONE_FILE), &bredon_storage::integrity::to_checked_json(&skipped, &[])?)?;
        let count = c.stages.len();
        eprintln!("stage {}/{count} {}: skipped, {} stands for it", index + 1, stage.name, from.display());
    }
    Ok(())
}

/// How far `model` had got into `stage`: an export's [`StageProgress`], or, for a
/// checkpoint directory of a stage's run, where that checkpoint stands in the stage;
/// `None` for a model of another stage or of none (a model from a single run), and for
/// one from a stage of the same name that trains another board or network.
fn continued_stage(model: &Path, stage: &Stage) -> Result<Option<StageProgress>> {
    let Some(progress) = model_stage(model)?.filter(|p| p.name == stage.name) else { return Ok(None) };
    Ok(stage_mismatch(model, stage)?.is_none().then_some(progress))
}

/// How the network of `model` differs from the one `stage` trains, in words; `None` when
/// they are the same (board size, blocks, channels, inputs and heads).
fn stage_mismatch(model: &Path, stage: &Stage) -> Result<Option<String>> {
    let trained = bredon_nn::checkpoint::read_exported_meta(model)?.net;
    let wanted = net_config(&stage.config);
    if trained == wanted {
        return Ok(None);
    }
    let shape = |n: &NetConfig| format!("{}x{} b{}c{}", n.size, n.size, n.blocks, n.channels);
    Ok(Some(if shape(&trained) == shape(&wanted) {
        format!("the model's inputs or heads are not those of the stage's {} network", shape(&wanted))
    } else {
        format!("the model is a {} network, the stage trains a {} one", shape(&trained), shape(&wanted))
    }))
}

/// The stage progress `model` (an export, or a stage's checkpoint directory) carries.
fn model_stage(model: &Path) -> Result<Option<StageProgress>> {
    Ok(if model.is_dir() {
        match RunDir::of_checkpoint(model) {
            Some((run, g)) => stage_progress(&run, g)?,
            None => None,
        }
    } else {
        bredon_nn::checkpoint::read_exported_meta(model)?.stage
    })
}

/// The stage a new curriculum begins at: `--start-stage` if given; else the stage of
/// `c` that the `--init-from` model was trained inside (by name), so that an export
/// taken mid-stage goes on with that stage without being told; else the first.
fn first_stage(c: &Curriculum, start_stage: Option<&str>, init_from: Option<&Path>) -> Result<usize> {
    if let Some(s) = start_stage {
        return c.stage_index(s);
    }
    let Some(model) = init_from else { return Ok(0) };
    let Some(p) = model_stage(model)? else { return Ok(0) };
    let Some(index) = c.stages.iter().position(|s| s.name == p.name) else { return Ok(0) };
    if let Some(why) = stage_mismatch(model, &c.stages[index])? {
        return Err(RunError::StageMismatch {
            model: model.to_path_buf(),
            stage: p.name,
            number: index + 1,
            count: c.stages.len(),
            why,
        });
    }
    if index > 0 {
        eprintln!(
            "{} was trained inside stage {}/{} {}: the curriculum begins there (--start-stage chooses another)",
            model.display(),
            index + 1,
            c.stages.len(),
            p.name
        );
    }
    Ok(index)
}

/// Whether `done` covers all of `stage` (its steps, generations or minutes).
fn past_end(stage: &Stage, done: &StageProgress) -> bool {
    (stage.steps > 0 && done.steps >= stage.steps)
        || (stage.generations > 0 && done.generations >= stage.generations)
        || (stage.minutes > 0.0 && done.minutes >= stage.minutes)
}

/// The error for going on with stage `index` from `model`, which has done all of it.
fn already_done(c: &Curriculum, index: usize, model: &Path, done: &StageProgress) -> RunError {
    let next = match c.stages.get(index + 1) {
        Some(n) => format!("start at the next stage instead (--start-stage {})", n.name),
        None => "it was the curriculum's last stage".to_string(),
    };
    RunError::StageAlreadyDone {
        model: model.to_path_buf(),
        stage: c.stages[index].name.clone(),
        steps: done.steps,
        generations: done.generations,
        minutes: done.minutes,
        limits: c.stages[index].limits(),
        next,
    }
}

/// Refuses to go on with stage `first` from `model` when the model has done all of it.
fn check_not_past(c: &Curriculum, first: usize, model: &Path) -> Result<()> {
    match continued_stage(model, &c.stages[first])? {
        Some(p) if past_end(&c.stages[first], &p) => Err(already_done(c, first, model, &p)),
        _ => Ok(()),
    }
}

/// Where checkpoint `generation` of `run` stands in its curriculum stage, when `run` is a
/// stage's directory (`<curriculum>/stages/NN-<name>`, as given or relative): the stage's
/// steps, generations and minutes behind it, those carried from an export the stage went
/// on from included. What `bredon export` writes into a stage's model, so that a
/// curriculum whose directory is lost goes on from the export with the rest of the stage.
pub fn stage_progress(run: &RunDir, generation: Generation) -> Result<Option<StageProgress>> {
    let dir = std::path::absolute(run.root()).map_err(|source| RunError::Io {
        doing: "resolving",
        path: run.root().into(),
        source,
    })?;
    let Some(stages) = dir.parent().filter(|p| p.file_name().is_some_and(|n| n == STAGES_DIR)) else {
        return Ok(None);
    };
    let Some(root) = stages.parent().filter(|r| r.join(CURRICULUM_FILE).is_file()) else { return Ok(None) };
    let c = Curriculum::load(&root.join(CURRICULUM_FILE))?;
    let here = dir.file_name();
    let Some(index) = (0..c.stages.len()).find(|&i| c.stage_dir(root, i).file_name() == here) else {
        return Ok(None);
    };
    let carried = run.init_record()?.and_then(|r| r.stage);
    let state = run.read_state(generation)?;
    let (steps, generations, minutes) = carried.map_or((0, 0, 0.0), |p| (p.steps, p.generations, p.minutes));
    Ok(Some(StageProgress {
        name: c.stages[index].name.clone(),
        steps: state.step.saturating_sub(run.first_step()?).saturating_add(steps),
        generations: generation.number().saturating_add(generations),
        minutes: state.elapsed_secs / 60.0 + minutes,
    }))
}

/// The stage directory of the curriculum in `root` that holds its newest training: the
/// last stage with a checkpoint (`None` before the first one).
pub fn newest_stage_dir(root: &Path) -> Result<Option<PathBuf>> {
    let c = Curriculum::load(&root.join(CURRICULUM_FILE))?;
    for index in (0..c.stages.len()).rev() {
        let run = RunDir::new(c.stage_dir(root, index));
        if run.latest()?.is_some() {
            return Ok(Some(run.root().to_path_buf()));
        }
    }
    Ok(None)
}

/// The stage directories on disk under the curriculum in `root` (`stages/NN-<name>`),
/// sorted, whatever its `curriculum.toml` says: what `bredon check` verifies and the
/// commands that take one stage list.
pub fn stage_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(STAGES_DIR))
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// The stage of the curriculum in `root` that is training now: the first one without
/// `stage-done.json`, as `(index from 0, name, run directory)`; `None` when every stage is
/// done. Self-play workers given the curriculum follow it (`bredon selfplay --run`).
pub fn current_stage(root: &Path) -> Result<Option<(usize, String, PathBuf)>> {
    let c = Curriculum::load(&root.join(CURRICULUM_FILE))?;
    for (index, stage) in c.stages.iter().enumerate() {
        let dir = c.stage_dir(root, index);
        if read_done(&dir.join(STAGE_DONE_FILE))?.is_none() {
            return Ok(Some((index, stage.name.clone(), dir)));
        }
    }
    Ok(None)
}

/// Runs (or resumes) a curriculum in `root`. `config_text` is needed to create it (the
/// text is kept as `<root>/curriculum.toml`); a curriculum that exists resumes with its
/// own copy. `options` gives each stage's [`TrainOptions`] from its config and run
/// directory (the device, the checkpoint hook); `start` can begin a new curriculum from
/// a trained model, its window from another run's games, and at a later stage
/// ([`CurriculumStart`]). A later stage on the board of the stage before it starts its
/// window with that stage's games (a growth stage distils the smaller net's own data);
/// a stage on another board starts empty.
pub fn train_curriculum(
    root: &Path,
    config_text: Option<&str>,
    start: CurriculumStart,
    options: &StageOptions<'_>,
    stop: Arc<AtomicBool>,
) -> Result<CurriculumEnd> {
    let CurriculumStart { init_from, init_minutes, window_from, start_stage } = start;
    let saved = root.join(CURRICULUM_FILE);
    if let Some(stage) = &start_stage {
        let why = if saved.is_file() {
            Some("the curriculum exists already (it resumes where it was: drop --start-stage)")
        } else if init_from.is_none() {
            Some("give --init-from MODEL: the model that stands for the stages before it")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(RunError::StartStage { stage: stage.clone(), why });
        }
    }
    let curriculum = if saved.is_file() {
        let own = Curriculum::load(&saved)?;
        if let Some(text) = config_text
            && Curriculum::from_toml(text).ok().as_ref() != Some(&own)
        {
            eprintln!("warning: {} exists with other stages; resuming with the run's own copy", saved.display());
        }
        own
    } else {
        let Some(text) = config_text else {
            return Err(RunError::NotARun { path: root.to_path_buf(), config_given: false });
        };
        let c = Curriculum::from_toml(text)?;
        // Checked before anything is written, so that a wrong name leaves no directory.
        let first = first_stage(&c, start_stage.as_deref(), init_from.as_deref())?;
        if let Some(from) = &init_from {
            check_not_past(&c, first, from)?;
        }
        std::fs::create_dir_all(root).map_err(|source| RunError::Io {
            doing: "creating",
            path: root.into(),
            source,
        })?;
        if let Some(from) = init_from.as_ref().filter(|_| first > 0) {
            mark_skipped(&c, root, first, from, init_minutes.unwrap_or(0.0))?;
        }
        // The copy last: a kill before it leaves a directory that a new `--start-stage`
        // finishes setting up.
        atomic_write(&saved, text.as_bytes())?;
        c
    };
    let count = curriculum.stages.len();
    // The previous stage's newest checkpoint and the minutes behind it (for the
    // `--init-from` model: as given, or None to read them from its state.json).
    let mut previous: Option<(PathBuf, Option<f64>)> = init_from.map(|p| (p, init_minutes));
    let mut first_init = true;
    for (index, stage) in curriculum.stages.iter().enumerate() {
        let dir = curriculum.stage_dir(root, index);
        let run = RunDir::new(&dir);
        let done_path = dir.join(STAGE_DONE_FILE);
        let tag = StageTag { number: index + 1, of: count, name: stage.name.clone() };
        if let Some(done) = read_done(&done_path)? {
            previous = Some(match done.skipped_for {
                // The model given for the stages skipped: the next stage is the first
                // one trained, started as `--init-from` says.
                Some(model) => (model, init_minutes.or(Some(done.total_minutes))),
                None => {
                    first_init = false;
                    (run.checkpoint_dir(crate::generation::Generation(done.generation)), Some(done.total_minutes))
                }
            });
            continue;
        }
        let fresh = run.latest()?.is_none();
        // What an exported model of this stage had done of it already: read from the
        // model for the first stage trained, then kept in the stage's `init.json`.
        let carried = match &previous {
            Some((from, _)) if fresh && first_init => continued_stage(from, stage)?,
            _ if fresh => None,
            _ => run.init_record()?.and_then(|r| r.stage),
        };
        let (carried_steps, carried_generations, carried_minutes) =
            carried.as_ref().map_or((0, 0, 0.0), |p| (p.steps, p.generations, p.minutes));
        if fresh && let (Some(p), Some((from, _))) = (&carried, &previous) {
            if past_end(stage, p) {
                return Err(already_done(&curriculum, index, from, p));
            }
            eprintln!(
                "{tag}: going on from {}: {} steps, {} generations and {:.1} minutes of the stage done",
                from.display(),
                p.steps,
                p.generations,
                p.minutes
            );
        }
        let text = toml::to_string(&stage.config).expect("a run config serialises");
        let mut cfg = open_run(&run, Some(&stage.config), Some(&text))?;
        let elapsed_secs = match run.latest()? {
            Some(g) => run.read_state(g)?.elapsed_secs,
            None => 0.0,
        };
        // What is left of the stage's limits (0 where it has none).
        let remaining = stage.minutes - carried_minutes - elapsed_secs / 60.0;
        let steps_left = stage.steps.saturating_sub(carried_steps);
        let generations_left = stage.generations.saturating_sub(carried_generations);
        let generation_reached = |run: &RunDir| -> Result<bool> {
            Ok(stage.generations > 0 && run.latest()?.is_some_and(|g| g.number() >= generations_left))
        };
        let steps_reached = match run.latest()? {
            Some(g) if stage.steps > 0 => run.read_state(g)?.step >= run.first_step()? + steps_left,
            _ => false,
        };
        let finished = (stage.minutes > 0.0 && remaining <= 0.0) || generation_reached(&run)? || steps_reached;
        if !finished {
            cfg.schedule.max_minutes = if stage.minutes > 0.0 { remaining } else { 0.0 };
            cfg.schedule.generations = generations_left;
            cfg.schedule.steps = steps_left;
            let mut opts = options(&cfg, &run).map_err(|source| RunError::Stage { stage: tag.to_string(), source })?;
            opts.stage = Some(tag.clone());
            opts.stage_progress = carried.clone();
            if fresh && let Some((from, minutes)) = &previous {
                opts.init_from = Some(from.clone());
                // The first stage's model from `--init-from`: its minutes as given (or
                // from its state.json); later stages: the minutes behind the previous one.
                opts.init_minutes = *minutes;
                opts.window_from = if first_init {
                    window_from.clone()
                } else {
                    // The games played before the previous stage's newest checkpoint.
                    let previous_size = index.checked_sub(1).map(|i| curriculum.stages[i].config.game.size);
                    (previous_size == Some(cfg.game.size)).then(|| from.clone())
                };
            }
            let done_before = carried.as_ref().map_or(String::new(), |p| {
                format!(
                    "; {} steps, {} generations and {:.1} minutes of it done before",
                    p.steps, p.generations, p.minutes
                )
            });
            eprintln!("{tag}: {} ({}{done_before})", if fresh { "starting" } else { "resuming" }, stage.limits());
            train(&cfg, &run, &opts, stop.clone())?;
            if stop.load(Ordering::Relaxed) {
                return Ok(CurriculumEnd::Stopped);
            }
        }
        let latest = run.latest()?.ok_or_else(|| RunError::NotARun { path: dir.clone(), config_given: true })?;
        let own_minutes = run.read_state(latest)?.elapsed_secs / 60.0;
        let stage_minutes = carried_minutes + own_minutes;
        let before = run.init_record()?.and_then(|r| r.minutes).unwrap_or(0.0);
        let done = StageDone {
            name: stage.name.clone(),
            generation: latest.number(),
            stage_minutes,
            // The minutes behind the model it started from include those carried in it.
            total_minutes: before.max(carried_minutes) + own_minutes,
            skipped_for: None,
        };
        atomic_write(&done_path, &bredon_storage::integrity::to_checked_json(&done, &[])?)?;
        eprintln!("{tag}: done at {latest} after {stage_minutes:.1} minutes ({:.1} in all)", done.total_minutes);
        previous = Some((run.checkpoint_dir(latest), Some(done.total_minutes)));
        first_init = false;
    }
    Ok(CurriculumEnd::Finished)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "[game]\nsize = 5\n[net]\nblocks = 2\nchannels = 16\n[selfplay]\nvisits = 50\n";

    fn parse(stages: &str) -> Result<Curriculum, ConfigError> {
        Curriculum::from_toml(&format!("{BASE}{stages}"))
    }

    #[test]
    fn stages_merge_their_sections_into_the_shared_config() {
        let c = parse(
            "[[stage]]\nname = \"5x5\"\nminutes = 30\n\
             [[stage]]\nname = \"6x6\"\ngenerations = 40\ngame = { size = 6, komi = 2.0 }\nselfplay = { visits = 200 }\n\
             [[stage]]\nname = \"6x6-b4\"\nnet = { blocks = 4 }\n",
        )
        .unwrap();
        let s = &c.stages;
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].minutes, s[0].generations, s[0].config.game.size), (30.0, 0, 5));
        assert_eq!((s[1].minutes, s[1].generations), (0.0, 40));
        assert_eq!((s[1].config.game.size, s[1].config.game.komi, s[1].config.selfplay.visits), (6, 2.0, 200));
        // A stage's table sets only the keys it names; later stages start from the shared
        // config again, not from the stage before.
        assert_eq!((s[1].config.net.blocks, s[1].config.net.channels), (2, 16));
        assert_eq!((s[2].config.game.size, s[2].config.net.blocks, s[2].config.selfplay.visits), (5, 4, 50));
        assert_eq!(c.stage_dir(Path::new("r"), 1), Path::new("r/stages/02-6x6"));
        assert!(Curriculum::is_curriculum(&format!("{BASE}[[stage]]\nname = \"a\"\n")));
        assert!(!Curriculum::is_curriculum(BASE));
    }

    #[test]
    fn a_bad_curriculum_names_the_stage_and_the_problem() {
        let err = |stages: &str| parse(stages).unwrap_err().to_string();
        assert!(err("[[stage]]\nminutes = 3\n").contains("[[stage]] 1 has no name"));
        let e = err("[[stage]]\nname = \"a\"\n[[stage]]\nname = \"b\"\nminutes = 3\n");
        assert!(e.contains("[[stage]] 1 (a)") && e.contains("only the last stage"), "{e}");
        let e = err("[[stage]]\nname = \"a\"\nminutes = 3\n[[stage]]\nname = \"a\"\n");
        assert!(e.contains("[[stage]] 2 (a)") && e.contains("two stages"), "{e}");
        let e = err("[[stage]]\nname = \"a/b\"\n");
        assert!(e.contains("names a folder"), "{e}");
        let e = err("[[stage]]\nname = \"a\"\nminutes = -1\n");
        assert!(e.contains("minutes must be a positive number"), "{e}");
        let e = err("[[stage]]\nname = \"a\"\nsteps = 0\n");
        assert!(e.contains("[[stage]] 1 (a): steps must be a positive whole number"), "{e}");
        let steps = parse("[[stage]]\nname = \"a\"\nsteps = 500\nminutes = 90\n[[stage]]\nname = \"b\"\n").unwrap();
        assert_eq!((steps.stages[0].steps, steps.stages[0].minutes, steps.stages[1].steps), (500, 90.0, 0));
        assert_eq!(steps.stages[0].limits(), "until 500 steps or 90 minutes");
        assert_eq!(steps.stages[1].limits(), "open-ended: until stopped");
        let e = err("[[stage]]\nname = \"a\"\nminute = 3\n");
        assert!(e.contains("[[stage]] 1 (a)") && e.contains("minute"), "{e}");
        let e = err("[[stage]]\nname = \"a\"\nnet = { blockz = 3 }\n");
        assert!(e.contains("[[stage]] 1 (a)") && e.contains("blockz"), "{e}");
        let e = err("[[stage]]\nname = \"a\"\ngame = { size = 9 }\n");
        assert!(e.contains("[[stage]] 1 (a)") && e.contains("game.size = 9"), "{e}");
        assert!(Curriculum::from_toml(BASE).unwrap_err().to_string().contains("[[stage]]"));
        assert!(Curriculum::from_toml("stage = 3\n").unwrap_err().to_string().contains("[[stage]]"));
    }
}
