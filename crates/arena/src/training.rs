//! A training run's checkpoints in the arena: the **Elo ladder** (`bredon arena --run`,
//! and every `[eval] arena_every` generations during training) and **gating** (`[eval.gate]`:
//! a new checkpoint replaces the self-play model only if it beats it), and the **outside
//! anchor** ([`Anchor`], `[eval.anchor]`: checkpoints rated against a fixed player). The run is read
//! and written through `bredon_selfplay`'s [`RunDir`], which owns its layout; the training
//! loop calls in through [`training_hook`].
//!
//! The ladder writes in `<run>/arena/`: the games, `results.jsonl`, `ratings.csv` and
//! `.json`, `elo.svg` (Elo against minutes of training), `elo-curve.csv` (the same points
//! with generation, step and minutes; [`crate::read_elo_curve`] reads it) and TensorBoard
//! scalars under `logs/tensorboard/arena`. Gating plays in `<run>/arena/gating/`, the
//! anchor in `<run>/arena/anchor/` (the same files, its curve on the anchor's scale).

use std::fmt;
use std::ops::ControlFlow;

use bredon_selfplay::config::{GateTest, RunConfig};
use bredon_selfplay::rundir::{Generation, RunDir, layout};
use bredon_selfplay::tb::TbLogger;
use bredon_selfplay::train::CheckpointHook;

use crate::arena::{
    GateReport, MatchConfig, Schedule, check_players, entrants_from_specs, pairings, rate_results, run_gate, run_match,
};
use crate::elo::{EloOptions, RatingsTable};
use crate::error::ArenaError;
use crate::plot::{EloCurveRow, EloPoint, plot_elo, write_elo_curve};
use crate::results::GameRecord;
use crate::spec::{Entrant, PlayerSpec, SearchSettings};
use crate::sprt::{GateConfig, GateState};

/// Games played in parallel by default: the number of cores.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A checkpoint of `run` as a player named after it, searching with the run's algorithm.
fn checkpoint_spec(run: &RunDir, cfg: &RunConfig, generation: Generation) -> PlayerSpec {
    PlayerSpec::Checkpoint {
        path: run.checkpoint_dir(generation),
        visits: None,
        name: Some(generation.to_string()),
        inference: None,
        settings: SearchSettings { search: Some(cfg.search.algorithm), ..SearchSettings::default() },
    }
}

/// Match settings for games on a run's board (size, komi).
fn on_run_board(cfg: &RunConfig, base: MatchConfig) -> MatchConfig {
    MatchConfig { size: cfg.game.size, half_komi: cfg.game.half_komi(), ..base }
}

/// Where a ladder's visits per move come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LadderVisits {
    /// The match config's `visits`.
    FromMatch,
    /// The run's `[eval] visits`.
    FromRun,
}

/// Which checkpoints of a run to rate, and against what.
#[derive(Clone, Debug)]
pub struct LadderOptions {
    /// Baseline players (empty: `uniform:VISITS` and `rollout:VISITS`); the first is in
    /// the ladder, the others play the newest checkpoint.
    pub baselines: Vec<PlayerSpec>,
    /// Every K-th checkpoint (default: spaced to at most `max_checkpoints`).
    pub every: Option<u32>,
    /// The most checkpoints to rate when `every` is not given.
    pub max_checkpoints: usize,
    /// Where the visits per move come from.
    pub visits: LadderVisits,
    /// Where the checkpoints' networks run.
    pub compute: bredon_infer::Compute,
}

/// The checkpoints to rate: every `every`-th, plus the first and the newest (default
/// spacing: at most `max` of them).
pub fn pick_checkpoints(all: &[Generation], every: Option<u32>, max: usize) -> Vec<Generation> {
    let Some(&last) = all.last() else { return Vec::new() };
    let every = every.map(|e| e.max(1) as usize).unwrap_or_else(|| all.len().div_ceil(max.max(2) - 1).max(1));
    let mut picked: Vec<Generation> = all.iter().step_by(every).copied().collect();
    if picked.last() != Some(&last) {
        picked.push(last);
    }
    picked
}

