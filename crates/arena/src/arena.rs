//! Matches: the schedule (pairings × opening pairs with colours swapped), parallel
//! workers, game files, the results file, and [`run_arena`], the entry point for the CLI.
//!
//! # Output directory
//! ```text
//! OUT/results.jsonl   one GameRecord per line, append-only (see crate::results)
//! OUT/games/*.ptn     one PTN file per game
//! OUT/ratings.csv     the ratings table (run_arena), written atomically
//! OUT/ratings.json    the same as JSON
//! ```
//! A match can be stopped at any time and run again with the same settings: games whose
//! key is already in the results file are skipped ([`MatchConfig::resume`]), and ratings
//! always use every game in the results file.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::time::Duration;

use bredon_rules::{Color, GameOptions};
use serde::{Deserialize, Serialize};

use crate::elo::{EloOptions, RatingsTable};
use crate::error::{ArenaError, MatchConfigError};
use crate::game::{Adjudication, ClockConfig, GameOutcome, GameSettings, Termination, play_game};
use crate::openings::{Opening, OpeningsConfig, load_openings, opening_to_string};
use crate::player::{MoveLimits, Player};
use crate::results::{GameRecord, append_record, game_ptn, load_records, now_unix};
use crate::spec::{Entrant, PlayerSpec};
use crate::sprt::{Gate, GateConfig, GateState};
use bredon_storage::fsutil::atomic_write as write_atomic;

/// Who plays whom.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// Every player against every other.
    #[default]
    RoundRobin,
    /// The first player against each of the others.
    Gauntlet,
    /// For checkpoints of a training run, in training order after one or more fixed
    /// baselines: player 0 is a baseline, player 1 the first checkpoint; every later
    /// player meets player 0, player 1 and its predecessor. That connects the ratings
    /// with about three pairings per checkpoint instead of a full round robin.
    Ladder,
}

/// The pairings `schedule` makes among `n` players (each pair once, lower index first).
pub fn pairings(schedule: Schedule, n: usize) -> Vec<(usize, usize)> {
    match schedule {
        Schedule::RoundRobin => (0..n).flat_map(|a| (a + 1..n).map(move |b| (a, b))).collect(),
        Schedule::Gauntlet => (1..n).map(|b| (0, b)).collect(),
        Schedule::Ladder => {
            let mut v: Vec<(usize, usize)> = Vec::new();
            for b in 1..n {
                for a in [0, 1, b - 1] {
                    if a < b && !v.contains(&(a, b)) {
                        v.push((a, b));
                    }
                }
            }
            v
        }
    }
}

/// Settings of a match. Every field has a default, so a config file need only name what
/// it changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MatchConfig {
    /// Board size (3 to 8).
    pub size: usize,
    /// Komi in half points added to black's flat count (4 = komi 2). Default 0, as in
    /// the rule texts.
    pub half_komi: i8,
    /// Games per pairing of two players. Played as pairs from the same opening with
    /// colours swapped, so an odd number is rounded up.
    pub games_per_pairing: usize,
    /// Visits (`go nodes N`) per move for players that set no limit of their own.
    pub visits: u64,
    /// If set, `go movetime MS` instead of `visits` for players that set no limit of
    /// their own (MCTS players search by visits and ignore it).
    pub movetime_ms: Option<u64>,
    /// Optional game clock for both sides; a player that exceeds it loses on time.
    pub clock: Option<ClockConfig>,
    /// Where openings come from (default: 50 random 2-ply openings, seed 1).
    pub openings: OpeningsConfig,
    /// Ply limit (0 = none). A game reaching it is adjudicated.
    pub max_plies: usize,
    /// How a game at the ply limit is decided: `flats` (flat count with komi, as if the
    /// game ended now; the default) or `draw`.
    pub adjudication: Adjudication,
    /// Games played in parallel (worker threads; each makes its own player instances).
    pub threads: usize,
    /// Who plays whom.
    pub schedule: Schedule,
    /// Seed for players without their own seed (each player index offsets it).
    pub seed: u64,
    /// Skip games already in the results file (same players, opening pair and settings).
    pub resume: bool,
    /// The results file name within the output directory.
    pub results_file: String,
    /// Rating fit settings (anchor, prior).
    pub elo: EloOptions,
}

