//! The training loop: generations of self-play → replay window → training → checkpoint →
//! evaluation, resumable at any point.
//!
//! Resume protocol. A generation `g` is: (1) self-play with checkpoint `gen-g` until
//! `games/gen-g/` holds `games_per_generation` games — games already there (from before a
//! kill, or from separate `bredon selfplay` processes) count; (2) training from the
//! `gen-g` weights and optimiser state; (3) writing checkpoint `gen-(g+1)` (model,
//! optimiser, `state.json` last), the evaluation hook, the generation's log line and the
//! checkpoint hook (gating, Elo ladder), and only then the `latest` pointer. With gating
//! on, generation `g`'s games are played by the `best` model rather than `gen-g`. A kill during (1)
//! loses only unfinished games; during (2) or (3) the training of that generation is
//! redone from the same checkpoint with the same RNG state.
//!
//! With `[selfplay] overlap`, generation `g+1`'s games start during (2), played by the
//! `gen-g` weights (before their training) on a background thread; (1) of generation
//! `g+1` then waits for them and plays whatever is missing. A kill loses only unfinished
//! games here too: finished ones are files in `games/gen-(g+1)/` like any others.

use crate::error::{Context, Result, RunError};
use indicatif::{ProgressBar, ProgressStyle};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::config::RunConfig;
use crate::fsutil::atomic_write;
use crate::health::HealthFigures;
use crate::net::Learner;
use crate::replay::count_games;
use crate::rundir::{Generation, InitRecord, RunDir, RunLock, SelfPlayModel, TrainState, layout, read_state_file};
use crate::tb::TbLogger;
use crate::to_go::{ScheduleProgress, ToGo};
use crate::window::ReplayWindow;
use crate::worker::{SelfPlayJob, reanalyse_candidates, run_pool};
use bredon_nn::LossSum;
use bredon_storage::integrity::to_checked_json;

/// Called with the new checkpoint's generation once its files are complete, before the
/// `latest` pointer moves to it (a kill during the hook redoes the generation, hook
/// included). `bredon_arena::training_hook` makes the one for gating and the Elo ladder.
pub type CheckpointHook =
    Arc<dyn Fn(Generation) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> + Send + Sync>;

/// How `train` runs, beyond the config.
#[derive(Clone, Default)]
pub struct TrainOptions {
    /// Don't play games in this process: wait for `bredon selfplay` processes sharing
    /// the run directory to produce them.
    pub external_selfplay: bool,
    /// Hide progress bars (logs and summaries still print).
    pub quiet: bool,
    /// Runs for every new checkpoint before `latest` moves to it (see [`CheckpointHook`]);
    /// an error is reported and training goes on.
    pub after_checkpoint: Option<CheckpointHook>,
    /// A new run starts from this trained model's weights (checkpoint directory or
    /// `.bredon` export) instead of random ones: `gen-0000` holds them, the optimiser
    /// starts fresh and the step counter (so the LR schedule) continues from the model's
    /// step. Recorded in `<run>/init.json`; ignored (with a warning) by a run that exists.
    pub init_from: Option<std::path::PathBuf>,
    /// Minutes of training behind the `init_from` model, for the run's Elo curve (default:
    /// the source checkpoint directory's `state.json`; unknown for an export).
    pub init_minutes: Option<f64>,
    /// With `init_from`: a run (or a checkpoint directory of one) whose newest games start
    /// the new run's replay window (copied into `<run>/inherited/`, see
    /// [`crate::inherit`]), so that the window continues instead of starting empty.
    pub window_from: Option<std::path::PathBuf>,
    /// The run's object store, when the run directory is a local copy of a run there
    /// (`--run s3://…`, see [`crate::remote`]): `train` then holds the store's lease,
    /// takes in the workers' game bundles, and uploads its games and checkpoints.
    pub remote: Option<Arc<crate::remote::Remote>>,
    /// Where the network trains and plays: the run config's `[device] name` opened (or
    /// `--device`'s), with `[selfplay] inference` (default: the CPU).
    pub compute: bredon_infer::Compute,
    /// The curriculum stage this run is (see [`crate::curriculum`]): named at the head of
    /// each generation's line, in `logs/generations.jsonl` and in TensorBoard.
    pub stage: Option<StageTag>,
    /// With `init_from`, in a curriculum: how far the model had got into the stage this
    /// run goes on with (its export's [`bredon_netform::StageProgress`]), kept in
    /// `init.json` so that the stage's limits count it.
    pub stage_progress: Option<bredon_netform::StageProgress>,
}

/// Which stage of a curriculum a run is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageTag {
    /// Its number, from 1.
    pub number: usize,
    /// How many stages the curriculum has.
    pub of: usize,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for StageTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stage {}/{} {}", self.number, self.of, self.name)
    }
}

/// The environment variable that sets the trainer's lease length on an object store in
/// seconds (default 60; renewed every third of it).
pub const LEASE_SECS_ENV: &str = "BREDON_LEASE_SECS";

impl std::fmt::Debug for TrainOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrainOptions")
            .field("external_selfplay", &self.external_selfplay)
            .field("quiet", &self.quiet)
            .field("after_checkpoint", &self.after_checkpoint.is_some())
            .field("init_from", &self.init_from)
            .field("init_minutes", &self.init_minutes)
            .field("window_from", &self.window_from)
            .field("compute", &self.compute)
            .field("stage", &self.stage)
            .field("stage_progress", &self.stage_progress)
            .finish()
    }
}

/// Whether a summary field is zero (and left out of the JSON line).
fn is_zero<T: Default + PartialEq>(x: &T) -> bool {
    *x == T::default()
}