/// A run's Elo ladder, planned: which checkpoints play which baselines, under which
/// settings. `Display` is the one-line plan; [`Ladder::play`] plays it.
pub struct Ladder {
    run: RunDir,
    /// The checkpoints rated, oldest first.
    pub checkpoints: Vec<Generation>,
    /// The baselines (the first in the ladder, the others against the newest checkpoint).
    pub baselines: Vec<PlayerSpec>,
    /// The match settings (the run's board).
    pub config: MatchConfig,
    /// Games the plan holds at most (games already in the results file are skipped).
    pub total_games: usize,
    ladder: Vec<Entrant>,
    gauntlet: Vec<Entrant>,
}

impl Ladder {
    /// Plans the ladder of `run` (ladder schedule, anchored at the first checkpoint
    /// rated). The players are started once here, so a bad baseline is an error now.
    pub fn plan(run: &RunDir, options: &LadderOptions, config: MatchConfig) -> Result<Ladder, ArenaError> {
        let cfg = RunConfig::load(&run.config_path())
            .map_err(|source| ArenaError::NotARun { path: run.root().to_path_buf(), source })?;
        let mut config = on_run_board(&cfg, config);
        if options.visits == LadderVisits::FromRun {
            config.visits = cfg.eval.visits as u64;
        }
        config.validate()?;
        let checkpoints = pick_checkpoints(&run.checkpoints(), options.every, options.max_checkpoints);
        let (Some(&first), Some(&newest)) = (checkpoints.first(), checkpoints.last()) else {
            return Err(ArenaError::NoCheckpoints { run: run.root().to_path_buf() });
        };
        let baselines =
            if options.baselines.is_empty() { default_baselines(config.visits) } else { options.baselines.clone() };
        config.elo = EloOptions { anchor: Some(first.to_string()), ..config.elo.clone() };
        let pairs = config.pairs_per_pairing();
        // The ladder: the first baseline, then the checkpoints in training order.
        let mut specs = vec![baselines[0].clone()];
        specs.extend(checkpoints.iter().map(|&g| checkpoint_spec(run, &cfg, g)));
        let compute = &options.compute;
        let ladder =
            entrants_from_specs(&MatchConfig { schedule: Schedule::Ladder, ..config.clone() }, &specs, compute)?;
        check_players(&ladder[..1])?;
        let mut total_games = pairings(Schedule::Ladder, ladder.len()).len() * pairs * 2;
        // Further baselines play the newest checkpoint.
        let mut gauntlet = Vec::new();
        if baselines.len() > 1 {
            let mut specs = vec![checkpoint_spec(run, &cfg, newest)];
            specs.extend(baselines[1..].iter().cloned());
            gauntlet =
                entrants_from_specs(&MatchConfig { schedule: Schedule::Gauntlet, ..config.clone() }, &specs, compute)?;
            check_players(&gauntlet[1..])?;
            total_games += (gauntlet.len() - 1) * pairs * 2;
        }
        Ok(Ladder { run: run.clone(), checkpoints, baselines, config, total_games, ladder, gauntlet })
    }

    /// Plays the ladder's games (`on_game` after each), rates every game in the results
    /// file and writes the ratings, the Elo curve (`elo.svg`, `elo-curve.csv`) and its
    /// TensorBoard scalars.
    pub fn play(self, on_game: &mut dyn FnMut(&GameRecord)) -> Result<RatingsTable, ArenaError> {
        let out = self.run.arena_dir();
        let mut each = |r: &GameRecord| {
            on_game(r);
            ControlFlow::Continue(())
        };
        run_match(&MatchConfig { schedule: Schedule::Ladder, ..self.config.clone() }, &self.ladder, &out, &mut each)?;
        if !self.gauntlet.is_empty() {
            let gauntlet = MatchConfig { schedule: Schedule::Gauntlet, ..self.config.clone() };
            run_match(&gauntlet, &self.gauntlet, &out, &mut each)?;
        }
        let baselines: Vec<String> = self.baselines.iter().map(PlayerSpec::name).collect();
        let mut names: Vec<String> = self.checkpoints.iter().map(Generation::to_string).collect();
        names.extend(baselines.iter().cloned());
        let table = rate_results(&out.join(&self.config.results_file), &names, &self.config.elo, &out)?;
        write_curves(&self.run, &table, &self.checkpoints, &baselines, &LADDER_CURVES)?;
        Ok(table)
    }
}

