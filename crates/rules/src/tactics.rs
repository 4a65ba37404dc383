//! Tactical queries for the side to move: immediate wins (road or flats, placements and
//! spreads), moves that hand the opponent an immediate win, and forced wins in three
//! plies (double threats).
//!
//! Placements are decided with bitboards alone: an empty square completes a road when it
//! touches (or lies on) one edge's road group and the opposite edge's. Spreads are tried
//! only where a cheap bound says a road is possible (a spread can only add to the mover's
//! road the squares of its own line, so when the mover's road squares plus that line hold
//! no road, none of its spreads can make one; that bound is read off the unions of the
//! road groups touching each edge, a few ANDs a line, see `EdgeUnions`), and without
//! playing them: the tops a spread leaves on its squares are read off the stack. Flat wins
//! need a move that fills the board or empties the mover's reserve: only those moves
//! (placements with the last piece or on the last empty square, spreads whose line holds
//! every empty square) are played and the count looked at.
//!
//! A move loses at once when it leaves the opponent an immediate win; where the opponent
//! has a road by placement that the move leaves open (it covers neither that square nor
//! any of the opponent's road squares, and does not end the game itself), that is decided
//! without playing it.

use crate::bitboard::{BitIter, Bitboard, SizeInfo};
use crate::moves::{Move, SPREADS};
use crate::position::Position;
use crate::types::{Color, Direction, PieceKind, Square};

impl Position {
    /// Empty squares where `color` would complete a road by placing a flat (or a
    /// capstone), whether or not it is `color`'s turn or it has pieces left.
    pub fn road_completion_squares(&self, color: Color) -> Bitboard {
        let info = self.info();
        let road = self.road_squares(color);
        if road.count_ones() + 1 < info.size as u32 {
            return 0;
        }
        EdgeUnions::new(info, road).completions(info, info.full & !self.occupied())
    }

    /// The road groups of `color` (orthogonally connected sets of its flats and capstones
    /// on top), each as a bitboard, in order of their lowest square.
    pub fn road_groups(&self, color: Color) -> RoadGroups {
        RoadGroups { info: self.info(), left: self.road_squares(color) }
    }

    /// Every move with which the side to move wins at once: completing a road (by
    /// placement or spread; a spread that completes both players' roads wins for the
    /// mover) or ending the game on flats in its favour. Appends to `out`.
    pub fn immediate_wins(&self, out: &mut Vec<Move>) {
        self.scan_immediate_wins(self.side_to_move(), |mv| {
            out.push(mv);
            false
        });
    }

    /// One move with which the side to move wins at once, if there is one (the cheapest
    /// to find: placements first).
    pub fn find_immediate_win(&self) -> Option<Move> {
        self.find_immediate_win_for(self.side_to_move())
    }

    /// [`Position::find_immediate_win`] for `me`, as if it were `me`'s turn.
    fn find_immediate_win_for(&self, me: Color) -> Option<Move> {
        let mut found = None;
        self.scan_immediate_wins(me, |mv| {
            found = Some(mv);
            true
        });
        found
    }

    /// Whether the player who just moved could win at once if it were their turn again
    /// ("Tak" in the wide sense: roads and flat wins).
    pub fn opponent_threatens(&self) -> bool {
        if self.result().is_some() || self.is_opening() {
            return false;
        }
        self.find_immediate_win_for(self.side_to_move().opposite()).is_some()
    }

    /// Whether the legal move `mv` loses at once: it ends the game in the opponent's
    /// favour, or leaves the opponent an immediate win. The position is unchanged
    /// afterwards.
    pub fn move_loses_at_once(&mut self, mv: Move) -> bool {
        let threat = OpenThreat::of(self);
        self.loses_at_once(mv, threat.as_ref())
    }

    /// The indices in `moves` (legal moves of this position) of the moves that lose at
    /// once ([`Position::move_loses_at_once`]), in order. The position is unchanged
    /// afterwards.
    pub fn losing_move_indices(&mut self, moves: &[Move]) -> Vec<u16> {
        let threat = OpenThreat::of(self);
        (0..moves.len() as u16).filter(|&i| self.loses_at_once(moves[i as usize], threat.as_ref())).collect()
    }

