//! `bredon`: the command-line front end of Bredon.

mod analyse_cmd;
mod arena_cmd;
mod bench_cmd;
mod check_cmd;
mod export_cmd;
mod model_arg;
mod perft_cmd;
mod play_cmd;
mod plot_cmd;
mod ptn_cmd;
mod tactics_cmd;
mod tei_cmd;
mod train_cmd;

use clap::{Parser, Subcommand};

/// Bredon: a Tak engine that teaches itself by self-play.
#[derive(Parser, Debug)]
#[command(name = "bredon", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Forward pass of the network for search (`tei`, `play`, `analyse`, `arena`, `bench`):
    /// `fast` (the default: BatchNorm folded, SIMD kernels) or `burn` (the training
    /// framework's). Training runs take it from `[selfplay] inference` in the config.
    #[arg(long, global = true)]
    inference: Option<bredon_nn::InferenceKind>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Count the leaves of the legal move tree (move generator check and benchmark).
    Perft(perft_cmd::PerftArgs),
    /// Train a network from scratch (or resume a run): self-play, train, checkpoint, evaluate.
    Train(train_cmd::TrainArgs),
    /// Only play self-play games into a run directory (to add workers to a training run).
    Selfplay(train_cmd::SelfPlayArgs),
    /// Speak the Tak Engine Interface on stdin/stdout (for match runners and GUIs).
    Tei(tei_cmd::TeiArgs),
    /// Play against the engine in the terminal.
    Play(play_cmd::PlayArgs),
    /// Show the engine's value and best move for every ply of a PTN game.
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
    /// Verify every file of a run directory (checksums, weights, games, logs).
    Check(check_cmd::CheckArgs),
    /// Read, check and display PTN game files.
    #[command(subcommand)]
    Ptn(ptn_cmd::PtnCommand),
}

fn main() {
    let cli = Cli::parse();
    if let Some(kind) = cli.inference {
        bredon_nn::inference::set_default_kind(kind);
    }
    let outcome = match cli.command {
        Command::Perft(args) => perft_cmd::run(args),
        Command::Ptn(cmd) => ptn_cmd::run(cmd),
        Command::Tei(args) => tei_cmd::run(args),
        Command::Play(args) => play_cmd::run(args),
        Command::Analyse(args) => analyse_cmd::run(args),
        Command::Train(_) | Command::Selfplay(_) if cli.inference.is_some() => {
            Err(anyhow::anyhow!("training runs take the inference path from `[selfplay] inference` in the run config, not --inference"))
        }
        Command::Train(args) => train_cmd::run_train(args),
        Command::Selfplay(args) => train_cmd::run_selfplay(args),
        Command::Export(args) => export_cmd::run(args),
        Command::Arena(args) => arena_cmd::run(args),
        Command::Plot(args) => plot_cmd::run(args),
        Command::Bench(cmd) => bench_cmd::run(cmd, cli.inference),
        Command::Check(args) => check_cmd::run(args),
    };
    if let Err(e) = outcome {
        eprintln!("bredon: error: {e:#}");
        std::process::exit(1);
    }
}
