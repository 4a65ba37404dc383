//! PTN (Portable Tak Notation): single moves and whole games.
//!
//! - [`parse_move`] / [`write_move`]: one move, short (`c3+`) or long (`1c3+1`) form, with
//!   optional trailing marks (`*`, `'`, `''`, `"`, `!`, `?`, ...).
//! - [`Ptn`]: a game: header tags, start position (`TPS` tag), numbered moves, result.
//!   [`Ptn::parse`] reads one with errors that carry a 1-based line and column,
//!   [`Ptn::replay`] plays it through the checked [`Position::play`], and `Display`
//!   writes it back.
//!
//! ```
//! use bredon_rules::notation::Ptn;
//! let ptn = Ptn::parse("[Size \"5\"]\n1. e2 c3 2. c4 c1 {a comment}\n3. b1 b2 0-0").unwrap();
//! assert_eq!(ptn.moves.len(), 6);
//! let replay = ptn.replay().unwrap();
//! assert_eq!(replay.final_position().ply(), 6);
//! assert_eq!(Ptn::parse(&ptn.to_string()).unwrap().moves.len(), 6);
//! ```

use std::fmt;

use crate::moves::Move;
use crate::notation::tps::{TpsError, parse_tps_with, write_tps};
use crate::position::{GameOptions, Position, RulesError};
use crate::types::{Color, Direction, GameResult, MAX_SIZE, MIN_SIZE, PieceKind, Square, default_reserves};

// ------------------------------------------------------------------------------ moves

/// Why a PTN move was rejected. Offsets are 0-based character positions in the move text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PtnMoveError {
    /// The move text is empty.
    #[error("empty move")]
    Empty,
    /// The board size is not one of 3..=8.
    #[error("board size {0} is not supported (3 to 8)")]
    BadSize(usize),
    /// A character that has no meaning at this point of a move.
    #[error("unknown character {ch:?} at offset {offset}")]
    UnexpectedChar {
        /// The character.
        ch: char,
        /// Its offset in the move text.
        offset: usize,
    },
    /// A square was expected (a file letter `a`.. and a rank number).
    #[error("expected a square at offset {offset}, found {}", found_text(*.found))]
    ExpectedSquare {
        /// What was there instead (`None` at the end of the text).
        found: Option<char>,
        /// Offset of the missing square.
        offset: usize,
    },
    /// A square that is not on the board.
    #[error("square {text:?} at offset {offset} is not on a {size}x{size} board")]
    BadSquare {
        /// The square as written.
        text: String,
        /// Offset of the square.
        offset: usize,
        /// Board size.
        size: usize,
    },
    /// A spread picking up no piece (`0a1+`).
    #[error("piece count 0 at offset {offset}")]
    ZeroCount {
        /// Offset of the count.
        offset: usize,
    },
    /// A spread carrying more pieces than the carry limit (the board size).
    #[error("cannot carry {count} pieces: the carry limit on a {size}x{size} board is {size}")]
    CountTooLarge {
        /// Pieces to carry.
        count: u64,
        /// Board size (= carry limit).
        size: usize,
        /// Offset of the count.
        offset: usize,
    },
    /// A piece count was given but no direction follows the square.
    #[error("unknown direction {} at offset {offset}: expected + - < or >", found_text(*.found))]
    ExpectedDirection {
        /// What was there instead (`None` at the end of the text).
        found: Option<char>,
        /// Offset where the direction should be.
        offset: usize,
    },
    /// A drop of zero pieces (`3a1>102`).
    #[error("drop of 0 pieces at offset {offset}")]
    ZeroDrop {
        /// Offset of the `0`.
        offset: usize,
    },
    /// The drops do not add up to the number of carried pieces.
    #[error("drops add up to {sum} but {count} pieces are carried")]
    DropSum {
        /// Sum of the drops.
        sum: u64,
        /// Pieces carried.
        count: u64,
        /// Offset of the first drop.
        offset: usize,
    },
    /// A piece letter (`F`, `S`, `C`) in front of a spread.
    #[error("piece letter {letter:?} cannot start a spread")]
    PieceOnSpread {
        /// The letter.
        letter: char,
    },
}

fn found_text(c: Option<char>) -> String {
    match c {
        Some(c) => format!("{c:?}"),
        None => "end of move".to_string(),
    }
}

impl PtnMoveError {
    /// The 0-based character offset in the move text that the error points at.
    pub fn offset(&self) -> usize {
        match self {
            PtnMoveError::Empty | PtnMoveError::BadSize(_) | PtnMoveError::PieceOnSpread { .. } => 0,
            PtnMoveError::UnexpectedChar { offset, .. }
            | PtnMoveError::ExpectedSquare { offset, .. }
            | PtnMoveError::BadSquare { offset, .. }
            | PtnMoveError::ZeroCount { offset }
            | PtnMoveError::CountTooLarge { offset, .. }
            | PtnMoveError::ExpectedDirection { offset, .. }
            | PtnMoveError::ZeroDrop { offset }
            | PtnMoveError::DropSum { offset, .. } => *offset,
        }
    }
}

/// Whether `c` may appear in the trailing marks of a move (`*`, `'`, `"`, `!`, `?`).
fn is_mark(c: char) -> bool {
    matches!(c, '*' | '\'' | '"' | '!' | '?')
}