    /// [`Position::move_loses_at_once`], decided without playing the move where
    /// `threat` (the opponent's road by placement) shows that it stays open.
    fn loses_at_once(&mut self, mv: Move, threat: Option<&OpenThreat>) -> bool {
        if let Some(lost) = threat.and_then(|t| t.decides(self, mv)) {
            return lost;
        }
        let me = self.side_to_move();
        let undo = self.make(mv);
        let lost = match self.result() {
            Some(r) => r.winner() == Some(me.opposite()),
            None => self.find_immediate_win().is_some(),
        };
        self.unmake(mv, undo);
        lost
    }

    /// `moves` (legal moves of this position) split into those that lose at once
    /// ([`Position::move_loses_at_once`]) and the others, each in order. The position is
    /// unchanged afterwards.
    pub fn partition_losing_moves(&mut self, moves: &[Move]) -> (Vec<Move>, Vec<Move>) {
        let threat = OpenThreat::of(self);
        moves.iter().partition(|&&mv| self.loses_at_once(mv, threat.as_ref()))
    }

    /// The moves after which the opponent has no immediate win and the game is not lost
    /// (all legal moves when the opponent threatens nothing).
    pub fn safe_moves(&self) -> Vec<Move> {
        self.clone().partition_losing_moves(&self.legal_moves()).1
    }

    /// Moves that force a win in three plies: the move itself does not end the game, the
    /// opponent has no immediate win after it, and every reply either loses at once or
    /// leaves the side to move an immediate win (typically a double road threat). Empty
    /// when the side to move has an immediate win (that is a win in one). The search is
    /// exhaustive over the replies; moves are considered only if they create a threat.
    pub fn forced_wins_in_three(&self) -> Vec<Move> {
        let mut wins = Vec::new();
        if self.result().is_some() || self.is_opening() || self.find_immediate_win().is_some() {
            return wins;
        }
        let me = self.side_to_move();
        let mut pos = self.clone();
        let mut replies = Vec::new();
        for mv in self.legal_moves() {
            let undo = pos.make(mv);
            if pos.result().is_none() && pos.find_immediate_win().is_none() && pos.opponent_threatens() {
                replies.clear();
                pos.generate_moves(&mut replies);
                let forced = replies.iter().all(|&reply| {
                    let u = pos.make(reply);
                    let ok = match pos.result() {
                        Some(r) => r.winner() == Some(me),
                        None => pos.find_immediate_win().is_some(),
                    };
                    pos.unmake(reply, u);
                    ok
                });
                if forced {
                    wins.push(mv);
                }
            }
            pos.unmake(mv, undo);
        }
        wins
    }

