//! The JSON analysis engine (after KataGo's): one JSON query a line in, one JSON answer a
//! line out per analysed position, written as soon as it is ready. A query names a
//! position (`tps`) or a game (`ptn`, with the plies to analyse), the komi, a budget
//! (`visits` and/or `movetime_ms`), how many top moves to list (`multipv`) and whether to
//! add the ownership map; an answer carries the search's value and line, the network's
//! win/draw/loss probabilities, expected flat margin and ownership map. A malformed query
//! gets a JSON error naming the field, and the engine goes on. The protocol is written
//! down in `docs/analysis-engine.md`.
//!
//! - [`query`]: the query's JSON shape, its checks and the errors naming a field.
//! - [`answer`]: the answer and error lines.
//! - [`search`]: the one call into `bredon-mcts`.
//!
//! [`AnalysisEngine`] runs checked queries; [`serve`] drives it from any line reader to
//! any writer (stdin and stdout for `bredon analyse --json`), reading on while a query
//! runs.

pub mod answer;
pub mod query;
pub mod search;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bredon_mcts::{Evaluator, Outcome, UniformEvaluator, Wdl};
use bredon_nn::{HeadValues, Heads};
use bredon_rules::notation::write_tps;
use bredon_rules::{Color, Position, Square};

pub use answer::{Answer, ErrorAnswer, MoveInfo, Response};
pub use query::{Limits, Perspective, Query, QueryError, QueryErrorKind, Request, parse_line};

/// The brain for one board size: what the search calls, and the network's other heads.
#[derive(Clone)]
pub struct AnalysisModel {
    /// The name answers give (a file name).
    pub name: String,
    /// What the search calls.
    pub evaluator: Arc<dyn Evaluator>,
    /// The network's heads (WDL, margin, ownership); `None`: answers carry `null` for them.
    pub heads: Option<Arc<Heads>>,
}

impl AnalysisModel {
    /// The uniform evaluator (no network): for board sizes without a model.
    pub fn uniform() -> AnalysisModel {
        AnalysisModel { name: "uniform".into(), evaluator: Arc::new(UniformEvaluator), heads: None }
    }
}

/// The analysis engine: a model per board size, the uniform evaluator for the others.
pub struct AnalysisEngine {
    models: BTreeMap<usize, AnalysisModel>,
    fallback: AnalysisModel,
}

impl AnalysisEngine {
    /// An engine with `models` by board size.
    pub fn new(models: impl IntoIterator<Item = (usize, AnalysisModel)>) -> AnalysisEngine {
        AnalysisEngine { models: models.into_iter().collect(), fallback: AnalysisModel::uniform() }
    }

    /// The model that analyses positions of `size`.
    pub fn model(&self, size: usize) -> &AnalysisModel {
        self.models.get(&size).unwrap_or(&self.fallback)
    }

    /// Analyses every position of `request` in turn, giving each answer to `emit` as soon
    /// as it is ready; `stop` ends the search in progress early (with what it has).
    pub fn run(&self, request: &Request, stop: &Arc<AtomicBool>, mut emit: impl FnMut(Response)) {
        for (ply, pos) in &request.positions {
            let response = match self.analyse(request, *ply, pos, stop) {
                Ok(a) => Response::Answer(Box::new(a.rounded())),
                Err(error) => Response::Error(ErrorAnswer { id: Some(request.id.clone()), error, field: None }),
            };
            emit(response);
        }
    }

    /// Parses `line` and runs it: its answers, or one error.
    pub fn handle_line(&self, line: &str, stop: &Arc<AtomicBool>, mut emit: impl FnMut(Response)) {
        match parse_line(line) {
            Ok(request) => self.run(&request, stop, emit),
            Err(e) => emit(Response::Error(ErrorAnswer::from(&e))),
        }
    }