/// One generation's summary (also a line of `logs/generations.jsonl`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct GenerationSummary {
    /// The curriculum stage's name, in a curriculum's run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// Generation trained (its games were played by `gen-<generation>`).
    pub generation: Generation,
    /// Optimiser step after training.
    pub step: u64,
    /// Games played in this generation (by this process).
    pub games: usize,
    /// Stored games reanalysed in this generation instead of new ones (`[selfplay]
    /// reanalyse`; not counted in `games`).
    #[serde(skip_serializing_if = "is_zero")]
    pub reanalysed: usize,
    /// Games played on from a stored game's endgame (`[selfplay] endgame_starts`; not
    /// counted in `games`, nor in the win rates and lengths).
    #[serde(skip_serializing_if = "is_zero")]
    pub endgame_games: usize,
    /// Of `games`, those opened with plies drawn from the raw policy (`[selfplay]
    /// opening_random`).
    #[serde(skip_serializing_if = "is_zero")]
    pub opening_games: usize,
    /// Training samples those games added.
    pub new_samples: usize,
    /// Replay window size used.
    pub window: usize,
    /// Samples still to come before the first training step (`[train] train_after`); 0
    /// once the run trains.
    #[serde(skip_serializing_if = "is_zero")]
    pub samples_before_training: usize,
    /// Mean policy loss over the generation's steps.
    pub policy_loss: f64,
    /// Mean value loss.
    pub value_loss: f64,
    /// Mean win/draw/loss cross-entropy (`[net] wdl`; 0 without).
    #[serde(skip_serializing_if = "is_zero")]
    pub wdl_loss: f64,
    /// Mean flat margin loss (`[net] aux`; 0 without).
    #[serde(skip_serializing_if = "is_zero")]
    pub flat_margin_loss: f64,
    /// Mean ownership loss (`[net] aux`; 0 without).
    #[serde(skip_serializing_if = "is_zero")]
    pub ownership_loss: f64,
    /// Mean opponent policy loss (`[net] aux`; 0 without).
    #[serde(skip_serializing_if = "is_zero")]
    pub opponent_policy_loss: f64,
    /// Mean policy entropy of the network's predictions.
    pub policy_entropy: f64,
    /// Share of games won by white, black, drawn.
    pub white_wins: f64,
    /// Share won by black.
    pub black_wins: f64,
    /// Share drawn.
    pub draws: f64,
    /// Mean game length (plies).
    pub avg_plies: f64,
    /// Network evaluations per second during self-play (positions the network saw: the
    /// evaluation cache's answers are not counted).
    pub evals_per_sec: f64,
    /// The share of self-play's position lookups the evaluation cache answered (`[selfplay]
    /// eval_cache_mb`; 0 without the cache).
    #[serde(skip_serializing_if = "is_zero")]
    pub eval_cache_hit_rate: f64,
    /// The searches' own CPU time per network evaluation, in microseconds (the game
    /// threads' clocks: tree, move generation, tactics, cache, priors; not the network):
    /// `1e6 /` this is the most evaluations a second one core of searches can feed any
    /// device. 0 where the platform has no per-thread CPU clock.
    #[serde(skip_serializing_if = "is_zero")]
    pub search_us_per_eval: f64,
    /// Self-play games per hour.
    pub games_per_hour: f64,
    /// Training samples per second.
    pub samples_per_sec: f64,
    /// Evaluation results, if the eval hook ran: (opponent, score of the new model).
    pub eval: Vec<(String, f64)>,
    /// Training steps skipped because the loss or a gradient was NaN or infinite.
    pub skipped_steps: usize,
    /// Game records skipped as damaged or unreadable when this generation loaded the
    /// replay window.
    pub skipped_games: usize,
    /// The new network's dead residual-block channels, in percent (every incoming weight
    /// of the folded layer at most 1e-6: `bredon_netform::health`, `bredon inspect`).
    pub dead_channels_percent: f64,
    /// The new network's weights at most 1e-6 in magnitude, in percent.
    pub tiny_weights_percent: f64,
    /// The new network's τ-dormant units (τ = [`crate::health::DORMANT_TAU`]) among the residual blocks'
    /// first-convolution channels, on `[train] revive_positions` positions of the replay
    /// window, in percent (`bredon_nn::activity`; 0 before the window has samples).
    pub dormant_percent: f64,
    /// The same for the value head's hidden units (`value_fc1`), which a young network
    /// can leave silent by the half while its blocks are all alive.
    #[serde(default)]
    pub value_dormant_percent: f64,
    /// Units revived (ReDo, `[train] revive_every`) before this generation's steps.
    #[serde(skip_serializing_if = "is_zero")]
    pub revived_units: usize,
    /// What is left of the run's (or the curriculum stage's) limit after this generation,
    /// and about how long it takes; none for an open-ended run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_go: Option<ToGo>,
}

impl GenerationSummary {
    /// The optional heads' mean losses as (log-line name, TensorBoard tag, loss); a loss
    /// of 0 means the network has no such head.
    fn head_losses(&self) -> [(&'static str, &'static str, f64); 4] {
        [
            ("wdl", "loss/wdl", self.wdl_loss),
            ("margin", "loss/flat_margin", self.flat_margin_loss),
            ("own", "loss/ownership", self.ownership_loss),
            ("opp", "loss/opponent_policy", self.opponent_policy_loss),
        ]
    }
}

/// After this many non-finite training steps in a row, training stops with an error
/// (the run stays at its last written checkpoint).
pub const MAX_CONSECUTIVE_SKIPPED_STEPS: usize = 10;

/// Counts skipped (non-finite) training steps and decides when to give up.
#[derive(Debug, Default)]
pub struct StepGuard {
    consecutive: usize,
    /// Steps skipped in total.
    pub skipped: usize,
}

impl StepGuard {
    /// Records a step's outcome: `Ok(true)` if it trained, `Ok(false)` if it was skipped
    /// (logged), an error after [`MAX_CONSECUTIVE_SKIPPED_STEPS`] skips in a row.
    pub fn record(&mut self, outcome: &bredon_nn::StepOutcome, step: u64, checkpoint: Generation) -> Result<bool> {
        match outcome {
            bredon_nn::StepOutcome::Trained(_) => {
                self.consecutive = 0;
                Ok(true)
            }
            bredon_nn::StepOutcome::Skipped(why) => {
                self.consecutive += 1;
                self.skipped += 1;
                eprintln!("warning: skipped training step {}: {why}", step + 1);
                if self.consecutive >= MAX_CONSECUTIVE_SKIPPED_STEPS {
                    return Err(RunError::Diverged { steps: self.consecutive, last: why.to_string(), checkpoint });
                }
                Ok(false)
            }
        }
    }
}

fn bar(len: u64, what: &str, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(&format!("{{prefix}} {what} [{{bar:30}}] {{pos}}/{{len}} {{msg}} ({{elapsed}})"))
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb
}

