//! `bredon tei`: the TEI engine of `bredon_engine::tei` on stdin/stdout, or with
//! `--listen` over WebSocket (one engine per connection). This module is the glue: the
//! arguments, the networks loaded from files, the transport.

use anyhow::{Context, Result, bail};
use bredon_engine::tei::ws::{WsEnd, WsEvent, WsListener};
use bredon_engine::tei::{
    EngineSettings, Flow, Loader, Model, Models, Net, OptionValues, TeiEngine, WriteSink, available_threads,
};
use std::io::BufRead;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use crate::model_arg::{self, Lanes, ModelFiles};
use bredon_infer::{Compute, InferenceKind, PrecisionChoice};
use bredon_mcts::SearchConfig;

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
    /// Visits per move for a `go` that gives no limit (match runners' dialect; in PTN
    /// Ninja's a bare `go` searches until `stop`).
    #[arg(long, default_value_t = 800)]
    pub visits: u64,
    /// Board size until a `teinewgame` sets one (default: the size of the only model, else 6).
    #[arg(long)]
    pub size: Option<usize>,
    /// Seed of the search's random numbers.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Threads that search the one tree of a move, each on its own core (one thread uses
    /// one core): the `Threads` option's default (default: the cores this process may use).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub threads: Option<u64>,
    /// Memory for the search tree in MB: the `Hash` option's default.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub hash: u64,
    /// Memory in MB for the evaluation cache beside the tree: the network's answers by
    /// position, so that a transposition (the same position by another move order, in
    /// this search or a later move's) costs no forward pass. 0 turns it off.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(0..=65_536))]
    pub eval_cache: u64,
    /// Serve the engine over WebSocket on ADDR:PORT (or PORT on the loopback) instead of
    /// stdin/stdout, one engine per connection: PTN Ninja adds it as a custom TEI engine
    /// at that address (its default port is 7731). An address other than the loopback
    /// opens the engine to the network and gets a warning.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Share of each move's budget for the exact threat-space solver (forced wins by road
    /// or on the flat count in 3, 5, 7, … plies; moves the opponent punishes that way are
    /// avoided); 0 turns it off.
    #[arg(long, default_value_t = bredon_mcts::PLAY_SOLVER_SHARE, value_parser = share)]
    pub solver_share: f32,
    /// Weight of the score utility (KataGo's): the expected final flat margin, komi
    /// included, added to each move's value in the search (docs/search.md); 0 turns it off.
    #[arg(long, default_value_t = 0.0, value_parser = weight)]
    pub score_utility: f32,
    /// How a game clock (`go wtime … btime …`) is spent: `fixed` (a twentieth of the time
    /// left per move, plus most of the increment) or `reserves` (the time left divided by
    /// the moves the mover is still expected to play, from its pieces in hand: more time
    /// per move late in the game, when the flat race is decided).
    #[arg(long, default_value = "fixed", value_name = "fixed|reserves")]
    pub time_management: bredon_mcts::TimeManagement,
    /// On a game clock, stop a move's search once its move can no longer change (its
    /// lead in visits is more than the time left could overturn) and keep the time saved
    /// for later moves: `on` (the default) or `off`.
    #[arg(long, default_value = "on", value_name = "on|off", value_parser = on_off, action = clap::ArgAction::Set)]
    pub stop_when_decided: bool,
}

/// `on` or `off`.
fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{s:?} is not on or off")),
    }
}

/// A share in [0, 1].
fn share(s: &str) -> Result<f32, String> {
    number_in(s, 0.0..=1.0, "a share between 0 and 1")
}

/// A score-utility weight in [0, 2].
fn weight(s: &str) -> Result<f32, String> {
    number_in(s, 0.0..=2.0, "a weight between 0 and 2")
}

/// A number in `range`, or an error that names `s` and what was expected.
fn number_in(s: &str, range: std::ops::RangeInclusive<f32>, expected: &str) -> Result<f32, String> {
    match s.parse::<f32>() {
        Ok(x) if range.contains(&x) => Ok(x),
        _ => Err(format!("{s:?} is not {expected}")),
    }
}