impl Default for MatchConfig {
    fn default() -> MatchConfig {
        MatchConfig {
            size: 5,
            half_komi: 0,
            games_per_pairing: 20,
            visits: 100,
            movetime_ms: None,
            clock: None,
            openings: OpeningsConfig::default(),
            max_plies: 300,
            adjudication: Adjudication::Flats,
            threads: 1,
            schedule: Schedule::RoundRobin,
            seed: 0,
            resume: true,
            results_file: "results.jsonl".to_string(),
            elo: EloOptions::default(),
        }
    }
}

impl MatchConfig {
    /// The game options (size and komi, standard reserves).
    pub fn game_options(&self) -> GameOptions {
        GameOptions::new(self.size).with_half_komi(self.half_komi)
    }

    /// The limits for players that set none of their own.
    pub fn default_limits(&self) -> MoveLimits {
        match self.movetime_ms {
            Some(ms) => MoveLimits::movetime(Duration::from_millis(ms)),
            None => MoveLimits::nodes(self.visits.max(1)),
        }
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<(), MatchConfigError> {
        if !(bredon_rules::MIN_SIZE..=bredon_rules::MAX_SIZE).contains(&self.size) {
            return Err(MatchConfigError::Size(self.size));
        }
        if self.games_per_pairing == 0 {
            return Err(MatchConfigError::NoGames);
        }
        if self.threads == 0 {
            return Err(MatchConfigError::NoThreads);
        }
        if self.results_file.is_empty() || self.results_file.contains(['/', '\\']) {
            return Err(MatchConfigError::ResultsFile(self.results_file.clone()));
        }
        Ok(())
    }

    /// Opening pairs per pairing (`games_per_pairing / 2`, rounded up).
    pub fn pairs_per_pairing(&self) -> usize {
        self.games_per_pairing.div_ceil(2)
    }
}

/// One scheduled pair of games: `a` and `b` from the same opening, `a` white first.
#[derive(Clone, Debug)]
struct Job {
    a: usize,
    b: usize,
    pair: usize,
    opening: usize,
}

fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' })
        .take(40)
        .collect();
    if s.is_empty() { "player".into() } else { s }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

fn game_key(white: &str, black: &str, pair: usize, config: &MatchConfig, opening: &str) -> String {
    format!("{white}|{black}|{pair}|{}|{}|{opening}", config.size, config.half_komi)
}

/// What a worker reports for one game.
struct Finished {
    white: usize,
    black: usize,
    pair: usize,
    opening: usize,
    outcome: GameOutcome,
}

/// Plays the match between `entrants` (see [`MatchConfig`]), writing game files and
/// appending to the results file in `out_dir`. `on_game` sees every new record; returning
/// `ControlFlow::Break` stops the match once the game pairs in progress are complete
/// (used by gating; a pair is never left half played).
/// Returns the records of the games played in this call.
pub fn run_match(
    config: &MatchConfig,
    entrants: &[Entrant],
    out_dir: &Path,
    on_game: &mut dyn FnMut(&GameRecord) -> ControlFlow<()>,
) -> Result<Vec<GameRecord>, ArenaError> {
    config.validate()?;
    if entrants.len() < 2 {
        return Err(ArenaError::TooFewPlayers(entrants.len()));
    }
    let mut names = HashSet::new();
    for e in entrants {
        if e.name.is_empty() {
            return Err(ArenaError::EmptyName);
        }
        if !names.insert(e.name.as_str()) {
            return Err(ArenaError::DuplicateName(e.name.clone()));
        }
    }
    let options = config.game_options();
    let openings: Vec<Opening> = load_openings(&config.openings, options)?;
    let opening_texts: Vec<String> = openings.iter().map(|o| opening_to_string(o, config.size)).collect();
    std::fs::create_dir_all(out_dir.join("games"))
        .map_err(|source| ArenaError::CreateDir { path: out_dir.to_path_buf(), source })?;
    let results_path = out_dir.join(&config.results_file);
    let done: HashSet<String> =
        if config.resume { load_records(&results_path)?.into_iter().map(|r| r.key).collect() } else { HashSet::new() };

    let pairings = pairings(config.schedule, entrants.len());
    let mut jobs = Vec::new();
    for pair in 0..config.pairs_per_pairing() {
        for &(a, b) in &pairings {
            let opening = pair % openings.len();
            let text = &opening_texts[opening];
            let k1 = game_key(&entrants[a].name, &entrants[b].name, pair, config, text);
            let k2 = game_key(&entrants[b].name, &entrants[a].name, pair, config, text);
            if done.contains(&k1) && done.contains(&k2) {
                continue;
            }
            jobs.push(Job { a, b, pair, opening });
        }
    }

    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // Each result is acknowledged before the worker goes on, so that a stop requested by
    // `on_game` is seen before the worker takes another job.
    let (tx, rx) = channel::<(Finished, Sender<()>)>();
    let mut records = Vec::new();
    let mut error: Option<ArenaError> = None;
    std::thread::scope(|scope| {
        for _ in 0..config.threads.min(jobs.len().max(1)) {
            let tx = tx.clone();
            let (jobs, next, stop, openings, opening_texts, done) =
                (&jobs, &next, &stop, &openings, &opening_texts, &done);
            scope.spawn(move || {
                let (ack_tx, ack_rx) = channel::<()>();
                let mut players: HashMap<usize, Box<dyn Player>> = HashMap::new();
                loop {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(job) = jobs.get(i) else { break };
                    for (white, black) in [(job.a, job.b), (job.b, job.a)] {
                        let text = &opening_texts[job.opening];
                        let key = game_key(&entrants[white].name, &entrants[black].name, job.pair, config, text);
                        if done.contains(&key) {
                            continue;
                        }
                        let settings = GameSettings {
                            options,
                            opening: openings[job.opening].clone(),
                            limits: [entrants[white].limits, entrants[black].limits],
                            clock: config.clock,
                            max_plies: config.max_plies,
                            adjudication: config.adjudication,
                        };
                        let outcome = play_with_instances(&mut players, entrants, white, black, &settings);
                        let finished = Finished { white, black, pair: job.pair, opening: job.opening, outcome };
                        if tx.send((finished, ack_tx.clone())).is_err() || ack_rx.recv().is_err() {
                            return;
                        }
                    }
                }
            });
        }
        drop(tx);
        for (f, ack) in rx {
            if error.is_some() {
                let _ = ack.send(());
                continue;
            }
            let r = record_game(config, entrants, out_dir, &results_path, &openings, &opening_texts, &f);
            match r {
                Ok(rec) => {
                    let flow = on_game(&rec);
                    records.push(rec);
                    if flow.is_break() {
                        stop.store(true, Ordering::SeqCst);
                    }
                }
                Err(e) => {
                    stop.store(true, Ordering::SeqCst);
                    error = Some(e.into());
                }
            }
            let _ = ack.send(());
        }
    });
    match error {
        Some(e) => Err(e),
        None => Ok(records),
    }
}

/// Plays one game with the worker's instances, creating them on first use. A player
/// whose factory fails forfeits the game (and is tried again next game).
fn play_with_instances(
    players: &mut HashMap<usize, Box<dyn Player>>,
    entrants: &[Entrant],
    white: usize,
    black: usize,
    settings: &GameSettings,
) -> GameOutcome {
    for (idx, color) in [(white, Color::White), (black, Color::Black)] {
        if let std::collections::hash_map::Entry::Vacant(v) = players.entry(idx) {
            match (entrants[idx].factory)() {
                Ok(p) => {
                    v.insert(p);
                }
                Err(e) => {
                    return GameOutcome {
                        moves: Vec::new(),
                        result: bredon_rules::GameResult::Win {
                            color: color.opposite(),
                            kind: bredon_rules::WinKind::Other,
                        },
                        termination: Termination::Forfeit {
                            loser: color.to_string(),
                            reason: format!("could not start the player: {}", bredon_storage::error_chain(&e)),
                        },
                    };
                }
            }
        }
    }
    let mut w = players.remove(&white).expect("created above");
    let mut b = players.remove(&black).expect("created above");
    let outcome = play_game(&mut *w, &mut *b, settings);
    players.insert(white, w);
    players.insert(black, b);
    outcome
}

fn record_game(
    config: &MatchConfig,
    entrants: &[Entrant],
    out_dir: &Path,
    results_path: &Path,
    openings: &[Opening],
    opening_texts: &[String],
    f: &Finished,
) -> Result<GameRecord, crate::error::ResultsError> {
    let white = &entrants[f.white].name;
    let black = &entrants[f.black].name;
    let text = &opening_texts[f.opening];
    let key = game_key(white, black, f.pair, config, text);
    let now = now_unix();
    let file = format!(
        "games/{}_vs_{}_s{}_p{:04}_{:08x}.ptn",
        sanitize(white),
        sanitize(black),
        config.size,
        f.pair,
        fnv(&key) as u32
    );
    let ptn = game_ptn(white, black, config.game_options(), &openings[f.opening], &f.outcome, now)?;
    write_atomic(&out_dir.join(&file), ptn.as_bytes())?;
    let white_score = match f.outcome.result.winner() {
        Some(Color::White) => 1.0,
        Some(Color::Black) => 0.0,
        None => 0.5,
    };
    let rec = GameRecord {
        key,
        white: white.clone(),
        black: black.clone(),
        result: f.outcome.result.ptn().to_string(),
        white_score,
        plies: f.outcome.moves.len(),
        termination: f.outcome.termination.clone(),
        size: config.size,
        half_komi: config.half_komi,
        opening: text.clone(),
        pair: f.pair,
        ptn_file: file,
        finished_unix: now,
    };
    append_record(results_path, &rec)?;
    Ok(rec)
}

/// Turns specs into entrants with the match's default limits and per-player seeds, their
/// networks run on `compute`.
pub fn entrants_from_specs(
    config: &MatchConfig,
    specs: &[PlayerSpec],
    compute: &bredon_infer::Compute,
) -> Result<Vec<Entrant>, ArenaError> {
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.entrant(config.size, config.default_limits(), config.seed.wrapping_add(i as u64 * 0x9E37_79B9), compute)
                .map_err(|source| ArenaError::Player { index: i + 1, source })
        })
        .collect()
}

