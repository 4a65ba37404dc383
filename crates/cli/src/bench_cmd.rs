//! `bredon bench`: throughput reports for the network and for self-play. The flags are
//! parsed here and the reports printed; `bredon_bench` measures.

use anyhow::{Context, Result};
use bredon_bench::selfplay::{HostCeiling, SelfPlayReport};
use bredon_bench::train;
use bredon_infer::{Compute, InferenceKind};
use bredon_netform::NetConfig;
use bredon_nn::train::OptimizerSettings;
use bredon_nn::{Convolutions, TakNet, Trainer};
use bredon_selfplay::config::RunConfig;
use bredon_selfplay::net::Learner;
use std::path::PathBuf;

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
    /// Also measure each fast CPU path with this many batches in flight, each on its own
    /// core with its own copy of the network, as self-play runs them (a peer's
    /// throughput mode; the main columns are one call at a time over all cores). 0 (the
    /// default) = one per core of the pool (`RAYON_NUM_THREADS`, else the cores); 1 = off.
    #[arg(long, default_value_t = 0)]
    pub streams: usize,
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

/// A `[net]` choice (`PolicyHead`, `ValueHead`) by the name a config file gives it.
fn parse_net_choice<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, String> {
    T::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(s)).map_err(|e| e.to_string())
}

fn bench_nn(args: &NnArgs, compute: &Compute, inference: Option<InferenceKind>) -> Result<()> {
    let device = &compute.device;
    let kinds = bredon_bench::nn::kinds(inference, device);
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
    let streams = if args.streams == 0 {
        bredon_infer::auto_shards(InferenceKind::FAST, &bredon_nn::device::cpu())
    } else {
        args.streams
    };
    let fast_kinds: Vec<&InferenceKind> = kinds.iter().filter(|k| matches!(k, InferenceKind::Fast(_))).collect();
    if streams > 1 {
        for k in &fast_kinds {
            print!(" {:>14}", format!("{k} x{streams}/s"));
        }
    }
    if kinds.len() == 2 {
        print!(" {:>10}", "fast/burn");
    }
    let low: Vec<String> = bredon_kernels::Precision::ALL
        .iter()
        .filter(|p| **p != bredon_kernels::Precision::F32)
        .map(|p| if p.is_native() { format!("{p} on {}", p.units()) } else { format!("no {p} units") })
        .collect();
    let low = low.join(", ");
    println!(
        "    (positions/s; fast kernels on the CPU: {isa}, {low}; burn{} on {}{})",
        if wgsl { " and wgsl (x2: two passes in flight)" } else { "" },
        compute.choice,
        if streams > 1 && !fast_kinds.is_empty() {
            "; fast xN: N batches in flight, one a core, as self-play runs them".to_string()
        } else {
            String::new()
        }
    );
    let breakdown =
        bredon_bench::nn::forward_table(&models, &kinds, &args.batches, args.seconds, streams, &mut |row| {
            print!("{:<6} {:<18} {:>6}", format!("{0}x{0}", row.size), row.net, row.batch);
            for r in row.rates.iter().chain(&row.pipelined) {
                print!(" {r:>12.0}");
            }
            for r in &row.streams {
                print!(" {r:>14.0}");
            }
            if row.rates.len() == 2 {
                print!(" {:>9.2}x", row.rates[0] / row.rates[1]);
            }
            let renamed: Vec<String> =
                kinds.iter().zip(&row.ran).filter(|(k, r)| k != r).map(|(k, r)| format!("{k} ran as {r}")).collect();
            if !renamed.is_empty() {
                print!("    ({})", renamed.join(", "));
            }
            println!();
        })?;
    #[cfg(feature = "wgpu")]
    let arithmetics = if wgsl { wgsl_arithmetics(args, &models)? } else { Vec::new() };
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
        for row in &breakdown {
            let t = &row.times;
            println!(
                "{:<6} {:<18} {:>6} {:>18} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>12.0}",
                format!("{0}x{0}", row.size),
                row.net,
                row.batch,
                row.policy,
                ms(t.encode),
                ms(t.upload),
                ms(t.kernels),
                ms(t.readback),
                ms(t.convert),
                ms(t.total()),
                row.rate()
            );
        }
    }
    if args.compare_cpu {
        println!(
            "# every head on {} against the CPU (largest |a - b| / max(|a|, 1) over 256 positions):",
            compute.choice
        );
        let wgsl = kinds.iter().copied().find(|k| k.is_wgsl());
        for (index, (model, meta)) in models.iter().enumerate() {
            #[cfg(feature = "wgpu")]
            let built: Vec<_> =
                arithmetics.iter().filter(|a| a.model == index).map(|a| (a.arithmetic, &a.engine)).collect();
            #[cfg(not(feature = "wgpu"))]
            let built = {
                let _ = index;
                Vec::new()
            };
            let c = bredon_bench::compare::compare_with_cpu(model, meta.size, wgsl, &built)?;
            print!("{}x{} {}:", meta.size, meta.size, meta.net.name());
            for d in &c.heads {
                print!(" {} {:.1e}{}", d.head, d.max_difference, if d.near_zero { " (all near zero)" } else { "" });
            }
            println!(" -> {}", within(c.worst()));
            for w in &c.wgsl {
                let name = w.arithmetic.map(|a| format!(" {}", a.name())).unwrap_or_default();
                print!("{0}x{0} wgsl{name} against the fast path:", meta.size);
                for (head, d) in &w.heads {
                    print!(" {head} {d:.1e}");
                }
                println!(" -> {}", within(w.worst()));
            }
        }
    }
    Ok(())
}

