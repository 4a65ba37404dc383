//! Engine → runner: [`Response`] and [`parse_response`].

use std::fmt;
use std::str::FromStr;

use crate::command::{parse_in_range, parse_size};
use crate::error::{ParseErrorKind, TeiParseError};

/// The type of an engine option, as its `option` line declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionType {
    /// `check`: `true` or `false`.
    Check,
    /// `spin`: an integer from `min` to `max`.
    Spin,
    /// `combo`: one of the `var` values.
    Combo,
    /// `button`: `setoption name N` without a value does something.
    Button,
    /// `string`: any text.
    String,
}

impl OptionType {
    /// The word of the `option` line.
    pub fn as_str(self) -> &'static str {
        match self {
            OptionType::Check => "check",
            OptionType::Spin => "spin",
            OptionType::Combo => "combo",
            OptionType::Button => "button",
            OptionType::String => "string",
        }
    }
}

impl FromStr for OptionType {
    type Err = ParseErrorKind;

    fn from_str(s: &str) -> Result<OptionType, ParseErrorKind> {
        Ok(match s {
            "check" => OptionType::Check,
            "spin" => OptionType::Spin,
            "combo" => OptionType::Combo,
            "button" => OptionType::Button,
            "string" => OptionType::String,
            other => {
                return Err(ParseErrorKind::Unexpected {
                    found: other.to_string(),
                    expected: "an option type: check, spin, combo, button or string",
                });
            }
        })
    }
}

/// An `option` line of the handshake: `option name N type T [default D] [min X] [max Y]
/// [var V]…`.
#[derive(Clone, Debug, PartialEq)]
pub struct OptionInfo {
    /// Option name (may hold spaces).
    pub name: String,
    /// Its type.
    pub kind: OptionType,
    /// Default value.
    pub default: Option<String>,
    /// Smallest value of a `spin`.
    pub min: Option<i64>,
    /// Largest value of a `spin`.
    pub max: Option<i64>,
    /// The values of a `combo`.
    pub vars: Vec<String>,
}

impl OptionInfo {
    /// A `spin` option from `min` to `max`.
    pub fn spin(name: &str, default: i64, min: i64, max: i64) -> OptionInfo {
        OptionInfo {
            name: name.to_string(),
            kind: OptionType::Spin,
            default: Some(default.to_string()),
            min: Some(min),
            max: Some(max),
            vars: Vec::new(),
        }
    }

    /// A `combo` option: one of `vars`, `default` at first.
    pub fn combo(name: &str, default: &str, vars: &[&str]) -> OptionInfo {
        OptionInfo {
            name: name.to_string(),
            kind: OptionType::Combo,
            default: Some(default.to_string()),
            min: None,
            max: None,
            vars: vars.iter().map(|v| v.to_string()).collect(),
        }
    }
}

/// The result of a solved position, for the side to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The side to move wins.
    Win,
    /// The side to move loses.
    Loss,
    /// A draw.
    Draw,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Win => "win",
            Outcome::Loss => "loss",
            Outcome::Draw => "draw",
        }
    }
}

/// The `score` of an `info` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Score {
    /// `score cp S`: an evaluation (Bredon's scale: see [`crate::value_to_cp`]).
    Cp(i32),
    /// `score solved win|loss|draw N` (PTN Ninja): a proven result, its forcing line `N`
    /// plies long.
    Solved {
        /// Win, loss or draw for the side to move.
        outcome: Outcome,
        /// Plies of the shortest forcing line found.
        plies: u32,
    },
}

/// `wdl W D L`: win, draw and loss chances of the side to move in per mille.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wdl {
    /// Win chance, ‰.
    pub win: u16,
    /// Draw chance, ‰.
    pub draw: u16,
    /// Loss chance, ‰.
    pub loss: u16,
}

impl Wdl {
    /// Per mille from probabilities (any non-negative weights; they are normalised), rounded
    /// so that the three sum to exactly 1000. All zero (or not finite) gives a draw.
    pub fn from_probabilities(win: f32, draw: f32, loss: f32) -> Wdl {
        let clean = |p: f32| if p.is_finite() { p.max(0.0) as f64 } else { 0.0 };
        let (w, d, l) = (clean(win), clean(draw), clean(loss));
        let total = w + d + l;
        if total <= 0.0 {
            return Wdl { win: 0, draw: 1000, loss: 0 };
        }
        let win = (w / total * 1000.0).round().min(1000.0) as u16;
        let loss = ((l / total * 1000.0).round() as u16).min(1000 - win);
        Wdl { win, draw: 1000 - win - loss, loss }
    }
}

