//! One query line: its JSON shape ([`Query`]), its checks, and the error answer that
//! names the field at fault ([`QueryError`]).

use std::time::Duration;

use bredon_rules::notation::{Ptn, PtnError, TpsError, parse_tps_with};
use bredon_rules::{Color, Position};
use serde::{Deserialize, Serialize};

/// Root visits a query may ask for.
pub const VISITS: std::ops::RangeInclusive<u64> = 1..=200_000;
/// Milliseconds per position a query may ask for.
pub const MOVETIME_MS: std::ops::RangeInclusive<u64> = 1..=600_000;
/// Top moves an answer may list.
pub const MULTIPV: std::ops::RangeInclusive<usize> = 1..=16;
/// Komi in half points (as `bredon tei`'s `HalfKomi` and `bredon serve`).
pub const HALF_KOMI: std::ops::RangeInclusive<i8> = -10..=10;
/// Visits per position when a query names neither `visits` nor `movetime_ms`.
pub const DEFAULT_VISITS: u64 = 800;
/// Top moves listed when a query does not say.
pub const DEFAULT_MULTIPV: usize = 5;
/// The longest query line read (a long PTN game is a few kilobytes).
pub const MAX_LINE: usize = 256 * 1024;

/// From whose view an answer's values, WDL, margin and ownership are given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Perspective {
    /// White's (player 1's): +1 / a win = good for white.
    #[default]
    White,
    /// Black's (player 2's).
    Black,
    /// The side to move's in each position.
    SideToMove,
}

impl Perspective {
    /// The colour whose view a position where `mover` is to move is reported from.
    pub fn color(self, mover: Color) -> Color {
        match self {
            Perspective::White => Color::White,
            Perspective::Black => Color::Black,
            Perspective::SideToMove => mover,
        }
    }
}

/// A query as it arrives: one JSON object a line. Unknown fields are an error that names
/// them. See `docs/analysis-engine.md` for the protocol.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Query {
    /// The query's name, echoed in every answer and error (required).
    pub id: Option<String>,
    /// One position in TPS. Give `tps` or `ptn`, not both.
    pub tps: Option<String>,
    /// A game in PTN; its positions are analysed (see `plies`).
    pub ptn: Option<String>,
    /// With `ptn`: which positions to analyse, by the number of plies played before them
    /// (0 = the start). Default: every position, the start to the end.
    pub plies: Option<Vec<usize>>,
    /// Komi in points, a multiple of 0.5 from −5 to 5. Default: the PTN's `Komi` tag, or 0
    /// for a TPS (the rule texts' komi).
    pub komi: Option<f64>,
    /// Root visits per position. Default: 800 when `movetime_ms` is not given either.
    pub visits: Option<u64>,
    /// Milliseconds of search per position. With `visits` too, the first limit reached
    /// ends the search.
    pub movetime_ms: Option<u64>,
    /// Top moves listed per answer, 1 to 16 (fewer when the position has fewer moves).
    /// Default 5.
    pub multipv: Option<usize>,
    /// Whether answers carry the ownership map.
    pub ownership: bool,
    /// From whose view values are given: `white` (default), `black` or `side_to_move`.
    pub perspective: Perspective,
}

