use super::*;

const AUTO: bredon_infer::PrecisionChoice = bredon_infer::PrecisionChoice::Auto;
use bredon_infer::NetEvaluator;
use bredon_mcts::Evaluation;
use bredon_nn::load_exported;
use bredon_tei::{Info, Outcome, Score, parse_response};
use std::path::{Path, PathBuf};

type Out = Arc<Mutex<Vec<String>>>;

/// Settings for tests: one search thread (reproducible), 50 visits for a bare `go`.
fn settings() -> EngineSettings {
    let mut s = EngineSettings { default_visits: 50, seed: 7, ..EngineSettings::default() };
    s.options.threads = 1;
    s
}

fn engine_with(models: Models) -> (TeiEngine, Out) {
    let out: Out = Arc::new(Mutex::new(Vec::new()));
    (TeiEngine::new(models, out.clone(), settings()), out)
}

fn engine() -> (TeiEngine, Out) {
    engine_with(Models::none())
}

fn take(out: &Out) -> Vec<String> {
    std::mem::take(&mut *out.lock().unwrap())
}

fn bestmove(lines: &[String]) -> String {
    let last =
        lines.iter().rev().find(|l| l.starts_with("bestmove ")).unwrap_or_else(|| panic!("no bestmove: {lines:?}"));
    last["bestmove ".len()..].to_string()
}

/// The `info` lines with a principal variation, parsed.
fn infos(lines: &[String]) -> Vec<Info> {
    lines
        .iter()
        .filter(|l| l.starts_with("info ") && !l.starts_with("info string"))
        .map(|l| match parse_response(l) {
            Ok(Response::Info(i)) => i,
            other => panic!("{l}: {other:?}"),
        })
        .collect()
}

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped").join(name)
}

