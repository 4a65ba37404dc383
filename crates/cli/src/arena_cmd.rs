//! `bredon arena`: matches between checkpoints, baselines and external TEI engines, with
//! Elo ratings, a plot and TensorBoard curves.

use anyhow::{Context, Result, bail};
use bredon_arena::{
    EloOptions, EloPoint, GameRecord, GateConfig, GateState, MatchConfig, PlayerSpec, RatingsTable, Schedule,
    SearchSettings, check_players, entrants_from_specs, plot_elo, rate_results, run_arena, run_gate, run_match,
};
use bredon_selfplay::config::{GateTest, RunConfig};
use bredon_selfplay::rundir::RunDir;
use bredon_selfplay::tb::TbLogger;
use bredon_storage::fsutil::atomic_write as write_atomic;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

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
pub fn run(args: ArenaArgs) -> Result<()> {
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
    config.threads = args.threads.unwrap_or_else(cores).max(1);
    let table = match &args.run {
        Some(location) => {
            let ladder = LadderOptions {
                baselines: args.players.clone(),
                every: args.every,
                max_checkpoints: args.max_checkpoints,
                visits_from_run: args.visits.is_none() && args.config.is_none(),
            };
            // A run on an object store is rated in a local copy; its arena/ goes back.
            let (opened, _) = crate::run_arg::open_whole(location, "arena")?;
            let table = rate_run(&opened.dir, &ladder, config)?;
            if let Some(r) = &opened.remote {
                let n = r.push_tree("arena")?;
                eprintln!("uploaded {n} arena files to {location}/arena/");
            }
            table
        }
        None => free_match(&args, config)?,
    };
    println!("{table}");
    Ok(())
}

/// Parses `--player` strings (each `SpecError` quotes the string it is about).
fn parse_specs(texts: &[String]) -> Result<Vec<PlayerSpec>> {
    Ok(texts.iter().map(|t| t.parse::<PlayerSpec>()).collect::<Result<_, _>>()?)
}

/// Games played in parallel by default: the number of cores.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A checkpoint of `run` as a player named after it, searching with the run's algorithm.
fn checkpoint_spec(run: &RunDir, cfg: &RunConfig, name: &str) -> PlayerSpec {
    PlayerSpec::Checkpoint {
        path: run.checkpoint_dir(name),
        visits: None,
        name: Some(name.to_string()),
        settings: SearchSettings { search: Some(cfg.search.algorithm), ..SearchSettings::default() },
    }
}

/// Match settings for games on a run's board (size, komi) with all cores.
fn run_match_config(cfg: &RunConfig, base: MatchConfig) -> MatchConfig {
    MatchConfig { size: cfg.game.size, half_komi: cfg.game.half_komi(), threads: cores(), ..base }
}

/// A progress line per game, counting towards `total`.
fn progress(total: usize) -> impl FnMut(&GameRecord) {
    let mut n = 0usize;
    move |r: &GameRecord| {
        n += 1;
        eprintln!("[{n}/{total}] {} vs {}: {} in {} plies ({})", r.white, r.black, r.result, r.plies, r.opening);
    }
}

/// Plays `entrants` under `config` into `out`, calling `on_game` after each game.
fn play_games(
    config: &MatchConfig,
    entrants: &[bredon_arena::Entrant],
    out: &Path,
    on_game: &mut dyn FnMut(&GameRecord),
) -> Result<()> {
    run_match(config, entrants, out, &mut |r| {
        on_game(r);
        ControlFlow::Continue(())
    })?;
    Ok(())
}

fn free_match(args: &ArenaArgs, mut config: MatchConfig) -> Result<RatingsTable> {
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
    Ok(run_arena(&config, &specs, out, &mut progress(total))?)
}

/// The training loop's gate: checkpoint `generation` plays the current self-play model
/// (the `best` pointer, else the previous checkpoint) under `[eval.gate]`, and `best`
/// moves to it only if it passes. Games go to `<run>/arena/gating/`.
pub fn gate_checkpoint(root: &Path, cfg: &RunConfig, generation: u32) -> Result<()> {
    let run = RunDir::new(root);
    let g = &cfg.eval.gate;
    let candidate = RunDir::model_name(generation);
    let incumbent = match run.best()? {
        Some(b) => b,
        None => RunDir::model_name(generation.saturating_sub(1)),
    };
    if incumbent == candidate {
        return Ok(());
    }
    let visits = if g.visits > 0 { g.visits } else { cfg.eval.visits };
    let base = MatchConfig {
        games_per_pairing: g.games.max(2),
        visits: visits as u64,
        max_plies: cfg.selfplay.max_plies,
        seed: generation as u64,
        ..MatchConfig::default()
    };
    let config = run_match_config(cfg, base);
    let gate = match g.test {
        GateTest::Sprt => {
            GateConfig::Sprt { elo0: g.elo0, elo1: g.elo1, alpha: g.alpha, beta: g.beta, model: Default::default() }
        }
        GateTest::Fixed => GateConfig::Fixed { games: g.games as u64, threshold: g.threshold },
    };
    let entrants = entrants_from_specs(
        &config,
        &[checkpoint_spec(&run, cfg, &candidate), checkpoint_spec(&run, cfg, &incumbent)],
    )?;
    let report = run_gate(&config, &entrants[0], &entrants[1], &gate, &run.arena_dir().join("gating"))?;
    let accepted = report.state == GateState::AcceptH1;
    run.set_best(if accepted { &candidate } else { &incumbent })?;
    eprintln!(
        "gate: {candidate} vs {incumbent}: {:.1}% over {} games -> {}",
        report.score * 100.0,
        report.games,
        if accepted { format!("{candidate} plays self-play now") } else { format!("{incumbent} keeps playing") }
    );
    Ok(())
}