    fn analyse(
        &self,
        request: &Request,
        ply: Option<usize>,
        pos: &Position,
        stop: &Arc<AtomicBool>,
    ) -> Result<Answer, String> {
        let began = Instant::now();
        let model = self.model(pos.size());
        let mover = pos.side_to_move();
        let view = request.perspective.color(mover);
        // +1 when the perspective's side is to move.
        let sign = if view == mover { 1.0 } else { -1.0 };
        let mut answer = Answer {
            id: request.id.clone(),
            ply,
            tps: write_tps(pos),
            komi: f64::from(pos.half_komi()) / 2.0,
            to_move: answer::color_name(mover),
            perspective: answer::color_name(view),
            model: model.name.clone(),
            result: None,
            proven: None,
            proven_plies: None,
            value: 0.0,
            wdl: None,
            margin: None,
            best_move: None,
            pv: vec![],
            moves: vec![],
            ownership: None,
            visits: 0,
            time_ms: 0,
        };
        if let Some(result) = pos.result() {
            // A finished game: the result, the flat count and the board are the answer.
            let score = result.score_for(view);
            answer.result = Some(result.ptn().to_string());
            answer.proven = Some(outcome(score));
            answer.value = score;
            answer.wdl = Some(match outcome(score) {
                "win" => [1.0, 0.0, 0.0],
                "loss" => [0.0, 0.0, 1.0],
                _ => [0.0, 1.0, 0.0],
            });
            answer.margin = Some(flat_margin(pos, view));
            if request.ownership {
                answer.ownership = Some(Some(final_owners(pos, view)));
            }
        } else {
            let r = search::search(pos, &*model.evaluator, request.limits, stop);
            let size = pos.size();
            let wdl = |w: Wdl| {
                let w = if sign > 0.0 { w } else { Wdl { win: w.loss, draw: w.draw, loss: w.win } };
                [w.win, w.draw, w.loss]
            };
            let outcome_for_view = |o: Outcome| match (o, sign > 0.0) {
                (Outcome::Draw, _) => "draw",
                (Outcome::Win, true) | (Outcome::Loss, false) => "win",
                _ => "loss",
            };
            answer.value = r.value * sign;
            answer.proven = r.solved.map(|(o, _)| outcome_for_view(o));
            answer.proven_plies = r.solved.map(|(_, plies)| plies);
            answer.wdl = r.wdl.map(wdl);
            answer.margin = r.margin.map(|m| m * sign);
            if request.ownership || answer.margin.is_none() {
                // Only the network knows the owners: its ownership head at this position.
                // Its margin head stands in for the search's when the search has none (a
                // result proven before any visit).
                let heads: Option<HeadValues> = match &model.heads {
                    Some(h) => Some(h.evaluate(&[pos]).map_err(|e| e.to_string())?.remove(0)),
                    None => None,
                };
                if answer.margin.is_none() {
                    answer.margin = heads.as_ref().and_then(|h| h.margin).map(|m| m * sign);
                }
                if request.ownership {
                    answer.ownership = Some(heads.and_then(|h| h.ownership_for(view, mover)));
                }
            }
            answer.best_move = r.best.map(|m| m.to_ptn(size));
            answer.pv = r.pv.iter().map(|m| m.to_ptn(size)).collect();
            answer.moves = r
                .moves
                .iter()
                .take(request.multipv)
                .map(|m| MoveInfo {
                    mv: m.mv.to_ptn(size),
                    visits: m.visits,
                    prior: m.prior,
                    value: m.value.map(|v| v * sign),
                    wdl: m.wdl.map(wdl),
                    margin: m.margin.map(|x| x * sign),
                    proven: m.proven.map(outcome_for_view),
                    pv: m.pv.iter().map(|x| x.to_ptn(size)).collect(),
                })
                .collect();
            answer.visits = r.visits;
        }
        answer.time_ms = began.elapsed().as_millis() as u64;
        Ok(answer)
    }
}

/// `win`, `loss` or `draw` for a score.
fn outcome(score: f32) -> &'static str {
    if score > 0.0 {
        "win"
    } else if score < 0.0 {
        "loss"
    } else {
        "draw"
    }
}

/// `view`'s flats minus the other side's on `pos`, komi included (komi counts for black):
/// what the margin head predicts for the game's last position.
pub fn flat_margin(pos: &Position, view: Color) -> f32 {
    let (w, b) = pos.flat_counts();
    let white = w as f32 - b as f32 - f32::from(pos.half_komi()) / 2.0;
    if view == Color::White { white } else { -white }
}

/// Who tops each square of `pos`: +1 `view`, −1 the other side, 0 empty (index
/// `row * N + col`): what the ownership head predicts for the game's last position.
pub fn final_owners(pos: &Position, view: Color) -> Vec<f32> {
    let n = pos.size();
    (0..n * n)
        .map(|sq| match pos.top(Square(sq as u8)) {
            Some(p) if p.color == view => 1.0,
            Some(_) => -1.0,
            None => 0.0,
        })
        .collect()
}

/// Reads query lines from `input` until its end and writes each answer line to `output`
/// as soon as it is ready (flushed). Queries run one after another; a reader thread keeps
/// reading meanwhile, so a query that arrives during a search is queued, and a malformed
/// one is answered with its error at once. Blank lines are skipped. Returns after the
/// last answer, or with the first write error (the reader thread then ends with the
/// process).
pub fn serve<R, W>(engine: &AnalysisEngine, input: R, output: W) -> std::io::Result<()>
where
    R: BufRead + Send + 'static,
    W: Write + Send + 'static,
{
    let output = Arc::new(Mutex::new(output));
    let (tx, rx) = mpsc::channel::<Request>();
    let reader_out = output.clone();
    let reader = std::thread::Builder::new().name("analysis-reader".into()).spawn(move || -> std::io::Result<()> {
        let mut input = input;
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            if input.read_until(b'\n', &mut bytes)? == 0 {
                return Ok(());
            }
            let parsed = match std::str::from_utf8(&bytes) {
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => parse_line(line.trim()),
                Err(_) => Err(QueryError {
                    id: None,
                    field: None,
                    kind: QueryErrorKind::Syntax("the line is not UTF-8".into()),
                }),
            };
            match parsed {
                Ok(request) => {
                    if tx.send(request).is_err() {
                        return Ok(());
                    }
                }
                Err(e) => write_line(&reader_out, &Response::Error(ErrorAnswer::from(&e)))?,
            }
        }
    })?;
    let stop = Arc::new(AtomicBool::new(false));
    for request in rx {
        let mut failed = None;
        engine.run(&request, &stop, |r| {
            if failed.is_none()
                && let Err(e) = write_line(&output, &r)
            {
                failed = Some(e);
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
    }
    // The reader ended (end of input, or a write error of its own).
    reader.join().unwrap_or_else(|_| Err(std::io::Error::other("the query reader panicked")))
}

fn write_line<W: Write>(output: &Mutex<W>, response: &Response) -> std::io::Result<()> {
    let mut out = output.lock().unwrap_or_else(|p| p.into_inner());
    writeln!(out, "{}", response.to_line())?;
    out.flush()
}