/// What was wrong with a query.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum QueryErrorKind {
    /// The line is not JSON.
    #[error("malformed JSON: {0}")]
    Syntax(String),
    /// The line is JSON but not an object.
    #[error("a query is a JSON object, one a line")]
    NotAnObject,
    /// A field has the wrong type, an unknown value or an unknown name (serde's words).
    #[error("{0}")]
    Field(String),
    /// No `id`.
    #[error("missing field `id` (a string naming the query)")]
    MissingId,
    /// Neither `tps` nor `ptn`.
    #[error("a query needs a position: `tps` or `ptn`")]
    NoPosition,
    /// Both `tps` and `ptn`.
    #[error("give `tps` or `ptn`, not both")]
    BothPositions,
    /// The TPS does not parse.
    #[error("bad TPS: {0}")]
    Tps(#[source] Box<TpsError>),
    /// The PTN does not parse or replay.
    #[error("bad PTN: {0}")]
    Ptn(#[source] Box<PtnError>),
    /// `plies` without a game.
    #[error("`plies` selects positions of a `ptn` game; a `tps` is one position")]
    PliesWithoutGame,
    /// An empty `plies` list.
    #[error("`plies` is empty: leave it out to analyse every position")]
    NoPlies,
    /// A ply past the game's end.
    #[error("ply {ply} is past the game's end (it has positions 0 to {last})")]
    PlyPastEnd {
        /// The ply asked for.
        ply: usize,
        /// The last position's ply (the number of moves).
        last: usize,
    },
    /// Komi not a whole number of half points.
    #[error("komi {0} is not a multiple of 0.5 (the rules count komi in half points)")]
    KomiNotHalfPoints(f64),
    /// Komi out of range.
    #[error("komi {0} is out of range (-5 to 5)")]
    KomiRange(f64),
    /// Visits out of range.
    #[error("visits {0} is out of range (1 to 200000)")]
    Visits(u64),
    /// Movetime out of range.
    #[error("movetime_ms {0} is out of range (1 to 600000)")]
    Movetime(u64),
    /// MultiPV out of range.
    #[error("multipv {0} is out of range (1 to 16)")]
    MultiPv(usize),
    /// A line longer than [`MAX_LINE`].
    #[error("the query is {0} bytes long, more than the 262144 a line may have")]
    TooLong(usize),
}

/// A query refused: answered by one JSON line `{"id": ..., "error": "...", "field": ...}`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{kind}")]
pub struct QueryError {
    /// The query's id, when it had a readable one.
    pub id: Option<String>,
    /// The top-level field at fault (`None` for a line that is not a JSON object).
    pub field: Option<String>,
    /// What is wrong.
    pub kind: QueryErrorKind,
}

impl QueryError {
    fn new(id: &Option<String>, field: &str, kind: QueryErrorKind) -> QueryError {
        QueryError { id: id.clone(), field: Some(field.to_string()), kind }
    }
}

/// A query checked: the positions to analyse and how.
#[derive(Clone, Debug)]
pub struct Request {
    /// The query's id.
    pub id: String,
    /// The positions, each with its ply in the game (`None` for a TPS).
    pub positions: Vec<(Option<usize>, Position)>,
    /// How long each search runs.
    pub limits: Limits,
    /// Top moves listed.
    pub multipv: usize,
    /// Whether answers carry the ownership map.
    pub ownership: bool,
    /// From whose view values are given.
    pub perspective: Perspective,
}

/// A search's budget per position: the first limit reached ends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Root visits.
    pub visits: Option<u64>,
    /// Wall time.
    pub movetime: Option<Duration>,
}

/// Parses and checks one line (not blank).
pub fn parse_line(line: &str) -> Result<Request, QueryError> {
    if line.len() > MAX_LINE {
        return Err(QueryError { id: None, field: None, kind: QueryErrorKind::TooLong(line.len()) });
    }
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| QueryError {
        id: None,
        field: None,
        kind: QueryErrorKind::Syntax(e.to_string()),
    })?;
    let Some(object) = value.as_object() else {
        return Err(QueryError { id: None, field: None, kind: QueryErrorKind::NotAnObject });
    };
    // The id first, so that an error in any other field still names its query.
    let id = object.get("id").and_then(|v| v.as_str()).map(str::to_string);
    let query: Query = serde_path_to_error::deserialize(&value).map_err(|e| {
        let path = e.path().to_string();
        // `plies[3]` is a fault of the field `plies`.
        let field = path.split(['[', '.']).next().unwrap_or_default().to_string();
        QueryError { id: id.clone(), field: Some(field), kind: QueryErrorKind::Field(e.inner().to_string()) }
    })?;
    check(query)
}