/// Parses one PTN move for a board of `size`, in short or long form, with an optional
/// trailing piece letter on spreads (`3b4-12S`) and any trailing marks (`*`, `'`, `''`,
/// `"`, `!`, `?`, `!!`, `??`, `!?`, `?!`). Only the syntax and the board size are checked;
/// whether the move is legal in a position is for [`Position::play`]. Never panics.
pub fn parse_move(text: &str, size: usize) -> Result<Move, PtnMoveError> {
    if !(MIN_SIZE..=MAX_SIZE).contains(&size) {
        return Err(PtnMoveError::BadSize(size));
    }
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Err(PtnMoveError::Empty);
    }
    let at = |i: usize| chars.get(i).copied();
    let mut i = 0usize;

    // Piece letter (placements only).
    let mut piece = None;
    if let Some(c @ ('F' | 'S' | 'C')) = at(0) {
        piece = Some(c);
        i = 1;
    }

    // Count.
    let count_start = i;
    let mut count: Option<u64> = None;
    while let Some(d) = at(i).and_then(|c| c.to_digit(10)) {
        count = Some(count.unwrap_or(0).saturating_mul(10).saturating_add(d as u64));
        i += 1;
    }
    if piece.is_some() && count.is_some() {
        return Err(PtnMoveError::ExpectedSquare { found: at(count_start), offset: count_start });
    }

    // Square: a file letter and a rank number.
    let sq_start = i;
    let file = match at(i) {
        Some(c) if c.is_ascii_lowercase() => c,
        found => return Err(PtnMoveError::ExpectedSquare { found, offset: i }),
    };
    i += 1;
    let rank_start = i;
    while at(i).is_some_and(|c| c.is_ascii_digit()) {
        i += 1;
    }
    if i == rank_start {
        return Err(PtnMoveError::ExpectedSquare { found: at(sq_start), offset: sq_start });
    }
    let sq_text: String = chars[sq_start..i].iter().collect();
    let bad_square = || PtnMoveError::BadSquare { text: sq_text.clone(), offset: sq_start, size };
    let col = (file as u32).wrapping_sub('a' as u32) as usize;
    let row: usize = match sq_text[1..].parse::<usize>() {
        Ok(r) if r >= 1 => r - 1,
        _ => return Err(bad_square()),
    };
    if col >= size || row >= size {
        return Err(bad_square());
    }
    let square = Square::from_coords(col, row, size);

    // Direction, or a placement.
    let dir = match at(i).and_then(Direction::from_symbol) {
        Some(d) => d,
        None => {
            if count.is_some() {
                return Err(PtnMoveError::ExpectedDirection { found: at(i), offset: i });
            }
            let kind = match piece {
                Some('S') => PieceKind::Wall,
                Some('C') => PieceKind::Cap,
                _ => PieceKind::Flat,
            };
            check_marks(&chars, i)?;
            return Ok(Move::place(square, kind));
        }
    };
    if let Some(letter) = piece {
        return Err(PtnMoveError::PieceOnSpread { letter });
    }
    i += 1;

    let count = count.unwrap_or(1);
    if count == 0 {
        return Err(PtnMoveError::ZeroCount { offset: count_start });
    }
    if count > size as u64 {
        return Err(PtnMoveError::CountTooLarge { count, size, offset: count_start });
    }

    // Drops.
    let drops_start = i;
    let mut drops: Vec<u8> = Vec::new();
    let mut sum = 0u64;
    while let Some(d) = at(i).and_then(|c| c.to_digit(10)) {
        if d == 0 {
            return Err(PtnMoveError::ZeroDrop { offset: i });
        }
        sum = sum.saturating_add(d as u64);
        if drops.len() < MAX_SIZE {
            drops.push(d as u8);
        }
        i += 1;
    }
    if drops.is_empty() {
        drops.push(count as u8);
        sum = count;
    }
    if sum != count {
        return Err(PtnMoveError::DropSum { sum, count, offset: drops_start });
    }

    // Optional informational top piece letter.
    if matches!(at(i), Some('S' | 'C')) {
        i += 1;
    }
    check_marks(&chars, i)?;
    Move::spread_from_drops(square, dir, &drops).ok_or(PtnMoveError::CountTooLarge { count, size, offset: count_start })
}

fn check_marks(chars: &[char], from: usize) -> Result<(), PtnMoveError> {
    for (offset, &ch) in chars.iter().enumerate().skip(from) {
        if !is_mark(ch) {
            return Err(PtnMoveError::UnexpectedChar { ch, offset });
        }
    }
    Ok(())
}

/// Writes a move in the short PTN form (`a1`, `Sb2`, `c3+`, `3d4<12`); same as
/// [`Move::to_ptn`].
pub fn write_move(mv: Move, size: usize) -> String {
    mv.to_ptn(size)
}

// ------------------------------------------------------------------------------ games

/// A PTN game error: where (1-based line and column, counted in characters) and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {kind}")]
pub struct PtnError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (characters).
    pub column: usize,
    /// What is wrong.
    pub kind: PtnErrorKind,
}

