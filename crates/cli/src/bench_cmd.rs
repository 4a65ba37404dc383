//! `bredon bench`: throughput reports for the network and for self-play.

use anyhow::{Context, Result};
use bredon_infer::Compute;
use bredon_infer::{Engine, InferenceKind, PolicyReadback};
use bredon_netform::NetConfig;
use bredon_netform::positions::random_positions;
use bredon_nn::train::OptimizerSettings;
use bredon_nn::{Convolutions, StepOutcome, StepPhase, TakNet, TrainExample, Trainer};
use bredon_rules::Position;
use bredon_selfplay::config::RunConfig;
use bredon_selfplay::net::Learner;
use bredon_selfplay::worker::{SelfPlayJob, process_cpu_time, run_pool, thread_cpu_time};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// What to measure.
#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// Forward-pass throughput (positions/s of the search's outputs: priors over the legal
    /// moves and the value) per batch size of fresh default networks or of `--model`,
    /// with the fast and the burn inference paths, and on a wgpu device Bredon's WGSL
    /// kernels (`--inference` picks one).
    Nn(NnArgs),
    /// Self-play evaluations/s through the search and batching service, against the raw
    /// forward throughput of the same network at the batch size self-play reached.
    Selfplay(SelfPlayArgs),
    /// The tactics suite: share of road-in-one, must-block and win-in-three positions
    /// solved by the uniform search and by a model, and the time per position.
    Tactics(crate::tactics_cmd::TacticsArgs),
    /// Training throughput (samples/s) of the burn training step.
    Train(TrainArgs),
    /// Play-time search speed (nodes/s) with 1, 2, … threads sharing one tree, side by side.
    Search(crate::bench_search::SearchArgs),
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
    /// The policy head's last layer: `dense` or `conv` (`[net] policy_head`).
    #[arg(long, value_parser = parse_net_choice::<bredon_netform::PolicyHead>)]
    pub policy_head: Option<bredon_netform::PolicyHead>,
    /// Override the policy head's features per square (`[net] policy_filters`).
    #[arg(long)]
    pub policy_filters: Option<usize>,
    /// Global pooling in every residual block (`[net] global_pool`); without
    /// `--compare-global-pool`, only the networks with it are measured.
    #[arg(long)]
    pub global_pool: bool,
    /// Measure every network with and without global pooling, one after the other.
    #[arg(long, conflicts_with = "global_pool")]
    pub compare_global_pool: bool,
    /// Channels pooled per block (`[net] gpool_channels`).
    #[arg(long)]
    pub gpool_channels: Option<usize>,
    /// The value head: `dense` or `pool` (`[net] value_head`).
    #[arg(long, value_parser = parse_net_choice::<bredon_netform::ValueHead>)]
    pub value_head: Option<bredon_netform::ValueHead>,
    /// Override the value head's filters (`[net] value_filters`).
    #[arg(long)]
    pub value_filters: Option<usize>,
    /// Batch sizes.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1, 16, 64, 256])]
    pub batches: Vec<usize>,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Measure this model (a `bredon export` file or a checkpoint directory) instead of
    /// fresh networks (the network options above are then ignored).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Also write the measured network as ONNX to this file (one size only), for
    /// comparisons with other runtimes (`scripts/bench-onnxruntime.py`).
    #[arg(long)]
    pub onnx: Option<PathBuf>,
    /// Also compare every head of the network on `--device` with the CPU's, on 256 of the
    /// positions: the largest difference per head (the wgpu tests' bound is 1e-3).
    #[arg(long)]
    pub compare_cpu: bool,
    /// The arithmetics of the WGSL kernels' trunk to measure side by side, after the main
    /// table (`f32`, `f16-pairs`: the tensor kernel's operands in shader arithmetic,
    /// `tensor`: cooperative matrices); by default every one the adapter runs. The main table's `wgsl` column
    /// is the one `auto` chooses.
    #[arg(long, value_delimiter = ',')]
    pub arithmetic: Vec<bredon_kernels::Arithmetic>,
}

/// Arguments of `bredon bench selfplay`.
#[derive(clap::Args, Debug)]
pub struct SelfPlayArgs {
    /// The run config whose game, net, search and self-play settings are used.
    #[arg(long, default_value = "configs/4x4.toml")]
    pub config: PathBuf,
    /// Games to play (the games go to a temporary directory).
    #[arg(long, default_value_t = 64)]
    pub games: usize,
    /// Play with this model (a `bredon export` file whose network the config's `[net]`
    /// describes, or can grow from as `--init-from` does) instead of a fresh network:
    /// a trained network's games and numbers differ from a random one's.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Stop the games after this many seconds (the games not finished are dropped, so
    /// games/h then counts finished games only; evaluations/s counts every one).
    #[arg(long)]
    pub max_seconds: Option<f64>,
    /// Seconds for the raw forward measurement.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Inference threads to measure, one after the other in this run (comma-separated;
    /// 0 = the config's automatic choice). Without it: the config's `[selfplay]
    /// inference_threads`.
    #[arg(long, value_delimiter = ',')]
    pub inference_threads: Vec<usize>,
    /// Evaluation caches to measure, in MB, one after the other in this run
    /// (comma-separated; 0 = none). Without it: the config's `[selfplay] eval_cache_mb`.
    #[arg(long, value_delimiter = ',')]
    pub eval_cache_mb: Vec<usize>,
}