fn shipped_models(names: &[&str]) -> Models {
    let mut models = Models::none();
    for name in names {
        let path = shipped(name);
        let (net, meta) = load_exported(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let net =
            Net { evaluator: Arc::new(NetEvaluator::new(net, meta.size)), trained_half_komi: Some(meta.half_komi) };
        let model = Model::ready(net, path.display().to_string());
        models.insert(meta.size, model).unwrap();
    }
    models
}

#[test]
fn handshake_lists_sizes_komi_and_bounded_options_then_teiok() {
    let (mut e, out) = engine();
    assert_eq!(e.handle_line("tei"), Flow::Continue);
    let lines = take(&out);
    assert!(lines[0].starts_with("id name Bredon"), "{lines:?}");
    assert_eq!(lines[1], "id author the Bredon developers");
    assert_eq!(lines[2], "size 3 4 5 6 7 8 halfkomi -10 -9 -8 -7 -6 -5 -4 -3 -2 -1 0 1 2 3 4 5 6 7 8 9 10");
    let threads = available_threads();
    assert_eq!(
        lines[3..8],
        [
            "option name HalfKomi type spin default 0 min -10 max 10".to_string(),
            "option name MultiPV type spin default 1 min 1 max 16".to_string(),
            "option name Threads type spin default 1 min 1 max 256".to_string(),
            "option name Hash type spin default 1024 min 1 max 65536".to_string(),
            "option name Precision type combo default auto var auto var f32 var bf16 var int8".to_string(),
        ]
    );
    assert_eq!(lines.last().unwrap(), "teiok");
    assert_eq!(lines.len(), 9);
    for line in &lines {
        parse_response(line).unwrap_or_else(|err| panic!("{line}: {err}"));
    }
    e.handle_line("isready");
    assert_eq!(take(&out), vec!["readyok"]);
    // The default engine's Threads default is the machine's.
    let default = TeiEngine::new(Models::none(), out.clone(), EngineSettings::default());
    assert_eq!(default.option_lines()[2].default.as_deref(), Some(threads.to_string().as_str()));
}

#[test]
fn the_size_line_lists_the_sizes_the_networks_cover() {
    let (mut e, out) = engine_with(shipped_models(&["4x4.bredon", "5x5.bredon"]));
    e.handle_line("tei");
    let lines = take(&out);
    assert!(lines.iter().any(|l| l.starts_with("size 4 5 halfkomi -10 ")), "{lines:?}");
}

#[test]
fn plays_the_road_in_one_and_reports_it_proven_in_each_dialect() {
    let (mut e, out) = engine();
    e.handle_line("teinewgame 4");
    e.handle_line("position tps x4/x4/2,2,2,x/1,1,1,x 1 4");
    e.handle_line("go nodes 200");
    e.finish();
    let lines = take(&out);
    assert_eq!(bestmove(&lines), "d1");
    let last = infos(&lines).pop().unwrap();
    assert_eq!(last.score, Some(Score::Cp(9999)), "{lines:?}");
    // PTN Ninja's dialect: the proof as `score solved`, and the exact win/draw/loss.
    e.handle_line("teinewgame size 4 halfkomi 0");
    e.handle_line("position tps x4/x4/2,2,2,x/1,1,1,x 1 4");
    e.handle_line("go nodes 200");
    e.finish();
    let lines = take(&out);
    assert_eq!(bestmove(&lines), "d1");
    let last = lines.iter().rev().find(|l| l.starts_with("info depth")).unwrap();
    assert!(last.starts_with("info depth 1 score solved win 1 wdl 1000 0 0 nodes "), "{last}");
    assert!(last.ends_with(" pv d1"), "{last}");
}

/// Every kind of bad input gets one `info string error` line naming the problem, and the
/// engine goes on.
#[test]
fn bad_input_gets_one_info_string_and_the_engine_goes_on() {
    let (mut e, out) = engine();
    e.handle_line("teinewgame 5");
    for (line, says) in [
        ("flurb", "unknown command \"flurb\""),
        ("position startpos moves a1 a1", "move 2 \"a1\" is illegal"),
        ("position startpos moves zz9", "move 1 \"zz9\""),
        ("position tps x5/x5 1 1", "position tps"),
        ("position tps x3/x3/x3 1 1", "position is 3x3 but the game is 5x5 (send `teinewgame 3`)"),
        ("setoption name HalfKomi value 99", "HalfKomi must be an integer from -10 to 10, got \"99\""),
        ("setoption name MultiPV value 40", "MultiPV must be an integer from 1 to 16, got \"40\""),
        ("setoption name Threads value 0", "Threads must be an integer from 1 to 256, got \"0\""),
        ("setoption name Hash value lots", "Hash must be an integer from 1 to 65536, got \"lots\""),
        ("setoption name MultiPV", "setoption name MultiPV needs a value from 1 to 16"),
        ("setoption name Precision", "Precision must be one of auto, f32, bf16, int8, got \"\""),
        (
            "setoption name Colour value red",
            "unknown option \"Colour\" (the options are HalfKomi, MultiPV, Threads, Hash and Precision)",
        ),
        ("go nodes x", "go: nodes value \"x\" is not a number"),
        ("teinewgame size 6 komi 4", "teinewgame: unexpected \"komi\""),
        ("teinewgame 9", "size value 9 is out of range (3 to 8)"),
    ] {
        assert_eq!(e.handle_line(line), Flow::Continue);
        let lines = take(&out);
        assert_eq!(lines.len(), 1, "{line}: {lines:?}");
        assert!(lines[0].starts_with("info string error: ") && lines[0].contains(says), "{line}: {lines:?}");
    }
    // The refused values were not taken.
    assert_eq!(e.options(), settings().options);
    // After an invalid position, `go` refuses instead of playing from a stale one.
    e.handle_line("go nodes 10");
    e.finish();
    assert_eq!(take(&out), ["info string error: go without a valid position"]);
    e.handle_line("position startpos moves a1 e5");
    e.handle_line("go nodes 20");
    e.finish();
    let mv = bestmove(&take(&out));
    assert!(parse_move(&mv, 5).is_ok());
    // A komi the engine does not play: the game starts, its komi stays, one line says so.
    e.handle_line("teinewgame size 6 halfkomi 30");
    let lines = take(&out);
    assert_eq!(lines, ["info string error: teinewgame: halfkomi 30 is outside -10 to 10; the game keeps komi 0"]);
    assert_eq!((e.size(), e.options().half_komi), (6, 0));
}

#[test]
fn options_are_set_whatever_their_case() {
    let (mut e, out) = engine();
    for line in [
        "setoption name halfkomi value 4",
        "setoption name MULTIPV value 3",
        "setoption name Threads value 2",
        "setoption name hash value 64",
        "setoption name precision value F32",
    ] {
        e.handle_line(line);
    }
    assert!(take(&out).is_empty());
    let f32 = bredon_infer::PrecisionChoice::Exactly(bredon_infer::Precision::F32);
    assert_eq!(e.options(), OptionValues { half_komi: 4, multi_pv: 3, threads: 2, hash_mb: 64, precision: f32 });
    // Not one of its values: refused with them, and the option keeps its value.
    e.handle_line("setoption name Precision value fp16");
    assert_eq!(take(&out), ["info string error: Precision must be one of auto, f32, bf16, int8, got \"fp16\""]);
    assert_eq!(e.options().precision, f32);
}

#[test]
fn infinite_search_waits_for_stop() {
    let (mut e, out) = engine();
    e.handle_line("teinewgame 5");
    e.handle_line("position startpos");
    e.handle_line("go infinite");
    std::thread::sleep(Duration::from_millis(100));
    e.handle_line("isready");
    assert!(!out.lock().unwrap().iter().any(|l| l.starts_with("bestmove")));
    e.handle_line("stop");
    let lines = take(&out);
    assert!(lines.contains(&"readyok".to_string()));
    let mv = bestmove(&lines);
    assert!(parse_move(&mv, 5).is_ok());
    assert!(!e.is_searching());
}

#[test]
fn a_bare_go_is_infinite_in_the_ptn_ninja_dialect_and_the_default_visits_in_the_other() {
    let (mut e, out) = engine();
    e.handle_line("teinewgame 4");
    e.handle_line("position startpos moves a1 d4");
    e.handle_line("go");
    e.finish();
    let lines = take(&out);
    assert_eq!(infos(&lines).last().unwrap().nodes, Some(50), "{lines:?}");
    parse_move(&bestmove(&lines), 4).unwrap();
    e.handle_line("teinewgame size 4 halfkomi 0");
    assert_eq!(e.dialect(), Dialect::PtnNinja);
    e.handle_line("position startpos moves a1 d4");
    e.handle_line("go");
    std::thread::sleep(Duration::from_millis(150));
    assert!(e.is_searching());
    assert!(!out.lock().unwrap().iter().any(|l| l.starts_with("bestmove")));
    e.handle_line("stop");
    let lines = take(&out);
    assert!(infos(&lines).last().unwrap().nodes.unwrap() > 50, "{lines:?}");
    parse_move(&bestmove(&lines), 4).unwrap();
    // `teinewgame N` goes back to the match runners' dialect.
    e.handle_line("teinewgame 4");
    assert_eq!(e.dialect(), Dialect::MatchRunner);
}

#[test]
fn the_end_of_input_stops_an_infinite_search_and_lets_a_bounded_one_finish() {
    let (mut e, out) = engine();
    e.handle_line("teinewgame 4");
    e.handle_line("position startpos");
    e.handle_line("go nodes 300");
    e.end_of_input();
    let lines = take(&out);
    assert_eq!(infos(&lines).last().unwrap().nodes, Some(300), "{lines:?}");
    parse_move(&bestmove(&lines), 4).unwrap();
    e.handle_line("go infinite");
    e.end_of_input();
    assert!(!e.is_searching());
    parse_move(&bestmove(&take(&out)), 4).unwrap();
}

#[test]
fn a_new_position_during_an_infinite_search_stops_it() {
    let (mut e, out) = engine();
    e.handle_line("teinewgame 5");
    e.handle_line("position startpos");
    e.handle_line("go infinite");
    e.handle_line("position startpos moves a1");
    assert!(!e.is_searching());
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
    assert!(tree.root_visits() > 1, "the subtree of the played move was dropped");
    assert_eq!(tree.position().ply(), 1);
}

#[test]
fn two_search_threads_share_one_tree_and_find_the_road() {
    let (mut e, out) = engine();
    e.handle_line("setoption name Threads value 2");
    e.handle_line("teinewgame 4");
    e.handle_line("position startpos moves a1 d4");
    e.handle_line("go nodes 400");
    e.finish();
    let lines = take(&out);
    let last = infos(&lines).pop().unwrap();
    assert!((400..=402).contains(&last.nodes.unwrap()), "{lines:?}");
    assert!(parse_move(&bestmove(&lines), 4).is_ok());
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
    let models = shipped_models(&["4x4.bredon"]);
    let trained = models.get(4).unwrap().net(AUTO).unwrap().trained_half_komi.unwrap();
    let (mut e, out) = engine_with(models);
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
        w.contains(&format!("komi is {}", other as f32 / 2.0)) && w.contains(&format!("komi {}", trained as f32 / 2.0)),
        "{w}"
    );
    assert!(lines.iter().any(|l| l.starts_with("bestmove ")));
    e.handle_line("position startpos moves a1 d4 b2");
    e.handle_line("go nodes 20");
    e.finish();
    let lines = take(&out);
    assert_eq!(warnings(&lines), 0, "{lines:?}");
    // A new game warns again; PTN Ninja's teinewgame carries the komi itself.
    e.handle_line(&format!("teinewgame size 4 halfkomi {other}"));
    e.handle_line("position startpos moves a1 d4");
    e.handle_line("go nodes 20");
    e.finish();
    assert_eq!(warnings(&take(&out)), 1);
    e.handle_line(&format!("teinewgame size 4 halfkomi {trained}"));
    e.handle_line("position startpos moves a1 d4");
    e.handle_line("go nodes 20");
    e.finish();
    assert_eq!(warnings(&take(&out)), 0);
}

