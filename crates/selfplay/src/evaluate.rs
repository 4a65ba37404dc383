//! The evaluation hook of the training loop: the new checkpoint plays short matches
//! against the uniform-policy search and against the first checkpoint, with the same
//! visits on both sides, colours alternating. Full Elo tables come from `bredon arena`.

use crate::error::{Result, RunError};
use bredon_mcts::{Evaluator, Search, SearchConfig, UniformEvaluator};
use bredon_rules::{Color, GameOptions, Position};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::RunConfig;
use crate::net::Learner;
use crate::rundir::{Generation, RunDir};

/// How the games of an evaluation match are played.
#[derive(Clone, Debug)]
pub struct MatchSettings<'a> {
    /// Board size and komi.
    pub options: GameOptions,
    /// The search both sides run (root noise is turned off).
    pub search: &'a SearchConfig,
    /// Games (colours alternating).
    pub games: usize,
    /// Visits per move, for both sides.
    pub visits: u32,
    /// Ply limit; a game reaching it is scored by the flat count.
    pub max_plies: usize,
    /// Seed of the opening randomness (game pairs share one).
    pub seed: u64,
}

/// Plays the match's games (colours alternating, A white in even games) and returns A's
/// score (wins + draws / 2) / games, or `None` if `stop` cut the match short. Both sides
/// search `visits` per move without noise and pick the best move; the first 2 plies are
/// chosen with temperature 1 from the search so that games differ. Games reaching
/// `max_plies` are scored by the flat count. The games run on their own threads at once,
/// so batching evaluators (the inference service) gather leaves from all of them into one
/// forward pass.
pub fn play_match(
    a: &dyn Evaluator,
    b: &dyn Evaluator,
    settings: &MatchSettings,
    stop: &AtomicBool,
) -> Result<Option<f64>> {
    let MatchSettings { options: opts, search, games, visits, max_plies, seed } = *settings;
    let mut cfg = search.clone();
    cfg.root_noise = false;
    let cfg = &cfg;
    let play_one = |g: usize| -> Result<Option<f64>> {
        let random_plies = 2;
        let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_add(g as u64 / 2));
        let a_color = if g.is_multiple_of(2) { Color::White } else { Color::Black };
        let mut pos = Position::with_options(opts)?;
        while pos.result().is_none() && (pos.ply() as usize) < max_plies {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let ev: &dyn Evaluator = if pos.side_to_move() == a_color { a } else { b };
            let mut s = Search::new(pos.clone(), cfg.clone());
            let r = s.run(ev, visits as u64, &mut rng);
            let t = if (pos.ply() as usize) < random_plies { 1.0 } else { 0.0 };
            let mv = r.select_move(t, &mut rng);
            pos.play(mv)?;
        }
        let result = pos.result().unwrap_or_else(|| pos.flat_result());
        Ok(Some((result.score_for(a_color) as f64 + 1.0) / 2.0))
    };
    let results: Vec<Result<Option<f64>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..games).map(|g| scope.spawn(move || play_one(g))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(RunError::Panicked("an evaluation game"))))
            .collect()
    });
    let mut score = 0.0;
    let mut played = 0;
    for r in results {
        if let Some(s) = r? {
            score += s;
            played += 1;
        }
    }
    // An interrupted match (Ctrl-C) has no score rather than a made-up one.
    if played < games {
        return Ok(None);
    }
    Ok(Some(score / played.max(1) as f64))
}

/// Runs the hook for the checkpoint of `generation`: returns (opponent, score) pairs.
pub fn evaluate_generation(
    cfg: &RunConfig,
    run: &RunDir,
    learner: &Learner,
    generation: Generation,
    stop: &AtomicBool,
    compute: &bredon_infer::Compute,
) -> Result<Vec<(String, f64)>> {
    let (current, _svc) = learner.start_inference(64, cfg.selfplay.inference_shards(&compute.device))?;
    let settings = MatchSettings {
        options: cfg.game.options(),
        search: &cfg.search,
        games: cfg.eval.games,
        visits: cfg.eval.visits,
        max_plies: cfg.selfplay.max_plies,
        seed: cfg.schedule.seed ^ 0xE7A1 ^ generation.number() as u64,
    };
    let against = |opponent: &dyn Evaluator| play_match(current.as_ref(), opponent, &settings, stop);
    let mut out = Vec::new();
    if let Some(score) = against(&UniformEvaluator)? {
        out.push(("uniform".to_string(), score));
    }
    if generation > Generation::FIRST {
        let first_learner = Learner::load(cfg, &run.checkpoint_dir(Generation::FIRST), compute)?;
        let (first_eval, _svc0) = first_learner.start_inference(64, cfg.selfplay.inference_shards(&compute.device))?;
        if let Some(score) = against(first_eval.as_ref())? {
            out.push((Generation::FIRST.to_string(), score));
        }
    }
    Ok(out)
}