/// The verdict on a largest difference: the wgpu tests' bound is 1e-3.
fn within(worst: f32) -> &'static str {
    if worst <= 1e-3 { "within 1e-3" } else { "ABOVE 1e-3" }
}

/// The WGSL kernels in each arithmetic of `args.arithmetic` (by default every one the
/// adapter runs), side by side: positions/s at each batch, one pass at a time and two in
/// flight. Returns the kernels built, for `--compare-cpu`.
#[cfg(feature = "wgpu")]
fn wgsl_arithmetics(
    args: &NnArgs,
    models: &[(TakNet, bredon_netform::ModelMeta)],
) -> Result<Vec<bredon_bench::arithmetic::ArithmeticEngine>> {
    use bredon_bench::arithmetic::{ArithmeticRow, Verdict};
    println!(
        "# the wgsl kernels by the arithmetic of the trunk (positions/s, priors on the device; x2: two passes in flight):"
    );
    println!("{:<6} {:<18} {:>6} {:>10} {:>12} {:>12}", "size", "net", "batch", "arithmetic", "wgsl/s", "wgsl x2/s");
    let list = bredon_bench::arithmetic::arithmetics(&args.arithmetic);
    let built =
        bredon_bench::arithmetic::arithmetic_table(models, &list, &args.batches, args.seconds, &mut |row| match row {
            ArithmeticRow::Unavailable { size, net, arithmetic, reason } => {
                let at = format!("{size}x{size}");
                println!("{at:<6} {net:<18} {:>6} {:>10}   ({reason})", "-", arithmetic.name());
            }
            ArithmeticRow::Rates { size, net, batch, arithmetic, single, pipelined, verdict } => {
                let verdict = match verdict {
                    Verdict::Auto => "   (auto)".to_string(),
                    Verdict::Agrees(a) => format!("   (priors and values within 1e-3 of {})", a.name()),
                    Verdict::Disagrees(why) => format!("   (DISAGREES: {why})"),
                };
                let at = format!("{size}x{size}");
                println!(
                    "{at:<6} {net:<18} {batch:>6} {:>10} {single:>12.0} {pipelined:>12.0}{verdict}",
                    arithmetic.name()
                );
            }
        })?;
    Ok(built)
}

fn bench_selfplay(args: &SelfPlayArgs, compute: &Compute, inference: Option<InferenceKind>) -> Result<()> {
    let mut cfg = RunConfig::load(&args.config).with_context(|| format!("loading {}", args.config.display()))?;
    if let Some(k) = inference {
        cfg.selfplay.inference = k;
        cfg.selfplay.precision = None;
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
            let report = bredon_bench::selfplay::run(&cfg, &learner, args.games, args.max_seconds, args.seconds)?;
            print_selfplay(&report, &cfg, &learner);
        }
    }
    Ok(())
}

/// One self-play benchmark's lines.
fn print_selfplay(r: &SelfPlayReport, cfg: &RunConfig, learner: &Learner) {
    let (size, shards, games, plies, secs, evals) = (r.size, r.shards, r.games, r.plies, r.secs, r.evals);
    if r.stopped {
        println!("(stopped after {secs:.0} s by --max-seconds: games/h counts the {games} finished games only)");
    }
    let (batches, avg_batch, raw) = (r.batches, r.avg_batch(), r.raw);
    let sp_rate = r.evals_per_s();
    println!(
        "self-play {size}x{size} {} ({} inference, {shards} inference thread(s), evaluation cache {} MB): {games} games, {plies} plies in {secs:.1} s = {:.0} games/h",
        learner.describe(),
        cfg.selfplay.inference_kind(),
        cfg.selfplay.eval_cache_mb,
        r.games_per_hour()
    );
    println!("  {evals} evaluations in {batches} batches (average batch {avg_batch:.1}): {sp_rate:.0} evals/s");
    if r.cache.lookups > 0 {
        println!(
            "  evaluation cache: {} of {} lookups answered from memory ({:.1}%)",
            r.cache.hits,
            r.cache.lookups,
            100.0 * r.cache.hit_rate()
        );
    }
    println!("  raw forward at batch {:.0}: {raw:.0} positions/s", avg_batch.round());
    println!("  self-play reaches {:.0}% of the raw forward throughput", 100.0 * sp_rate / raw);
    print_service_times(r);
    print_host_ceiling(r.host.as_ref());
}

