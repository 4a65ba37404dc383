//! `bredon tei`: the engine side of the Tak Engine Interface.
//!
//! The main thread reads commands from stdin; a `go` starts the search on a worker thread
//! so that `stop`, `isready` and `quit` are answered while it runs. The search tree is
//! kept between moves of a game when the next `position` extends the previous one.

use anyhow::Result;
use bredon_mcts::{
    Evaluator, ParallelSearch, SearchConfig, SearchLimits, SearchResult, TimeManagement, UniformEvaluator, move_budget,
};
use bredon_rules::notation::{parse_move, parse_tps_with};
use bredon_rules::{Color, GameOptions, Move, Position};
use bredon_tei::{GoParams, Info, OptionInfo, Response, StartPosition, TeiCommand, parse_command, value_to_cp};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::model_arg::{self, LoadedModel, ModelSet};

/// Arguments of `bredon tei`.
#[derive(clap::Args, Debug)]
pub struct TeiArgs {
    /// Model to play with: a file written by `bredon export` or a checkpoint directory.
    /// Repeat it to give one model per board size; `teinewgame N` picks the NxN one.
    /// Without it the engine plays every size that has an `NxN.bredon` in
    /// `$BREDON_MODEL_DIR` if set, else in `checkpoints/shipped` (the working directory's,
    /// else the one of the repository holding the executable).
    #[arg(long, conflicts_with = "uniform")]
    pub model: Vec<PathBuf>,
    /// Search with the uniform evaluator (no network, a weak baseline) on every size.
    #[arg(long)]
    pub uniform: bool,
    /// Visits per move for a `go` that gives no limit.
    #[arg(long, default_value_t = 800)]
    pub visits: u64,
    /// Board size until a `teinewgame` sets one (default: the size of the only model, else 6).
    #[arg(long)]
    pub size: Option<usize>,
    /// Seed of the search's random numbers.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Search trees side by side per move (root parallelism; `[search] threads`).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

/// Runs the TEI loop on stdin/stdout until `quit` or end of input.
pub fn run(args: TeiArgs) -> Result<()> {
    let models = if args.uniform {
        ModelSet::default()
    } else if args.model.is_empty() {
        ModelSet::find(&model_arg::default_model_dirs())?
    } else {
        ModelSet::load(&args.model)?
    };
    // On stderr: stdout is the protocol.
    for (size, path) in models.files() {
        eprintln!("bredon tei: {size}x{size} games with {}", path.display());
    }
    if models.is_empty() {
        eprintln!("bredon tei: no model; every size is searched with the uniform evaluator");
    }
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let mut engine = Engine::new(models, out, args.visits, args.size, args.seed);
    engine.set_search_threads(args.threads);
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line?;
        if !engine.handle_line(&line) {
            return Ok(());
        }
    }
    engine.finish();
    Ok(())
}

/// Halves of a point of komi the engine accepts through `setoption name HalfKomi`.
const HALF_KOMI_RANGE: std::ops::RangeInclusive<i8> = -10..=10;

/// The search tree of the current game and what it was built from.
struct Tree {
    start: Position,
    moves: Vec<Move>,
    search: ParallelSearch,
}

/// A search running on its worker thread.
struct Running {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Tree>,
}

/// The TEI engine state machine, generic over its output (stdout, or a buffer in tests).
pub struct Engine<W: Write + Send + 'static> {
    out: Arc<Mutex<W>>,
    models: ModelSet,
    default_visits: u64,
    size: usize,
    half_komi: i8,
    config: SearchConfig,
    /// The position of the last valid `position` command.
    position: Option<(Position, Vec<Move>)>,
    tree: Option<Tree>,
    running: Option<Running>,
    searches: u64,
    seed: u64,
    /// The (board size, half komi) last warned about as not the model's komi, so that a
    /// game gets the warning once, not at every move.
    komi_warned: Option<(usize, i8)>,
}

