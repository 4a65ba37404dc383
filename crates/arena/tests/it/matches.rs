//! Matches between in-process players: schedule, PTN files, results file, resume, ratings.

use std::ops::ControlFlow;
use std::path::Path;

use bredon_arena::results::append_record;
use bredon_arena::{
    Adjudication, ArenaError, GameRecord, MatchConfig, MatchConfigError, OpeningsConfig, OpeningsError, PlayerSpec,
    ResultsError, Schedule, SpecError, SpecErrorKind, Termination, entrants_from_specs, load_records, run_arena,
    run_match,
};
use bredon_infer::Compute;
use bredon_rules::notation::Ptn;

fn specs(list: &[&str]) -> Vec<PlayerSpec> {
    list.iter().map(|s| s.parse().unwrap()).collect()
}

fn check_ptn_files(out: &Path, records: &[GameRecord]) {
    for r in records {
        let text = std::fs::read_to_string(out.join(&r.ptn_file)).unwrap();
        let ptn = Ptn::parse(&text).unwrap();
        assert_eq!(ptn.tag("Player1"), Some(r.white.as_str()));
        assert_eq!(ptn.tag("Player2"), Some(r.black.as_str()));
        assert_eq!(ptn.tag("Site"), Some("bredon arena"));
        assert_eq!(ptn.tag("Size"), Some(r.size.to_string().as_str()));
        assert_eq!(ptn.tag("Result"), Some(r.result.as_str()));
        assert_eq!(ptn.tag("Opening"), Some(r.opening.as_str()));
        assert!(ptn.tag("Komi").is_some());
        let date = ptn.tag("Date").unwrap();
        assert_eq!(date.len(), 10, "{date}");
        assert_eq!(ptn.moves.len(), r.plies);
        let replay = ptn.replay().unwrap();
        let opening_plies = r.opening.split_whitespace().count();
        let opening: Vec<String> = ptn.moves[..opening_plies].iter().map(|m| m.text.clone()).collect();
        assert_eq!(opening.join(" "), r.opening);
        if r.termination == Termination::Rules {
            assert_eq!(replay.result().map(|g| g.ptn().to_string()), Some(r.result.clone()));
        }
    }
}

#[test]
fn uniform_mcts_match_records_games_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let config = MatchConfig {
        size: 4,
        half_komi: 2,
        games_per_pairing: 4,
        openings: OpeningsConfig::Random { plies: 2, count: 3, seed: 9 },
        threads: 2,
        max_plies: 120,
        ..MatchConfig::default()
    };
    let players = specs(&["uniform:8;name=u8a", "uniform:16", "random;seed=3"]);
    let mut seen = 0;
    let table = run_arena(&config, &players, out, &mut |_| seen += 1).unwrap();
    // Round robin of 3 players: 3 pairings x 4 games.
    assert_eq!(seen, 12);
    let records = load_records(&out.join("results.jsonl")).unwrap();
    assert_eq!(records.len(), 12);
    check_ptn_files(out, &records);
    // Every pair is played with colours swapped from the same opening.
    for r in &records {
        let twin = records
            .iter()
            .find(|t| t.pair == r.pair && t.white == r.black && t.black == r.white)
            .expect("colour-swapped twin");
        assert_eq!(twin.opening, r.opening);
        assert!(r.opening.split_whitespace().count() == 2);
        assert!(matches!(r.result.as_str(), "R-0" | "0-R" | "F-0" | "0-F" | "1/2-1/2"), "{}", r.result);
        assert!(!matches!(r.termination, Termination::Forfeit { .. }));
        assert!(r.plies <= 120);
        assert_eq!(r.half_komi, 2);
    }
    // The table covers the three players with 8 games each, anchored at the first.
    assert_eq!(table.anchor, "u8a");
    assert_eq!(table.total_games, 12);
    for name in ["u8a", "uniform-16", "random"] {
        let row = table.get(name).unwrap();
        assert_eq!(row.games, 8, "{name}");
        assert_eq!(row.white_games, 4);
        assert_eq!(row.black_games, 4);
    }
    assert!(out.join("ratings.csv").exists() && out.join("ratings.json").exists());
    let games: Vec<_> = std::fs::read_dir(out.join("games")).unwrap().collect();
    assert_eq!(games.len(), 12);

    // Running again plays nothing new: everything is in the results file.
    let mut again = 0;
    let table2 = run_arena(&config, &players, out, &mut |_| again += 1).unwrap();
    assert_eq!(again, 0);
    assert_eq!(table2.total_games, 12);
    // More games per pairing: only the new pairs are played.
    let more = MatchConfig { games_per_pairing: 6, ..config.clone() };
    let mut extra = 0;
    run_arena(&more, &players, out, &mut |_| extra += 1).unwrap();
    assert_eq!(extra, 6);
    assert_eq!(load_records(&out.join("results.jsonl")).unwrap().len(), 18);
}