#[test]
fn the_shipped_6x6_model_plays_komi_2_without_a_warning() {
    let models = shipped_models(&["6x6.bredon"]);
    assert_eq!(models.get(6).unwrap().net(AUTO).unwrap().trained_half_komi, Some(4), "6x6 is trained with komi 2");
    let (mut e, out) = engine_with(models);
    e.handle_line("teinewgame size 6 halfkomi 4");
    e.handle_line("position startpos moves a1 f6");
    e.handle_line("go nodes 30");
    e.finish();
    let lines = take(&out);
    assert!(!lines.iter().any(|l| l.contains("warning") || l.contains("error")), "{lines:?}");
    parse_move(&bestmove(&lines), 6).unwrap();
}

#[test]
fn komi_reaches_the_position_from_either_dialect() {
    let (mut e, _out) = engine();
    e.handle_line("teinewgame 6");
    e.handle_line("setoption name HalfKomi value 4");
    e.handle_line("position startpos moves a1");
    assert_eq!(e.position.as_ref().unwrap().0.half_komi(), 4);
    e.handle_line("teinewgame size 5 halfkomi 3");
    e.handle_line("position tps x5/x5/x5/x5/x5 1 1");
    let pos = &e.position.as_ref().unwrap().0;
    assert_eq!((pos.size(), pos.half_komi()), (5, 3));
    // PTN Ninja: a teinewgame without halfkomi means komi 0.
    e.handle_line("teinewgame size 6");
    e.handle_line("position startpos");
    assert_eq!(e.position.as_ref().unwrap().0.half_komi(), 0);
}

