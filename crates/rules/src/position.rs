//! The game state: stacks, bitboards, reserves, side to move; move generation,
//! checked `play`, fast unchecked `make`/`unmake`, and game end detection.

use crate::bitboard::{BitIter, Bitboard, SizeInfo};
use crate::moves::{Move, SPREADS};
use crate::types::{
    Color, Direction, GameResult, MAX_SIZE, MIN_SIZE, Piece, PieceKind, Square, WinKind, default_reserves,
};
use crate::zobrist;

/// How a game is set up: size, komi and reserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GameOptions {
    /// Board size, 3..=8.
    pub size: usize,
    /// Komi in half points, added to black's flat count (4 = komi 2, 5 = komi 2.5).
    pub half_komi: i8,
    /// Stones (flats and walls) each player starts with.
    pub stones: u8,
    /// Capstones each player starts with.
    pub caps: u8,
}

impl GameOptions {
    /// Standard reserves for `size` from the rules, no komi.
    pub fn new(size: usize) -> GameOptions {
        let (stones, caps) = default_reserves(size);
        GameOptions { size, half_komi: 0, stones, caps }
    }

    /// Same options with a komi in half points.
    pub fn with_half_komi(mut self, half_komi: i8) -> GameOptions {
        self.half_komi = half_komi;
        self
    }
}

/// Why a position or move was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    /// Board size outside 3..=8.
    #[error("board size {0} is not supported (3 to 8)")]
    BadSize(usize),
    /// Reserves too large: a stack stores at most 128 pieces, so each player may have at
    /// most 64 pieces in all.
    #[error("reserves of {0} pieces per player exceed the limit of 64")]
    BadReserves(usize),
    /// The game has already ended.
    #[error("the game is over")]
    GameOver,
    /// The square is outside the board.
    #[error("square index {0} is off the board")]
    OffBoard(u8),
    /// Placement on an occupied square.
    #[error("cannot place on an occupied square")]
    Occupied,
    /// No piece of that kind left in the reserve.
    #[error("no {0:?} left in the reserve")]
    NoReserve(PieceKind),
    /// In the first two plies only a flat may be placed.
    #[error("on the first turn only a flat of the opponent may be placed")]
    OpeningPlacementOnly,
    /// The origin of a spread is not controlled by the side to move.
    #[error("the stack is not controlled by the side to move")]
    NotYourStack,
    /// More pieces carried than the stack has, or than the carry limit.
    #[error("cannot carry {carry} pieces (stack height {height}, carry limit {limit})")]
    TooManyPieces {
        /// Pieces picked up.
        carry: usize,
        /// Height of the stack.
        height: usize,
        /// The board size.
        limit: usize,
    },
    /// The spread runs off the board.
    #[error("the spread runs off the board")]
    SpreadOffBoard,
    /// The spread runs onto a wall or capstone it may not cover.
    #[error("the spread is blocked by a wall or capstone")]
    Blocked,
}

/// Information `make` returns and `unmake` needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Undo {
    /// The spread's capstone flattened a wall.
    pub crushed: bool,
}

/// A Tak position. Squares are indexed `row * size + col`; every stack stores its piece
/// colours bottom-to-top as bits (1 = black) in a `u128` and its height; only a top piece
/// can be a wall or capstone, so kinds live in the `walls`/`caps` bitboards.
#[derive(Clone, PartialEq, Eq)]
pub struct Position {
    size: u8,
    half_komi: i8,
    start_stones: u8,
    start_caps: u8,
    to_move: Color,
    /// Plies played since the start of the game (`(move_number - 1) * 2 + player`).
    ply: u16,
    heights: [u8; 64],
    colors: [u128; 64],
    /// Squares whose top piece is white / black.
    owner: [Bitboard; 2],
    walls: Bitboard,
    caps: Bitboard,
    /// (stones, caps) per colour.
    reserves: [[u8; 2]; 2],
    hash: u64,
}

