//! Basic domain types: colours, pieces, squares, directions, results.

use std::fmt;

/// Smallest supported board size.
pub const MIN_SIZE: usize = 3;
/// Largest supported board size (an 8x8 board fills a `u64` bitboard exactly).
pub const MAX_SIZE: usize = 8;

/// A player. White is player 1 (moves first), black is player 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Color {
    /// Player 1.
    White = 0,
    /// Player 2.
    Black = 1,
}

impl Color {
    /// Both colours, white first.
    pub const ALL: [Color; 2] = [Color::White, Color::Black];

    /// The other player.
    #[inline]
    #[must_use]
    pub const fn opposite(self) -> Color {
        match self {
            Color::White => Color::Black,
            Color::Black => Color::White,
        }
    }

    /// 0 for white, 1 for black.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Colour from an index (0 = white, anything else = black).
    #[inline]
    pub const fn from_index(i: usize) -> Color {
        if i == 0 { Color::White } else { Color::Black }
    }

    /// The PTN/TPS player number (1 or 2).
    pub const fn player_number(self) -> u8 {
        self as u8 + 1
    }

    /// +1 for white, -1 for black.
    pub const fn sign(self) -> i32 {
        match self {
            Color::White => 1,
            Color::Black => -1,
        }
    }
}

impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Color::White => "white",
            Color::Black => "black",
        })
    }
}

/// The kind of a piece. Only the top piece of a stack can be a wall or a capstone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PieceKind {
    /// A flat stone: can be stacked on, counts for roads and flat wins.
    Flat = 0,
    /// A standing stone (wall): blocks movement and roads.
    Wall = 1,
    /// A capstone: counts for roads, can flatten a wall when moving alone.
    Cap = 2,
}

impl PieceKind {
    /// All kinds.
    pub const ALL: [PieceKind; 3] = [PieceKind::Flat, PieceKind::Wall, PieceKind::Cap];

    /// The PTN letter (`F`, `S`, `C`).
    pub const fn letter(self) -> char {
        match self {
            PieceKind::Flat => 'F',
            PieceKind::Wall => 'S',
            PieceKind::Cap => 'C',
        }
    }

    /// 0, 1, 2.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Kind from an index 0..3.
    #[inline]
    pub const fn from_index(i: usize) -> PieceKind {
        match i {
            0 => PieceKind::Flat,
            1 => PieceKind::Wall,
            _ => PieceKind::Cap,
        }
    }
}

/// A piece: a colour and a kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    /// Owner.
    pub color: Color,
    /// Flat, wall or capstone.
    pub kind: PieceKind,
}

impl Piece {
    /// A new piece.
    pub const fn new(color: Color, kind: PieceKind) -> Self {
        Piece { color, kind }
    }
}

/// A square of the board, stored as its index `row * size + col` (row 0 is PTN rank 1,
/// col 0 is file `a`). The board size is needed to turn a square into coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Square(pub u8);

impl Square {
    /// The square at `col` (0 = `a`) and `row` (0 = rank 1) on a board of `size`.
    #[inline]
    pub const fn from_coords(col: usize, row: usize, size: usize) -> Square {
        Square((row * size + col) as u8)
    }

    /// Index 0..size².
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Column (0 = file `a`).
    #[inline]
    pub const fn col(self, size: usize) -> usize {
        self.0 as usize % size
    }

    /// Row (0 = rank 1).
    #[inline]
    pub const fn row(self, size: usize) -> usize {
        self.0 as usize / size
    }

    /// The neighbour in `dir`, if it is on the board.
    #[inline]
    pub fn step(self, dir: Direction, size: usize) -> Option<Square> {
        let (c, r) = (self.col(size) as isize, self.row(size) as isize);
        let (dc, dr) = dir.delta();
        let (nc, nr) = (c + dc, r + dr);
        if nc < 0 || nr < 0 || nc >= size as isize || nr >= size as isize {
            None
        } else {
            Some(Square::from_coords(nc as usize, nr as usize, size))
        }
    }

    /// PTN name such as `a1`.
    pub fn name(self, size: usize) -> String {
        format!("{}{}", (b'a' + self.col(size) as u8) as char, self.row(size) + 1)
    }

    /// Parses a PTN square name (`a1`..`h8`) for a board of `size`.
    pub fn parse(s: &str, size: usize) -> Option<Square> {
        let b = s.as_bytes();
        if b.len() != 2 {
            return None;
        }
        let col = b[0].to_ascii_lowercase().checked_sub(b'a')? as usize;
        let row = b[1].checked_sub(b'1')? as usize;
        (col < size && row < size).then(|| Square::from_coords(col, row, size))
    }
}

