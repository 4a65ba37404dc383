//! The answer lines: one [`Answer`] per analysed position, or an [`ErrorAnswer`].

use serde::Serialize;

use super::query::QueryError;

/// What the engine says about one position. Values, WDL, margin and ownership are from
/// the view of [`Answer::perspective`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Answer {
    /// The query's id.
    pub id: String,
    /// With a `ptn` query: plies played before this position (0 = the start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ply: Option<usize>,
    /// The position (TPS).
    pub tps: String,
    /// Komi in points.
    pub komi: f64,
    /// `white` or `black`.
    pub to_move: &'static str,
    /// The side the values are for: `white` or `black`.
    pub perspective: &'static str,
    /// The network that judged the position (a file name), or `uniform` (no network for
    /// this board size).
    pub model: String,
    /// The game's result when the position is a finished game (`R-0`, `0-F`, `1/2-1/2`,
    /// ...); then there is no search and the numbers below are exact.
    pub result: Option<String>,
    /// `win`, `loss` or `draw` when the search proved the result (or the game is over).
    pub proven: Option<&'static str>,
    /// With `proven` from the search: plies until the game ends along the proven line (1:
    /// the best move ends it).
    pub proven_plies: Option<u32>,
    /// The search's expected outcome, −1 (loss) to 1 (win).
    pub value: f32,
    /// The search's win, draw and loss probabilities, summing to 1 (a network with a WDL
    /// head, or a proven result; `null` otherwise).
    pub wdl: Option<[f32; 3]>,
    /// The search's expected final flat margin in flats, komi included (a network with
    /// the margin head; `null` otherwise).
    pub margin: Option<f32>,
    /// The move the engine plays, in PTN.
    pub best_move: Option<String>,
    /// The principal variation, in PTN.
    pub pv: Vec<String>,
    /// The most visited root moves, most visited first (up to `multipv`).
    pub moves: Vec<MoveInfo>,
    /// With `"ownership": true`: the expected final owner of each square, −1 to 1 (+1 =
    /// the perspective's side), index `row * N + col` with row 0 the first rank (a1, b1,
    /// ..., then a2, ...); `null` for a network without the ownership head.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ownership: Option<Option<Vec<f32>>>,
    /// Root visits.
    pub visits: u64,
    /// Milliseconds spent on this position.
    pub time_ms: u64,
}

/// Decimals kept in an answer's numbers (the network is not surer than that).
const DECIMALS: f32 = 1e4;

fn round(x: f32) -> f32 {
    (x * DECIMALS).round() / DECIMALS
}

fn round_wdl(w: &mut Option<[f32; 3]>) {
    if let Some(w) = w {
        w.iter_mut().for_each(|x| *x = round(*x));
    }
}

impl Answer {
    /// Every number rounded to 4 decimals, for shorter lines.
    pub fn rounded(mut self) -> Answer {
        self.value = round(self.value);
        round_wdl(&mut self.wdl);
        self.margin = self.margin.map(round);
        for m in &mut self.moves {
            m.prior = round(m.prior);
            m.value = m.value.map(round);
            round_wdl(&mut m.wdl);
            m.margin = m.margin.map(round);
        }
        if let Some(Some(o)) = &mut self.ownership {
            o.iter_mut().for_each(|x| *x = round(*x));
        }
        self
    }
}

/// One root move of an answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MoveInfo {
    /// The move in PTN.
    #[serde(rename = "move")]
    pub mv: String,
    /// Its visits.
    pub visits: u32,
    /// The network's prior for it.
    pub prior: f32,
    /// The mean value after it, −1 to 1; `null` while unvisited.
    pub value: Option<f32>,
    /// Win, draw and loss after it, when known (as the answer's `wdl`).
    pub wdl: Option<[f32; 3]>,
    /// The expected final flat margin after it, in flats, when known.
    pub margin: Option<f32>,
    /// `win`, `loss` or `draw` when the search proved the result of playing it.
    pub proven: Option<&'static str>,
    /// Its line, starting with the move.
    pub pv: Vec<String>,
}

/// A refused query: `{"id": ..., "error": "...", "field": ...}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrorAnswer {
    /// The query's id (`null` when the line had no readable one).
    pub id: Option<String>,
    /// What is wrong.
    pub error: String,
    /// The field at fault (`null` when the line is not a JSON object).
    pub field: Option<String>,
}

impl From<&QueryError> for ErrorAnswer {
    fn from(e: &QueryError) -> ErrorAnswer {
        ErrorAnswer { id: e.id.clone(), error: e.to_string(), field: e.field.clone() }
    }
}

/// One line the engine writes.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Response {
    /// A position analysed.
    Answer(Box<Answer>),
    /// A query refused or failed.
    Error(ErrorAnswer),
}

impl Response {
    /// The line, without its newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("answers serialise")
    }
}

/// The name of a perspective's colour in answers.
pub(crate) fn color_name(c: bredon_rules::Color) -> &'static str {
    match c {
        bredon_rules::Color::White => "white",
        bredon_rules::Color::Black => "black",
    }
}
