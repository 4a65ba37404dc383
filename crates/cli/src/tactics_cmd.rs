//! `bredon bench tactics`: the tactics suite. Positions from real games and self-play are
//! classified by the rules crate (road in one, must block, win in three) and searched;
//! the report gives, per board size and category, the share solved by the uniform search
//! and by a model, and the time per position.

use anyhow::{Context, Result, bail};
use bredon_mcts::{Budget, Evaluator, SearchConfig, UniformEvaluator, play_config, search_once};
use bredon_rules::tactics::{Tactic, TacticPosition, classify, parse_tps_lines, read_positions};
use bredon_rules::{Position, notation::write_tps};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::model_arg;

/// The self-play part of the suite, kept in the repository (`tactics/selfplay.tps`).
const SELFPLAY_SUITE: &str = include_str!("../../../tactics/selfplay.tps");

/// Arguments of `bredon bench tactics`.
#[derive(clap::Args, Debug)]
pub struct TacticsArgs {
    /// A model (`.bredon` file or checkpoint directory) to measure beside the uniform
    /// search, on the positions of its board size.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Visits per position.
    #[arg(long, default_value_t = 64)]
    pub visits: u64,
    /// Position sources: PTN games (every position), TPS lists (one per line) or
    /// directories of them. Default: the real games in shared/data/games and the
    /// repository's self-play suite (tactics/selfplay.tps).
    #[arg(long = "source")]
    pub sources: Vec<PathBuf>,
    /// Search without the tactical checks, to see what they add.
    #[arg(long)]
    pub no_tactics: bool,
    /// At most this many positions per size and category (0 = all).
    #[arg(long, default_value_t = 0)]
    pub limit: usize,
    /// Print the TPS of every position a player failed.
    #[arg(long)]
    pub failures: bool,
    /// Write the classified positions as TPS lines to FILE (to build a suite) and stop.
    #[arg(long)]
    pub write_suite: Option<PathBuf>,
}

/// Share solved and time of one player on one group of positions.
#[derive(Default)]
struct Tally {
    solved: usize,
    tried: usize,
    time: Duration,
}

impl Tally {
    fn cell(&self) -> String {
        if self.tried == 0 {
            return format!("{:>16}", "-");
        }
        let pct = 100.0 * self.solved as f64 / self.tried as f64;
        let ms = self.time.as_secs_f64() * 1000.0 / self.tried as f64;
        format!("{:>6.1}% {:>6.2}ms", pct, ms)
    }
}

/// Runs the suite and prints the report.
pub fn run(args: &TacticsArgs, compute: &bredon_infer::Compute) -> Result<()> {
    let suite = load_suite(args)?;
    if let Some(path) = &args.write_suite {
        return write_suite(path, &suite);
    }
    let model = match &args.model {
        Some(p) => Some(model_arg::load(Some(p), None, model_arg::Lanes::One, compute)?),
        None => None,
    };
    let model_size = model.as_ref().and_then(|m| m.meta.as_ref()).map(|m| m.size);
    let config = SearchConfig { tactics: !args.no_tactics, ..play_config() };
    println!(
        "tactics suite: {} positions, {} visits, tactical checks {}",
        suite.len(),
        args.visits,
        if args.no_tactics { "off" } else { "on" }
    );
    println!("{:>4}  {:<13} {:>5}  {:>16}  {:>16}", "size", "category", "n", "uniform", "model");
    let mut groups: BTreeMap<(usize, Tactic), (Tally, Tally)> = BTreeMap::new();
    for tp in &suite {
        let size = tp.position.size();
        let entry = groups.entry((size, tp.tactic)).or_default();
        solve(tp, &UniformEvaluator, &config, args, &mut entry.0, "uniform");
        if let Some(m) = &model
            && model_size == Some(size)
        {
            solve(tp, &*m.evaluator, &config, args, &mut entry.1, "model");
        }
    }
    let mut totals: BTreeMap<Tactic, (Tally, Tally)> = BTreeMap::new();
    for ((size, tactic), (u, m)) in &groups {
        println!("{:>4}  {:<13} {:>5}  {}  {}", format!("{size}x{size}"), tactic.name(), u.tried, u.cell(), m.cell());
        let t = totals.entry(*tactic).or_default();
        for (acc, x) in [(&mut t.0, u), (&mut t.1, m)] {
            acc.solved += x.solved;
            acc.tried += x.tried;
            acc.time += x.time;
        }
    }
    for (tactic, (u, m)) in &totals {
        println!("{:>4}  {:<13} {:>5}  {}  {}", "all", tactic.name(), u.tried, u.cell(), m.cell());
    }
    Ok(())
}

