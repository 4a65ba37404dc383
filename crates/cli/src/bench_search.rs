//! `bredon bench search`: play-time search speed (nodes/s) of one network with 1, 2, …
//! threads sharing one tree, side by side on the same positions (measured by
//! `bredon_bench::search`; the flags, the model and the openings are read here).

use anyhow::{Context, Result, bail};
use bredon_arena::openings::parse_opening;
use bredon_rules::{GameOptions, Position};
use std::path::PathBuf;

/// Arguments of `bredon bench search`.
#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// The model (default: the shipped model of `--size`).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Board size when no model is given.
    #[arg(long, default_value_t = 6)]
    pub size: usize,
    /// Thread counts to compare, each on every position in turn.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1, 2])]
    pub threads: Vec<usize>,
    /// Openings file (one line of PTN moves each; the positions searched).
    #[arg(long)]
    pub openings: Option<PathBuf>,
    /// Positions (the first openings of the file).
    #[arg(long, default_value_t = 12)]
    pub positions: usize,
    /// Milliseconds of search per position and thread count.
    #[arg(long, default_value_t = 1000)]
    pub millis: u64,
    /// One thread's forward passes use every core (one copy of the network split across
    /// rayon's pool, as `bredon play` and `analyse` search) instead of one core.
    #[arg(long)]
    pub spread: bool,
    /// Evaluation caches to compare, in MB (comma-separated; 0 = none): each position's
    /// search starts with an empty one ([`bredon_mcts::CachedEvaluator`]).
    #[arg(long, value_delimiter = ',', default_values_t = vec![0])]
    pub cache_mb: Vec<usize>,
}

/// Runs the benchmark and prints one line per thread count.
pub fn run(args: SearchArgs, compute: &bredon_infer::Compute) -> Result<()> {
    let (path, size) = match &args.model {
        Some(p) => (p.clone(), None),
        None => (
            crate::model_arg::find_model(&crate::model_arg::default_model_dirs(), args.size)
                .with_context(|| format!("no shipped {0}x{0} model found", args.size))?,
            Some(args.size),
        ),
    };
    let (model, meta) = bredon_nn::load_exported(&path)?;
    if size.is_some_and(|s| s != meta.size) {
        bail!("{} is a {}x{} model", path.display(), meta.size, meta.size);
    }
    let options = GameOptions::new(meta.size).with_half_komi(meta.half_komi);
    let openings = match &args.openings {
        Some(p) => p.clone(),
        None => bredon_rules::testdata::shared_data_dir()
            .context("no --openings and no ../shared/data to take the balanced openings from")?
            .join("openings")
            .join(format!("{}s_4ply_balanced_openings.txt", meta.size)),
    };
    let text = std::fs::read_to_string(&openings).with_context(|| format!("reading {}", openings.display()))?;
    let mut positions = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()).take(args.positions) {
        let moves = parse_opening(line, options).with_context(|| format!("an opening of {}", openings.display()))?;
        let mut pos = Position::with_options(options)?;
        for mv in moves {
            pos.make(mv);
        }
        positions.push(pos);
    }
    let evaluators = bredon_bench::search::evaluators(compute, &model, meta.size, &args.threads, args.spread);
    println!(
        "{}: {} positions, {} ms each, threads {:?} ({} cores available)",
        path.display(),
        positions.len(),
        args.millis,
        args.threads,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let runs = bredon_bench::search::run(&evaluators, &positions, &args.threads, &args.cache_mb, args.millis);
    let base = runs.first().map_or(1.0, |r| r.nodes_per_s());
    for r in &runs {
        let nps = r.nodes_per_s();
        let cache = if r.cache_mb == 0 {
            String::new()
        } else {
            format!(", cache {} MB: {:.1} % of {} lookups hit", r.cache_mb, 100.0 * r.cache.hit_rate(), r.cache.lookups)
        };
        println!("threads {:>2}: {nps:>8.0} nodes/s  ({:.2}x the first){cache}", r.threads, nps / base);
    }
    Ok(())
}