    /// Calls `found` with each move that would win at once for `me` if it were `me`'s
    /// turn, until it returns `true`.
    fn scan_immediate_wins(&self, me: Color, mut found: impl FnMut(Move) -> bool) {
        if self.is_opening() || self.result().is_some() {
            return;
        }
        let info = self.info();
        let n = info.size;
        let (stones, caps) = self.reserves(me);
        let empty = info.full & !self.occupied();
        let empties = empty.count_ones() as usize;
        // Moves that may end the game on the flat count are played on a copy (with `me`
        // to move) and the result looked at; every other move wins only by a road.
        let mut scratch: Option<Position> = None;
        let mut wins_by_playing = |mv: Move| {
            let pos = scratch.get_or_insert_with(|| {
                let mut pos = self.clone();
                if pos.side_to_move() != me {
                    pos.pass_turn();
                }
                pos
            });
            let undo = pos.make(mv);
            let wins = pos.result().is_some_and(|r| r.winner() == Some(me));
            pos.unmake(mv, undo);
            wins
        };
        let road = self.road_squares(me);
        let road_count = road.count_ones() as usize;
        // Built when first needed (a road needs at least `n` squares).
        let mut unions: Option<EdgeUnions> = None;
        let completions = if road_count + 1 < n {
            0
        } else {
            unions.get_or_insert_with(|| EdgeUnions::new(info, road)).completions(info, empty)
        };
        if stones as usize + caps as usize <= 1 || empties == 1 {
            // Every placement ends the game: the mover's last piece, or the last empty
            // square. A road wins first; otherwise the count decides.
            let has = |kind: PieceKind| if kind == PieceKind::Cap { caps > 0 } else { stones > 0 };
            for sq in BitIter(empty) {
                for kind in [PieceKind::Flat, PieceKind::Wall, PieceKind::Cap].into_iter().filter(|&k| has(k)) {
                    let mv = Move::place(sq, kind);
                    let road = kind != PieceKind::Wall && completions >> sq.index() & 1 == 1;
                    if (road || wins_by_playing(mv)) && found(mv) {
                        return;
                    }
                }
            }
        } else {
            for sq in BitIter(completions) {
                if stones > 0 && found(Move::place(sq, PieceKind::Flat)) {
                    return;
                }
                if caps > 0 && found(Move::place(sq, PieceKind::Cap)) {
                    return;
                }
            }
        }
        // Spreads, line by line: where the bound allows a road, or where one spread could
        // fill the board (every empty square on its line; a spread covers at most n − 1).
        let blockers = self.walls() | self.caps();
        for sq in BitIter(self.controlled(me)) {
            let carry = self.height(sq).min(n);
            let is_cap = self.caps() >> sq.index() & 1 == 1;
            for dir in Direction::ALL {
                let (dist, blocker) = info.slide(sq, dir, blockers);
                let crush = is_cap && blocker.is_some_and(|b| self.walls() >> b.index() & 1 == 1);
                let reach = carry.min(dist + crush as usize);
                if reach == 0 {
                    continue;
                }
                let line = line_squares(info, sq, dir, reach);
                let may_fill = empties < n && empty & !line == 0;
                // The line and `sq` add at most `reach + 1` squares to the road.
                if !may_fill
                    && (road_count + reach + 1 < n
                        || !unions
                            .get_or_insert_with(|| EdgeUnions::new(info, road))
                            .joined_by(info, line | 1 << sq.index()))
                {
                    continue;
                }
                let normal = SPREADS.normal(carry, dist).iter();
                let crushing = if crush { SPREADS.crush(carry, dist) } else { &[] };
                for &pattern in normal.chain(crushing.iter()) {
                    let mv = Move::spread(sq, dir, pattern);
                    // A spread that cannot fill the board wins exactly when it completes the
                    // mover's road (a road for both sides wins for the mover).
                    let wins = if may_fill {
                        wins_by_playing(mv)
                    } else {
                        let (touched, gained) = self.spread_road_change(mv, me);
                        info.has_road((road & !touched) | gained)
                    };
                    if wins && found(mv) {
                        return;
                    }
                }
            }
        }
    }
}

/// The board's edges, in opposite pairs: left, right, bottom, top (indices [`LEFT`],
/// [`RIGHT`], [`BOTTOM`], [`TOP`]).
fn edges(info: &SizeInfo) -> [Bitboard; 4] {
    [info.left, info.right, info.bottom, info.top]
}

const LEFT: usize = 0;
const RIGHT: usize = 1;
const BOTTOM: usize = 2;
const TOP: usize = 3;

/// For one colour, the union of its road groups that touch each edge: where placing one
/// piece completes a road ([`EdgeUnions::completions`]), and whether a connected set of
/// squares added to the road makes one, a few ANDs instead of two flood fills
/// ([`EdgeUnions::joined_by`]).
struct EdgeUnions {
    /// By edge ([`edges`]' order).
    touching: [Bitboard; 4],
    /// One group already touches opposite edges (a road: a finished game).
    spans: bool,
}

impl EdgeUnions {
    fn new(info: &SizeInfo, road: Bitboard) -> EdgeUnions {
        let touching = edges(info).map(|e| info.flood(road & e, road));
        let spans = touching[LEFT] & touching[RIGHT] != 0 || touching[BOTTOM] & touching[TOP] != 0;
        EdgeUnions { touching, spans }
    }

