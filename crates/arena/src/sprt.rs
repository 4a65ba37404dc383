//! Gating: deciding whether a candidate is stronger than the incumbent.
//!
//! # SPRT
//! [`Sprt`] tests H0: `elo = elo0` against H1: `elo = elo1` (logistic Elo of the candidate
//! over the baseline) with error rates `alpha` (accepting H1 when H0 holds) and `beta`
//! (accepting H0 when H1 holds). It uses the generalized SPRT (GSPRT) approximation of
//! the log-likelihood ratio, as in fishtest and cutechess:
//!
//! `LLR = N (s1 - s0) (2 x̄ - s0 - s1) / (2 σ²)`
//!
//! where `s0`, `s1` are the expected scores under H0 and H1, and `x̄` and `σ²` are the
//! sample mean and variance of the per-unit score over `N` units. The unit is one game
//! ([`SprtModel::Trinomial`]: loss/draw/win) or one colour-swapped game pair
//! ([`SprtModel::Pentanomial`]: pair score 0, ½, 1, 1½ or 2, scaled to [0, 1]). The
//! pentanomial model is the right one for paired games from the same opening because it
//! accounts for the correlation within a pair. To keep `σ²` positive for one-sided
//! samples (all wins), each outcome category gets a pseudo-count of 10⁻³ when any is empty.
//!
//! The test continues while `ln(β/(1-α)) < LLR < ln((1-β)/α)` and accepts H0 at the lower
//! bound and H1 at the upper.
//!
//! # Fixed games
//! [`FixedGames`] plays a set number of games and accepts the candidate if its score
//! (points per game, draws half) is at least a threshold (e.g. 0.55).

use serde::{Deserialize, Serialize};

use crate::error::SprtError;

/// Where a test stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateState {
    /// Not enough evidence yet: play more games.
    Continue,
    /// The candidate is stronger (H1 accepted).
    AcceptH1,
    /// The candidate is not stronger (H0 accepted).
    AcceptH0,
}

/// What the SPRT counts as one observation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SprtModel {
    /// Each game: loss, draw or win.
    Trinomial,
    /// Each colour-swapped pair of games: 0 to 2 points in half points.
    #[default]
    Pentanomial,
}

/// Expected score of a player `elo` points stronger (logistic Elo).
pub fn expected_score(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// Sequential probability ratio test on a stream of results (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sprt {
    /// Elo under H0.
    pub elo0: f64,
    /// Elo under H1.
    pub elo1: f64,
    /// False positive rate (accept H1 when H0 holds).
    pub alpha: f64,
    /// False negative rate (accept H0 when H1 holds).
    pub beta: f64,
    /// The observation model.
    pub model: SprtModel,
    /// Trinomial counts: losses, draws, wins.
    pub games: [u64; 3],
    /// Pentanomial counts of pair scores 0, ½, 1, 1½, 2.
    pub pairs: [u64; 5],
    /// The first game of a pair waiting for its partner (score in half points).
    pending: Option<u8>,
}

impl Sprt {
    /// A new test. `elo0 < elo1`, `0 < alpha, beta < 1`.
    pub fn new(elo0: f64, elo1: f64, alpha: f64, beta: f64, model: SprtModel) -> Result<Sprt, SprtError> {
        if elo0.partial_cmp(&elo1) != Some(std::cmp::Ordering::Less) {
            return Err(SprtError::Hypotheses { elo0, elo1 });
        }
        if !(alpha > 0.0 && alpha < 1.0 && beta > 0.0 && beta < 1.0) {
            return Err(SprtError::ErrorRates { alpha, beta });
        }
        Ok(Sprt { elo0, elo1, alpha, beta, model, games: [0; 3], pairs: [0; 5], pending: None })
    }

    /// Records one game's score for the candidate (1 win, 0.5 draw, 0 loss). Games are
    /// paired in arrival order for the pentanomial model: call this for both games of a
    /// pair one after the other, or use [`Sprt::record_pair`].
    pub fn record_game(&mut self, score: f64) {
        let half = (score.clamp(0.0, 1.0) * 2.0).round() as u8;
        self.games[half as usize] += 1;
        match self.pending.take() {
            None => self.pending = Some(half),
            Some(first) => self.pairs[(first + half) as usize] += 1,
        }
    }

    /// Records both games of a colour-swapped pair.
    pub fn record_pair(&mut self, first: f64, second: f64) {
        self.pending = None;
        self.record_game(first);
        self.record_game(second);
    }

    /// Lower decision bound `ln(β / (1 - α))`.
    pub fn lower_bound(&self) -> f64 {
        (self.beta / (1.0 - self.alpha)).ln()
    }

    /// Upper decision bound `ln((1 - β) / α)`.
    pub fn upper_bound(&self) -> f64 {
        ((1.0 - self.beta) / self.alpha).ln()
    }

    /// The log-likelihood ratio so far (0 before any complete observation).
    pub fn llr(&self) -> f64 {
        match self.model {
            SprtModel::Trinomial => gsprt_llr(&self.games, &[0.0, 0.5, 1.0], self.elo0, self.elo1),
            SprtModel::Pentanomial => gsprt_llr(&self.pairs, &[0.0, 0.25, 0.5, 0.75, 1.0], self.elo0, self.elo1),
        }
    }

