//! TPS (Tak Positional System): `rows player move`, rows from the top rank down.

use crate::position::{GameOptions, Position};
use crate::types::{Color, MAX_SIZE, MIN_SIZE, Piece, PieceKind, Square};

/// Why a TPS string was rejected. Columns are 1-based character positions in the string.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TpsError {
    /// Not three space-separated fields.
    #[error("TPS needs three fields `rows player move`, found {0}")]
    Fields(usize),
    /// The number of rows is not a supported board size.
    #[error("TPS has {0} rows; sizes 3 to 8 are supported")]
    BadSize(usize),
    /// The board size does not match the one required.
    #[error("TPS is for size {found}, expected {expected}")]
    WrongSize {
        /// Size required by the caller (e.g. the PTN `Size` tag).
        expected: usize,
        /// Size of the TPS.
        found: usize,
    },
    /// A row has the wrong number of squares.
    #[error("row {row} (from the top) has {found} squares, expected {expected}")]
    RowLength {
        /// Row counted from the top, 1-based.
        row: usize,
        /// Squares found.
        found: usize,
        /// Board size.
        expected: usize,
    },
    /// An unexpected character in a square.
    #[error("unexpected {ch:?} at column {column} in square {square:?}")]
    BadSquare {
        /// Offending character.
        ch: char,
        /// Position in the TPS string (1-based).
        column: usize,
        /// The square's text.
        square: String,
    },
    /// Player field not `1` or `2`.
    #[error("player to move must be 1 or 2, found {0:?}")]
    BadPlayer(String),
    /// Move number not an integer from 1 to 30000.
    #[error("move number must be an integer from 1 to 30000, found {0:?}")]
    BadMoveNumber(String),
    /// More pieces of a kind on the board than the reserves allow.
    #[error("{color} has more {what} on the board than its reserve of {reserve}")]
    TooManyPieces {
        /// Whose pieces.
        color: Color,
        /// "stones" or "capstones".
        what: &'static str,
        /// Starting reserve.
        reserve: u8,
    },
}

/// Parses a TPS string with standard reserves for its size and no komi.
pub fn parse_tps(tps: &str) -> Result<Position, TpsError> {
    parse_tps_with(tps, None, 0)
}

/// Parses TPS. `options` overrides reserves (its size must match); `half_komi` is used
/// when `options` is `None`.
pub fn parse_tps_with(tps: &str, options: Option<GameOptions>, half_komi: i8) -> Result<Position, TpsError> {
    let fields: Vec<&str> = tps.split_whitespace().collect();
    if fields.len() != 3 {
        return Err(TpsError::Fields(fields.len()));
    }
    let rows_text = fields[0];
    let base = tps.find(rows_text).unwrap_or(0);
    let rows: Vec<&str> = rows_text.split('/').collect();
    let size = rows.len();
    if !(MIN_SIZE..=MAX_SIZE).contains(&size) {
        return Err(TpsError::BadSize(size));
    }
    let opts = match options {
        Some(o) if o.size != size => return Err(TpsError::WrongSize { expected: o.size, found: size }),
        Some(o) => o,
        None => GameOptions::new(size).with_half_komi(half_komi),
    };
    let mut stacks: Vec<Vec<Piece>> = vec![Vec::new(); size * size];
    let mut offset = base;
    for (ri, row) in rows.iter().enumerate() {
        let board_row = size - 1 - ri;
        let mut col = 0usize;
        for sq_text in row.split(',') {
            let sq_offset = offset;
            offset += sq_text.len() + 1;
            let bad = |ch: char, at: usize| TpsError::BadSquare {
                ch,
                column: sq_offset + at + 1,
                square: sq_text.to_string(),
            };
            if let Some(rest) = sq_text.strip_prefix('x') {
                let count = if rest.is_empty() {
                    1
                } else {
                    match rest.parse::<usize>() {
                        Ok(k) if (1..=MAX_SIZE).contains(&k) => k,
                        _ => return Err(bad(rest.chars().next().unwrap_or('x'), 1)),
                    }
                };
                col += count;
                continue;
            }
            if sq_text.is_empty() {
                return Err(bad(',', 0));
            }
            let mut pieces = Vec::new();
            let chars: Vec<char> = sq_text.chars().collect();
            for (at, &ch) in chars.iter().enumerate() {
                match ch {
                    '1' | '2' => {
                        pieces.push(Piece::new(if ch == '1' { Color::White } else { Color::Black }, PieceKind::Flat))
                    }
                    'S' | 'C' if at + 1 == chars.len() && !pieces.is_empty() => {
                        pieces.last_mut().unwrap().kind = if ch == 'S' { PieceKind::Wall } else { PieceKind::Cap };
                    }
                    _ => return Err(bad(ch, at)),
                }
            }
            if col < size {
                stacks[Square::from_coords(col, board_row, size).index()] = pieces;
            }
            col += 1;
        }
        if col != size {
            return Err(TpsError::RowLength { row: ri + 1, found: col, expected: size });
        }
    }
    let to_move = match fields[1] {
        "1" => Color::White,
        "2" => Color::Black,
        other => return Err(TpsError::BadPlayer(other.to_string())),
    };
    // Plies are counted in a u16: the move number must leave room to play on.
    let move_number: u16 = match fields[2].parse() {
        Ok(m) if (1..=30_000).contains(&m) => m,
        _ => return Err(TpsError::BadMoveNumber(fields[2].to_string())),
    };
    for color in Color::ALL {
        let count = |cap: bool| {
            stacks.iter().flatten().filter(|p| p.color == color && (p.kind == PieceKind::Cap) == cap).count()
        };
        if count(false) > opts.stones as usize {
            return Err(TpsError::TooManyPieces { color, what: "stones", reserve: opts.stones });
        }
        if count(true) > opts.caps as usize {
            return Err(TpsError::TooManyPieces { color, what: "capstones", reserve: opts.caps });
        }
    }
    let ply = (move_number - 1) * 2 + to_move.index() as u16;
    Position::from_stacks(opts, &stacks, to_move, ply).map_err(|_| TpsError::BadSize(size))
}