#[test]
fn gauntlet_with_openings_file_and_draw_adjudication() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let openings = out.join("openings.txt");
    // The second opening leaves white a flat ahead (c3 b2 against a1 and a wall) at the ply
    // limit, with no road possible: its games are adjudicated before anyone moves, and the
    // flats would have given them to white.
    std::fs::write(&openings, "# two openings\na1 c3\n\na1 c3 b2 Sa2\n").unwrap();
    let config = MatchConfig {
        size: 3,
        games_per_pairing: 3, // rounded up to 4
        openings: OpeningsConfig::File { path: openings.clone(), count: None, shuffle_seed: None },
        schedule: Schedule::Gauntlet,
        // No 3x3 game ends within 4 plies (a road needs 3 stones of a colour; each side has
        // placed 2), so every game reaches the limit.
        max_plies: 4,
        adjudication: Adjudication::Draw,
        ..MatchConfig::default()
    };
    let entrants = entrants_from_specs(
        &config,
        &specs(&["random;seed=1;name=r1", "random;seed=2;name=r2", "uniform:4"]),
        &Compute::cpu(),
    )
    .unwrap();
    let records = run_match(&config, &entrants, out, &mut |_| ControlFlow::Continue(())).unwrap();
    // Gauntlet: r1 against each of the others, 4 games each.
    assert_eq!(records.len(), 8);
    assert!(records.iter().all(|r| r.white == "r1" || r.black == "r1"));
    let openings_used: std::collections::BTreeSet<&str> = records.iter().map(|r| r.opening.as_str()).collect();
    assert_eq!(openings_used.into_iter().collect::<Vec<_>>(), ["a1 c3", "a1 c3 b2 Sa2"]);
    let mut flat_leads = 0;
    for r in &records {
        assert_eq!(r.termination, Termination::PlyLimit, "{r:?}");
        assert_eq!(r.plies, 4);
        assert_eq!(r.result, "1/2-1/2");
        assert_eq!(r.white_score, 0.5);
        let text = std::fs::read_to_string(out.join(&r.ptn_file)).unwrap();
        let last = Ptn::parse(&text).unwrap().replay().unwrap().final_position().clone();
        if last.flat_result() != bredon_rules::GameResult::Draw {
            flat_leads += 1;
        }
    }
    // Draw adjudication, not the flat count, decided the games from the second opening.
    assert!(flat_leads >= 4, "{flat_leads} games with a flat lead at the limit");
    check_ptn_files(out, &records);

    // Stopping early from the callback.
    let dir2 = tempfile::tempdir().unwrap();
    let mut n = 0;
    let records = run_match(&config, &entrants, dir2.path(), &mut |_| {
        n += 1;
        if n >= 3 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    })
    .unwrap();
    assert!(records.len() >= 3 && records.len() <= 4, "{}", records.len());
}