impl fmt::Display for Ladder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.baselines.iter().map(PlayerSpec::name).collect();
        write!(
            f,
            "arena: {} checkpoints ({} .. {}), baselines {}, {} games per pairing, {} visits, {} threads; \
             up to {} games (games already played are skipped)",
            self.checkpoints.len(),
            self.checkpoints[0],
            self.checkpoints[self.checkpoints.len() - 1],
            names.join(", "),
            self.config.games_per_pairing,
            self.config.visits,
            self.config.threads,
            self.total_games,
        )
    }
}

/// The default baselines: the uniform-policy search and the rollout search at `visits`.
fn default_baselines(visits: u64) -> Vec<PlayerSpec> {
    let visits = visits.clamp(1, u32::MAX as u64) as u32;
    let settings = SearchSettings::default();
    vec![
        PlayerSpec::Uniform { visits, seed: None, name: None, settings: settings.clone() },
        PlayerSpec::Rollout { visits, rollouts: None, seed: None, name: None, settings },
    ]
}

/// Elo over training: `arena/elo.svg` (Elo against minutes of training, the checkpoints
/// with 95% intervals, baselines as flat lines), `arena/elo-curve.csv` (the same points
/// with generation, step and minutes) and TensorBoard scalars under `tensorboard/arena`
/// (against the step).
fn write_curves(
    run: &RunDir,
    table: &RatingsTable,
    checkpoints: &[Generation],
    baselines: &[String],
    files: &CurveFiles,
) -> Result<(), ArenaError> {
    let mut points = Vec::new();
    let mut rows = Vec::new();
    let mut tb = TbLogger::open(&run.path(layout::ARENA_TENSORBOARD));
    // A run started from a trained model (`--init-from`) counts that model's minutes too.
    let before = run.init_record()?.and_then(|r| r.minutes).unwrap_or(0.0);
    let mut max_minutes = 0.0f64;
    for &generation in checkpoints {
        let name = generation.to_string();
        let (Some(row), Ok(state)) = (table.get(&name), run.read_state(generation)) else { continue };
        let minutes = before + state.elapsed_secs / 60.0;
        max_minutes = max_minutes.max(minutes);
        points.push(EloPoint { x: minutes, elo: row.elo, lo: row.lo, hi: row.hi, label: "checkpoints".into() });
        let [elo, lo, hi] = files.tags;
        tb.scalars(state.step, &[(elo, row.elo), (lo, row.lo), (hi, row.hi)]);
        rows.push(EloCurveRow {
            name,
            generation: state.generation.number(),
            step: state.step,
            minutes,
            elo: row.elo,
            lo95: row.lo,
            hi95: row.hi,
        });
    }
    tb.close();
    for name in baselines {
        if let Some(row) = table.get(name) {
            for x in [before, max_minutes] {
                points.push(EloPoint { x, elo: row.elo, lo: row.lo, hi: row.hi, label: name.clone() });
            }
        }
    }
    let x_desc = if before > 0.0 {
        format!("minutes of training, {before:.0} of them before gen-0000 (wall clock; {} cores)", cores())
    } else {
        format!("minutes of training (wall clock; this machine has {} cores)", cores())
    };
    plot_elo(&points, &x_desc, &run.path(files.plot))?;
    crate::results::write_atomic(&run.path(files.csv), write_elo_curve(&rows).as_bytes())?;
    Ok(())
}

