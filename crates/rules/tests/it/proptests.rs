//! Property tests over random legal playouts on sizes 3 to 8: make/unmake, incremental
//! hashing, TPS and PTN round trips, checked play of every generated move, piece
//! conservation; and the notation parsers never panic.

use bredon_rules::notation::{Ptn, parse_move, parse_tps, parse_tps_with, write_move, write_tps};
use bredon_rules::{Color, GameOptions, Move, PieceKind, Position, RulesError, Square};
use proptest::prelude::*;

/// Pieces of `color` of stone (flat/wall) kind and capstone kind on the board.
fn on_board(pos: &Position, color: Color) -> (usize, usize) {
    let n = pos.size();
    let (mut stones, mut caps) = (0, 0);
    for i in 0..n * n {
        for p in pos.stack(Square(i as u8)).pieces() {
            if p.color == color {
                match p.kind {
                    PieceKind::Cap => caps += 1,
                    PieceKind::Flat | PieceKind::Wall => stones += 1,
                }
            }
        }
    }
    (stones, caps)
}

fn check_conservation(pos: &Position) -> Result<(), TestCaseError> {
    let opts = pos.options();
    for color in Color::ALL {
        let (stones, caps) = on_board(pos, color);
        let (rs, rc) = pos.reserves(color);
        prop_assert_eq!(stones + rs as usize, opts.stones as usize, "{:?} stones in {:?}", color, pos);
        prop_assert_eq!(caps + rc as usize, opts.caps as usize, "{:?} caps in {:?}", color, pos);
    }
    Ok(())
}

/// The long PTN form: always the count, and the drops.
fn long_form(mv: Move, size: usize) -> String {
    let sq = mv.square().name(size);
    if mv.is_placement() {
        return format!("{}{}", mv.kind().letter(), sq);
    }
    let drops: String = mv.drops().map(|d| (b'0' + d) as char).collect();
    format!("{}{}{}{}", mv.carry(), sq, mv.direction().symbol(), drops)
}

