//! The TEI engine: [`TeiEngine`] reads TEI command lines one at a time
//! ([`TeiEngine::handle_line`]) and writes its answers to a [`LineSink`], so stdin/stdout
//! (`bredon tei`) and a WebSocket ([`ws`], `bredon tei --listen`) drive the same engine.
//! It speaks both dialects of [`bredon_tei::Dialect`]: the match runners' and PTN
//! Ninja's; the dialect of a game is the form of its `teinewgame`.
//!
//! `go` searches on a worker thread, so that `stop`, `isready` and `quit` are answered
//! while it runs; the tree is kept between moves when the next `position` continues the
//! game; one network per board size ([`Models`], given as values: the engine knows no
//! files). Bad input of any kind gets one `info string error: …` line and the engine goes
//! on.

mod error;
mod models;
mod options;
mod report;
pub mod ws;

#[cfg(test)]
mod tests;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bredon_mcts::{
    Evaluator, PlaySearch, SearchConfig, SearchLimits, SearchResult, TimeManagement, UniformEvaluator, move_budget,
};
use bredon_rules::notation::{parse_move, parse_tps_with};
use bredon_rules::{Color, GameOptions, Move, Position};
use bredon_tei::{
    Dialect, GoParams, NewGame, OptionInfo, Response, SizeSupport, StartPosition, TeiCommand, parse_command,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use error::{ListenError, ModelsError, OptionError, PositionError};
pub use models::{Loader, Model, Models, Net};
pub use options::{EngineOption, HALF_KOMI, NODE_BYTES, OptionValues};

use report::{HashUse, ReportStyle};

/// Where the engine's lines go: one call per line, without its newline. Called from the
/// thread that handles commands and from the search thread.
pub trait LineSink: Send + Sync {
    /// Sends one line.
    fn send_line(&self, line: &str);
}

/// Lines written to a [`Write`] (stdout), each followed by a newline and flushed: a
/// runner reads line by line. A write error (the reader is gone) is dropped.
pub struct WriteSink<W>(Mutex<W>);

impl<W: Write> WriteSink<W> {
    /// Lines to `out`.
    pub fn new(out: W) -> WriteSink<W> {
        WriteSink(Mutex::new(out))
    }
}

impl<W: Write + Send> LineSink for WriteSink<W> {
    fn send_line(&self, line: &str) {
        let mut w = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(w, "{line}");
        let _ = w.flush();
    }
}

/// Lines sent through a channel (to a WebSocket's writer); dropped once the receiver is.
impl LineSink for mpsc::Sender<String> {
    fn send_line(&self, line: &str) {
        let _ = self.send(line.to_string());
    }
}

/// Lines collected in memory (tests, embedding).
impl LineSink for Mutex<Vec<String>> {
    fn send_line(&self, line: &str) {
        self.lock().unwrap_or_else(|p| p.into_inner()).push(line.to_string());
    }
}

/// Whether the engine goes on after a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    Continue,
    /// `quit`: the search is stopped; stop reading.
    Quit,
}

/// The engine's settings from its front end.
#[derive(Clone, Debug)]
pub struct EngineSettings {
    /// Visits of a `go` that gives no limit in the match runners' dialect.
    pub default_visits: u64,
    /// The board size until a `teinewgame` (`None`: the size of the only network, else 6).
    pub size: Option<usize>,
    /// Seed of the search's random numbers.
    pub seed: u64,
    /// The options' defaults (`Threads`: the cores this process may use; `Hash`: MB).
    pub options: OptionValues,
    /// The search's settings (`threads` is taken from the `Threads` option).
    pub search: SearchConfig,
    /// `id name`.
    pub name: String,
}

