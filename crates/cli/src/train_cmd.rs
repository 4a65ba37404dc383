//! `bredon train` and `bredon selfplay`.

use anyhow::{Context, Result, bail};
use bredon_selfplay::config::RunConfig;
use bredon_selfplay::curriculum::{
    CURRICULUM_FILE, Curriculum, CurriculumEnd, CurriculumStart, STAGE_DONE_FILE, current_stage, train_curriculum,
};
use bredon_selfplay::remote::CheckpointFiles;
use bredon_selfplay::rundir::RunDir;
use bredon_selfplay::train::{TrainOptions, open_run, train};
use bredon_storage::RunLocation;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Arguments of `bredon train`.
#[derive(clap::Args, Debug)]
pub struct TrainArgs {
    /// Config file (TOML). Needed to create a run; a run resumes with its own copy.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Run directory, or `s3://BUCKET/PREFIX` for a run on S3 or an S3-compatible server
    /// (credentials and endpoint from the AWS_* environment variables; default:
    /// checkpoints/<config file stem>).
    #[arg(long)]
    run: Option<RunLocation>,
    /// With an `s3://` run: where the local copy lives (default: $BREDON_CACHE, else
    /// ~/.cache/bredon).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Play no games here: wait for `bredon selfplay` processes sharing the run.
    #[arg(long)]
    external_selfplay: bool,
    /// Override the config's number of generations (0 = no limit).
    #[arg(long)]
    generations: Option<u32>,
    /// Override the config's time limit in minutes.
    #[arg(long)]
    minutes: Option<f64>,
    /// Override the config's limit of training steps (`[schedule] steps`, counted from
    /// the run's first checkpoint; 0 = no limit).
    #[arg(long)]
    steps: Option<u64>,
    /// No progress bars.
    #[arg(long)]
    quiet: bool,
    /// Start a new run from this trained model (`.bredon` file or checkpoint directory)
    /// instead of random weights: fresh optimiser, steps (and the LR schedule) continuing
    /// from the model's. Needs the config's architecture and komi, except what can be
    /// added to a trained network: global pooling, more residual blocks (they start as
    /// the identity), another board size (then any komi).
    #[arg(long, value_name = "MODEL")]
    init_from: Option<PathBuf>,
    /// Minutes of training behind the --init-from model, so that the run's Elo curve
    /// counts the whole training time (default: read from a checkpoint directory's
    /// state.json; unknown for an export).
    #[arg(long, value_name = "MINUTES", requires = "init_from")]
    init_minutes: Option<f64>,
    /// With --init-from: start the new run's replay window with the newest games of this
    /// run directory (or, given a checkpoint directory `RUN/checkpoints/gen-NNNN`, of the
    /// games played before it), up to `[train] window_max` samples, hard-linked or copied
    /// into `<run>/inherited/`. The window and its growth then continue instead of
    /// starting empty. Same board size; local runs.
    #[arg(long, value_name = "RUN", requires = "init_from")]
    window_from: Option<PathBuf>,
    /// A new curriculum begins at this stage (its name, or its number from 1) from the
    /// --init-from model, which stands for the stages before it (they are marked
    /// skipped): a 5x5 network trained elsewhere for a 6x6 stage. Without it, a model
    /// exported inside one of the curriculum's stages begins at that stage with the rest
    /// of it (a curriculum whose directory was lost with its machine).
    #[arg(long, value_name = "STAGE", requires = "init_from")]
    start_stage: Option<String>,
}

/// Arguments of `bredon selfplay`.
#[derive(clap::Args, Debug)]
pub struct SelfPlayArgs {
    /// The run (directory or `s3://BUCKET/PREFIX`) of a `bredon train` process. A
    /// curriculum's directory: play for the stage it is training, following it from
    /// stage to stage until every stage is done.
    #[arg(long)]
    run: RunLocation,
    /// With an `s3://` run: where the local copy lives (default: $BREDON_CACHE, else
    /// ~/.cache/bredon); workers on one copy share a writer id, and a worker started on
    /// the copy of a killed one uploads the games it left.
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Stop after this many games (default: until Ctrl-C).
    #[arg(long)]
    games: Option<usize>,
}

/// Sets a flag on Ctrl-C (a second Ctrl-C exits at once).
pub fn stop_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if s.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\nstopping after the current step (Ctrl-C again to quit now)…");
    });
    stop
}