#[test]
fn teinewgame_picks_the_model_for_its_size() {
    let models = shipped_models(&["5x5.bredon", "4x4.bredon"]);
    assert_eq!(models.sizes().collect::<Vec<_>>(), [4, 5]);
    let net4 = models.get(4).unwrap().net(AUTO).unwrap().evaluator.clone();
    let net5 = models.get(5).unwrap().net(AUTO).unwrap().evaluator.clone();
    let (mut e, out) = engine_with(models);
    assert_eq!(e.size(), 6, "two models and no size: the TEI default");
    for (line, size, net) in
        [("teinewgame 4", 4, &net4), ("teinewgame size 5 halfkomi 0", 5, &net5), ("teinewgame 4", 4, &net4)]
    {
        e.handle_line(line);
        assert!(Arc::ptr_eq(&e.evaluator(), net), "{line}");
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
    let (e, _) = engine_with(shipped_models(&["4x4.bredon"]));
    assert_eq!(e.size(), 4);
    let mut models = shipped_models(&["4x4.bredon"]);
    let again = models.get(4).unwrap().clone();
    let mut other = again.clone();
    other.name = "other.bredon".into();
    let err = models.insert(4, other).unwrap_err();
    assert!(matches!(err, ModelsError::TwoForOneSize { size: 4, .. }));
    assert!(err.to_string().starts_with("two 4x4 models: ") && err.to_string().ends_with(" and other.bredon"), "{err}");
    let err = models.insert(9, again).unwrap_err();
    assert!(matches!(err, ModelsError::BadSize { size: 9, .. }), "{err}");
}

#[test]
fn networks_load_at_their_sizes_first_game_once_and_a_failed_one_leaves_the_uniform_search() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let loads = Arc::new(AtomicUsize::new(0));
    let counted = |result: Result<(), &'static str>| -> Arc<Loader> {
        let loads = loads.clone();
        Arc::new(move |_| {
            loads.fetch_add(1, Ordering::SeqCst);
            result
                .map(|_| Net { evaluator: Arc::new(DrawishEvaluator), trained_half_komi: Some(4) })
                .map_err(String::from)
        })
    };
    let mut models = Models::none();
    models.insert(6, Model::lazy("six.bredon", counted(Ok(())))).unwrap();
    models.insert(7, Model::lazy("six.bredon", counted(Ok(()))).trained_on(6)).unwrap();
    models.insert(8, Model::lazy("broken.bredon", counted(Err("checksum mismatch")))).unwrap();
    let (mut e, out) = engine_with(models.clone());
    e.handle_line("tei");
    assert!(
        take(&out).contains(&"size 6 7 8 halfkomi -10 -9 -8 -7 -6 -5 -4 -3 -2 -1 0 1 2 3 4 5 6 7 8 9 10".to_string())
    );
    assert_eq!(loads.load(Ordering::SeqCst), 0, "nothing loads before a game needs it");
    e.handle_line("teinewgame size 6 halfkomi 4");
    assert_eq!(loads.load(Ordering::SeqCst), 1, "the game's network loads at teinewgame");
    assert!(take(&out).is_empty());
    // A second game of that size, and another engine sharing the models (a second
    // connection of `--listen`), reuse it.
    e.handle_line("teinewgame size 6 halfkomi 4");
    let (mut second, _) = engine_with(models);
    second.handle_line("teinewgame size 6 halfkomi 4");
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    // A network carried from another size says so, once.
    e.handle_line("teinewgame size 7 halfkomi 4");
    let lines = take(&out);
    assert_eq!(
        lines,
        ["info string note: no 7x7 model; 7x7 games are played by six.bredon, a 6x6 network carried to 7x7"]
    );
    e.handle_line("teinewgame size 7 halfkomi 4");
    assert!(take(&out).is_empty());
    // One that fails: a warning naming it and the reason, then the uniform search plays.
    e.handle_line("teinewgame size 8 halfkomi 4");
    let lines = take(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("info string warning: the 8x8 model broken.bredon did not load (checksum mismatch)"));
    e.handle_line("position startpos moves a1 h8");
    e.handle_line("go nodes 20");
    e.finish();
    let lines = take(&out);
    parse_move(&bestmove(&lines), 8).unwrap();
    assert_eq!(loads.load(Ordering::SeqCst), 3, "a failed load is not retried at every move");
    // Another precision is another network, built when the option is set.
    e.handle_line("teinewgame size 6 halfkomi 4");
    e.handle_line("setoption name Precision value f32");
    assert_eq!(loads.load(Ordering::SeqCst), 4);
    e.handle_line("setoption name Precision value f32");
    e.handle_line("teinewgame size 6 halfkomi 4");
    assert_eq!(loads.load(Ordering::SeqCst), 4);
    // The carried network's note is said once a size, whatever the precision.
    take(&out);
    e.handle_line("teinewgame size 7 halfkomi 4");
    assert_eq!(loads.load(Ordering::SeqCst), 5);
    assert!(take(&out).is_empty());
}