impl<W: Write + Send + 'static> Engine<W> {
    /// An engine writing to `out`. The board size until a `teinewgame`: `size`, else the
    /// size of the only model, else 6.
    pub fn new(models: ModelSet, out: Arc<Mutex<W>>, default_visits: u64, size: Option<usize>, seed: u64) -> Self {
        let only = {
            let sizes: Vec<usize> = models.sizes().collect();
            if sizes.len() == 1 { Some(sizes[0]) } else { None }
        };
        let size = size.or(only).unwrap_or(6);
        Engine {
            out,
            models,
            default_visits: default_visits.max(1),
            size,
            half_komi: 0,
            config: SearchConfig { root_noise: false, ..SearchConfig::default() },
            position: None,
            tree: None,
            running: None,
            searches: 0,
            seed,
            komi_warned: None,
        }
    }

    /// Search trees side by side for each move from now on (at least 1).
    pub fn set_search_threads(&mut self, threads: usize) {
        self.config.threads = threads.max(1);
        self.tree = None;
    }

    fn say(&self, line: &str) {
        say(&self.out, line);
    }

    fn tell(&self, response: Response) {
        say(&self.out, &response.to_string());
    }

    /// Handles one input line; returns `false` after `quit`.
    pub fn handle_line(&mut self, line: &str) -> bool {
        let cmd = match parse_command(line) {
            Ok(Some(cmd)) => cmd,
            Ok(None) => return true,
            Err(e) => {
                self.say(&format!("info string error: {e}"));
                return true;
            }
        };
        match cmd {
            TeiCommand::Tei => {
                let id = |field: &str, value: String| Response::Id { field: field.into(), value };
                self.tell(id("name", format!("Bredon {}", env!("CARGO_PKG_VERSION"))));
                self.tell(id("author", "the Bredon developers".into()));
                self.tell(Response::Option(OptionInfo {
                    name: "HalfKomi".into(),
                    kind: "combo".into(),
                    default: Some("0".into()),
                    vars: HALF_KOMI_RANGE.map(|k| k.to_string()).collect(),
                    ..OptionInfo::default()
                }));
                self.tell(Response::TeiOk);
            }
            TeiCommand::IsReady => self.tell(Response::ReadyOk),
            TeiCommand::SetOption { name, value } => self.set_option(&name, value.as_deref()),
            TeiCommand::NewGame(size) => {
                self.interrupt();
                if let Some(s) = size {
                    self.size = s;
                }
                self.position = None;
                self.tree = None;
                self.komi_warned = None;
                if !self.models.is_empty() && self.models.get(self.size).is_none() {
                    let have: Vec<String> = self.models.sizes().map(|n| format!("{n}x{n}")).collect();
                    self.say(&format!(
                        "info string warning: no {0}x{0} model (have {1}); searching with the uniform evaluator",
                        self.size,
                        have.join(", ")
                    ));
                }
            }
            TeiCommand::Position { start, moves } => {
                self.interrupt();
                match self.build_position(&start, &moves) {
                    Ok(p) => self.position = Some(p),
                    Err(e) => {
                        self.position = None;
                        self.say(&format!("info string error: {e}"));
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
                return false;
            }
        }
        true
    }

    /// Stops a running search now and waits for its `bestmove`. A command that changes the
    /// game while a search runs (`position`, `go`, `teinewgame`) does this too, so a runner
    /// that forgets `stop` after `go infinite` gets a best move instead of a hang.
    pub fn interrupt(&mut self) {
        if let Some(r) = &self.running {
            r.stop.store(true, Ordering::Relaxed);
        }
        self.finish();
    }

    /// Waits for a running search to end (it prints its own `bestmove`).
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

    fn set_option(&mut self, name: &str, value: Option<&str>) {
        match name.to_ascii_lowercase().as_str() {
            "halfkomi" => match value.and_then(|v| v.trim().parse::<i8>().ok()) {
                Some(k) if HALF_KOMI_RANGE.contains(&k) => {
                    self.half_komi = k;
                    self.tree = None;
                }
                _ => self.say(&format!(
                    "info string error: HalfKomi needs a value from {} to {}, got {:?}",
                    HALF_KOMI_RANGE.start(),
                    HALF_KOMI_RANGE.end(),
                    value.unwrap_or("")
                )),
            },
            "hash" => {} // The tree's memory follows the search; nothing to set.
            _ => self.say(&format!("info string error: unknown option {name:?}")),
        }
    }

    fn build_position(&self, start: &StartPosition, moves: &[String]) -> Result<(Position, Vec<Move>), String> {
        let mut pos = match start {
            StartPosition::StartPos => {
                Position::with_options(GameOptions::new(self.size).with_half_komi(self.half_komi))
                    .map_err(|e| format!("position startpos: {e}"))?
            }
            StartPosition::Tps(tps) => {
                parse_tps_with(tps, None, self.half_komi).map_err(|e| format!("position tps {tps:?}: {e}"))?
            }
        };
        if pos.size() != self.size {
            return Err(format!(
                "position is {0}x{0} but the game is {1}x{1} (send `teinewgame {0}`)",
                pos.size(),
                self.size
            ));
        }
        let start_pos = pos.clone();
        let mut parsed = Vec::with_capacity(moves.len());
        for (i, text) in moves.iter().enumerate() {
            let mv = parse_move(text, pos.size()).map_err(|e| format!("position: move {} {text:?}: {e}", i + 1))?;
            pos.play(mv).map_err(|e| format!("position: move {} {text:?} is illegal: {e}", i + 1))?;
            parsed.push(mv);
        }
        Ok((start_pos, parsed))
    }

    /// Says once per game when the model of this size was trained for another komi: its
    /// values are then biased (the search still answers with it).
    fn warn_komi_mismatch(&mut self, half_komi: i8) {
        let Some((path, LoadedModel { meta: Some(meta), .. })) = self.models.get(self.size) else { return };
        if meta.half_komi == half_komi || self.komi_warned == Some((self.size, half_komi)) {
            return;
        }
        let line = format!(
            "info string warning: the game's komi is {} but the {}x{} model {} was trained with komi {}; its evaluations are biased",
            half_komi as f32 / 2.0,
            self.size,
            self.size,
            path.display(),
            meta.half_komi as f32 / 2.0
        );
        self.komi_warned = Some((self.size, half_komi));
        self.say(&line);
    }

    /// The evaluator for the current game size.
    fn evaluator(&self) -> Arc<dyn Evaluator> {
        match self.models.get(self.size) {
            Some((_, model)) => model.evaluator.clone(),
            None => Arc::new(UniformEvaluator),
        }
    }

    /// The tree for the current position: the previous one advanced if the new position
    /// continues it, else a fresh one.
    fn tree_for(&mut self, start: &Position, moves: &[Move]) -> Tree {
        if let Some(mut tree) = self.tree.take()
            && tree.start == *start
            && moves.starts_with(&tree.moves)
        {
            for &mv in &moves[tree.moves.len()..] {
                tree.search.advance(mv);
            }
            tree.moves = moves.to_vec();
            return tree;
        }
        let mut pos = start.clone();
        for &mv in moves {
            pos.make(mv);
        }
        Tree {
            start: start.clone(),
            moves: moves.to_vec(),
            search: ParallelSearch::new(pos, self.config.clone(), self.config.threads),
        }
    }

    fn go(&mut self, params: &GoParams) {
        let Some((start, moves)) = self.position.clone() else {
            self.say("info string error: go without a valid position");
            return;
        };
        let mut tree = self.tree_for(&start, &moves);
        let pos = tree.search.position().clone();
        if let Some(result) = pos.result() {
            self.say(&format!("info string error: the game is over ({result})"));
            self.tree = Some(tree);
            return;
        }
        self.warn_komi_mismatch(pos.half_komi());
        let began = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let root_visits = tree.search.root_visits();
        let mut limits = SearchLimits {
            stop: Some(stop.clone()),
            progress_every: Some(Duration::from_millis(500)),
            ..SearchLimits::default()
        };
        if let Some(n) = params.nodes {
            limits.visits = Some(root_visits + n.max(1));
        }
        if let Some(ms) = params.movetime {
            limits.deadline = Some(began + Duration::from_millis(ms.saturating_sub(20).max(1)));
        }
        if !params.ignored.is_empty() {
            self.say(&format!("info string warning: go: ignored {}", params.ignored.join(", ")));
        }
        if let Some(budget) = clock_limit(&pos, params, self.config.time_management) {
            limits.deadline = Some(limits.deadline.map_or(began + budget, |d| d.min(began + budget)));
            // Time saved on a clock is kept for later moves (not so under `movetime` alone).
            limits.stop_when_decided = self.config.stop_when_decided;
        }
        let no_limit = limits.visits.is_none() && limits.deadline.is_none();
        if no_limit && !params.infinite {
            limits.visits = Some(root_visits + self.default_visits);
        }
        let infinite = params.infinite;
        let evaluator = self.evaluator();
        let out = self.out.clone();
        let size = self.size;
        self.searches += 1;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ self.searches);
        let thread_stop = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut result = tree.search.run_with(&*evaluator, &limits, &mut rng, |r| {
                say(&out, &info_line(r, size, began));
            });
            if result.best_move.is_none() {
                // Stopped before the root was expanded: a couple of visits give a move.
                let limits = SearchLimits {
                    visits: Some(tree.search.root_visits() + 2 * tree.search.threads() as u64),
                    ..SearchLimits::default()
                };
                result = tree.search.run_with(&*evaluator, &limits, &mut rng, |_| {});
            }
            say(&out, &info_line(&result, size, began));
            if infinite {
                // TEI, like UCI: after `go infinite` the best move waits for `stop`.
                while !thread_stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            match result.best_move {
                Some(mv) => say(&out, &Response::BestMove(mv.to_ptn(size)).to_string()),
                None => say(&out, "info string error: no legal move"),
            }
            tree
        });
        self.running = Some(Running { stop, handle });
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

/// Writes one line and flushes it (a match runner reads line by line).
fn say<W: Write>(out: &Mutex<W>, line: &str) {
    let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
    // A closed stdout means the runner is gone; nothing useful to do with the error.
    let _ = writeln!(w, "{line}");
    let _ = w.flush();
}

/// The `info` line for a search result.
fn info_line(r: &SearchResult, size: usize, began: Instant) -> String {
    let ms = began.elapsed().as_millis().max(1) as u64;
    let info = Info {
        depth: Some(r.pv.len().max(1) as u64),
        nodes: Some(r.playouts),
        score_cp: Some(value_to_cp(r.value, r.proven, r.pv.len())),
        time_ms: Some(ms),
        nps: Some(r.playouts * 1000 / ms),
        pv: Some(r.pv.iter().map(|m| m.to_ptn(size)).collect()),
    };
    Response::Info(info).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn engine() -> (Engine<Vec<u8>>, Arc<Mutex<Vec<u8>>>) {
        let out = Arc::new(Mutex::new(Vec::new()));
        (Engine::new(ModelSet::default(), out.clone(), 50, None, 7), out)
    }

    fn take(out: &Arc<Mutex<Vec<u8>>>) -> Vec<String> {
        let mut v = out.lock().unwrap();
        let s = String::from_utf8(std::mem::take(&mut *v)).unwrap();
        s.lines().map(str::to_string).collect()
    }

    fn bestmove(lines: &[String]) -> String {
        let last = lines.iter().rev().find(|l| l.starts_with("bestmove ")).expect("no bestmove");
        last["bestmove ".len()..].to_string()
    }

    #[test]
    fn handshake_lists_halfkomi_and_ends_with_teiok() {
        let (mut e, out) = engine();
        assert!(e.handle_line("tei"));
        let lines = take(&out);
        assert!(lines[0].starts_with("id name Bredon"));
        assert!(lines.iter().any(|l| l.starts_with("option name HalfKomi type combo") && l.contains("var 4")));
        assert_eq!(lines.last().unwrap(), "teiok");
        e.handle_line("isready");
        assert_eq!(take(&out), vec!["readyok"]);
    }

    #[test]
    fn plays_the_road_in_one_and_reports_a_proven_score() {
        let (mut e, out) = engine();
        e.handle_line("teinewgame 4");
        e.handle_line("position tps x4/x4/2,2,2,x/1,1,1,x 1 4");
        e.handle_line("go nodes 200");
        e.finish();
        let lines = take(&out);
        assert!(lines.iter().any(|l| l.starts_with("info depth") && l.contains("score cp 9999")), "{lines:?}");
        assert_eq!(bestmove(&lines), "d1");
    }

    #[test]
    fn bad_input_gets_an_info_string_and_the_engine_goes_on() {
        let (mut e, out) = engine();
        e.handle_line("teinewgame 5");
        for line in [
            "flurb",
            "position startpos moves a1 a1",
            "position startpos moves zz9",
            "position tps x5/x5 1 1",
            "position tps x3/x3/x3 1 1",
            "setoption name HalfKomi value 99",
            "setoption name Colour value red",
            "go nodes x",
        ] {
            assert!(e.handle_line(line));
            let lines = take(&out);
            assert_eq!(lines.len(), 1, "{line}: {lines:?}");
            assert!(lines[0].starts_with("info string error"), "{line}: {lines:?}");
        }
        // After an invalid position, `go` refuses instead of playing from a stale one.
        e.handle_line("go nodes 10");
        e.finish();
        assert!(take(&out)[0].contains("go without a valid position"));
        e.handle_line("position startpos moves a1 e5");
        e.handle_line("go nodes 20");
        e.finish();
        let mv = bestmove(&take(&out));
        assert!(parse_move(&mv, 5).is_ok());
    }

    #[test]
    fn infinite_search_waits_for_stop() {
        let (mut e, out) = engine();
        e.handle_line("teinewgame 5");
        e.handle_line("position startpos");
        e.handle_line("go infinite");
        std::thread::sleep(Duration::from_millis(100));
        e.handle_line("isready");
        assert!(!take(&out).iter().any(|l| l.starts_with("bestmove")));
        e.handle_line("stop");
        let lines = take(&out);
        let mv = bestmove(&lines);
        assert!(parse_move(&mv, 5).is_ok());
        assert!(e.running.is_none());
    }

    #[test]
    fn a_new_position_during_an_infinite_search_stops_it() {
        let (mut e, out) = engine();
        e.handle_line("teinewgame 5");
        e.handle_line("position startpos");
        e.handle_line("go infinite");
        e.handle_line("position startpos moves a1");
        assert!(e.running.is_none());
        assert!(parse_move(&bestmove(&take(&out)), 5).is_ok());
    }

    #[test]
    fn tree_is_reused_when_the_game_continues() {
        let (mut e, out) = engine();
        e.handle_line("teinewgame 4");
        e.handle_line("position startpos");
        e.handle_line("go nodes 300");
        e.finish();
        let first = bestmove(&take(&out));
        e.handle_line(&format!("position startpos moves {first}"));
        let (start, moves) = e.position.clone().unwrap();
        let tree = e.tree_for(&start, &moves);
        assert!(tree.search.root_visits() > 1, "the subtree of the played move was dropped");
        assert_eq!(tree.search.position().ply(), 1);
    }

    #[test]
    fn two_search_threads_share_the_budget_and_find_the_road() {
        let (mut e, out) = engine();
        e.set_search_threads(2);
        e.handle_line("teinewgame 4");
        e.handle_line("position startpos moves a1 d4");
        e.handle_line("go nodes 400");
        e.finish();
        let lines = take(&out);
        let last_info = lines.iter().rev().find(|l| l.starts_with("info depth")).unwrap();
        assert!(last_info.contains(" nodes 400 "), "{last_info}");
        assert!(parse_move(&bestmove(&lines), 4).is_ok());
        let (start, moves) = e.position.clone().unwrap();
        assert_eq!(e.tree_for(&start, &moves).search.threads(), 2);
        // Tactics still decide: the road in one.
        e.handle_line("position tps x4/x4/2,2,2,x/1,1,1,x 1 4");
        e.handle_line("go nodes 200");
        e.finish();
        assert_eq!(bestmove(&take(&out)), "d1");
    }

    #[test]
    fn a_go_with_parameters_the_engine_does_not_use_still_answers() {
        let (mut e, out) = engine();
        e.handle_line("teinewgame 4");
        e.handle_line("position startpos moves a1 d4");
        e.handle_line("go depth 7 ponder nodes 20");
        e.finish();
        let lines = take(&out);
        assert!(lines.iter().any(|l| l == "info string warning: go: ignored depth 7, ponder"), "{lines:?}");
        parse_move(&bestmove(&lines), 4).unwrap();
    }

    #[test]
    fn the_clock_limit_is_the_movers_and_movestogo_shortens_it() {
        let pos = Position::new(5).unwrap();
        let go = |line: &str| match parse_command(line).unwrap() {
            Some(TeiCommand::Go(p)) => p,
            other => panic!("{other:?}"),
        };
        let fixed = TimeManagement::Fixed;
        assert_eq!(clock_limit(&pos, &go("go movetime 100"), fixed), None);
        assert_eq!(clock_limit(&pos, &go("go btime 10000"), fixed), None, "white to move, only black's clock");
        let plain = clock_limit(&pos, &go("go wtime 10000 btime 10 winc 100"), fixed).unwrap();
        assert_eq!(plain, move_budget(&pos, 10_000, 100, fixed));
        // 40 moves to go: a fortieth of the clock, less than the usual twentieth.
        let forty = clock_limit(&pos, &go("go wtime 10000 btime 10 winc 100 movestogo 40"), fixed).unwrap();
        assert_eq!(forty, Duration::from_millis(225 + 75));
        assert!(forty < plain);
        // Many moves to go never lengthen the usual budget.
        assert_eq!(clock_limit(&pos, &go("go wtime 10000 winc 100 movestogo 2"), fixed).unwrap(), plain);
    }

    #[test]
    fn a_komi_other_than_the_models_is_warned_once_per_game_and_the_search_answers() {
        let models = ModelSet::load(&[shipped("4x4.bredon")]).unwrap();
        let trained = models.get(4).unwrap().1.meta.as_ref().unwrap().half_komi;
        let out = Arc::new(Mutex::new(Vec::new()));
        let mut e = Engine::new(models, out.clone(), 30, None, 7);
        let warnings = |lines: &[String]| lines.iter().filter(|l| l.contains("warning") && l.contains("komi")).count();
        // The model's own komi: no warning.
        e.handle_line("teinewgame 4");
        e.handle_line(&format!("setoption name HalfKomi value {trained}"));
        e.handle_line("position startpos moves a1 d4");
        e.handle_line("go nodes 20");
        e.finish();
        let lines = take(&out);
        assert_eq!(warnings(&lines), 0, "{lines:?}");
        assert!(lines.iter().any(|l| l.starts_with("bestmove ")));
        // Another komi: one warning naming both komis, a best move all the same, and no
        // second warning at the next move of the game.
        let other = if trained == 4 { 0 } else { 4 };
        e.handle_line("teinewgame 4");
        e.handle_line(&format!("setoption name HalfKomi value {other}"));
        e.handle_line("position startpos moves a1 d4");
        e.handle_line("go nodes 20");
        e.finish();
        let lines = take(&out);
        assert_eq!(warnings(&lines), 1, "{lines:?}");
        let w = lines.iter().find(|l| l.contains("komi")).unwrap();
        assert!(w.starts_with("info string warning:"), "{w}");
        assert!(
            w.contains(&format!("komi is {}", other as f32 / 2.0))
                && w.contains(&format!("komi {}", trained as f32 / 2.0)),
            "{w}"
        );
        assert!(lines.iter().any(|l| l.starts_with("bestmove ")));
        e.handle_line("position startpos moves a1 d4 b2");
        e.handle_line("go nodes 20");
        e.finish();
        let lines = take(&out);
        assert_eq!(warnings(&lines), 0, "{lines:?}");
        assert!(lines.iter().any(|l| l.starts_with("bestmove ")));
        // A new game warns again.
        e.handle_line("teinewgame 4");
        e.handle_line("position startpos moves a1 d4");
        e.handle_line("go nodes 20");
        e.finish();
        assert_eq!(warnings(&take(&out)), 1);
    }

    #[test]
    fn the_shipped_6x6_model_plays_komi_2_without_a_warning() {
        let models = ModelSet::load(&[shipped("6x6.bredon")]).unwrap();
        assert_eq!(models.get(6).unwrap().1.meta.as_ref().unwrap().half_komi, 4, "6x6 is trained with komi 2");
        let out = Arc::new(Mutex::new(Vec::new()));
        let mut e = Engine::new(models, out.clone(), 30, None, 7);
        e.handle_line("teinewgame 6");
        e.handle_line("setoption name HalfKomi value 4");
        e.handle_line("position startpos moves a1 f6");
        e.handle_line("go nodes 30");
        e.finish();
        let lines = take(&out);
        assert!(!lines.iter().any(|l| l.contains("warning") || l.contains("error")), "{lines:?}");
        parse_move(&bestmove(&lines), 6).unwrap();
    }

    #[test]
    fn komi_reaches_the_position() {
        let (mut e, _out) = engine();
        e.handle_line("teinewgame 6");
        e.handle_line("setoption name HalfKomi value 4");
        e.handle_line("position startpos moves a1");
        assert_eq!(e.position.as_ref().unwrap().0.half_komi(), 4);
    }

    fn shipped(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped").join(name)
    }

    #[test]
    fn teinewgame_picks_the_model_for_its_size() {
        let models = ModelSet::load(&[shipped("5x5.bredon"), shipped("4x4.bredon")]).unwrap();
        assert_eq!(models.sizes().collect::<Vec<_>>(), [4, 5]);
        let net4 = models.get(4).unwrap().1.evaluator.clone();
        let net5 = models.get(5).unwrap().1.evaluator.clone();
        let out = Arc::new(Mutex::new(Vec::new()));
        let mut e = Engine::new(models, out.clone(), 50, None, 7);
        assert_eq!(e.size, 6, "two models and no --size: the TEI default");
        for (size, net) in [(4, &net4), (5, &net5), (4, &net4)] {
            e.handle_line(&format!("teinewgame {size}"));
            assert!(Arc::ptr_eq(&e.evaluator(), net), "{size}x{size}");
            e.handle_line("position startpos moves a1 b2");
            e.handle_line("go nodes 30");
            e.finish();
            let lines = take(&out);
            assert!(!lines.iter().any(|l| l.contains("warning") || l.contains("error")), "{lines:?}");
            let mv = bestmove(&lines);
            parse_move(&mv, size).unwrap_or_else(|err| panic!("{mv}: {err}"));
        }
        e.handle_line("teinewgame 6");
        assert!(!Arc::ptr_eq(&e.evaluator(), &net4) && !Arc::ptr_eq(&e.evaluator(), &net5));
        let lines = take(&out);
        assert!(lines.iter().any(|l| l.starts_with("info string warning: no 6x6 model (have 4x4, 5x5)")), "{lines:?}");
    }

    #[test]
    fn one_model_sets_the_size_and_two_of_one_size_are_refused() {
        let one = ModelSet::load(&[shipped("4x4.bredon")]).unwrap();
        let e = Engine::new(one, Arc::new(Mutex::new(Vec::new())), 50, None, 7);
        assert_eq!(e.size, 4);
        let err = ModelSet::load(&[shipped("4x4.bredon"), shipped("4x4-v1.bredon")]).err().expect("two 4x4 models");
        assert!(err.to_string().contains("two 4x4 models"), "{err}");
    }

    #[test]
    fn models_are_found_by_file_name_in_the_first_directory_that_has_them() {
        let first = tempfile::tempdir().unwrap();
        let second = tempfile::tempdir().unwrap();
        std::fs::copy(shipped("4x4-v1.bredon"), first.path().join("4x4.bredon")).unwrap();
        std::fs::copy(shipped("4x4.bredon"), second.path().join("4x4.bredon")).unwrap();
        std::fs::copy(shipped("5x5.bredon"), second.path().join("5x5.bredon")).unwrap();
        std::fs::write(second.path().join("6x6.bredon"), b"not a model").unwrap();
        let dirs = [first.path().to_path_buf(), second.path().to_path_buf()];
        let err = ModelSet::find(&dirs).err().expect("a damaged 6x6.bredon is an error, not a silent uniform engine");
        assert!(format!("{err:#}").contains("6x6.bredon"), "{err:#}");
        std::fs::remove_file(second.path().join("6x6.bredon")).unwrap();
        let set = ModelSet::find(&dirs).unwrap();
        assert_eq!(set.sizes().collect::<Vec<_>>(), [4, 5]);
        assert_eq!(set.get(4).unwrap().0, first.path().join("4x4.bredon"));
        assert_eq!(set.get(5).unwrap().0, second.path().join("5x5.bredon"));
        assert!(ModelSet::find(&[first.path().join("missing")]).unwrap().is_empty());
    }
}
