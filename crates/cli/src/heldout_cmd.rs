//! `bredon heldout`: networks judged on games they never trained on
//! ([`bredon_selfplay::heldout`]), one row per model: the value's error and its bias
//! toward White (by side to move, komi and third of the game), the policy's fit to the
//! moves played, the flat-margin head's error.

use anyhow::{Context, Result};
use bredon_infer::Compute;
use bredon_selfplay::heldout::{HeadErrors, HeldOutSet, measure};
use std::path::PathBuf;

use crate::model_arg::{self, Lanes};

/// Arguments of `bredon heldout`.
#[derive(clap::Args, Debug)]
pub struct HeldOutArgs {
    /// Models to judge (`.bredon` files or checkpoint directories), one row each; a model
    /// of another size than `--size` is carried to it when it can be.
    #[arg(long = "model", required = true)]
    pub models: Vec<PathBuf>,
    /// PTN games (files, or directories searched for `*.ptn`): real opponents' games,
    /// never trained on. Games of other sizes and games without a result are skipped.
    #[arg(long = "games", required = true)]
    pub games: Vec<PathBuf>,
    /// Board size of the games to read (default: the first model's).
    #[arg(long)]
    pub size: Option<usize>,
    /// One JSON object per model, a line each, instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Prints each model's errors on the held-out games.
pub fn run(args: HeldOutArgs, compute: &Compute) -> Result<()> {
    let first = bredon_nn::checkpoint::read_exported_meta(&args.models[0])
        .with_context(|| format!("reading {}", args.models[0].display()))?;
    let size = args.size.unwrap_or(first.size);
    let set = HeldOutSet::read(&args.games, size)?;
    if !args.json {
        println!(
            "{} positions of {} {size}x{size} games ({} files of other sizes or without a result skipped); network on {}",
            set.positions.len(),
            set.games,
            set.skipped,
            compute.inference
        );
        println!(
            "{:<44} {:>6} {:>5} {:>6} {:>7} {:>7} {:>7} {:>17} {:>6} {:>5} {:>6}",
            "model", "step", "gen", "v mse", "bias W", "W move", "B move", "by third o/m/e", "p nll", "top1", "margin"
        );
    }
    for path in &args.models {
        let meta =
            bredon_nn::checkpoint::read_exported_meta(path).with_context(|| format!("reading {}", path.display()))?;
        let evaluator = model_arg::load_for_size(path, &meta, size, Lanes::One, compute)?;
        let e = measure(&evaluator, &set);
        if args.json {
            let row = serde_json::json!({
                "model": path.display().to_string(),
                "size": size,
                "trained_size": meta.size,
                "step": meta.step,
                "generation": meta.generation,
                "games": set.games,
                "errors": e,
            });
            println!("{row}");
        } else {
            print_row(path, meta.step, meta.generation, &e);
        }
    }
    Ok(())
}

fn print_row(path: &std::path::Path, step: u64, generation: u32, e: &HeadErrors) {
    let name = path.display().to_string();
    let name = if name.len() > 44 { format!("…{}", &name[name.len() - 43..]) } else { name };
    let thirds = e.white_bias_by_third.map(|m| format!("{:+.2}", m.mean)).join("/");
    let margin = e.margin_mae.map_or("-".to_string(), |m| format!("{m:.2}"));
    println!(
        "{name:<44} {step:>6} {generation:>5} {:>6.3} {:>+7.3} {:>+7.3} {:>+7.3} {thirds:>17} {:>6.3} {:>5.1}% {margin:>6}",
        e.value_mse,
        e.white_bias,
        e.white_bias_by_mover[0].mean,
        e.white_bias_by_mover[1].mean,
        e.policy_nll,
        100.0 * e.policy_top1
    );
    if e.white_bias_by_half_komi.len() > 1 {
        let by_komi: Vec<String> = e
            .white_bias_by_half_komi
            .iter()
            .map(|(k, m)| format!("komi {}: {:+.3} ({} positions)", *k as f32 / 2.0, m.mean, m.n))
            .collect();
        println!("    White bias by komi: {}", by_komi.join(", "));
    }
}