/// Writes a position as TPS.
pub fn write_tps(pos: &Position) -> String {
    let n = pos.size();
    let mut out = String::new();
    for row in (0..n).rev() {
        let mut empties = 0;
        let mut first = true;
        let push = |out: &mut String, s: &str, first: &mut bool| {
            if !*first {
                out.push(',');
            }
            *first = false;
            out.push_str(s);
        };
        for col in 0..n {
            let stack = pos.stack(Square::from_coords(col, row, n));
            if stack.height == 0 {
                empties += 1;
                continue;
            }
            if empties > 0 {
                let s = if empties == 1 { "x".to_string() } else { format!("x{empties}") };
                push(&mut out, &s, &mut first);
                empties = 0;
            }
            let mut s: String = stack.pieces().map(|p| (b'0' + p.color.player_number()) as char).collect();
            match stack.top_kind {
                PieceKind::Wall => s.push('S'),
                PieceKind::Cap => s.push('C'),
                PieceKind::Flat => {}
            }
            push(&mut out, &s, &mut first);
        }
        if empties > 0 {
            let s = if empties == 1 { "x".to_string() } else { format!("x{empties}") };
            push(&mut out, &s, &mut first);
        }
        if row > 0 {
            out.push('/');
        }
    }
    format!("{} {} {}", out, pos.side_to_move().player_number(), pos.move_number())
}

/// A position debug-prints as its TPS (here, not in `position.rs`: the rules don't know
/// the notation, the notation knows the rules).
impl std::fmt::Debug for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Position({})", write_tps(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_and_example_round_trip() {
        for s in [
            "x5/x5/x5/x5/x5 1 1",
            "x3,12,2S/x,22S,22C,11,21/121,212,12,1121C,1212S/21S,1,21,211S,12S/x,21S,2,x2 1 26",
            "2,x2/x3/x2,1 2 2",
        ] {
            let p = parse_tps(s).unwrap();
            assert_eq!(write_tps(&p), s);
        }
    }

    #[test]
    fn errors_name_the_problem() {
        assert_eq!(parse_tps("x3/x3 1 1"), Err(TpsError::BadSize(2)));
        assert!(matches!(parse_tps("x3/x3/x2 1 1"), Err(TpsError::RowLength { row: 3, .. })));
        assert!(matches!(parse_tps("x3/x3/x2,3 1 1"), Err(TpsError::BadSquare { ch: '3', column: 10, .. })));
        assert!(matches!(parse_tps("x3/x3/x3 3 1"), Err(TpsError::BadPlayer(_))));
        assert!(matches!(parse_tps("x3/x3/x3 1 0"), Err(TpsError::BadMoveNumber(_))));
        assert!(matches!(parse_tps("x5/x5/x5/x5/x5 2 44441"), Err(TpsError::BadMoveNumber(_))));
        assert!(matches!(
            parse_tps("x18446744073709551615,x18446744073709551615/x3/x3 1 1"),
            Err(TpsError::BadSquare { .. })
        ));
        assert!(matches!(parse_tps("x3/x3/x3 1"), Err(TpsError::Fields(2))));
        assert!(matches!(parse_tps("1C,x2/x3/x3 1 2"), Err(TpsError::TooManyPieces { .. })));
        assert!(matches!(parse_tps("S1,x2/x3/x3 1 2"), Err(TpsError::BadSquare { ch: 'S', .. })));
    }
}