/// Runs a benchmark on `compute`'s device; `inference` (the global `--inference` flag, if
/// given) picks the forward path.
pub fn run(cmd: BenchCommand, compute: &Compute, inference: Option<InferenceKind>) -> Result<()> {
    match cmd {
        BenchCommand::Nn(a) => bench_nn(&a, compute, inference),
        BenchCommand::Selfplay(a) => bench_selfplay(&a, compute, inference),
        BenchCommand::Train(a) => bench_train(&a, compute),
        BenchCommand::Tactics(a) => crate::tactics_cmd::run(&a, compute),
        BenchCommand::Search(a) => crate::bench_search::run(a, compute),
    }
}

/// Each position's legal moves, as the search passes them.
fn legal_moves(positions: &[Position]) -> Vec<Vec<bredon_rules::Move>> {
    positions.iter().map(|p| p.legal_moves()).collect()
}

/// Positions per second of `engine` at `batch` for about `seconds`, each pass giving what
/// the search uses (priors over the legal moves, the value).
fn forward_rate(engine: &Engine, positions: &[Position], batch: usize, seconds: f64) -> f64 {
    let refs: Vec<&Position> = positions.iter().collect();
    let legal = legal_moves(positions);
    let legal: Vec<&[bredon_rules::Move]> = legal.iter().map(|m| m.as_slice()).collect();
    let batch = batch.max(1).min(refs.len());
    // Warm up (allocations, thread pool).
    let _ = engine.evaluate(&refs[..batch], &legal[..batch]);
    let start = Instant::now();
    let mut done = 0usize;
    let mut i = 0usize;
    while start.elapsed().as_secs_f64() < seconds || done == 0 {
        let lo = (i * batch) % (refs.len() - batch + 1);
        let _ = engine.evaluate(&refs[lo..lo + batch], &legal[lo..lo + batch]);
        done += batch;
        i += 1;
    }
    done as f64 / start.elapsed().as_secs_f64()
}

/// [`forward_rate`] of the WGSL kernels with two passes in flight, as the batching service
/// runs them: the next pass is encoded and launched before the previous one is read back.
#[cfg(feature = "wgpu")]
fn pipelined_rate(
    net: &bredon_kernels::wgsl::WgslNet,
    positions: &[Position],
    batch: usize,
    seconds: f64,
) -> Result<f64> {
    let refs: Vec<&Position> = positions.iter().collect();
    let legal = legal_moves(positions);
    let legal: Vec<&[bredon_rules::Move]> = legal.iter().map(|m| m.as_slice()).collect();
    let batch = batch.max(1).min(refs.len());
    let at = |i: usize| (i * batch) % (refs.len() - batch + 1);
    let launch = |i: usize| net.launch(&refs[at(i)..at(i) + batch], Some(&legal[at(i)..at(i) + batch]));
    launch(0)?.finish()?;
    let start = Instant::now();
    let mut in_flight = launch(1)?;
    let mut done = 0usize;
    let mut i = 2;
    while start.elapsed().as_secs_f64() < seconds || done == 0 {
        let next = launch(i)?;
        in_flight.finish()?;
        in_flight = next;
        done += batch;
        i += 1;
    }
    in_flight.finish()?;
    done += batch;
    Ok(done as f64 / start.elapsed().as_secs_f64())
}

/// A `[net]` choice (`PolicyHead`, `ValueHead`) by the name a config file gives it.
fn parse_net_choice<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, String> {
    T::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(s)).map_err(|e| e.to_string())
}