/// What is wrong in a PTN game.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PtnErrorKind {
    /// A `{` comment that is never closed.
    #[error("comment is not closed with '}}'")]
    UnterminatedComment,
    /// A `}` outside a comment.
    #[error("'}}' without a '{{' before it")]
    UnmatchedBrace,
    /// A `[` tag that is never closed.
    #[error("tag is not closed with ']'")]
    UnterminatedTag,
    /// A tag value whose quotes are never closed.
    #[error("tag value is missing its closing '\"'")]
    UnterminatedString,
    /// A `[` with no tag name.
    #[error("tag has no name")]
    EmptyTagName,
    /// A `]` outside a tag.
    #[error("']' without a '[' before it")]
    UnmatchedBracket,
    /// A header tag after the first move.
    #[error("tag [{name}] after the moves started")]
    TagAfterMoves {
        /// The tag's name.
        name: String,
    },
    /// Neither a `Size` nor a `TPS` tag.
    #[error("no Size tag (and no TPS tag to give the size)")]
    MissingSize,
    /// A tag whose value cannot be used.
    #[error("bad {name} tag {value:?}: {reason}")]
    BadTag {
        /// Tag name.
        name: String,
        /// Its value.
        value: String,
        /// Why it is rejected.
        reason: String,
    },
    /// The `TPS` tag is not a valid position for this game.
    #[error("bad TPS tag: {0}")]
    Tps(TpsError),
    /// A move that is not valid PTN.
    #[error("{error} in move {text:?}")]
    Move {
        /// The move as written.
        text: String,
        /// What is wrong with it.
        error: PtnMoveError,
    },
    /// A move number token that cannot be read (`x.`, `1..`).
    #[error("bad move number {text:?}")]
    BadMoveNumber {
        /// The token.
        text: String,
    },
    /// A move number that does not fit where it stands.
    #[error("found move number {found:?} where {expected} was expected")]
    WrongMoveNumber {
        /// The token as written.
        found: String,
        /// What was expected, e.g. `"7."` or `"black's move 6"`.
        expected: String,
    },
    /// Two move numbers with no move between them.
    #[error("move number {text:?} follows another move number")]
    DoubleMoveNumber {
        /// The second number.
        text: String,
    },
    /// Text after the result token.
    #[error("{text:?} after the result {result:?}")]
    AfterResult {
        /// The extra text.
        text: String,
        /// The result token before it.
        result: String,
    },
    /// The `Result` tag and the result at the end of the moves disagree.
    #[error("result {token:?} disagrees with the Result tag {tag:?}")]
    ResultMismatch {
        /// The Result tag.
        tag: String,
        /// The result token.
        token: String,
    },
    /// A move that is not legal in the position it is played in.
    #[error("illegal move {text:?} ({color}'s move {move_number}): {error}")]
    IllegalMove {
        /// The move as written.
        text: String,
        /// PTN move number.
        move_number: u16,
        /// Side that played it.
        color: Color,
        /// The rules' reason.
        error: RulesError,
    },
    /// A move after the game already ended.
    #[error("move {text:?} ({color}'s move {move_number}) after the game ended {result}")]
    MoveAfterEnd {
        /// The move as written.
        text: String,
        /// PTN move number.
        move_number: u16,
        /// Side that played it.
        color: Color,
        /// How the game had ended.
        result: GameResult,
    },
    /// More plies than a position can count.
    #[error("game too long: ply counter would overflow")]
    TooLong,
    /// A `--` placeholder for a move, other than before black's first move of a game
    /// that starts with black to move or at the end of the moves.
    #[error("placeholder \"--\" where a move was expected (ignored)")]
    Placeholder,
}

/// One move of a PTN game, with where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtnMove {
    /// The move.
    pub mv: Move,
    /// The text as written (with its marks), or the short form for moves not read from text.
    pub text: String,
    /// 1-based line of the move's first character (0 when not read from text).
    pub line: usize,
    /// 1-based column of the move's first character (0 when not read from text).
    pub column: usize,
}

/// A parsed PTN game.
///
/// `tags` keeps every header tag in order, unknown ones too; `options` (size, komi,
/// reserves) and `start_tps` are read from the `Size`, `Komi`, `Flats`, `Caps` and `TPS`
/// tags. Comments are not kept. Writing with `Display` gives the tags as they are, then
/// the moves in the short form, numbered, and the result token if there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ptn {
    /// Header tags `(name, value)` in order of appearance.
    pub tags: Vec<(String, String)>,
    /// Size, komi (half points) and reserves of the game.
    pub options: GameOptions,
    /// Start position, if the game does not start from the empty board.
    pub start_tps: Option<String>,
    /// The moves.
    pub moves: Vec<PtnMove>,
    /// The declared result (from the `Result` tag or the result token), `None` if
    /// unknown or `0-0`.
    pub result: Option<GameResult>,
    /// Where the TPS tag was (line, column), for errors about the start position.
    tps_at: (usize, usize),
    /// Harmless problems [`Ptn::parse`] tolerated, in order: move numbers that disagree
    /// with the position (reported once per game), a result token that disagrees with
    /// the `Result` tag (the token wins), `--` placeholders where no move is skipped.
    /// [`Ptn::parse_strict`] turns the first one into an error.
    pub warnings: Vec<PtnError>,
}

