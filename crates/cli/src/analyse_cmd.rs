//! `bredon analyse`: the engine's view of every ply of a PTN game.

use anyhow::{Context, Result};
use bredon_mcts::{Search, SearchConfig};
use bredon_rules::Color;
use bredon_rules::notation::Ptn;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::io::Write;
use std::path::PathBuf;

use crate::model_arg;

/// Arguments of `bredon analyse`.
#[derive(clap::Args, Debug)]
pub struct AnalyseArgs {
    /// The game (PTN).
    pub file: PathBuf,
    /// Model (a `bredon export` file or a checkpoint directory). Without it: `NxN.bredon`
    /// of the game's size from `checkpoints/shipped` (as for `bredon tei`), else the
    /// uniform-evaluator search.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Visits per position.
    #[arg(long, default_value_t = 800)]
    pub visits: u64,
}

/// Prints, per ply, the move played, the engine's value (for white and for the side to
/// move) and its best move and line; `?` marks a move other than the engine's choice.
pub fn run(args: AnalyseArgs) -> Result<()> {
    let stdout = std::io::stdout();
    analyse(&args, &mut stdout.lock())
}

/// [`run`] into any writer.
pub fn analyse(args: &AnalyseArgs, out: &mut dyn Write) -> Result<()> {
    let text = std::fs::read_to_string(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let ptn = Ptn::parse(&text).with_context(|| format!("{}", args.file.display()))?;
    let replay = ptn.replay().with_context(|| format!("{}", args.file.display()))?;
    let size = ptn.size();
    let (model, file) = model_arg::load_or_default(args.model.as_deref(), size)?;
    let engine = file.map_or_else(|| "the uniform evaluator".to_string(), |f| f.display().to_string());
    let config = SearchConfig { root_noise: false, ..SearchConfig::default() };
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    writeln!(
        out,
        "{}: {size}x{size}, {} plies, {} visits per position, {engine}",
        args.file.display(),
        replay.moves().len(),
        args.visits
    )?;
    writeln!(out, "{:>4}  {:<10} {:>7} {:>7}  {:<10} line", "ply", "played", "white", "mover", "best")?;
    for (ply, &played) in replay.moves().iter().enumerate() {
        let pos = &replay.positions()[ply];
        let mut search = Search::new(pos.clone(), config.clone());
        let r = search.run(&*model.evaluator, args.visits.max(1), &mut rng);
        let white_value = if pos.side_to_move() == Color::White { r.value } else { -r.value };
        let best = r.best_move.map(|m| m.to_ptn(size)).unwrap_or_default();
        let mark = if r.best_move == Some(played) { "" } else { "?" };
        let pv: Vec<String> = r.pv.iter().map(|m| m.to_ptn(size)).collect();
        writeln!(
            out,
            "{:>4}  {:<10} {:>7} {:>7}  {:<10} {}",
            ply + 1,
            format!("{}{mark}", played.to_ptn(size)),
            show_value(white_value, r.proven),
            show_value(r.value, r.proven),
            best,
            pv.join(" ")
        )?;
    }
    match replay.result() {
        Some(result) => writeln!(out, "result {result}")?,
        None => writeln!(out, "unfinished")?,
    }
    Ok(())
}

/// A value as printed: signed with two decimals, or `won`/`lost`/`drawn` when the search
/// proved the result (a forced road or flat win found by the tactical checks or the
/// solver).
fn show_value(value: f32, proven: bool) -> String {
    match (proven, value) {
        (true, v) if v > 0.0 => "won".into(),
        (true, v) if v < 0.0 => "lost".into(),
        (true, _) => "drawn".into(),
        (false, v) => format!("{v:+.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ply_gets_a_line_and_a_missed_road_is_marked() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("g.ptn");
        // 3x3: after 5. b1, white has a1 b1 and plays c2 instead of the winning c1.
        std::fs::write(&file, "[Size \"3\"]\n\n1. c3 a3\n2. a1 b3\n3. b1 a2\n4. c2 c1\n").unwrap();
        let args = AnalyseArgs { file, model: None, visits: 300 };
        let mut out = Vec::new();
        analyse(&args, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2 + 8 + 1, "{out}");
        // Ply 7 is white's c2, which misses the road on c1 (a1 b1 c1).
        assert!(lines[2 + 6].contains("c2?") && lines[2 + 6].contains("c1"), "{out}");
        // The road in one is proven: white "won", the mover "won".
        assert!(lines[2 + 6].contains("won"), "{out}");
        assert!(lines.last().unwrap().starts_with("unfinished"));
    }

    #[test]
    fn without_a_model_the_shipped_one_of_the_games_size_analyses() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("g.ptn");
        std::fs::write(&file, "[Size \"4\"]\n\n1. a1 d4\n2. b2 c3\n").unwrap();
        let mut out = Vec::new();
        analyse(&AnalyseArgs { file: file.clone(), model: None, visits: 20 }, &mut out).unwrap();
        let head = String::from_utf8(out).unwrap().lines().next().unwrap().to_string();
        assert!(head.ends_with("4x4.bredon"), "{head}");
        std::fs::write(&file, "[Size \"3\"]\n\n1. a1 c3\n").unwrap();
        let mut out = Vec::new();
        analyse(&AnalyseArgs { file, model: None, visits: 20 }, &mut out).unwrap();
        let head = String::from_utf8(out).unwrap().lines().next().unwrap().to_string();
        assert!(head.ends_with("the uniform evaluator"), "no 3x3 model is shipped: {head}");
    }

    #[test]
    fn bad_ptn_names_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.ptn");
        std::fs::write(&file, "[Size \"3\"]\n\n1. a1 a1\n").unwrap();
        let args = AnalyseArgs { file, model: None, visits: 10 };
        let e = analyse(&args, &mut Vec::new()).unwrap_err();
        assert!(format!("{e:#}").contains("bad.ptn"), "{e:#}");
    }
}