/// The host's share of self-play, per network evaluation, and the evaluations per second
/// it would allow if the network took no time at all.
fn print_host_ceiling(host: Option<&HostCeiling>) {
    let Some(h) = host else {
        println!("  host ceiling: this platform has no per-thread CPU clock");
        return;
    };
    println!(
        "  host work per network evaluation: {:.1} us of CPU on the search threads (tree, move generation, tactics, evaluation cache, priors): with a network that took no time, {:.0} evals/s per core of search threads ({:.0} on this machine's {}, {:.0} on 16)",
        h.search_us, h.per_core, h.on_cores, h.cores, h.on_16,
    );
    if let Some(i) = &h.inference {
        println!(
            "  the inference thread's host work per evaluation: {:.1} us (gather, encode{}, replies): one such thread keeps up with at most {:.0} evals/s",
            i.us,
            if i.launch { ", upload and launch" } else { "" },
            i.ceiling
        );
    }
}

/// Where the inference service's time went, per pass and per request (no waits added).
fn print_service_times(r: &SelfPlayReport) {
    let t = &r.times;
    let per = |d: std::time::Duration, n: u64| format!("{:.3} ms", d.as_secs_f64() * 1e3 / n.max(1) as f64);
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
        100.0 * r.busy()
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
    /// How the step computes the convolutions: `auto` (burn's `conv2d`, the faster on the
    /// CPU and on an H200), `direct` (burn's `conv2d`) or `matmul` (matrix products over
    /// channels-last rows).
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
    let batch = args.batch.max(1);
    let examples = train::examples(size, batch);
    if args.compare_cpu {
        println!(
            "# three steps of the same batches on {} and on the CPU (losses: policy, value, total)",
            compute.choice
        );
        let steps =
            train::compare_with_cpu(&net, &trainer, &settings, &compute.device, args.convolutions, &examples, batch)?;
        for (step, s) in steps.iter().enumerate() {
            let (a, b) = (&s.cpu, &s.device);
            println!(
                "step {step}: cpu {:.5} {:.5} {:.5} | {} {:.5} {:.5} {:.5} -> {}",
                a.policy,
                a.value,
                a.total,
                compute.choice,
                b.policy,
                b.value,
                b.total,
                if s.agree() { "within 1e-3" } else { "ABOVE 1e-3" }
            );
        }
    }
    let rate = train::train_rate(&mut trainer, &examples, batch, args.seconds)?;
    println!(
        "train {size}x{size} {} on {}{}, {} convolutions: {} steps of {batch} in {:.1} s = {:.0} samples/s ({:.1} steps/s)",
        net.name(),
        compute.choice,
        fusion_note(compute),
        trainer.convolutions().name(),
        rate.steps,
        rate.secs,
        rate.samples_per_s(),
        rate.steps_per_s()
    );
    print_step_phases(&train::step_phases(&mut trainer, &examples, batch, args.seconds / 4.0)?);
    Ok(())
}

/// " (burn fusion)" for a GPU device in a `wgpu-fusion` build, else nothing.
fn fusion_note(compute: &Compute) -> &'static str {
    if bredon_nn::device::BURN_FUSION && !bredon_nn::device::is_cpu(&compute.device) { " (burn fusion)" } else { "" }
}

/// Where a training step's time went, phase by phase ([`train::step_phases`]).
fn print_step_phases(p: &train::StepPhases) {
    let (steps, batch) = (p.steps, p.batch);
    println!(
        "step phases: the device waited for after each, mean of {steps} steps of {batch} (ms; thread = the calling thread's CPU time, process = every thread's)"
    );
    let row = |name: &str, t: train::PhaseTime| {
        if p.have_clocks {
            format!(
                "  {name:<9} {:>9.2} wall {:>9.2} thread {:>9.2} process",
                p.ms(t.wall),
                p.ms(t.thread),
                p.ms(t.process)
            )
        } else {
            format!("  {name:<9} {:>9.2} wall", p.ms(t.wall))
        }
    };
    for (phase, t) in &p.phases {
        println!("{}", row(phase.name(), *t));
    }
    println!("{} ({:.0} samples/s with the waits)", row("step", p.total()), p.samples_per_s());
}