/// The training loop's hook: rates every `every`-th checkpoint of the run at `root`
/// against the baselines (`games` per pairing, `visits` per move), like
/// `bredon arena --run ROOT --every EVERY`.
pub fn update_ladder(root: &Path, every: u32, games: usize, visits: u64) -> Result<RatingsTable> {
    let ladder = LadderOptions {
        baselines: Vec::new(),
        every: Some(every),
        max_checkpoints: usize::MAX,
        visits_from_run: false,
    };
    let config = MatchConfig { games_per_pairing: games, visits, threads: cores(), ..MatchConfig::default() };
    rate_run(root, &ladder, config)
}

/// Which checkpoints of a run to rate, and against what.
pub struct LadderOptions {
    /// Baseline player specs (empty: `uniform:VISITS` and `rollout:VISITS`); the first is
    /// in the ladder, the others play the newest checkpoint.
    pub baselines: Vec<String>,
    /// Every K-th checkpoint (default: spaced to at most `max_checkpoints`).
    pub every: Option<u32>,
    /// The most checkpoints to rate when `every` is not given.
    pub max_checkpoints: usize,
    /// Take the visits per move from the run's `[eval] visits`.
    pub visits_from_run: bool,
}

/// The checkpoints to rate: every `every`-th, plus the first and the newest.
pub fn pick_checkpoints(all: &[String], every: Option<u32>, max: usize) -> Vec<String> {
    if all.is_empty() {
        return Vec::new();
    }
    let every = every.map(|e| e.max(1) as usize).unwrap_or_else(|| all.len().div_ceil(max.max(2) - 1).max(1));
    let mut picked: Vec<String> = all.iter().step_by(every).cloned().collect();
    let last = all.last().expect("non-empty");
    if picked.last() != Some(last) {
        picked.push(last.clone());
    }
    picked
}

/// Rates the checkpoints of a run (ladder schedule, anchored at the first checkpoint),
/// then writes the plot and the TensorBoard curve.
pub fn rate_run(run_path: &Path, ladder: &LadderOptions, config: MatchConfig) -> Result<RatingsTable> {
    let run = RunDir::new(run_path);
    let run_cfg = RunConfig::load(&run.config_path())
        .with_context(|| format!("{} is not a run directory", run_path.display()))?;
    let threads = config.threads;
    let mut config = MatchConfig { threads, ..run_match_config(&run_cfg, config) };
    if ladder.visits_from_run {
        config.visits = run_cfg.eval.visits as u64;
    }
    config.validate()?;
    let checkpoints = pick_checkpoints(&run.checkpoints(), ladder.every, ladder.max_checkpoints);
    if checkpoints.is_empty() {
        bail!("{} has no checkpoints yet", run_path.display());
    }
    let baselines = if ladder.baselines.is_empty() {
        vec![format!("uniform:{}", config.visits), format!("rollout:{}", config.visits)]
    } else {
        ladder.baselines.clone()
    };
    let baselines = parse_specs(&baselines)?;
    let ckpt_specs: Vec<PlayerSpec> = checkpoints.iter().map(|name| checkpoint_spec(&run, &run_cfg, name)).collect();
    let out = run.arena_dir();
    config.elo = EloOptions { anchor: Some(checkpoints[0].clone()), ..config.elo.clone() };

    // The ladder: first baseline, then the checkpoints in training order.
    let mut ladder_specs = vec![baselines[0].clone()];
    ladder_specs.extend(ckpt_specs.iter().cloned());
    let ladder_cfg = MatchConfig { schedule: Schedule::Ladder, ..config.clone() };
    let ladder_players = entrants_from_specs(&ladder_cfg, &ladder_specs)?;
    check_players(&ladder_players[..1])?;
    let mut total =
        bredon_arena::pairings(Schedule::Ladder, ladder_players.len()).len() * config.pairs_per_pairing() * 2;
    // Further baselines play the newest checkpoint.
    let gauntlet_cfg = MatchConfig { schedule: Schedule::Gauntlet, ..config.clone() };
    let mut gauntlet = Vec::new();
    if baselines.len() > 1 {
        let mut specs = vec![ckpt_specs.last().expect("non-empty").clone()];
        specs.extend(baselines[1..].iter().cloned());
        gauntlet = entrants_from_specs(&gauntlet_cfg, &specs)?;
        check_players(&gauntlet[1..])?;
        total += (gauntlet.len() - 1) * config.pairs_per_pairing() * 2;
    }
    eprintln!(
        "arena: {} checkpoints ({} .. {}), baselines {}, {} games per pairing, {} visits, {} threads; up to {total} games (games already played are skipped)",
        checkpoints.len(),
        checkpoints[0],
        checkpoints.last().expect("non-empty"),
        baselines.iter().map(|b| b.name()).collect::<Vec<_>>().join(", "),
        config.games_per_pairing,
        config.visits,
        config.threads
    );
    let mut on_game = progress(total);
    play_games(&ladder_cfg, &ladder_players, &out, &mut on_game)?;
    if !gauntlet.is_empty() {
        play_games(&gauntlet_cfg, &gauntlet, &out, &mut on_game)?;
    }
    let mut names: Vec<String> = checkpoints.clone();
    names.extend(baselines.iter().map(|b| b.name()));
    let table = rate_results(&out.join(&config.results_file), &names, &config.elo, &out)?;
    write_curves(&run, &table, &checkpoints, &baselines.iter().map(|b| b.name()).collect::<Vec<_>>())?;
    Ok(table)
}