#[test]
fn bad_configs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let players = specs(&["random", "uniform:2"]);
    let bad_size = MatchConfig { size: 9, ..MatchConfig::default() };
    let e = run_arena(&bad_size, &players, out, &mut |_| {}).unwrap_err();
    assert!(matches!(e, ArenaError::Config(MatchConfigError::Size(9))), "{e:?}");
    assert!(e.to_string().contains("size 9"), "{e}");
    let one = specs(&["random"]);
    let e = run_arena(&MatchConfig::default(), &one, out, &mut |_| {}).unwrap_err();
    assert!(matches!(e, ArenaError::TooFewPlayers(1)), "{e:?}");
    let dup = specs(&["random", "random"]);
    let e = run_arena(&MatchConfig::default(), &dup, out, &mut |_| {}).unwrap_err();
    assert!(matches!(&e, ArenaError::DuplicateName(n) if n == "random"), "{e:?}");
    // The chain as the `bredon` binary prints it.
    let e = anyhow::Error::from(e);
    assert!(format!("{e:#}").contains("two players are named"), "{e:#}");
    let missing = MatchConfig {
        openings: OpeningsConfig::File { path: out.join("nope.txt"), count: None, shuffle_seed: None },
        ..MatchConfig::default()
    };
    let e = run_arena(&missing, &players, out, &mut |_| {}).unwrap_err();
    assert!(
        matches!(&e, ArenaError::Openings(OpeningsError::Read { path, .. }) if path.ends_with("nope.txt")),
        "{e:?}"
    );
    std::fs::write(out.join("bad.txt"), "a1 a1\n").unwrap();
    let illegal = MatchConfig {
        openings: OpeningsConfig::File { path: out.join("bad.txt"), count: None, shuffle_seed: None },
        ..MatchConfig::default()
    };
    let e = run_arena(&illegal, &players, out, &mut |_| {}).unwrap_err();
    match &e {
        ArenaError::Openings(OpeningsError::BadLine { line: 1, size: 5, source, .. }) => {
            assert!(matches!(**source, OpeningsError::IllegalMove { index: 2, .. }), "{source:?}")
        }
        other => panic!("{other:?}"),
    }
    let e = anyhow::Error::from(e);
    assert!(format!("{e:#}").contains("bad.txt:1"), "{e:#}");
    let ckpt = specs(&["random", "checkpoint:model.bin"]);
    let e = run_arena(&MatchConfig::default(), &ckpt, out, &mut |_| {}).unwrap_err();
    match &e {
        ArenaError::Player { index: 2, source: SpecError { kind: SpecErrorKind::Checkpoint { path, .. }, .. } } => {
            assert_eq!(path, Path::new("model.bin"))
        }
        other => panic!("{other:?}"),
    }
    let e = anyhow::Error::from(e);
    assert!(format!("{e:#}").contains("model.bin"), "{e:#}");
    std::fs::write(out.join("junk.bredon"), "not a model").unwrap();
    let junk = vec![
        specs(&["random"]).remove(0),
        format!("checkpoint:{}", out.join("junk.bredon").display()).parse().unwrap(),
    ];
    let e = anyhow::Error::from(run_arena(&MatchConfig::default(), &junk, out, &mut |_| {}).unwrap_err());
    assert!(format!("{e:#}").contains("not a Bredon model file"), "{e:#}");
    // Config files: unknown fields are rejected, missing ones take defaults.
    let c: MatchConfig = serde_json::from_str(r#"{"size": 6, "openings": {"kind": "none"}}"#).unwrap();
    assert_eq!(c.size, 6);
    assert_eq!(c.games_per_pairing, MatchConfig::default().games_per_pairing);
    assert!(serde_json::from_str::<MatchConfig>(r#"{"sise": 6}"#).is_err());
}

#[test]
fn results_file_survives_a_torn_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.jsonl");
    let rec = |i: usize| GameRecord {
        key: format!("k{i}"),
        white: "a".into(),
        black: "b".into(),
        result: "R-0".into(),
        white_score: 1.0,
        plies: 9,
        termination: Termination::Rules,
        size: 5,
        half_komi: 0,
        opening: String::new(),
        pair: i,
        ptn_file: format!("g{i}.ptn"),
        finished_unix: 0,
    };
    append_record(&path, &rec(0)).unwrap();
    append_record(&path, &rec(1)).unwrap();
    // Simulate a kill in the middle of a write.
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"key\":\"k2\",\"white\":\"a\",\"bla");
    std::fs::write(&path, &text).unwrap();
    let loaded = load_records(&path).unwrap();
    assert_eq!(loaded, vec![rec(0), rec(1)]);
    // The next append cuts the torn line off.
    append_record(&path, &rec(3)).unwrap();
    let loaded = load_records(&path).unwrap();
    assert_eq!(loaded, vec![rec(0), rec(1), rec(3)]);
    assert!(std::fs::read_to_string(&path).unwrap().ends_with('\n'));
    assert!(!std::fs::read_to_string(&path).unwrap().contains("bla\n"));
    // A corrupt complete line is reported with its line number.
    std::fs::write(&path, "{\"key\":1}\n").unwrap();
    let e = load_records(&path).unwrap_err();
    assert!(matches!(&e, ResultsError::BadRecord { line: 1, path: p, .. } if *p == path), "{e:?}");
    let e = anyhow::Error::from(e);
    assert!(format!("{e:#}").contains(":1: bad result record"), "{e:#}");
    // A missing file has no records.
    assert!(load_records(&dir.path().join("none.jsonl")).unwrap().is_empty());
}

#[test]
fn gate_accepts_a_much_stronger_candidate() {
    use bredon_arena::{GateConfig, GateState, SprtModel, run_gate};
    let dir = tempfile::tempdir().unwrap();
    let config = MatchConfig {
        size: 4,
        games_per_pairing: 200,
        openings: OpeningsConfig::Random { plies: 2, count: 100, seed: 5 },
        max_plies: 100,
        ..MatchConfig::default()
    };
    let entrants = entrants_from_specs(&config, &specs(&["uniform:64", "random;seed=8"]), &Compute::cpu()).unwrap();
    let sprt = GateConfig::Sprt { elo0: 0.0, elo1: 50.0, alpha: 0.05, beta: 0.05, model: SprtModel::Pentanomial };
    let report = run_gate(&config, &entrants[0], &entrants[1], &sprt, dir.path()).unwrap();
    assert_eq!(report.state, GateState::AcceptH1, "{report:?}");
    assert!(report.games < 200 && report.games.is_multiple_of(2), "{}", report.games);
    assert!(report.score > 0.7, "{}", report.score);
    assert_eq!(load_records(&dir.path().join("results.jsonl")).unwrap().len(), report.games);

    let fixed = GateConfig::Fixed { games: 6, threshold: 0.55 };
    let dir = tempfile::tempdir().unwrap();
    let cfg = MatchConfig { games_per_pairing: 6, ..config };
    let report = run_gate(&cfg, &entrants[0], &entrants[1], &fixed, dir.path()).unwrap();
    assert_eq!(report.games, 6);
    assert_eq!(report.state, GateState::AcceptH1, "{report:?}");
}