/// A search report: `info [depth D] [seldepth S] [multipv K] [score cp S | score solved
/// win|loss|draw N] [wdl W D L] [nodes N] [time MS] [nps P] [hashfull H] [pv M…]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Info {
    /// Search depth in plies (Bredon: the length of the line reported).
    pub depth: Option<u64>,
    /// Selective depth in plies.
    pub seldepth: Option<u64>,
    /// Which line of a MultiPV report this is (1 = the best).
    pub multipv: Option<u32>,
    /// The score.
    pub score: Option<Score>,
    /// Win/draw/loss chances, ‰.
    pub wdl: Option<Wdl>,
    /// Nodes (playouts) searched.
    pub nodes: Option<u64>,
    /// Milliseconds since the search began.
    pub time_ms: Option<u64>,
    /// Nodes per second.
    pub nps: Option<u64>,
    /// How full the engine's memory budget (`Hash`) is, ‰.
    pub hashfull: Option<u64>,
    /// The principal variation, PTN moves (last on the line).
    pub pv: Option<Vec<String>>,
}

/// The engine's supported board sizes and komi values (PTN Ninja): `size N… halfkomi K…`,
/// one line per group of sizes sharing the komi values, before `teiok`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeSupport {
    /// Board sizes, 3 to 8 (at least one).
    pub sizes: Vec<usize>,
    /// Komi values in half points those sizes accept (at least one).
    pub half_komis: Vec<i8>,
}

/// One line from the engine to the GUI / match runner.
#[derive(Clone, Debug, PartialEq)]
pub enum Response {
    /// `id name X`, `id author X` or `id version X`.
    Id {
        /// `name`, `author`, `version`.
        field: String,
        /// The rest of the line.
        value: String,
    },
    /// `size N… halfkomi K…`: the sizes and komi the engine plays (PTN Ninja's TEI 1).
    Sizes(SizeSupport),
    /// `option name …`.
    Option(OptionInfo),
    /// `teiok`: the handshake is over.
    TeiOk,
    /// `readyok`.
    ReadyOk,
    /// `info …`: search progress.
    Info(Info),
    /// `info string TEXT`: a message for a human (Bredon's start with `error:` or `warning:`).
    InfoString(String),
    /// `info error TEXT` (PTN Ninja): an error message for a human.
    InfoError(String),
    /// `bestmove M`: the move, PTN (words after it, such as `ponder`, are dropped).
    BestMove(String),
}

/// Parses one line from an engine. Empty and unknown lines are errors (a client skips
/// what it does not wait for).
pub fn parse_response(line: &str) -> Result<Response, TeiParseError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&head, rest)) = words.split_first() else {
        return Err(TeiParseError::new("", ParseErrorKind::EmptyLine));
    };
    let wrap = |kind| TeiParseError::new(head, kind);
    Ok(match head {
        "teiok" => Response::TeiOk,
        "readyok" => Response::ReadyOk,
        "bestmove" => match rest.first() {
            Some(mv) => Response::BestMove(mv.to_string()),
            None => return Err(wrap(ParseErrorKind::MissingValue { field: "bestmove" })),
        },
        "id" => match rest.split_first() {
            Some((field, value)) => Response::Id { field: field.to_string(), value: value.join(" ") },
            None => return Err(wrap(ParseErrorKind::Missing { expected: "`name`, `author` or `version`" })),
        },
        "size" => Response::Sizes(parse_sizes(rest).map_err(wrap)?),
        "option" => Response::Option(parse_option(rest).map_err(wrap)?),
        "info" if matches!(rest.first(), Some(&"string" | &"error")) => {
            // The text as sent, after `info string ` (inner spacing kept).
            let after = line.trim_start().strip_prefix("info").unwrap_or("").trim_start();
            let text = after.strip_prefix(rest[0]).unwrap_or("");
            let text = text.strip_prefix(' ').unwrap_or(text).trim_end().to_string();
            if rest[0] == "string" { Response::InfoString(text) } else { Response::InfoError(text) }
        }
        "info" => Response::Info(parse_info(rest).map_err(wrap)?),
        _ => return Err(wrap(ParseErrorKind::UnknownResponse)),
    })
}

