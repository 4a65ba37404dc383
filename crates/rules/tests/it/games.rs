//! PTN games: every reference game in `shared/data/games` reads and replays, with the
//! declared road/flat result reproduced exactly; malformed and illegal games are reported
//! at the right line and column; games round-trip through the writer.

use bredon_rules::notation::{Ptn, PtnErrorKind, PtnMoveError, parse_tps, write_tps};
use bredon_rules::testdata::shared_data_dir;
use bredon_rules::{Color, GameResult, Move, Position, RulesError, WinKind};

fn game_files() -> Vec<(String, String)> {
    let dir = shared_data_dir().expect("shared/data not found; set BREDON_SHARED_DATA").join("games");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptn"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .ptn files in {}", dir.display());
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), text)
        })
        .collect()
}

#[test]
fn reference_games_replay_with_their_results() {
    let mut decided = 0;
    for (name, text) in game_files() {
        let ptn = Ptn::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let replay = ptn.replay().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(replay.positions().len(), ptn.moves.len() + 1, "{name}");
        assert_eq!(replay.final_position().ply() as usize, replay.start().ply() as usize + ptn.moves.len());
        // The Result tag, where there is one, is what `Ptn::result` reports.
        if let Some(tag) = ptn.tag("Result") {
            assert_eq!(ptn.result, GameResult::parse_ptn(tag).unwrap(), "{name}");
        }
        let computed = replay.result();
        eprintln!("{name}: {} moves, declared {:?}, computed {computed:?}", ptn.moves.len(), ptn.result);
        // Resignations, time losses, draws by agreement and unknown results need not be
        // over by the rules; road and flat wins must be reproduced exactly.
        if let Some(r @ GameResult::Win { kind: WinKind::Road | WinKind::Flat, .. }) = ptn.result {
            assert_eq!(computed, Some(r), "{name}: declared {r}, computed {computed:?}");
            decided += 1;
        }
        // Only the last position may be terminal.
        for (ply, p) in replay.positions().iter().enumerate().take(ptn.moves.len()) {
            assert_eq!(p.result(), None, "{name}: game over before ply {ply}");
        }
    }
    assert!(decided > 0, "no game with a road or flat result was checked");
}

#[test]
fn reference_games_round_trip_through_the_writer() {
    for (name, text) in game_files() {
        let ptn = Ptn::parse(&text).unwrap();
        let written = ptn.to_string();
        let again = Ptn::parse(&written).unwrap_or_else(|e| panic!("{name}: re-reading written PTN: {e}\n{written}"));
        assert_eq!(again.tags, ptn.tags, "{name}");
        assert_eq!(again.options, ptn.options, "{name}");
        assert_eq!(again.start_tps, ptn.start_tps, "{name}");
        assert_eq!(again.result, ptn.result, "{name}");
        let mvs = |p: &Ptn| p.moves.iter().map(|m| m.mv).collect::<Vec<Move>>();
        assert_eq!(mvs(&again), mvs(&ptn), "{name}");
        assert_eq!(again.replay().unwrap().final_position(), ptn.replay().unwrap().final_position(), "{name}");
        // Writing is stable.
        assert_eq!(again.to_string(), written, "{name}");
    }
}

#[test]
fn regression_file_starts_from_its_tps() {
    let (_, text) = game_files().into_iter().find(|(n, _)| n == "regression.ptn").expect("regression.ptn");
    let ptn = Ptn::parse(&text).unwrap();
    let tps = ptn.tag("TPS").unwrap();
    let replay = ptn.replay().unwrap();
    assert_eq!(replay.start(), &parse_tps(tps).unwrap());
    assert_eq!(write_tps(replay.start()), tps);
    assert_eq!(ptn.tag("Depth"), Some("3"));
}