/// Runs the engine until `quit` or the end of stdin, or serves it over WebSocket.
pub fn run(args: TeiArgs, compute: &Compute) -> Result<()> {
    let threads = args.threads.map_or_else(available_threads, |t| t as usize);
    // A copy of the network per search thread, each pass on one core: `Threads` is the
    // cores the engine uses (one thread, one core), whether given here or by `setoption`.
    // A `setoption name Threads` above this shares the copies.
    let lanes = Lanes::Cores(threads);
    let files = if args.uniform {
        ModelFiles::default()
    } else if args.model.is_empty() {
        ModelFiles::find(&model_arg::default_model_dirs())?
    } else {
        ModelFiles::read(&args.model)?
    };
    let models = engine_models(&files, lanes, compute, (args.eval_cache as usize) << 20)?;
    // On stderr: stdout is the protocol.
    for size in models.sizes() {
        let model = models.get(size).expect("a listed size");
        let carried = model.trained_size.map(|t| format!(" (a {t}x{t} network carried to {size}x{size})"));
        eprintln!("bredon tei: {size}x{size} games with {}{}", model.name, carried.unwrap_or_default());
    }
    if models.is_empty() {
        eprintln!("bredon tei: no model; every size is searched with the uniform evaluator");
    } else {
        eprintln!("bredon tei: each network loads at its size's first game");
    }
    let defaults = EngineSettings::default();
    let settings = EngineSettings {
        default_visits: args.visits,
        size: args.size,
        seed: args.seed,
        options: OptionValues { threads, hash_mb: args.hash, precision: precision_of(compute), ..defaults.options },
        search: SearchConfig {
            solver_share: args.solver_share,
            score_utility: args.score_utility,
            time_management: args.time_management,
            stop_when_decided: args.stop_when_decided,
            ..defaults.search
        },
        ..defaults
    };
    if let Some(addr) = &args.listen {
        return listen(addr, models, settings);
    }
    let mut engine = TeiEngine::new(models, Arc::new(WriteSink::new(std::io::stdout())), settings);
    for line in std::io::stdin().lock().lines() {
        if engine.handle_line(&line?) == Flow::Quit {
            return Ok(());
        }
    }
    engine.end_of_input();
    Ok(())
}

/// The engine's networks: for every size TEI carries, the model of [`ModelFiles::for_size`]
/// (its own, else the nearest size's that plays every size), built at the size's first
/// game, `lanes` copies, behind an evaluation cache of `cache_bytes` (none at 0).
fn engine_models(files: &ModelFiles, lanes: Lanes, compute: &Compute, cache_bytes: usize) -> Result<Models> {
    let mut models = Models::none();
    if files.is_empty() {
        return Ok(models);
    }
    for size in bredon_tei::SIZES {
        let Some((path, meta)) = files.for_size(size) else { continue };
        let (name, trained, half_komi) = (path.display().to_string(), meta.size, meta.half_komi);
        let (path, compute) = (path.clone(), compute.clone());
        let load: Arc<Loader> = Arc::new(move |precision| {
            // The `Precision` option picks the fast path's arithmetic; burn's and the GPU's
            // paths have none to pick.
            let inference = compute.inference.with_precision(precision).unwrap_or(compute.inference);
            let compute = Compute { inference, ..compute.clone() };
            let (net, _) = model_arg::load_for_size(&path, size, lanes, &compute).map_err(|e| format!("{e:#}"))?;
            let evaluator = model_arg::cached(Arc::new(net), cache_bytes);
            Ok(Net { evaluator, trained_half_komi: Some(half_komi) })
        });
        let mut model = Model::lazy(name, load);
        if trained != size {
            model = model.trained_on(trained);
        }
        models.insert(size, model)?;
    }
    Ok(models)
}

/// The `Precision` option's default: the fast path's precision `--precision` chose
/// (`auto` when the path has none).
fn precision_of(compute: &Compute) -> PrecisionChoice {
    match compute.inference {
        InferenceKind::Auto(p) | InferenceKind::Fast(p) => p,
        InferenceKind::Burn | InferenceKind::Wgsl(_) => PrecisionChoice::Auto,
    }
}