/// Reads the run's config, or creates the run from `config` (copying it into the run).
pub fn open_run(run: &RunDir, config: Option<&RunConfig>, config_text: Option<&str>) -> Result<RunConfig> {
    run.prepare()?;
    let saved = run.config_path();
    if saved.is_file() {
        let cfg = RunConfig::load(&saved)?;
        if let Some(given) = config
            && given != &cfg
        {
            eprintln!("warning: {} exists with a different config; resuming with the run's own copy", saved.display());
        }
        return Ok(cfg);
    }
    let (Some(cfg), Some(text)) = (config, config_text) else {
        return Err(RunError::NotARun { path: run.root().to_path_buf(), config_given: false });
    };
    atomic_write(&saved, text.as_bytes())?;
    Ok(cfg.clone())
}

/// Runs (or resumes) training in `run` until the schedule ends or `stop` is set. Holds
/// the run's [`RunLock`] throughout: a second trainer on the same run is refused.
pub fn train(
    cfg: &RunConfig,
    run: &RunDir,
    opts: &TrainOptions,
    stop: Arc<AtomicBool>,
) -> Result<Vec<GenerationSummary>> {
    let _lock = RunLock::acquire(run)?;
    let remote = opts.remote.as_deref();
    let lease = match remote {
        Some(r) => {
            let secs = std::env::var(LEASE_SECS_ENV).ok().and_then(|s| s.parse::<f64>().ok()).filter(|s| *s >= 1.0);
            let ttl = Duration::from_secs_f64(secs.unwrap_or(60.0));
            Some(bredon_storage::Lease::acquire(r.store(), layout::LEASE, &bredon_storage::holder_name(), ttl)?)
        }
        None => None,
    };
    let ctx = Ctx { cfg, run, opts, lease: lease.as_ref(), stop: &stop };
    let requests_at = |r: Option<&crate::remote::Remote>| r.map_or(0, |r| r.store().requests());
    let started = Instant::now();
    let (mut learner, mut state) = open_checkpoint(cfg, run, opts)?;
    let mut tb = TbLogger::open(&run.tensorboard_dir());
    let mut window = ReplayWindow::new();
    // Games carried over from another run (`--window-from`) first: the oldest.
    window.refresh(&run.inherited_dir())?;
    window.refresh(&run.games_dir())?;
    // Damaged records found since the last log line (reported in the next one).
    let mut skipped_reported = 0;
    let mut summaries = Vec::new();
    let elapsed_before = state.elapsed_secs;
    // `[schedule] steps` counts from the run's first checkpoint.
    let first_step = run.first_step().unwrap_or(state.step);
    let steps_left = |step: u64| cfg.schedule.steps_left(first_step, step);
    // Self-play of the next generation running during training (`[selfplay] overlap`);
    // dropping it stops it (unfinished games are discarded, finished ones stay).
    let mut background: Option<Background> = None;
    while !schedule_done(cfg, state.generation, started, &stop) && steps_left(state.step) != Some(0) {
        let generation = state.generation;
        let requests_before = requests_at(remote);
        let mut summary = GenerationSummary { generation, ..Default::default() };
        // (1) Self-play.
        let (stats, had_games) = self_play_phase(&ctx, &learner, generation, background.take())?;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        stats.summarise(&mut summary);
        if let Some(r) = remote {
            r.push_own_games(generation)?;
        }
        // (2) Training: the replay window, then the generation's steps.
        summary.new_samples = window.refresh(&run.games_dir())?;
        summary.skipped_games = window.skipped() - skipped_reported;
        skipped_reported = window.skipped();
        let total = window.total_samples();
        summary.window = cfg.train.window_size(total);
        window.trim(cfg.train.window_max);
        let plan = TrainPlan {
            window: &window,
            window_size: summary.window,
            steps: if total < cfg.train.train_after {
                0
            } else {
                let steps = steps_for(cfg, summary.new_samples, total, had_games);
                steps_left(state.step).map_or(steps, |left| steps.min(left as usize))
            },
        };
        // The next generation's games start now, played by these (pre-training) weights
        // on the cores training leaves idle, unless this generation ends the run's
        // generations or steps.
        if cfg.selfplay.overlap
            && !opts.external_selfplay
            && (cfg.schedule.generations == 0 || generation.next().number() < cfg.schedule.generations)
            && steps_left(state.step).is_none_or(|left| left > plan.steps as u64)
        {
            background = Background::start(&ctx, &learner, cfg.game.options(), generation)?;
        }
        summary.samples_before_training = cfg.train.train_after.saturating_sub(total);
        // Positions of real play to score the network's units on (the same each time the
        // generation is redone): ReDo's revival when due, the new network's `dormant` share.
        let mut probe_rng = ChaCha8Rng::seed_from_u64(0x5eed_d0e5 ^ u64::from(generation.number()));
        let probe = window.sample_positions(summary.window, cfg.train.revive_positions, &mut probe_rng);
        let every = cfg.train.revive_every;
        if every > 0 && generation.number().is_multiple_of(every) && plan.steps > 0 && !probe.is_empty() {
            let revival = learner.revive(&probe, cfg.train.revive_tau, u64::from(generation.number()))?;
            summary.revived_units = revival.units();
            if !opts.quiet || revival.units() > 0 {
                eprintln!("{generation}: revived {revival} (τ = {})", cfg.train.revive_tau);
            }
        }
        let Some(trained) = train_phase(&ctx, &mut learner, &plan, &mut state)? else {
            // The partial generation's training is discarded; it is redone on resume.
            break;
        };
        trained.summarise(&mut summary, cfg.train.batch_size);
        summary.step = state.step;
        let health = HealthFigures::of(&learner.model(), cfg.game.size, &probe);
        summary.dead_channels_percent = health.dead_percent;
        summary.tiny_weights_percent = health.tiny_percent;
        summary.dormant_percent = health.dormant_percent;
        summary.value_dormant_percent = health.value_dormant_percent;
        // (3) Checkpoint.
        let next = generation.next();
        state.generation = next;
        state.rng = trained.rng;
        state.elapsed_secs = elapsed_before + started.elapsed().as_secs_f64();
        summary.to_go = ToGo::of(&ScheduleProgress {
            limits: &cfg.schedule,
            first_step,
            generation: next.number(),
            elapsed_secs: state.elapsed_secs,
            minutes_used: started.elapsed().as_secs_f64() / 60.0,
            step: state.step,
        });
        learner.save(&run.checkpoint_dir(next), state.step, next.number())?;
        run.write_state(next, &state)?;
        // (4) Publishing: evaluation, log line and hook, then the `latest` pointer.
        publish_phase(&ctx, &learner, &state, &mut summary, &mut tb, total)?;
        if remote.is_some() {
            eprintln!("{next}: {} object-store requests this generation", requests_at(remote) - requests_before);
        }
        summaries.push(summary);
    }
    drop(background);
    tb.close();
    Ok(summaries)
}