    /// The squares of `empty` that join a group touching one edge and a group touching
    /// the opposite one (or lie on an edge and join the other's group).
    fn completions(&self, info: &SizeInfo, empty: Bitboard) -> Bitboard {
        let edges = edges(info);
        // Squares that join the road group touching an edge: the edge itself and the
        // neighbours of that group.
        let joins = |e: usize| edges[e] | info.neighbours(self.touching[e]);
        empty & ((joins(LEFT) & joins(RIGHT)) | (joins(BOTTOM) & joins(TOP)))
    }

    /// Whether the road plus `set` (orthogonally connected) holds a road. `set` joins
    /// every group it overlaps or borders into one, and the groups it misses stay as they
    /// were (none a road), so there is a road exactly when that one touches opposite
    /// edges: when `set` or a group it reaches touches each. The same answer as
    /// `info.has_road(road | set)`.
    fn joined_by(&self, info: &SizeInfo, set: Bitboard) -> bool {
        if self.spans {
            return true;
        }
        let edges = edges(info);
        let reach = set | info.neighbours(set);
        let touches = |e: usize| set & edges[e] != 0 || self.touching[e] & reach != 0;
        (touches(LEFT) && touches(RIGHT)) || (touches(BOTTOM) && touches(TOP))
    }
}

/// The opponent's roads by placement, seen from the side to move: enough to decide
/// most of [`Position::move_loses_at_once`] without playing the move. A move that leaves
/// one of these squares empty and covers none of the opponent's road squares leaves that
/// road open, and so loses, unless it ends the game itself (the mover's road, or a flat
/// count: the mover's last piece or the board's last empty square).
struct OpenThreat {
    /// Empty squares where the opponent completes a road by placement.
    squares: Bitboard,
    /// The opponent's road squares (covering one may break the road).
    their_road: Bitboard,
    /// The mover's road squares, and the empty squares where placing completes its road.
    my_road: Bitboard,
    my_completions: Bitboard,
    /// The mover has one piece left, or the board one empty square, or a spread could
    /// fill the board: a move may end the game on flats, so nothing is decided here.
    flat_end_possible: bool,
}

impl OpenThreat {
    /// The opponent's open roads by placement in `pos`; `None` when it has none (or the
    /// game is over, or in the opening).
    fn of(pos: &Position) -> Option<OpenThreat> {
        if pos.is_opening() || pos.result().is_some() {
            return None;
        }
        let me = pos.side_to_move();
        let them = me.opposite();
        let (stones, caps) = pos.reserves(them);
        if stones == 0 && caps == 0 {
            return None;
        }
        let squares = pos.road_completion_squares(them);
        if squares == 0 {
            return None;
        }
        let info = pos.info();
        let (my_stones, my_caps) = pos.reserves(me);
        let empties = (info.full & !pos.occupied()).count_ones() as usize;
        Some(OpenThreat {
            squares,
            their_road: pos.road_squares(them),
            my_road: pos.road_squares(me),
            my_completions: pos.road_completion_squares(me),
            flat_end_possible: my_stones as usize + my_caps as usize <= 1 || empties < info.size,
        })
    }

    /// Whether the legal move `mv` loses at once, where that is clear without playing it.
    fn decides(&self, pos: &Position, mv: Move) -> Option<bool> {
        if self.flat_end_possible {
            return None;
        }
        let info = pos.info();
        let touched = if mv.is_placement() {
            if mv.kind() != PieceKind::Wall && self.my_completions >> mv.square().index() & 1 == 1 {
                return Some(false); // the mover's road: a win
            }
            1 << mv.square().index()
        } else {
            let (touched, gained) = pos.spread_road_change(mv, pos.side_to_move());
            if info.has_road((self.my_road & !touched) | gained) {
                return Some(false); // the mover's road wins, whatever else it completes
            }
            touched
        };
        // The opponent's road squares and one of its completion squares untouched: it
        // still completes that road by placing there (its reserves are unchanged).
        (touched & self.their_road == 0 && self.squares & !touched != 0).then_some(true)
    }
}

/// Iterator over the road groups of one colour ([`Position::road_groups`]).
#[derive(Clone, Debug)]
pub struct RoadGroups {
    info: &'static crate::bitboard::SizeInfo,
    left: Bitboard,
}

