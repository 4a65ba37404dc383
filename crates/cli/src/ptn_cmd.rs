//! `bredon ptn check` and `bredon ptn show`.

use anyhow::{Context, Result, anyhow, bail};
use bredon_rules::notation::{Ptn, write_tps};
use std::path::{Path, PathBuf};

/// `bredon ptn …`.
#[derive(clap::Subcommand, Debug)]
pub enum PtnCommand {
    /// Replay games and print `FILE: RESULT PLIES` for each (RESULT is the computed one:
    /// R-0, 0-R, F-0, 0-F, 1/2-1/2, or 0-0 if unfinished). Exits non-zero on the first
    /// file with bad syntax, an illegal move, or a declared road/flat result that the
    /// moves do not produce.
    Check {
        /// PTN files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
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

/// Runs a `ptn` subcommand.
pub fn run(cmd: PtnCommand) -> Result<()> {
    match cmd {
        PtnCommand::Check { files } => {
            for f in &files {
                let game = read_game(f)?;
                let replay = game.replay().map_err(|e| anyhow!("{}: {e}", f.display()))?;
                let computed = replay.result();
                let shown = computed.map_or("0-0", |r| r.ptn());
                if let Some(declared) = game.result {
                    use bredon_rules::WinKind;
                    let decisive = matches!(declared, bredon_rules::GameResult::Win { kind: WinKind::Road | WinKind::Flat, .. });
                    if decisive && computed != Some(declared) {
                        bail!("{}: the Result is {declared} but the moves end in {shown}", f.display());
                    }
                }
                println!("{}: {shown} {}", f.display(), replay.moves().len());
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