fn bench_nn(args: &NnArgs, compute: &Compute, inference: Option<InferenceKind>) -> Result<()> {
    let device = &compute.device;
    let kinds = match inference {
        Some(k) => vec![k],
        None if InferenceKind::WGSL.resolve_for(device) == InferenceKind::WGSL => {
            vec![InferenceKind::Fast, InferenceKind::Burn, InferenceKind::WGSL]
        }
        None => vec![InferenceKind::Fast, InferenceKind::Burn],
    };
    let models: Vec<(TakNet, bredon_netform::ModelMeta)> = match &args.model {
        Some(path) => {
            let (model, meta) =
                bredon_nn::load_exported(path).with_context(|| format!("loading {}", path.display()))?;
            vec![(compute.place(model), meta)]
        }
        None => args
            .sizes
            .iter()
            .flat_map(|&size| {
                let pools = if args.compare_global_pool { vec![false, true] } else { vec![args.global_pool] };
                pools.into_iter().map(move |pool| (size, pool))
            })
            .map(|(size, pool)| {
                let mut net = NetConfig::default_for_size(size);
                if let Some(b) = args.blocks {
                    net.blocks = b;
                }
                if let Some(c) = args.channels {
                    net.channels = c;
                }
                if let Some(h) = args.policy_head {
                    net.policy_head = h;
                }
                if let Some(f) = args.policy_filters {
                    net.policy_filters = f;
                }
                net.global_pool = pool;
                if let Some(g) = args.gpool_channels {
                    net.gpool_channels = g;
                }
                if let Some(v) = args.value_head {
                    net.value_head = v;
                }
                if let Some(f) = args.value_filters {
                    net.value_filters = f;
                }
                let meta = bredon_netform::ModelMeta::new(&net, 0, 0, 0);
                meta.check().context("the network options")?;
                Ok((TakNet::new(&net, device), meta))
            })
            .collect::<Result<_>>()?,
    };
    if let Some(out) = &args.onnx {
        let [(model, meta)] = models.as_slice() else {
            anyhow::bail!("--onnx needs exactly one network (one --sizes value or --model)");
        };
        bredon_onnx::export_onnx(&model.fold(meta.size), meta, out)
            .with_context(|| format!("writing {}", out.display()))?;
        println!("# wrote {}", out.display());
    }
    let isa = bredon_kernels::fast::Isa::detect().name();
    print!("{:<6} {:<18} {:>6}", "size", "net", "batch");
    for k in &kinds {
        print!(" {:>12}", format!("{k}/s"));
    }
    let wgsl = kinds.iter().any(|k| k.is_wgsl());
    if wgsl {
        print!(" {:>12}", "wgsl x2/s");
    }
    if kinds.len() == 2 {
        print!(" {:>10}", "fast/burn");
    }
    println!(
        "    (positions/s; fast kernels on the CPU: {isa}; burn{} on {})",
        if wgsl { " and wgsl (x2: two passes in flight)" } else { "" },
        compute.choice
    );
    let most = args.batches.iter().copied().max().unwrap_or(1).max(1024);
    let mut breakdown = Vec::new();
    for (model, meta) in &models {
        let size = meta.size;
        let positions = random_positions(size, most, size as u64);
        let engines: Vec<Engine> = kinds.iter().map(|&k| Engine::new(model.clone(), size, k)).collect();
        for &batch in &args.batches {
            print!("{:<6} {:<18} {:>6}", format!("{size}x{size}"), meta.net.name(), batch);
            let rates: Vec<f64> = engines.iter().map(|e| forward_rate(e, &positions, batch, args.seconds)).collect();
            for r in &rates {
                print!(" {r:>12.0}");
            }
            #[cfg(feature = "wgpu")]
            for e in &engines {
                if let Engine::Wgsl(net) = e {
                    print!(" {:>12.0}", pipelined_rate(net, &positions, batch, args.seconds)?);
                }
            }
            if rates.len() == 2 {
                print!(" {:>9.2}x", rates[0] / rates[1]);
            }
            println!();
            if kinds.contains(&InferenceKind::Burn) {
                for readback in [PolicyReadback::Logits, PolicyReadback::LegalPriors] {
                    let t = pass_times(
                        &|refs, legal| {
                            bredon_infer::forward_timed(model, refs, legal, size, readback)
                                .map(|(_, t)| t)
                                .map_err(|e| anyhow::anyhow!("the device failed: {e}"))
                        },
                        &positions,
                        batch,
                        args.seconds,
                    )?;
                    breakdown.push((size, meta.net.name(), batch, format!("burn {readback}"), t));
                }
            }
            #[cfg(feature = "wgpu")]
            for e in &engines {
                if let Engine::Wgsl(net) = e {
                    let t = pass_times(
                        &|refs, legal| Ok(net.evaluate_timed(refs, legal)?.1),
                        &positions,
                        batch,
                        args.seconds,
                    )?;
                    breakdown.push((size, meta.net.name(), batch, "wgsl priors".to_string(), t));
                }
            }
        }
    }
    #[cfg(feature = "wgpu")]
    let arithmetics = if kinds.iter().any(|k| k.is_wgsl()) { wgsl_arithmetics(args, &models)? } else { Vec::new() };
    if !breakdown.is_empty() {
        println!(
            "# on {}, one pass phase by phase (the device synchronised after each; ms per pass): burn reading back \
             every logit or only the legal moves' priors (computed on the device, as the self-play service does), \
             and the wgsl kernels (priors on the device):",
            compute.choice
        );
        println!(
            "{:<6} {:<18} {:>6} {:>18} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>12}",
            "size",
            "net",
            "batch",
            "policy",
            "encode",
            "upload",
            "kernels",
            "readback",
            "convert",
            "total",
            "positions/s"
        );
        let ms = |d: std::time::Duration| format!("{:.2}", d.as_secs_f64() * 1e3);
        for (size, net, batch, readback, t) in breakdown {
            let rate = batch as f64 / t.total().as_secs_f64().max(1e-9);
            println!(
                "{:<6} {:<18} {:>6} {:>18} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>12.0}",
                format!("{size}x{size}"),
                net,
                batch,
                readback,
                ms(t.encode),
                ms(t.upload),
                ms(t.kernels),
                ms(t.readback),
                ms(t.convert),
                ms(t.total()),
                rate
            );
        }
    }
    if args.compare_cpu {
        let cpu = bredon_nn::device::cpu();
        println!(
            "# every head on {} against the CPU (largest |a - b| / max(|a|, 1) over 256 positions):",
            compute.choice
        );
        for (model, meta) in &models {
            let positions = random_positions(meta.size, 256, 17);
            let refs: Vec<&Position> = positions.iter().collect();
            let diffs = bredon_nn::compare_devices(model, &cpu, &refs, meta.size)?;
            let worst = diffs.iter().map(|d| d.max_difference).fold(0.0f32, f32::max);
            print!("{}x{} {}:", meta.size, meta.size, meta.net.name());
            for d in &diffs {
                print!(" {} {:.1e}{}", d.head, d.max_difference, if d.near_zero { " (all near zero)" } else { "" });
            }
            println!(" -> {}", if worst <= 1e-3 { "within 1e-3" } else { "ABOVE 1e-3" });
            if let Some(&wgsl) = kinds.iter().find(|k| k.is_wgsl()) {
                let fast = Engine::new(model.clone(), meta.size, InferenceKind::Fast);
                compare_wgsl(&fast, &Engine::new(model.clone(), meta.size, wgsl), "", meta.size, &refs);
                #[cfg(feature = "wgpu")]
                for (_, arithmetic, engine) in arithmetics.iter().filter(|(m, ..)| *m == meta.net.name()) {
                    compare_wgsl(&fast, engine, arithmetic.name(), meta.size, &refs);
                }
            }
        }
    }
    Ok(())
}