impl Iterator for RoadGroups {
    type Item = Bitboard;

    #[inline]
    fn next(&mut self) -> Option<Bitboard> {
        if self.left == 0 {
            return None;
        }
        // Groups are components, so flooding inside what is left finds the whole group.
        let group = self.info.flood(self.left & self.left.wrapping_neg(), self.left);
        self.left &= !group;
        Some(group)
    }
}

/// The slow reference for [`Position::immediate_wins`]: every legal move played and the
/// result looked at, sorted. For tests and checks, not for the search.
pub fn immediate_wins_by_trying(pos: &Position) -> Vec<Move> {
    let me = pos.side_to_move();
    let mut p = pos.clone();
    let mut v = pos.legal_moves();
    v.retain(|&mv| {
        let u = p.make(mv);
        let w = p.result().is_some_and(|r| r.winner() == Some(me));
        p.unmake(mv, u);
        w
    });
    v.sort();
    v
}

/// A kind of tactical test position (see [`classify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tactic {
    /// The side to move completes a road now.
    RoadInOne,
    /// The side to move has no immediate win, the opponent threatens one, and some moves
    /// stop it while others do not.
    MustBlock,
    /// No immediate win, but a move forces a win in three plies (a double threat),
    /// proven by exhaustive search.
    WinInThree,
}

impl Tactic {
    /// Every kind, in report order.
    pub const ALL: [Tactic; 3] = [Tactic::RoadInOne, Tactic::MustBlock, Tactic::WinInThree];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Tactic::RoadInOne => "road in one",
            Tactic::MustBlock => "must block",
            Tactic::WinInThree => "win in three",
        }
    }
}

/// A position of a tactics suite and the moves that solve it.
#[derive(Clone, Debug)]
pub struct TacticPosition {
    /// The kind of test.
    pub tactic: Tactic,
    /// The position, side to move to play.
    pub position: Position,
    /// The moves that solve it: the immediate wins (road in one), the moves that leave
    /// the opponent no immediate win (must block), the forced wins (win in three).
    pub solutions: Vec<Move>,
}

/// Classifies `pos` as a tactical test position, if it is one. A position with a road in
/// one is only that; one that must block is not also checked for a win in three.
pub fn classify(pos: &Position) -> Option<TacticPosition> {
    if pos.result().is_some() || pos.is_opening() {
        return None;
    }
    let me = pos.side_to_move();
    let make = |tactic, solutions: Vec<Move>| Some(TacticPosition { tactic, position: pos.clone(), solutions });
    let mut wins = Vec::new();
    pos.immediate_wins(&mut wins);
    if !wins.is_empty() {
        let mut p = pos.clone();
        let road = wins.iter().any(|&mv| {
            let u = p.make(mv);
            let road = p.result() == Some(crate::GameResult::Win { color: me, kind: crate::WinKind::Road });
            p.unmake(mv, u);
            road
        });
        return if road { make(Tactic::RoadInOne, wins) } else { None };
    }
    if pos.opponent_threatens() {
        let safe = pos.safe_moves();
        let legal = pos.count_moves() as usize;
        return if !safe.is_empty() && safe.len() < legal { make(Tactic::MustBlock, safe) } else { None };
    }
    let forced = pos.forced_wins_in_three();
    if forced.is_empty() { None } else { make(Tactic::WinInThree, forced) }
}

/// A tactics suite source that cannot be read ([`read_positions`], [`parse_tps_lines`]).
/// Each error names the file, or the line, and its cause is the [`std::error::Error::source`].
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// A file or directory that cannot be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file or directory.
        path: std::path::PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A `.ptn` file that does not parse or replay.
    #[error("{}", path.display())]
    Ptn {
        /// The file.
        path: std::path::PathBuf,
        /// Where and what.
        #[source]
        source: crate::notation::PtnError,
    },
    /// A line of TPS text that is not a position.
    #[error("line {line}")]
    Tps {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        #[source]
        source: crate::notation::TpsError,
    },
    /// The error is in this file (a `.tps` file's bad line).
    #[error("{}", path.display())]
    In {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        #[source]
        source: Box<SuiteError>,
    },
}