/// A PTN game played through: every position, the moves and the computed result.
#[derive(Clone, Debug)]
pub struct Replay {
    positions: Vec<Position>,
    moves: Vec<Move>,
}

impl Replay {
    /// The start position.
    pub fn start(&self) -> &Position {
        &self.positions[0]
    }

    /// The position after the last move.
    pub fn final_position(&self) -> &Position {
        // `positions` always holds the start position.
        &self.positions[self.positions.len() - 1]
    }

    /// The position after `ply` moves of the game (0 = the start), if the game is that long.
    pub fn position_at(&self, ply: usize) -> Option<&Position> {
        self.positions.get(ply)
    }

    /// All positions: the start, then the position after each move.
    pub fn positions(&self) -> &[Position] {
        &self.positions
    }

    /// The moves played.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// The result of the final position by the rules (`None` if the game had not ended).
    pub fn result(&self) -> Option<GameResult> {
        self.final_position().result()
    }
}

/// A token of PTN text.
#[derive(Debug)]
enum Token {
    Tag { name: String, value: String },
    Word(String),
}

/// A character scanner with 1-based line/column.
struct Scanner<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: usize,
    column: usize,
}

impl Scanner<'_> {
    fn peek(&mut self) -> Option<char> {
        self.chars.peek().copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    fn err(&self, line: usize, column: usize, kind: PtnErrorKind) -> PtnError {
        // Errors point at where the offending construct started, not at the current place.
        debug_assert!((line, column) <= (self.line, self.column));
        PtnError { line, column, kind }
    }
}

/// Splits PTN text into tags and words (comments dropped), each with its line and column.
fn tokenize(text: &str) -> Result<Vec<(usize, usize, Token)>, PtnError> {
    let mut s = Scanner { chars: text.chars().peekable(), line: 1, column: 1 };
    let mut out = Vec::new();
    loop {
        s.skip_ws();
        let (line, column) = (s.line, s.column);
        let Some(c) = s.peek() else { break };
        match c {
            '{' => {
                s.bump();
                loop {
                    match s.bump() {
                        Some('}') => break,
                        Some(_) => {}
                        None => return Err(s.err(line, column, PtnErrorKind::UnterminatedComment)),
                    }
                }
            }
            '}' => return Err(s.err(line, column, PtnErrorKind::UnmatchedBrace)),
            ']' => return Err(s.err(line, column, PtnErrorKind::UnmatchedBracket)),
            '[' => {
                s.bump();
                s.skip_ws();
                let mut name = String::new();
                while let Some(c) = s.peek() {
                    if c.is_whitespace() || c == '"' || c == ']' || c == '[' {
                        break;
                    }
                    name.push(c);
                    s.bump();
                }
                if name.is_empty() {
                    return Err(s.err(line, column, PtnErrorKind::EmptyTagName));
                }
                s.skip_ws();
                let mut value = String::new();
                if s.peek() == Some('"') {
                    let (ql, qc) = (s.line, s.column);
                    s.bump();
                    loop {
                        match s.bump() {
                            Some('"') => break,
                            Some('\\') => match s.bump() {
                                Some(c) => value.push(c),
                                None => return Err(s.err(ql, qc, PtnErrorKind::UnterminatedString)),
                            },
                            Some(c) => value.push(c),
                            None => return Err(s.err(ql, qc, PtnErrorKind::UnterminatedString)),
                        }
                    }
                }
                // Anything else up to `]` (unquoted values, and the German `[TPS "rows" 1 1]`)
                // is appended to the value.
                let mut extra = String::new();
                loop {
                    match s.peek() {
                        Some(']') => {
                            s.bump();
                            break;
                        }
                        Some('[') | None => return Err(s.err(line, column, PtnErrorKind::UnterminatedTag)),
                        Some(c) => {
                            extra.push(c);
                            s.bump();
                        }
                    }
                }
                let extra = extra.split_whitespace().collect::<Vec<_>>().join(" ");
                if !extra.is_empty() {
                    if !value.is_empty() {
                        value.push(' ');
                    }
                    value.push_str(&extra);
                }
                out.push((line, column, Token::Tag { name, value }));
            }
            _ => {
                let mut word = String::new();
                while let Some(c) = s.peek() {
                    if c.is_whitespace() || matches!(c, '{' | '}' | '[' | ']') {
                        break;
                    }
                    word.push(c);
                    s.bump();
                }
                out.push((line, column, Token::Word(word)));
            }
        }
    }
    Ok(out)
}

/// Parses a komi such as `2`, `2.5`, `-1.5`, `0` into half points.
fn parse_komi(value: &str) -> Option<i8> {
    let (neg, rest) = match value.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, value.strip_prefix('+').unwrap_or(value)),
    };
    let (int, frac) = match rest.split_once('.') {
        Some((i, f)) => (i, f),
        None => (rest, ""),
    };
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let half = match frac.trim_end_matches('0') {
        "" => 0,
        "5" => 1,
        _ => return None,
    };
    let int: i32 = int.parse().ok()?;
    let total = int.checked_mul(2)?.checked_add(half)?;
    i8::try_from(if neg { -total } else { total }).ok()
}