/// An evaluator with a uniform policy that says the side to move stands a little better,
/// with a third of draws: the search backs up win/draw/loss from it.
struct DrawishEvaluator;

impl Evaluator for DrawishEvaluator {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        positions
            .iter()
            .zip(legal)
            .map(|(_, moves)| Evaluation {
                draw: Some(0.3),
                ..Evaluation::new(vec![1.0 / moves.len() as f32; moves.len()], 0.2)
            })
            .collect()
    }
}

#[test]
fn info_lines_carry_wdl_when_the_evaluator_gives_draws_and_multipv_lines() {
    let mut models = Models::none();
    let model = Model::ready(Net { evaluator: Arc::new(DrawishEvaluator), trained_half_komi: None }, "drawish");
    models.insert(4, model).unwrap();
    let (mut e, out) = engine_with(models);
    e.handle_line("teinewgame size 4 halfkomi 0");
    e.handle_line("position startpos moves a1 d4");
    e.handle_line("go nodes 300");
    e.finish();
    let lines = take(&out);
    let last = infos(&lines).pop().unwrap();
    let wdl = last.wdl.unwrap_or_else(|| panic!("no wdl: {lines:?}"));
    assert_eq!(wdl.win as u32 + wdl.draw as u32 + wdl.loss as u32, 1000);
    assert!(wdl.draw > 100, "{wdl:?}");
    // W − L in per mille is the score's value, in cp ×10 (up to rounding).
    let Some(Score::Cp(cp)) = last.score else { panic!("{last:?}") };
    assert!((wdl.win as i32 - wdl.loss as i32 - 10 * cp).abs() <= 10, "{wdl:?} vs cp {cp}");
    assert_eq!(last.multipv, None, "MultiPV 1: the plain line");
    // MultiPV 3: three lines per report, best first, each its own first move, the first
    // the move played.
    e.handle_line("setoption name MultiPV value 3");
    e.handle_line("position startpos moves a1 d4 b1");
    e.handle_line("go nodes 300");
    e.finish();
    let lines = take(&out);
    let all = infos(&lines);
    let report = &all[all.len() - 3..];
    assert_eq!(report.iter().map(|i| i.multipv).collect::<Vec<_>>(), [Some(1), Some(2), Some(3)], "{lines:?}");
    let firsts: Vec<&String> = report.iter().map(|i| &i.pv.as_ref().unwrap()[0]).collect();
    assert!(firsts[0] != firsts[1] && firsts[1] != firsts[2] && firsts[0] != firsts[2], "{firsts:?}");
    assert_eq!(*firsts[0], bestmove(&lines));
    for i in report {
        assert!(i.wdl.is_some() && matches!(i.score, Some(Score::Cp(_))) && i.nodes == report[0].nodes, "{i:?}");
    }
}