/// The WGSL kernels in each arithmetic of `args.arithmetic` (by default every one the
/// adapter runs), side by side: positions/s at each batch, one pass at a time and two in
/// flight. Returns the networks built, for `--compare-cpu`.
#[cfg(feature = "wgpu")]
fn wgsl_arithmetics(
    args: &NnArgs,
    models: &[(TakNet, bredon_netform::ModelMeta)],
) -> Result<Vec<(String, bredon_kernels::Arithmetic, Engine)>> {
    use bredon_kernels::Arithmetic;
    let list = if args.arithmetic.is_empty() { Arithmetic::ALL.to_vec() } else { args.arithmetic.clone() };
    let mut built = Vec::new();
    println!(
        "# the wgsl kernels by the arithmetic of the trunk (positions/s, priors on the device; x2: two passes in flight):"
    );
    println!("{:<6} {:<18} {:>6} {:>10} {:>12} {:>12}", "size", "net", "batch", "arithmetic", "wgsl/s", "wgsl x2/s");
    for (model, meta) in models {
        let size = meta.size;
        let single = bredon_infer::gpu::wgsl_for_model(model, size, Arithmetic::DEFAULT)?;
        let positions = random_positions(size, args.batches.iter().copied().max().unwrap_or(1).max(1024), size as u64);
        let probe: Vec<&Position> = positions.iter().take(64).collect();
        for &a in &list {
            let net = match bredon_infer::gpu::wgsl_for_model(model, size, a) {
                Ok(net) => net,
                Err(e @ bredon_kernels::wgsl::WgslError::NotOnAdapter { .. }) => {
                    let at = format!("{size}x{size}");
                    println!("{at:<6} {:<18} {:>6} {:>10}   ({e})", meta.net.name(), "-", a.name());
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let verdict = if a == single.arithmetic() {
                "   (auto)".to_string()
            } else {
                match net.agrees_with(&single, &probe) {
                    Ok(()) => format!("   (priors and values within 1e-3 of {})", single.arithmetic().name()),
                    Err(why) => format!("   (DISAGREES: {why})"),
                }
            };
            let engine = Engine::Wgsl(Box::new(net));
            let Engine::Wgsl(net) = &engine else { unreachable!("a wgsl engine") };
            for &batch in &args.batches {
                let x1 = forward_rate(&engine, &positions, batch, args.seconds);
                let x2 = pipelined_rate(net, &positions, batch, args.seconds)?;
                let at = format!("{size}x{size}");
                println!("{at:<6} {:<18} {batch:>6} {:>10} {x1:>12.0} {x2:>12.0}{verdict}", meta.net.name(), a.name());
            }
            built.push((meta.net.name(), a, engine));
        }
    }
    Ok(built)
}

/// The WGSL kernels' outputs against the CPU's fast path on `positions`: the largest
/// difference (relative above 1) of every policy logit, the value, the draw probability
/// and the flat margin.
fn compare_wgsl(fast: &Engine, wgsl: &Engine, arithmetic: &str, size: usize, positions: &[&Position]) {
    let fast = fast.forward_wdl(positions);
    let gpu = wgsl.forward_wdl(positions);
    let worst =
        |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| (x - y).abs() / x.abs().max(1.0)).fold(0.0f32, f32::max);
    let mut heads = vec![("policy", worst(&fast.logits, &gpu.logits)), ("value", worst(&fast.values, &gpu.values))];
    if let (Some(a), Some(b)) = (&fast.draws, &gpu.draws) {
        heads.push(("draw", worst(a, b)));
    }
    if let (Some(a), Some(b)) = (&fast.margins, &gpu.margins) {
        heads.push(("margin", worst(a, b)));
    }
    let name = if arithmetic.is_empty() { String::new() } else { format!(" {arithmetic}") };
    print!("{size}x{size} wgsl{name} against the fast path:");
    for (head, d) in &heads {
        print!(" {head} {d:.1e}");
    }
    let most = heads.iter().map(|h| h.1).fold(0.0f32, f32::max);
    println!(" -> {}", if most <= 1e-3 { "within 1e-3" } else { "ABOVE 1e-3" });
}

/// The mean phase times of a timed forward pass (`timed` of the positions and their legal
/// moves) at `batch`, over about `seconds` (at least three passes after a warm-up).
type TimedPass<'a> = dyn Fn(&[&Position], &[&[bredon_rules::Move]]) -> Result<bredon_kernels::PassTimes> + 'a;

fn pass_times(
    timed: &TimedPass<'_>,
    positions: &[Position],
    batch: usize,
    seconds: f64,
) -> Result<bredon_kernels::PassTimes> {
    let refs: Vec<&Position> = positions.iter().collect();
    let legal = legal_moves(positions);
    let legal: Vec<&[bredon_rules::Move]> = legal.iter().map(|m| m.as_slice()).collect();
    let batch = batch.max(1).min(refs.len());
    let pass = |i: usize| {
        let lo = (i * batch) % (refs.len() - batch + 1);
        timed(&refs[lo..lo + batch], &legal[lo..lo + batch])
    };
    pass(0)?;
    let start = Instant::now();
    let (mut sum, mut n) = (bredon_kernels::PassTimes::default(), 0u32);
    while n < 3 || start.elapsed().as_secs_f64() < seconds / 2.0 {
        sum += pass(n as usize + 1)?;
        n += 1;
    }
    Ok(sum.per(n))
}

fn bench_selfplay(args: &SelfPlayArgs, compute: &Compute, inference: Option<InferenceKind>) -> Result<()> {
    let mut cfg = RunConfig::load(&args.config).with_context(|| format!("loading {}", args.config.display()))?;
    if let Some(k) = inference {
        cfg.selfplay.inference = k;
    }
    let learner = match &args.model {
        Some(path) => {
            Learner::from_model_file(&cfg, path, compute).with_context(|| format!("loading {}", path.display()))?.0
        }
        None => Learner::new(&cfg, cfg.schedule.seed, compute)?,
    };
    let settings = if args.inference_threads.is_empty() {
        vec![cfg.selfplay.inference_threads]
    } else {
        args.inference_threads.clone()
    };
    let caches =
        if args.eval_cache_mb.is_empty() { vec![cfg.selfplay.eval_cache_mb] } else { args.eval_cache_mb.clone() };
    for threads in settings {
        cfg.selfplay.inference_threads = threads;
        for &mb in &caches {
            cfg.selfplay.eval_cache_mb = mb;
            bench_selfplay_once(args, &cfg, &learner)?;
        }
    }
    Ok(())
}

fn bench_selfplay_once(args: &SelfPlayArgs, cfg: &RunConfig, learner: &Learner) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let shards = cfg.selfplay.inference_shards(&learner.model().device());
    let (evaluator, service) = learner.start_inference(cfg.selfplay.max_inference_batch, shards)?;
    let job = SelfPlayJob {
        options: cfg.game.options(),
        search: cfg.search.clone(),
        selfplay: cfg.selfplay.clone(),
        model: "bench".into(),
        seed: cfg.schedule.seed,
        stored_games: Arc::from(Vec::new()),
    };
    let stop = Arc::new(AtomicBool::new(false));
    if let Some(limit) = args.max_seconds {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs_f64(limit.max(0.0)));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }
    let start = Instant::now();
    let mut plies = 0usize;
    let report = run_pool(&job, evaluator, dir.path(), args.games, 0, &stop, |g| plies += g.plies)?;
    let games = report.stored;
    let secs = start.elapsed().as_secs_f64();
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        println!("(stopped after {secs:.0} s by --max-seconds: games/h counts the {games} finished games only)");
    }
    let evals = service.evaluations();
    let batches = service.batches().max(1);
    let times = service.times();
    service.shutdown();
    let avg_batch = evals as f64 / batches as f64;
    let size = cfg.game.size;
    let positions = random_positions(size, 1024, 7);
    let engine = Engine::new(learner.model(), size, cfg.selfplay.inference);
    let raw = forward_rate(&engine, &positions, avg_batch.round().max(1.0) as usize, args.seconds);
    let sp_rate = evals as f64 / secs;
    println!(
        "self-play {size}x{size} {} ({} inference, {shards} inference thread(s), evaluation cache {} MB): {games} games, {plies} plies in {secs:.1} s = {:.0} games/h",
        learner.describe(),
        cfg.selfplay.inference,
        cfg.selfplay.eval_cache_mb,
        games as f64 / secs * 3600.0
    );
    println!("  {evals} evaluations in {batches} batches (average batch {avg_batch:.1}): {sp_rate:.0} evals/s");
    if report.cache.lookups > 0 {
        println!(
            "  evaluation cache: {} of {} lookups answered from memory ({:.1}%)",
            report.cache.hits,
            report.cache.lookups,
            100.0 * report.cache.hit_rate()
        );
    }
    println!("  raw forward at batch {:.0}: {raw:.0} positions/s", avg_batch.round());
    println!("  self-play reaches {:.0}% of the raw forward throughput", 100.0 * sp_rate / raw);
    print_service_times(&times, shards, secs);
    print_host_ceiling(report.search_cpu, &times, evals, learner.model().device());
    Ok(())
}