/// Writes half points as a komi (`4` → `2`, `5` → `2.5`).
fn write_komi(half_komi: i8) -> String {
    let h = half_komi as i32;
    let sign = if h < 0 { "-" } else { "" };
    let a = h.abs();
    if a % 2 == 0 { format!("{sign}{}", a / 2) } else { format!("{sign}{}.5", a / 2) }
}

/// Splits a move-number prefix: `12.` → (12, 1 dot, rest), `3...c3` → (3, 3 dots, "c3").
/// `None` if the word does not start with digits followed by a dot.
fn split_number(word: &str) -> Option<(&str, usize, &str)> {
    let digits = word.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &word[digits..];
    let dots = rest.bytes().take_while(|&b| b == b'.').count();
    if dots == 0 {
        return None;
    }
    Some((&word[..digits], dots, &rest[dots..]))
}

/// Tag names (case-insensitive) the reader interprets.
fn tag_is(name: &str, wanted: &str) -> bool {
    name.eq_ignore_ascii_case(wanted)
}

impl Ptn {
    /// A new game from `start` with no moves: tags `Size`, and `Komi`, `Flats`, `Caps` and
    /// `TPS` where they differ from the defaults (TPS when `start` is not an empty board at
    /// ply 0).
    pub fn new(start: &Position) -> Ptn {
        let options = start.options();
        let mut tags = vec![("Size".to_string(), options.size.to_string())];
        if options.half_komi != 0 {
            tags.push(("Komi".to_string(), write_komi(options.half_komi)));
        }
        let (stones, caps) = default_reserves(options.size);
        if options.stones != stones {
            tags.push(("Flats".to_string(), options.stones.to_string()));
        }
        if options.caps != caps {
            tags.push(("Caps".to_string(), options.caps.to_string()));
        }
        let start_tps = (start.ply() != 0 || start.occupied() != 0).then(|| write_tps(start));
        if let Some(tps) = &start_tps {
            tags.push(("TPS".to_string(), tps.clone()));
        }
        Ptn { tags, options, start_tps, moves: Vec::new(), result: None, tps_at: (1, 1), warnings: Vec::new() }
    }

    /// A game from `start` with `moves` (not checked) and a `result` (also set as the
    /// `Result` tag).
    pub fn from_moves(start: &Position, moves: &[Move], result: Option<GameResult>) -> Ptn {
        let mut ptn = Ptn::new(start);
        for &mv in moves {
            ptn.push_move(mv);
        }
        ptn.set_result(result);
        ptn
    }

    /// Appends a move (written in the short form, with no location).
    pub fn push_move(&mut self, mv: Move) {
        let text = write_move(mv, self.options.size);
        self.moves.push(PtnMove { mv, text, line: 0, column: 0 });
    }

    /// Sets the result and the `Result` tag (`0-0` for `None`).
    pub fn set_result(&mut self, result: Option<GameResult>) {
        self.result = result;
        let value = result.map_or("0-0", GameResult::ptn).to_string();
        self.set_tag("Result", &value);
    }

    /// Sets tag `name` (replacing the last one with that name, case-insensitive, or
    /// appending it).
    pub fn set_tag(&mut self, name: &str, value: &str) {
        match self.tags.iter_mut().rev().find(|(n, _)| tag_is(n, name)) {
            Some(t) => t.1 = value.to_string(),
            None => self.tags.push((name.to_string(), value.to_string())),
        }
    }

