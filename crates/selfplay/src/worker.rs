//! The self-play worker pool: many games at once, each in its own thread, all sharing one
//! evaluator (normally the batching inference service, which merges their leaf batches).

use crate::error::{Result, RunError};
use bredon_mcts::{Evaluator, Search, SearchConfig};
use bredon_rules::{GameOptions, Position};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
}

/// Plays one self-play game.
pub fn play_game(
    job: &SelfPlayJob,
    evaluator: &dyn Evaluator,
    game_index: u64,
    stop: &AtomicBool,
) -> Result<Option<(GameRecord, GameSummary)>> {
    let mut rng = ChaCha8Rng::seed_from_u64(job.seed ^ game_index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let cfg = &job.selfplay;
    let mut pos = Position::with_options(job.options)?;
    let mut search = Search::new(pos.clone(), job.search.clone());
    let mut plies = Vec::new();
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
        let visits = match (&result.improved_policy, full) {
            (_, false) => Vec::new(),
            // Gumbel search: the improved policy, stored as weights in millionths (the
            // record's counts are normalised into the target when samples are built).
            (Some(pi), true) => {
                pi.iter().map(|&(m, p)| (m.0, (p * 1e6).round() as u32)).filter(|&(_, w)| w > 0).collect()
            }
            (None, true) => result.visits.iter().map(|&(m, v)| (m.0, v)).collect(),
        };
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
        samples: plies.iter().filter(|p| !p.visits.is_empty()).count(),
        result,
        resigned: resigned.is_some(),
        false_resignation: match (resigned, would_resign) {
            (None, Some(c)) => Some(result.winner() == Some(c)),
            _ => None,
        },
    };
    let record = GameRecord {
        size: job.options.size as u8,
        half_komi: job.options.half_komi,
        model: job.model.clone(),
        plies,
        result,
    };
    Ok(Some((record, summary)))
}

/// Plays `games` games on `threads` threads, storing each finished game in `games_dir`
/// (the generation's directory, `RunDir::generation_games_dir`) as soon as it ends. `first_index` numbers the games (file names and RNG streams), so a
/// resumed generation does not replay the same games. Stops early (dropping unfinished
/// games) when `stop` is set. `on_game` runs on the calling thread for every stored game.
pub fn run_pool(
    job: &SelfPlayJob,
    evaluator: Arc<dyn Evaluator>,
    games_dir: &Path,
    games: usize,
    first_index: u64,
    stop: &AtomicBool,
    mut on_game: impl FnMut(&GameSummary),
) -> Result<usize> {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<Result<GameSummary>>();
    let threads = job.selfplay.concurrent_games.min(games).max(1);
    let mut stored = 0;
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..threads {
            let tx = tx.clone();
            let evaluator = evaluator.clone();
            let next = &next;
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= games || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let index = first_index + i as u64;
                    match play_game(job, evaluator.as_ref(), index, stop) {
                        Ok(Some((record, summary))) => {
                            let id = format!("{index:08}-{}", std::process::id());
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
    Ok(stored)
}