/// Whether training stops before generation `generation`: the schedule's generations
/// or minutes are done, or `stop` was set.
fn schedule_done(cfg: &RunConfig, generation: Generation, started: Instant, stop: &AtomicBool) -> bool {
    (cfg.schedule.generations > 0 && generation.number() >= cfg.schedule.generations)
        || (cfg.schedule.max_minutes > 0.0 && started.elapsed().as_secs_f64() > cfg.schedule.max_minutes * 60.0)
        || stop.load(Ordering::Relaxed)
}

/// The run's newest checkpoint and training state: resumed from `latest`, or a new run
/// from `--init-from` weights or random ones (writing `gen-0000`).
fn open_checkpoint(cfg: &RunConfig, run: &RunDir, opts: &TrainOptions) -> Result<(Learner, TrainState)> {
    if let Some(latest) = run.latest()? {
        if let Some(init) = &opts.init_from {
            eprintln!(
                "warning: {} exists already; --init-from {} applies only to a new run",
                run.root().display(),
                init.display()
            );
        }
        let state = run.read_state(latest)?;
        let learner = Learner::load(cfg, &run.checkpoint_dir(latest), &opts.compute)
            .with_context(|| format!("loading checkpoint {latest}"))?;
        eprintln!("resuming {} at {latest} (step {})", run.root().display(), state.step);
        return Ok((learner, state));
    }
    let (learner, step) = match &opts.init_from {
        Some(path) => init_from_model(cfg, run, path, opts)?,
        None => {
            if let Some(w) = &opts.window_from {
                return Err(RunError::WindowFrom {
                    path: w.clone(),
                    why: "needs --init-from (the model those games trained)".into(),
                });
            }
            (Learner::new(cfg, cfg.schedule.seed, &opts.compute)?, 0)
        }
    };
    let state = TrainState {
        generation: Generation::FIRST,
        step,
        samples_trained: 0,
        rng: ChaCha8Rng::seed_from_u64(cfg.schedule.seed ^ 0x5EED),
        elapsed_secs: 0.0,
    };
    let first = Generation::FIRST;
    learner.save(&run.checkpoint_dir(first), step, first.number())?;
    run.write_state(first, &state)?;
    run.set_latest(first)?;
    if let Some(r) = opts.remote.as_deref() {
        r.push(layout::INIT)?;
        r.push_checkpoint(first)?;
        r.push(layout::LATEST)?;
    }
    eprintln!("new run {} ({}x{}, {})", run.root().display(), cfg.game.size, cfg.game.size, learner.describe());
    Ok((learner, state))
}

/// A new run's learner from a trained model (`--init-from`), and the step it starts at (the
/// model's, or 0 for a model of another board size); records where it came from in
/// `<run>/init.json`.
fn init_from_model(
    cfg: &RunConfig,
    run: &RunDir,
    path: &std::path::Path,
    opts: &TrainOptions,
) -> Result<(Learner, u64)> {
    let init_minutes = opts.init_minutes;
    if let Some(m) = init_minutes
        && !(m.is_finite() && m >= 0.0)
    {
        return Err(RunError::InitMinutes(m));
    }
    let (learner, meta) = Learner::from_model_file(cfg, path, &opts.compute)
        .with_context(|| format!("initialising the run from {}", path.display()))?;
    let minutes = match init_minutes {
        Some(m) => Some(m),
        None if path.join(layout::STATE).is_file() => Some(read_state_file(path)?.0.elapsed_secs / 60.0),
        None => None,
    };
    let mut init = InitRecord {
        source: path.display().to_string(),
        step: meta.step,
        generation: meta.generation,
        minutes,
        window_from: None,
        stage: opts.stage_progress.clone(),
    };
    if let Some(source) = &opts.window_from {
        if opts.remote.is_some() {
            return Err(RunError::WindowFrom {
                path: source.clone(),
                why: "works for a local run only (start it locally, then train it on the object store)".into(),
            });
        }
        let inherited = crate::inherit::inherit_window(source, run, cfg)?;
        eprintln!(
            "replay window from {}: {} games, {} samples{}",
            inherited.source,
            inherited.games,
            inherited.samples,
            if inherited.skipped > 0 {
                format!(" ({} unreadable or of another size skipped)", inherited.skipped)
            } else {
                String::new()
            }
        );
        init.window_from = Some(inherited);
    } else if cfg.train.train_after == 0 && meta.net.size == cfg.game.size && meta.step > 0 {
        eprintln!(
            "note: the replay window starts empty, so the first training steps fit the first \
             generation's few samples; to continue a trained model without its old games, \
             `[train] train_after` (e.g. 20000 on 6x6) waits for a window of its own games first, \
             and --window-from carries the old run's (docs/training.md)"
        );
    }
    atomic_write(&run.init_path(), &to_checked_json(&init, &[])?)?;
    eprintln!("starting from {} (generation {}, step {})", path.display(), meta.generation, meta.step);
    // A model of another size starts a new game: its learning-rate schedule from step 0.
    let step = if meta.net.size == cfg.game.size { meta.step } else { 0 };
    Ok((learner, step))
}