#[test]
fn tags_comments_numbers_and_results() {
    let text = "[Site \"x\"] [Size \"6\"]\n[Komi \"2.5\"][Player1 \"a \\\"b\\\"\"]\n\
                {a comment\nover two lines} 1. a1 {c} f6\n2.a2 2...f5 {last}\n3. a3'' f4?! 1-0 {trailing}\n";
    let ptn = Ptn::parse(text).unwrap();
    assert_eq!(ptn.size(), 6);
    assert_eq!(ptn.half_komi(), 5);
    assert_eq!(ptn.tag("player1"), Some("a \"b\""));
    assert_eq!(ptn.tags[0], ("Site".to_string(), "x".to_string()));
    let texts: Vec<&str> = ptn.moves.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["a1", "f6", "a2", "f5", "a3''", "f4?!"]);
    assert_eq!((ptn.moves[1].line, ptn.moves[1].column), (4, 27));
    assert_eq!((ptn.moves[2].line, ptn.moves[2].column), (5, 3));
    assert_eq!((ptn.moves[3].line, ptn.moves[3].column), (5, 10));
    assert_eq!(ptn.result, Some(GameResult::Win { color: Color::White, kind: WinKind::Other }));
    assert_eq!(ptn.replay().unwrap().result(), None);
    for (k, half) in [("0", 0), ("2", 4), ("2.5", 5)] {
        let p = Ptn::parse(&format!("[Size \"6\"][Komi \"{k}\"]")).unwrap();
        assert_eq!(p.half_komi(), half);
        assert_eq!(p.start_position().unwrap().half_komi(), half);
    }
    // The result token alone gives the result; `0-0` means unknown.
    assert_eq!(
        Ptn::parse("[Size \"3\"] 1. a1 c3 0-R").unwrap().result.and_then(GameResult::winner),
        Some(Color::Black)
    );
    assert_eq!(Ptn::parse("[Size \"3\"] 1. a1 c3 0-0").unwrap().result, None);
    assert_eq!(Ptn::parse("[Size \"3\"][Result \"1/2-1/2\"] 1. a1 c3").unwrap().result, Some(GameResult::Draw));
    // Unnumbered moves are fine.
    assert_eq!(Ptn::parse("[Size \"3\"] a1 c3 b2").unwrap().moves.len(), 3);
}

#[test]
fn tps_start_with_black_to_move() {
    let tps = "2,x2/x,1,x/x3 2 2";
    let start = parse_tps(tps).unwrap();
    for body in ["2... c1 3. a1", "2. c1 3. a1", "c1 a1"] {
        let ptn = Ptn::parse(&format!("[TPS \"{tps}\"]\n{body}")).unwrap_or_else(|e| panic!("{body}: {e}"));
        assert_eq!(ptn.size(), 3);
        let replay = ptn.replay().unwrap();
        assert_eq!(replay.start(), &start);
        assert_eq!(replay.final_position().ply(), start.ply() + 2);
        assert_eq!(replay.final_position().side_to_move(), Color::Black);
        let written = ptn.to_string();
        assert!(written.contains("2... c1\n3. a1"), "{written}");
        let mvs = |p: &Ptn| p.moves.iter().map(|m| m.mv).collect::<Vec<_>>();
        assert_eq!(mvs(&Ptn::parse(&written).unwrap()), mvs(&ptn));
    }
    // The German form of the TPS tag.
    let ptn = Ptn::parse("[TPS \"2,x2/x,1,x/x3\" 2 2]\n2... c1").unwrap();
    assert_eq!(ptn.replay().unwrap().start(), &start);
    // Black's move number after white's is wrong here: an error only in strict mode.
    let e = Ptn::parse_strict(&format!("[TPS \"{tps}\"]\n2. c1 2... a1")).unwrap_err();
    assert!(matches!(e.kind, PtnErrorKind::WrongMoveNumber { .. }), "{e}");
    assert_eq!((e.line, e.column), (2, 7));
}