impl Default for EngineSettings {
    fn default() -> EngineSettings {
        EngineSettings {
            default_visits: 800,
            size: None,
            seed: 0,
            options: OptionValues {
                half_komi: 0,
                multi_pv: 1,
                threads: available_threads(),
                hash_mb: 1024,
                precision: bredon_infer::PrecisionChoice::Auto,
            },
            search: bredon_mcts::play_config(),
            name: format!("Bredon {}", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// The threads this process may use (at least 1).
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Progress reports of a running search, this often.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// A search running on its worker thread.
struct Running {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<PlaySearch>,
    /// `go infinite` (or PTN Ninja's bare `go`): it ends only with `stop`.
    until_stop: bool,
}

/// The TEI engine state machine (see the [module docs](self)).
pub struct TeiEngine {
    sink: Arc<dyn LineSink>,
    models: Models,
    settings: EngineSettings,
    options: OptionValues,
    size: usize,
    dialect: Dialect,
    /// The position of the last valid `position` command.
    position: Option<(Position, Vec<Move>)>,
    tree: Option<PlaySearch>,
    running: Option<Running>,
    searches: u64,
    /// The (board size, half komi) last warned about as not the model's komi, so that a
    /// game gets the warning once, not at every move.
    komi_warned: Option<(usize, i8)>,
    /// The sizes whose network carried from another size has been said (once each).
    carried_said: std::collections::BTreeSet<usize>,
}

impl TeiEngine {
    /// An engine playing with `models`, writing to `sink`.
    pub fn new(models: Models, sink: Arc<dyn LineSink>, settings: EngineSettings) -> TeiEngine {
        let only = {
            let sizes: Vec<usize> = models.sizes().collect();
            if sizes.len() == 1 { Some(sizes[0]) } else { None }
        };
        let size = settings.size.or(only).unwrap_or(6);
        TeiEngine {
            sink,
            models,
            options: settings.options,
            settings,
            size,
            dialect: Dialect::MatchRunner,
            position: None,
            tree: None,
            running: None,
            searches: 0,
            komi_warned: None,
            carried_said: Default::default(),
        }
    }

    /// The options' values now.
    pub fn options(&self) -> OptionValues {
        self.options
    }

    /// The dialect of the current game.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The board size of the current game.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether a search is running.
    pub fn is_searching(&self) -> bool {
        self.running.is_some()
    }

    fn say(&self, line: &str) {
        self.sink.send_line(line);
    }

    fn tell(&self, response: Response) {
        self.sink.send_line(&response.to_string());
    }

    fn error(&self, e: impl std::fmt::Display) {
        self.say(&format!("info string error: {e}"));
    }

    /// Handles one input line.
    pub fn handle_line(&mut self, line: &str) -> Flow {
        let cmd = match parse_command(line) {
            Ok(Some(cmd)) => cmd,
            Ok(None) => return Flow::Continue,
            Err(e) => {
                self.error(e);
                return Flow::Continue;
            }
        };
        match cmd {
            TeiCommand::Tei => self.handshake(),
            TeiCommand::IsReady => self.tell(Response::ReadyOk),
            TeiCommand::SetOption { name, value } => match self.options.set(&name, value.as_deref()) {
                Ok(EngineOption::HalfKomi) => self.tree = None,
                // Built now if it is new in this precision, not on the clock of the next `go`.
                Ok(EngineOption::Precision) => self.prepare_model(),
                Ok(_) => {}
                Err(e) => self.error(e),
            },
            TeiCommand::NewGame(game) => self.new_game(game),
            TeiCommand::Position { start, moves } => {
                self.interrupt();
                match self.build_position(&start, &moves) {
                    Ok(p) => self.position = Some(p),
                    Err(e) => {
                        self.position = None;
                        self.error(e);
                    }
                }
            }
            TeiCommand::Go(params) => {
                self.interrupt();
                self.go(&params);
            }
            TeiCommand::Stop => self.interrupt(),
            TeiCommand::Quit => {
                self.interrupt();
                return Flow::Quit;
            }
        }
        Flow::Continue
    }

    /// `tei`: `id` lines, the sizes and komi played, the options, `teiok`.
    fn handshake(&self) {
        let id = |field: &str, value: String| Response::Id { field: field.into(), value };
        self.tell(id("name", self.settings.name.clone()));
        self.tell(id("author", "the Bredon developers".into()));
        self.tell(Response::Sizes(self.size_support()));
        for option in EngineOption::ALL {
            self.tell(Response::Option(self.settings.options.declaration(option)));
        }
        self.tell(Response::TeiOk);
    }

    /// The sizes the networks cover (every size when there is none: the uniform search
    /// plays them all alike) and the komi values the engine accepts.
    pub fn size_support(&self) -> SizeSupport {
        let sizes = if self.models.is_empty() { bredon_tei::SIZES.collect() } else { self.models.sizes().collect() };
        SizeSupport { sizes, half_komis: HALF_KOMI.collect() }
    }

    /// The handshake's option lines, as sent.
    pub fn option_lines(&self) -> Vec<OptionInfo> {
        EngineOption::ALL.into_iter().map(|o| self.settings.options.declaration(o)).collect()
    }

    fn new_game(&mut self, game: NewGame) {
        self.interrupt();
        if let Some(s) = game.size() {
            self.size = s;
        }
        self.dialect = game.dialect();
        if let NewGame::Sized { half_komi, .. } = game {
            // PTN Ninja: "optionally the half-komi value (default zero)".
            let k = half_komi.unwrap_or(0);
            if HALF_KOMI.contains(&k) {
                self.options.half_komi = k;
            } else {
                self.error(format_args!(
                    "teinewgame: halfkomi {k} is outside {} to {}; the game keeps komi {}",
                    HALF_KOMI.start(),
                    HALF_KOMI.end(),
                    self.options.half_komi as f32 / 2.0
                ));
            }
        }
        self.position = None;
        self.tree = None;
        self.komi_warned = None;
        self.prepare_model();
    }

    /// Builds the current size's network in the current precision if this is its first
    /// use so, and says once if it failed or is carried from another size.
    fn prepare_model(&mut self) {
        let n = self.size;
        let precision = self.options.precision;
        match self.models.get(n) {
            None if self.models.is_empty() => {}
            None => {
                let have: Vec<String> = self.models.sizes().map(|n| format!("{n}x{n}")).collect();
                self.say(&format!(
                    "info string warning: no {n}x{n} model (have {}); searching with the uniform evaluator",
                    have.join(", ")
                ));
            }
            // The game's network is built now if this is its size's first game, not
            // on the clock of its first `go`.
            Some(model) => {
                let first = !model.is_loaded(precision);
                let line = match (model.net(precision), model.trained_size) {
                    (Err(e), _) if first => Some(format!(
                        "info string warning: the {n}x{n} model {} did not load ({e}); searching with the uniform evaluator",
                        model.name
                    )),
                    (Ok(_), Some(t)) if first && self.carried_said.insert(n) => Some(format!(
                        "info string note: no {n}x{n} model; {n}x{n} games are played by {}, a {t}x{t} network carried to {n}x{n}",
                        model.name
                    )),
                    _ => None,
                };
                if let Some(line) = line {
                    self.say(&line);
                }
            }
        }
    }

    /// Stops a running search now and waits for its `bestmove`. A command that changes the
    /// game while a search runs (`position`, `go`, `teinewgame`) does this too, so a runner
    /// that forgets `stop` after `go infinite` gets a best move instead of a hang; so does
    /// a closed connection.
    pub fn interrupt(&mut self) {
        if let Some(r) = &self.running {
            r.stop.store(true, Ordering::Relaxed);
        }
        self.finish();
    }

    /// The input has ended (stdin closed): a search with limits runs to its end and sends
    /// its `bestmove` (so `echo "… go nodes 100" | bredon tei` answers); one that would
    /// wait for `stop` forever is stopped.
    pub fn end_of_input(&mut self) {
        if self.running.as_ref().is_some_and(|r| r.until_stop) {
            self.interrupt();
        }
        self.finish();
    }

    /// Waits for a running search to end (it sends its own `bestmove`).
    pub fn finish(&mut self) {
        if let Some(r) = self.running.take() {
            match r.handle.join() {
                Ok(tree) => self.tree = Some(tree),
                Err(_) => {
                    self.tree = None;
                    self.say("info string error: the search thread failed");
                }
            }
        }
    }

    fn build_position(&self, start: &StartPosition, moves: &[String]) -> Result<(Position, Vec<Move>), PositionError> {
        let half_komi = self.options.half_komi;
        let mut pos = match start {
            StartPosition::StartPos => Position::with_options(GameOptions::new(self.size).with_half_komi(half_komi))
                .map_err(PositionError::StartPos)?,
            StartPosition::Tps(tps) => parse_tps_with(tps, None, half_komi)
                .map_err(|source| PositionError::Tps { tps: tps.clone(), source })?,
        };
        if pos.size() != self.size {
            return Err(PositionError::WrongSize { position: pos.size(), game: self.size });
        }
        let start_pos = pos.clone();
        let mut parsed = Vec::with_capacity(moves.len());
        for (i, text) in moves.iter().enumerate() {
            let number = i + 1;
            let mv = parse_move(text, pos.size()).map_err(|source| PositionError::MoveSyntax {
                number,
                text: text.clone(),
                source,
            })?;
            pos.play(mv).map_err(|source| PositionError::IllegalMove { number, text: text.clone(), source })?;
            parsed.push(mv);
        }
        Ok((start_pos, parsed))
    }

    /// Says once per game when the model of this size was trained for another komi: its
    /// values are then biased (the search still answers with it).
    fn warn_komi_mismatch(&mut self, half_komi: i8) {
        let Some(model) = self.models.get(self.size) else { return };
        let Some(trained) = model.net(self.options.precision).ok().and_then(|net| net.trained_half_komi) else {
            return;
        };
        if trained == half_komi || self.komi_warned == Some((self.size, half_komi)) {
            return;
        }
        let line = format!(
            "info string warning: the game's komi is {} but the {}x{} model {} was trained with komi {}; its evaluations are biased",
            half_komi as f32 / 2.0,
            self.size,
            self.size,
            model.name,
            trained as f32 / 2.0
        );
        self.komi_warned = Some((self.size, half_komi));
        self.say(&line);
    }

    /// The evaluator for the current game size.
    fn evaluator(&self) -> Arc<dyn Evaluator> {
        match self.models.get(self.size).map(|m| m.net(self.options.precision)) {
            Some(Ok(net)) => net.evaluator,
            _ => Arc::new(UniformEvaluator),
        }
    }

    /// The tree for the current position: the previous one advanced if the new position
    /// continues it, else a fresh one.
    fn tree_for(&mut self, start: &Position, moves: &[Move]) -> PlaySearch {
        let threads = self.options.threads;
        match self.tree.take() {
            Some(mut tree) => {
                tree.set_game(start, moves);
                tree.set_threads(threads);
                tree
            }
            None => PlaySearch::for_game(start, moves, self.settings.search.clone(), threads),
        }
    }

    fn go(&mut self, params: &GoParams) {
        let Some((start, moves)) = self.position.clone() else {
            self.say("info string error: go without a valid position");
            return;
        };
        let mut tree = self.tree_for(&start, &moves);
        let pos = tree.position().clone();
        if let Some(result) = pos.result() {
            self.error(format_args!("the game is over ({result})"));
            self.tree = Some(tree);
            return;
        }
        self.warn_komi_mismatch(pos.half_komi());
        if !params.ignored.is_empty() {
            self.say(&format!("info string warning: go: ignored {}", params.ignored.join(", ")));
        }
        // `Hash`: the tree may grow to its node budget, estimated as one expansion (as
        // many nodes as the root has moves) per visit of the root. A tree kept from the
        // last move that already fills it starts afresh; a search stops at the budget.
        let per_visit = pos.legal_moves().len() as u64 + 1;
        let hash_visits = (self.options.hash_nodes() / per_visit).max(2);
        if tree.root_visits() >= hash_visits {
            tree = PlaySearch::for_game(&start, &moves, self.settings.search.clone(), self.options.threads);
        }
        let began = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let until_stop = params.runs_until_stop(self.dialect);
        let mut limits =
            SearchLimits { stop: Some(stop.clone()), progress_every: Some(PROGRESS_EVERY), ..SearchLimits::default() };
        // PTN Ninja: `infinite` "causes all other go parameters to be ignored".
        if !until_stop {
            self.set_limits(&mut limits, params, &tree, began);
        }
        let capped_by_hash = limits.visits.is_none_or(|v| v > hash_visits);
        if capped_by_hash {
            limits.visits = Some(hash_visits);
        }
        let hash_use = move |r: &SearchResult| HashUse { visits: r.root_visits, capacity: hash_visits };
        let style = ReportStyle { size: self.size, dialect: self.dialect, multi_pv: self.options.multi_pv, began };
        let solved = params.solved;
        let hash_mb = self.options.hash_mb;
        let evaluator = self.evaluator();
        let sink = self.sink.clone();
        self.searches += 1;
        let mut rng = ChaCha8Rng::seed_from_u64(self.settings.seed ^ self.searches);
        let thread_stop = stop.clone();
        let handle = std::thread::spawn(move || {
            let send = |r: &SearchResult, hash: HashUse| {
                for info in style.lines(r, Some(hash)) {
                    sink.send_line(&Response::Info(info).to_string());
                }
            };
            let result = tree.search_within(&*evaluator, &limits, &mut rng, |r| send(r, hash_use(r)));
            send(&result, hash_use(&result));
            if capped_by_hash && result.root_visits >= hash_visits && !result.proven {
                sink.send_line(&format!(
                    "info string Hash full: {} visits fill {hash_mb} MB; setoption name Hash value N (MB, at most {}) searches further",
                    result.root_visits,
                    EngineOption::Hash.bounds().map_or(0, |b| *b.end())
                ));
            }
            if solved && !result.proven {
                sink.send_line("info string go solved: no proven result within the limits");
            }
            if until_stop {
                // TEI, like UCI: after `go infinite` the best move waits for `stop`.
                while !thread_stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            match result.best_move {
                Some(mv) => sink.send_line(&Response::BestMove(mv.to_ptn(style.size)).to_string()),
                None => sink.send_line("info string error: no legal move"),
            }
            tree
        });
        self.running = Some(Running { stop, handle, until_stop });
    }

    /// The limits of a `go` that is not `infinite`: nodes, the move's time, the mover's
    /// clock; none of them is the default visits in the match runners' dialect (a `go
    /// solved` alone searches until the proof or `stop`).
    fn set_limits(&self, limits: &mut SearchLimits, params: &GoParams, search: &PlaySearch, began: Instant) {
        let root_visits = search.root_visits();
        if let Some(n) = params.nodes {
            limits.visits = Some(root_visits + n.max(1));
        }
        if let Some(ms) = params.movetime {
            limits.deadline = Some(began + Duration::from_millis(ms.saturating_sub(20).max(1)));
        }
        if let Some(budget) = clock_limit(search.position(), params, self.settings.search.time_management) {
            limits.deadline = Some(limits.deadline.map_or(began + budget, |d| d.min(began + budget)));
            // Time saved on a clock is kept for later moves (not so under `movetime` alone).
            limits.stop_when_decided = self.settings.search.stop_when_decided;
        }
        if limits.visits.is_none() && limits.deadline.is_none() && !params.solved {
            limits.visits = Some(root_visits + self.settings.default_visits.max(1));
        }
    }
}

impl Drop for TeiEngine {
    /// A dropped engine stops its search (its `bestmove` still goes to the sink).
    fn drop(&mut self) {
        self.interrupt();
    }
}

/// The time for this move from the mover's clock in `params`, if it has one: the
/// search's time management, and with `movestogo` at most nine tenths of the clock's
/// share per move (plus three quarters of the increment).
fn clock_limit(pos: &Position, params: &GoParams, how: TimeManagement) -> Option<Duration> {
    let (time, inc) = match pos.side_to_move() {
        Color::White => (params.wtime?, params.winc.unwrap_or(0)),
        Color::Black => (params.btime?, params.binc.unwrap_or(0)),
    };
    let budget = move_budget(pos, time, inc, how);
    Some(match params.movestogo {
        Some(m) => budget.min(Duration::from_millis((time / m.max(1) * 9 / 10 + inc * 3 / 4).max(1))),
        None => budget,
    })
}