    /// Continue, accept H1 or accept H0.
    pub fn state(&self) -> GateState {
        let llr = self.llr();
        if llr >= self.upper_bound() {
            GateState::AcceptH1
        } else if llr <= self.lower_bound() {
            GateState::AcceptH0
        } else {
            GateState::Continue
        }
    }

    /// Games recorded.
    pub fn total_games(&self) -> u64 {
        self.games.iter().sum()
    }

    /// The candidate's score so far (points per game; 0.5 with no game).
    pub fn score(&self) -> f64 {
        let n = self.total_games();
        if n == 0 { 0.5 } else { (self.games[1] as f64 * 0.5 + self.games[2] as f64) / n as f64 }
    }
}

/// GSPRT log-likelihood ratio for counts of outcomes with the given per-unit scores.
fn gsprt_llr(counts: &[u64], scores: &[f64], elo0: f64, elo1: f64) -> f64 {
    let n_real: u64 = counts.iter().sum();
    if n_real == 0 {
        return 0.0;
    }
    let n = n_real as f64;
    let mean = counts.iter().zip(scores).map(|(&k, s)| k as f64 * s).sum::<f64>() / n;
    // Variance over the counts plus one pseudo-observation spread evenly over the
    // categories, so that one-sided samples (all wins) have a positive variance.
    let prior = 1.0 / counts.len() as f64;
    let c: Vec<f64> = counts.iter().map(|&k| k as f64 + prior).collect();
    let nr = n + 1.0;
    let mean_r = c.iter().zip(scores).map(|(k, s)| k * s).sum::<f64>() / nr;
    let var = c.iter().zip(scores).map(|(k, s)| k * (s - mean_r).powi(2)).sum::<f64>() / nr;
    if var <= 0.0 {
        return 0.0;
    }
    let s0 = expected_score(elo0);
    let s1 = expected_score(elo1);
    n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * var)
}

/// Fixed-length gate: after `games` games, accept H1 if the score is at least `threshold`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FixedGames {
    /// Games to play.
    pub games: u64,
    /// Minimum score (points per game) to accept, e.g. 0.55.
    pub threshold: f64,
    /// Games recorded.
    pub played: u64,
    /// Points recorded.
    pub points: f64,
}

impl FixedGames {
    /// A gate of `games` games with an acceptance `threshold`.
    pub fn new(games: u64, threshold: f64) -> FixedGames {
        FixedGames { games, threshold, played: 0, points: 0.0 }
    }

    /// Records one game's score for the candidate.
    pub fn record_game(&mut self, score: f64) {
        self.played += 1;
        self.points += score.clamp(0.0, 1.0);
    }

    /// The score so far (0.5 with no game).
    pub fn score(&self) -> f64 {
        if self.played == 0 { 0.5 } else { self.points / self.played as f64 }
    }

    /// Continue until `games` are played, then accept H1 or H0.
    pub fn state(&self) -> GateState {
        if self.played < self.games {
            GateState::Continue
        } else if self.score() >= self.threshold {
            GateState::AcceptH1
        } else {
            GateState::AcceptH0
        }
    }
}

/// Either gate, configured by serde (`{"kind": "sprt", ...}` or `{"kind": "fixed", ...}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum GateConfig {
    /// An SPRT.
    Sprt {
        /// Elo under H0 (e.g. 0).
        elo0: f64,
        /// Elo under H1 (e.g. 30).
        elo1: f64,
        /// False positive rate (e.g. 0.05).
        alpha: f64,
        /// False negative rate (e.g. 0.05).
        beta: f64,
        /// Observation model.
        #[serde(default)]
        model: SprtModel,
    },
    /// A fixed number of games with a score threshold.
    Fixed {
        /// Games to play.
        games: u64,
        /// Minimum score to accept.
        threshold: f64,
    },
}

/// A running gate built from a [`GateConfig`].
#[derive(Clone, Debug, PartialEq)]
pub enum Gate {
    /// An SPRT.
    Sprt(Sprt),
    /// A fixed-length test.
    Fixed(FixedGames),
}

impl Gate {
    /// Starts a gate.
    pub fn new(config: &GateConfig) -> Result<Gate, SprtError> {
        Ok(match *config {
            GateConfig::Sprt { elo0, elo1, alpha, beta, model } => {
                Gate::Sprt(Sprt::new(elo0, elo1, alpha, beta, model)?)
            }
            GateConfig::Fixed { games, threshold } => Gate::Fixed(FixedGames::new(games, threshold)),
        })
    }

    /// Records one game's score for the candidate.
    pub fn record_game(&mut self, score: f64) {
        match self {
            Gate::Sprt(s) => s.record_game(score),
            Gate::Fixed(f) => f.record_game(score),
        }
    }

    /// Where the test stands.
    pub fn state(&self) -> GateState {
        match self {
            Gate::Sprt(s) => s.state(),
            Gate::Fixed(f) => f.state(),
        }
    }
}