#[test]
fn real_world_quirks_are_warnings_not_errors() {
    // A puzzle: the TPS starts at move 2 (white to move), the moves restart at `1.`.
    let tps = "2,x2/x,1,x/x3 1 2";
    let ptn = Ptn::parse(&format!("[TPS \"{tps}\"]\n1. c1 a1 2. c3 b1")).unwrap();
    assert_eq!(ptn.replay().unwrap().moves().len(), 4);
    assert_eq!(ptn.warnings.len(), 1, "one warning per game for its numbering: {:?}", ptn.warnings);
    let w = &ptn.warnings[0];
    assert!(matches!(w.kind, PtnErrorKind::WrongMoveNumber { .. }) && (w.line, w.column) == (2, 1), "{w}");
    assert!(w.to_string().contains("found move number \"1.\" where 2. was expected"), "{w}");
    assert_eq!(Ptn::parse_strict(&format!("[TPS \"{tps}\"]\n1. c1 a1")).unwrap_err(), w.clone());
    // ptn.ninja: `--` before black's first move when black moves first; no warning.
    let ptn = Ptn::parse("[TPS \"2,x2/x,1,x/x3 2 2\"]\n2. -- c1\n3. a1 --").unwrap();
    assert_eq!((ptn.moves.len(), ptn.warnings.len()), (2, 0), "{:?}", ptn.warnings);
    // A placeholder in the middle is ignored with a warning.
    let ptn = Ptn::parse("[Size \"3\"] 1. a1 -- c3").unwrap();
    assert_eq!(ptn.moves.len(), 2);
    assert!(matches!(ptn.warnings[0].kind, PtnErrorKind::Placeholder));
    // Comments, marks and annotations as playtak and ptn.ninja write them.
    let text = "[Site \"PlayTak.com\"]\n[Size \"5\"]\n[Komi \"2\"]\n[Result \"R-0\"]\n\n\
                1. a5 {opening} e1\n2. a4 b1'\n3. b4!? c1?!\n4. Cc4 d1\n5. d4'' {a\nlong comment} a1\n6. e4\" R-0\n";
    let ptn = Ptn::parse(text).unwrap();
    assert!(ptn.warnings.is_empty(), "{:?}", ptn.warnings);
    assert_eq!(ptn.moves.len(), 11);
    assert_eq!(ptn.replay().unwrap().result(), ptn.result);
    // Doubled and malformed numbers: one warning, the moves read.
    for body in ["1. 1. a1 c3", "1.. a1 c3", "1... a1 c3"] {
        let ptn = Ptn::parse(&format!("[Size \"5\"] {body}")).unwrap_or_else(|e| panic!("{body}: {e}"));
        assert_eq!((ptn.moves.len(), ptn.warnings.len()), (2, 1), "{body}");
    }
    // A result token that disagrees with the Result tag: the token wins, with a warning.
    let ptn = Ptn::parse("[Size \"5\"][Result \"R-0\"] 1. a1 e5 0-R").unwrap();
    assert_eq!(ptn.result.and_then(GameResult::winner), Some(Color::Black));
    assert!(matches!(ptn.warnings[0].kind, PtnErrorKind::ResultMismatch { .. }));
}

#[test]
fn flats_and_caps_tags_set_reserves() {
    let ptn = Ptn::parse("[Size \"4\"][Flats \"3\"][Caps \"1\"]\n1. a1 d4 2. Cb2 Cc3 3. b1 c4").unwrap();
    let replay = ptn.replay().unwrap();
    assert_eq!(replay.start().reserves(Color::White), (3, 1));
    let end = replay.final_position();
    assert_eq!(end.reserves(Color::White), (1, 0));
    assert_eq!(end.reserves(Color::Black), (1, 0));
    // One more placement of white's last stone ends the game on reserves.
    let ptn = Ptn::parse("[Size \"4\"][Flats \"3\"][Caps \"1\"]\n1. a1 d4 2. Cb2 Cc3 3. b1 c4 4. a4 b4 F-0").unwrap();
    let err = ptn.replay().unwrap_err();
    assert!(matches!(err.kind, PtnErrorKind::MoveAfterEnd { .. }), "{err}");
    assert_eq!((err.line, err.column), (2, 36));
}

fn err_at(text: &str) -> (usize, usize, PtnErrorKind) {
    let e = Ptn::parse_strict(text).unwrap_err();
    // The Display names the place.
    assert!(e.to_string().starts_with(&format!("line {}, column {}: ", e.line, e.column)), "{e}");
    (e.line, e.column, e.kind)
}