fn parse_sizes(rest: &[&str]) -> Result<SizeSupport, ParseErrorKind> {
    let Some(split) = rest.iter().position(|&w| w == "halfkomi") else {
        return Err(ParseErrorKind::Missing { expected: "`halfkomi K…` after the sizes" });
    };
    let sizes = rest[..split].iter().map(|s| parse_size(s)).collect::<Result<Vec<_>, _>>()?;
    let half_komis = rest[split + 1..]
        .iter()
        .map(|k| parse_in_range("halfkomi", k, i8::MIN.into(), i8::MAX.into()).map(|k| k as i8))
        .collect::<Result<Vec<_>, _>>()?;
    if sizes.is_empty() {
        return Err(ParseErrorKind::MissingValue { field: "size" });
    }
    if half_komis.is_empty() {
        return Err(ParseErrorKind::MissingValue { field: "halfkomi" });
    }
    Ok(SizeSupport { sizes, half_komis })
}

fn parse_option(rest: &[&str]) -> Result<OptionInfo, ParseErrorKind> {
    if rest.first() != Some(&"name") {
        return Err(ParseErrorKind::Missing { expected: "`name <name> type <type> …`" });
    }
    let Some(type_at) = rest.iter().position(|&w| w == "type") else {
        return Err(ParseErrorKind::Missing { expected: "`type <type>`" });
    };
    let name = rest[1..type_at].join(" ");
    if name.is_empty() {
        return Err(ParseErrorKind::MissingValue { field: "name" });
    }
    let Some(kind) = rest.get(type_at + 1) else { return Err(ParseErrorKind::MissingValue { field: "type" }) };
    let mut o = OptionInfo { name, kind: kind.parse()?, default: None, min: None, max: None, vars: Vec::new() };
    let mut i = type_at + 2;
    while i < rest.len() {
        let key = rest[i];
        let end = rest[i + 1..]
            .iter()
            .position(|w| matches!(*w, "default" | "min" | "max" | "var"))
            .map_or(rest.len(), |p| i + 1 + p);
        let value = rest[i + 1..end].join(" ");
        let bound = |field: &'static str| -> Result<Option<i64>, ParseErrorKind> {
            if value.is_empty() {
                return Err(ParseErrorKind::MissingValue { field });
            }
            value.parse().map(Some).map_err(|_| ParseErrorKind::NotANumber { field, value: value.clone() })
        };
        match key {
            "default" => o.default = Some(value),
            "min" => o.min = bound("min")?,
            "max" => o.max = bound("max")?,
            "var" => o.vars.push(value),
            other => {
                return Err(ParseErrorKind::Unexpected {
                    found: other.to_string(),
                    expected: "`default`, `min`, `max` or `var`",
                });
            }
        }
        i = end;
    }
    Ok(o)
}

fn parse_info(rest: &[&str]) -> Result<Info, ParseErrorKind> {
    fn number<T: FromStr>(field: &'static str, v: Option<&&str>) -> Result<T, ParseErrorKind> {
        let Some(v) = v else { return Err(ParseErrorKind::MissingValue { field }) };
        v.parse().map_err(|_| ParseErrorKind::NotANumber { field, value: v.to_string() })
    }
    let mut info = Info::default();
    let mut i = 0;
    while i < rest.len() {
        let next = rest.get(i + 1);
        match rest[i] {
            "depth" => info.depth = Some(number("depth", next)?),
            "seldepth" => info.seldepth = Some(number("seldepth", next)?),
            "multipv" => info.multipv = Some(number("multipv", next)?),
            "nodes" => info.nodes = Some(number("nodes", next)?),
            "time" => info.time_ms = Some(number("time", next)?),
            "nps" => info.nps = Some(number("nps", next)?),
            "hashfull" => info.hashfull = Some(number("hashfull", next)?),
            "wdl" => {
                info.wdl = Some(Wdl {
                    win: number("wdl", next)?,
                    draw: number("wdl", rest.get(i + 2))?,
                    loss: number("wdl", rest.get(i + 3))?,
                });
                i += 2;
            }
            "score" => {
                const SCORE: &str = "`cp <value>` or `solved win|loss|draw <plies>`";
                match next {
                    Some(&"cp") => info.score = Some(Score::Cp(number("score cp", rest.get(i + 2))?)),
                    Some(&"solved") => {
                        let outcome = match rest.get(i + 2) {
                            Some(&"win") => Outcome::Win,
                            Some(&"loss") => Outcome::Loss,
                            Some(&"draw") => Outcome::Draw,
                            Some(w) => {
                                return Err(ParseErrorKind::Unexpected {
                                    found: w.to_string(),
                                    expected: "`win`, `loss` or `draw`",
                                });
                            }
                            None => return Err(ParseErrorKind::MissingValue { field: "score solved" }),
                        };
                        let plies = number("score solved", rest.get(i + 3))?;
                        info.score = Some(Score::Solved { outcome, plies });
                        i += 1;
                    }
                    Some(w) => return Err(ParseErrorKind::Unexpected { found: w.to_string(), expected: SCORE }),
                    None => return Err(ParseErrorKind::Missing { expected: SCORE }),
                }
                i += 1;
            }
            "pv" => {
                info.pv = Some(rest[i + 1..].iter().map(|s| s.to_string()).collect());
                break;
            }
            // Bounds qualify the score; Bredon's scores are never bounds.
            "lowerbound" | "upperbound" => {
                i += 1;
                continue;
            }
            // Another engine's extra fields (`currmove a1`, `tbhits 0`): skipped with a
            // numeric value.
            _ => {
                if next.is_none_or(|v| v.parse::<i64>().is_err()) {
                    i += 1;
                    continue;
                }
            }
        }
        i += 2;
    }
    Ok(info)
}

