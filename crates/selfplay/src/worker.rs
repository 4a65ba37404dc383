//! The self-play worker pool: many games at once, each in its own thread, all sharing one
//! evaluator (normally the batching inference service, which merges their leaf batches).
//! A share of the pool's game slots can re-search stored games instead of playing new
//! ones ([`reanalyse_game`], `[selfplay] reanalyse`), and a share can play on from a
//! stored game's endgame ([`endgame_start`], `[selfplay] endgame_starts`). A share of the
//! new games can be played at another komi ([`SelfPlayJob::new_game_options`],
//! `[selfplay] komi_randomise`).

use crate::error::{Result, RunError};
use bredon_mcts::{CacheStats, CachedEvaluator, Evaluator, Search, SearchConfig};
use bredon_rules::{GameOptions, Move, Position};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::config::SelfPlayConfig;
use crate::replay::{GameRecord, PlyRecord, StoredResult, store_game};

/// Everything one batch of self-play needs.
#[derive(Clone)]
pub struct SelfPlayJob {
    /// Game setup.
    pub options: GameOptions,
    /// Search settings (root noise and temperature are used for full searches).
    pub search: SearchConfig,
    /// Self-play settings.
    pub selfplay: SelfPlayConfig,
    /// Name of the model playing (recorded in each game).
    pub model: String,
    /// Seed; each game derives its own RNG from it and the game's index.
    pub seed: u64,
    /// Stored games (`.game` files of this run) that slots may reanalyse (`[selfplay]
    /// reanalyse`) or start from one of their endgames (`endgame_starts`); empty: every
    /// slot plays a new game from the start.
    pub stored_games: Arc<[PathBuf]>,
}

impl SelfPlayJob {
    /// The setup of new game `game_index`: the job's, or with `[selfplay] komi_randomise`
    /// for that share of the games (drawn by the game's own RNG stream, so a resumed
    /// generation draws the same) a komi drawn uniformly from the half-flat steps within
    /// `komi_spread` of the job's, never below 0 (unless the job's is).
    pub fn new_game_options(&self, game_index: u64) -> GameOptions {
        let steps = self.selfplay.komi_steps();
        if steps <= 0 {
            return self.options;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ game_index.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x6B0D);
        if !rng.random_bool(self.selfplay.komi_randomise.min(1.0)) {
            return self.options;
        }
        let base = i32::from(self.options.half_komi);
        // Never below 0, unless the run's own komi is.
        let half_komi = rng.random_range((base - steps).max(base.min(0))..=base + steps);
        self.options.with_half_komi(half_komi.clamp(i32::from(i8::MIN), i32::from(i8::MAX)) as i8)
    }

    /// Whether a stored game of this setup may be reanalysed or branched from: the same
    /// board size, and the job's komi or (with `komi_randomise`) one it could have drawn.
    pub fn accepts(&self, options: &GameOptions) -> bool {
        options.size == self.options.size
            && (i32::from(options.half_komi) - i32::from(self.options.half_komi)).abs() <= self.selfplay.komi_steps()
    }
}

/// What a finished game reports to the caller.
#[derive(Clone, Debug)]
pub struct GameSummary {
    /// Plies played.
    pub plies: usize,
    /// Training samples in the record.
    pub samples: usize,
    /// Outcome.
    pub result: StoredResult,
    /// Whether a player resigned.
    pub resigned: bool,
    /// In a game where resignation was disabled for measurement: the side that would have
    /// resigned, and whether it went on to win anyway (a false resignation).
    pub false_resignation: Option<bool>,
    /// A stored game re-searched ([`reanalyse_game`]), not a new one.
    pub reanalysed: bool,
    /// The game was played on from a stored game's endgame ([`endgame_start`]) after this
    /// many replayed plies (not samples); `None` for a game from the start.
    pub endgame_from: Option<usize>,
    /// Plies drawn from the raw policy before the searches began (`[selfplay]
    /// opening_random`); 0 for the other games.
    pub opening_plies: usize,
}

/// Suffix of the id of a reanalysed record (`<index>-<pid>-reanalysed.game`): such
/// records are not reanalysed again (their source is).
pub const REANALYSED_SUFFIX: &str = "-reanalysed";

/// Suffix of the id of a game played on from a stored game's endgame
/// (`<index>-<pid>-endgame.game`).
pub const ENDGAME_SUFFIX: &str = "-endgame";

