//! `bredon check --run DIR`: verifies every file of a run directory.

use anyhow::{Result, bail};
use bredon_selfplay::rundir::RunDir;
use bredon_selfplay::verify::verify_run;
use std::path::PathBuf;

/// `bredon check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The run directory to verify.
    #[arg(long)]
    run: PathBuf,
}

/// Verifies the run and prints what is damaged and what that costs; exits non-zero if
/// anything is damaged.
pub fn run(args: CheckArgs) -> Result<()> {
    let run = RunDir::new(&args.run);
    let rep = verify_run(&run)?;
    for d in &rep.damaged {
        println!("DAMAGED {}: {}\n  -> {}", d.path.display(), d.problem, d.consequence);
    }
    for p in &rep.incomplete {
        println!("incomplete {} (an interrupted checkpoint write, redone on resume)", p.display());
    }
    if !rep.unverified.is_empty() {
        println!(
            "{} files have no checksum (written by an older Bredon) and were read unverified, e.g. {}",
            rep.unverified.len(),
            rep.unverified[0].display()
        );
    }
    println!(
        "{}: {} files intact, {} unverified, {} damaged; {} games ({} training samples) readable",
        run.root().display(),
        rep.ok,
        rep.unverified.len(),
        rep.damaged.len(),
        rep.games,
        rep.samples
    );
    if !rep.damaged.is_empty() {
        bail!("{} damaged files in {}", rep.damaged.len(), run.root().display());
    }
    Ok(())
}