/// Searches one position and counts whether the chosen move is a solution.
fn solve(
    tp: &TacticPosition,
    evaluator: &dyn Evaluator,
    config: &SearchConfig,
    args: &TacticsArgs,
    tally: &mut Tally,
    who: &str,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(tally.tried as u64);
    let began = Instant::now();
    let result = search_once(&tp.position, evaluator, config, Budget::Visits(args.visits), &mut rng);
    tally.time += began.elapsed();
    tally.tried += 1;
    let ok = result.best_move.is_some_and(|m| tp.solutions.contains(&m));
    tally.solved += ok as usize;
    if !ok && args.failures {
        let played = result.best_move.map(|m| m.to_ptn(tp.position.size())).unwrap_or_default();
        println!("  {who} failed {} ({}): played {played}", write_tps(&tp.position), tp.tactic.name());
    }
}

/// Reads the sources (or the defaults), classifies every position once.
fn load_suite(args: &TacticsArgs) -> Result<Vec<TacticPosition>> {
    let mut positions: Vec<Position> = Vec::new();
    if args.sources.is_empty() {
        match bredon_rules::testdata::shared_data_dir() {
            Some(dir) if dir.join("games").is_dir() => positions.extend(read_positions(&dir.join("games"))?),
            _ => {
                eprintln!("note: shared/data/games not found (set BREDON_SHARED_DATA); using the self-play suite only")
            }
        }
        positions.extend(parse_tps_lines(SELFPLAY_SUITE).context("tactics/selfplay.tps")?);
    }
    for src in &args.sources {
        positions.extend(read_positions(src)?);
    }
    let mut seen = HashSet::new();
    let mut per_group: BTreeMap<(usize, Tactic), usize> = BTreeMap::new();
    let mut suite = Vec::new();
    for pos in positions {
        if !seen.insert((
            pos.size(),
            pos.hash(),
            pos.reserves(bredon_rules::Color::White),
            pos.reserves(bredon_rules::Color::Black),
        )) {
            continue;
        }
        if let Some(tp) = classify(&pos) {
            let n = per_group.entry((pos.size(), tp.tactic)).or_default();
            if args.limit == 0 || *n < args.limit {
                *n += 1;
                suite.push(tp);
            }
        }
    }
    if suite.is_empty() {
        bail!("no tactical positions in the sources");
    }
    suite.sort_by_key(|tp| (tp.position.size(), tp.tactic));
    Ok(suite)
}

/// Writes the suite as TPS lines, grouped under comment headers.
fn write_suite(path: &std::path::Path, suite: &[TacticPosition]) -> Result<()> {
    let mut text = String::from("# Bredon tactics suite: one TPS per line (komi 0), classified when read.\n");
    let mut last = None;
    for tp in suite {
        let key = (tp.position.size(), tp.tactic);
        if last != Some(key) {
            text.push_str(&format!("# {}x{} {}\n", key.0, key.0, key.1.name()));
            last = Some(key);
        }
        text.push_str(&write_tps(&tp.position));
        text.push('\n');
    }
    bredon_storage::fsutil::atomic_write(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {} positions to {}", suite.len(), path.display());
    Ok(())
}