/// Plays one self-play game from the start.
pub fn play_game(
    job: &SelfPlayJob,
    evaluator: &dyn Evaluator,
    game_index: u64,
    stop: &AtomicBool,
) -> Result<Option<(GameRecord, GameSummary)>> {
    let mut rng = ChaCha8Rng::seed_from_u64(job.seed ^ game_index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let options = job.new_game_options(game_index);
    let opening = random_opening(job, evaluator, options, &mut rng)?;
    let drawn = opening.len();
    let played = play_on(job, evaluator, options, opening, rng, stop)?;
    Ok(played.map(|(record, mut summary)| {
        summary.endgame_from = None;
        summary.opening_plies = drawn;
        (record, summary)
    }))
}

/// The plies a new game opens with under `[selfplay] opening_random` (none for the other
/// games): 1 to `opening_plies` of them, each drawn from the network's raw policy at
/// `opening_temperature`. Recorded without visits (no training samples), with the raw
/// value. Drawn only when the option is on, so that other runs' games stay the same.
fn random_opening(
    job: &SelfPlayJob,
    evaluator: &dyn Evaluator,
    options: GameOptions,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<PlyRecord>> {
    let cfg = &job.selfplay;
    if cfg.opening_random <= 0.0 || cfg.opening_plies == 0 || !rng.random_bool(cfg.opening_random.min(1.0)) {
        return Ok(Vec::new());
    }
    let count = rng.random_range(1..=cfg.opening_plies as usize);
    let mut pos = Position::with_options(options)?;
    let mut plies = Vec::with_capacity(count);
    while plies.len() < count && pos.result().is_none() {
        let legal = pos.legal_moves();
        let eval = evaluator
            .evaluate_batch(&[&pos], &[&legal])
            .into_iter()
            .next()
            .ok_or(RunError::NoMove(pos.ply().into()))?;
        let priors = eval.policy.iter().map(|&p| f64::from(p.max(0.0)));
        let mv = match bredon_mcts::draw_with_temperature(priors, cfg.opening_temperature, rng) {
            Some(i) => legal[i],
            // Priors that sum to nothing: any legal move.
            None => legal[rng.random_range(0..legal.len())],
        };
        plies.push(PlyRecord { mv: mv.0, visits: Vec::new(), root_value: eval.value });
        pos.play(mv)?;
    }
    Ok(plies)
}

/// Plays a self-play game of setup `options` on from the position after `prefix`
/// (replayed plies, kept in the record as they are: not samples unless they were), with
/// the job's searches.
fn play_on(
    job: &SelfPlayJob,
    evaluator: &dyn Evaluator,
    options: GameOptions,
    prefix: Vec<PlyRecord>,
    mut rng: ChaCha8Rng,
    stop: &AtomicBool,
) -> Result<Option<(GameRecord, GameSummary)>> {
    let cfg = &job.selfplay;
    let mut pos = Position::with_options(options)?;
    for ply in &prefix {
        pos.play(Move(ply.mv))?;
    }
    let replayed = prefix.len();
    let mut search = Search::new(pos.clone(), job.search.clone());
    let mut plies = prefix;
    let may_resign = cfg.resign_threshold > 0.0 && !rng.random_bool(cfg.resign_playthrough);
    let mut would_resign: Option<bredon_rules::Color> = None;
    let mut resigned = None;
    while pos.result().is_none() && plies.len() < cfg.max_plies {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let full = cfg.full_search_prob >= 1.0 || rng.random_bool(cfg.full_search_prob);
        search.set_root_noise(full);
        let visits = if full { cfg.visits } else { cfg.fast_visits.max(1) };
        let result = search.run(evaluator, visits as u64, &mut rng);
        let value = result.value;
        if cfg.resign_threshold > 0.0 && value < -cfg.resign_threshold && would_resign.is_none() {
            would_resign = Some(pos.side_to_move());
            if may_resign {
                resigned = Some(pos.side_to_move());
                break;
            }
        }
        // Gumbel search draws its move through the root's Gumbel noise: no temperature.
        let gumbel = job.search.algorithm == bredon_mcts::Algorithm::Gumbel;
        let temperature = if full && !gumbel { job.search.temperature(pos.ply() as usize) } else { 0.0 };
        let mv = match result.try_select_move(temperature, &mut rng) {
            Some(mv) => mv,
            None => {
                // Never expected (the game is not over); a fresh tree rather than a dead run.
                eprintln!("warning: the search returned no move at ply {} of a live game; searching afresh", pos.ply());
                search = Search::new(pos.clone(), job.search.clone());
                let again = search.run(evaluator, visits.max(2) as u64, &mut rng);
                again.best_move.ok_or(RunError::NoMove(pos.ply().into()))?
            }
        };
        let visits = if full { policy_target(&result) } else { Vec::new() };
        plies.push(PlyRecord { mv: mv.0, visits, root_value: value });
        pos.play(mv)?;
        search.advance(mv);
    }
    let result = match (resigned, pos.result()) {
        (Some(loser), _) => StoredResult::finished(bredon_rules::GameResult::Win {
            color: loser.opposite(),
            kind: bredon_rules::WinKind::Other,
        }),
        (None, Some(r)) => StoredResult::finished(r),
        (None, None) => StoredResult::adjudicated(pos.flat_result()),
    };
    let summary = GameSummary {
        plies: plies.len(),
        samples: plies.iter().filter(|p| p.is_sample()).count(),
        result,
        resigned: resigned.is_some(),
        false_resignation: match (resigned, would_resign) {
            (None, Some(c)) => Some(result.winner() == Some(c)),
            _ => None,
        },
        reanalysed: false,
        endgame_from: (replayed > 0).then_some(replayed),
        opening_plies: 0,
    };
    let record =
        GameRecord { size: options.size as u8, half_komi: options.half_komi, model: job.model.clone(), plies, result };
    Ok(Some((record, summary)))
}

/// The policy target of a full search as a record stores it: the root's visit counts, or
/// with Gumbel search the improved policy as weights in millionths (the record's counts
/// are normalised into the target when samples are built).
fn policy_target(result: &bredon_mcts::SearchResult) -> Vec<(u16, u32)> {
    match &result.improved_policy {
        Some(pi) => pi.iter().map(|&(m, p)| (m.0, (p * 1e6).round() as u32)).filter(|&(_, w)| w > 0).collect(),
        None => result.visits.iter().map(|&(m, v)| (m.0, v)).collect(),
    }
}

/// Reanalyses a stored game (MuZero Reanalyse, as TakZero uses it): replays its moves and
/// searches again, with the job's network and a full search (`[selfplay] visits`, root
/// noise on), every position that was a training sample, so that old positions get the
/// newest network's policy and root value as targets. The moves, the result (the value
/// target) and so the auxiliary targets stay the source's. The record returned is named
/// after the job's model. `None` if `stop` was set.
pub fn reanalyse_game(
    job: &SelfPlayJob,
    evaluator: &dyn Evaluator,
    source: &GameRecord,
    game_index: u64,
    stop: &AtomicBool,
) -> Result<Option<(GameRecord, GameSummary)>> {
    let mut rng = ChaCha8Rng::seed_from_u64(job.seed ^ game_index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5EA1);
    let mut pos = Position::with_options(source.options())?;
    let mut search = Search::new(pos.clone(), job.search.clone());
    search.set_root_noise(true);
    let mut plies = Vec::with_capacity(source.plies.len());
    for ply in &source.plies {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let (visits, root_value) = if ply.is_sample() && pos.result().is_none() {
            let result = search.run(evaluator, job.selfplay.visits.max(1) as u64, &mut rng);
            (policy_target(&result), result.value)
        } else {
            (Vec::new(), ply.root_value)
        };
        plies.push(PlyRecord { mv: ply.mv, visits, root_value });
        pos.play(Move(ply.mv))?;
        search.advance(Move(ply.mv));
    }
    let record = GameRecord {
        size: source.size,
        half_komi: source.half_komi,
        model: job.model.clone(),
        plies,
        result: source.result,
    };
    let summary = GameSummary {
        plies: record.plies.len(),
        samples: record.sample_count(),
        result: record.result,
        resigned: false,
        false_resignation: None,
        reanalysed: true,
        endgame_from: None,
        opening_plies: 0,
    };
    Ok(Some((record, summary)))
}

/// The plies after which `source` stands in an endgame: the game is not over and the
/// fewer pieces in hand (stones and capstones) of the two sides is at most `reserves`.
/// Empty if the game ended before one (a road win in the middlegame, say).
pub fn endgame_plies(source: &GameRecord, reserves: u32) -> Result<Vec<usize>> {
    let mut pos = Position::with_options(source.options())?;
    let mut found = Vec::new();
    for (i, ply) in source.plies.iter().enumerate() {
        if i > 0 && pos.result().is_none() {
            let left = |c| {
                let (stones, caps) = pos.reserves(c);
                u32::from(stones) + u32::from(caps)
            };
            if left(bredon_rules::Color::White).min(left(bredon_rules::Color::Black)) <= reserves {
                found.push(i);
            }
        }
        pos.play(Move(ply.mv))?;
    }
    Ok(found)
}

/// Plays on from one of `source`'s endgame positions ([`endgame_plies`] with `[selfplay]
/// endgame_reserves`), drawn at random: the source's moves up to it are replayed as
/// plies that are not samples, then the game goes on with the job's searches as a new
/// game would, to its own result. `Ok(None)` with `stop`, and when `source` never reached
/// an endgame (the caller plays a new game instead).
pub fn endgame_start(
    job: &SelfPlayJob,
    evaluator: &dyn Evaluator,
    source: &GameRecord,
    game_index: u64,
    stop: &AtomicBool,
) -> Result<Option<(GameRecord, GameSummary)>> {
    let mut rng = ChaCha8Rng::seed_from_u64(job.seed ^ game_index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xE9D6);
    let starts = endgame_plies(source, job.selfplay.endgame_reserves)?;
    if starts.is_empty() {
        return Ok(None);
    }
    let at = starts[rng.random_range(0..starts.len())];
    let prefix =
        source.plies[..at].iter().map(|p| PlyRecord { mv: p.mv, visits: Vec::new(), root_value: p.root_value });
    play_on(job, evaluator, source.options(), prefix.collect(), rng, stop)
}

/// What a game slot does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot<'a> {
    /// A new game from the start.
    New,
    /// Reanalyse this stored game ([`reanalyse_game`]).
    Reanalyse(&'a Path),
    /// Play on from one of this stored game's endgames ([`endgame_start`]).
    Endgame(&'a Path),
}

/// What slot `game_index` does: with probability `[selfplay] reanalyse` it reanalyses,
/// with probability `endgame_starts` it starts from an endgame, each of a stored game
/// drawn at random from `job.stored_games` (by the slot's own RNG, so a resumed
/// generation draws the same); otherwise, or with no stored games, it plays a new game.
fn slot_kind(job: &SelfPlayJob, game_index: u64) -> Slot<'_> {
    let cfg = &job.selfplay;
    let (reanalyse, endgame) = (cfg.reanalyse.clamp(0.0, 1.0), cfg.endgame_starts.clamp(0.0, 1.0));
    if job.stored_games.is_empty() || reanalyse + endgame == 0.0 {
        return Slot::New;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(job.seed ^ game_index.wrapping_mul(0xD1B5_4A32_D192_ED03));
    let draw: f64 = rng.random();
    if draw >= reanalyse + endgame {
        return Slot::New;
    }
    let source = job.stored_games[rng.random_range(0..job.stored_games.len())].as_path();
    if draw < reanalyse { Slot::Reanalyse(source) } else { Slot::Endgame(source) }
}

/// Plays, reanalyses or starts from an endgame ([`slot_kind`]) the game of slot `index`.
/// A source that cannot be read, is of another board size or komi, or (for an endgame
/// start) never reached an endgame gives way to a new game (with a warning for the first
/// two): it is old data, and the slot is still filled.
fn fill_slot(
    job: &SelfPlayJob,
    evaluator: &dyn Evaluator,
    index: u64,
    stop: &AtomicBool,
) -> Result<Option<(GameRecord, GameSummary)>> {
    let (path, reanalyse) = match slot_kind(job, index) {
        Slot::New => return play_game(job, evaluator, index, stop),
        Slot::Reanalyse(path) => (path, true),
        Slot::Endgame(path) => (path, false),
    };
    let source = match GameRecord::load(path) {
        Ok((source, _, _)) if job.accepts(&source.options()) => source,
        Ok(_) => {
            eprintln!("warning: not using stored game {} (another size or komi)", path.display());
            return play_game(job, evaluator, index, stop);
        }
        Err(e) => {
            eprintln!("warning: not using a damaged stored game: {}", bredon_storage::error_chain(&e));
            return play_game(job, evaluator, index, stop);
        }
    };
    if reanalyse {
        return reanalyse_game(job, evaluator, &source, index, stop);
    }
    match endgame_start(job, evaluator, &source, index, stop)? {
        Some(game) => Ok(Some(game)),
        None if stop.load(Ordering::Relaxed) => Ok(None),
        None => play_game(job, evaluator, index, stop),
    }
}

/// The stored games of `games_dir` that reanalysis and endgame starts may draw from: the
/// newest `newest` records (by model directory, then name) that are not reanalysed
/// records themselves.
pub fn reanalyse_candidates(games_dir: &Path, newest: usize) -> Result<Arc<[PathBuf]>> {
    let mut files = crate::replay::list_game_files(games_dir)?;
    files.retain(|p| !p.file_stem().is_some_and(|s| s.to_string_lossy().ends_with(REANALYSED_SUFFIX)));
    let skip = files.len().saturating_sub(newest);
    Ok(files.drain(skip..).collect())
}

/// What [`run_pool`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolReport {
    /// Games stored.
    pub stored: usize,
    /// The evaluation cache's hits and lookups (zero with `eval_cache_mb = 0`).
    pub cache: CacheStats,
    /// CPU time the game threads used, summed over them: the searches' own work (tree,
    /// move generation, tactics, the evaluation cache, turning replies into priors),
    /// without the network's forward passes, which run on the inference threads (`None`
    /// where the platform has no per-thread CPU clock).
    pub search_cpu: Option<std::time::Duration>,
}

/// CPU time the calling thread has used (`None` where the platform does not tell).
pub fn thread_cpu_time() -> Option<std::time::Duration> {
    #[cfg(unix)]
    {
        cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// CPU time every thread of this process has used (`None` where the platform does not
/// tell). Beside [`thread_cpu_time`] it shows work handed to other threads: burn's GPU
/// runtime runs its server (kernel lookup, binding, command encoding, submission) on a
/// thread of its own, so on a GPU a training step's host work is mostly not the calling
/// thread's.
pub fn process_cpu_time() -> Option<std::time::Duration> {
    #[cfg(unix)]
    {
        cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(unix)]
fn cpu_clock(clock: libc::clockid_t) -> Option<std::time::Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one `timespec` through a valid, exclusive pointer.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| std::time::Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32))
}

/// Plays `games` games on `threads` threads (all with `evaluator`, behind one evaluation
/// cache of `eval_cache_mb`), storing each finished game in `games_dir` (the generation's
/// directory, `RunDir::generation_games_dir`) as soon as it ends. `first_index` numbers
/// the games (file names and RNG streams), so a resumed generation does not replay the
/// same games. Stops early (dropping unfinished games) when `stop` is set. `on_game` runs
/// on the calling thread for every stored game.
pub fn run_pool(
    job: &SelfPlayJob,
    evaluator: Arc<dyn Evaluator>,
    games_dir: &Path,
    games: usize,
    first_index: u64,
    stop: &AtomicBool,
    mut on_game: impl FnMut(&GameSummary),
) -> Result<PoolReport> {
    // One cache for the pool's games: they all play one network.
    let cache = match job.selfplay.eval_cache_mb {
        0 => None,
        mb => Some(Arc::new(CachedEvaluator::new(evaluator.clone(), mb << 20))),
    };
    let evaluator: Arc<dyn Evaluator> = match &cache {
        Some(c) => c.clone(),
        None => evaluator,
    };
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<Result<GameSummary>>();
    let threads = job.selfplay.concurrent_games.min(games).max(1);
    let mut stored = 0;
    // The game threads' CPU time in nanoseconds (u64::MAX once a thread could not read it).
    let search_cpu = AtomicU64::new(0);
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..threads {
            let tx = tx.clone();
            let evaluator = evaluator.clone();
            let next = &next;
            let search_cpu = &search_cpu;
            scope.spawn(move || {
                let started = thread_cpu_time();
                let _count = CountCpu { started, total: search_cpu };
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= games || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let index = first_index + i as u64;
                    match fill_slot(job, evaluator.as_ref(), index, stop) {
                        Ok(Some((record, summary))) => {
                            let suffix = match (summary.reanalysed, summary.endgame_from) {
                                (true, _) => REANALYSED_SUFFIX,
                                (false, Some(_)) => ENDGAME_SUFFIX,
                                (false, None) => "",
                            };
                            let id = format!("{index:08}-{}{suffix}", std::process::id());
                            let stored = store_game(games_dir, &record, &id).map(|_| summary);
                            if tx.send(stored).is_err() {
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            break;
                        }
                    }
                }
            });
        }
        drop(tx);
        for msg in rx {
            let summary = msg?;
            stored += 1;
            on_game(&summary);
        }
        Ok(())
    })?;
    let search_cpu = match search_cpu.into_inner() {
        u64::MAX => None,
        nanos => Some(std::time::Duration::from_nanos(nanos)),
    };
    Ok(PoolReport { stored, cache: cache.map(|c| c.stats()).unwrap_or_default(), search_cpu })
}