impl fmt::Display for OptionInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "option name {} type {}", self.name, self.kind.as_str())?;
        if let Some(d) = &self.default {
            write!(f, " default {d}")?;
        }
        if let Some(m) = &self.min {
            write!(f, " min {m}")?;
        }
        if let Some(m) = &self.max {
            write!(f, " max {m}")?;
        }
        for v in &self.vars {
            write!(f, " var {v}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Score {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Score::Cp(cp) => write!(f, "score cp {cp}"),
            Score::Solved { outcome, plies } => write!(f, "score solved {} {plies}", outcome.as_str()),
        }
    }
}

impl fmt::Display for Info {
    /// `info` and the fields that are set, in the order of the struct (`pv` last).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("info")?;
        if let Some(d) = self.depth {
            write!(f, " depth {d}")?;
        }
        if let Some(d) = self.seldepth {
            write!(f, " seldepth {d}")?;
        }
        if let Some(k) = self.multipv {
            write!(f, " multipv {k}")?;
        }
        if let Some(s) = &self.score {
            write!(f, " {s}")?;
        }
        if let Some(Wdl { win, draw, loss }) = self.wdl {
            write!(f, " wdl {win} {draw} {loss}")?;
        }
        if let Some(n) = self.nodes {
            write!(f, " nodes {n}")?;
        }
        if let Some(t) = self.time_ms {
            write!(f, " time {t}")?;
        }
        if let Some(n) = self.nps {
            write!(f, " nps {n}")?;
        }
        if let Some(h) = self.hashfull {
            write!(f, " hashfull {h}")?;
        }
        if let Some(pv) = &self.pv {
            write!(f, " pv {}", pv.join(" "))?;
        }
        Ok(())
    }
}