/// The host's share of self-play, per network evaluation, and the evaluations per second
/// it would allow if the network took no time at all: the most a device can be fed by
/// this host's search threads (which scale with cores) and by one inference thread (a
/// GPU path has one).
fn print_host_ceiling(
    search_cpu: Option<Duration>,
    t: &bredon_infer::ServiceTimes,
    evals: u64,
    device: bredon_nn::Device,
) {
    let Some(cpu) = search_cpu else {
        println!("  host ceiling: this platform has no per-thread CPU clock");
        return;
    };
    let us = |d: Duration| d.as_secs_f64() * 1e6 / evals.max(1) as f64;
    let search = us(cpu);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "  host work per network evaluation: {search:.1} us of CPU on the search threads (tree, move generation, tactics, evaluation cache, priors): with a network that took no time, {:.0} evals/s per core of search threads ({:.0} on this machine's {cores}, {:.0} on 16)",
        1e6 / search.max(1e-9),
        cores as f64 * 1e6 / search.max(1e-9),
        16e6 / search.max(1e-9),
    );
    let on_cpu = bredon_nn::device::is_cpu(&device);
    if !on_cpu || t.encode > Duration::ZERO {
        // burn's and the WGSL path: the inference thread's own host work (on a GPU, the
        // upload and launch are host work too; on burn's CPU backend `forward` is the pass).
        let launch = if on_cpu { Duration::ZERO } else { t.forward };
        let service = us(t.gather + t.encode + launch + t.reply);
        println!(
            "  the inference thread's host work per evaluation: {service:.1} us (gather, encode{}, replies): one such thread keeps up with at most {:.0} evals/s",
            if launch > Duration::ZERO { ", upload and launch" } else { "" },
            1e6 / service.max(1e-9)
        );
    }
}

