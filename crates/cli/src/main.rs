//! `bredon`: the command-line front end of Bredon.

mod perft_cmd;
mod ptn_cmd;
mod train_cmd;

use clap::{Parser, Subcommand};

/// Bredon: a Tak engine that teaches itself by self-play.
#[derive(Parser, Debug)]
#[command(name = "bredon", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Count the leaves of the legal move tree (move generator check and benchmark).
    Perft(perft_cmd::PerftArgs),
    /// Train a network from scratch (or resume a run): self-play, train, checkpoint, evaluate.
    Train(train_cmd::TrainArgs),
    /// Only play self-play games into a run directory (to add workers to a training run).
    Selfplay(train_cmd::SelfPlayArgs),
    /// Read, check and display PTN game files.
    #[command(subcommand)]
    Ptn(ptn_cmd::PtnCommand),
}

fn main() {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Perft(args) => perft_cmd::run(args),
        Command::Ptn(cmd) => ptn_cmd::run(cmd),
        Command::Train(args) => train_cmd::run_train(args),
        Command::Selfplay(args) => train_cmd::run_selfplay(args),
    };
    if let Err(e) = outcome {
        eprintln!("bredon: error: {e:#}");
        std::process::exit(1);
    }
}
