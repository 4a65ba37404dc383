//! `bredon inspect`: a model's health as its weights show it, layer by layer.

use anyhow::{Context, Result};
use bredon_netform::health::{NetHealth, TINY_WEIGHT, net_health};
use bredon_nn::load_exported;
use std::path::PathBuf;

/// Arguments of `bredon inspect`.
#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    /// A `.bredon` model file or a checkpoint directory.
    pub model: PathBuf,
    /// One JSON object (the architecture, every layer and the totals) instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Prints the health table (or JSON) of the model.
pub fn run(args: InspectArgs) -> Result<()> {
    let (model, meta) = load_exported(&args.model).with_context(|| format!("loading {}", args.model.display()))?;
    let health = net_health(&model.fold(meta.size));
    if args.json {
        let out = serde_json::json!({
            "model": args.model.display().to_string(),
            "size": meta.size,
            "net": meta.net.name(),
            "step": meta.step,
            "generation": meta.generation,
            "tiny_weight": TINY_WEIGHT,
            "health": health,
        });
        println!("{out}");
        return Ok(());
    }
    println!(
        "{} ({}x{} {}, step {}, generation {}): weights folded as the kernels run them",
        args.model.display(),
        meta.size,
        meta.size,
        meta.net.name(),
        meta.step,
        meta.generation
    );
    print_table(&health);
    Ok(())
}

fn print_table(h: &NetHealth) {
    println!(
        "{:<20} {:<8} {:>7} {:>5} {:>7} {:>9} {:>8} {:>8} {:>8} {:>8}",
        "layer", "kind", "outputs", "dead", "dead %", "weights", "tiny %", "denormal", "zero", "norm"
    );
    for l in &h.layers {
        println!(
            "{:<20} {:<8} {:>7} {:>5} {:>6.1}% {:>9} {:>7.1}% {:>8} {:>8} {:>8.2}",
            l.name,
            l.kind,
            l.outputs,
            l.dead_outputs,
            l.dead_percent(),
            l.weights,
            l.tiny_percent(),
            l.denormal_weights,
            l.zero_weights,
            l.norm
        );
    }
    println!(
        "residual blocks: {} of {} output channels dead ({:.1} %); {} of {} weights at most {TINY_WEIGHT:e} ({:.1} %)",
        h.dead_trunk_channels,
        h.trunk_channels,
        h.dead_trunk_percent(),
        h.tiny_weights,
        h.weights,
        h.tiny_percent()
    );
    println!(
        "(dead: every incoming weight at most {TINY_WEIGHT:e} in magnitude, so the channel outputs its bias whatever the position)"
    );
}