    /// The value of tag `name` (case-insensitive); the last one if it appears several times.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags.iter().rev().find(|(n, _)| tag_is(n, name)).map(|(_, v)| v.as_str())
    }

    /// All values of tag `name` (case-insensitive), in order.
    pub fn tag_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.tags.iter().filter(move |(n, _)| tag_is(n, name)).map(|(_, v)| v.as_str())
    }

    /// Board size.
    pub fn size(&self) -> usize {
        self.options.size
    }

    /// Komi in half points (from the `Komi` tag; 0 without one).
    pub fn half_komi(&self) -> i8 {
        self.options.half_komi
    }

    /// Parses a PTN game: header tags, then the move text (numbered or not, comments
    /// anywhere, an optional result token at the end). Moves are checked for syntax and
    /// board size only; [`Ptn::replay`] checks them against the rules.
    ///
    /// Tags: `Size` (required unless `TPS` gives the size), `Komi` (`2`, `2.5`, ...),
    /// `Flats` and `Caps` (reserves), `TPS` (start position; `[TPS "rows" 1 1]` is accepted
    /// too), `Result`; empty values of these tags count as absent. Other tags are kept.
    ///
    /// Real files are read as they are written: move numbers are checked against the
    /// position but a mismatch (numbers restarting at `1.` after a `TPS` start, a wrong
    /// `N.`/`N...`, a doubled or malformed number) is only a warning in
    /// [`Ptn::warnings`], as is a result token that disagrees with the `Result` tag; `--`
    /// (ptn.ninja's placeholder before black's first move) is skipped.
    pub fn parse(text: &str) -> Result<Ptn, PtnError> {
        let tokens = tokenize(text)?;
        let mut tags: Vec<(String, String)> = Vec::new();
        let mut tag_at: Vec<(usize, usize)> = Vec::new();
        let mut body = Vec::new();
        for (line, column, tok) in tokens {
            match tok {
                Token::Tag { name, value } => {
                    if !body.is_empty() {
                        return Err(PtnError { line, column, kind: PtnErrorKind::TagAfterMoves { name } });
                    }
                    tags.push((name, value));
                    tag_at.push((line, column));
                }
                Token::Word(w) => body.push((line, column, w)),
            }
        }

        // Header.
        let find = |name: &str| -> Option<(usize, &str)> {
            tags.iter()
                .enumerate()
                .rev()
                .find(|(_, (n, v))| tag_is(n, name) && !v.trim().is_empty())
                .map(|(i, (_, v))| (i, v.trim()))
        };
        let bad_tag = |i: usize, reason: &str| {
            let (line, column) = tag_at.get(i).copied().unwrap_or((1, 1));
            let (name, value) = tags.get(i).cloned().unwrap_or_default();
            PtnError { line, column, kind: PtnErrorKind::BadTag { name, value, reason: reason.to_string() } }
        };
        let tps = find("TPS");
        let size = match (find("Size"), tps) {
            (Some((i, v)), _) => match v.parse::<usize>() {
                Ok(s) if (MIN_SIZE..=MAX_SIZE).contains(&s) => s,
                _ => return Err(bad_tag(i, "size must be a number from 3 to 8")),
            },
            (None, Some((i, v))) => {
                let rows = v.split_whitespace().next().unwrap_or("").split('/').count();
                if !(MIN_SIZE..=MAX_SIZE).contains(&rows) {
                    let (line, column) = tag_at.get(i).copied().unwrap_or((1, 1));
                    return Err(PtnError { line, column, kind: PtnErrorKind::Tps(TpsError::BadSize(rows)) });
                }
                rows
            }
            (None, None) => return Err(PtnError { line: 1, column: 1, kind: PtnErrorKind::MissingSize }),
        };
        let mut options = GameOptions::new(size);
        if let Some((i, v)) = find("Komi") {
            options.half_komi =
                parse_komi(v).ok_or_else(|| bad_tag(i, "komi must be a number of half points such as 2 or 2.5"))?;
        }
        if let Some((i, v)) = find("Flats") {
            options.stones = v.parse().map_err(|_| bad_tag(i, "must be a number from 0 to 255"))?;
        }
        if let Some((i, v)) = find("Caps") {
            options.caps = v.parse().map_err(|_| bad_tag(i, "must be a number from 0 to 255"))?;
        }
        // A stack stores at most 128 pieces, so both players together may have at most 128.
        if options.stones as usize + options.caps as usize > 64 {
            let i = find("Flats").or(find("Caps")).map_or(usize::MAX, |(i, _)| i);
            return Err(bad_tag(i, "at most 64 pieces (stones and capstones) per player are supported"));
        }
        let mut tps_at = (1, 1);
        let start = match tps {
            Some((i, v)) => {
                tps_at = tag_at.get(i).copied().unwrap_or((1, 1));
                parse_tps_with(v, Some(options), 0).map_err(|e| PtnError {
                    line: tps_at.0,
                    column: tps_at.1,
                    kind: PtnErrorKind::Tps(e),
                })?
            }
            None => Position::with_options(options).map_err(|_| bad_tag(usize::MAX, "unsupported size"))?,
        };
        let tag_result = match find("Result") {
            Some((i, v)) => match GameResult::parse_ptn(v) {
                Ok(r) => Some((r, v.to_string())),
                Err(()) => return Err(bad_tag(i, "not a PTN result (R-0, 0-R, F-0, 0-F, 1-0, 0-1, 1/2-1/2, 0-0)")),
            },
            None => None,
        };

        // Moves.
        let mut moves: Vec<PtnMove> = Vec::new();
        let mut warnings: Vec<PtnError> = Vec::new();
        let mut numbers_warned = false;
        let mut number_warning = |warnings: &mut Vec<PtnError>, e: PtnError| {
            if !numbers_warned {
                numbers_warned = true;
                warnings.push(e);
            }
        };
        let mut result_token: Option<(Option<GameResult>, String, usize, usize)> = None;
        let mut number_pending = false;
        let start_ply = start.ply() as usize;
        let last_move_word = body.iter().rposition(|(_, _, w)| GameResult::parse_ptn(w).is_err());
        for (index, (line, column, word)) in body.into_iter().enumerate() {
            if let Some((_, text, _, _)) = &result_token {
                return Err(PtnError {
                    line,
                    column,
                    kind: PtnErrorKind::AfterResult { text: word, result: text.clone() },
                });
            }
            if let Ok(r) = GameResult::parse_ptn(&word) {
                result_token = Some((r, word, line, column));
                continue;
            }
            let mut move_text = word.as_str();
            let mut move_column = column;
            if let Some((digits, dots, rest)) = split_number(&word) {
                let number_text = &word[..word.len() - rest.len()];
                let bad =
                    || PtnError { line, column, kind: PtnErrorKind::BadMoveNumber { text: number_text.to_string() } };
                let number: u64 = match digits.parse() {
                    Ok(n) if dots == 1 || dots == 3 => n,
                    _ => {
                        number_warning(&mut warnings, bad());
                        u64::MAX
                    }
                };
                if number_pending {
                    number_warning(
                        &mut warnings,
                        PtnError {
                            line,
                            column,
                            kind: PtnErrorKind::DoubleMoveNumber { text: number_text.to_string() },
                        },
                    );
                }
                let ply = start_ply + moves.len();
                let expected_number = (ply / 2 + 1) as u64;
                let black = ply % 2 == 1;
                // `N.` starts white's turn; at the very start of a game where black moves
                // first, `N.` may also stand before black's move. `N...` is black's move.
                let ok = number == u64::MAX
                    || number == expected_number && if dots == 1 { !black || moves.is_empty() } else { black };
                if !ok {
                    let expected = if black {
                        format!("{expected_number}... (black's move {expected_number})")
                    } else {
                        format!("{expected_number}.")
                    };
                    number_warning(
                        &mut warnings,
                        PtnError {
                            line,
                            column,
                            kind: PtnErrorKind::WrongMoveNumber { found: number_text.to_string(), expected },
                        },
                    );
                }
                number_pending = true;
                move_column = column + number_text.chars().count();
                move_text = rest;
                if move_text.is_empty() {
                    continue;
                }
            }
            number_pending = false;
            if move_text == "--" {
                let black_first = moves.is_empty() && start.side_to_move() == Color::Black;
                if !black_first && Some(index) != last_move_word {
                    warnings.push(PtnError { line, column: move_column, kind: PtnErrorKind::Placeholder });
                }
                continue;
            }
            let mv = parse_move(move_text, size).map_err(|error| PtnError {
                line,
                column: move_column + error.offset(),
                kind: PtnErrorKind::Move { text: move_text.to_string(), error },
            })?;
            moves.push(PtnMove { mv, text: move_text.to_string(), line, column: move_column });
        }

        let result = match (tag_result, result_token) {
            (Some((Some(t), ts)), Some((Some(r), rs, line, column))) if t != r => {
                warnings.push(PtnError { line, column, kind: PtnErrorKind::ResultMismatch { tag: ts, token: rs } });
                Some(r)
            }
            (_, Some((Some(r), ..))) => Some(r),
            (Some((r, _)), _) => r,
            (None, None) => None,
            (None, Some((None, ..))) => None,
        };
        let start_tps = tps.map(|(_, v)| v.to_string());
        Ok(Ptn { tags, options, start_tps, moves, result, tps_at, warnings })
    }

    /// Like [`Ptn::parse`], but the first tolerated problem (see [`Ptn::warnings`]) is an
    /// error.
    pub fn parse_strict(text: &str) -> Result<Ptn, PtnError> {
        let ptn = Ptn::parse(text)?;
        match ptn.warnings.first() {
            Some(w) => Err(w.clone()),
            None => Ok(ptn),
        }
    }

    /// The start position: the `TPS` tag's position, or the empty board.
    pub fn start_position(&self) -> Result<Position, PtnError> {
        let (line, column) = self.tps_at;
        match &self.start_tps {
            Some(tps) => parse_tps_with(tps, Some(self.options), 0).map_err(|e| PtnError {
                line,
                column,
                kind: PtnErrorKind::Tps(e),
            }),
            None => Position::with_options(self.options).map_err(|_| PtnError {
                line,
                column,
                kind: PtnErrorKind::BadTag {
                    name: "Size".to_string(),
                    value: self.options.size.to_string(),
                    reason: "size must be a number from 3 to 8".to_string(),
                },
            }),
        }
    }

    /// Plays every move with the checked [`Position::play`]. An illegal move, or a move
    /// after the game ended, is an error at the move's line and column.
    pub fn replay(&self) -> Result<Replay, PtnError> {
        let mut pos = self.start_position()?;
        let mut positions = Vec::with_capacity(self.moves.len() + 1);
        positions.push(pos.clone());
        for m in &self.moves {
            let (line, column) = (m.line, m.column);
            let color = pos.side_to_move();
            let move_number = pos.move_number();
            if let Some(result) = pos.result() {
                return Err(PtnError {
                    line,
                    column,
                    kind: PtnErrorKind::MoveAfterEnd { text: m.text.clone(), move_number, color, result },
                });
            }
            if pos.ply() == u16::MAX {
                return Err(PtnError { line, column, kind: PtnErrorKind::TooLong });
            }
            if let Err(error) = pos.play(m.mv) {
                return Err(PtnError {
                    line,
                    column,
                    kind: PtnErrorKind::IllegalMove { text: m.text.clone(), move_number, color, error },
                });
            }
            positions.push(pos.clone());
        }
        Ok(Replay { positions, moves: self.moves.iter().map(|m| m.mv).collect() })
    }
}