/// Adds a game thread's CPU time since `started` to `total` when the thread ends,
/// however it ends (poisons `total` with `u64::MAX` if the clock cannot be read).
struct CountCpu<'a> {
    started: Option<std::time::Duration>,
    total: &'a AtomicU64,
}

impl Drop for CountCpu<'_> {
    fn drop(&mut self) {
        match (self.started, thread_cpu_time()) {
            (Some(a), Some(b)) => {
                let nanos = u64::try_from(b.saturating_sub(a).as_nanos()).unwrap_or(u64::MAX - 1);
                let _ = self.total.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                    (t != u64::MAX).then(|| t.saturating_add(nanos).min(u64::MAX - 1))
                });
            }
            _ => self.total.store(u64::MAX, Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bredon_mcts::UniformEvaluator;

    /// A 4x4 job: PUCT with `visits` visits per full search, half the moves searched fully.
    fn job(visits: u32, reanalyse: f64, stored_games: Vec<PathBuf>) -> SelfPlayJob {
        SelfPlayJob {
            options: GameOptions::new(4),
            search: SearchConfig::default(),
            selfplay: SelfPlayConfig {
                visits,
                fast_visits: 2,
                full_search_prob: 0.5,
                max_plies: 60,
                concurrent_games: 2,
                reanalyse,
                ..SelfPlayConfig::default()
            },
            model: format!("v{visits}"),
            seed: 11,
            stored_games: stored_games.into(),
        }
    }

    fn visit_sum(p: &PlyRecord) -> u32 {
        p.visits.iter().map(|&(_, v)| v).sum()
    }

    #[test]
    fn a_reanalysed_game_keeps_the_moves_and_result_and_searches_its_samples_again() {
        let stop = AtomicBool::new(false);
        let (source, _) = play_game(&job(4, 0.0, vec![]), &UniformEvaluator, 3, &stop).unwrap().unwrap();
        assert!(
            source.sample_count() > 0 && source.sample_count() < source.plies.len(),
            "a mix of full and fast searches"
        );
        let again = job(64, 0.0, vec![]);
        let (record, summary) = reanalyse_game(&again, &UniformEvaluator, &source, 3, &stop).unwrap().unwrap();
        assert!(summary.reanalysed);
        assert_eq!(record.model, "v64");
        assert_eq!((record.size, record.half_komi, record.result), (source.size, source.half_komi, source.result));
        assert_eq!(summary.samples, source.sample_count());
        let mut pos = Position::with_options(source.options()).unwrap();
        for (old, new) in source.plies.iter().zip(&record.plies) {
            assert_eq!(old.mv, new.mv);
            // The samples (and only they) are searched again, with the new budget; every
            // move of a target is legal there.
            assert_eq!(old.visits.is_empty(), new.visits.is_empty());
            if !new.visits.is_empty() {
                assert!(visit_sum(old) < 32 && visit_sum(new) >= 32, "{} -> {}", visit_sum(old), visit_sum(new));
                assert!(new.visits.iter().all(|&(m, _)| pos.is_legal(Move(m))));
            } else {
                assert_eq!(old.root_value, new.root_value);
            }
            pos.play(Move(old.mv)).unwrap();
        }
        assert_eq!(record.samples().unwrap().len(), source.sample_count());
        // Stopped: nothing.
        stop.store(true, Ordering::Relaxed);
        assert!(reanalyse_game(&again, &UniformEvaluator, &source, 3, &stop).unwrap().is_none());
    }

    /// A run's games directory with `count` uniform 4x4 games stored in `gen-0000` and an
    /// empty `gen-0001`, which is returned beside it.
    fn stored_games(count: usize) -> (tempfile::TempDir, PathBuf) {
        let games = tempfile::tempdir().unwrap();
        let (old, new) = (games.path().join("gen-0000"), games.path().join("gen-0001"));
        std::fs::create_dir_all(&old).unwrap();
        std::fs::create_dir_all(&new).unwrap();
        let stop = AtomicBool::new(false);
        let evaluator: Arc<dyn Evaluator> = Arc::new(UniformEvaluator);
        assert_eq!(run_pool(&job(4, 0.0, vec![]), evaluator, &old, count, 0, &stop, |_| {}).unwrap().stored, count);
        (games, new)
    }

    /// All the policy on the first legal move.
    struct FirstMove;
    impl Evaluator for FirstMove {
        fn evaluate_batch(&self, _: &[&Position], legal: &[&[Move]]) -> Vec<bredon_mcts::Evaluation> {
            legal
                .iter()
                .map(|l| {
                    bredon_mcts::Evaluation::new((0..l.len()).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect(), 0.25)
                })
                .collect()
        }
    }

    #[test]
    fn drawn_openings_start_a_share_of_the_games_without_samples() {
        let stop = AtomicBool::new(false);
        let mut job = job(4, 0.0, vec![]);
        job.selfplay.full_search_prob = 1.0;
        job.selfplay.opening_random = 1.0;
        job.selfplay.opening_plies = 3;
        let mut counts = std::collections::BTreeSet::new();
        let mut first_moves = std::collections::BTreeSet::new();
        for i in 0..24 {
            let (record, summary) = play_game(&job, &UniformEvaluator, i, &stop).unwrap().unwrap();
            let k = summary.opening_plies;
            assert!((1..=3).contains(&k), "game {i}: {k} drawn plies");
            assert!(record.plies[..k].iter().all(|p| !p.is_sample()), "drawn plies are no samples");
            assert!(record.plies[k].is_sample(), "the first searched ply is one (all searches full)");
            assert_eq!(summary.samples, record.plies[k..].iter().filter(|p| p.is_sample()).count());
            assert_eq!(summary.endgame_from, None);
            counts.insert(k);
            first_moves.insert(record.plies[0].mv);
        }
        assert_eq!(counts.len(), 3, "1 to 3 plies drawn: {counts:?}");
        assert!(first_moves.len() >= 6, "uniform priors open anywhere: {first_moves:?}");
        // The draw follows the raw policy: all on the first legal move, every drawn ply is it.
        for i in 0..6 {
            let (record, summary) = play_game(&job, &FirstMove, i, &stop).unwrap().unwrap();
            let mut pos = Position::new(4).unwrap();
            for p in &record.plies[..summary.opening_plies] {
                assert_eq!(p.mv, pos.legal_moves()[0].0);
                assert_eq!(p.root_value, 0.25, "the raw value is kept");
                pos.play(Move(p.mv)).unwrap();
            }
        }
        // Off (the default): no drawn plies, the first ply searched.
        job.selfplay.opening_random = 0.0;
        let (record, summary) = play_game(&job, &UniformEvaluator, 5, &stop).unwrap().unwrap();
        assert_eq!(summary.opening_plies, 0);
        assert!(record.plies[0].is_sample());
    }

    #[test]
    fn komi_randomisation_plays_a_share_of_the_games_at_nearby_komi() {
        let mut job = job(4, 0.0, vec![]);
        job.options = GameOptions::new(4).with_half_komi(2); // komi 1
        job.selfplay.komi_randomise = 0.75;
        job.selfplay.komi_spread = 1.5; // half komi 0 to 5
        let drawn: Vec<i8> = (0..300).map(|i| job.new_game_options(i).half_komi).collect();
        // The draw is the game's own (a resumed generation draws the same), within the spread.
        assert_eq!(drawn, (0..300).map(|i| job.new_game_options(i).half_komi).collect::<Vec<_>>());
        assert!(drawn.iter().all(|h| (0..=5).contains(h)), "{drawn:?}");
        let seen: std::collections::BTreeSet<i8> = drawn.iter().copied().collect();
        assert_eq!(seen.len(), 6, "every step of the spread is drawn: {seen:?}");
        // A quarter at the run's komi, and a sixth of the rest: about 112 of 300.
        let at_run_komi = drawn.iter().filter(|&&h| h == 2).count();
        assert!((80..=145).contains(&at_run_komi), "{at_run_komi}");
        assert!(job.new_game_options(7).size == 4);
        // Stored games at a komi the job could draw may be reanalysed; others not.
        assert!(job.accepts(&GameOptions::new(4).with_half_komi(5)));
        assert!(!job.accepts(&GameOptions::new(4).with_half_komi(6)));
        assert!(!job.accepts(&GameOptions::new(5).with_half_komi(2)));
        // Never below 0 when the run's komi is not.
        let mut zero = job.clone();
        zero.options = GameOptions::new(4);
        assert!((0..300).all(|i| (0..=3).contains(&zero.new_game_options(i).half_komi)));
        // Off: every game at the run's komi, and only that komi's games are accepted.
        let mut off = job.clone();
        off.selfplay.komi_randomise = 0.0;
        assert!((0..300).all(|i| off.new_game_options(i) == off.options));
        assert!(off.accepts(&off.options) && !off.accepts(&GameOptions::new(4).with_half_komi(3)));

        // A pool's records carry the komi they were played at, and their results are that
        // komi's.
        let stop = AtomicBool::new(false);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(run_pool(&job, Arc::new(UniformEvaluator), dir.path(), 16, 0, &stop, |_| {}).unwrap().stored, 16);
        let mut komis = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "game") {
                continue;
            }
            let index: u64 = path.file_name().unwrap().to_string_lossy()[..8].parse().unwrap();
            let (record, _, _) = GameRecord::load(&path).unwrap();
            assert_eq!(record.options(), job.new_game_options(index), "{}", path.display());
            komis.insert(record.half_komi);
            let mut pos = Position::with_options(record.options()).unwrap();
            for ply in &record.plies {
                pos.play(Move(ply.mv)).unwrap();
            }
            if let (StoredResult::Finished { .. }, Some(r)) = (record.result, pos.result()) {
                assert_eq!(record.result, StoredResult::finished(r), "{}", path.display());
            }
        }
        assert!(komis.len() > 1, "16 games at one komi: {komis:?}");
    }

    /// The uniform evaluator, counting the positions it is asked about.
    struct Counting(AtomicUsize);

    impl Evaluator for Counting {
        fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<bredon_mcts::Evaluation> {
            self.0.fetch_add(positions.len(), Ordering::Relaxed);
            UniformEvaluator.evaluate_batch(positions, legal)
        }
    }

    /// The uniform evaluator, spending `per_call` of its thread's CPU time on every batch.
    #[cfg(unix)]
    struct Busy {
        per_call: std::time::Duration,
        calls: AtomicUsize,
    }

    #[cfg(unix)]
    impl Evaluator for Busy {
        fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<bredon_mcts::Evaluation> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            let start = thread_cpu_time().unwrap();
            while thread_cpu_time().unwrap() - start < self.per_call {
                std::hint::spin_loop();
            }
            UniformEvaluator.evaluate_batch(positions, legal)
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_thread_clock_counts_work_not_waiting() {
        let start = thread_cpu_time().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(60));
        let slept = thread_cpu_time().unwrap() - start;
        assert!(slept < std::time::Duration::from_millis(30), "{slept:?} of CPU while sleeping");
        let wall = std::time::Instant::now();
        let mut x = 0u64;
        while wall.elapsed() < std::time::Duration::from_millis(60) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        assert!(thread_cpu_time().unwrap() - start > slept, "{x}");
    }

    /// The pool's report sums every game thread's CPU time: here at least what the
    /// evaluator spent on the game threads, and no more than the threads' wall time.
    #[cfg(unix)]
    #[test]
    fn the_pool_reports_its_game_threads_cpu_time() {
        let stop = AtomicBool::new(false);
        let dir = tempfile::tempdir().unwrap();
        let busy = Arc::new(Busy { per_call: std::time::Duration::from_micros(200), calls: AtomicUsize::new(0) });
        let mut job = job(8, 0.0, vec![]);
        job.selfplay.eval_cache_mb = 0;
        job.selfplay.concurrent_games = 3;
        let wall = std::time::Instant::now();
        let report = run_pool(&job, busy.clone(), dir.path(), 6, 0, &stop, |_| {}).unwrap();
        let wall = wall.elapsed();
        assert_eq!(report.stored, 6);
        let cpu = report.search_cpu.expect("a per-thread clock on unix");
        let spent = busy.per_call * busy.calls.load(Ordering::Relaxed) as u32;
        assert!(cpu >= spent, "{cpu:?} reported, {spent:?} spent in the evaluator alone");
        assert!(cpu <= wall * 3, "{cpu:?} reported by 3 threads in {wall:?}");
    }

    #[test]
    fn the_evaluation_cache_plays_the_same_games_with_fewer_evaluations() {
        let stop = AtomicBool::new(false);
        let play = |mb: usize| {
            let dir = tempfile::tempdir().unwrap();
            let counting = Arc::new(Counting(AtomicUsize::new(0)));
            let mut job = job(24, 0.0, vec![]);
            job.selfplay.eval_cache_mb = mb;
            let report = run_pool(&job, counting.clone(), dir.path(), 6, 0, &stop, |_| {}).unwrap();
            assert_eq!(report.stored, 6);
            // The report counts the cache's answers: every position the network did not see.
            let asked = counting.0.load(Ordering::Relaxed) as u64;
            if mb == 0 {
                assert_eq!(report.cache, bredon_mcts::CacheStats::default());
            } else {
                assert!(report.cache.hits > 0, "{:?}", report.cache);
                assert_eq!(report.cache.lookups - report.cache.hits, asked, "{:?}", report.cache);
            }
            let mut files: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "game"))
                .collect();
            files.sort();
            let games: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
            (games, counting.0.load(Ordering::Relaxed))
        };
        let (plain, asked_plain) = play(0);
        let (cached, asked_cached) = play(16);
        assert_eq!(plain.len(), 6);
        assert!(plain == cached, "the cache changed the games");
        // Six games from the empty board share their first positions at least.
        assert!(asked_cached < asked_plain, "{asked_cached} vs {asked_plain} positions evaluated");
    }

    #[test]
    fn the_pool_reanalyses_a_share_of_its_slots_from_the_stored_games() {
        let stop = AtomicBool::new(false);
        let (games, new) = stored_games(6);
        let evaluator: Arc<dyn Evaluator> = Arc::new(UniformEvaluator);
        // The newest 4 stored games are the candidates.
        let sources = reanalyse_candidates(games.path(), 4).unwrap();
        assert_eq!(sources[..], crate::replay::list_game_files(games.path()).unwrap()[2..]);
        let job = job(16, 0.5, sources.to_vec());
        let mut reanalysed = 0;
        let stored =
            run_pool(&job, evaluator, &new, 16, 0, &stop, |g| reanalysed += usize::from(g.reanalysed)).unwrap().stored;
        assert_eq!(stored, 16);
        assert!((3..=13).contains(&reanalysed), "about half of 16 slots: {reanalysed}");
        // The slot's draw is its own: the same index, the same source.
        for i in 0..16 {
            assert_eq!(slot_kind(&job, i), slot_kind(&job, i));
        }
        let files: Vec<PathBuf> = std::fs::read_dir(&new).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(files.iter().filter(|p| p.extension().is_some_and(|e| e == "game")).count(), 16);
        let named: Vec<_> = files.iter().filter(|p| p.to_string_lossy().ends_with("-reanalysed.game")).collect();
        assert_eq!(named.len(), reanalysed);
        for path in &named {
            let (record, samples, _) = GameRecord::load(path).unwrap();
            assert_eq!(record.model, "v16");
            let moves = |r: &GameRecord| r.plies.iter().map(|p| p.mv).collect::<Vec<_>>();
            assert!(sources.iter().any(|s| moves(&GameRecord::load(s).unwrap().0) == moves(&record)));
            assert!(!samples.is_empty());
        }
        // Reanalysed records are not candidates themselves.
        let all = reanalyse_candidates(games.path(), 1000).unwrap();
        assert_eq!(all.len(), 6 + 16 - reanalysed);
        assert!(all.iter().all(|p| !p.to_string_lossy().contains(REANALYSED_SUFFIX)));
    }

    /// A 4x4 game from the start that reached an endgame (the fewer pieces in hand at
    /// most 5), played by the uniform evaluator, with the first index from `from` that
    /// gives one.
    fn game_with_endgame(from: u64) -> GameRecord {
        let stop = AtomicBool::new(false);
        (from..from + 50)
            .map(|i| play_game(&job(4, 0.0, vec![]), &UniformEvaluator, i, &stop).unwrap().unwrap().0)
            .find(|g| !endgame_plies(g, 5).unwrap().is_empty())
            .expect("one of 50 uniform 4x4 games reaches an endgame")
    }

    #[test]
    fn endgame_plies_are_the_live_positions_with_few_pieces_in_hand() {
        let game = game_with_endgame(0);
        let plies = endgame_plies(&game, 5).unwrap();
        let mut pos = Position::with_options(game.options()).unwrap();
        for (i, ply) in game.plies.iter().enumerate() {
            let fewest = [bredon_rules::Color::White, bredon_rules::Color::Black]
                .map(|c| {
                    let (stones, caps) = pos.reserves(c);
                    u32::from(stones) + u32::from(caps)
                })
                .into_iter()
                .min()
                .unwrap();
            let endgame = i > 0 && pos.result().is_none() && fewest <= 5;
            assert_eq!(plies.contains(&i), endgame, "ply {i}: {fewest} in hand");
            pos.play(Move(ply.mv)).unwrap();
        }
        // Fewer allowed in hand, fewer positions; none with nothing allowed before the end.
        assert!(endgame_plies(&game, 2).unwrap().len() < plies.len());
        assert!(endgame_plies(&game, 20).unwrap().len() > plies.len());
    }

    #[test]
    fn an_endgame_start_replays_the_source_and_plays_on_to_its_own_result() {
        let stop = AtomicBool::new(false);
        let source = game_with_endgame(100);
        let mut job = job(16, 0.0, vec![]);
        job.selfplay.endgame_reserves = 5;
        let starts = endgame_plies(&source, 5).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for index in 0..12 {
            let (record, summary) = endgame_start(&job, &UniformEvaluator, &source, index, &stop).unwrap().unwrap();
            let at = summary.endgame_from.expect("an endgame start says where it started");
            assert!(starts.contains(&at), "started at ply {at}, not an endgame: {starts:?}");
            seen.insert(at);
            assert!(!summary.reanalysed);
            assert_eq!(record.model, "v16");
            // The replayed plies are the source's, and not samples; the game goes on past
            // them, and its record replays to a finished game (the result is its own).
            for (old, new) in source.plies[..at].iter().zip(&record.plies) {
                assert_eq!((old.mv, new.visits.is_empty()), (new.mv, true));
            }
            assert!(record.plies.len() > at);
            let mut pos = Position::with_options(record.options()).unwrap();
            for p in &record.plies {
                pos.play(Move(p.mv)).unwrap();
            }
            assert!(pos.result().is_some() || record.plies.len() == job.selfplay.max_plies);
            assert_eq!(summary.samples, record.plies[at..].iter().filter(|p| p.is_sample()).count());
            assert_eq!(record.samples().unwrap().len(), summary.samples);
        }
        assert!(seen.len() > 1 || starts.len() == 1, "the start is drawn: {seen:?} of {starts:?}");
        // A game that never reached an endgame gives no start (the slot plays a new game).
        job.selfplay.endgame_reserves = 0;
        let early = endgame_plies(&source, 0).unwrap().is_empty();
        let none = endgame_start(&job, &UniformEvaluator, &source, 0, &stop).unwrap().is_none();
        assert_eq!(early, none);
        // Stopped: nothing.
        job.selfplay.endgame_reserves = 5;
        stop.store(true, Ordering::Relaxed);
        assert!(endgame_start(&job, &UniformEvaluator, &source, 0, &stop).unwrap().is_none());
    }

    #[test]
    fn the_pool_starts_a_share_of_its_slots_from_stored_endgames() {
        let stop = AtomicBool::new(false);
        let (games, new) = stored_games(8);
        let evaluator: Arc<dyn Evaluator> = Arc::new(UniformEvaluator);
        let sources = reanalyse_candidates(games.path(), 100).unwrap();
        let mut job = job(16, 0.25, sources.to_vec());
        job.selfplay.endgame_starts = 0.5;
        job.selfplay.endgame_reserves = 12; // nearly every 4x4 game has one, from ply 5 on
        let (mut reanalysed, mut endgames) = (0, 0);
        let stored = run_pool(&job, evaluator, &new, 24, 0, &stop, |g| {
            reanalysed += usize::from(g.reanalysed);
            endgames += usize::from(g.endgame_from.is_some());
        })
        .unwrap()
        .stored;
        assert_eq!(stored, 24);
        assert!((5..=19).contains(&endgames), "about half of 24 slots: {endgames}");
        assert!((1..=12).contains(&reanalysed), "about a quarter of 24 slots: {reanalysed}");
        let named: Vec<PathBuf> = std::fs::read_dir(&new)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with("-endgame.game"))
            .collect();
        assert_eq!(named.len(), endgames);
        for path in &named {
            let (record, samples, _) = GameRecord::load(path).unwrap();
            // Each continues the opening of one of the sources, which it does not end as.
            let moves = |r: &GameRecord| r.plies.iter().map(|p| p.mv).collect::<Vec<_>>();
            let mine = moves(&record);
            assert!(sources.iter().any(|s| moves(&GameRecord::load(s).unwrap().0)[..2] == mine[..2]));
            assert!(record.plies[..2].iter().all(|p| !p.is_sample()));
            assert_eq!(samples.len(), record.sample_count());
        }
    }
}