/// Where [`write_curves`] writes a curve: the chart, the table and the TensorBoard tags
/// (Elo, its 95% interval's low and high ends).
struct CurveFiles {
    plot: &'static str,
    csv: &'static str,
    tags: [&'static str; 3],
}

/// The Elo ladder's curve, anchored at the first checkpoint rated.
const LADDER_CURVES: CurveFiles =
    CurveFiles { plot: layout::ELO_PLOT, csv: layout::ELO_CURVE, tags: ["arena/elo", "arena/elo_lo", "arena/elo_hi"] };

/// The curve on the outside anchor's scale.
const ANCHOR_CURVES: CurveFiles = CurveFiles {
    plot: layout::ANCHOR_ELO_PLOT,
    csv: layout::ANCHOR_ELO_CURVE,
    tags: ["arena/anchor_elo", "arena/anchor_elo_lo", "arena/anchor_elo_hi"],
};

/// A run's outside anchor (`[eval.anchor]`), parsed and started once: a fixed player
/// (another engine over TEI, typically) that every `every`-th checkpoint plays, so the
/// run's Elo reads on a scale that does not move with the run.
#[derive(Clone, Debug)]
pub struct Anchor {
    /// The anchor player.
    pub spec: PlayerSpec,
    /// Play it after every this many generations.
    pub every: u32,
    /// Games per checkpoint.
    pub games: usize,
}

/// One checkpoint's anchor match ([`Anchor::play`]).
#[derive(Clone, Debug)]
pub struct AnchorOutcome {
    /// The checkpoint.
    pub generation: Generation,
    /// The anchor's name.
    pub anchor: String,
    /// The checkpoint's row of the fit (its games, score and Elo on the anchor's scale).
    pub row: crate::elo::RatingRow,
}

impl fmt::Display for AnchorOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.row;
        write!(
            f,
            "anchor: {} vs {}: {:.1}% over {} games ({}-{}-{}), Elo {:+.0} [{:+.0}, {:+.0}] on {}'s scale",
            self.generation,
            self.anchor,
            r.score * 100.0,
            r.games,
            r.wins,
            r.draws,
            r.losses,
            r.elo,
            r.lo,
            r.hi,
            self.anchor
        )
    }
}

impl Anchor {
    /// The anchor of a run with config `cfg`, `None` when `[eval.anchor] player` is unset.
    /// The player is started once here, so a bad spec or a missing engine is an error
    /// before training starts, not a forfeit after the first generation.
    pub fn from_config(cfg: &RunConfig, compute: &bredon_infer::Compute) -> Result<Option<Anchor>, ArenaError> {
        let settings = &cfg.eval.anchor;
        let Some(text) = &settings.player else { return Ok(None) };
        let bad = |source: Box<dyn std::error::Error + Send + Sync>| ArenaError::Anchor { spec: text.clone(), source };
        let spec: PlayerSpec = text.parse().map_err(|e: crate::error::SpecError| bad(e.into()))?;
        let anchor = Anchor { spec, every: settings.every, games: settings.games };
        let config = anchor.match_config(cfg);
        let entrant = anchor
            .spec
            .entrant(config.size, config.default_limits(), config.seed, compute)
            .map_err(|e| bad(e.into()))?;
        check_players(std::slice::from_ref(&entrant)).map_err(|e| bad(e.into()))?;
        Ok(Some(anchor))
    }

    /// The anchor matches' settings: the run's board and ply limit, `[eval] visits` for
    /// the checkpoint, the default openings with a fixed seed (the same for every
    /// checkpoint), and the fit rating the anchor at 0.
    fn match_config(&self, cfg: &RunConfig) -> MatchConfig {
        on_run_board(
            cfg,
            MatchConfig {
                games_per_pairing: self.games,
                visits: cfg.eval.visits as u64,
                max_plies: cfg.selfplay.max_plies,
                threads: cores(),
                schedule: Schedule::Gauntlet,
                elo: EloOptions { anchor: Some(self.spec.name()), ..EloOptions::default() },
                ..MatchConfig::default()
            },
        )
    }

    /// Whether checkpoint `generation` plays the anchor.
    pub fn due(&self, generation: Generation) -> bool {
        generation.number().is_multiple_of(self.every)
    }