/// The paths `run_arena` writes in `out_dir`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArenaPaths {
    /// The results file.
    pub results: PathBuf,
    /// The ratings table as CSV.
    pub ratings_csv: PathBuf,
    /// The ratings table as JSON.
    pub ratings_json: PathBuf,
    /// The game files' directory.
    pub games: PathBuf,
}

impl ArenaPaths {
    /// The paths for `out_dir` and `config`.
    pub fn new(out_dir: &Path, config: &MatchConfig) -> ArenaPaths {
        ArenaPaths {
            results: out_dir.join(&config.results_file),
            ratings_csv: out_dir.join("ratings.csv"),
            ratings_json: out_dir.join("ratings.json"),
            games: out_dir.join("games"),
        }
    }
}

/// Instantiates every entrant once and drops it, so a bad engine path or a program that
/// does not speak TEI is a clear error before a match starts, not a forfeit of every game.
pub fn check_players(entrants: &[Entrant]) -> Result<(), ArenaError> {
    for e in entrants {
        drop((e.factory)().map_err(|source| ArenaError::StartPlayer { name: e.name.clone(), source })?);
    }
    Ok(())
}

/// Runs a match between `players` and rates everyone from **all** games in the results
/// file (earlier runs included): plays the schedule of `config` (skipping games already
/// played), then fits Elo, writes `ratings.csv` and `ratings.json` in `out_dir`, and
/// returns the table (print it with `Display`).
///
/// Every player is instantiated once up front, so a bad engine path or a non-TEI program
/// fails here with a clear error rather than forfeiting every game.
/// `on_game` is called after each game (e.g. to print progress). Networks run on the CPU
/// ([`run_arena_on`] takes the device).
pub fn run_arena(
    config: &MatchConfig,
    players: &[PlayerSpec],
    out_dir: &Path,
    on_game: &mut dyn FnMut(&GameRecord),
) -> Result<RatingsTable, ArenaError> {
    run_arena_on(config, players, &bredon_infer::Compute::cpu(), out_dir, on_game)
}

