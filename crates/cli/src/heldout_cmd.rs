//! `bredon heldout`: networks judged on games they never trained on
//! ([`bredon_selfplay::heldout`]), one row per model: the value's error and its bias
//! toward White (by side to move, komi and third of the game), the policy's fit to the
//! moves played, the flat-margin head's error.

use anyhow::{Context, Result};
use bredon_infer::Compute;
use bredon_selfplay::heldout::{HeadErrors, HeldOutSet, measure, paired_difference};
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
            "{:<44} {:>6} {:>5} {:>13} {:>14} {:>7} {:>7} {:>17} {:>13} {:>5} {:>6} {:>25}",
            "model",
            "step",
            "gen",
            "v mse ± se",
            "bias W ± se",
            "W move",
            "B move",
            "by third o/m/e",
            "p nll ± se",
            "top1",
            "margin",
            "Δ mse, Δ nll vs first"
        );
    }
    let mut baseline: Option<HeadErrors> = None;
    for path in &args.models {
        let (evaluator, meta) = model_arg::load_for_size(path, size, Lanes::One, compute)?;
        let e = measure(&evaluator, &set);
        let vs_first = baseline.as_ref().map(|f| paired_difference(f, &e));
        if args.json {
            let row = serde_json::json!({
                "model": path.display().to_string(),
                "size": size,
                "trained_size": meta.size,
                "step": meta.step,
                "generation": meta.generation,
                "games": set.games,
                "errors": e,
                "vs_first": vs_first.map(|d| serde_json::json!({
                    "value_mse": d[0], "white_bias": d[1], "policy_nll": d[2],
                })),
            });
            println!("{row}");
        } else {
            print_row(path, meta.step, meta.generation, &e, vs_first);
        }
        baseline.get_or_insert(e);
    }
    Ok(())
}

/// One model's row; `vs_first` is its paired difference from the first model's (value
/// MSE, White bias, policy NLL, each with its standard error).
fn print_row(path: &std::path::Path, step: u64, generation: u32, e: &HeadErrors, vs_first: Option<[(f64, f64); 3]>) {
    let name = path.display().to_string();
    let name = if name.len() > 44 { format!("…{}", &name[name.len() - 43..]) } else { name };
    let thirds = e.white_bias_by_third.map(|m| format!("{:+.2}", m.mean)).join("/");
    let margin = e.margin_mae.map_or("-".to_string(), |m| format!("{m:.2}"));
    let [se_mse, se_bias, se_nll] = e.standard_errors;
    let mse = format!("{:.3} ± {se_mse:.3}", e.value_mse);
    let bias = format!("{:+.3} ± {se_bias:.3}", e.white_bias);
    let nll = format!("{:.3} ± {se_nll:.3}", e.policy_nll);
    let diff = vs_first.map_or("-".to_string(), |[m, _, p]| format!("{:+.3}±{:.3}, {:+.3}±{:.3}", m.0, m.1, p.0, p.1));
    println!(
        "{name:<44} {step:>6} {generation:>5} {mse:>13} {bias:>14} {:>+7.3} {:>+7.3} {thirds:>17} {nll:>13} {:>4.1}% {margin:>6} {diff:>25}",
        e.white_bias_by_mover[0].mean,
        e.white_bias_by_mover[1].mean,
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