/// Reads the positions of a tactics suite source: a PTN game (every position of it), a
/// text file of TPS lines (blank lines and `#` comments skipped), or a directory of
/// `.ptn` and `.tps` files (sorted by name). Errors name the file (and line) and the
/// problem.
pub fn read_positions(path: &std::path::Path) -> Result<Vec<Position>, SuiteError> {
    let read_error = |source| SuiteError::Read { path: path.to_path_buf(), source };
    if path.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(path)
            .map_err(read_error)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "ptn" || e == "tps"))
            .collect();
        files.sort();
        let mut out = Vec::new();
        for f in files {
            out.extend(read_positions(&f)?);
        }
        return Ok(out);
    }
    let text = std::fs::read_to_string(path).map_err(read_error)?;
    if path.extension().is_some_and(|e| e == "ptn") {
        let replay = crate::notation::Ptn::parse(&text)
            .and_then(|p| p.replay())
            .map_err(|source| SuiteError::Ptn { path: path.to_path_buf(), source })?;
        return Ok(replay.positions().to_vec());
    }
    parse_tps_lines(&text).map_err(|e| SuiteError::In { path: path.to_path_buf(), source: Box::new(e) })
}

/// Positions from TPS lines (blank lines and `#` comments skipped).
pub fn parse_tps_lines(text: &str) -> Result<Vec<Position>, SuiteError> {
    let mut out = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        out.push(crate::notation::parse_tps(line).map_err(|source| SuiteError::Tps { line: no + 1, source })?);
    }
    Ok(out)
}

/// The first `count` squares from `sq` (exclusive) in `dir`.
#[inline]
fn line_squares(info: &SizeInfo, sq: Square, dir: Direction, count: usize) -> Bitboard {
    // The ray's squares nearer to `sq` than the (count + 1)-th (a ray holds at least
    // `count`, so the subtractions stay in range).
    let (s, n) = (sq.index(), info.size);
    let below = |k: usize| if k >= 64 { u64::MAX } else { (1u64 << k) - 1 };
    let ray = info.rays[s][dir.index()];
    match dir {
        Direction::Up => ray & below(s + count * n + 1),
        Direction::Right => ray & below(s + count + 1),
        Direction::Down => ray & !below(s.saturating_sub(count * n)),
        Direction::Left => ray & !below(s.saturating_sub(count)),
    }
}

#[cfg(test)]
mod tests {
    use crate::notation::parse_tps;
    use crate::{Color, GameResult, Move, Position};

    use super::immediate_wins_by_trying as wins_by_trying;

    fn fast(pos: &Position) -> Vec<Move> {
        let mut v = Vec::new();
        pos.immediate_wins(&mut v);
        v.sort();
        v
    }

    #[test]
    fn road_groups_and_extents() {
        // White: a1 b1 (a group spanning 2 columns, 1 row), d2 d3 d4 (1 column, 3 rows);
        // a wall at c1 is not a road square; black: a4 alone, b3 c3.
        let pos = parse_tps("2,x2,1/x,2,2,1/x3,1/1,1,1S,x 1 8").unwrap();
        let info = pos.info();
        let white: Vec<_> = pos.road_groups(Color::White).collect();
        assert_eq!(white.len(), 2);
        assert_eq!(white.iter().fold(0, |a, g| a | g), pos.road_squares(Color::White));
        let mut ext: Vec<_> = white.iter().map(|&g| info.extent(g)).collect();
        ext.sort();
        assert_eq!(ext, vec![(1, 2), (3, 1)]);
        let mut black: Vec<_> = pos.road_groups(Color::Black).map(|g| (g.count_ones(), info.extent(g))).collect();
        black.sort();
        assert_eq!(black, vec![(1, (1, 1)), (2, (1, 2))]);
        assert_eq!(info.extent(0), (0, 0));
        assert_eq!(info.extent(info.full), (4, 4));
        assert_eq!(pos.road_groups(Color::White).count(), 2);
        // Both sides' road-in-one squares, whoever is to move: white d1 (d1-d4);
        // black none.
        assert_eq!(pos.road_completion_squares(Color::White), 1 << 3);
        assert_eq!(pos.road_completion_squares(Color::Black), 0);
        // Black a4 a3 a2 with a1 empty; white b1 c1 d1 with a1 empty: both win at a1.
        let pos = parse_tps("2,x3/2,x3/2,x3/x,1,1,1 2 4").unwrap();
        assert_eq!(pos.road_completion_squares(Color::White), 1);
        assert_eq!(pos.road_completion_squares(Color::Black), 1);
    }