/// [`run_arena`] with the checkpoints' networks run on `compute`.
pub fn run_arena_on(
    config: &MatchConfig,
    players: &[PlayerSpec],
    compute: &bredon_infer::Compute,
    out_dir: &Path,
    on_game: &mut dyn FnMut(&GameRecord),
) -> Result<RatingsTable, ArenaError> {
    config.validate()?;
    let entrants = entrants_from_specs(config, players, compute)?;
    check_players(&entrants)?;
    run_match(config, &entrants, out_dir, &mut |r| {
        on_game(r);
        ControlFlow::Continue(())
    })?;
    let paths = ArenaPaths::new(out_dir, config);
    rate_results(&paths.results, &entrants.iter().map(|e| e.name.clone()).collect::<Vec<_>>(), &config.elo, out_dir)
}

/// Rates every game in a results file and writes `ratings.csv` and `ratings.json` in
/// `out_dir`. `players` fixes the order of the first rows' players and the default anchor
/// (the first of them, unless `elo.anchor` names another).
pub fn rate_results(
    results: &Path,
    players: &[String],
    elo: &EloOptions,
    out_dir: &Path,
) -> Result<RatingsTable, ArenaError> {
    let records = load_records(results)?;
    let table = RatingsTable::from_records(&records, players, elo);
    table.write_csv(&out_dir.join("ratings.csv"))?;
    table.write_json(&out_dir.join("ratings.json"))?;
    Ok(table)
}