fn run_location_for(args: &TrainArgs) -> Result<RunLocation> {
    if let Some(r) = &args.run {
        return Ok(r.clone());
    }
    let cfg = args.config.as_ref().context("give --run DIR, or --config FILE to name the run after it")?;
    let stem = cfg.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "run".into());
    Ok(RunLocation::Local(PathBuf::from("checkpoints").join(stem)))
}

/// Opens the run's device (`--device` if given, else the config's `[device] name`) for
/// its `[selfplay] inference` path.
fn open_device(cfg: &RunConfig, cli: Option<bredon_nn::DeviceChoice>) -> Result<bredon_infer::Compute> {
    let choice = cli.unwrap_or(cfg.device.name);
    crate::open_compute(choice, cfg.selfplay.inference).with_context(|| match cli {
        Some(_) => "--device".to_string(),
        None => "the run config's [device] name (override it with --device)".to_string(),
    })
}

/// `bredon train`.
pub fn run_train(args: TrainArgs, device: Option<bredon_nn::DeviceChoice>) -> Result<()> {
    let location = run_location_for(&args)?;
    let opened = crate::run_arg::open(&location, args.cache.as_deref(), "train")?;
    let run = RunDir::new(&opened.dir);
    if let Some(r) = &opened.remote {
        r.pull_run(CheckpointFiles::WithOptimizer)?;
    }
    let curriculum_text = match &args.config {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            Curriculum::is_curriculum(&text).then_some(text)
        }
        None => None,
    };
    if curriculum_text.is_some() || opened.dir.join(CURRICULUM_FILE).is_file() {
        return run_curriculum(&args, &opened, curriculum_text.as_deref(), device);
    }
    if let Some(stage) = &args.start_stage {
        bail!(
            "--start-stage {stage}: the config has no [[stage]] entries (a single run starts with --init-from alone)"
        );
    }
    let (given, text) = match &args.config {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            let cfg = RunConfig::from_toml(&text).with_context(|| format!("in config {}", p.display()))?;
            (Some(cfg), Some(text))
        }
        None => (None, None),
    };
    let mut cfg = open_run(&run, given.as_ref(), text.as_deref())?;
    if let Some(r) = &opened.remote {
        r.push("config.toml")?;
    }
    if let Some(g) = args.generations {
        cfg.schedule.generations = g;
    }
    if let Some(m) = args.minutes {
        cfg.schedule.max_minutes = m;
    }
    if let Some(s) = args.steps {
        cfg.schedule.steps = s;
    }
    let compute = open_device(&cfg, device)?;
    let opts = TrainOptions {
        external_selfplay: args.external_selfplay,
        quiet: args.quiet,
        after_checkpoint: bredon_arena::training_hook(&cfg, &run, &compute)?,
        init_from: args.init_from.clone(),
        init_minutes: args.init_minutes,
        window_from: args.window_from.clone(),
        remote: opened.remote.clone(),
        compute,
        stage: None,
        stage_progress: None,
    };
    let stop = stop_flag();
    let summaries = train(&cfg, &run, &opts, stop)?;
    eprintln!(
        "done: {} generation(s) this session; latest checkpoint {}",
        summaries.len(),
        run.latest()?.map_or_else(|| "none".to_string(), |g| g.to_string())
    );
    Ok(())
}

