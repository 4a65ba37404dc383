//! External engines through TEI, against a scripted fake engine (`src/bin/fake_tei.rs`):
//! a normal engine plays whole games; engines that crash, send illegal or unparsable
//! moves, or stall lose those games and the match completes.

use std::time::Duration;

use bredon_arena::{
    ArenaError, GameSettings, MatchConfig, MoveLimits, OpeningsConfig, Player, PlayerError, PlayerSpec, RandomPlayer,
    TeiClientError, TeiConfig, TeiPlayer, TeiStage, Termination, load_records, play_game, run_arena,
};
use bredon_rules::{Color, GameOptions, Position};

const FAKE: &str = env!("CARGO_BIN_EXE_fake_tei");

fn tei(mode: &str, settings: &str) -> PlayerSpec {
    format!("tei:\"{FAKE}\" {mode}{settings}").parse().unwrap()
}

fn config() -> MatchConfig {
    MatchConfig {
        size: 4,
        games_per_pairing: 4,
        visits: 7,
        openings: OpeningsConfig::None,
        threads: 2,
        max_plies: 200,
        ..MatchConfig::default()
    }
}

#[test]
fn normal_engine_plays_full_games_and_speaks_the_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("engine.log");
    let engine: PlayerSpec = format!("tei:\"{FAKE}\" normal --log \"{}\";name=fake", log.display()).parse().unwrap();
    let cfg = MatchConfig { half_komi: 4, threads: 1, ..config() };
    let players = vec![engine, "random;seed=5".parse().unwrap()];
    let table = run_arena(&cfg, &players, dir.path(), &mut |_| {}).unwrap();
    let records = load_records(&dir.path().join("results.jsonl")).unwrap();
    assert_eq!(records.len(), 4);
    for r in &records {
        assert_eq!(r.termination, Termination::Rules, "{r:?}");
        assert!(r.plies > 2);
    }
    assert_eq!(table.get("fake").unwrap().games, 4);
    let log = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines[0], "tei");
    for expected in ["setoption name HalfKomi value 4", "teinewgame 4", "isready", "go nodes 7", "quit"] {
        assert!(lines.contains(&expected), "missing {expected:?} in {lines:?}");
    }
    assert!(lines.iter().any(|l| l.starts_with("position startpos moves ")), "{lines:?}");
    // As white the engine's first request is the empty board.
    assert!(lines.contains(&"position startpos"), "{lines:?}");
}

/// Runs `engine` against a random player and checks every game is an engine forfeit.
fn engine_forfeits_every_game(mode: &str, settings: &str, reason: &str) {
    let dir = tempfile::tempdir().unwrap();
    let players = vec![tei(mode, &format!(";name=bad{settings}")), "random;seed=1".parse().unwrap()];
    let table = run_arena(&config(), &players, dir.path(), &mut |_| {}).unwrap();
    let records = load_records(&dir.path().join("results.jsonl")).unwrap();
    assert_eq!(records.len(), 4, "the match completes");
    for r in &records {
        let engine_white = r.white == "bad";
        match &r.termination {
            Termination::Forfeit { loser, reason: why } => {
                let expected = if engine_white { Color::White } else { Color::Black };
                assert_eq!(loser, &expected.to_string());
                assert!(why.contains(reason), "{mode}: {why:?} should mention {reason:?}");
            }
            other => panic!("{mode}: expected a forfeit, got {other:?}"),
        }
        assert_eq!(r.result, if engine_white { "0-1" } else { "1-0" });
        let text = std::fs::read_to_string(dir.path().join(&r.ptn_file)).unwrap();
        assert!(text.contains("[Termination \""), "{text}");
    }
    let row = table.get("bad").unwrap();
    assert_eq!((row.wins, row.draws, row.losses), (0, 0, 4));
    assert!(row.elo < table.get("random").unwrap().elo);
}

#[test]
fn crashing_engine_loses_and_is_restarted() {
    // Crashes when asked for its second move of every game: each game needs a new process.
    engine_forfeits_every_game("crash 1", "", "crashed");
}

#[test]
fn illegal_move_loses() {
    engine_forfeits_every_game("illegal 1", "", "illegal move");
}

#[test]
fn unparsable_move_loses() {
    engine_forfeits_every_game("garbage 0", "", "unparsable move \"xyzzy\"");
}

