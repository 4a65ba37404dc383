//! `bredon check --run DIR`: verifies every file of a run directory, or of every stage of
//! a curriculum.

use anyhow::{Result, bail};
use bredon_selfplay::curriculum::CURRICULUM_FILE;
use bredon_selfplay::rundir::RunDir;
use bredon_selfplay::verify::{verify_curriculum, verify_run};
use bredon_storage::RunLocation;

/// `bredon check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The run to verify: a directory or `s3://BUCKET/PREFIX` (fetched whole into a
    /// local copy first); a curriculum's directory checks all its stages.
    #[arg(long)]
    run: RunLocation,
}

/// Verifies the run and prints what is damaged and what that costs; exits non-zero if
/// anything is damaged.
pub fn run(args: CheckArgs) -> Result<()> {
    let (opened, pulled) = crate::run_arg::open_whole(&args.run, "check")?;
    let run = RunDir::new(&opened.dir);
    if let Some(p) = &pulled {
        for d in &p.damaged {
            println!("DAMAGED {d}\n  -> its games are lost; the worker that sent it plays more");
        }
        println!(
            "{}: {} game bundles, {} distinct games, {} of them in two bundles (uploaded again after a kill; counted once)",
            args.run, p.bundles, p.games, p.in_two_bundles
        );
    }
    let rep =
        if opened.dir.join(CURRICULUM_FILE).is_file() { verify_curriculum(&opened.dir)? } else { verify_run(&run)? };
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
    if let Some(p) = &pulled
        && !p.damaged.is_empty()
    {
        bail!("{} damaged game bundles in {}", p.damaged.len(), args.run);
    }
    if !rep.damaged.is_empty() {
        bail!("{} damaged files in {}", rep.damaged.len(), run.root().display());
    }
    Ok(())
}
