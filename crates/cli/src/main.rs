//! `bredon`: the command-line front end of Bredon.

mod perft_cmd;
mod ptn_cmd;

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
    /// Read, check and display PTN game files.
    #[command(subcommand)]
    Ptn(ptn_cmd::PtnCommand),
}

fn main() {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Perft(args) => perft_cmd::run(args),
        Command::Ptn(cmd) => ptn_cmd::run(cmd),
    };
    if let Err(e) = outcome {
        eprintln!("bredon: error: {e:#}");
        std::process::exit(1);
    }
}
