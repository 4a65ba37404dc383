//! `bredon play`: a game against the engine in the terminal.

use anyhow::{Context, Result, bail};
use bredon_mcts::{Budget, PlaySearch, play_config};
use bredon_rules::notation::{Ptn, parse_move, write_tps};
use bredon_rules::{Color, GameOptions, Move, Position};
use bredon_storage::fsutil::atomic_write;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use crate::model_arg;

/// Which side the person plays.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Moves first.
    White,
    /// Moves second.
    Black,
}

/// Arguments of `bredon play`.
#[derive(clap::Args, Debug)]
pub struct PlayArgs {
    /// Model to play against (a `bredon export` file or a checkpoint directory). Without
    /// it: `NxN.bredon` of the board size from `checkpoints/shipped` (as for `bredon tei`),
    /// else the uniform-evaluator search.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Board size (default: the model's size, else 5).
    #[arg(long)]
    pub size: Option<usize>,
    /// Your colour.
    #[arg(long, value_enum, default_value_t = Side::White)]
    pub color: Side,
    /// Engine visits per move.
    #[arg(long, default_value_t = 800)]
    pub visits: u64,
    /// Komi in half points added to black's flat count (default: the model's).
    #[arg(long, allow_hyphen_values = true)]
    pub half_komi: Option<i8>,
    /// Where to save the game as PTN (rewritten after every move).
    #[arg(long, default_value = "bredon-game.ptn")]
    pub save: PathBuf,
    /// Seed of the engine's random numbers.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

const HELP: &str =
    "Type a move in PTN (a1, Sb2, Cc3, 3c3>12, ...), `tps` for the position, `moves` for the legal moves, or `quit`.";

/// Plays one game on stdin/stdout.
pub fn run(args: PlayArgs, compute: &bredon_infer::Compute) -> Result<()> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    play(args, &mut stdin.lock(), &mut stdout.lock(), compute)
}

/// The game loop over any input and output (the tests drive it with buffers).
pub fn play(
    args: PlayArgs,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    compute: &bredon_infer::Compute,
) -> Result<()> {
    let (mut model, model_file) = match &args.model {
        Some(path) => (model_arg::load(Some(path), args.size, model_arg::Lanes::One, compute)?, Some(path.clone())),
        None => model_arg::load_or_default(None, args.size.unwrap_or(5), model_arg::Lanes::One, compute)?,
    };
    model.evaluator = model.cached_evaluator(model_arg::EVAL_CACHE_BYTES);
    let size = args.size.or(model.meta.as_ref().map(|m| m.size)).unwrap_or(5);
    let half_komi = args.half_komi.or(model.meta.as_ref().map(|m| m.half_komi)).unwrap_or(0);
    let options = GameOptions::new(size).with_half_komi(half_komi);
    let start = Position::with_options(options)?;
    let human = match args.color {
        Side::White => Color::White,
        Side::Black => Color::Black,
    };
    let engine_name =
        model_file.map_or_else(|| "bredon (uniform)".to_string(), |p| format!("bredon ({})", p.display()));
    let (white, black) = match human {
        Color::White => ("you".to_string(), engine_name),
        Color::Black => (engine_name, "you".to_string()),
    };
    let mut search = PlaySearch::new(start.clone(), play_config(), 1);
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let mut pos = start.clone();
    let mut moves: Vec<Move> = Vec::new();
    writeln!(out, "Bredon {size}x{size}, komi {}. You play {human:?}. {HELP}", half_komi as f32 / 2.0)?;
    loop {
        writeln!(out, "\n{}", pos.diagram())?;
        save(&args.save, &start, &moves, pos.result(), &white, &black)?;
        if let Some(result) = pos.result() {
            writeln!(out, "Game over: {result}. Saved to {}", args.save.display())?;
            return Ok(());
        }
        let mv = if pos.side_to_move() == human {
            write!(out, "your move> ")?;
            out.flush()?;
            let mut line = String::new();
            if input.read_line(&mut line)? == 0 {
                writeln!(out, "\nInput closed; the unfinished game is saved in {}", args.save.display())?;
                return Ok(());
            }
            let text = line.trim();
            match text {
                "" => continue,
                "quit" | "exit" | "resign" => {
                    writeln!(out, "Bye. The game is saved in {}", args.save.display())?;
                    return Ok(());
                }
                "help" => {
                    writeln!(out, "{HELP}")?;
                    continue;
                }
                "tps" => {
                    writeln!(out, "{}", write_tps(&pos))?;
                    continue;
                }
                "moves" => {
                    let list: Vec<String> = pos.legal_moves().iter().map(|m| m.to_ptn(size)).collect();
                    writeln!(out, "{}", list.join(" "))?;
                    continue;
                }
                _ => {}
            }
            let mv = match parse_move(text, size) {
                Ok(mv) => mv,
                Err(e) => {
                    writeln!(out, "Cannot read {text:?} as a move: {e}. {HELP}")?;
                    continue;
                }
            };
            if let Err(e) = pos.clone().play(mv) {
                writeln!(out, "{text} is not legal here: {e}")?;
                continue;
            }
            mv
        } else {
            let r = search.search(&*model.evaluator, Budget::Visits(args.visits), None, &mut rng, None);
            let Some(mv) = r.best_move else { bail!("the engine found no move") };
            let pv: Vec<String> = r.pv.iter().map(|m| m.to_ptn(size)).collect();
            writeln!(
                out,
                "bredon plays {} (value {:+.2} for bredon, {} visits, line {})",
                mv.to_ptn(size),
                r.value,
                r.root_visits,
                pv.join(" ")
            )?;
            mv
        };
        pos.play(mv).context("applying a checked move")?;
        search.advance(mv);
        moves.push(mv);
    }
}