/// A read-only view of one stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stack {
    /// Number of pieces.
    pub height: usize,
    /// Colours bottom to top, bit set = black.
    pub colors: u128,
    /// Kind of the top piece (all others are flats).
    pub top_kind: PieceKind,
}

impl Stack {
    /// The empty stack.
    pub const EMPTY: Stack = Stack { height: 0, colors: 0, top_kind: PieceKind::Flat };

    /// Piece at `level` (0 = bottom).
    pub fn piece(&self, level: usize) -> Option<Piece> {
        if level >= self.height {
            return None;
        }
        let color = Color::from_index(((self.colors >> level) & 1) as usize);
        let kind = if level + 1 == self.height { self.top_kind } else { PieceKind::Flat };
        Some(Piece::new(color, kind))
    }

    /// The top piece.
    pub fn top(&self) -> Option<Piece> {
        self.height.checked_sub(1).and_then(|l| self.piece(l))
    }

    /// Pieces bottom to top.
    pub fn pieces(&self) -> impl Iterator<Item = Piece> + '_ {
        (0..self.height).filter_map(|l| self.piece(l))
    }
}

#[inline]
const fn low_mask(n: usize) -> u128 {
    if n >= 128 { u128::MAX } else { (1u128 << n) - 1 }
}

impl Position {
    /// The empty start position for `size` with standard reserves and no komi.
    pub fn new(size: usize) -> Result<Position, RulesError> {
        Position::with_options(GameOptions::new(size))
    }

    /// The empty start position for the given options.
    pub fn with_options(opts: GameOptions) -> Result<Position, RulesError> {
        if !(MIN_SIZE..=MAX_SIZE).contains(&opts.size) {
            return Err(RulesError::BadSize(opts.size));
        }
        let pieces = opts.stones as usize + opts.caps as usize;
        if pieces > 64 {
            return Err(RulesError::BadReserves(pieces));
        }
        let mut p = Position {
            size: opts.size as u8,
            half_komi: opts.half_komi,
            start_stones: opts.stones,
            start_caps: opts.caps,
            to_move: Color::White,
            ply: 0,
            heights: [0; 64],
            colors: [0; 64],
            owner: [0; 2],
            walls: 0,
            caps: 0,
            reserves: [[opts.stones, opts.caps]; 2],
            hash: 0,
        };
        p.hash = p.compute_hash();
        Ok(p)
    }

    /// Builds a position from stacks (index = square, bottom to top), side to move and ply.
    /// Reserves are the starting ones minus the pieces on the board. Used by the TPS reader.
    pub fn from_stacks(
        opts: GameOptions,
        stacks: &[Vec<Piece>],
        to_move: Color,
        ply: u16,
    ) -> Result<Position, RulesError> {
        let mut p = Position::with_options(opts)?;
        let n = opts.size;
        for (i, stack) in stacks.iter().enumerate().take(n * n) {
            let sq = i;
            for (level, piece) in stack.iter().enumerate() {
                if piece.color == Color::Black {
                    p.colors[sq] |= 1u128 << level;
                }
                let res = &mut p.reserves[piece.color.index()];
                if piece.kind == PieceKind::Cap {
                    res[1] = res[1].saturating_sub(1);
                } else {
                    res[0] = res[0].saturating_sub(1);
                }
            }
            p.heights[sq] = stack.len() as u8;
            if let Some(top) = stack.last() {
                match top.kind {
                    PieceKind::Wall => p.walls |= 1 << sq,
                    PieceKind::Cap => p.caps |= 1 << sq,
                    PieceKind::Flat => {}
                }
                p.owner[top.color.index()] |= 1 << sq;
            }
        }
        p.to_move = to_move;
        p.ply = ply;
        p.hash = p.compute_hash();
        Ok(p)
    }

    /// Board size N.
    #[inline]
    pub fn size(&self) -> usize {
        self.size as usize
    }

