//! The tactical queries against the slow reference (play every legal move and look at
//! the result), on every position of the real games and of random playouts.

use bredon_rules::notation::Ptn;
use bredon_rules::testdata::shared_data_dir;
use bredon_rules::{GameOptions, Move, Position};
use proptest::prelude::*;

use bredon_rules::tactics::immediate_wins_by_trying as wins_by_trying;

/// Checks the fast queries on `pos`; returns whether the side to move had a win.
fn check(pos: &Position) -> Result<bool, String> {
    let slow = wins_by_trying(pos);
    let mut fast = Vec::new();
    pos.immediate_wins(&mut fast);
    fast.sort();
    if fast != slow {
        let names = |v: &[Move]| v.iter().map(|m| m.to_ptn(pos.size())).collect::<Vec<_>>().join(" ");
        return Err(format!("{pos:?}: fast [{}] slow [{}]", names(&fast), names(&slow)));
    }
    match pos.find_immediate_win() {
        Some(mv) if !slow.contains(&mv) => return Err(format!("{pos:?}: find_immediate_win gave a non-win")),
        None if !slow.is_empty() => return Err(format!("{pos:?}: find_immediate_win missed a win")),
        _ => {}
    }
    if pos.result().is_none() && !pos.is_opening() {
        let mut passed = pos.clone();
        passed.pass_turn();
        let threat = !wins_by_trying(&passed).is_empty();
        if pos.opponent_threatens() != threat {
            return Err(format!("{pos:?}: opponent_threatens is {} but the opponent's wins say {threat}", !threat));
        }
        check_losing_moves(pos)?;
    }
    Ok(!slow.is_empty())
}

/// `losing_move_indices` and `move_loses_at_once` against playing each move and trying
/// every reply: a move loses at once when it ends the game for the opponent or leaves
/// the opponent an immediate win.
fn check_losing_moves(pos: &Position) -> Result<(), String> {
    let me = pos.side_to_move();
    let moves = pos.legal_moves();
    let slow: Vec<u16> = (0..moves.len() as u16)
        .filter(|&i| {
            let mut after = pos.clone();
            after.play(moves[i as usize]).unwrap();
            match after.result() {
                Some(r) => r.winner() == Some(me.opposite()),
                None => !wins_by_trying(&after).is_empty(),
            }
        })
        .collect();
    let mut p = pos.clone();
    let fast = p.losing_move_indices(&moves);
    if p != *pos {
        return Err(format!("{pos:?}: losing_move_indices changed the position"));
    }
    if fast != slow {
        let names = |v: &[u16]| v.iter().map(|&i| moves[i as usize].to_ptn(pos.size())).collect::<Vec<_>>().join(" ");
        return Err(format!("{pos:?}: losing moves fast [{}] slow [{}]", names(&fast), names(&slow)));
    }
    let want_losing: Vec<Move> = slow.iter().map(|&i| moves[i as usize]).collect();
    let want_open: Vec<Move> = moves.iter().copied().filter(|mv| !want_losing.contains(mv)).collect();
    if p.partition_losing_moves(&moves) != (want_losing, want_open) {
        return Err(format!("{pos:?}: partition_losing_moves disagrees with the losing moves"));
    }
    for (i, &mv) in moves.iter().enumerate() {
        if p.move_loses_at_once(mv) != slow.contains(&(i as u16)) {
            return Err(format!("{pos:?}: move_loses_at_once({}) disagrees", mv.to_ptn(pos.size())));
        }
    }
    Ok(())
}

#[test]
fn real_game_positions_agree_with_the_reference() {
    let dir = shared_data_dir().expect("shared/data not found; set BREDON_SHARED_DATA").join("games");
    let mut positions = 0;
    let mut with_wins = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "ptn") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let replay = Ptn::parse(&text).unwrap().replay().unwrap();
        for pos in replay.positions() {
            positions += 1;
            with_wins += check(pos).unwrap_or_else(|e| panic!("{}: {e}", path.display())) as usize;
        }
    }
    assert!(positions > 100, "only {positions} positions");
    // Games that end in a road contain the position before the winning move.
    assert!(with_wins > 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_playouts_agree_with_the_reference(
        size in 3usize..=8,
        half_komi in -2i8..=4,
        walls in 0u32..4,
        choices in prop::collection::vec(any::<u32>(), 0..200),
    ) {
        let mut pos = Position::with_options(GameOptions::new(size).with_half_komi(half_komi)).unwrap();
        for &c in &choices {
            check(&pos).map_err(TestCaseError::fail)?;
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            // Bias towards flats and spreads now and then so roads form.
            let mut mv = moves[c as usize % moves.len()];
            let flat = Move::place(mv.square(), bredon_rules::PieceKind::Flat);
            if c % 4 >= walls && mv.is_placement() && pos.is_legal(flat) {
                mv = flat;
            }
            pos.play(mv).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        }
        check(&pos).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn forced_wins_in_three_are_forced(
        size in 3usize..=5,
        choices in prop::collection::vec(any::<u32>(), 4..40),
    ) {
        let mut pos = Position::new(size).unwrap();
        for &c in &choices {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            pos.play(moves[c as usize % moves.len()]).unwrap();
        }
        let me = pos.side_to_move();
        for mv in pos.forced_wins_in_three() {
            let mut p = pos.clone();
            p.play(mv).unwrap();
            prop_assert!(p.result().is_none());
            prop_assert!(p.find_immediate_win().is_none());
            for reply in p.legal_moves() {
                let mut q = p.clone();
                q.play(reply).unwrap();
                let won = q.result().is_some_and(|r| r.winner() == Some(me));
                prop_assert!(won || !wins_by_trying(&q).is_empty(), "{:?} {} {}", pos, mv.to_ptn(size), reply.to_ptn(size));
            }
        }
    }
}
