//! `bredon fit`: a network trained on a fixed set of stored self-play games, with no
//! self-play ([`bredon_selfplay::fit`]): arms of a training-settings comparison on the
//! same data from the same start. The output directory holds everything about the fit.

use anyhow::{Context, Result, bail};
use bredon_selfplay::config::RunConfig;
use bredon_selfplay::fit::{FitPlan, FitReport, fit};
use bredon_selfplay::fsutil::atomic_write;
use bredon_selfplay::net::Learner;
use bredon_selfplay::window::ReplayWindow;
use std::path::PathBuf;

/// Arguments of `bredon fit`.
#[derive(clap::Args, Debug)]
pub struct FitArgs {
    /// The run config whose `[game]`, `[net]`, `[train]` and `[device]` the fit uses (its
    /// optimiser, decay, learning-rate schedule, batch size and network).
    #[arg(long)]
    pub config: PathBuf,
    /// Stored self-play games: a run's `games` directory, or one generation's (repeat the
    /// flag for more).
    #[arg(long = "games", required = true)]
    pub games: Vec<PathBuf>,
    /// The network to start from (`.bredon` or checkpoint directory; default: random
    /// weights from `--seed`). The learning rate continues from its step.
    #[arg(long)]
    pub init: Option<PathBuf>,
    /// Training steps.
    #[arg(long, default_value_t = 400)]
    pub steps: u64,
    /// Measure, print and export the network every this many steps.
    #[arg(long, default_value_t = 100)]
    pub report_every: u64,
    /// Train on the newest this many samples only (default: every sample found).
    #[arg(long)]
    pub window: Option<usize>,
    /// Seeds the batches, the probe positions and random starting weights: arms with the
    /// same seed see the same batches in the same order.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// ReDo before the first step and every this many steps (0: never).
    #[arg(long, default_value_t = 0)]
    pub revive_every: u64,
    /// The fit's own directory (created; it must not hold an earlier fit): `config.toml`,
    /// `fit.jsonl` (one report a line) and `step-NNNNNN.bredon` at every report.
    #[arg(long)]
    pub out: PathBuf,
}

/// `bredon fit`.
pub fn run(args: FitArgs, device: Option<bredon_nn::DeviceChoice>) -> Result<()> {
    if args.steps == 0 || args.report_every == 0 {
        bail!("--steps and --report-every must be at least 1");
    }
    let text = std::fs::read_to_string(&args.config).with_context(|| format!("reading {}", args.config.display()))?;
    let cfg = RunConfig::from_toml(&text).with_context(|| format!("in config {}", args.config.display()))?;
    let log = args.out.join("fit.jsonl");
    if log.exists() {
        bail!("{} already holds a fit ({}); give another --out", args.out.display(), log.display());
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let choice = device.unwrap_or(cfg.device.name);
    let compute = crate::open_compute(choice, cfg.selfplay.inference)?;
    let (mut learner, start_step) = match &args.init {
        Some(path) => {
            let (learner, meta) = Learner::from_model_file(&cfg, path, &compute)
                .with_context(|| format!("starting from {}", path.display()))?;
            (learner, meta.step)
        }
        None => (Learner::new(&cfg, args.seed, &compute)?, 0),
    };
    let mut window = ReplayWindow::new();
    for dir in &args.games {
        window.refresh(dir).with_context(|| format!("reading games in {}", dir.display()))?;
    }
    if let Some(n) = args.window {
        window.trim(n);
    }
    let samples = window.len();
    eprintln!(
        "fit {} on {samples} samples of {} games ({} damaged records skipped), {} steps of {} from step {start_step}, seed {}",
        learner.describe(),
        window.games(),
        window.skipped(),
        args.steps,
        cfg.train.batch_size,
        args.seed
    );
    atomic_write(&args.out.join("config.toml"), text.as_bytes())?;
    let plan = FitPlan {
        steps: args.steps,
        report_every: args.report_every,
        start_step,
        seed: args.seed,
        revive_every: args.revive_every,
    };
    let mut lines = String::new();
    println!(
        "{:>6} {:>7} {:>9} {:>7} {:>7} {:>6} {:>7} {:>8} {:>8} {:>9}",
        "step", "model", "lr", "p loss", "v loss", "H", "dead %", "tiny %", "dormant", "samples/s"
    );
    fit(&cfg, &mut learner, &window, &plan, |r: &FitReport, l: &Learner| {
        println!(
            "{:>6} {:>7} {:>9.2e} {:>7.3} {:>7.3} {:>6.2} {:>7.1} {:>8.3} {:>7.1}% {:>9.0}",
            r.step,
            r.model_step,
            r.learning_rate,
            r.policy_loss,
            r.value_loss,
            r.policy_entropy,
            r.dead_percent,
            r.tiny_percent,
            r.dormant_percent,
            r.samples_per_sec
        );
        l.export(&args.out.join(format!("step-{:06}.bredon", r.step)), r.model_step, 0)?;
        lines.push_str(&serde_json::to_string(r).expect("a report serialises"));
        lines.push('\n');
        Ok(atomic_write(&log, lines.as_bytes())?)
    })?;
    eprintln!("wrote {}", args.out.display());
    Ok(())
}
