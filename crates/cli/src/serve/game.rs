//! Games as the page sends them (a size, komi, start position and PTN moves, or a pasted
//! PTN / TPS text) and as it draws them (one view per position).

use bredon_rules::notation::{Ptn, parse_move, parse_tps_with, write_tps};
use bredon_rules::{Color, GameOptions, GameResult, Move, PieceKind, Position, Square};
use serde::{Deserialize, Serialize};

use super::error::ApiError;

/// Board sizes the server plays and analyses.
pub const SIZES: std::ops::RangeInclusive<usize> = 3..=8;
/// Komi in half points the server accepts (as `bredon tei`'s `HalfKomi`).
pub const HALF_KOMI: std::ops::RangeInclusive<i8> = -10..=10;
/// The most moves one game may have.
pub const MAX_MOVES: usize = 1000;
/// The longest PTN or TPS text accepted.
pub const MAX_TEXT: usize = 256 * 1024;

/// A game as the page sends it: either `text` (a PTN game or a TPS position, told apart by
/// their form) or `size` (or `tps`), and in both cases `moves` played after it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameSpec {
    /// A whole PTN game, or a TPS position.
    #[serde(default)]
    pub text: Option<String>,
    /// Board size of a new game (3 to 8).
    #[serde(default)]
    pub size: Option<usize>,
    /// Komi in half points (-10 to 10); a PTN text's `Komi` tag wins over it.
    #[serde(default)]
    pub half_komi: Option<i8>,
    /// The start position as TPS.
    #[serde(default)]
    pub tps: Option<String>,
    /// Moves in PTN after the start position (or after the text's moves).
    #[serde(default)]
    pub moves: Vec<String>,
}

/// A game checked against the rules: the start, the moves and every position.
#[derive(Clone, Debug)]
pub struct Game {
    /// Every position, `positions[0]` the start, `positions[i]` after `moves[..i]`.
    pub positions: Vec<Position>,
    /// The moves played.
    pub moves: Vec<Move>,
    /// A result recorded in a PTN text (e.g. a resignation) that the board does not show.
    pub recorded_result: Option<GameResult>,
}

impl Game {
    /// Board size.
    pub fn size(&self) -> usize {
        self.positions[0].size()
    }

    /// The last position.
    pub fn last(&self) -> &Position {
        self.positions.last().expect("a game has a start position")
    }

    /// The result: the board's, else the one the PTN recorded.
    pub fn result(&self) -> Option<GameResult> {
        self.last().result().or(self.recorded_result)
    }

    /// The game as PTN text.
    pub fn ptn(&self) -> String {
        Ptn::from_moves(&self.positions[0], &self.moves, self.result()).to_string()
    }

    /// Parses and checks `spec`. Errors name the problem: the size, the komi, the PTN or
    /// TPS error with its line and column, or the move (number and text) that is illegal
    /// and why.
    pub fn from_spec(spec: &GameSpec) -> Result<Game, ApiError> {
        let half_komi = spec.half_komi.unwrap_or(0);
        if !HALF_KOMI.contains(&half_komi) {
            return Err(ApiError::bad(format!(
                "half_komi {half_komi} is out of range ({} to {})",
                HALF_KOMI.start(),
                HALF_KOMI.end()
            )));
        }
        if let Some(size) = spec.size
            && !SIZES.contains(&size)
        {
            return Err(ApiError::bad(format!("board size {size} is not supported (3 to 8)")));
        }
        if spec.moves.len() > MAX_MOVES {
            return Err(ApiError::bad(format!("{} moves: at most {MAX_MOVES} are accepted", spec.moves.len())));
        }
        let (mut positions, mut moves, recorded_result) = match (&spec.text, &spec.tps) {
            (Some(_), Some(_)) => return Err(ApiError::bad("give either `text` or `tps`, not both")),
            (Some(text), None) => from_text(text, half_komi)?,
            (None, Some(tps)) => (vec![parse_tps(tps, half_komi)?], Vec::new(), None),
            (None, None) => {
                let Some(size) = spec.size else {
                    return Err(ApiError::bad("the game needs a `size` (3 to 8), a `tps` or a `text`"));
                };
                let pos = Position::with_options(GameOptions::new(size).with_half_komi(half_komi))
                    .map_err(|e| ApiError::bad(e.to_string()))?;
                (vec![pos], Vec::new(), None)
            }
        };
        let size = positions[0].size();
        if let Some(s) = spec.size
            && s != size
        {
            return Err(ApiError::bad(format!("the position is {size}x{size} but size is {s}")));
        }
        let before = moves.len();
        for (i, text) in spec.moves.iter().enumerate() {
            let n = before + i + 1;
            let mv = parse_move(text.trim(), size).map_err(|e| ApiError::bad(format!("move {n} {text:?}: {e}")))?;
            let mut pos = positions.last().expect("start").clone();
            pos.play(mv).map_err(|e| ApiError::bad(format!("move {n} {text:?} is illegal: {e}")))?;
            positions.push(pos);
            moves.push(mv);
        }
        if moves.len() > MAX_MOVES {
            return Err(ApiError::bad(format!("{} moves: at most {MAX_MOVES} are accepted", moves.len())));
        }
        let recorded_result = if moves.len() > before { None } else { recorded_result };
        Ok(Game { positions, moves, recorded_result })
    }