/// Phase (1): fills `generation`'s quota of games. The games played in the
/// background during the last generation's training (`[selfplay] overlap`) count, and
/// so do those already on disk; the rest are played here, or awaited from `bredon
/// selfplay` processes with `--external-selfplay`. Also says whether any of the games
/// were there before this phase played (from the background or from before a resume).
fn self_play_phase(
    ctx: &Ctx,
    learner: &Learner,
    generation: Generation,
    background: Option<Background>,
) -> Result<(PlayStats, bool)> {
    let Ctx { cfg, run, opts, stop, .. } = *ctx;
    let games_dir = run.generation_games_dir(generation);
    let target = cfg.selfplay.games_per_generation;
    let mut stats = match background {
        Some(bg) => bg.join(stop)?,
        None => PlayStats::default(),
    };
    let remote = opts.remote.as_deref();
    if let Some(r) = remote {
        r.pull_games(generation)?;
    }
    let have = count_games(&games_dir);
    if have >= target || stop.load(Ordering::Relaxed) {
        return Ok((stats, have > 0));
    }
    if opts.external_selfplay {
        let pb = bar(target as u64, "games (external)", opts.quiet);
        pb.set_prefix(generation.to_string());
        let mut polled = Instant::now();
        while count_games(&games_dir) < target && !stop.load(Ordering::Relaxed) {
            pb.set_position(count_games(&games_dir) as u64);
            std::thread::sleep(Duration::from_millis(500));
            // On an object store, one listing every 2 s (plus a GET per new bundle).
            if let Some(r) = remote
                && polled.elapsed() >= Duration::from_secs(2)
            {
                polled = Instant::now();
                r.pull_games(generation)?;
            }
        }
        pb.finish_and_clear();
    } else {
        let (player, service) = self_play_service(ctx, learner, generation)?;
        let job = selfplay_job(cfg, run, cfg.game.options(), player, generation)?;
        let pb = bar((target - have) as u64, "self-play games", opts.quiet);
        pb.set_prefix(generation.to_string());
        let games = GameSlots { dir: games_dir, count: target - have, first_index: have as u64 };
        stats.add(&play(&job, service, &games, stop, &pb)?);
        pb.finish_and_clear();
    }
    Ok((stats, have > 0))
}

/// Training steps for a generation that added `new_samples` (of `total`): each new
/// sample is seen `sample_reuse` times on average, within `[1, max_steps_per_generation]`.
/// A generation that had games before its self-play phase (played in the background, or
/// before a resume) counts at least a batch's worth, so that it still trains.
fn steps_for(cfg: &RunConfig, new_samples: usize, total: usize, had_games: bool) -> usize {
    let batch = cfg.train.batch_size;
    let new_this_gen = new_samples.max(if had_games { total.min(batch) } else { 0 });
    ((new_this_gen as f64 * cfg.train.sample_reuse / batch as f64).ceil() as usize)
        .clamp(1, cfg.train.max_steps_per_generation.max(1))
}

/// What a generation's training did.
struct Trained {
    losses: LossSum,
    skipped: usize,
    steps: usize,
    secs: f64,
    /// The RNG after sampling the batches.
    rng: ChaCha8Rng,
}

impl Trained {
    /// Fills the generation summary's training fields.
    fn summarise(&self, s: &mut GenerationSummary, batch: usize) {
        let mean = self.losses.mean();
        s.samples_per_sec = (self.steps * batch) as f64 / self.secs.max(1e-9);
        s.skipped_steps = self.skipped;
        s.policy_loss = mean.policy;
        s.value_loss = mean.value;
        s.policy_entropy = mean.entropy;
        s.wdl_loss = mean.wdl;
        s.flat_margin_loss = mean.flat_margin;
        s.ownership_loss = mean.ownership;
        s.opponent_policy_loss = mean.opponent_policy;
    }
}

/// A generation's training: how many steps, on batches from the newest `window_size`
/// samples of `window`.
struct TrainPlan<'a> {
    window: &'a ReplayWindow,
    window_size: usize,
    steps: usize,
}

/// Phase (2): the plan's training steps from the weights of `state.generation`, advancing
/// `state.step` and `state.samples_trained`; `None` if `stop` was set (the caller
/// discards the generation's training: it is redone from the checkpoint).
fn train_phase(ctx: &Ctx, learner: &mut Learner, plan: &TrainPlan, state: &mut TrainState) -> Result<Option<Trained>> {
    let Ctx { cfg, opts, stop, .. } = *ctx;
    let TrainPlan { window, window_size, steps } = *plan;
    let generation = state.generation;
    let batch = cfg.train.batch_size;
    let pb = bar(steps as u64, "training steps", opts.quiet);
    pb.set_prefix(generation.to_string());
    let started = Instant::now();
    let mut losses = LossSum::default();
    let mut rng = state.rng.clone();
    let mut guard = StepGuard::default();
    for _ in 0..steps {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let samples = window.sample(window_size, batch, &mut rng);
        let lr = cfg.train.lr_at(state.step);
        let outcome = learner.step(&samples, lr, &mut rng)?;
        pb.inc(1);
        if !guard.record(&outcome, state.step, generation)? {
            continue;
        }
        let bredon_nn::StepOutcome::Trained(step) = outcome else { unreachable!("recorded as trained") };
        losses.add(&step);
        state.step += 1;
        state.samples_trained += samples.len() as u64;
        pb.set_message(format!("policy {:.3} value {:.3}", step.policy, step.value));
    }
    pb.finish_and_clear();
    if stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    Ok(Some(Trained { losses, skipped: guard.skipped, steps, secs: started.elapsed().as_secs_f64(), rng }))
}

/// Phase (4), once checkpoint `state.generation` is written: the evaluation hook and the
/// generation's log line, the checkpoint hook, then the `latest` pointer, all in that
/// order. A kill before the pointer moves redoes the generation (the log line is then
/// replaced, not duplicated); a kill after it loses nothing.
fn publish_phase(
    ctx: &Ctx,
    learner: &Learner,
    state: &TrainState,
    summary: &mut GenerationSummary,
    tb: &mut TbLogger,
    total_samples: usize,
) -> Result<()> {
    let Ctx { cfg, run, opts, lease, stop } = *ctx;
    let next = state.generation;
    if cfg.eval.every > 0 && next.number().is_multiple_of(cfg.eval.every) {
        summary.eval = crate::evaluate::evaluate_generation(cfg, run, learner, next, stop, &opts.compute)?;
    }
    summary.stage = opts.stage.as_ref().map(|t| t.name.clone());
    log_generation(run, tb, summary, opts.stage.as_ref(), cfg.train.lr_at(state.step), total_samples)?;
    if let Some(hook) = &opts.after_checkpoint
        && let Err(e) = hook(next)
    {
        eprintln!("warning: checkpoint hook for {next} failed: {}", bredon_storage::error_chain(&*e));
    }
    if let (Some(r), Some(lease)) = (opts.remote.as_deref(), lease) {
        // Checkpoint, log and `best` first, `latest` last: a worker that sees the new
        // pointer finds the whole checkpoint. A trainer that lost its lease stops.
        lease.check()?;
        r.push_checkpoint(next)?;
        r.push(layout::GENERATION_LOG)?;
        r.push(layout::BEST)?;
    }
    run.set_latest(next)?;
    if let Some(r) = opts.remote.as_deref() {
        r.push(layout::LATEST)?;
    }
    prune_optimizer_states(run, next, cfg.train.optimizer_states_kept);
    Ok(())
}

