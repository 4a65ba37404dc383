//! `bredon perft`.

use anyhow::{Context, Result, bail};
use bredon_rules::Position;
use bredon_rules::notation::parse_tps;
use bredon_rules::perft::perft;
use std::time::Instant;

/// Arguments of `bredon perft`.
#[derive(clap::Args, Debug)]
pub struct PerftArgs {
    /// Board size of the start position (ignored with --tps).
    #[arg(long, default_value_t = 6)]
    size: usize,
    /// Start from this TPS instead of the empty board.
    #[arg(long)]
    tps: Option<String>,
    /// Search depth in plies.
    #[arg(long, default_value_t = 4)]
    depth: u32,
    /// Print only the final `perft D NODES` line.
    #[arg(long)]
    quiet: bool,
}

/// Prints nodes, time and speed per depth; the last line is exactly `perft D NODES`.
pub fn run(args: PerftArgs) -> Result<()> {
    let mut pos = match &args.tps {
        Some(t) => parse_tps(t).with_context(|| format!("bad TPS {t:?}"))?,
        None => Position::new(args.size)?,
    };
    if args.depth > 64 {
        bail!("depth {} is unreasonably deep", args.depth);
    }
    let first = if args.quiet { args.depth } else { 1 };
    let mut nodes = 1;
    for d in first.max(1)..=args.depth {
        let start = Instant::now();
        nodes = perft(&mut pos, d);
        let secs = start.elapsed().as_secs_f64();
        if !args.quiet {
            eprintln!("depth {d}: {nodes} nodes in {secs:.3} s ({:.1} M nodes/s)", nodes as f64 / secs.max(1e-9) / 1e6);
        }
    }
    if args.depth == 0 {
        nodes = perft(&mut pos, 0);
    }
    println!("perft {} {}", args.depth, nodes);
    Ok(())
}