/// Where the inference service's time went, per pass and per request (no waits added).
fn print_service_times(t: &bredon_infer::ServiceTimes, shards: usize, secs: f64) {
    let per = |d: std::time::Duration, n: u64| format!("{:.3} ms", d.as_secs_f64() * 1e3 / n.max(1) as f64);
    let busy = (t.encode + t.forward + t.readback).as_secs_f64() / (secs * shards as f64).max(1e-9);
    println!(
        "  per pass: gathering {}, encode {}, forward {} (on a device: upload and launch), readback {} (on a device: waiting for it and reading), replies {}",
        per(t.gather, t.batches),
        per(t.encode, t.batches),
        per(t.forward, t.batches),
        per(t.readback, t.batches),
        per(t.reply, t.batches),
    );
    println!(
        "  per request ({} requests, {:.1} positions each): round trip {}, convert {} on the search thread; the inference thread(s) ran passes {:.0}% of the time",
        t.requests,
        t.positions as f64 / t.requests.max(1) as f64,
        per(t.round_trip, t.requests),
        per(t.convert, t.requests),
        100.0 * busy
    );
}

/// Arguments of `bredon bench train`.
#[derive(clap::Args, Debug)]
pub struct TrainArgs {
    /// A run config whose `[game]`, `[net]` and `[train]` optimiser settings are used
    /// (otherwise the default net of `--size`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Board size without `--config`.
    #[arg(long, default_value_t = 4)]
    pub size: usize,
    /// Train this exported model (`.bredon`) instead of a fresh network: its network
    /// replaces the config's, so trained weights (and their tiny values) are measured.
    #[arg(long, conflicts_with_all = ["size", "blocks", "channels"])]
    pub model: Option<PathBuf>,
    /// Override the residual blocks.
    #[arg(long)]
    pub blocks: Option<usize>,
    /// Override the channels.
    #[arg(long)]
    pub channels: Option<usize>,
    /// Samples per training step.
    #[arg(long, default_value_t = 256)]
    pub batch: usize,
    /// Seconds to measure (after one warm-up step).
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// First train a copy of the same weights on the CPU for three steps of the same
    /// batches beside `--device`, and print both steps' losses (the wgpu tests' bound:
    /// within 1e-3, relative for the policy).
    #[arg(long)]
    pub compare_cpu: bool,
    /// How the step computes the convolutions: `auto` (matrix products on a GPU device,
    /// burn's `conv2d` on the CPU), `direct` (burn's `conv2d`) or `matmul`.
    #[arg(long, default_value = "auto")]
    pub convolutions: Convolutions,
}