/// Which model plays self-play with the run's config: with gating on, the `best` one.
fn self_play_choice(cfg: &RunConfig) -> SelfPlayModel {
    if cfg.eval.gate.enabled { SelfPlayModel::Best } else { SelfPlayModel::Own }
}

/// The settings [`train`]'s phases share.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    cfg: &'a RunConfig,
    run: &'a RunDir,
    opts: &'a TrainOptions,
    /// The trainer's lease on the object store, for a run there.
    lease: Option<&'a bredon_storage::Lease>,
    stop: &'a AtomicBool,
}

/// A running inference service for self-play, and the evaluator that reaches it.
struct SelfPlayService {
    evaluator: Arc<dyn bredon_mcts::Evaluator>,
    service: bredon_infer::InferenceService,
}

/// The weights that play self-play games while the learner holds `current`: those, or
/// with gating the `best` model (an older, better one) loaded from its checkpoint; their
/// generation and a running inference service on them.
fn self_play_service(ctx: &Ctx, learner: &Learner, current: Generation) -> Result<(Generation, SelfPlayService)> {
    let Ctx { cfg, run, opts, .. } = *ctx;
    let player = run.self_play_model(current, self_play_choice(cfg))?;
    let compute = &opts.compute;
    let (max_batch, shards) = (cfg.selfplay.max_inference_batch, cfg.selfplay.inference_shards(&compute.device));
    let (evaluator, service) = if player == current {
        learner.start_inference(max_batch, shards)?
    } else {
        Learner::load(cfg, &run.checkpoint_dir(player), compute)
            .with_context(|| format!("loading self-play model {player}"))?
            .start_inference(max_batch, shards)?
    };
    Ok((player, SelfPlayService { evaluator, service }))
}

/// The self-play job of `generation`'s games, played by the weights of `player`; with
/// `[selfplay] reanalyse` or `endgame_starts`, the run's stored games its slots may draw.
fn selfplay_job(
    cfg: &RunConfig,
    run: &RunDir,
    options: bredon_rules::GameOptions,
    player: Generation,
    generation: Generation,
) -> Result<SelfPlayJob> {
    let stored_games = if cfg.selfplay.reanalyse > 0.0 || cfg.selfplay.endgame_starts > 0.0 {
        reanalyse_candidates(&run.games_dir(), cfg.selfplay.reanalyse_games)?
    } else {
        Arc::from(Vec::new())
    };
    Ok(SelfPlayJob {
        options,
        search: cfg.search.clone(),
        selfplay: selfplay_at(cfg, generation),
        model: player.to_string(),
        seed: cfg.schedule.seed ^ ((generation.number() as u64) << 32),
        stored_games,
    })
}

/// The self-play settings of `generation`'s games: the config's, with the visit budget
/// of that generation (`[selfplay] visits_ramp_generations`).
fn selfplay_at(cfg: &RunConfig, generation: Generation) -> crate::config::SelfPlayConfig {
    let (visits, fast_visits) = cfg.selfplay.visits_at(generation.number());
    crate::config::SelfPlayConfig { visits, fast_visits, ..cfg.selfplay.clone() }
}

/// What a batch of self-play games did.
#[derive(Debug, Default)]
struct PlayStats {
    played: usize,
    reanalysed: usize,
    endgames: usize,
    /// Of `played`, games opened with drawn plies.
    openings: usize,
    white: usize,
    black: usize,
    draws: usize,
    plies: usize,
    evals: u64,
    cache: bredon_mcts::CacheStats,
    /// The game threads' CPU time (`None` where it cannot be read).
    search_cpu: Option<Duration>,
    secs: f64,
}

impl PlayStats {
    fn add(&mut self, o: &PlayStats) {
        self.played += o.played;
        self.reanalysed += o.reanalysed;
        self.endgames += o.endgames;
        self.openings += o.openings;
        self.white += o.white;
        self.black += o.black;
        self.draws += o.draws;
        self.plies += o.plies;
        self.evals += o.evals;
        self.cache += o.cache;
        self.search_cpu = match (self.search_cpu, o.search_cpu) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.secs += o.secs;
    }

    /// Fills the generation summary's self-play fields.
    fn summarise(&self, s: &mut GenerationSummary) {
        let n = self.played.max(1) as f64;
        let secs = self.secs.max(1e-9);
        s.games = self.played;
        s.reanalysed = self.reanalysed;
        s.endgame_games = self.endgames;
        s.opening_games = self.openings;
        s.white_wins = self.white as f64 / n;
        s.black_wins = self.black as f64 / n;
        s.draws = self.draws as f64 / n;
        s.avg_plies = self.plies as f64 / n;
        s.evals_per_sec = self.evals as f64 / secs;
        s.eval_cache_hit_rate = self.cache.hit_rate();
        s.search_us_per_eval = match self.search_cpu {
            Some(cpu) if self.evals > 0 => cpu.as_secs_f64() * 1e6 / self.evals as f64,
            _ => 0.0,
        };
        s.games_per_hour = self.played as f64 / secs * 3600.0;
    }
}

/// The games a self-play batch is to add to a generation's directory.
struct GameSlots {
    /// The generation's games directory.
    dir: std::path::PathBuf,
    /// How many.
    count: usize,
    /// The index of the first (file names and RNG streams).
    first_index: u64,
}

