//! `bredon`: the command-line front end of Bredon.

mod analyse_cmd;
mod arena_cmd;
mod bench_cmd;
mod bench_search;
mod check_cmd;
mod export_cmd;
mod fit_cmd;
mod heldout_cmd;
mod inspect_cmd;
mod model_arg;
mod perft_cmd;
mod play_cmd;
mod plot_cmd;
mod ptn_cmd;
mod run_arg;
mod serve;
mod tactics_cmd;
mod tei_cmd;
mod train_cmd;

use bredon_infer::{Compute, InferenceKind};
use bredon_nn::DeviceChoice;
use clap::{Parser, Subcommand};

/// Bredon: a Tak engine that teaches itself by self-play.
#[derive(Parser, Debug)]
#[command(name = "bredon", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Forward pass of the network for search (`tei`, `play`, `analyse`, `arena`, `bench`):
    /// `auto` (the default: `fast` on the CPU, `wgsl` on a GPU `--device`), `fast`
    /// (BatchNorm folded, SIMD kernels, CPU), `burn` (the training framework's, on the
    /// device) or `wgsl` (Bredon's own kernels on the GPU, through wgpu; `wgsl:tensor` runs
    /// their trunk on tensor cores, `wgsl:f16-pairs` and `wgsl:f32` name the other
    /// arithmetics, docs/gpu.md). Training runs take it from `[selfplay] inference` in the
    /// config.
    #[arg(long, global = true)]
    inference: Option<bredon_infer::InferenceKind>,
    /// Arithmetic of the CPU fast path's residual blocks (`tei`, `play`, `analyse`,
    /// `serve`, `arena`, `bench`): `auto` (the default: bf16 on the AMX tiles where the
    /// CPU has them, else 8-bit integers where it has AVX-512 VNNI, each only where it
    /// agrees with f32 on the model when it loads; else f32), `f32`, `bf16` or `int8` (on
    /// a CPU without the units it runs in f32, with a warning).
    /// Training runs take it from `[selfplay] precision`.
    #[arg(long, global = true, value_name = "PRECISION")]
    precision: Option<bredon_infer::PrecisionChoice>,
    /// Where the network runs: `cpu` (the default), `wgpu`, `wgpu:N`, `cuda` or `cuda:N`
    /// (GPU backends need a build with `--features wgpu` or `cuda`; `bredon devices`
    /// lists the adapters). For `train` and `selfplay` it overrides the run config's
    /// `[device] name`. Search on a GPU device uses Bredon's WGSL kernels there unless
    /// `--inference burn` or `--inference fast` (the CPU) says otherwise.
    #[arg(long, global = true, value_name = "DEVICE")]
    device: Option<bredon_nn::DeviceChoice>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Count the leaves of the legal move tree (move generator check and benchmark).
    Perft(perft_cmd::PerftArgs),
    /// Train a network from scratch (or resume a run): self-play, train, checkpoint, evaluate.
    Train(train_cmd::TrainArgs),
    /// Train a network on stored self-play games alone, no self-play: arms of a
    /// training-settings comparison on the same data from the same start.
    Fit(fit_cmd::FitArgs),
    /// Only play self-play games into a run directory or curriculum (workers beside a trainer).
    Selfplay(train_cmd::SelfPlayArgs),
    /// Speak the Tak Engine Interface on stdin/stdout (match runners, GUIs), or with
    /// `--listen` over WebSocket (PTN Ninja).
    Tei(tei_cmd::TeiArgs),
    /// Play against the engine in the terminal.
    Play(play_cmd::PlayArgs),
    /// Show the engine's value and best move for every ply of a PTN game; with `--json`,
    /// the JSON analysis engine on stdin/stdout.
    Analyse(analyse_cmd::AnalyseArgs),
    /// Write a checkpoint as one self-contained model file for play.
    Export(export_cmd::ExportArgs),
    /// Play matches between checkpoints, baselines and TEI engines; Elo ratings and plots.
    Arena(arena_cmd::ArenaArgs),
    /// Draw Elo curve tables (`<run>/arena/elo-curve.csv`) as one SVG chart.
    Plot(plot_cmd::PlotArgs),
    /// Measure network and self-play throughput.
    #[command(subcommand)]
    Bench(bench_cmd::BenchCommand),
    /// Verify every file of a run directory or curriculum (checksums, weights, games, logs).
    Check(check_cmd::CheckArgs),
    /// A model's health layer by layer: dead channels, tiny weights, norms (`--json` too).
    Inspect(inspect_cmd::InspectArgs),
    /// Networks judged on games they never trained on (real opponents' PTN games): value
    /// error and bias toward White, policy fit, flat-margin error (`--json` too).
    Heldout(heldout_cmd::HeldOutArgs),
    /// Read, check and display PTN game files.
    #[command(subcommand)]
    Ptn(ptn_cmd::PtnCommand),
    /// Play, analyse and watch training runs in the browser (a local web server).
    Serve(serve::ServeArgs),
    /// List the devices this build can run the network on (GPU adapters with `wgpu`).
    Devices,
}