/// Elo over training: `arena/elo.svg` (Elo against minutes of training, the checkpoints
/// with 95% intervals, baselines as flat lines), `arena/elo-curve.csv` (the same points
/// with generation, step and minutes) and TensorBoard scalars under `tensorboard/arena`
/// (against the step).
fn write_curves(run: &RunDir, table: &RatingsTable, checkpoints: &[String], baselines: &[String]) -> Result<()> {
    let mut points = Vec::new();
    let mut max_minutes = 0.0f64;
    let mut tb = TbLogger::open(&run.tensorboard_dir().join("arena"));
    let mut csv = String::from("name,generation,step,minutes,elo,lo95,hi95\n");
    // A run started from a trained model (`--init-from`) counts that model's minutes too.
    let before = run.init_record()?.and_then(|r| r.minutes).unwrap_or(0.0);
    for name in checkpoints {
        let (Some(row), Ok(state)) = (table.get(name), run.read_state(name)) else { continue };
        let minutes = before + state.elapsed_secs / 60.0;
        max_minutes = max_minutes.max(minutes);
        points.push(EloPoint { x: minutes, elo: row.elo, lo: row.lo, hi: row.hi, label: "checkpoints".into() });
        tb.scalars(state.step, &[("arena/elo", row.elo), ("arena/elo_lo", row.lo), ("arena/elo_hi", row.hi)]);
        csv.push_str(&format!(
            "{name},{},{},{minutes:.2},{:.1},{:.1},{:.1}\n",
            state.generation, state.step, row.elo, row.lo, row.hi
        ));
    }
    tb.close();
    for name in baselines {
        if let Some(row) = table.get(name) {
            for x in [before, max_minutes] {
                points.push(EloPoint { x, elo: row.elo, lo: row.lo, hi: row.hi, label: name.clone() });
            }
        }
    }
    let path = run.arena_dir().join("elo.svg");
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut x_desc = format!("minutes of training (wall clock; this machine has {cores} cores)");
    if before > 0.0 {
        x_desc = format!("minutes of training, {before:.0} of them before gen-0000 (wall clock; {cores} cores)");
    }
    plot_elo(&points, &x_desc, &path)?;
    write_atomic(&run.arena_dir().join("elo-curve.csv"), csv.as_bytes())?;
    eprintln!("wrote {} and elo-curve.csv", path.display());
    Ok(())
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

    #[test]
    fn picks_first_spaced_and_newest() {
        let all: Vec<String> = (0..25).map(|g| format!("gen-{g:04}")).collect();
        let p = pick_checkpoints(&all, Some(10), 12);
        assert_eq!(p, vec!["gen-0000", "gen-0010", "gen-0020", "gen-0024"]);
        let p = pick_checkpoints(&all, None, 6);
        assert!(p.len() <= 7 && p[0] == "gen-0000" && p.last().unwrap() == "gen-0024", "{p:?}");
        assert_eq!(pick_checkpoints(&all[..1], None, 12), vec!["gen-0000"]);
        assert!(pick_checkpoints(&[], None, 12).is_empty());
    }
}