/// Plays the `games` of `job` on the inference `service`, then shuts the service down.
fn play(
    job: &SelfPlayJob,
    service: SelfPlayService,
    games: &GameSlots,
    stop: &AtomicBool,
    pb: &ProgressBar,
) -> Result<PlayStats> {
    let started = Instant::now();
    let mut st = PlayStats::default();
    let SelfPlayService { evaluator, service } = service;
    let report = run_pool(job, evaluator, &games.dir, games.count, games.first_index, stop, |g| {
        pb.inc(1);
        if g.reanalysed {
            st.reanalysed += 1;
            return;
        }
        if g.endgame_from.is_some() {
            st.endgames += 1;
            return;
        }
        st.played += 1;
        if g.opening_plies > 0 {
            st.openings += 1;
        }
        match g.result.winner() {
            Some(bredon_rules::Color::White) => st.white += 1,
            Some(bredon_rules::Color::Black) => st.black += 1,
            None => st.draws += 1,
        }
        st.plies += g.plies;
    })?;
    st.cache = report.cache;
    st.search_cpu = report.search_cpu;
    st.evals = service.evaluations();
    service.shutdown();
    st.secs = started.elapsed().as_secs_f64();
    Ok(st)
}

/// The next generation's self-play, running on its own thread while this one trains.
struct Background {
    handle: Option<std::thread::JoinHandle<Result<PlayStats>>>,
    stop: Arc<AtomicBool>,
}

impl Background {
    /// Starts the games of the generation after `current` still missing, played by the
    /// learner's current weights (`current`'s), or by the `best` model with gating on
    /// ([`self_play_service`]).
    fn start(
        ctx: &Ctx,
        learner: &Learner,
        options: bredon_rules::GameOptions,
        current: Generation,
    ) -> Result<Option<Background>> {
        let Ctx { cfg, run, .. } = *ctx;
        let next = current.next();
        let target = cfg.selfplay.games_per_generation;
        let dir = run.generation_games_dir(next);
        let have = count_games(&dir);
        if have >= target {
            return Ok(None);
        }
        let (player, service) = self_play_service(ctx, learner, current)?;
        let job = selfplay_job(cfg, run, options, player, next)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let games = GameSlots { dir, count: target - have, first_index: have as u64 };
        let handle = std::thread::Builder::new()
            .name(format!("selfplay-{next}"))
            .spawn(move || play(&job, service, &games, &flag, &ProgressBar::hidden()))
            .map_err(|source| RunError::Spawn { what: "the background self-play thread", source })?;
        Ok(Some(Background { handle: Some(handle), stop }))
    }

    /// Waits for the games (stopping them early if `stop` is set meanwhile).
    fn join(mut self, stop: &AtomicBool) -> Result<PlayStats> {
        let handle = self.handle.take().expect("joined once");
        while !handle.is_finished() {
            if stop.load(Ordering::Relaxed) {
                self.stop.store(true, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        handle.join().map_err(|_| RunError::Panicked("the background self-play thread"))?
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            self.stop.store(true, Ordering::Relaxed);
            let _ = handle.join();
        }
    }
}

/// Deletes the optimiser state of the checkpoint `kept` generations before `newest` (the
/// older ones went the same way before), so that only the newest `kept` checkpoints keep
/// theirs; 0 keeps all. A failure is only a warning: the file is merely disk space.
fn prune_optimizer_states(run: &RunDir, newest: Generation, kept: usize) {
    if kept == 0 || (newest.number() as usize) < kept {
        return;
    }
    let old = run.checkpoint_dir(Generation(newest.number() - kept as u32)).join(layout::OPTIMIZER);
    if old.is_file()
        && let Err(e) = std::fs::remove_file(&old)
    {
        eprintln!("warning: could not delete the old optimizer state {}: {e}", old.display());
    }
}

fn log_generation(
    run: &RunDir,
    tb: &mut TbLogger,
    s: &GenerationSummary,
    stage: Option<&StageTag>,
    lr: f64,
    total_samples: usize,
) -> Result<()> {
    let mut evals: String = s.eval.iter().map(|(o, score)| format!(" vs {o} {:.0}%", score * 100.0)).collect();
    // The losses of the optional heads (only those present), after the line's fields.
    let aux: Vec<String> =
        s.head_losses().iter().filter(|(_, _, l)| *l != 0.0).map(|(k, _, l)| format!("{k} {l:.3}")).collect();
    if !aux.is_empty() {
        evals.push_str(&format!(" | heads {}", aux.join(" ")));
    }
    if s.samples_before_training > 0 {
        evals.push_str(&format!(" | no training until {} more samples (train_after)", s.samples_before_training));
    }
    if s.skipped_steps > 0 {
        evals.push_str(&format!(" | {} steps skipped (non-finite)", s.skipped_steps));
    }
    if s.skipped_games > 0 {
        evals.push_str(&format!(" | {} damaged games skipped", s.skipped_games));
    }
    if s.reanalysed > 0 {
        evals.push_str(&format!(" | {} stored games reanalysed", s.reanalysed));
    }
    if s.endgame_games > 0 {
        evals.push_str(&format!(" | {} games from stored endgames", s.endgame_games));
    }
    if s.opening_games > 0 {
        evals.push_str(&format!(" | {} drawn openings", s.opening_games));
    }
    if s.eval_cache_hit_rate > 0.0 {
        evals.push_str(&format!(" | cache {:.0}% hits", s.eval_cache_hit_rate * 100.0));
    }
    if s.search_us_per_eval > 0.0 {
        evals.push_str(&format!(" | search {:.0} us/eval", s.search_us_per_eval));
    }
    evals.push_str(&format!(
        " | dead {:.1}% dormant {:.1}% (value head {:.0}%)",
        s.dead_channels_percent, s.dormant_percent, s.value_dormant_percent
    ));
    if s.revived_units > 0 {
        evals.push_str(&format!(" revived {}", s.revived_units));
    }
    if let Some(to_go) = s.to_go {
        evals.push_str(&format!(" | to go: {to_go}"));
    }
    let head = stage.map(|t| format!("[{t}] ")).unwrap_or_default();
    eprintln!(
        "{head}gen {:>3} step {:>6} | games {:>4} samples +{:<6} window {:<7} | loss p {:.3} v {:.3} H {:.2} | W/B/D {:.0}/{:.0}/{:.0}% len {:.1} | {:.0} evals/s {:.0} games/h {:.0} samples/s{evals}",
        s.generation.number(),
        s.step,
        s.games,
        s.new_samples,
        s.window,
        s.policy_loss,
        s.value_loss,
        s.policy_entropy,
        s.white_wins * 100.0,
        s.black_wins * 100.0,
        s.draws * 100.0,
        s.avg_plies,
        s.evals_per_sec,
        s.games_per_hour,
        s.samples_per_sec,
    );
    let step = s.step;
    let mut scalars: Vec<(String, f64)> = vec![
        ("loss/policy".into(), s.policy_loss),
        ("loss/value".into(), s.value_loss),
        ("loss/total".into(), s.policy_loss + s.value_loss),
        ("policy/entropy".into(), s.policy_entropy),
        ("train/learning_rate".into(), lr),
        ("train/window".into(), s.window as f64),
        ("train/total_samples".into(), total_samples as f64),
        ("selfplay/game_length".into(), s.avg_plies),
        ("selfplay/white_win_rate".into(), s.white_wins),
        ("selfplay/black_win_rate".into(), s.black_wins),
        ("selfplay/draw_rate".into(), s.draws),
        ("throughput/evals_per_sec".into(), s.evals_per_sec),
        ("selfplay/eval_cache_hit_rate".into(), s.eval_cache_hit_rate),
        ("throughput/search_us_per_eval".into(), s.search_us_per_eval),
        ("throughput/games_per_hour".into(), s.games_per_hour),
        ("selfplay/reanalysed_games".into(), s.reanalysed as f64),
        ("selfplay/endgame_games".into(), s.endgame_games as f64),
        ("selfplay/opening_games".into(), s.opening_games as f64),
        ("throughput/train_samples_per_sec".into(), s.samples_per_sec),
        ("generation".into(), s.generation.number() as f64),
        ("health/dead_channels_percent".into(), s.dead_channels_percent),
        ("health/tiny_weights_percent".into(), s.tiny_weights_percent),
        ("health/dormant_percent".into(), s.dormant_percent),
        ("health/value_dormant_percent".into(), s.value_dormant_percent),
        ("health/revived_units".into(), s.revived_units as f64),
    ];
    if let Some(t) = stage {
        scalars.push(("curriculum/stage".into(), t.number as f64));
    }
    for (_, tag, l) in s.head_losses() {
        if l != 0.0 {
            scalars.push((tag.into(), l));
        }
    }
    for (opp, score) in &s.eval {
        scalars.push((format!("eval/score_vs_{opp}"), *score));
    }
    let refs: Vec<(&str, f64)> = scalars.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    tb.scalars(step, &refs);
    // One JSON line per generation, appended by rewriting the file atomically.
    let path = run.generation_log_path();
    let previous = std::fs::read_to_string(&path).unwrap_or_default();
    // Drop a line for the same generation left by a run killed before `latest` moved.
    let mut text: String = previous
        .lines()
        .filter(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("generation").and_then(|g| g.as_u64()))
                != Some(s.generation.number() as u64)
        })
        .flat_map(|line| [line, "\n"])
        .collect();
    text.push_str(&serde_json::to_string(s).expect("a generation summary serialises"));
    text.push('\n');
    Ok(atomic_write(&path, text.as_bytes())?)
}

