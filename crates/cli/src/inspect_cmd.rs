//! `bredon inspect`: a model's health as its weights show it, layer by layer.

use anyhow::{Context, Result};
use bredon_netform::health::{NetHealth, TINY_WEIGHT, net_health, percent};
use bredon_nn::activity::{LayerActivity, TAUS, activity};
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
    /// Positions (from random games, seeded) to measure the units' activity on: ReDo's
    /// τ-dormant units per hidden ReLU layer; 0 skips it.
    #[arg(long, default_value_t = 256)]
    pub positions: usize,
}

/// Prints the health table (or JSON) of the model.
pub fn run(args: InspectArgs) -> Result<()> {
    let (model, meta) = load_exported(&args.model).with_context(|| format!("loading {}", args.model.display()))?;
    let health = net_health(&model.fold(meta.size));
    let positions = bredon_netform::positions::random_positions(meta.size, args.positions, 1);
    let refs: Vec<&bredon_rules::Position> = positions.iter().collect();
    let activity = if refs.is_empty() { Vec::new() } else { activity(&model, &refs, meta.size) };
    if args.json {
        let out = serde_json::json!({
            "model": args.model.display().to_string(),
            "size": meta.size,
            "net": meta.net.name(),
            "step": meta.step,
            "generation": meta.generation,
            "stage": meta.stage,
            "tiny_weight": TINY_WEIGHT,
            "health": health,
            "activity_positions": args.positions,
            "activity_taus": TAUS,
            "activity": activity,
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
    if let Some(p) = &meta.stage {
        println!(
            "curriculum stage {}: {} steps, {} generations and {:.1} minutes of it behind this model",
            p.name, p.steps, p.generations, p.minutes
        );
    }
    print_table(&health);
    if !activity.is_empty() {
        print_activity(&activity, args.positions);
    }
    Ok(())
}

fn print_activity(layers: &[LayerActivity], positions: usize) {
    println!();
    println!(
        "on {positions} positions of random games: dormant units (ReDo: a unit's mean activation over the layer's mean, at most τ)"
    );
    let taus: Vec<String> = TAUS.iter().map(|t| format!("τ={t}")).collect();
    println!("{:<20} {:>6} {:>10} {:>10}", "layer", "units", taus[0], taus[1]);
    for l in layers {
        println!("{:<20} {:>6} {:>10} {:>10}", l.name, l.units, l.dormant[0], l.dormant[1]);
    }
    let hidden: Vec<&LayerActivity> = layers.iter().filter(|l| l.name.ends_with(".conv1")).collect();
    let (d, u) = (hidden.iter().map(|l| l.dormant[1]).sum::<usize>(), hidden.iter().map(|l| l.units).sum::<usize>());
    println!("blocks' first convolutions: {d} of {u} units dormant at τ={} ({:.1} %)", TAUS[1], percent(d, u));
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
    let first: Vec<_> = h.layers.iter().filter(|l| l.in_trunk() && l.name.ends_with(".conv1")).collect();
    let (dead, all) = (first.iter().map(|l| l.dead_outputs).sum(), first.iter().map(|l| l.outputs).sum());
    let per_block: Vec<String> = first.iter().map(|l| l.dead_outputs.to_string()).collect();
    println!(
        "blocks' first convolutions (their outputs go through a ReLU): {dead} of {all} dead ({:.1} %; per block {})",
        percent(dead, all),
        per_block.join(", ")
    );
    println!(
        "(dead: every incoming weight at most {TINY_WEIGHT:e} in magnitude, so the channel outputs its bias whatever the position)"
    );
}