/// Checks every property on `pos` and all its generated moves.
fn check_position(pos: &mut Position) -> Result<Vec<Move>, TestCaseError> {
    let n = pos.size();
    prop_assert_eq!(pos.hash(), pos.compute_hash());
    check_conservation(pos)?;

    // TPS round trip, with the game's options.
    let tps = write_tps(pos);
    let back = parse_tps_with(&tps, Some(pos.options()), 0).map_err(|e| TestCaseError::fail(format!("{tps}: {e}")))?;
    prop_assert_eq!(&back, &*pos, "TPS {}", tps);
    prop_assert_eq!(back.hash(), pos.hash());
    prop_assert_eq!(write_tps(&back), tps);

    let mut moves = Vec::new();
    pos.generate_moves(&mut moves);
    prop_assert_eq!(pos.count_moves(), moves.len() as u64, "count_moves in {:?}", pos);
    let over = pos.result().is_some();
    let before = pos.clone();
    for &mv in &moves {
        // Notation round trips.
        let short = write_move(mv, n);
        prop_assert_eq!(parse_move(&short, n), Ok(mv), "short form {}", short);
        let long = long_form(mv, n);
        prop_assert_eq!(parse_move(&long, n), Ok(mv), "long form {}", long);
        prop_assert_eq!(parse_move(&format!("{long}*''?!"), n), Ok(mv));

        // Checked play accepts every generated move (unless the game is over).
        let mut checked = pos.clone();
        match checked.play(mv) {
            Ok(_) => prop_assert!(!over),
            Err(RulesError::GameOver) => prop_assert!(over),
            Err(e) => return Err(TestCaseError::fail(format!("{short} rejected in {pos:?}: {e}"))),
        }

        // make/unmake restores everything, hash included; make keeps the hash exact.
        let undo = pos.make(mv);
        prop_assert_eq!(pos.hash(), pos.compute_hash(), "after {} from {:?}", short, before);
        if !over {
            prop_assert_eq!(&*pos, &checked);
        }
        check_conservation(pos)?;
        pos.unmake(mv, undo);
        prop_assert_eq!(&*pos, &before, "unmake {}", short);
        prop_assert_eq!(pos.hash(), before.hash());
    }
    Ok(moves)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_playouts(size in 3usize..=8, half_komi in -4i8..=6, choices in prop::collection::vec(any::<u32>(), 0..300)) {
        let start = Position::with_options(GameOptions::new(size).with_half_komi(half_komi)).unwrap();
        let mut pos = start.clone();
        let mut played = Vec::new();
        for &c in &choices {
            let moves = check_position(&mut pos)?;
            if pos.result().is_some() {
                break;
            }
            prop_assert!(!moves.is_empty(), "no moves in a live position {:?}", pos);
            let mv = moves[c as usize % moves.len()];
            pos.play(mv).map_err(|e| TestCaseError::fail(format!("{e}")))?;
            played.push(mv);
        }
        check_position(&mut pos)?;
        if let Some(r) = pos.result() {
            prop_assert_eq!(pos.legal_moves().len(), 0);
            let any = Move::place(Square(0), PieceKind::Flat);
            prop_assert_eq!(pos.clone().play(any), Err(RulesError::GameOver));
            prop_assert!(r.winner().is_some() || half_komi % 2 == 0);
        }

        // The game as PTN: written, read back and replayed to the same position.
        let ptn = Ptn::from_moves(&start, &played, pos.result());
        let text = ptn.to_string();
        let back = Ptn::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let replay = back.replay().map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(replay.final_position(), &pos);
        prop_assert_eq!(replay.result(), pos.result());
        prop_assert_eq!(back.result, pos.result());

        // And from a mid-game position as TPS (this may start with black to move).
        let mid = played.len() / 2;
        if let Some(mid_pos) = replay.position_at(mid) {
            let ptn = Ptn::from_moves(mid_pos, &played[mid..], pos.result());
            let text = ptn.to_string();
            let back = Ptn::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            let replay = back.replay().map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(replay.start(), mid_pos);
            prop_assert_eq!(replay.final_position(), &pos);
        }
    }

    #[test]
    fn parse_move_never_panics(text in "\\PC{0,12}", size in 0usize..12) {
        let _ = parse_move(&text, size);
    }

    #[test]
    fn parse_move_never_panics_on_near_moves(text in "[FSC]?[0-9]{0,2}[a-i][0-9]{1,2}[-+<>]?[0-9]{0,9}[SCF]?[*'\"!?]{0,3}", size in 3usize..=8) {
        if let Ok(mv) = parse_move(&text, size) {
            // Whatever parses is written back to an equivalent move.
            prop_assert_eq!(parse_move(&write_move(mv, size), size), Ok(mv));
        }
    }

    #[test]
    fn tps_parser_never_panics(text in "[x12SC,/0-9 ]{0,40}") {
        if let Ok(p) = parse_tps(&text) {
            let again = parse_tps(&write_tps(&p)).map_err(|e| TestCaseError::fail(format!("{e}")))?;
            prop_assert_eq!(write_tps(&again), write_tps(&p));
        }
    }

    #[test]
    fn ptn_parser_never_panics(text in "(\\[(Size|TPS|Komi|Result|Flats|Caps) \"[0-9x,/ .12SC-]{0,12}\"\\] ?){0,3}[0-9a-f. +<>\\-{}SCF*'R/\n]{0,40}") {
        if let Ok(ptn) = Ptn::parse(&text) {
            let _ = ptn.replay();
            let _ = Ptn::parse(&ptn.to_string());
        }
    }

    #[test]
    fn ptn_parser_never_panics_on_any_text(text in "\\PC{0,60}") {
        if let Ok(ptn) = Ptn::parse(&text) {
            let _ = ptn.replay();
        }
    }
}