    /// Plays checkpoint `generation` of `run` against the anchor in `<run>/arena/anchor/`
    /// (games already in its results file are skipped, so a killed match resumes), rates
    /// every checkpoint that has played it with the anchor at 0, and writes the curve on
    /// its scale (`elo-curve.csv`, `elo.svg`, TensorBoard `arena/anchor_elo`).
    pub fn play(
        &self,
        run: &RunDir,
        cfg: &RunConfig,
        generation: Generation,
        compute: &bredon_infer::Compute,
    ) -> Result<AnchorOutcome, ArenaError> {
        let config = self.match_config(cfg);
        let entrants =
            entrants_from_specs(&config, &[checkpoint_spec(run, cfg, generation), self.spec.clone()], compute)?;
        let dir = run.path(layout::ANCHOR);
        run_match(&config, &entrants, &dir, &mut |_| ControlFlow::Continue(()))?;
        // Every player in the results file is rated (the anchor first, at 0); the curve
        // takes the checkpoints that have a row.
        let table = rate_results(&dir.join(&config.results_file), &[], &config.elo, &dir)?;
        let anchor = self.spec.name();
        write_curves(run, &table, &run.checkpoints(), std::slice::from_ref(&anchor), &ANCHOR_CURVES)?;
        let row = table
            .get(&generation.to_string())
            .cloned()
            .ok_or(ArenaError::NoCheckpoints { run: run.root().to_path_buf() })?;
        Ok(AnchorOutcome { generation, anchor, row })
    }
}

/// What a gate decided ([`gate_generation`]).
#[derive(Clone, Debug)]
pub struct GateOutcome {
    /// The new checkpoint.
    pub candidate: Generation,
    /// The self-play model it played.
    pub incumbent: Generation,
    /// The match.
    pub report: GateReport,
}

impl GateOutcome {
    /// Whether the candidate passed (and plays self-play now).
    pub fn accepted(&self) -> bool {
        self.report.state == GateState::AcceptH1
    }
}

impl fmt::Display for GateOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (candidate, incumbent) = (self.candidate, self.incumbent);
        write!(
            f,
            "gate: {candidate} vs {incumbent}: {:.1}% over {} games -> ",
            self.report.score * 100.0,
            self.report.games
        )?;
        if self.accepted() {
            write!(f, "{candidate} plays self-play now")
        } else {
            write!(f, "{incumbent} keeps playing")
        }
    }
}

/// The training loop's gate: the checkpoint of `candidate` plays the current self-play
/// model (the `best` pointer, else the previous checkpoint) under `[eval.gate]`, and
/// `best` moves to it only if it passes. Games go to `<run>/arena/gating/`. `None` when
/// there is nothing to play (the candidate is the self-play model already).
pub fn gate_generation(
    run: &RunDir,
    cfg: &RunConfig,
    candidate: Generation,
    compute: &bredon_infer::Compute,
) -> Result<Option<GateOutcome>, ArenaError> {
    let g = &cfg.eval.gate;
    let incumbent = match run.best()? {
        Some(best) => best,
        None => candidate.previous().unwrap_or(candidate),
    };
    if incumbent == candidate {
        return Ok(None);
    }
    let visits = if g.visits > 0 { g.visits } else { cfg.eval.visits };
    let base = MatchConfig {
        games_per_pairing: g.games.max(2),
        visits: visits as u64,
        max_plies: cfg.selfplay.max_plies,
        seed: candidate.number() as u64,
        threads: cores(),
        ..MatchConfig::default()
    };
    let config = on_run_board(cfg, base);
    let gate = match g.test {
        GateTest::Sprt => {
            GateConfig::Sprt { elo0: g.elo0, elo1: g.elo1, alpha: g.alpha, beta: g.beta, model: Default::default() }
        }
        GateTest::Fixed => GateConfig::Fixed { games: g.games as u64, threshold: g.threshold },
    };
    let specs = [checkpoint_spec(run, cfg, candidate), checkpoint_spec(run, cfg, incumbent)];
    let entrants = entrants_from_specs(&config, &specs, compute)?;
    let report = run_gate(&config, &entrants[0], &entrants[1], &gate, &run.path(layout::GATING))?;
    let outcome = GateOutcome { candidate, incumbent, report };
    run.set_best(if outcome.accepted() { candidate } else { incumbent })?;
    Ok(Some(outcome))
}

