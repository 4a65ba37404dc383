//! Playing one game between two [`Player`]s: opening moves, limits, clock, adjudication,
//! forfeits.

use std::time::{Duration, Instant};

use bredon_rules::{Color, GameOptions, GameResult, Move, Position, WinKind};
use serde::{Deserialize, Serialize};

use crate::player::{ClockState, MoveLimits, Player, PlayerError};

/// What happens to a game that reaches the ply limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Adjudication {
    /// Decide by the flat count with komi, as if the board had filled now
    /// (`Position::flat_result`; the PTN result is `F-0`, `0-F` or a draw).
    #[default]
    Flats,
    /// Call it a draw.
    Draw,
}

/// A game clock: starting time and increment per move, the same for both sides
/// (`[clock]` of a match config; default 10 s + 0.1 s, the time control of the
/// experiments' clock matches).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClockConfig {
    /// Starting time per side, in milliseconds.
    pub time_ms: u64,
    /// Increment added after each move, in milliseconds.
    pub increment_ms: u64,
}

impl Default for ClockConfig {
    fn default() -> ClockConfig {
        ClockConfig { time_ms: 10_000, increment_ms: 100 }
    }
}

/// How a game ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Termination {
    /// By the rules: a road, a full board or an empty reserve.
    Rules,
    /// Reached the ply limit and was adjudicated.
    PlyLimit,
    /// A player failed (crash, stall, illegal or unparsable move, setup failure, time):
    /// that player lost.
    Forfeit {
        /// The colour that forfeited.
        loser: String,
        /// What went wrong.
        reason: String,
    },
}

/// Everything about one game that was played.
#[derive(Clone, Debug, PartialEq)]
pub struct GameOutcome {
    /// All moves from the empty board, the opening included.
    pub moves: Vec<Move>,
    /// The final result.
    pub result: GameResult,
    /// How the game ended.
    pub termination: Termination,
}

/// Settings of one game.
#[derive(Clone, Debug)]
pub struct GameSettings {
    /// Size, komi and reserves.
    pub options: GameOptions,
    /// Moves played from the empty board before the players take over.
    pub opening: Vec<Move>,
    /// Limits for white and black.
    pub limits: [MoveLimits; 2],
    /// Game clock, if any (then an engine that runs out of time loses).
    pub clock: Option<ClockConfig>,
    /// Plies after which the game is adjudicated (0 = no limit).
    pub max_plies: usize,
    /// How a game at the ply limit is decided.
    pub adjudication: Adjudication,
}

fn forfeit(loser: Color, reason: String, moves: Vec<Move>) -> GameOutcome {
    GameOutcome {
        moves,
        result: GameResult::Win { color: loser.opposite(), kind: WinKind::Other },
        termination: Termination::Forfeit { loser: loser.to_string(), reason },
    }
}

/// Plays a game: `white` moves first. Never fails: a player that cannot start the game or
/// produce a legal move in time loses it (result `1-0`/`0-1`, [`Termination::Forfeit`]).
/// Openings are checked when loaded; should an opening move be illegal anyway, the opening
/// stops before it.
pub fn play_game(white: &mut dyn Player, black: &mut dyn Player, settings: &GameSettings) -> GameOutcome {
    let mut pos = match Position::with_options(settings.options) {
        Ok(p) => p,
        Err(e) => return forfeit(Color::White, format!("bad game options: {e}"), Vec::new()),
    };
    let mut moves: Vec<Move> = Vec::new();
    if let Err(e) = white.new_game(settings.options) {
        return forfeit(Color::White, format!("new game failed: {}", bredon_storage::error_chain(&e)), moves);
    }
    if let Err(e) = black.new_game(settings.options) {
        return forfeit(Color::Black, format!("new game failed: {}", bredon_storage::error_chain(&e)), moves);
    }
    for &mv in &settings.opening {
        if pos.play(mv).is_err() {
            break;
        }
        moves.push(mv);
    }
    let mut clock = settings.clock.map(|c| {
        let t = Duration::from_millis(c.time_ms);
        let inc = Duration::from_millis(c.increment_ms);
        ClockState { wtime: t, btime: t, winc: inc, binc: inc }
    });
    loop {
        if let Some(result) = pos.result() {
            return GameOutcome { moves, result, termination: Termination::Rules };
        }
        if settings.max_plies > 0 && moves.len() >= settings.max_plies {
            let result = match settings.adjudication {
                Adjudication::Flats => pos.flat_result(),
                Adjudication::Draw => GameResult::Draw,
            };
            return GameOutcome { moves, result, termination: Termination::PlyLimit };
        }
        let side = pos.side_to_move();
        let mut limits = settings.limits[side.index()];
        if clock.is_some() {
            limits.clock = clock;
        }
        let player: &mut dyn Player = if side == Color::White { &mut *white } else { &mut *black };
        let start = Instant::now();
        let chosen = player.choose_move(&pos, &moves, &limits);
        let elapsed = start.elapsed();
        let mv = match chosen {
            Ok(mv) => mv,
            Err(e) => return forfeit(side, e.to_string(), moves),
        };
        if let Some(c) = clock.as_mut() {
            let (left, inc) = if side == Color::White { (&mut c.wtime, c.winc) } else { (&mut c.btime, c.binc) };
            if elapsed > *left {
                return forfeit(side, PlayerError::OutOfTime.to_string(), moves);
            }
            *left = *left - elapsed + inc;
        }
        if let Err(e) = pos.play(mv) {
            let err = PlayerError::Illegal(format!("{} ({e})", mv.to_ptn(pos.size())));
            return forfeit(side, err.to_string(), moves);
        }
        moves.push(mv);
    }
}