/// Checks a parsed query and builds its positions.
pub fn check(query: Query) -> Result<Request, QueryError> {
    let Some(id) = query.id.clone() else {
        return Err(QueryError::new(&None, "id", QueryErrorKind::MissingId));
    };
    let id_opt = Some(id.clone());
    let err = |field: &str, kind| QueryError::new(&id_opt, field, kind);
    let half_komi = match query.komi {
        None => None,
        Some(k) if !k.is_finite() || (k * 2.0).fract() != 0.0 => {
            return Err(err("komi", QueryErrorKind::KomiNotHalfPoints(k)));
        }
        Some(k) if !(f64::from(*HALF_KOMI.start())..=f64::from(*HALF_KOMI.end())).contains(&(k * 2.0)) => {
            return Err(err("komi", QueryErrorKind::KomiRange(k)));
        }
        Some(k) => Some((k * 2.0) as i8),
    };
    if let Some(v) = query.visits
        && !VISITS.contains(&v)
    {
        return Err(err("visits", QueryErrorKind::Visits(v)));
    }
    if let Some(ms) = query.movetime_ms
        && !MOVETIME_MS.contains(&ms)
    {
        return Err(err("movetime_ms", QueryErrorKind::Movetime(ms)));
    }
    let multipv = query.multipv.unwrap_or(DEFAULT_MULTIPV);
    if !MULTIPV.contains(&multipv) {
        return Err(err("multipv", QueryErrorKind::MultiPv(multipv)));
    }
    let positions = match (&query.tps, &query.ptn) {
        (None, None) => return Err(err("tps", QueryErrorKind::NoPosition)),
        (Some(_), Some(_)) => return Err(err("ptn", QueryErrorKind::BothPositions)),
        (Some(tps), None) => {
            if query.plies.is_some() {
                return Err(err("plies", QueryErrorKind::PliesWithoutGame));
            }
            let pos = parse_tps_with(tps, None, half_komi.unwrap_or(0))
                .map_err(|e| err("tps", QueryErrorKind::Tps(Box::new(e))))?;
            vec![(None, pos)]
        }
        (None, Some(text)) => {
            let replay =
                Ptn::parse(text).and_then(|p| p.replay()).map_err(|e| err("ptn", QueryErrorKind::Ptn(Box::new(e))))?;
            let all = replay.positions();
            let plies: Vec<usize> = match &query.plies {
                None => (0..all.len()).collect(),
                Some(p) if p.is_empty() => return Err(err("plies", QueryErrorKind::NoPlies)),
                Some(p) => p.clone(),
            };
            let mut positions = Vec::with_capacity(plies.len());
            for ply in plies {
                let Some(pos) = all.get(ply) else {
                    return Err(err("plies", QueryErrorKind::PlyPastEnd { ply, last: all.len() - 1 }));
                };
                let mut pos = pos.clone();
                // Komi changes no move's legality, only how flats are counted.
                if let Some(k) = half_komi {
                    pos.set_half_komi(k);
                }
                positions.push((Some(ply), pos));
            }
            positions
        }
    };
    let limits = Limits {
        visits: match (query.visits, query.movetime_ms) {
            (None, None) => Some(DEFAULT_VISITS),
            (v, _) => v,
        },
        movetime: query.movetime_ms.map(Duration::from_millis),
    };
    Ok(Request { id, positions, limits, multipv, ownership: query.ownership, perspective: query.perspective })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(line: &str) -> QueryError {
        parse_line(line).expect_err(line)
    }

    #[test]
    fn a_tps_query_with_defaults() {
        let r =
            parse_line(r#"{"id":"q1","tps":"x6/x6/x6/x6/x6/x6 1 1","komi":2,"visits":64,"ownership":true}"#).unwrap();
        assert_eq!(r.id, "q1");
        assert_eq!(r.positions.len(), 1);
        assert_eq!(r.positions[0].0, None);
        assert_eq!(r.positions[0].1.half_komi(), 4);
        assert_eq!(r.limits, Limits { visits: Some(64), movetime: None });
        assert_eq!((r.multipv, r.ownership, r.perspective), (DEFAULT_MULTIPV, true, Perspective::White));
        let r = parse_line(r#"{"id":"q","tps":"x3/x3/x3 1 1","movetime_ms":50,"perspective":"side_to_move"}"#).unwrap();
        assert_eq!(r.limits, Limits { visits: None, movetime: Some(Duration::from_millis(50)) });
        assert_eq!(r.perspective, Perspective::SideToMove);
        let r = parse_line(r#"{"id":"q","tps":"x3/x3/x3 1 1"}"#).unwrap();
        assert_eq!(r.limits.visits, Some(DEFAULT_VISITS));
    }

    #[test]
    fn a_game_gives_the_plies_asked_for_with_its_komi_or_the_querys() {
        let ptn = r#"[Size \"4\"]\n[Komi \"1.5\"]\n\n1. a1 d4\n2. b2 c3\n"#;
        let r = parse_line(&format!(r#"{{"id":"g","ptn":"{ptn}"}}"#)).unwrap();
        assert_eq!(r.positions.iter().map(|p| p.0).collect::<Vec<_>>(), (0..=4).map(Some).collect::<Vec<_>>());
        assert!(r.positions.iter().all(|(_, p)| p.half_komi() == 3));
        assert_eq!(r.positions[3].1.ply(), 3);
        let r = parse_line(&format!(r#"{{"id":"g","ptn":"{ptn}","plies":[4,1],"komi":-0.5}}"#)).unwrap();
        assert_eq!(r.positions.iter().map(|p| p.0).collect::<Vec<_>>(), vec![Some(4), Some(1)]);
        assert!(r.positions.iter().all(|(_, p)| p.half_komi() == -1));
        let e = refused(&format!(r#"{{"id":"g","ptn":"{ptn}","plies":[5]}}"#));
        assert_eq!(e.field.as_deref(), Some("plies"));
        assert!(e.to_string().contains("ply 5 is past the game's end (it has positions 0 to 4)"), "{e}");
    }

    #[test]
    fn every_bad_query_names_its_field() {
        let cases = [
            (r#"{"id":"a","tps":"x3/x3/x3 1 1","komy":2}"#, Some("komy"), "unknown field `komy`"),
            (r#"{"id":"a","tps":"x3/x3/x3 1 1","visits":"many"}"#, Some("visits"), "invalid type"),
            (r#"{"id":"a","tps":"x3/x3/x3 1 1","visits":0}"#, Some("visits"), "visits 0 is out of range"),
            (r#"{"id":"a","tps":"x3/x3/x3 1 1","visits":-4}"#, Some("visits"), "invalid value"),
            (r#"{"id":"a","tps":"x3/x3/x3 1 1","movetime_ms":0}"#, Some("movetime_ms"), "out of range"),
            (r#"{"id":"a","tps":"x3/x3/x3 1 1","multipv":17}"#, Some("multipv"), "multipv 17 is out of range"),
            (r#"{"id":"a","tps":"x3/x3/x3 1 1","multipv":0}"#, Some("multipv"), "multipv 0"),
            (r#"{"id":"a","tps":"x3/x3/x3 1 1","komi":2.25}"#, Some("komi"), "not a multiple of 0.5"),
            (r#"{"id":"a","tps":"x3/x3/x3 1 1","komi":6}"#, Some("komi"), "komi 6 is out of range"),
            (r#"{"id":"a","tps":"x3/x3/x3 1 1","perspective":"red"}"#, Some("perspective"), "unknown variant"),
            (r#"{"id":"a","tps":"x3/x3/x3 1 1","plies":[0]}"#, Some("plies"), "a `tps` is one position"),
            (r#"{"id":"a","tps":"x3/x3 1 1"}"#, Some("tps"), "bad TPS"),
            (r#"{"id":"a"}"#, Some("tps"), "needs a position"),
            (r#"{"id":"a","tps":"x3/x3/x3 1 1","ptn":"1. a1"}"#, Some("ptn"), "not both"),
            (r#"{"id":"a","ptn":"[Size \"3\"]\n\n1. a1 a1"}"#, Some("ptn"), "bad PTN"),
            (r#"{"id":"a","ptn":"[Size \"3\"]\n\n1. a1 c3","plies":[]}"#, Some("plies"), "`plies` is empty"),
            (r#"{"id":"a","ptn":"[Size \"3\"]\n\n1. a1 c3","plies":[0,"x"]}"#, Some("plies"), "invalid type"),
            (r#"{"tps":"x3/x3/x3 1 1"}"#, Some("id"), "missing field `id`"),
            (r#"{"id":7,"tps":"x3/x3/x3 1 1"}"#, Some("id"), "invalid type"),
        ];
        for (line, field, needle) in cases {
            let e = refused(line);
            assert_eq!(e.field.as_deref(), field, "{line}: {e}");
            assert!(e.to_string().contains(needle), "{line}: {e:?} lacks {needle:?}");
            if line.contains(r#""id":"a""#) {
                assert_eq!(e.id.as_deref(), Some("a"), "{line}: the error names its query");
            }
        }
        for (line, needle) in [("{", "malformed JSON"), ("[1, 2]", "JSON object"), ("\"q\"", "JSON object")] {
            let e = refused(line);
            assert_eq!((e.id, e.field), (None, None), "{line}");
            assert!(e.kind.to_string().contains(needle), "{line}: {}", e.kind);
        }
        let long = format!(r#"{{"id":"a","tps":"{}"}}"#, " ".repeat(MAX_LINE));
        assert!(matches!(refused(&long).kind, QueryErrorKind::TooLong(_)));
    }
}