/// A direction of movement. PTN: `+` up (towards higher ranks), `-` down, `>` right, `<` left.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `+`: rows increase.
    Up = 0,
    /// `-`: rows decrease.
    Down = 1,
    /// `>`: columns increase.
    Right = 2,
    /// `<`: columns decrease.
    Left = 3,
}

impl Direction {
    /// All four directions.
    pub const ALL: [Direction; 4] = [Direction::Up, Direction::Down, Direction::Right, Direction::Left];

    /// (dcol, drow).
    pub const fn delta(self) -> (isize, isize) {
        match self {
            Direction::Up => (0, 1),
            Direction::Down => (0, -1),
            Direction::Right => (1, 0),
            Direction::Left => (-1, 0),
        }
    }

    /// The PTN symbol.
    pub const fn symbol(self) -> char {
        match self {
            Direction::Up => '+',
            Direction::Down => '-',
            Direction::Right => '>',
            Direction::Left => '<',
        }
    }

    /// Direction from its PTN symbol.
    pub const fn from_symbol(c: char) -> Option<Direction> {
        match c {
            '+' => Some(Direction::Up),
            '-' => Some(Direction::Down),
            '>' => Some(Direction::Right),
            '<' => Some(Direction::Left),
            _ => None,
        }
    }

    /// 0..4.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Direction from 0..4.
    #[inline]
    pub const fn from_index(i: usize) -> Direction {
        match i & 3 {
            0 => Direction::Up,
            1 => Direction::Down,
            2 => Direction::Right,
            _ => Direction::Left,
        }
    }

    /// The opposite direction.
    pub const fn reverse(self) -> Direction {
        match self {
            Direction::Up => Direction::Down,
            Direction::Down => Direction::Up,
            Direction::Right => Direction::Left,
            Direction::Left => Direction::Right,
        }
    }
}

/// How a decided game was won.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WinKind {
    /// A road (`R-0`/`0-R`).
    Road,
    /// More flats when the board filled or a reserve ran out (`F-0`/`0-F`).
    Flat,
    /// Resignation, time or any other reason (`1-0`/`0-1`).
    Other,
}

/// The result of a finished game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GameResult {
    /// `color` won, by `kind`.
    Win {
        /// The winner.
        color: Color,
        /// How.
        kind: WinKind,
    },
    /// A draw (equal flats with no komi to break the tie).
    Draw,
}

impl GameResult {
    /// The winner, if any.
    pub fn winner(self) -> Option<Color> {
        match self {
            GameResult::Win { color, .. } => Some(color),
            GameResult::Draw => None,
        }
    }

    /// +1 if `color` won, -1 if it lost, 0 for a draw.
    pub fn score_for(self, color: Color) -> f32 {
        match self.winner() {
            Some(c) if c == color => 1.0,
            Some(_) => -1.0,
            None => 0.0,
        }
    }

    /// The PTN result string (`R-0`, `0-F`, `1/2-1/2`, ...).
    pub fn ptn(self) -> &'static str {
        match self {
            GameResult::Draw => "1/2-1/2",
            GameResult::Win { color: Color::White, kind: WinKind::Road } => "R-0",
            GameResult::Win { color: Color::Black, kind: WinKind::Road } => "0-R",
            GameResult::Win { color: Color::White, kind: WinKind::Flat } => "F-0",
            GameResult::Win { color: Color::Black, kind: WinKind::Flat } => "0-F",
            GameResult::Win { color: Color::White, kind: WinKind::Other } => "1-0",
            GameResult::Win { color: Color::Black, kind: WinKind::Other } => "0-1",
        }
    }

    /// Parses a PTN result string. `0-0` (unfinished) gives `Ok(None)`; anything else
    /// that is not a result gives `Err(())` (callers attach the position of the text).
    #[allow(clippy::result_unit_err)]
    pub fn parse_ptn(s: &str) -> Result<Option<GameResult>, ()> {
        let r = |color, kind| Ok(Some(GameResult::Win { color, kind }));
        match s {
            "R-0" => r(Color::White, WinKind::Road),
            "0-R" => r(Color::Black, WinKind::Road),
            "F-0" => r(Color::White, WinKind::Flat),
            "0-F" => r(Color::Black, WinKind::Flat),
            "1-0" => r(Color::White, WinKind::Other),
            "0-1" => r(Color::Black, WinKind::Other),
            "1/2-1/2" => Ok(Some(GameResult::Draw)),
            "0-0" => Ok(None),
            _ => Err(()),
        }
    }
}

impl fmt::Display for GameResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.ptn())
    }
}

/// Starting reserves (stones, capstones) per player for each size, from RULES.md.
pub const fn default_reserves(size: usize) -> (u8, u8) {
    match size {
        3 => (10, 0),
        4 => (15, 0),
        5 => (21, 1),
        6 => (30, 1),
        7 => (40, 2),
        _ => (50, 2),
    }
}