    #[test]
    fn placement_roads() {
        // White a2 b2 c2 on 4x4 with d2 empty: d2 (flat) wins; no capstones on 4x4.
        let pos = parse_tps("x4/2,2,2,x/1,1,1,x/x4 1 5").unwrap();
        let wins = fast(&pos);
        assert_eq!(wins, wins_by_trying(&pos));
        let names: Vec<String> = wins.iter().map(|m| m.to_ptn(4)).collect();
        assert!(names.contains(&"d2".to_string()), "{names:?}");
        assert!(!names.contains(&"Sd2".to_string()));
        assert_eq!(pos.road_completion_squares(Color::White).count_ones(), 1);
    }

    #[test]
    fn spread_road_and_double_road() {
        // White stack 21 on b3 (white on top): spreading it down completes a2? Build one
        // where only a spread wins: white a1 b1 c1, d2 white flat on top of black: 1,1,1,x
        // with d1 empty but covered by a wall on d1 for placements.
        let pos = parse_tps("x4/x4/x3,12/1,1,1,2S 1 6").unwrap();
        // d2 stack (black bottom, white top) can't move onto the wall d1; no road by
        // placement (d1 occupied). Check the fast and slow agree either way.
        assert_eq!(fast(&pos), wins_by_trying(&pos));
        // A real spread win: white a1 b1 c1, white stack 21 on d2 spreading down onto d1.
        let pos = parse_tps("x4/x4/x3,21/1,1,1,x 1 6").unwrap();
        let wins = fast(&pos);
        assert_eq!(wins, wins_by_trying(&pos));
        let names: Vec<String> = wins.iter().map(|m| m.to_ptn(4)).collect();
        assert!(names.contains(&"d2-".to_string()), "{names:?}");
        assert!(names.contains(&"d1".to_string()), "{names:?}");
    }

