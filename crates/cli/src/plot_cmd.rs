//! `bredon plot`: Elo curve tables drawn as one SVG chart.

use std::path::PathBuf;

use anyhow::{Context, Result};
use bredon_arena::{parse_elo_curve, plot_elo};
use clap::{Args, ValueEnum};

/// Arguments of `bredon plot`.
#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Elo curve tables: `<run>/arena/elo-curve.csv` (written by `bredon arena --run`) or
    /// `scripts/join-curves.py`'s output; each is a series named after its file (a `part`
    /// column splits it).
    #[arg(required = true, value_name = "CURVE.csv")]
    pub curves: Vec<PathBuf>,
    /// The SVG file to write.
    #[arg(short, long)]
    pub out: PathBuf,
    /// The x axis.
    #[arg(long, value_enum, default_value_t = XAxis::Minutes)]
    pub x: XAxis,
}

/// What the chart's x axis counts.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum XAxis {
    /// Minutes of training (the tables' `minutes` column).
    Minutes,
    /// Optimiser steps (the `step` column).
    Step,
}

/// Reads the tables and writes the chart.
pub fn run(args: PlotArgs) -> Result<()> {
    let (column, desc) = match args.x {
        XAxis::Minutes => ("minutes", "minutes of training (wall clock)"),
        XAxis::Step => ("step", "training step"),
    };
    let mut points = Vec::new();
    for path in &args.curves {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let label = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        points.extend(parse_elo_curve(&text, &label, column).with_context(|| format!("{}", path.display()))?);
    }
    plot_elo(&points, desc, &args.out)?;
    eprintln!("wrote {} ({} points)", args.out.display(), points.len());
    Ok(())
}