#[test]
fn malformed_ptn_reports_line_and_column() {
    // A bad direction: the column points at the offending character.
    let (l, c, k) = err_at("[Size \"5\"]\n\n1. a1 e5\n2. 2b3* c4");
    assert_eq!((l, c), (4, 7));
    assert!(
        matches!(k, PtnErrorKind::Move { ref text, error: PtnMoveError::ExpectedDirection { found: Some('*'), .. } } if text == "2b3*")
    );
    let e = Ptn::parse("[Size \"5\"]\n\n1. a1 e5\n2. 2b3* c4").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 4, column 7: unknown direction '*' at offset 3: expected + - < or > in move \"2b3*\""
    );
    // An unknown character after a move.
    let (l, c, k) = err_at("[Size \"5\"]\n1. a1 e5x");
    assert_eq!((l, c), (2, 9));
    assert!(matches!(k, PtnErrorKind::Move { error: PtnMoveError::UnexpectedChar { ch: 'x', offset: 2 }, .. }));
    // Off the board.
    let (l, c, k) = err_at("[Size \"4\"]\n1. a1 e4");
    assert_eq!((l, c), (2, 7));
    assert!(matches!(k, PtnErrorKind::Move { error: PtnMoveError::BadSquare { size: 4, .. }, .. }));
    // Carry limit and drop sums.
    assert!(matches!(
        err_at("[Size \"3\"] 1. a1 c3 2. 4a1+").2,
        PtnErrorKind::Move { error: PtnMoveError::CountTooLarge { count: 4, .. }, .. }
    ));
    assert!(matches!(
        err_at("[Size \"5\"] 1. a1 c3 2. 3a1+11").2,
        PtnErrorKind::Move { error: PtnMoveError::DropSum { sum: 2, count: 3, .. }, .. }
    ));
    assert!(matches!(
        err_at("[Size \"5\"] 1. a1 c3 2. 0a1+").2,
        PtnErrorKind::Move { error: PtnMoveError::ZeroCount { .. }, .. }
    ));
    // Unclosed comment: reported where it opens.
    assert_eq!(err_at("[Size \"5\"]\n1. a1 {oops\n e5\n"), (2, 7, PtnErrorKind::UnterminatedComment));
    assert_eq!(err_at("[Size \"5\"]\n1. a1 } e5\n"), (2, 7, PtnErrorKind::UnmatchedBrace));
    // Tags.
    assert_eq!(err_at("[Size \"5\"\n1. a1").2, PtnErrorKind::UnterminatedTag);
    assert_eq!(err_at("[Size \"5]").2, PtnErrorKind::UnterminatedString);
    assert_eq!(err_at("[Site \"x\"]\n1. a1"), (1, 1, PtnErrorKind::MissingSize));
    let (l, c, k) = err_at("[Player1 \"x\"]\n  [Size \"9\"]");
    assert_eq!((l, c), (2, 3));
    assert!(matches!(k, PtnErrorKind::BadTag { ref name, .. } if name == "Size"));
    assert!(matches!(err_at("[Size \"5\"][Komi \"two\"]").2, PtnErrorKind::BadTag { .. }));
    assert!(matches!(err_at("[Size \"5\"][Result \"2-0\"]").2, PtnErrorKind::BadTag { .. }));
    assert!(matches!(err_at("[Size \"5\"][Flats \"300\"]").2, PtnErrorKind::BadTag { .. }));
    assert!(matches!(err_at("[Size \"5\"][Flats \"100\"]").2, PtnErrorKind::BadTag { .. }));
    let (l, c, k) = err_at("[Size \"5\"]\n[TPS \"x5/x5/x5/x5 1 1\"]");
    assert_eq!((l, c), (2, 1));
    assert!(matches!(k, PtnErrorKind::Tps(_)));
    assert!(matches!(err_at("[Size \"5\"] 1. a1 [Komi \"2\"]").2, PtnErrorKind::TagAfterMoves { .. }));
    // Move numbers.
    assert!(matches!(err_at("[Size \"5\"] 1. a1 e5 3. a2").2, PtnErrorKind::WrongMoveNumber { .. }));
    assert!(matches!(err_at("[Size \"5\"] 1. a1 2. e5").2, PtnErrorKind::WrongMoveNumber { .. }));
    assert!(matches!(err_at("[Size \"5\"] 1... a1").2, PtnErrorKind::WrongMoveNumber { .. }));
    assert!(matches!(err_at("[Size \"5\"] 1. 1. a1").2, PtnErrorKind::DoubleMoveNumber { .. }));
    assert!(matches!(err_at("[Size \"5\"] 1.. a1").2, PtnErrorKind::BadMoveNumber { .. }));
    // Results.
    let (l, c, k) = err_at("[Size \"5\"]\n1. a1 e5 R-0 2. a2");
    assert_eq!((l, c), (2, 14));
    assert!(matches!(k, PtnErrorKind::AfterResult { .. }));
    assert!(matches!(err_at("[Size \"5\"][Result \"R-0\"] 1. a1 e5 0-R").2, PtnErrorKind::ResultMismatch { .. }));
}