#[test]
fn uniform_search_reports_no_made_up_wdl() {
    let (mut e, out) = engine();
    e.handle_line("teinewgame size 4 halfkomi 0");
    e.handle_line("position startpos moves a1 d4");
    e.handle_line("go nodes 100");
    e.finish();
    let lines = take(&out);
    assert!(infos(&lines).iter().all(|i| i.wdl.is_none()), "{lines:?}");
}

#[test]
fn go_solved_stops_at_the_proof_and_reports_it() {
    let (mut e, out) = engine();
    e.handle_line("teinewgame size 4 halfkomi 0");
    // Black to move; white threatens the road on row 1 (d1) and on file a (a4): one
    // move cannot stop both. `go solved` alone searches until the loss is proven.
    e.handle_line("position tps x4/1,2,2,x/1,x,2,x/1,1,1,x 2 5");
    e.handle_line("go solved");
    e.finish();
    let lines = take(&out);
    let last = infos(&lines).pop().unwrap();
    assert!(matches!(last.score, Some(Score::Solved { outcome: Outcome::Loss, .. })), "{lines:?}");
    assert_eq!(last.wdl, Some(bredon_tei::Wdl { win: 0, draw: 0, loss: 1000 }));
    parse_move(&bestmove(&lines), 4).unwrap();
    // Not solvable within its limit: it says so and still plays.
    e.handle_line("position startpos moves a1 d4");
    e.handle_line("go solved nodes 50");
    e.finish();
    let lines = take(&out);
    assert!(lines.contains(&"info string go solved: no proven result within the limits".to_string()), "{lines:?}");
    parse_move(&bestmove(&lines), 4).unwrap();
}