fn bench_train(args: &TrainArgs, compute: &Compute) -> Result<()> {
    let (mut net, settings) = match &args.config {
        Some(path) => {
            let cfg = RunConfig::load(path).with_context(|| format!("loading {}", path.display()))?;
            (bredon_selfplay::net::net_config(&cfg), bredon_selfplay::net::optimizer_settings(&cfg))
        }
        None => (NetConfig::default_for_size(args.size), OptimizerSettings::default()),
    };
    if let Some(b) = args.blocks {
        net.blocks = b;
    }
    if let Some(c) = args.channels {
        net.channels = c;
    }
    let mut trainer = match &args.model {
        Some(path) => {
            let (model, meta) =
                bredon_nn::load_exported(path).with_context(|| format!("loading {}", path.display()))?;
            net = meta.net;
            Trainer::from_model_on(&net, model, settings.clone(), &compute.device)?
        }
        None => Trainer::new_on(&net, settings.clone(), 1, &compute.device)?,
    };
    trainer.set_convolutions(args.convolutions);
    let size = net.size;
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let examples: Vec<TrainExample> = random_positions(size, 4 * args.batch.max(1), 3)
        .into_iter()
        .map(|position| {
            let moves = position.legal_moves();
            let policy = moves.iter().take(8).map(|&m| (m, 1.0 / moves.len().min(8) as f32)).collect();
            // Targets for the auxiliary heads too, so their cost is measured.
            let aux = bredon_nn::train::AuxTargets {
                flat_margin: Some(rng.random_range(-0.5..=0.5)),
                ownership: Some((0..size * size).map(|_| rng.random_range(-1..=1) as f32).collect()),
                opponent_policy: Some(vec![(moves[0], 1.0)]),
            };
            TrainExample { policy, value: rng.random_range(-1.0..=1.0), wdl: None, position, aux }
        })
        .collect();
    let batch = args.batch.max(1);
    let lr = 1e-3;
    if args.compare_cpu {
        // The reference: burn's own convolutions on the CPU.
        let mut cpu = Trainer::from_model_on(&net, trainer.model(), settings.clone(), &bredon_nn::device::cpu())?;
        cpu.set_convolutions(Convolutions::Direct);
        let mut device = Trainer::from_model_on(&net, trainer.model(), settings, &compute.device)?;
        device.set_convolutions(args.convolutions);
        println!(
            "# three steps of the same batches on {} and on the CPU (losses: policy, value, total)",
            compute.choice
        );
        for step in 0..3 {
            let lo = (step * batch) % (examples.len() - batch + 1);
            let (a, b) = (cpu.step(&examples[lo..lo + batch], lr)?, device.step(&examples[lo..lo + batch], lr)?);
            let agree =
                (a.policy - b.policy).abs() < 1e-3 * a.policy.abs().max(1.0) && (a.value - b.value).abs() < 1e-3;
            println!(
                "step {step}: cpu {:.5} {:.5} {:.5} | {} {:.5} {:.5} {:.5} -> {}",
                a.policy,
                a.value,
                a.total,
                compute.choice,
                b.policy,
                b.value,
                b.total,
                if agree { "within 1e-3" } else { "ABOVE 1e-3" }
            );
        }
    }
    trainer.step(&examples[..batch], lr)?;
    let start = Instant::now();
    let (mut samples, mut i) = (0usize, 0usize);
    while start.elapsed().as_secs_f64() < args.seconds || samples == 0 {
        let lo = (i * batch) % (examples.len() - batch + 1);
        trainer.step(&examples[lo..lo + batch], lr)?;
        samples += batch;
        i += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "train {size}x{size} {} on {}{}, {} convolutions: {i} steps of {batch} in {secs:.1} s = {:.0} samples/s ({:.1} steps/s)",
        net.name(),
        compute.choice,
        fusion_note(compute),
        trainer.convolutions().name(),
        samples as f64 / secs,
        i as f64 / secs
    );
    print_step_phases(&mut trainer, &examples, batch, lr, args.seconds / 4.0)
}