fn main() {
    let cli = Cli::parse();
    // Training runs read their device from the run config (`--device` overrides it); the
    // other commands open it here, before any model is loaded, and pass it down.
    let trains = matches!(cli.command, Command::Train(_) | Command::Selfplay(_) | Command::Fit(_));
    let inference = match with_precision(cli.inference, cli.precision) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("bredon: error: {e:#}");
            std::process::exit(2);
        }
    };
    let compute = match (cli.device, trains) {
        (Some(choice), false) => match open_compute(choice, inference.unwrap_or_default()) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("bredon: error: {e:#}");
                std::process::exit(1);
            }
        },
        _ => Compute { inference: inference.unwrap_or_default(), ..Compute::cpu() },
    };
    let outcome = match cli.command {
        Command::Perft(args) => perft_cmd::run(args),
        Command::Ptn(cmd) => ptn_cmd::run(cmd),
        Command::Tei(args) => tei_cmd::run(args, &compute),
        Command::Play(args) => play_cmd::run(args, &compute),
        Command::Analyse(args) => analyse_cmd::run(args, &compute),
        Command::Train(_) | Command::Selfplay(_) | Command::Fit(_)
            if cli.inference.is_some() || cli.precision.is_some() =>
        {
            Err(anyhow::anyhow!(
                "training runs take the inference path and precision from `[selfplay] inference` and \
                 `[selfplay] precision` in the run config, not --inference or --precision"
            ))
        }
        Command::Train(args) => train_cmd::run_train(args, cli.device),
        Command::Selfplay(args) => train_cmd::run_selfplay(args, cli.device),
        Command::Fit(args) => fit_cmd::run(args, cli.device),
        Command::Devices => devices(),
        Command::Export(args) => export_cmd::run(args),
        Command::Arena(args) => arena_cmd::run(args, &compute),
        Command::Plot(args) => plot_cmd::run(args),
        Command::Bench(cmd) => bench_cmd::run(cmd, &compute, inference),
        Command::Check(args) => check_cmd::run(args),
        Command::Inspect(args) => inspect_cmd::run(args),
        Command::Heldout(args) => heldout_cmd::run(args, &compute),
        Command::Serve(args) => serve::run(args, &compute),
    };
    if let Err(e) = outcome {
        eprintln!("bredon: error: {e:#}");
        std::process::exit(1);
    }
}

/// `--inference` with `--precision` applied: the fast path's arithmetic for `auto` and
/// `fast`, an error for the passes that have none.
fn with_precision(
    inference: Option<InferenceKind>,
    precision: Option<bredon_infer::PrecisionChoice>,
) -> anyhow::Result<Option<InferenceKind>> {
    let Some(p) = precision else { return Ok(inference) };
    let kind = inference.unwrap_or_default();
    match kind.with_precision(p) {
        Some(k) => Ok(Some(k)),
        None => Err(anyhow::anyhow!(
            "--precision {p} sets the CPU fast path's arithmetic; --inference {kind} has none (use --inference auto or fast)"
        )),
    }
}

/// Opens `choice` for networks run by `inference` and says which it is (on stderr: TEI
/// speaks on stdout).
pub fn open_compute(choice: DeviceChoice, inference: InferenceKind) -> anyhow::Result<Compute> {
    let compute = Compute::open(choice, inference)?;
    if !choice.is_cpu() {
        eprintln!("device: {choice} (network search path: {})", compute.search_path());
    }
    Ok(compute)
}

/// `bredon devices`.
fn devices() -> anyhow::Result<()> {
    println!("cpu  burn flex backend; the fast path for search");
    let adapters = bredon_nn::device::list_adapters();
    for line in &adapters {
        println!("{line}");
    }
    if !cfg!(feature = "wgpu") {
        println!("(wgpu: not in this build; `cargo build --release -p bredon-cli --features wgpu`)");
    } else if adapters.is_empty() {
        println!("(wgpu: no adapter found; install a Vulkan driver, e.g. Debian's mesa-vulkan-drivers)");
    }
    if !cfg!(feature = "cuda") {
        println!("(cuda: not in this build; `cargo build --release -p bredon-cli --features cuda`)");
    }
    Ok(())
}