/// Self-play only: plays games with the run's newest checkpoint into the run directory,
/// picking up each new checkpoint as the trainer writes it, until `games` games (if
/// given) or `stop`. Several such processes (on one machine, or on many sharing the run
/// directory) can feed one `train --external-selfplay` process; game files carry the pid
/// and the checkpoint name, so writers never collide. Returns the games stored.
pub fn selfplay_only(
    cfg: &RunConfig,
    run: &RunDir,
    games: Option<usize>,
    stop: Arc<AtomicBool>,
    remote: Option<&crate::remote::Remote>,
    compute: &bredon_infer::Compute,
) -> Result<usize> {
    let mut played = 0usize;
    let mut index = (std::process::id() as u64) << 32;
    if let Some(r) = remote {
        // What a killed worker on this copy left unsent.
        let n = r.push_worker_games()?;
        if n > 0 {
            eprintln!("uploaded {n} game(s) left by an earlier worker");
        }
    }
    while !stop.load(Ordering::Relaxed) && games.is_none_or(|g| played < g) {
        if let Some(r) = remote {
            r.pull_pointers(crate::remote::CheckpointFiles::Model)?;
        }
        let Some(latest) = run.latest()? else {
            eprintln!("waiting for the first checkpoint in {}", run.root().display());
            std::thread::sleep(Duration::from_secs(2));
            continue;
        };
        let player = run.self_play_model(latest, self_play_choice(cfg))?;
        let learner = Learner::load(cfg, &run.checkpoint_dir(player), compute)?;
        let (evaluator, service) = learner
            .start_inference(cfg.selfplay.max_inference_batch, cfg.selfplay.inference_shards(&compute.device))?;
        let job = SelfPlayJob {
            seed: cfg.schedule.seed ^ index,
            ..selfplay_job(cfg, run, cfg.game.options(), player, latest)?
        };
        // Play one chunk with this model, then look for a newer one.
        let chunk = cfg.selfplay.concurrent_games.max(1);
        let chunk = games.map_or(chunk, |g| chunk.min(g - played));
        let n = run_pool(&job, evaluator, &run.generation_games_dir(latest), chunk, index, &stop, |_| {})?.stored;
        service.shutdown();
        if let Some(r) = remote {
            r.push_worker_games()?;
        }
        played += n;
        index += n as u64;
        eprintln!("{latest}: {played} games played by this process");
    }
    Ok(played)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bredon_nn::{Losses, StepOutcome};

    #[test]
    fn step_guard_counts_skips_and_stops_after_too_many_in_a_row() {
        let mut g = StepGuard::default();
        let skip = StepOutcome::Skipped("non-finite loss".into());
        let ok = StepOutcome::Trained(Losses::default());
        for _ in 0..MAX_CONSECUTIVE_SKIPPED_STEPS - 1 {
            assert!(!g.record(&skip, 7, Generation(3)).unwrap());
        }
        assert!(g.record(&ok, 7, Generation(3)).unwrap(), "a good step resets the run of skips");
        for _ in 0..MAX_CONSECUTIVE_SKIPPED_STEPS - 1 {
            assert!(!g.record(&skip, 7, Generation(3)).unwrap());
        }
        let e = g.record(&skip, 7, Generation(3)).unwrap_err().to_string();
        assert!(e.contains("training diverged") && e.contains("gen-0003"), "{e}");
        assert_eq!(g.skipped, 2 * MAX_CONSECUTIVE_SKIPPED_STEPS - 1);
    }
}