/// " (burn fusion)" for a GPU device in a `wgpu-fusion` build, else nothing.
fn fusion_note(compute: &Compute) -> &'static str {
    if bredon_nn::device::BURN_FUSION && !bredon_nn::device::is_cpu(&compute.device) { " (burn fusion)" } else { "" }
}

/// Where a training step's time goes: steps with the device waited for after each
/// [`StepPhase`] (at least 3, up to 20, for about `seconds`), each phase's wall time, the
/// calling thread's CPU time in it and the whole process's. The calling thread builds the
/// autodiff graph and hands every kernel to burn's GPU runtime, whose server thread
/// encodes and submits it: on a GPU a phase whose process CPU time is near its wall time
/// is bound by the host issuing kernels, not by the device running them (on the CPU and
/// on lavapipe the process's time includes the arithmetic itself).
fn print_step_phases(
    trainer: &mut Trainer,
    examples: &[TrainExample],
    batch: usize,
    lr: f64,
    seconds: f64,
) -> Result<()> {
    let n = StepPhase::ALL.len();
    // Per phase: wall, calling thread, process.
    let mut total = vec![[Duration::ZERO; 3]; n];
    let clocks = || [thread_cpu_time(), process_cpu_time()];
    let (mut steps, start) = (0usize, Instant::now());
    while steps < 3 || (steps < 20 && start.elapsed().as_secs_f64() < seconds) {
        let lo = (steps * batch) % (examples.len() - batch + 1);
        let (mut since, mut cpu_since) = (Instant::now(), clocks());
        let outcome = trainer.try_step_probed(&examples[lo..lo + batch], lr, &mut |phase| {
            let (now, cpu) = (Instant::now(), clocks());
            let at = StepPhase::ALL.iter().position(|&p| p == phase).expect("a phase of ALL");
            total[at][0] += now - since;
            for k in 0..2 {
                if let (Some(a), Some(b)) = (cpu[k], cpu_since[k]) {
                    total[at][k + 1] += a.saturating_sub(b);
                }
            }
            (since, cpu_since) = (now, cpu);
        })?;
        // A skipped step stops the benchmark, so its partial phases are never printed.
        if let StepOutcome::Skipped(why) = outcome {
            anyhow::bail!("a timed training step was skipped: {why}");
        }
        steps += 1;
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3 / steps as f64;
    let have_clocks = clocks().iter().all(Option::is_some);
    println!(
        "step phases: the device waited for after each, mean of {steps} steps of {batch} (ms; thread = the calling thread's CPU time, process = every thread's)"
    );
    let row = |name: &str, t: [Duration; 3]| {
        if have_clocks {
            format!("  {name:<9} {:>9.2} wall {:>9.2} thread {:>9.2} process", ms(t[0]), ms(t[1]), ms(t[2]))
        } else {
            format!("  {name:<9} {:>9.2} wall", ms(t[0]))
        }
    };
    for (phase, t) in StepPhase::ALL.iter().zip(&total) {
        println!("{}", row(phase.name(), *t));
    }
    let sum = total.iter().fold([Duration::ZERO; 3], |mut acc, t| {
        for k in 0..3 {
            acc[k] += t[k];
        }
        acc
    });
    println!(
        "{} ({:.0} samples/s with the waits)",
        row("step", sum),
        (steps * batch) as f64 / sum[0].as_secs_f64().max(1e-9)
    );
    Ok(())
}