impl fmt::Display for SizeSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("size")?;
        for s in &self.sizes {
            write!(f, " {s}")?;
        }
        f.write_str(" halfkomi")?;
        for k in &self.half_komis {
            write!(f, " {k}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Response::Id { field, value } => write!(f, "id {field} {value}"),
            Response::Sizes(s) => s.fmt(f),
            Response::Option(o) => o.fmt(f),
            Response::TeiOk => f.write_str("teiok"),
            Response::ReadyOk => f.write_str("readyok"),
            Response::Info(i) => i.fmt(f),
            Response::InfoString(s) => write!(f, "info string {s}"),
            Response::InfoError(s) => write!(f, "info error {s}"),
            Response::BestMove(m) => write!(f, "bestmove {m}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_parse_and_format() {
        for line in [
            "id name Bredon 0.1.0",
            "id author the Bredon developers",
            "id version 0.1.0",
            "size 4 5 6 halfkomi 0 4",
            "size 6 7 halfkomi -2 0 1 2 3",
            "option name HalfKomi type combo default 0 var -1 var 0 var 1",
            "option name HalfKomi type spin default 0 min -10 max 10",
            "option name MultiPV type spin default 1 min 1 max 16",
            "option name Model Path type string default ./path/to/model.ot",
            "option name Debug type check default false",
            "option name Reset type button",
            "teiok",
            "readyok",
            "info depth 3 nodes 200 time 5 nps 40000 pv d1 a2 b3",
            "info depth 3 score cp 9999 nodes 200 time 5 nps 40000 pv d1 a2 b3",
            "info depth 1 nodes 0 time 1 nps 0 pv ",
            "info depth 7 seldepth 12 multipv 2 score cp -35 wdl 310 20 670 nodes 9000 time 450 nps 20000 hashfull 12 pv a1 b2",
            "info depth 3 multipv 1 score solved win 3 wdl 1000 0 0 nodes 40 pv d1 a2 e1",
            "info depth 2 score solved loss 2 pv a1 b1",
            "info score solved draw 40",
            "info string warning: go: ignored depth 7, ponder",
            "info error the model file is damaged",
            "bestmove 2c3>11",
        ] {
            let r = parse_response(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(r.to_string(), line);
            assert_eq!(parse_response(&r.to_string()).unwrap(), r, "{line}");
        }
        assert_eq!(parse_response("bestmove a1 ponder b2").unwrap(), Response::BestMove("a1".into()));
        assert_eq!(parse_response("info string  two  spaces ").unwrap(), Response::InfoString(" two  spaces".into()));
        // Other engines' fields are skipped, bounds too.
        let info =
            parse_response("info seldepth 9 depth 2 tbhits 3 currmove a1 score cp 5 lowerbound nodes 10").unwrap();
        assert_eq!(
            info,
            Response::Info(Info {
                depth: Some(2),
                seldepth: Some(9),
                score: Some(Score::Cp(5)),
                nodes: Some(10),
                ..Info::default()
            })
        );
    }

    /// Every kind of response error, with its message.
    #[test]
    fn each_bad_response_gets_its_error() {
        for (line, message) in [
            ("", "empty line"),
            ("  ", "empty line"),
            ("bestmove", "bestmove: bestmove needs a value"),
            ("bogus 1", "unknown response \"bogus\""),
            ("id", "id: expected `name`, `author` or `version`"),
            ("info nodes x", "info: nodes value \"x\" is not a number"),
            ("info nodes -3", "info: nodes value \"-3\" is not a number"),
            ("info depth", "info: depth needs a value"),
            ("info wdl 1 2", "info: wdl needs a value"),
            ("info score mate 3", "info: unexpected \"mate\", expected `cp <value>` or `solved win|loss|draw <plies>`"),
            ("info score", "info: expected `cp <value>` or `solved win|loss|draw <plies>`"),
            ("info score solved won 3", "info: unexpected \"won\", expected `win`, `loss` or `draw`"),
            ("info score solved win", "info: score solved needs a value"),
            ("info score solved", "info: score solved needs a value"),
            ("option name X", "option: expected `type <type>`"),
            ("option HalfKomi type spin", "option: expected `name <name> type <type> …`"),
            ("option name type spin", "option: name needs a value"),
            ("option name X type", "option: type needs a value"),
            (
                "option name X type slider",
                "option: unexpected \"slider\", expected an option type: check, spin, combo, button or string",
            ),
            ("option name X type spin min", "option: min needs a value"),
            ("option name X type spin max ten", "option: max value \"ten\" is not a number"),
            ("size 4 5", "size: expected `halfkomi K…` after the sizes"),
            ("size halfkomi 0", "size: size needs a value"),
            ("size 5 halfkomi", "size: halfkomi needs a value"),
            ("size 9 halfkomi 0", "size: size value 9 is out of range (3 to 8)"),
            ("size 5 halfkomi 2.5", "size: halfkomi value \"2.5\" is not a number"),
        ] {
            let e = parse_response(line).unwrap_err();
            assert_eq!(e.to_string(), message, "{line:?}");
        }
    }

    #[test]
    fn wdl_from_probabilities_sums_to_a_thousand() {
        assert_eq!(Wdl::from_probabilities(1.0, 0.0, 0.0), Wdl { win: 1000, draw: 0, loss: 0 });
        assert_eq!(Wdl::from_probabilities(0.3333, 0.3333, 0.3333), Wdl { win: 333, draw: 334, loss: 333 });
        assert_eq!(Wdl::from_probabilities(2.0, 0.0, 2.0), Wdl { win: 500, draw: 0, loss: 500 });
        assert_eq!(Wdl::from_probabilities(0.0, 0.0, 0.0), Wdl { win: 0, draw: 1000, loss: 0 });
        assert_eq!(Wdl::from_probabilities(f32::NAN, -1.0, 1.0), Wdl { win: 0, draw: 0, loss: 1000 });
        for (w, d, l) in [(0.9995, 0.0, 0.0005), (0.0004, 0.9992, 0.0004), (0.1234, 0.5678, 0.3088)] {
            let x = Wdl::from_probabilities(w, d, l);
            assert_eq!(x.win + x.draw + x.loss, 1000, "{x:?}");
        }
    }
}