    /// The page's view of the game.
    pub fn view(&self) -> GameView {
        let size = self.size();
        let last = self.positions.len() - 1;
        GameView {
            size,
            half_komi: self.positions[0].half_komi(),
            moves: self.moves.iter().map(|m| m.to_ptn(size)).collect(),
            positions: self.positions.iter().enumerate().map(|(i, p)| PositionView::new(p, i == last)).collect(),
            result: self.result().map(|r| r.ptn().to_string()),
            result_text: self.result().map(describe_result),
            ptn: self.ptn(),
        }
    }
}

/// A game read from text: the positions, the moves between them, and the result if the
/// text gives one.
type TextGame = (Vec<Position>, Vec<Move>, Option<GameResult>);

/// A PTN game, or a TPS position when the text has no `[` tag and looks like TPS rows.
fn from_text(text: &str, half_komi: i8) -> Result<TextGame, ApiError> {
    if text.len() > MAX_TEXT {
        return Err(ApiError::bad(format!("the text is {} bytes, more than the {MAX_TEXT} accepted", text.len())));
    }
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ApiError::bad("the text is empty: paste a PTN game or a TPS position"));
    }
    if !trimmed.contains('[') && trimmed.contains('/') {
        let tps = trimmed.strip_prefix("TPS").unwrap_or(trimmed).trim().trim_matches('"');
        return Ok((vec![parse_tps(tps, half_komi)?], Vec::new(), None));
    }
    let ptn = Ptn::parse(text).map_err(|e| ApiError::bad(format!("PTN: {e}")))?;
    let replay = ptn.replay().map_err(|e| ApiError::bad(format!("PTN: {e}")))?;
    Ok((replay.positions().to_vec(), replay.moves().to_vec(), ptn.result))
}

fn parse_tps(tps: &str, half_komi: i8) -> Result<Position, ApiError> {
    parse_tps_with(tps.trim(), None, half_komi).map_err(|e| ApiError::bad(format!("TPS {tps:?}: {e}")))
}

/// A result in words, e.g. "White wins by road".
pub fn describe_result(r: GameResult) -> String {
    match r {
        GameResult::Draw => "Draw".to_string(),
        GameResult::Win { color, kind } => {
            let how = match kind {
                bredon_rules::WinKind::Road => " by road",
                bredon_rules::WinKind::Flat => " on flats",
                _ => "",
            };
            format!("{} wins{how}", color_name(color))
        }
    }
}

/// "White" or "Black".
pub fn color_name(c: Color) -> &'static str {
    match c {
        Color::White => "White",
        Color::Black => "Black",
    }
}

/// A whole game for the page.
#[derive(Debug, Serialize)]
pub struct GameView {
    /// Board size.
    pub size: usize,
    /// Komi in half points.
    pub half_komi: i8,
    /// The moves in PTN.
    pub moves: Vec<String>,
    /// Every position, the start first.
    pub positions: Vec<PositionView>,
    /// The result in PTN (`R-0`, ...), if the game is over.
    pub result: Option<String>,
    /// The result in words.
    pub result_text: Option<String>,
    /// The game as a PTN file.
    pub ptn: String,
}

/// One position for the page.
#[derive(Debug, Serialize)]
pub struct PositionView {
    /// The position as TPS.
    pub tps: String,
    /// `white` or `black`.
    pub to_move: &'static str,
    /// Plies played.
    pub ply: u16,
    /// One cell per square, index `row * size + col` (row 0 is rank 1): the stack's
    /// colours bottom to top as `1` (white) and `2` (black), then `S` for a wall or `C`
    /// for a capstone on top; empty for an empty square.
    pub board: Vec<String>,
    /// Stones and capstones left: `[[white stones, white caps], [black stones, black caps]]`.
    pub reserves: [[u8; 2]; 2],
    /// Flats on top: `[white, black]`.
    pub flats: [u32; 2],
    /// The result in PTN if the game ended here.
    pub result: Option<String>,
    /// Legal moves in PTN (only for the last position of a game; empty when it is over).
    pub legal: Vec<String>,
}