#[test]
fn illegal_moves_are_reported_with_their_place() {
    // Black's first move on the occupied a1, on line 3.
    let ptn = Ptn::parse("[Size \"5\"]\n1. c3 d3\n2. e1 c3\n").unwrap();
    let e = ptn.replay().unwrap_err();
    assert_eq!((e.line, e.column), (3, 7));
    assert_eq!(
        e.kind,
        PtnErrorKind::IllegalMove {
            text: "c3".into(),
            move_number: 2,
            color: Color::Black,
            error: RulesError::Occupied
        }
    );
    assert!(e.to_string().contains("black's move 2"), "{e}");
    // A wall on the first turn.
    let e = Ptn::parse("[Size \"5\"]\n1. Sc3").unwrap().replay().unwrap_err();
    assert_eq!(
        e.kind,
        PtnErrorKind::IllegalMove {
            text: "Sc3".into(),
            move_number: 1,
            color: Color::White,
            error: RulesError::OpeningPlacementOnly
        }
    );
    // Spreading an opponent's stack.
    // (1. a1 puts a black stone on a1.)
    let e = Ptn::parse("[Size \"5\"]\n1. a1 e5\n2. a1+ ").unwrap().replay().unwrap_err();
    assert!(matches!(e.kind, PtnErrorKind::IllegalMove { error: RulesError::NotYourStack, .. }), "{e}");
    assert_eq!((e.line, e.column), (3, 4));
}

#[test]
fn moves_after_a_road_are_rejected() {
    // White builds a road on rank 1 of a 3x3 board, then a further move follows.
    let ptn = Ptn::parse("[Size \"3\"]\n1. c3 a1 2. b1 c2 3. c1 b2 4. a2").unwrap();
    let e = ptn.replay().unwrap_err();
    assert!(
        matches!(
            e.kind,
            PtnErrorKind::MoveAfterEnd { result: GameResult::Win { color: Color::White, kind: WinKind::Road }, .. }
        ),
        "{e}"
    );
    assert_eq!((e.line, e.column), (2, 25));
    assert_eq!(
        e.kind,
        PtnErrorKind::MoveAfterEnd {
            text: "b2".into(),
            move_number: 3,
            color: Color::Black,
            result: GameResult::Win { color: Color::White, kind: WinKind::Road },
        }
    );
}

#[test]
fn writer_builds_games_from_moves() {
    let mut pos = Position::with_options(bredon_rules::GameOptions::new(6).with_half_komi(4)).unwrap();
    let start = pos.clone();
    let mut moves = Vec::new();
    for _ in 0..20 {
        let legal = pos.legal_moves();
        let Some(&mv) = legal.get(legal.len() / 3) else { break };
        pos.play(mv).unwrap();
        moves.push(mv);
    }
    let ptn = Ptn::from_moves(&start, &moves, pos.result());
    assert_eq!(ptn.tag("Komi"), Some("2"));
    let text = ptn.to_string();
    let back = Ptn::parse(&text).unwrap();
    assert_eq!(back.half_komi(), 4);
    assert_eq!(back.replay().unwrap().final_position(), &pos);
    // From a mid-game position.
    let ptn = Ptn::from_moves(&pos, &[], None);
    let back = Ptn::parse(&ptn.to_string()).unwrap();
    assert_eq!(back.replay().unwrap().start(), &pos);
}