fn save(
    path: &std::path::Path,
    start: &Position,
    moves: &[Move],
    result: Option<bredon_rules::GameResult>,
    white: &str,
    black: &str,
) -> Result<()> {
    let mut ptn = Ptn::from_moves(start, moves, result);
    ptn.set_tag("Player1", white);
    ptn.set_tag("Player2", black);
    atomic_write(path, ptn.to_string().as_bytes()).with_context(|| format!("saving {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(save: PathBuf, color: Side) -> PlayArgs {
        PlayArgs { model: None, size: Some(3), color, visits: 30, half_komi: None, save, seed: 3 }
    }

    #[test]
    fn a_full_game_with_bad_input_and_the_saved_ptn_replays() {
        let dir = tempfile::tempdir().unwrap();
        let save = dir.path().join("g.ptn");
        // A malformed move, then every square in turn: occupied squares are refused and
        // the game goes on until it ends.
        let mut text = String::from("zz9\nhelp\nmoves\na1\na1\n");
        for _ in 0..10 {
            for sq in ["a1", "b2", "c3", "a3", "c1", "b1", "b3", "a2", "c2"] {
                text.push_str(sq);
                text.push('\n');
            }
        }
        let mut out = Vec::new();
        play(args(save.clone(), Side::White), &mut text.as_bytes(), &mut out, &bredon_infer::Compute::cpu()).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("Cannot read \"zz9\" as a move"), "{out}");
        assert!(out.contains("is not legal here"), "{out}");
        assert!(out.contains("bredon plays"), "{out}");
        let ptn = Ptn::parse(&std::fs::read_to_string(&save).unwrap()).unwrap();
        assert!(out.contains("Game over"), "{out}");
        assert!(ptn.replay().unwrap().result().is_some());
        assert_eq!(ptn.tag("Player1"), Some("you"));
    }

    #[test]
    fn closed_input_saves_the_unfinished_game() {
        let dir = tempfile::tempdir().unwrap();
        let save = dir.path().join("g.ptn");
        let mut out = Vec::new();
        play(args(save.clone(), Side::Black), &mut "".as_bytes(), &mut out, &bredon_infer::Compute::cpu()).unwrap();
        let ptn = Ptn::parse(&std::fs::read_to_string(&save).unwrap()).unwrap();
        // The engine (white) moved once before the input closed.
        assert_eq!(ptn.replay().unwrap().moves().len(), 1);
        assert_eq!(ptn.tag("Player2"), Some("you"));
    }
}
