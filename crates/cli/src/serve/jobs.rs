//! Searches, run on threads of their own, never on the request path: a request starts
//! one and gets its id; the page polls it (progress included) and may stop it. A search
//! nobody has polled for a while is stopped (its tab is gone).

use bredon_engine::analysis::{final_owners, flat_margin};
use bredon_mcts::{Budget, PlaySearch, Progress, SearchResult, play_config};
use bredon_rules::{Color, Position};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::error::ApiError;
use super::game::{Game, describe_result};
use super::models::{Engine, ModelChoice, Models};

/// How long a search may run per position, as a request gives it (`{"visits": N}` or
/// `{"millis": MS}`); the search takes it as a [`bredon_mcts::Budget`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum RequestBudget {
    /// Root visits.
    Visits(u64),
    /// Milliseconds.
    Millis(u64),
}

/// Visits a search may ask for.
pub const VISITS: std::ops::RangeInclusive<u64> = 1..=200_000;
/// Milliseconds a search may ask for, per position.
pub const MILLIS: std::ops::RangeInclusive<u64> = 10..=120_000;

impl RequestBudget {
    /// Checks the budget is in range.
    pub fn check(self) -> Result<RequestBudget, ApiError> {
        match self {
            RequestBudget::Visits(v) if !VISITS.contains(&v) => {
                Err(ApiError::bad(format!("visits {v} is out of range ({} to {})", VISITS.start(), VISITS.end())))
            }
            RequestBudget::Millis(ms) if !MILLIS.contains(&ms) => {
                Err(ApiError::bad(format!("millis {ms} is out of range ({} to {})", MILLIS.start(), MILLIS.end())))
            }
            b => Ok(b),
        }
    }

    /// The search's budget.
    pub fn budget(self) -> Budget {
        match self {
            RequestBudget::Visits(v) => Budget::Visits(v),
            RequestBudget::Millis(ms) => Budget::Time(Duration::from_millis(ms)),
        }
    }
}

/// Which positions of the game a search looks at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plies {
    /// The last position (the engine's move in a game).
    #[default]
    Last,
    /// Every position of the game (analysis).
    All,
}

/// One move of the search's root.
#[derive(Clone, Debug, Serialize)]
pub struct MoveStat {
    /// The move in PTN.
    #[serde(rename = "move")]
    pub mv: String,
    /// Root visits of the move.
    pub visits: u32,
    /// The network's prior for it.
    pub prior: f32,
}

/// What the engine says about one position.
#[derive(Clone, Debug, Serialize)]
pub struct PlyAnalysis {
    /// Plies played before this position.
    pub ply: usize,
    /// The side to move, `white` or `black`.
    pub to_move: &'static str,
    /// The search's value for the side to move, -1 to 1.
    pub value: f32,
    /// White's win probability, `(value for white + 1) / 2`.
    pub white_win: f32,
    /// `win`, `loss` or `draw` for the side to move when the search proved it.
    pub proven: Option<&'static str>,
    /// The proof or the game's end in words ("White wins (proven)").
    pub proven_text: Option<String>,
    /// The engine's move.
    pub best: Option<String>,
    /// The principal variation.
    pub pv: Vec<String>,
    /// Root visits.
    pub visits: u64,
    /// The most visited root moves.
    pub top: Vec<MoveStat>,
    /// The network's own value for the side to move (no search).
    pub net_value: f32,
    /// The network's policy summed per square (by the square a move places on or moves
    /// from), index `row * size + col`; sums to 1.
    pub heat: Vec<f32>,
    /// The search's expected final flat margin for white in flats, komi included
    /// (white's flats − black's − komi), backed up from the network's margin head; `null`
    /// without that head. Exact for a finished game.
    pub white_margin: Option<f32>,
    /// The network's expected final owner of each square, −1 (black) to 1 (white), index
    /// `row * size + col`; `null` without the auxiliary heads. Exact for a finished game.
    pub ownership: Option<Vec<f32>>,
}

/// Where a search stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Still searching.
    Running,
    /// Every position searched.
    Done,
    /// Stopped by the page (or left alone too long) before the end.
    Stopped,
    /// Failed (the model could not be loaded); `error` says why.
    Failed,
}

/// A search's state as the page polls it.
#[derive(Clone, Debug, Serialize)]
pub struct JobView {
    /// The id to poll and stop it by.
    pub id: u64,
    /// Running, done, stopped or failed.
    pub status: Status,
    /// The engine that searches.
    pub engine: String,
    /// The positions searched (plies).
    pub plies: Vec<usize>,
    /// One result per position in `plies`, `null` until searched.
    pub results: Vec<Option<PlyAnalysis>>,
    /// The search in progress: the latest snapshot of the position being searched.
    pub current: Option<PlyAnalysis>,
    /// Why it failed.
    pub error: Option<String>,
}

