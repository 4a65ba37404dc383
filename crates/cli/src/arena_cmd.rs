//! `bredon arena`: matches between checkpoints, baselines and external TEI engines, with
//! Elo ratings, a plot and TensorBoard curves.

use anyhow::{Context, Result, bail};
use bredon_arena::training::cores;
use bredon_arena::{
    GameRecord, Ladder, LadderOptions, LadderVisits, MatchConfig, PlayerSpec, RatingsTable, Schedule, run_arena_on,
};
use bredon_selfplay::rundir::{RunDir, layout};
use std::path::PathBuf;

/// Who plays whom in a free match.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleArg {
    /// Everyone against everyone.
    RoundRobin,
    /// The first player against each of the others.
    Gauntlet,
}

/// Arguments of `bredon arena`.
#[derive(clap::Args, Debug)]
pub struct ArenaArgs {
    /// A training run: rate its checkpoints against each other and the baselines
    /// (writes `<run>/arena/`: games, results.jsonl, ratings.csv/json, elo.svg).
    #[arg(long)]
    pub run: Option<bredon_storage::RunLocation>,
    /// A player, as `random`, `uniform:VISITS`, `checkpoint:PATH`, or
    /// `tei:PROGRAM ARGS;name=NAME;option.HalfKomi=4` (repeat the flag). With `--run` these
    /// are the baselines (default `uniform:VISITS` and `rollout:VISITS`); the first is in
    /// the ladder and the others play the newest checkpoint.
    #[arg(long = "player")]
    pub players: Vec<String>,
    /// Match settings (TOML, the fields of `MatchConfig`); flags override them.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Output directory of a free match (required without `--run`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Board size of a free match (with `--run`: the run's).
    #[arg(long)]
    pub size: Option<usize>,
    /// Komi in half points of a free match (with `--run`: the run's).
    #[arg(long, allow_hyphen_values = true)]
    pub half_komi: Option<i8>,
    /// Games per pairing (played in colour-swapped pairs).
    #[arg(long)]
    pub games: Option<usize>,
    /// Visits per move for players that set none of their own.
    #[arg(long)]
    pub visits: Option<u64>,
    /// Games played in parallel (default: the number of cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Schedule of a free match.
    #[arg(long, value_enum, default_value_t = ScheduleArg::RoundRobin)]
    pub schedule: ScheduleArg,
    /// With `--run`: use every K-th checkpoint (default: spaced so that at most
    /// `--max-checkpoints` are rated). The first and the newest are always included.
    #[arg(long)]
    pub every: Option<u32>,
    /// With `--run`: the most checkpoints to rate when `--every` is not given.
    #[arg(long, default_value_t = 12)]
    pub max_checkpoints: usize,
}

/// Runs the arena and prints the ratings table.
pub fn run(args: ArenaArgs, compute: &bredon_infer::Compute) -> Result<()> {
    let mut config = match &args.config {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            toml::from_str::<MatchConfig>(&text).with_context(|| format!("{}", p.display()))?
        }
        None => MatchConfig::default(),
    };
    if let Some(g) = args.games {
        config.games_per_pairing = g;
    }
    if let Some(v) = args.visits {
        config.visits = v;
    }
    // A match config's `threads` (e.g. 1: one game at a time, for clocks and external
    // engines) holds unless `--threads` says otherwise; without a config, one game per core.
    config.threads = match (args.threads, &args.config) {
        (Some(t), _) => t,
        (None, Some(_)) => config.threads,
        (None, None) => cores(),
    }
    .max(1);
    let table = match &args.run {
        Some(location) => {
            let visits_from_run = args.visits.is_none() && args.config.is_none();
            let options = LadderOptions {
                baselines: parse_specs(&args.players)?,
                every: args.every,
                max_checkpoints: args.max_checkpoints,
                visits: if visits_from_run { LadderVisits::FromRun } else { LadderVisits::FromMatch },
                compute: compute.clone(),
            };
            // A run on an object store is rated in a local copy; its arena/ goes back.
            let (opened, _) = crate::run_arg::open_whole(location, "arena")?;
            crate::run_arg::one_run(&opened.dir, "arena --run")?;
            let run = RunDir::new(&opened.dir);
            let ladder = Ladder::plan(&run, &options, config)?;
            eprintln!("{ladder}");
            let total = ladder.total_games;
            let table = ladder.play(&mut progress(total))?;
            eprintln!("wrote {} and {}", run.path(layout::ELO_PLOT).display(), layout::ELO_CURVE);
            if let Some(r) = &opened.remote {
                let n = r.push_tree(layout::ARENA)?;
                eprintln!("uploaded {n} arena files to {location}/{}/", layout::ARENA);
            }
            table
        }
        None => free_match(&args, config, compute)?,
    };
    println!("{table}");
    Ok(())
}

/// Parses `--player` strings (each `SpecError` quotes the string it is about).
fn parse_specs(texts: &[String]) -> Result<Vec<PlayerSpec>> {
    Ok(texts.iter().map(|t| t.parse::<PlayerSpec>()).collect::<Result<_, _>>()?)
}

/// A progress line per game, counting towards `total`.
fn progress(total: usize) -> impl FnMut(&GameRecord) {
    let mut n = 0usize;
    move |r: &GameRecord| {
        n += 1;
        eprintln!("[{n}/{total}] {} vs {}: {} in {} plies ({})", r.white, r.black, r.result, r.plies, r.opening);
    }
}

fn free_match(args: &ArenaArgs, mut config: MatchConfig, compute: &bredon_infer::Compute) -> Result<RatingsTable> {
    let Some(out) = &args.out else { bail!("a free match needs --out DIR (or use --run DIR)") };
    if args.players.len() < 2 {
        bail!("a match needs at least two --player");
    }
    if let Some(s) = args.size {
        config.size = s;
    }
    if let Some(k) = args.half_komi {
        config.half_komi = k;
    }
    config.schedule = match args.schedule {
        ScheduleArg::RoundRobin => Schedule::RoundRobin,
        ScheduleArg::Gauntlet => Schedule::Gauntlet,
    };
    let specs = parse_specs(&args.players)?;
    let total = bredon_arena::pairings(config.schedule, specs.len()).len() * config.pairs_per_pairing() * 2;
    Ok(run_arena_on(&config, &specs, compute, out, &mut progress(total))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The match configs in `experiments/` (those without a `[game]` table, which training
    /// configs have) load as `bredon arena --config` reads them.
    #[test]
    fn experiment_match_configs_load() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
        let mut loaded = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if path.extension().is_some_and(|e| e == "toml") && !text.contains("[game]") {
                let cfg: MatchConfig = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert!((3..=8).contains(&cfg.size), "{}", path.display());
                loaded.push(path.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
        assert!(loaded.iter().any(|n| n == "clock-5x5.toml") && loaded.len() >= 4, "{loaded:?}");
    }
}