impl PositionView {
    /// The view of `pos`, with its legal moves if `with_legal`.
    pub fn new(pos: &Position, with_legal: bool) -> PositionView {
        let size = pos.size();
        let board = (0..size * size)
            .map(|i| {
                let stack = pos.stack(Square(i as u8));
                let mut cell: String =
                    stack.pieces().map(|p| if p.color == Color::White { '1' } else { '2' }).collect();
                if stack.height > 0 {
                    match stack.top_kind {
                        PieceKind::Wall => cell.push('S'),
                        PieceKind::Cap => cell.push('C'),
                        PieceKind::Flat => {}
                    }
                }
                cell
            })
            .collect();
        let (w, b) = (pos.reserves(Color::White), pos.reserves(Color::Black));
        let (fw, fb) = pos.flat_counts();
        let over = pos.result().is_some();
        PositionView {
            tps: write_tps(pos),
            to_move: if pos.side_to_move() == Color::White { "white" } else { "black" },
            ply: pos.ply(),
            board,
            reserves: [[w.0, w.1], [b.0, b.1]],
            flats: [fw, fb],
            result: pos.result().map(|r| r.ptn().to_string()),
            legal: if with_legal && !over {
                pos.legal_moves().iter().map(|m| m.to_ptn(size)).collect()
            } else {
                vec![]
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(size: usize, moves: &[&str]) -> GameSpec {
        GameSpec { size: Some(size), moves: moves.iter().map(|s| s.to_string()).collect(), ..GameSpec::default() }
    }

    #[test]
    fn a_game_replays_and_its_view_draws_stacks_bottom_to_top() {
        let g = Game::from_spec(&spec(3, &["a1", "b1", "Sb2", "a1>"])).unwrap();
        let v = g.view();
        assert_eq!(v.positions.len(), 5);
        // b1: white's flat (placed by black in the first move), then black's a1 moved onto it.
        assert_eq!(v.positions[4].board[1], "12");
        assert_eq!(v.positions[4].board[0], "");
        assert_eq!(v.positions[4].board[4], "1S");
        assert!(v.ptn.contains("2. Sb2 a1>"), "{}", v.ptn);
        assert!(!v.positions[4].legal.is_empty() && v.positions[0].legal.is_empty());
    }

    #[test]
    fn bad_games_name_the_problem() {
        let e = |s: GameSpec| Game::from_spec(&s).unwrap_err().to_string();
        assert!(e(spec(9, &[])).contains("board size 9"));
        assert!(e(spec(3, &["a1", "a1"])).contains("move 2 \"a1\" is illegal"));
        assert!(e(spec(3, &["z9"])).contains("move 1 \"z9\""));
        assert!(e(GameSpec { size: Some(5), half_komi: Some(40), ..GameSpec::default() }).contains("half_komi 40"));
        assert!(e(GameSpec::default()).contains("needs a `size`"));
        let text = |t: &str| GameSpec { text: Some(t.to_string()), ..GameSpec::default() };
        assert!(e(text("[Size \"3\"]\n\n1. a1 a1\n")).starts_with("PTN: "));
        assert!(e(text("x3/x3/x2 1 1")).starts_with("TPS"));
        assert!(e(text("  ")).contains("empty"));
    }

    #[test]
    fn text_is_ptn_or_tps() {
        let g = Game::from_spec(&GameSpec {
            text: Some("[Size \"4\"]\n[Komi \"2\"]\n\n1. a1 d4 2. b2 c3 1-0".into()),
            ..GameSpec::default()
        })
        .unwrap();
        assert_eq!((g.size(), g.moves.len(), g.positions[0].half_komi()), (4, 4, 4));
        assert_eq!(g.view().result.as_deref(), Some("1-0"));
        let g = Game::from_spec(&GameSpec {
            text: Some("x4/x4/2,2,2,x/1,1,1,x 1 4".into()),
            moves: vec!["d1".into()],
            ..GameSpec::default()
        })
        .unwrap();
        assert_eq!(g.view().result_text.as_deref(), Some("White wins by road"));
    }
}