impl fmt::Display for Ptn {
    /// Tags one per line, a blank line, the moves numbered one turn per line in the short
    /// form, then the result token (if the result is known).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, value) in &self.tags {
            let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
            writeln!(f, "[{name} \"{escaped}\"]")?;
        }
        writeln!(f)?;
        let start_ply = self.start_position().map_or(0, |p| p.ply() as usize);
        let size = self.options.size;
        for (i, m) in self.moves.iter().enumerate() {
            let ply = start_ply + i;
            let number = ply / 2 + 1;
            let text = write_move(m.mv, size);
            if ply.is_multiple_of(2) {
                if i > 0 {
                    writeln!(f)?;
                }
                write!(f, "{number}. {text}")?;
            } else if i == 0 {
                write!(f, "{number}... {text}")?;
            } else {
                write!(f, " {text}")?;
            }
        }
        if !self.moves.is_empty() {
            writeln!(f)?;
        }
        if let Some(r) = self.result {
            writeln!(f, "{}", r.ptn())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sq(s: &str, n: usize) -> Square {
        Square::parse(s, n).unwrap()
    }

    #[test]
    fn short_and_long_forms() {
        let n = 5;
        assert_eq!(parse_move("a1", n), Ok(Move::place(sq("a1", n), PieceKind::Flat)));
        assert_eq!(parse_move("Fa1", n), Ok(Move::place(sq("a1", n), PieceKind::Flat)));
        assert_eq!(parse_move("Sd4", n), Ok(Move::place(sq("d4", n), PieceKind::Wall)));
        assert_eq!(parse_move("Cc1", n), Ok(Move::place(sq("c1", n), PieceKind::Cap)));
        let d3up = Move::spread_from_drops(sq("d3", n), Direction::Up, &[1]).unwrap();
        assert_eq!(parse_move("d3+", n), Ok(d3up));
        assert_eq!(parse_move("1d3+1", n), Ok(d3up));
        let c1l = Move::spread_from_drops(sq("c1", n), Direction::Left, &[2]).unwrap();
        assert_eq!(parse_move("2c1<", n), Ok(c1l));
        assert_eq!(parse_move("2c1<2", n), Ok(c1l));
        let a5 = Move::spread_from_drops(sq("a5", n), Direction::Right, &[1, 1, 1, 1]).unwrap();
        assert_eq!(parse_move("4a5>1111", n), Ok(a5));
        let b4 = Move::spread_from_drops(sq("b4", n), Direction::Down, &[1, 2]).unwrap();
        assert_eq!(parse_move("3b4-12S", n), Ok(b4));
        assert_eq!(parse_move("3b4-12C*'", n), Ok(b4));
        for marks in ["*", "'", "''", "\"", "!", "?", "!!", "??", "!?", "?!", "*''!?"] {
            assert_eq!(parse_move(&format!("d3+{marks}"), n), Ok(d3up), "{marks}");
            assert_eq!(parse_move(&format!("Sd4{marks}"), n).map(|m| m.kind()), Ok(PieceKind::Wall));
        }
    }

    #[test]
    fn move_errors() {
        use PtnMoveError::*;
        assert_eq!(parse_move("", 5), Err(Empty));
        assert_eq!(parse_move("a1", 9), Err(BadSize(9)));
        assert!(matches!(parse_move("f1", 5), Err(BadSquare { offset: 0, .. })));
        assert!(matches!(parse_move("a6", 5), Err(BadSquare { .. })));
        assert!(matches!(parse_move("a0", 5), Err(BadSquare { .. })));
        assert!(matches!(parse_move("a10", 8), Err(BadSquare { .. })));
        assert_eq!(parse_move("0a1+", 5), Err(ZeroCount { offset: 0 }));
        assert_eq!(parse_move("6a1+", 5), Err(CountTooLarge { count: 6, size: 5, offset: 0 }));
        assert!(parse_move("3a1+12", 5).is_ok());
        assert_eq!(parse_move("3a1+11", 5), Err(DropSum { sum: 2, count: 3, offset: 4 }));
        assert_eq!(parse_move("3a1+102", 5), Err(ZeroDrop { offset: 5 }));
        assert_eq!(parse_move("2a1", 5), Err(ExpectedDirection { found: None, offset: 3 }));
        assert_eq!(parse_move("2a1*", 5), Err(ExpectedDirection { found: Some('*'), offset: 3 }));
        assert_eq!(parse_move("a1x", 5), Err(UnexpectedChar { ch: 'x', offset: 2 }));
        assert_eq!(parse_move("Sa1+", 5), Err(PieceOnSpread { letter: 'S' }));
        assert_eq!(parse_move("S2a1", 5), Err(ExpectedSquare { found: Some('2'), offset: 1 }));
        assert_eq!(parse_move("+", 5), Err(ExpectedSquare { found: Some('+'), offset: 0 }));
        assert_eq!(parse_move("a", 5), Err(ExpectedSquare { found: Some('a'), offset: 0 }));
        assert_eq!(parse_move("a1+1F", 5), Err(UnexpectedChar { ch: 'F', offset: 4 }));
        assert!(parse_move("99999999999999999999999a1+", 8).is_err());
        assert!(parse_move("8a1+11111111111111111111111111111111", 8).is_err());
    }

    #[test]
    fn komi() {
        assert_eq!(parse_komi("0"), Some(0));
        assert_eq!(parse_komi("2"), Some(4));
        assert_eq!(parse_komi("2.5"), Some(5));
        assert_eq!(parse_komi("2.0"), Some(4));
        assert_eq!(parse_komi("-1.5"), Some(-3));
        assert_eq!(parse_komi("2.3"), None);
        assert_eq!(parse_komi("x"), None);
        assert_eq!(parse_komi("100"), None);
        for h in [-7i8, -2, 0, 1, 4, 5, 63] {
            assert_eq!(parse_komi(&write_komi(h)), Some(h));
        }
    }
}