/// The training loop's Elo ladder after checkpoint `generation`: every `arena_every`-th
/// checkpoint of the run against the uniform and rollout searches (`[eval] arena_games`
/// per pairing at `[eval] visits`), as `bredon arena --run RUN --every K` does.
fn ladder_after(run: &RunDir, cfg: &RunConfig, compute: &bredon_infer::Compute) -> Result<RatingsTable, ArenaError> {
    let options = LadderOptions {
        baselines: Vec::new(),
        every: Some(cfg.eval.arena_every),
        max_checkpoints: usize::MAX,
        visits: LadderVisits::FromRun,
        compute: compute.clone(),
    };
    let config = MatchConfig { games_per_pairing: cfg.eval.arena_games, threads: cores(), ..MatchConfig::default() };
    let ladder = Ladder::plan(run, &options, config)?;
    eprintln!("{ladder}");
    ladder.play(&mut |_| {})
}

/// The checkpoint hook for `bredon_selfplay::train::train` with `cfg`'s `[eval]`
/// settings: gating (`[eval.gate] enabled`), the Elo ladder every `arena_every`
/// generations and the outside anchor (`[eval.anchor]`); `None` if none is on. Each
/// prints what it decided. The networks run on `compute` (the training run's). A bad
/// anchor is an error here, before training starts.
pub fn training_hook(
    cfg: &RunConfig,
    run: &RunDir,
    compute: &bredon_infer::Compute,
) -> Result<Option<CheckpointHook>, ArenaError> {
    let anchor = Anchor::from_config(cfg, compute)?;
    if cfg.eval.arena_every == 0 && !cfg.eval.gate.enabled && anchor.is_none() {
        return Ok(None);
    }
    let (cfg, run, compute) = (cfg.clone(), run.clone(), compute.clone());
    Ok(Some(std::sync::Arc::new(move |generation: Generation| {
        if cfg.eval.gate.enabled
            && let Some(outcome) = gate_generation(&run, &cfg, generation, &compute)?
        {
            eprintln!("{outcome}");
        }
        let every = cfg.eval.arena_every;
        if every > 0 && generation.number().is_multiple_of(every) {
            let table = ladder_after(&run, &cfg, &compute)?;
            eprintln!("{table}");
            eprintln!("wrote {}", run.path(layout::ELO_PLOT).display());
        }
        if let Some(anchor) = anchor.as_ref().filter(|a| a.due(generation)) {
            let outcome = anchor.play(&run, &cfg, generation, &compute)?;
            eprintln!("{outcome}");
        }
        Ok(())
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_first_spaced_and_newest() {
        let all: Vec<Generation> = (0..25).map(Generation).collect();
        let names = |p: Vec<Generation>| p.into_iter().map(|g| g.to_string()).collect::<Vec<_>>();
        assert_eq!(names(pick_checkpoints(&all, Some(10), 12)), ["gen-0000", "gen-0010", "gen-0020", "gen-0024"]);
        let p = pick_checkpoints(&all, None, 6);
        assert!(p.len() <= 7 && p[0] == Generation(0) && p.last() == Some(&Generation(24)), "{p:?}");
        assert_eq!(pick_checkpoints(&all[..1], None, 12), [Generation(0)]);
        assert!(pick_checkpoints(&[], None, 12).is_empty());
    }

    #[test]
    fn a_directory_without_a_run_config_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let options = LadderOptions {
            baselines: Vec::new(),
            every: None,
            max_checkpoints: 12,
            visits: LadderVisits::FromRun,
            compute: bredon_infer::Compute::cpu(),
        };
        let e = Ladder::plan(&RunDir::new(dir.path()), &options, MatchConfig::default()).err().unwrap();
        assert!(matches!(&e, ArenaError::NotARun { path, .. } if path == dir.path()), "{e:?}");
        assert!(e.to_string().contains("is not a run directory"), "{e}");
    }
}
