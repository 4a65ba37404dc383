//! `bredon analyse`: the engine's view of every ply of a PTN game, or with `--json` the
//! JSON analysis engine (`bredon_engine::analysis`) on stdin and stdout.

use anyhow::{Context, Result, bail};
use bredon_engine::analysis::{AnalysisEngine, AnalysisModel};
use bredon_mcts::{Budget, search_once};
use bredon_rules::Color;
use bredon_rules::notation::Ptn;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::model_arg;

/// Arguments of `bredon analyse`.
#[derive(clap::Args, Debug)]
pub struct AnalyseArgs {
    /// The game (PTN). Not with `--json`, which reads its queries from stdin.
    #[arg(required_unless_present = "json", conflicts_with = "json")]
    pub file: Option<PathBuf>,
    /// Model (a `bredon export` file or a checkpoint directory). Without it: `NxN.bredon`
    /// of the game's size from `checkpoints/shipped` (as for `bredon tei`), else the
    /// uniform-evaluator search. With `--json`: a model for its board size (repeat for
    /// several sizes); without one, the shipped model of every size that has one.
    #[arg(long)]
    pub model: Vec<PathBuf>,
    /// Visits per position (with `--json`, each query gives its own budget).
    #[arg(long, default_value_t = 800, conflicts_with = "json")]
    pub visits: u64,
    /// The JSON analysis engine: one JSON query a line on stdin, one JSON answer a line
    /// on stdout per analysed position (docs/analysis-engine.md).
    #[arg(long)]
    pub json: bool,
}

/// Prints, per ply, the move played, the engine's value (for white and for the side to
/// move) and its best move and line; `?` marks a move other than the engine's choice.
pub fn run(args: AnalyseArgs, compute: &bredon_infer::Compute) -> Result<()> {
    if args.json {
        let engine = json_engine(&args.model, compute)?;
        return bredon_engine::analysis::serve(&engine, std::io::BufReader::new(std::io::stdin()), std::io::stdout())
            .context("the JSON analysis engine");
    }
    let stdout = std::io::stdout();
    analyse(&args, &mut stdout.lock(), compute)
}

/// The JSON analysis engine with `models` (each for its own board size), or without any
/// the shipped `NxN.bredon` of every size that has one, and for every other size the
/// nearest one that plays every size, carried there (as `bredon tei` plays it).
pub fn json_engine(models: &[PathBuf], compute: &bredon_infer::Compute) -> Result<AnalysisEngine> {
    let mut by_size = std::collections::BTreeMap::new();
    if models.is_empty() {
        let files = model_arg::ModelFiles::find(&model_arg::default_model_dirs())?;
        for size in 3..=8 {
            if let Some((path, _)) = files.for_size(size) {
                by_size.insert(size, analysis_model(path, Some(size), compute)?.1);
            }
        }
    } else {
        for path in models {
            let (size, model) = analysis_model(path, None, compute)?;
            if by_size.insert(size, model).is_some() {
                bail!("two {size}x{size} models given ({} is the second)", path.display());
            }
        }
    }
    for (size, m) in &by_size {
        eprintln!("bredon analyse --json: {size}x{size} with {}", m.name);
    }
    Ok(AnalysisEngine::new(by_size))
}

/// A network for the analysis engine: the search's evaluator and the heads, from one
/// file, for `size` boards (carried there, [`model_arg::load_net_for_size`]) or its own;
/// with the size it plays.
fn analysis_model(path: &Path, size: Option<usize>, compute: &bredon_infer::Compute) -> Result<(usize, AnalysisModel)> {
    let loading = || format!("loading {}", path.display());
    let (net, meta) = match size {
        Some(size) => model_arg::load_net_for_size(path, size).with_context(loading)?,
        None => bredon_nn::load_exported(path).with_context(loading)?,
    };
    let (trained, size) = (meta.size, size.unwrap_or(meta.size));
    let file = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into());
    let name =
        if trained == size { file } else { format!("{file} (a {trained}x{trained} network carried to {size}x{size})") };
    let model = AnalysisModel {
        name,
        evaluator: model_arg::cached(Arc::new(compute.evaluator(net.clone(), size, 1)), model_arg::EVAL_CACHE_BYTES),
        heads: Some(Arc::new(bredon_nn::Heads::new(net, size))),
    };
    Ok((size, model))
}

