//! `bredon bench`: throughput reports for the network and for self-play.

use anyhow::{Context, Result};
use bredon_nn::inference::forward_raw;
use bredon_nn::{NetConfig, TakNet};
use bredon_rules::{GameOptions, Position};
use bredon_selfplay::config::RunConfig;
use bredon_selfplay::net::Learner;
use bredon_selfplay::worker::{SelfPlayJob, run_pool};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// What to measure.
#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// Forward-pass throughput (positions/s) of fresh default networks per batch size.
    Nn(NnArgs),
    /// Self-play evaluations/s through the search and batching service, against the raw
    /// forward throughput of the same network at the batch size self-play reached.
    Selfplay(SelfPlayArgs),
    /// The tactics suite: share of road-in-one, must-block and win-in-three positions
    /// solved by the uniform search and by a model, and the time per position.
    Tactics(crate::tactics_cmd::TacticsArgs),
}

/// Arguments of `bredon bench nn`.
#[derive(clap::Args, Debug)]
pub struct NnArgs {
    /// Board sizes (default net of each: `NetConfig::default_for_size`).
    #[arg(long, value_delimiter = ',', default_values_t = vec![4, 5, 6])]
    pub sizes: Vec<usize>,
    /// Override the residual blocks.
    #[arg(long)]
    pub blocks: Option<usize>,
    /// Override the channels.
    #[arg(long)]
    pub channels: Option<usize>,
    /// Batch sizes.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1, 16, 64, 256])]
    pub batches: Vec<usize>,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
}

/// Arguments of `bredon bench selfplay`.
#[derive(clap::Args, Debug)]
pub struct SelfPlayArgs {
    /// The run config whose game, net, search and self-play settings are used.
    #[arg(long, default_value = "configs/4x4.toml")]
    pub config: PathBuf,
    /// Games to play (a fresh network; the games go to a temporary directory).
    #[arg(long, default_value_t = 64)]
    pub games: usize,
    /// Seconds for the raw forward measurement.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
}

/// Runs a benchmark.
pub fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Nn(a) => bench_nn(&a),
        BenchCommand::Selfplay(a) => bench_selfplay(&a),
        BenchCommand::Tactics(a) => crate::tactics_cmd::run(&a),
    }
}

/// Positions from random games (varied stack heights and reserves).
fn sample_positions(size: usize, n: usize, seed: u64) -> Vec<Position> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let mut pos = Position::with_options(GameOptions::new(size)).expect("valid size");
        let plies = rng.random_range(0..(size * size * 2));
        for _ in 0..plies {
            if pos.result().is_some() {
                break;
            }
            let moves = pos.legal_moves();
            let Some(&mv) = moves.choose(&mut rng) else { break };
            pos.make(mv);
        }
        if pos.result().is_none() {
            out.push(pos);
        }
    }
    out
}

/// Positions per second of `model` at `batch` for about `seconds`.
fn forward_rate(model: &TakNet, positions: &[Position], size: usize, batch: usize, seconds: f64) -> f64 {
    let refs: Vec<&Position> = positions.iter().collect();
    let batch = batch.max(1).min(refs.len());
    // Warm up (allocations, thread pool).
    let _ = forward_raw(model, &refs[..batch], size);
    let start = Instant::now();
    let mut done = 0usize;
    let mut i = 0usize;
    while start.elapsed().as_secs_f64() < seconds || done == 0 {
        let lo = (i * batch) % (refs.len() - batch + 1);
        let _ = forward_raw(model, &refs[lo..lo + batch], size);
        done += batch;
        i += 1;
    }
    done as f64 / start.elapsed().as_secs_f64()
}

fn bench_nn(args: &NnArgs) -> Result<()> {
    let device = bredon_nn::device();
    println!("{:<6} {:<8} {:>6} {:>12}", "size", "net", "batch", "positions/s");
    for &size in &args.sizes {
        let mut net = NetConfig::default_for_size(size);
        if let Some(b) = args.blocks {
            net.blocks = b;
        }
        if let Some(c) = args.channels {
            net.channels = c;
        }
        let model = TakNet::new(&net, &device);
        let positions = sample_positions(size, 1024, size as u64);
        for &batch in &args.batches {
            let rate = forward_rate(&model, &positions, size, batch, args.seconds);
            println!("{:<6} {:<8} {:>6} {:>12.0}", format!("{size}x{size}"), net.name(), batch, rate);
        }
    }
    Ok(())
}

fn bench_selfplay(args: &SelfPlayArgs) -> Result<()> {
    let cfg = RunConfig::load(&args.config).with_context(|| format!("loading {}", args.config.display()))?;
    let learner = Learner::new(&cfg, cfg.schedule.seed)?;
    let dir = tempfile::tempdir()?;
    let (evaluator, service) = learner.start_inference(cfg.selfplay.max_inference_batch)?;
    let job = SelfPlayJob {
        options: cfg.game.options(),
        search: cfg.search.clone(),
        selfplay: cfg.selfplay.clone(),
        model: "bench".into(),
        generation: "bench".into(),
        seed: cfg.schedule.seed,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let mut plies = 0usize;
    let games = run_pool(&job, evaluator, dir.path(), args.games, 0, &stop, |g| plies += g.plies)?;
    let secs = start.elapsed().as_secs_f64();
    let evals = service.evaluations();
    let batches = service.batches().max(1);
    service.shutdown();
    let avg_batch = evals as f64 / batches as f64;
    let size = cfg.game.size;
    let positions = sample_positions(size, 1024, 7);
    let raw = forward_rate(&learner.model(), &positions, size, avg_batch.round().max(1.0) as usize, args.seconds);
    let sp_rate = evals as f64 / secs;
    println!(
        "self-play {size}x{size} {}: {games} games, {plies} plies in {secs:.1} s = {:.0} games/h",
        learner.describe(),
        games as f64 / secs * 3600.0
    );
    println!("  {evals} evaluations in {batches} batches (average batch {avg_batch:.1}): {sp_rate:.0} evals/s");
    println!("  raw forward at batch {:.0}: {raw:.0} positions/s", avg_batch.round());
    println!("  self-play reaches {:.0}% of the raw forward throughput", 100.0 * sp_rate / raw);
    Ok(())
}