    /// Per-size masks.
    #[inline]
    pub fn info(&self) -> &'static SizeInfo {
        SizeInfo::get(self.size as usize)
    }

    /// The options this game was set up with.
    pub fn options(&self) -> GameOptions {
        GameOptions {
            size: self.size as usize,
            half_komi: self.half_komi,
            stones: self.start_stones,
            caps: self.start_caps,
        }
    }

    /// Komi in half points.
    #[inline]
    pub fn half_komi(&self) -> i8 {
        self.half_komi
    }

    /// Overrides the reserves: `[color][0]` stones, `[color][1]` capstones.
    pub fn set_reserves(&mut self, reserves: [[u8; 2]; 2]) {
        self.reserves = reserves;
    }

    /// Gives the move to the other player without playing (a "null move"), for analysis
    /// such as threat detection. Not a legal move in Tak.
    pub fn pass_turn(&mut self) {
        self.to_move = self.to_move.opposite();
        self.hash ^= zobrist::BLACK_TO_MOVE;
    }

    /// Changes the komi (half points).
    pub fn set_half_komi(&mut self, half_komi: i8) {
        self.half_komi = half_komi;
    }

    /// The player to move.
    #[inline]
    pub fn side_to_move(&self) -> Color {
        self.to_move
    }

    /// Plies played (0 at the start).
    #[inline]
    pub fn ply(&self) -> u16 {
        self.ply
    }

    /// The PTN/TPS move number (starts at 1, increases after black's move).
    pub fn move_number(&self) -> u16 {
        self.ply / 2 + 1
    }

    /// Whether the next move is one of the two opening placements of an opponent's flat.
    #[inline]
    pub fn is_opening(&self) -> bool {
        self.ply < 2
    }

    /// The Zobrist hash (incrementally maintained).
    #[inline]
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// (stones, capstones) left in `color`'s reserve.
    #[inline]
    pub fn reserves(&self, color: Color) -> (u8, u8) {
        let r = self.reserves[color.index()];
        (r[0], r[1])
    }

    /// Height of the stack on `sq`.
    #[inline]
    pub fn height(&self, sq: Square) -> usize {
        self.heights[sq.index()] as usize
    }

    /// The stack on `sq`.
    pub fn stack(&self, sq: Square) -> Stack {
        let i = sq.index();
        Stack { height: self.heights[i] as usize, colors: self.colors[i], top_kind: self.top_kind(i) }
    }

    /// The top piece on `sq`.
    pub fn top(&self, sq: Square) -> Option<Piece> {
        let i = sq.index();
        if self.heights[i] == 0 {
            return None;
        }
        let color = if self.owner[0] >> i & 1 == 1 { Color::White } else { Color::Black };
        Some(Piece::new(color, self.top_kind(i)))
    }

    #[inline]
    fn top_kind(&self, i: usize) -> PieceKind {
        if self.walls >> i & 1 == 1 {
            PieceKind::Wall
        } else if self.caps >> i & 1 == 1 {
            PieceKind::Cap
        } else {
            PieceKind::Flat
        }
    }

    /// Squares whose top piece belongs to `color`.
    #[inline]
    pub fn controlled(&self, color: Color) -> Bitboard {
        self.owner[color.index()]
    }

    /// Occupied squares.
    #[inline]
    pub fn occupied(&self) -> Bitboard {
        self.owner[0] | self.owner[1]
    }

    /// Squares topped by a wall.
    #[inline]
    pub fn walls(&self) -> Bitboard {
        self.walls
    }

    /// Squares topped by a capstone.
    #[inline]
    pub fn caps(&self) -> Bitboard {
        self.caps
    }

    /// Squares that count for `color`'s roads (its flats and capstones on top).
    #[inline]
    pub fn road_squares(&self, color: Color) -> Bitboard {
        self.owner[color.index()] & !self.walls
    }

    /// Squares topped by a flat of `color`.
    #[inline]
    pub fn flats(&self, color: Color) -> Bitboard {
        self.owner[color.index()] & !self.walls & !self.caps
    }

    /// Flat counts (white, black), without komi.
    pub fn flat_counts(&self) -> (u32, u32) {
        (self.flats(Color::White).count_ones(), self.flats(Color::Black).count_ones())
    }

    /// Whether `color` has a road on the board.
    #[inline]
    pub fn has_road(&self, color: Color) -> bool {
        self.info().has_road(self.road_squares(color))
    }

    /// The game result, if the game is over (checked in the rules' order: roads, where
    /// the player who just moved wins a double road, then a full board or an empty reserve).
    pub fn result(&self) -> Option<GameResult> {
        let mover = self.to_move.opposite();
        let info = self.info();
        if info.has_road(self.road_squares(mover)) {
            return Some(GameResult::Win { color: mover, kind: WinKind::Road });
        }
        if info.has_road(self.road_squares(self.to_move)) {
            return Some(GameResult::Win { color: self.to_move, kind: WinKind::Road });
        }
        let full = self.occupied() == info.full;
        let out = |c: Color| {
            let r = self.reserves[c.index()];
            r[0] == 0 && r[1] == 0
        };
        if full || out(Color::White) || out(Color::Black) {
            return Some(self.flat_result());
        }
        None
    }

    /// The flat-count result (with komi), as if the game ended now.
    pub fn flat_result(&self) -> GameResult {
        let (w, b) = self.flat_counts();
        let diff = 2 * w as i32 - 2 * b as i32 - self.half_komi as i32;
        match diff.signum() {
            1 => GameResult::Win { color: Color::White, kind: WinKind::Flat },
            -1 => GameResult::Win { color: Color::Black, kind: WinKind::Flat },
            _ => GameResult::Draw,
        }
    }

    /// Recomputes the Zobrist hash from scratch (used by tests and constructors).
    pub fn compute_hash(&self) -> u64 {
        let mut h = 0u64;
        for i in 0..self.size() * self.size() {
            let height = self.heights[i] as usize;
            for level in 0..height {
                h ^= zobrist::piece(i, level, ((self.colors[i] >> level) & 1) as usize);
            }
            if height > 0 {
                h ^= zobrist::top_kind(i, self.top_kind(i));
            }
        }
        if self.to_move == Color::Black {
            h ^= zobrist::BLACK_TO_MOVE;
        }
        h
    }

    // ---------------------------------------------------------------- move generation

    /// Appends every legal move to `out`. Does not check whether the game is over:
    /// callers that need that check `result()` first (see [`Position::legal_moves`]).
    pub fn generate_moves(&self, out: &mut Vec<Move>) {
        let info = self.info();
        let empty = info.full & !self.occupied();
        if self.is_opening() {
            for sq in BitIter(empty) {
                out.push(Move::place(sq, PieceKind::Flat));
            }
            return;
        }
        let [stones, caps] = self.reserves[self.to_move.index()];
        for sq in BitIter(empty) {
            if stones > 0 {
                out.push(Move::place(sq, PieceKind::Flat));
                out.push(Move::place(sq, PieceKind::Wall));
            }
            if caps > 0 {
                out.push(Move::place(sq, PieceKind::Cap));
            }
        }
        let blockers = self.walls | self.caps;
        let n = info.size;
        for sq in BitIter(self.owner[self.to_move.index()]) {
            let carry = (self.heights[sq.index()] as usize).min(n);
            let is_cap = self.caps >> sq.index() & 1 == 1;
            for dir in Direction::ALL {
                let (dist, blocker) = info.slide(sq, dir, blockers);
                for &p in SPREADS.normal(carry, dist) {
                    out.push(Move::spread(sq, dir, p));
                }
                if is_cap
                    && let Some(b) = blocker
                    && self.walls >> b.index() & 1 == 1
                {
                    for &p in SPREADS.crush(carry, dist) {
                        out.push(Move::spread(sq, dir, p));
                    }
                }
            }
        }
    }

    /// All legal moves; empty if the game is over.
    pub fn legal_moves(&self) -> Vec<Move> {
        let mut v = Vec::new();
        if self.result().is_none() {
            self.generate_moves(&mut v);
        }
        v
    }

    /// Number of moves [`Position::generate_moves`] would produce, without producing them.
    pub fn count_moves(&self) -> u64 {
        let info = self.info();
        let empty = (info.full & !self.occupied()).count_ones() as u64;
        if self.is_opening() {
            return empty;
        }
        let [stones, caps] = self.reserves[self.to_move.index()];
        let mut count = empty * (2 * (stones > 0) as u64 + (caps > 0) as u64);
        let blockers = self.walls | self.caps;
        let n = info.size;
        for sq in BitIter(self.owner[self.to_move.index()]) {
            let carry = (self.heights[sq.index()] as usize).min(n);
            let is_cap = self.caps >> sq.index() & 1 == 1;
            for dir in Direction::ALL {
                let (dist, blocker) = info.slide(sq, dir, blockers);
                count += SPREADS.normal[carry][dist].1 as u64;
                if is_cap
                    && let Some(b) = blocker
                    && self.walls >> b.index() & 1 == 1
                {
                    count += SPREADS.crush[carry][dist].1 as u64;
                }
            }
        }
        count
    }

    /// Checks a move against the rules (not whether the game is over).
    pub fn validate(&self, mv: Move) -> Result<(), RulesError> {
        let n = self.size();
        let sq = mv.square();
        if sq.index() >= n * n {
            return Err(RulesError::OffBoard(sq.0));
        }
        if mv.is_placement() {
            if self.heights[sq.index()] != 0 {
                return Err(RulesError::Occupied);
            }
            let kind = mv.kind();
            if self.is_opening() {
                if kind != PieceKind::Flat {
                    return Err(RulesError::OpeningPlacementOnly);
                }
                if self.reserves[self.to_move.opposite().index()][0] == 0 {
                    return Err(RulesError::NoReserve(kind));
                }
                return Ok(());
            }
            let r = self.reserves[self.to_move.index()];
            let available = if kind == PieceKind::Cap { r[1] } else { r[0] };
            if available == 0 {
                return Err(RulesError::NoReserve(kind));
            }
            return Ok(());
        }
        if self.is_opening() {
            return Err(RulesError::OpeningPlacementOnly);
        }
        if self.owner[self.to_move.index()] >> sq.index() & 1 == 0 {
            return Err(RulesError::NotYourStack);
        }
        let height = self.heights[sq.index()] as usize;
        let carry = mv.carry();
        if carry > height || carry > n {
            return Err(RulesError::TooManyPieces { carry, height, limit: n });
        }
        let is_cap = self.caps >> sq.index() & 1 == 1;
        let dir = mv.direction();
        let mut cur = sq;
        let drops: Vec<u8> = mv.drops().collect();
        for (i, &d) in drops.iter().enumerate() {
            cur = cur.step(dir, n).ok_or(RulesError::SpreadOffBoard)?;
            let c = cur.index();
            if self.caps >> c & 1 == 1 {
                return Err(RulesError::Blocked);
            }
            if self.walls >> c & 1 == 1 && !(is_cap && d == 1 && i + 1 == drops.len()) {
                return Err(RulesError::Blocked);
            }
        }
        Ok(())
    }

    /// Plays a move after checking it; on error the position is unchanged.
    pub fn play(&mut self, mv: Move) -> Result<Undo, RulesError> {
        if self.result().is_some() {
            return Err(RulesError::GameOver);
        }
        self.validate(mv)?;
        Ok(self.make(mv))
    }

    /// Whether `mv` is legal here (including that the game is not over).
    pub fn is_legal(&self, mv: Move) -> bool {
        self.result().is_none() && self.validate(mv).is_ok()
    }

    // ---------------------------------------------------------------- make / unmake

    #[inline]
    fn set_top(&mut self, i: usize) {
        let bit = 1u64 << i;
        let h = self.heights[i] as usize;
        self.owner[0] &= !bit;
        self.owner[1] &= !bit;
        if h > 0 {
            let c = ((self.colors[i] >> (h - 1)) & 1) as usize;
            self.owner[c] |= bit;
        }
    }

    #[inline]
    fn set_kind(&mut self, i: usize, kind: PieceKind) {
        let bit = 1u64 << i;
        self.walls &= !bit;
        self.caps &= !bit;
        match kind {
            PieceKind::Wall => self.walls |= bit,
            PieceKind::Cap => self.caps |= bit,
            PieceKind::Flat => {}
        }
    }

    /// Plays a move without checking it. The move must be legal here.
    #[inline]
    pub fn make(&mut self, mv: Move) -> Undo {
        let i = mv.square().index();
        let mut undo = Undo::default();
        if mv.is_placement() {
            let kind = mv.kind();
            let color = if self.is_opening() { self.to_move.opposite() } else { self.to_move };
            let r = &mut self.reserves[color.index()];
            if kind == PieceKind::Cap {
                r[1] -= 1;
            } else {
                r[0] -= 1;
            }
            self.heights[i] = 1;
            self.colors[i] = color.index() as u128;
            self.owner[color.index()] |= 1 << i;
            self.set_kind(i, kind);
            self.hash ^= zobrist::piece(i, 0, color.index()) ^ zobrist::top_kind(i, kind);
        } else {
            let n = self.size();
            let step = dir_step(mv.direction(), n);
            let carry = mv.carry();
            let h = self.heights[i] as usize;
            let kind = self.top_kind(i);
            let mut carried = self.colors[i] >> (h - carry);
            let remaining = h - carry;
            for level in remaining..h {
                self.hash ^= zobrist::piece(i, level, ((carried >> (level - remaining)) & 1) as usize);
            }
            self.hash ^= zobrist::top_kind(i, kind);
            self.colors[i] &= low_mask(remaining);
            self.heights[i] = remaining as u8;
            self.set_kind(i, PieceKind::Flat);
            self.set_top(i);
            if remaining > 0 {
                self.hash ^= zobrist::top_kind(i, PieceKind::Flat);
            }
            let mut p = mv.pattern() as u32;
            let mut cur = i as isize;
            while p != 0 {
                let d = (p.trailing_zeros() + 1) as usize;
                p >>= d;
                cur += step;
                let c = cur as usize;
                let dh = self.heights[c] as usize;
                if dh > 0 {
                    let old = self.top_kind(c);
                    self.hash ^= zobrist::top_kind(c, old);
                    if old == PieceKind::Wall {
                        undo.crushed = true;
                    }
                }
                let bits = carried & low_mask(d);
                carried >>= d;
                for k in 0..d {
                    self.hash ^= zobrist::piece(c, dh + k, ((bits >> k) & 1) as usize);
                }
                self.colors[c] |= bits << dh;
                self.heights[c] = (dh + d) as u8;
                let new_kind = if p == 0 { kind } else { PieceKind::Flat };
                self.set_kind(c, new_kind);
                self.hash ^= zobrist::top_kind(c, new_kind);
                self.set_top(c);
            }
        }
        self.to_move = self.to_move.opposite();
        self.hash ^= zobrist::BLACK_TO_MOVE;
        self.ply += 1;
        undo
    }

    /// What the legal spread `mv` would leave on the squares it touches, without making
    /// it: those squares (its origin and every square it drops on) and, among them, the
    /// ones whose top piece afterwards counts for `color`'s road (a flat or capstone of
    /// `color`). The tactical queries test spreads with it instead of `make`/`unmake`.
    #[inline]
    pub(crate) fn spread_road_change(&self, mv: Move, color: Color) -> (Bitboard, Bitboard) {
        debug_assert!(!mv.is_placement(), "a spread");
        let i = mv.square().index();
        let step = dir_step(mv.direction(), self.size());
        let carry = mv.carry();
        let h = self.heights[i] as usize;
        let kind = self.top_kind(i);
        let want = color.index() as u128;
        let remaining = h - carry;
        let mut carried = self.colors[i] >> remaining;
        let mut touched: Bitboard = 1 << i;
        // The piece the spread uncovers is a flat (only a top piece can stand or be a cap).
        let mut road: Bitboard =
            if remaining > 0 && (self.colors[i] >> (remaining - 1)) & 1 == want { 1 << i } else { 0 };
        let mut p = mv.pattern() as u32;
        let mut cur = i as isize;
        while p != 0 {
            let d = p.trailing_zeros() + 1;
            p >>= d;
            cur += step;
            let c = cur as usize;
            let top = (carried >> (d - 1)) & 1;
            carried >>= d;
            touched |= 1 << c;
            // The last square gets the moving stack's top piece, the others flats.
            if top == want && (p != 0 || kind != PieceKind::Wall) {
                road |= 1 << c;
            }
        }
        (touched, road)
    }

    /// Takes back `mv`, which must be the last move made, with the `Undo` it returned.
    #[inline]
    pub fn unmake(&mut self, mv: Move, undo: Undo) {
        self.to_move = self.to_move.opposite();
        self.hash ^= zobrist::BLACK_TO_MOVE;
        self.ply -= 1;
        let i = mv.square().index();
        if mv.is_placement() {
            let kind = mv.kind();
            let color = if self.is_opening() { self.to_move.opposite() } else { self.to_move };
            let r = &mut self.reserves[color.index()];
            if kind == PieceKind::Cap {
                r[1] += 1;
            } else {
                r[0] += 1;
            }
            self.heights[i] = 0;
            self.colors[i] = 0;
            self.owner[color.index()] &= !(1 << i);
            self.set_kind(i, PieceKind::Flat);
            self.hash ^= zobrist::piece(i, 0, color.index()) ^ zobrist::top_kind(i, kind);
            return;
        }
        let n = self.size();
        let step = dir_step(mv.direction(), n);
        let carry = mv.carry();
        // Squares and drop counts, first to last.
        let mut drops = [0u8; 8];
        let mut len = 0;
        let mut p = mv.pattern() as u32;
        while p != 0 {
            let d = p.trailing_zeros() + 1;
            p >>= d;
            drops[len] = d as u8;
            len += 1;
        }
        let last = (i as isize + step * len as isize) as usize;
        let kind = self.top_kind(last);
        let mut carried: u128 = 0;
        let mut shift = carry;
        for j in (0..len).rev() {
            let c = (i as isize + step * (j as isize + 1)) as usize;
            let d = drops[j] as usize;
            let dh = self.heights[c] as usize;
            let rest = dh - d;
            let bits = (self.colors[c] >> rest) & low_mask(d);
            for k in 0..d {
                self.hash ^= zobrist::piece(c, rest + k, ((bits >> k) & 1) as usize);
            }
            self.hash ^= zobrist::top_kind(c, self.top_kind(c));
            shift -= d;
            carried |= bits << shift;
            self.colors[c] &= low_mask(rest);
            self.heights[c] = rest as u8;
            let restored = if j + 1 == len && undo.crushed { PieceKind::Wall } else { PieceKind::Flat };
            self.set_kind(c, restored);
            if rest > 0 {
                self.hash ^= zobrist::top_kind(c, restored);
            }
            self.set_top(c);
        }
        let h = self.heights[i] as usize;
        if h > 0 {
            self.hash ^= zobrist::top_kind(i, PieceKind::Flat);
        }
        for k in 0..carry {
            self.hash ^= zobrist::piece(i, h + k, ((carried >> k) & 1) as usize);
        }
        self.colors[i] |= carried << h;
        self.heights[i] = (h + carry) as u8;
        self.set_kind(i, kind);
        self.hash ^= zobrist::top_kind(i, kind);
        self.set_top(i);
    }
}

#[inline]
fn dir_step(dir: Direction, n: usize) -> isize {
    match dir {
        Direction::Up => n as isize,
        Direction::Down => -(n as isize),
        Direction::Right => 1,
        Direction::Left => -1,
    }
}

impl std::hash::Hash for Position {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}