#[test]
fn stalling_engine_loses_on_the_move_timeout() {
    engine_forfeits_every_game("stall 1", ";timeout=1000", "no move within");
}

#[test]
fn engine_that_never_says_teiok_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let players = vec![tei("silent", ";init_timeout=500"), "random".parse().unwrap()];
    let e = run_arena(&config(), &players, dir.path(), &mut |_| {}).unwrap_err();
    match &e {
        ArenaError::StartPlayer {
            name,
            source:
                PlayerError::Engine(TeiClientError::TimedOut {
                    engine,
                    stage: TeiStage::Handshake,
                    waiting_for: "teiok",
                    last_line: None,
                    ..
                }),
        } => {
            assert_eq!(name, "fake_tei");
            assert_eq!(engine, FAKE);
        }
        other => panic!("{other:?}"),
    }
    let msg = format!("{:#}", anyhow::Error::from(e));
    assert!(msg.contains("handshake failed") && msg.contains("no `teiok` within"), "{msg}");
    let players = vec!["tei:/nonexistent/engine tei".parse().unwrap(), "random".parse().unwrap()];
    let e = run_arena(&config(), &players, dir.path(), &mut |_| {}).unwrap_err();
    assert!(
        matches!(&e, ArenaError::StartPlayer { source: PlayerError::Engine(TeiClientError::Start { program, .. }), .. }
            if program == "/nonexistent/engine"),
        "{e:?}"
    );
    let e = anyhow::Error::from(e);
    assert!(format!("{e:#}").contains("cannot start TEI engine"), "{e:#}");
}

#[test]
fn engine_that_exits_at_once_is_reported_as_died_with_its_name() {
    let e = TeiPlayer::new(TeiConfig::new(FAKE, ["exit"])).err().expect("the engine exits");
    match &e {
        TeiClientError::Died { engine, stage: TeiStage::Handshake, detail } => {
            assert_eq!(engine, FAKE);
            assert!(detail.contains("exit status: 3"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("handshake failed: engine crashed or exited"), "{e}");
    // In a match the player is named.
    let dir = tempfile::tempdir().unwrap();
    let players = vec![tei("exit", ";name=quitter"), "random".parse().unwrap()];
    let e = run_arena(&config(), &players, dir.path(), &mut |_| {}).unwrap_err();
    assert!(
        matches!(&e, ArenaError::StartPlayer { name, source: PlayerError::Engine(TeiClientError::Died { .. }) }
            if name == "quitter"),
        "{e:?}"
    );
    assert!(format!("{:#}", anyhow::Error::from(e)).starts_with("starting player quitter: TEI engine"));
    // A config without a program.
    assert!(matches!(TeiPlayer::new(TeiConfig::default()), Err(TeiClientError::NoProgram)));
}

#[test]
fn tei_player_directly() {
    let mut cfg = TeiConfig::new(FAKE, ["crash", "1"]);
    cfg.move_timeout_ms = 2000;
    let mut engine = TeiPlayer::new(cfg).unwrap();
    assert_eq!(engine.name(), "fake_tei");
    let mut random = RandomPlayer::new(4);
    let settings = GameSettings {
        options: GameOptions::new(4),
        opening: Vec::new(),
        limits: [MoveLimits::nodes(3), MoveLimits::nodes(3)],
        clock: None,
        max_plies: 100,
        adjudication: Default::default(),
    };
    // Twice: the second game runs on a restarted process.
    for _ in 0..2 {
        let outcome = play_game(&mut engine, &mut random, &settings);
        assert!(matches!(outcome.termination, Termination::Forfeit { .. }), "{outcome:?}");
        assert_eq!(outcome.result.winner(), Some(Color::Black));
        assert_eq!(outcome.moves.len(), 2);
    }
    // Without a limit the engine cannot be asked to move.
    let mut normal = TeiPlayer::new(TeiConfig::new(FAKE, ["normal"])).unwrap();
    normal.new_game(GameOptions::new(4)).unwrap();
    let pos = Position::new(4).unwrap();
    assert!(matches!(normal.choose_move(&pos, &[], &MoveLimits::default()), Err(PlayerError::NoLimit)));
    let mv = normal.choose_move(&pos, &[], &MoveLimits::movetime(Duration::from_millis(5))).unwrap();
    assert!(pos.is_legal(mv));
}