    #[test]
    fn line_squares_are_the_steps_along_the_ray() {
        use crate::bitboard::SizeInfo;
        use crate::types::{Direction, Square};
        for n in 3..=8 {
            let info = SizeInfo::get(n);
            for s in 0..n * n {
                let sq = Square(s as u8);
                for dir in Direction::ALL {
                    let len = info.rays[s][dir.index()].count_ones() as usize;
                    let (mut want, mut at) = (0u64, sq);
                    for count in 0..=len {
                        assert_eq!(super::line_squares(info, sq, dir, count), want, "{n}x{n} {s} {dir:?} {count}");
                        if let Some(next) = at.step(dir, n) {
                            want |= 1 << next.index();
                            at = next;
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn thirty_two_road_groups_on_8x8() {
        // A checkerboard of single flats with one of Black's squares empty: White has 32
        // separate road groups, the most a board can hold, and one placement left to end
        // the game.
        let row = |y: usize| {
            (0..8)
                .map(|x| {
                    if (x, y) == (1, 0) {
                        "x"
                    } else if (x + y).is_multiple_of(2) {
                        "1"
                    } else {
                        "2"
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        let tps = format!("{} 1 40", (0..8).rev().map(row).collect::<Vec<_>>().join("/"));
        let pos = parse_tps(&tps).unwrap();
        assert_eq!(pos.road_groups(Color::White).count(), 32);
        assert_eq!(fast(&pos), wins_by_trying(&pos));
        let mut passed = pos.clone();
        passed.pass_turn();
        assert_eq!(fast(&passed), wins_by_trying(&passed));
    }

    #[test]
    fn flat_win_by_last_piece() {
        // 3x3 with white holding one stone: placing it ends the game; white has more flats.
        let mut pos = parse_tps("1,1,x/2,x,2/1,x,x 1 4").unwrap();
        pos.set_reserves([[1, 0], [5, 0]]);
        let wins = fast(&pos);
        assert_eq!(wins, wins_by_trying(&pos));
        assert!(!wins.is_empty());
        let mut p = pos.clone();
        p.play(wins[0]).unwrap();
        assert_eq!(p.result().and_then(GameResult::winner), Some(Color::White));
    }

    #[test]
    fn losing_moves_and_safe_moves() {
        // Black threatens c1 (a1 b1 d1 black); white to move must block c1 or lose.
        let pos = parse_tps("x4/x4/1,1,x2/2,2,x,2 1 5").unwrap();
        assert!(pos.find_immediate_win().is_none());
        assert!(pos.opponent_threatens());
        let safe = pos.safe_moves();
        assert!(!safe.is_empty());
        for mv in &safe {
            let mut p = pos.clone();
            p.play(*mv).unwrap();
            assert!(wins_by_trying(&p).is_empty(), "{}", mv.to_ptn(4));
        }
        // Some moves are not safe (e.g. a flat on a4).
        assert!(safe.len() < pos.legal_moves().len());
    }

    #[test]
    fn double_threat_is_a_forced_win_in_three() {
        // White a1 b1 c1 on 4x4: d1 wins at once, so nothing is a win in three.
        let one = parse_tps("x4/x4/2,2,x2/1,1,1,x 1 4").unwrap();
        assert!(one.find_immediate_win().is_some());
        assert!(one.forced_wins_in_three().is_empty());
        // White b1 b3 a2 c2: b2 threatens both d2 (row 2) and b4 (column b).
        let three = parse_tps("2,x2,2/x,1,x2/1,x,1,x/x,1,x2 1 4").unwrap();
        assert!(three.find_immediate_win().is_none());
        let forced = three.forced_wins_in_three();
        let names: Vec<String> = forced.iter().map(|m| m.to_ptn(4)).collect();
        assert!(names.contains(&"b2".to_string()), "{names:?}");
        // Each forced move really is one: every reply leaves white a win.
        for mv in forced {
            let mut p = three.clone();
            p.play(mv).unwrap();
            assert!(p.find_immediate_win().is_none());
            for reply in p.legal_moves() {
                let mut q = p.clone();
                q.play(reply).unwrap();
                let won = q.result().is_some_and(|r| r.winner() == Some(Color::White));
                assert!(won || q.find_immediate_win().is_some(), "{} {}", mv.to_ptn(4), reply.to_ptn(4));
            }
        }
    }

    /// Suite files that cannot be read give typed errors naming the file and the line.
    #[test]
    fn bad_suite_sources_name_the_file_and_line() {
        use super::{SuiteError, parse_tps_lines, read_positions};
        let good = "x5/x5/x5/x5/x5 1 1";
        assert_eq!(parse_tps_lines(&format!("# a comment\n{good}\n\n{good} # again\n")).unwrap().len(), 2);
        let e = parse_tps_lines(&format!("{good}\nnot a position\n")).unwrap_err();
        assert!(matches!(e, SuiteError::Tps { line: 2, .. }), "{e:?}");
        let dir = std::env::temp_dir().join(format!("bredon-suite-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tps = dir.join("bad.tps");
        std::fs::write(&tps, format!("{good}\n{good}\nx5/x5 1 1\n")).unwrap();
        let e = read_positions(&tps).unwrap_err();
        match &e {
            SuiteError::In { path, source } => {
                assert_eq!(path, &tps);
                assert!(matches!(**source, SuiteError::Tps { line: 3, .. }), "{source:?}");
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().ends_with("bad.tps"), "{e}");
        let missing = dir.join("missing.ptn");
        assert!(matches!(read_positions(&missing), Err(SuiteError::Read { path, .. }) if path == missing));
        std::fs::write(dir.join("bad.tps"), format!("{good}\n")).unwrap();
        std::fs::write(dir.join("game.ptn"), "[Size \"5\"]\n1. a1 zz9\n").unwrap();
        let e = read_positions(&dir).unwrap_err();
        assert!(matches!(&e, SuiteError::Ptn { path, .. } if path.ends_with("game.ptn")), "{e:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