/// The outcome of [`run_gate`].
#[derive(Clone, Debug, PartialEq)]
pub struct GateReport {
    /// The decision (`Continue` if the games ran out first).
    pub state: GateState,
    /// The candidate's score over the games of this call.
    pub score: f64,
    /// Games played in this call.
    pub games: usize,
    /// The final gate (LLR and counts for an SPRT).
    pub gate: Gate,
}

/// Plays `candidate` against `baseline` in colour-swapped pairs until `gate` decides or
/// `config.games_per_pairing` games have been played, and reports the decision. Games are
/// recorded like any match (PTN files, results file). For the pentanomial SPRT, both
/// games of a pair are fed to the gate together, whatever order the workers finish in.
pub fn run_gate(
    config: &MatchConfig,
    candidate: &Entrant,
    baseline: &Entrant,
    gate: &GateConfig,
    out_dir: &Path,
) -> Result<GateReport, ArenaError> {
    let mut g = Gate::new(gate)?;
    let cfg = MatchConfig { schedule: Schedule::Gauntlet, resume: false, ..config.clone() };
    let mut waiting: HashMap<usize, f64> = HashMap::new();
    let (mut points, mut games) = (0.0, 0usize);
    let entrants = [candidate.clone(), baseline.clone()];
    run_match(&cfg, &entrants, out_dir, &mut |r| {
        let s = if r.white == candidate.name { r.white_score } else { r.black_score() };
        points += s;
        games += 1;
        match &mut g {
            Gate::Sprt(sprt) => match waiting.remove(&r.pair) {
                Some(first) => sprt.record_pair(first, s),
                None => {
                    waiting.insert(r.pair, s);
                }
            },
            Gate::Fixed(f) => f.record_game(s),
        }
        if g.state() == GateState::Continue { ControlFlow::Continue(()) } else { ControlFlow::Break(()) }
    })?;
    let score = if games == 0 { 0.5 } else { points / games as f64 };
    Ok(GateReport { state: g.state(), score, games, gate: g })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladder_meets_baseline_first_checkpoint_and_predecessor() {
        assert_eq!(pairings(Schedule::Ladder, 1), vec![]);
        assert_eq!(pairings(Schedule::Ladder, 2), vec![(0, 1)]);
        assert_eq!(
            pairings(Schedule::Ladder, 5),
            vec![(0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3), (0, 4), (1, 4), (3, 4)]
        );
        assert_eq!(pairings(Schedule::RoundRobin, 4).len(), 6);
        assert_eq!(pairings(Schedule::Gauntlet, 4), vec![(0, 1), (0, 2), (0, 3)]);
    }

    /// Every config struct a match config (or a player in a config file) is made of
    /// refuses a key it does not have, naming the key; the same text without it loads.
    #[test]
    fn every_match_config_table_refuses_an_unknown_key() {
        type Load = fn(&str) -> Result<(), String>;
        let cases: [(&str, Load); 4] = [
            ("match", |t| toml::from_str::<MatchConfig>(t).map(drop).map_err(|e| e.to_string())),
            ("player", |t| toml::from_str::<PlayerSpec>(t).map(drop).map_err(|e| e.to_string())),
            ("gate", |t| toml::from_str::<GateConfig>(t).map(drop).map_err(|e| e.to_string())),
            ("elo", |t| toml::from_str::<EloOptions>(t).map(drop).map_err(|e| e.to_string())),
        ];
        let texts = [
            ("match", "size = 6\n{}"),
            ("match", "[elo]\nprior_draws = 2.0\n{}"),
            ("match", "[clock]\ntime_ms = 5000\n{}"),
            ("match", "[openings]\nkind = \"random\"\nplies = 2\ncount = 5\nseed = 1\n{}"),
            ("match", "[openings]\nkind = \"file\"\npath = \"o.txt\"\n{}"),
            ("player", "kind = \"random\"\n{}"),
            // (`[openings] kind = "none"` has no fields of its own, and serde lets a
            // unit variant of a tagged enum pass extra keys.)
            ("player", "kind = \"uniform\"\nvisits = 10\ntactics = false\n{}"),
            ("player", "kind = \"rollout\"\nvisits = 10\n{}"),
            ("player", "kind = \"checkpoint\"\npath = \"m.bredon\"\ntime = \"reserves\"\n{}"),
            ("player", "kind = \"tei\"\nnodes = 100\n{}[config]\nprogram = \"tiltak\"\n"),
            ("player", "kind = \"tei\"\n[config]\nprogram = \"tiltak\"\n{}"),
            ("gate", "kind = \"sprt\"\nelo0 = 0.0\nelo1 = 30.0\nalpha = 0.05\nbeta = 0.05\n{}"),
            ("gate", "kind = \"fixed\"\ngames = 10\nthreshold = 0.55\n{}"),
            ("elo", "anchor = \"gen-0000\"\n{}"),
        ];
        for (what, text) in texts {
            let load = cases.iter().find(|(name, _)| *name == what).unwrap().1;
            load(&text.replace("{}", "")).unwrap_or_else(|e| panic!("{what} {text:?}: {e}"));
            let Err(e) = load(&text.replace("{}", "no_such_key_h3 = 1\n")) else {
                panic!("{what} {text:?}: the unknown key was accepted")
            };
            assert!(e.contains("no_such_key_h3"), "{what} {text:?}: {e}");
        }
    }
}