/// `bredon train` on a curriculum (a config of `[[stage]]` entries, or a run directory
/// holding one): each stage a run directory under `<run>/stages/`.
fn run_curriculum(
    args: &TrainArgs,
    opened: &crate::run_arg::OpenedRun,
    text: Option<&str>,
    device: Option<bredon_nn::DeviceChoice>,
) -> Result<()> {
    if opened.remote.is_some() {
        bail!("a curriculum runs in a local directory: give --run DIR (an s3:// run takes a single config)");
    }
    if args.minutes.is_some() || args.generations.is_some() || args.steps.is_some() {
        bail!(
            "a curriculum's stages set their own minutes, generations and steps: edit the [[stage]] entries, not --minutes / --generations / --steps"
        );
    }
    let options = |cfg: &RunConfig,
                   run: &RunDir|
     -> std::result::Result<TrainOptions, Box<dyn std::error::Error + Send + Sync>> {
        let compute = open_device(cfg, device).map_err(|e| format!("{e:#}"))?;
        Ok(TrainOptions {
            quiet: args.quiet,
            after_checkpoint: bredon_arena::training_hook(cfg, run, &compute)?,
            compute,
            // `bredon selfplay --run` on the curriculum's directory follows its stages.
            external_selfplay: args.external_selfplay,
            ..TrainOptions::default()
        })
    };
    let start = CurriculumStart {
        init_from: args.init_from.clone(),
        init_minutes: args.init_minutes,
        window_from: args.window_from.clone(),
        start_stage: args.start_stage.clone(),
    };
    let end = train_curriculum(&opened.dir, text, start, &options, stop_flag())?;
    match end {
        CurriculumEnd::Finished => eprintln!("done: every stage of {} is trained", opened.dir.display()),
        CurriculumEnd::Stopped => {
            eprintln!("stopped; resume with `bredon train --run {}`", opened.dir.display())
        }
    }
    Ok(())
}

/// `bredon selfplay`.
pub fn run_selfplay(args: SelfPlayArgs, device: Option<bredon_nn::DeviceChoice>) -> Result<()> {
    let opened = crate::run_arg::open(&args.run, args.cache.as_deref(), "selfplay")?;
    if opened.remote.is_none() && opened.dir.join(CURRICULUM_FILE).is_file() {
        return selfplay_curriculum(&opened.dir, args.games, device);
    }
    let run = RunDir::new(&opened.dir);
    if let Some(r) = &opened.remote {
        let stop = stop_flag();
        while !r.pull_run(CheckpointFiles::Model)? {
            eprintln!("waiting for the run to be created at {} (start `bredon train` there)", args.run);
            std::thread::sleep(std::time::Duration::from_secs(2));
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
        }
    }
    let cfg = open_run(&run, None, None)?;
    let compute = open_device(&cfg, device)?;
    let stop = stop_flag();
    bredon_selfplay::train::selfplay_only(&cfg, &run, args.games, stop, opened.remote.as_deref(), &compute)?;
    Ok(())
}

/// `bredon selfplay --run CURRICULUM`: plays for the stage the curriculum is training,
/// moves to the next stage when the trainer marks this one done, and stops when every
/// stage is done (or after `games` games in all, or on Ctrl-C).
fn selfplay_curriculum(root: &Path, games: Option<usize>, device: Option<bredon_nn::DeviceChoice>) -> Result<()> {
    let stop = stop_flag();
    let mut played = 0usize;
    let mut waiting_for = None;
    while !stop.load(Ordering::Relaxed) && games.is_none_or(|g| played < g) {
        let Some((index, name, dir)) = current_stage(root)? else {
            eprintln!("every stage of the curriculum in {} is done: {played} games played here", root.display());
            return Ok(());
        };
        let run = RunDir::new(&dir);
        if !run.config_path().is_file() || run.latest()?.is_none() {
            if waiting_for != Some(index) {
                eprintln!("waiting for stage {} ({name}) to start in {}", index + 1, dir.display());
                waiting_for = Some(index);
            }
            std::thread::sleep(std::time::Duration::from_secs(1));
            continue;
        }
        let cfg = open_run(&run, None, None)?;
        let compute = open_device(&cfg, device)?;
        eprintln!("stage {} ({name}): self-play into {}", index + 1, dir.display());
        // This stage's games end when the trainer marks it done (its unfinished games are
        // dropped: they would train nothing) or on Ctrl-C.
        let stage_stop = Arc::new(AtomicBool::new(false));
        let finished = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (stop, stage_stop, finished) = (stop.clone(), stage_stop.clone(), finished.clone());
            let done = dir.join(STAGE_DONE_FILE);
            std::thread::spawn(move || {
                while !finished.load(Ordering::Relaxed) {
                    if stop.load(Ordering::Relaxed) || done.is_file() {
                        stage_stop.store(true, Ordering::Relaxed);
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
            })
        };
        let left = games.map(|g| g - played);
        let r = bredon_selfplay::train::selfplay_only(&cfg, &run, left, stage_stop, None, &compute);
        finished.store(true, Ordering::Relaxed);
        let _ = watcher.join();
        played += r?;
    }
    Ok(())
}