struct Job {
    stop: Arc<AtomicBool>,
    view: Mutex<JobView>,
    polled: Mutex<Instant>,
    finished: Mutex<Option<Instant>>,
}

/// A search left unpolled this long is stopped.
const ABANDONED: Duration = Duration::from_secs(30);
/// A finished search is kept this long for the page to read.
const KEEP: Duration = Duration::from_secs(600);

/// All searches of the server.
pub struct Jobs {
    next: AtomicU64,
    jobs: Mutex<HashMap<u64, Arc<Job>>>,
    max_running: usize,
}

impl Jobs {
    /// At most `max_running` searches at once.
    pub fn new(max_running: usize) -> Jobs {
        Jobs { next: AtomicU64::new(1), jobs: Mutex::new(HashMap::new()), max_running: max_running.max(1) }
    }

    /// Starts searching `plies` of `game` on a new thread; returns its id. A game over at
    /// the last position with `Plies::Last` has nothing to search: a 400.
    pub fn start(
        &self,
        models: Arc<Models>,
        choice: ModelChoice,
        game: Game,
        plies: Plies,
        budget: RequestBudget,
    ) -> Result<JobView, ApiError> {
        let budget = budget.check()?;
        models.check(&choice, game.size())?;
        let plies: Vec<usize> = match plies {
            Plies::Last => {
                if let Some(r) = game.last().result() {
                    return Err(ApiError::bad(format!("the game is over ({}): nothing to search", r.ptn())));
                }
                vec![game.positions.len() - 1]
            }
            Plies::All => (0..game.positions.len()).collect(),
        };
        let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        jobs.retain(|_, j| j.finished.lock().unwrap().is_none_or(|t| t.elapsed() < KEEP));
        let running = jobs.values().filter(|j| j.finished.lock().unwrap().is_none()).count();
        if running >= self.max_running {
            return Err(ApiError::Busy(format!(
                "{running} searches are running, the most this server runs at once; stop one or try again"
            )));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let view = JobView {
            id,
            status: Status::Running,
            engine: String::new(),
            results: vec![None; plies.len()],
            plies,
            current: None,
            error: None,
        };
        let job = Arc::new(Job {
            stop: Arc::new(AtomicBool::new(false)),
            view: Mutex::new(view.clone()),
            polled: Mutex::new(Instant::now()),
            finished: Mutex::new(None),
        });
        jobs.insert(id, job.clone());
        drop(jobs);
        std::thread::Builder::new()
            .name(format!("search-{id}"))
            .spawn(move || run(&job, &models, &choice, &game, budget))
            .map_err(|e| ApiError::Internal(format!("cannot start a search thread: {e}")))?;
        Ok(view)
    }

    /// The search's state now.
    pub fn get(&self, id: u64) -> Result<JobView, ApiError> {
        let job = self.find(id)?;
        *job.polled.lock().unwrap() = Instant::now();
        Ok(job.view.lock().unwrap().clone())
    }

    /// Asks the search to stop; it ends within a few milliseconds with what it has.
    pub fn stop(&self, id: u64) -> Result<JobView, ApiError> {
        let job = self.find(id)?;
        job.stop.store(true, Ordering::Relaxed);
        Ok(job.view.lock().unwrap().clone())
    }

    /// Stops every search (the server is shutting down).
    pub fn stop_all(&self) {
        for job in self.jobs.lock().unwrap_or_else(|p| p.into_inner()).values() {
            job.stop.store(true, Ordering::Relaxed);
        }
    }

    fn find(&self, id: u64) -> Result<Arc<Job>, ApiError> {
        let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        jobs.get(&id)
            .cloned()
            .ok_or_else(|| ApiError::NotFound(format!("no search {id} (finished searches are kept 10 minutes)")))
    }
}

/// The search thread: every position in turn, stopping early when asked.
fn run(job: &Job, models: &Models, choice: &ModelChoice, game: &Game, budget: RequestBudget) {
    let size = game.size();
    let status = match models.engine(choice, size) {
        Err(e) => {
            job.view.lock().unwrap().error = Some(e.to_string());
            Status::Failed
        }
        Ok(engine) => {
            job.view.lock().unwrap().engine = engine.name.clone();
            let plies = job.view.lock().unwrap().plies.clone();
            let mut rng = ChaCha8Rng::seed_from_u64(0);
            for (k, &ply) in plies.iter().enumerate() {
                if job.stop.load(Ordering::Relaxed) {
                    break;
                }
                let analysis = analyse(&game.positions[ply], ply, &engine, budget, &job.stop, &mut rng, |a| {
                    job.view.lock().unwrap().current = Some(a);
                    if job.polled.lock().unwrap().elapsed() > ABANDONED {
                        job.stop.store(true, Ordering::Relaxed);
                    }
                });
                let mut view = job.view.lock().unwrap();
                view.results[k] = Some(analysis);
                view.current = None;
            }
            if job.stop.load(Ordering::Relaxed) { Status::Stopped } else { Status::Done }
        }
    };
    job.view.lock().unwrap().status = status;
    *job.finished.lock().unwrap() = Some(Instant::now());
}

/// Searches one position within `budget` (or until `stop`), reporting snapshots.
fn analyse(
    pos: &Position,
    ply: usize,
    engine: &Engine,
    budget: RequestBudget,
    stop: &Arc<AtomicBool>,
    rng: &mut ChaCha8Rng,
    mut progress: impl FnMut(PlyAnalysis),
) -> PlyAnalysis {
    let evaluator = &*engine.evaluator;
    let size = pos.size();
    let legal = pos.legal_moves();
    let over = pos.result();
    // Ownership (and the network's margin) for white: counted on a finished board, else
    // the network's heads at this position. (The engine was picked for the game's size,
    // the only refusal `evaluate` has.)
    let mover = pos.side_to_move();
    let for_white = |x: f32| if mover == Color::White { x } else { -x };
    let (ownership, net_margin) = if over.is_some() {
        (Some(final_owners(pos, Color::White)), None)
    } else {
        let heads = engine.heads.as_ref().and_then(|h| h.evaluate(&[pos]).ok()).and_then(|mut v| v.pop());
        match heads {
            Some(h) => (h.ownership_for(Color::White, mover), h.margin.map(for_white)),
            None => (None, None),
        }
    };
    let (policy, net_value) = if over.is_some() || legal.is_empty() {
        (vec![], 0.0)
    } else {
        let e = evaluator.evaluate_batch(&[pos], &[&legal]).pop().expect("one evaluation per position");
        (e.policy, e.value)
    };
    let mut heat = vec![0.0f32; size * size];
    for (m, p) in legal.iter().zip(&policy) {
        heat[m.square().index()] += p;
    }
    let prior =
        |m: bredon_rules::Move| legal.iter().position(|&x| x == m).and_then(|i| policy.get(i)).copied().unwrap_or(0.0);
    let view = |r: &SearchResult| {
        let mut visits = r.visits.clone();
        visits.sort_by_key(|v| std::cmp::Reverse(v.1));
        // A finished game is worth its result, whatever the search's root says.
        let value = over.map_or(r.value, |res| res.score_for(mover));
        let white_value = if mover == Color::White { value } else { -value };
        // The margin: counted on a finished board, else the search's (backed up from the
        // network's margin head), or the network's own when the search has none (a result
        // proven before any visit).
        let white_margin = match over {
            Some(_) => Some(flat_margin(pos, Color::White)),
            None => r.margin.map(for_white).or(net_margin),
        };
        let (proven, proven_text) = match (over, r.proven) {
            (Some(res), _) => {
                let v = res.score_for(mover);
                (Some(outcome(v)), Some(describe_result(res)))
            }
            (None, true) => {
                let text = match outcome(white_value) {
                    "win" => "White wins (proven)".to_string(),
                    "loss" => "Black wins (proven)".to_string(),
                    _ => "Draw (proven)".to_string(),
                };
                (Some(outcome(value)), Some(text))
            }
            (None, false) => (None, None),
        };
        PlyAnalysis {
            ply,
            to_move: if mover == Color::White { "white" } else { "black" },
            value,
            white_win: (white_value + 1.0) / 2.0,
            proven,
            proven_text,
            best: r.best_move.map(|m| m.to_ptn(size)),
            pv: r.pv.iter().map(|m| m.to_ptn(size)).collect(),
            visits: r.root_visits,
            top: visits
                .iter()
                .take(8)
                .map(|&(m, v)| MoveStat { mv: m.to_ptn(size), visits: v, prior: prior(m) })
                .collect(),
            net_value,
            heat: heat.clone(),
            white_margin,
            ownership: ownership.clone(),
        }
    };
    let mut search = PlaySearch::new(pos.clone(), play_config(), 1);
    let mut report = |r: &SearchResult| progress(view(r));
    let every = Progress { every: Duration::from_millis(200), report: &mut report };
    let result = search.search(evaluator, budget.budget(), Some(stop.clone()), rng, Some(every));
    view(&result)
}

fn outcome(v: f32) -> &'static str {
    if v > 0.0 {
        "win"
    } else if v < 0.0 {
        "loss"
    } else {
        "draw"
    }
}
