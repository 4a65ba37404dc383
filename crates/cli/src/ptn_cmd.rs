//! `bredon ptn check` and `bredon ptn show`.

use anyhow::{Context, Result, anyhow, bail};
use bredon_rules::notation::{Ptn, write_tps};
use std::path::{Path, PathBuf};

/// `bredon ptn …`.
#[derive(clap::Subcommand, Debug)]
pub enum PtnCommand {
    /// Replay games and print `FILE: RESULT PLIES` for each (RESULT is the computed one:
    /// R-0, 0-R, F-0, 0-F, 1/2-1/2, or 0-0 if unfinished), with warnings after it on
    /// stderr (a Result the moves do not give, move numbers that disagree with the position).
    /// Every file is checked; the exit status is non-zero if a file is unreadable or has
    /// an illegal move (or, with --strict, has a warning).
    Check {
        /// PTN files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Treat warnings as errors.
        #[arg(long)]
        strict: bool,
    },
    /// Print the board of a game at a ply (default: after the last move).
    Show {
        /// PTN file.
        file: PathBuf,
        /// Ply to show (0 = start position).
        #[arg(long)]
        ply: Option<usize>,
        /// Print TPS instead of a diagram.
        #[arg(long)]
        tps: bool,
    },
}

fn read_game(path: &Path) -> Result<Ptn> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ptn::parse(&text).map_err(|e| anyhow!("{}: {e}", path.display()))
}

/// Checks one file: its line `FILE: RESULT PLIES` and its warnings, or why it is
/// unreadable or illegal.
fn check_one(f: &Path) -> Result<(String, Vec<String>)> {
    let text = std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?;
    let game = Ptn::parse(&text)?;
    let replay = game.replay()?;
    let computed = replay.result();
    let shown = computed.map_or("0-0", |r| r.ptn());
    let mut warnings: Vec<String> = game.warnings.iter().map(|w| w.to_string()).collect();
    if let Some(declared) = game.result {
        use bredon_rules::{GameResult, WinKind};
        // `1-0`/`0-1` (resignation, time) and a draw by agreement need not come from the
        // moves; a road or flat win must, and a finished game must end as declared.
        let agrees = match (declared, computed) {
            (GameResult::Win { kind: WinKind::Other, color }, Some(c)) => c.winner() == Some(color),
            (d, Some(c)) => d == c,
            (GameResult::Win { kind: WinKind::Road | WinKind::Flat, .. }, None) => false,
            (_, None) => true,
        };
        if !agrees {
            warnings.push(format!("the Result is {} but the moves give {shown}", declared.ptn()));
        }
    }
    Ok((format!("{}: {shown} {}", f.display(), replay.moves().len()), warnings))
}

/// Runs a `ptn` subcommand.
pub fn run(cmd: PtnCommand) -> Result<()> {
    match cmd {
        PtnCommand::Check { files, strict } => {
            let (mut errors, mut warned) = (0usize, 0usize);
            for f in &files {
                match check_one(f) {
                    Ok((line, warnings)) => {
                        println!("{line}");
                        for w in &warnings {
                            eprintln!("{}: warning: {w}", f.display());
                        }
                        warned += usize::from(!warnings.is_empty());
                    }
                    Err(e) => {
                        eprintln!("{}: error: {e:#}", f.display());
                        errors += 1;
                    }
                }
            }
            if errors > 0 || (strict && warned > 0) {
                let w = if strict { format!(", {warned} with warnings (--strict)") } else { String::new() };
                bail!("{errors} of {} files unreadable or illegal{w}", files.len());
            }
            Ok(())
        }
        PtnCommand::Show { file, ply, tps } => {
            let game = read_game(&file)?;
            let replay = game.replay().map_err(|e| anyhow!("{}: {e}", file.display()))?;
            let last = replay.moves().len();
            let ply = ply.unwrap_or(last);
            let pos = replay
                .position_at(ply)
                .ok_or_else(|| anyhow!("{}: --ply {ply} is past the end of the game ({last} plies)", file.display()))?;
            if tps {
                println!("{}", write_tps(pos));
            } else {
                if ply > 0 {
                    let mv = replay.moves()[ply - 1];
                    println!("After ply {ply} ({}):", mv.to_ptn(pos.size()));
                }
                print!("{}", pos.diagram());
            }
            Ok(())
        }
    }
}