/// [`run`] into any writer.
pub fn analyse(args: &AnalyseArgs, out: &mut dyn Write, compute: &bredon_infer::Compute) -> Result<()> {
    let Some(file) = &args.file else { bail!("bredon analyse needs a PTN file (or --json)") };
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let ptn = Ptn::parse(&text).with_context(|| format!("{}", file.display()))?;
    let replay = ptn.replay().with_context(|| format!("{}", file.display()))?;
    let size = ptn.size();
    if args.model.len() > 1 {
        bail!("a PTN game has one board size: give at most one --model");
    }
    let (mut model, model_file) =
        model_arg::load_or_default(args.model.first().map(PathBuf::as_path), size, model_arg::Lanes::One, compute)?;
    // Each ply's search meets many positions the previous ply's evaluated.
    model.evaluator = model.cached_evaluator(model_arg::EVAL_CACHE_BYTES);
    let engine = model_file.map_or_else(|| "the uniform evaluator".to_string(), |f| f.display().to_string());
    let config = bredon_mcts::play_config();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    writeln!(
        out,
        "{}: {size}x{size}, {} plies, {} visits per position, {engine}",
        file.display(),
        replay.moves().len(),
        args.visits
    )?;
    writeln!(out, "{:>4}  {:<10} {:>7} {:>7}  {:<10} line", "ply", "played", "white", "mover", "best")?;
    for (ply, &played) in replay.moves().iter().enumerate() {
        let pos = &replay.positions()[ply];
        let r = search_once(pos, &*model.evaluator, &config, Budget::Visits(args.visits.max(1)), &mut rng);
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
    use bredon_infer::Compute;

    #[test]
    fn every_ply_gets_a_line_and_a_missed_road_is_marked() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("g.ptn");
        // 3x3: after 5. b1, white has a1 b1 and plays c2 instead of the winning c1.
        std::fs::write(&file, "[Size \"3\"]\n\n1. c3 a3\n2. a1 b3\n3. b1 a2\n4. c2 c1\n").unwrap();
        let args = AnalyseArgs { file: Some(file), model: vec![], visits: 300, json: false };
        let mut out = Vec::new();
        analyse(&args, &mut out, &Compute::cpu()).unwrap();
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
        analyse(
            &AnalyseArgs { file: Some(file.clone()), model: vec![], visits: 20, json: false },
            &mut out,
            &Compute::cpu(),
        )
        .unwrap();
        let head = String::from_utf8(out).unwrap().lines().next().unwrap().to_string();
        assert!(head.ends_with("4x4.bredon"), "{head}");
        std::fs::write(&file, "[Size \"3\"]\n\n1. a1 c3\n").unwrap();
        let mut out = Vec::new();
        analyse(&AnalyseArgs { file: Some(file), model: vec![], visits: 20, json: false }, &mut out, &Compute::cpu())
            .unwrap();
        let head = String::from_utf8(out).unwrap().lines().next().unwrap().to_string();
        assert!(head.ends_with("the uniform evaluator"), "no 3x3 model is shipped: {head}");
    }

    #[test]
    fn bad_ptn_names_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.ptn");
        std::fs::write(&file, "[Size \"3\"]\n\n1. a1 a1\n").unwrap();
        let args = AnalyseArgs { file: Some(file), model: vec![], visits: 10, json: false };
        let e = analyse(&args, &mut Vec::new(), &Compute::cpu()).unwrap_err();
        assert!(format!("{e:#}").contains("bad.ptn"), "{e:#}");
    }
}