/// `ADDR:PORT` as given, or `PORT` alone on the loopback.
fn listen_address(arg: &str) -> String {
    if arg.parse::<u16>().is_ok() { format!("127.0.0.1:{arg}") } else { arg.to_string() }
}

/// Serves an engine per WebSocket connection until the listener fails. Prints the
/// address (`bredon tei: listening on ws://…`) on stdout and each connection on stderr.
fn listen(arg: &str, models: Models, settings: EngineSettings) -> Result<()> {
    let addr = listen_address(arg);
    let listener = WsListener::bind(&addr)?;
    let bound: SocketAddr = listener.local_addr();
    if !bound.ip().is_loopback() {
        eprintln!(
            "bredon tei: warning: listening on {bound}, not the loopback: anyone who can reach this machine can use the engine"
        );
    }
    println!("bredon tei: listening on ws://{bound}");
    let new_engine = move |sink| TeiEngine::new(models.clone(), sink, settings.clone());
    let log = |event: WsEvent| match event {
        WsEvent::Opened { peer } => eprintln!("bredon tei: {peer} connected"),
        WsEvent::Refused { peer, error } => eprintln!("bredon tei: {peer} refused: {error}"),
        WsEvent::Closed { peer, end, stopped_search } => {
            let how = match end {
                WsEnd::Closed => "closed".to_string(),
                WsEnd::Quit => "quit".to_string(),
                WsEnd::Failed(e) => format!("failed ({e})"),
            };
            let search = if stopped_search { "; its search stopped" } else { "" };
            eprintln!("bredon tei: {peer} {how}{search}");
        }
    };
    listener.serve(new_engine, log).context("bredon tei --listen")?;
    bail!("the WebSocket listener stopped")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bredon_mcts::Evaluator;
    use std::path::Path;

    fn shipped(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped").join(name)
    }

    #[test]
    fn every_size_gets_its_own_model_or_the_nearest_that_plays_every_size_loaded_at_first_use() {
        // 4x4.bredon has dense heads (sized by its board), 5x5.bredon none.
        let files = ModelFiles::read(&[shipped("4x4.bredon"), shipped("5x5.bredon")]).unwrap();
        let models = engine_models(&files, Lanes::One, &Compute::cpu(), 1 << 20).unwrap();
        assert_eq!(models.sizes().collect::<Vec<_>>(), [3, 4, 5, 6, 7, 8]);
        let four = models.get(4).unwrap();
        assert_eq!((four.name.as_str(), four.trained_size), (shipped("4x4.bredon").to_str().unwrap(), None));
        assert_eq!(models.get(5).unwrap().trained_size, None);
        for n in [3, 6, 7, 8] {
            let m = models.get(n).unwrap();
            assert_eq!((m.name.as_str(), m.trained_size), (shipped("5x5.bredon").to_str().unwrap(), Some(5)), "{n}");
        }
        assert!(
            models.sizes().all(|n| !models.get(n).unwrap().is_loaded(PrecisionChoice::Auto)),
            "nothing loads at startup"
        );
        // The 5x5 network on its own size answers as the file loaded directly.
        let five = models.get(5).unwrap().net(PrecisionChoice::Auto).unwrap();
        assert_eq!(five.trained_half_komi, Some(files.get(5).unwrap().1.half_komi));
        let direct = model_arg::load(Some(&shipped("5x5.bredon")), Some(5), Lanes::One, &Compute::cpu()).unwrap();
        let pos = bredon_rules::Position::new(5).unwrap();
        let legal = pos.legal_moves();
        assert_eq!(
            five.evaluator.evaluate_batch(&[&pos], &[&legal]),
            direct.evaluator.evaluate_batch(&[&pos], &[&legal])
        );
        // Carried to 7x7 it evaluates 7x7 positions: a policy over every legal move.
        let seven = models.get(7).unwrap().net(PrecisionChoice::Auto).unwrap();
        let mut pos = bredon_rules::Position::new(7).unwrap();
        for ptn in ["a1", "g7", "d4", "Cc3", "d4<"] {
            pos.play(bredon_rules::notation::parse_move(ptn, 7).unwrap()).unwrap();
        }
        let legal = pos.legal_moves();
        let eval = seven.evaluator.evaluate_batch(&[&pos], &[&legal]).pop().unwrap();
        assert_eq!(eval.policy.len(), legal.len());
        assert!((eval.policy.iter().sum::<f32>() - 1.0).abs() < 1e-3 && eval.value.abs() <= 1.0, "{eval:?}");
        assert!(models.get(8).is_some_and(|m| !m.is_loaded(PrecisionChoice::Auto)), "a size loads only when used");
        let err = ModelFiles::read(&[shipped("4x4.bredon"), shipped("4x4-v1.bredon")]).err().expect("two 4x4 models");
        assert!(err.to_string().contains("two 4x4 models"), "{err}");
        // Only models with layers sized by their board: the other sizes are not offered.
        let files = ModelFiles::read(&[shipped("4x4.bredon")]).unwrap();
        let models = engine_models(&files, Lanes::One, &Compute::cpu(), 0).unwrap();
        assert_eq!(models.sizes().collect::<Vec<_>>(), [4]);
        let err = model_arg::load_for_size(&shipped("4x4.bredon"), 5, Lanes::One, &Compute::cpu())
            .err()
            .expect("a dense 4x4 network plays no other size");
        assert!(err.to_string().contains("plays no other size"), "{err}");
    }

    #[test]
    fn a_port_alone_listens_on_the_loopback() {
        assert_eq!(listen_address("7731"), "127.0.0.1:7731");
        assert_eq!(listen_address("0.0.0.0:7731"), "0.0.0.0:7731");
        assert_eq!(listen_address("[::1]:80"), "[::1]:80");
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
        let err = ModelFiles::find(&dirs).err().expect("a damaged 6x6.bredon is an error, not a silent uniform engine");
        assert!(format!("{err:#}").contains("6x6.bredon"), "{err:#}");
        // A file named for one size that holds another is an error too.
        std::fs::copy(shipped("5x5.bredon"), second.path().join("6x6.bredon")).unwrap();
        let err = ModelFiles::find(&dirs).err().expect("a 5x5 model named 6x6.bredon");
        assert!(format!("{err:#}").contains("two 5x5 models"), "{err:#}");
        std::fs::remove_file(second.path().join("6x6.bredon")).unwrap();
        let files = ModelFiles::find(&dirs).unwrap();
        assert!((3..=8).all(|n| files.get(n).is_some() == (n == 4 || n == 5)));
        assert_eq!(files.get(4).unwrap().0, first.path().join("4x4.bredon"));
        assert_eq!(files.get(5).unwrap().0, second.path().join("5x5.bredon"));
        assert!(ModelFiles::find(&[first.path().join("missing")]).unwrap().is_empty());
    }

    #[test]
    fn solver_share_is_a_share() {
        assert_eq!(share("0.25"), Ok(0.25));
        assert_eq!(share("0"), Ok(0.0));
        for bad in ["1.5", "-0.1", "x", "NaN"] {
            assert!(share(bad).unwrap_err().contains("not a share between 0 and 1"), "{bad}");
        }
    }

    #[test]
    fn stop_when_decided_is_on_unless_turned_off() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            tei: TeiArgs,
        }
        let parse = |args: &[&str]| {
            <Cli as clap::Parser>::try_parse_from(std::iter::once("tei").chain(args.iter().copied())).map(|c| c.tei)
        };
        assert!(parse(&[]).unwrap().stop_when_decided);
        assert!(!parse(&["--stop-when-decided", "off"]).unwrap().stop_when_decided);
        assert!(parse(&["--stop-when-decided", "on"]).unwrap().stop_when_decided);
        let err = parse(&["--stop-when-decided", "sometimes"]).expect_err("not on or off").to_string();
        assert!(err.contains("\"sometimes\" is not on or off"), "{err}");
    }

    #[test]
    fn score_utility_is_a_weight() {
        assert_eq!(weight("0.2"), Ok(0.2));
        assert_eq!(weight("2"), Ok(2.0));
        for bad in ["2.5", "-1", "", "inf"] {
            assert!(weight(bad).unwrap_err().contains("not a weight between 0 and 2"), "{bad}");
        }
    }
}
