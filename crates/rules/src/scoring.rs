//! Scoring from the rule texts (N² plus the winner's reserve) and the three variants,
//! and "Tak" (road-in-one) detection.

use crate::bitboard::Bitboard;
use crate::moves::Move;
use crate::position::Position;
use crate::types::{Color, GameResult, WinKind};

/// Which scoring rule to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ScoringVariant {
    /// N² plus the pieces left in the winner's reserve.
    #[default]
    Standard,
    /// "Double the line": a straight winning road doubles the reserve points.
    Downings,
    /// "Double the capstone": a winner who never played a capstone doubles the reserve
    /// points (only in games that have capstones).
    Middletown,
    /// "Low road, high road": a road only of single pieces doubles the reserve points, a
    /// road only of stacks taller than one triples them.
    Tarway,
}

/// The score of a decided game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Score {
    /// Who scores.
    pub winner: Color,
    /// Points: N² plus the (possibly multiplied) reserve.
    pub points: u32,
}

/// Scores a finished game: `None` for a draw. `pos` is the final position.
pub fn score(pos: &Position, result: GameResult, variant: ScoringVariant) -> Option<Score> {
    let winner = result.winner()?;
    let n = pos.size() as u32;
    let (stones, caps) = pos.reserves(winner);
    let reserve = stones as u32 + caps as u32;
    let road = matches!(result, GameResult::Win { kind: WinKind::Road, .. });
    let info = pos.info();
    let road_sq = pos.road_squares(winner);
    let multiplier = match variant {
        ScoringVariant::Standard => 1,
        ScoringVariant::Downings if road && has_straight_line(pos, road_sq) => 2,
        ScoringVariant::Middletown if pos.options().caps > 0 && caps == pos.options().caps => 2,
        ScoringVariant::Tarway if road => {
            let (low, high) = height_split(pos, road_sq);
            if info.has_road(high) {
                3
            } else if info.has_road(low) {
                2
            } else {
                1
            }
        }
        _ => 1,
    };
    Some(Score { winner, points: n * n + multiplier * reserve })
}

/// Whether `squares` contain a complete row or column.
fn has_straight_line(pos: &Position, squares: Bitboard) -> bool {
    let info = pos.info();
    let n = info.size;
    (0..n).any(|i| {
        let row = info.bottom << (i * n);
        let col = info.left << i;
        squares & row == row || squares & col == col
    })
}

/// Splits `squares` into (height 1, height > 1).
fn height_split(pos: &Position, squares: Bitboard) -> (Bitboard, Bitboard) {
    let (mut low, mut high) = (0, 0);
    for sq in crate::bitboard::BitIter(squares) {
        if pos.height(sq) == 1 {
            low |= 1 << sq.index();
        } else {
            high |= 1 << sq.index();
        }
    }
    (low, high)
}

impl Position {
    /// The moves with which the side to move wins by road right now.
    pub fn road_wins_in_one(&self) -> Vec<Move> {
        if self.result().is_some() {
            return Vec::new();
        }
        let me = self.side_to_move();
        let mut pos = self.clone();
        let mut moves = Vec::new();
        pos.generate_moves(&mut moves);
        moves.retain(|&mv| {
            let undo = pos.make(mv);
            let wins = pos.result() == Some(GameResult::Win { color: me, kind: WinKind::Road });
            pos.unmake(mv, undo);
            wins
        });
        moves
    }

    /// "Tak": the player who just moved could complete a road with their next move if the
    /// opponent did nothing about it.
    pub fn is_tak(&self) -> bool {
        if self.result().is_some() || self.ply() < 2 {
            return false;
        }
        let mut passed = self.clone();
        passed.pass_turn();
        !passed.road_wins_in_one().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notation::parse_tps;

    #[test]
    fn road_scores_and_variants() {
        // White has a straight road of single flats across rank 1 on 4x4.
        let pos = parse_tps("x4/x4/2,2,2,x/1,1,1,1 2 4").unwrap();
        let result = pos.result().unwrap();
        assert_eq!(result, GameResult::Win { color: Color::White, kind: WinKind::Road });
        let (stones, _) = pos.reserves(Color::White);
        assert_eq!(stones, 11);
        let std = score(&pos, result, ScoringVariant::Standard).unwrap();
        assert_eq!(std.points, 16 + 11);
        assert_eq!(score(&pos, result, ScoringVariant::Downings).unwrap().points, 16 + 22);
        assert_eq!(score(&pos, result, ScoringVariant::Tarway).unwrap().points, 16 + 22);
        // No capstones on 4x4: Middletown does not apply.
        assert_eq!(score(&pos, result, ScoringVariant::Middletown).unwrap().points, 16 + 11);
    }

    #[test]
    fn bent_tall_road() {
        // A bent road of stacks of height 2 on 4x4: no straight line, Tarway triples.
        let pos = parse_tps("x4/x4/x,21,21,21/21,21,x2 2 8").unwrap();
        let result = pos.result().unwrap();
        assert_eq!(result.winner(), Some(Color::White));
        let reserve = pos.reserves(Color::White).0 as u32;
        assert_eq!(score(&pos, result, ScoringVariant::Downings).unwrap().points, 16 + reserve);
        assert_eq!(score(&pos, result, ScoringVariant::Tarway).unwrap().points, 16 + 3 * reserve);
    }

    #[test]
    fn tak_detection() {
        // White threatens a1-b1-c1-d1 with d1 empty; black to move: white said "Tak".
        let pos = parse_tps("x4/x4/2,2,x2/1,1,1,x 2 4").unwrap();
        assert!(pos.is_tak());
        // Black to move has no road in one itself.
        assert!(pos.road_wins_in_one().is_empty());
        let mut white = pos.clone();
        white.pass_turn();
        let wins: Vec<String> = white.road_wins_in_one().iter().map(|m| m.to_ptn(4)).collect();
        assert!(wins.contains(&"d1".to_string()), "{wins:?}");
        assert!(!parse_tps("x4/x4/2,2,x2/1,x,1,x 2 4").unwrap().is_tak());
    }
}