#[test]
fn hash_bounds_the_tree_and_an_infinite_search_waits_at_the_bound() {
    let (mut e, out) = engine();
    e.handle_line("setoption name Hash value 1");
    let budget = e.options().hash_nodes();
    assert_eq!(budget, (1 << 20) / NODE_BYTES);
    e.handle_line("teinewgame 6");
    e.handle_line("position startpos moves a1 f6");
    // 34 empty squares with a flat, a wall or the capstone, and white's f6 flat moving
    // two ways: 104 moves, so the 21,845 nodes of 1 MB hold 208 expansions of 105 nodes.
    let (start, moves) = e.position.clone().unwrap();
    let mut pos = start;
    for mv in moves {
        pos.play(mv).unwrap();
    }
    assert_eq!(pos.legal_moves().len(), 104);
    let capacity = budget / 105;
    e.handle_line("go infinite");
    let full = Instant::now();
    while !out.lock().unwrap().iter().any(|l| l.starts_with("info string Hash full")) {
        assert!(full.elapsed() < Duration::from_secs(60), "{:?}", out.lock().unwrap());
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(e.is_searching(), "go infinite: the best move waits for stop");
    e.handle_line("stop");
    let lines = take(&out);
    assert!(lines.contains(&format!("info string Hash full: {capacity} visits fill 1 MB; setoption name Hash value N (MB, at most 65536) searches further")), "{lines:?}");
    let last = infos(&lines).pop().unwrap();
    assert_eq!(last.hashfull, Some(1000), "{last:?}");
    assert_eq!(last.nodes, Some(capacity), "{last:?}");
    parse_move(&bestmove(&lines), 6).unwrap();
    // The next move's tree, already full, starts afresh; a limit below the bound is not
    // reported as a full hash.
    e.handle_line("position startpos moves a1 f6 c3");
    e.handle_line("go nodes 50");
    e.finish();
    let lines = take(&out);
    assert!(!lines.iter().any(|l| l.contains("Hash full")), "{lines:?}");
    assert!(infos(&lines).pop().unwrap().hashfull.unwrap() < 500, "{lines:?}");
}

mod websocket {
    use super::*;
    use crate::tei::ws::{WsEnd, WsEvent, WsListener};
    use std::net::TcpStream;
    use tungstenite::stream::MaybeTlsStream;

    type Client = tungstenite::WebSocket<MaybeTlsStream<TcpStream>>;

    /// A listener on a free loopback port serving uniform engines; its address, its open
    /// connections and its events.
    fn serve() -> (String, ws::ConnectionCount, mpsc::Receiver<WsEvent>) {
        let listener = WsListener::bind("127.0.0.1:0").unwrap();
        let url = format!("ws://{}", listener.local_addr());
        let open = listener.connections();
        let (tx, events) = mpsc::channel();
        let tx = Mutex::new(tx);
        std::thread::spawn(move || {
            let _ = listener.serve(
                |sink| TeiEngine::new(Models::none(), sink, settings()),
                move |event| {
                    let _ = tx.lock().unwrap().send(event);
                },
            );
        });
        (url, open, events)
    }

    fn connect(url: &str) -> Client {
        let (ws, _) = tungstenite::connect(url).unwrap();
        if let MaybeTlsStream::Plain(s) = ws.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        }
        ws
    }

    /// Text frames up to the first line starting with `prefix`.
    fn until(ws: &mut Client, prefix: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match ws.read() {
                Ok(tungstenite::Message::Text(t)) => {
                    let done = t.starts_with(prefix);
                    seen.push(t.to_string());
                    if done {
                        return seen;
                    }
                }
                Ok(_) => {}
                Err(e) => panic!("waiting for {prefix:?}: {e}; saw {seen:?}"),
            }
        }
    }

    fn send(ws: &mut Client, text: &str) {
        ws.send(tungstenite::Message::text(text)).unwrap();
    }

    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let began = Instant::now();
        while !done() {
            assert!(began.elapsed() < Duration::from_secs(20), "{what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_websocket_client_gets_its_own_engine_and_lines_as_frames() {
        let (url, open, events) = serve();
        let mut a = connect(&url);
        send(&mut a, "tei");
        let lines = until(&mut a, "teiok");
        assert!(
            lines[0].starts_with("id name Bredon") && lines.iter().any(|l| l.starts_with("size 3 4 5 6 7 8 halfkomi"))
        );
        // Several lines in one frame; a second client at the same time plays another size.
        let mut b = connect(&url);
        wait_for("two connections", || open.get() == 2);
        send(&mut a, "teinewgame size 4 halfkomi 0\nposition startpos moves a1 d4\r\ngo infinite");
        send(&mut b, "teinewgame 5\nposition startpos\ngo nodes 40");
        let lines = until(&mut b, "bestmove ");
        parse_move(&lines.last().unwrap()["bestmove ".len()..], 5).unwrap();
        send(&mut a, "stop");
        let lines = until(&mut a, "bestmove ");
        parse_move(&lines.last().unwrap()["bestmove ".len()..], 4).unwrap();
        send(&mut b, "quit");
        wait_for("b's end", || open.get() == 1);
        a.close(None).unwrap();
        wait_for("a's end", || open.get() == 0);
        let events: Vec<WsEvent> = events.try_iter().collect();
        assert_eq!(events.iter().filter(|e| matches!(e, WsEvent::Opened { .. })).count(), 2, "{events:?}");
        assert!(events.iter().any(|e| matches!(e, WsEvent::Closed { end: WsEnd::Quit, .. })), "{events:?}");
        assert!(events.iter().any(|e| matches!(e, WsEvent::Closed { end: WsEnd::Closed, .. })), "{events:?}");
    }

    #[test]
    fn a_client_gone_mid_search_stops_its_search() {
        let (url, open, events) = serve();
        let mut ws = connect(&url);
        send(&mut ws, "teinewgame size 6 halfkomi 4\nposition startpos\ngo infinite");
        // A progress report: the search runs.
        until(&mut ws, "info depth");
        drop(ws); // No closing handshake: the socket just ends.
        wait_for("the connection's thread to end", || open.get() == 0);
        let closed = events.iter().find(|e| matches!(e, WsEvent::Closed { .. })).unwrap();
        assert!(matches!(closed, WsEvent::Closed { stopped_search: true, end: WsEnd::Closed, .. }), "{closed:?}");
        // The listener goes on serving.
        let mut again = connect(&url);
        send(&mut again, "isready");
        assert_eq!(until(&mut again, "readyok"), ["readyok"]);
    }

    #[test]
    fn a_binary_frame_or_a_plain_http_request_is_answered_and_the_listener_goes_on() {
        let (url, _open, events) = serve();
        let mut ws = connect(&url);
        ws.send(tungstenite::Message::binary(vec![1, 2, 3])).unwrap();
        let lines = until(&mut ws, "info string error");
        assert_eq!(lines, ["info string error: a binary frame; TEI lines go in text frames"]);
        let mut plain = TcpStream::connect(url.trim_start_matches("ws://")).unwrap();
        std::io::Write::write_all(&mut plain, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let refused = loop {
            match events.recv_timeout(Duration::from_secs(20)) {
                Ok(e @ WsEvent::Refused { .. }) => break e,
                Ok(_) => {}
                Err(e) => panic!("no refusal: {e}"),
            }
        };
        assert!(matches!(refused, WsEvent::Refused { error: tungstenite::Error::Protocol(_), .. }), "{refused:?}");
        send(&mut ws, "isready");
        assert_eq!(until(&mut ws, "readyok"), ["readyok"]);
    }
}
