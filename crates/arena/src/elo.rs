//! Elo ratings from game results: a maximum-likelihood Bradley–Terry (logistic Elo) fit.
//!
//! # Model
//! The expected score of `i` against `j` is `1 / (1 + 10^(-(r_i - r_j) / 400))`. A draw
//! counts as half a win for each side (the likelihood uses fractional scores). Colour is
//! not a parameter of the model: games are played in colour-swapped pairs, so the first
//! move advantage cancels; per-colour scores are reported in the table so it can be seen.
//!
//! # Fit
//! Newton's method on the log-likelihood with the anchor's rating fixed at 0; the 95%
//! confidence interval of each rating is `±1.96 σ`, with `σ²` the diagonal of the inverse
//! of the observed Fisher information (the negated Hessian) at the optimum. Intervals are
//! relative to the anchor (whose interval is `[0, 0]`).
//!
//! # Edge cases
//! - **Perfect scores.** The maximum-likelihood ratings are finite exactly when the
//!   "took points from" graph is strongly connected (Zermelo, Ford): every player lost or
//!   drew at least once, through some chain, to everyone it met. Players are therefore
//!   split into groups (the strongly connected components of that graph; within a group
//!   the fit needs no prior) and a weak prior joins the groups: between two groups where
//!   one scored every point against the other, [`EloOptions::prior_draws`] virtual drawn
//!   games in total (default 1, BayesElo's virtual draws), spread evenly over the pairs
//!   of players who met across them. A player with 10 wins and no loss against its only
//!   opponent then sits about +530 above it, not at infinity.
//!
//!   The prior is spread, not given to every pair (as BayesElo does), because per-pair
//!   virtual draws compress a training ladder: every checkpoint there beats the first
//!   checkpoint and the uniform baseline 10–0, and each of those pairs' virtual draw pulls
//!   the checkpoint towards them with a force that does not fade with distance. On a
//!   simulated ladder (checkpoints rising 60 Elo apart, 10 games per pairing) per-pair
//!   draws fitted a fifth of the true rise; spread they fit it (test
//!   `a_rising_ladder_is_not_compressed` in `tests/it/ratings.rs`). With the prior set to 0,
//!   ratings are clamped to ±[`EloOptions::max_abs_elo`]; with a prior they are not
//!   bounded (a long ladder rises past +2000).
//! - **Disconnected players.** Players are split into connected components of the "has
//!   played" graph. The anchor's component is anchored at the anchor; every other
//!   component is anchored at its first player (in table order) and its rows are marked
//!   `connected = false`: their ratings are only comparable with each other. A player
//!   with no game at all is alone in a component, rated 0 and marked unconnected.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::RatingsError;
use crate::results::{GameRecord, write_atomic};

const LN10_OVER_400: f64 = std::f64::consts::LN_10 / 400.0;

/// Bound on |rating| when the prior keeps the fit finite: far above any real ladder, it
/// only keeps a Newton step from overflowing.
const NUMERIC_BOUND_ELO: f64 = 100_000.0;

/// Settings of the rating fit (`[elo]` of a match config).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EloOptions {
    /// The player rated 0. `None`: the first player in table order.
    pub anchor: Option<String>,
    /// Virtual draws joining two groups of players where one scored every point against
    /// the other, spread over the pairs who met across them (see the module docs).
    pub prior_draws: f64,
    /// Bound on |rating| with `prior_draws = 0`, where perfect scores would diverge
    /// (with a prior the fit is finite and unbounded).
    pub max_abs_elo: f64,
}

impl Default for EloOptions {
    fn default() -> EloOptions {
        EloOptions { anchor: None, prior_draws: 1.0, max_abs_elo: 2000.0 }
    }
}

/// One player's line of the table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatingRow {
    /// Player name.
    pub name: String,
    /// Rating relative to the anchor of its component.
    pub elo: f64,
    /// Lower end of the 95% confidence interval.
    pub lo: f64,
    /// Upper end of the 95% confidence interval.
    pub hi: f64,
    /// Games played.
    pub games: u64,
    /// Wins.
    pub wins: u64,
    /// Draws.
    pub draws: u64,
    /// Losses.
    pub losses: u64,
    /// Points / games (0 with no game).
    pub score: f64,
    /// Games as white.
    pub white_games: u64,
    /// Points scored as white / games as white.
    pub white_score: f64,
    /// Games as black.
    pub black_games: u64,
    /// Points scored as black / games as black.
    pub black_score: f64,
    /// Whether the player is connected (through games) to the anchor.
    pub connected: bool,
}

/// Ratings of every player, sorted by rating (connected players first).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatingsTable {
    /// The player rated 0.
    pub anchor: String,
    /// Number of games used.
    pub total_games: u64,
    /// One row per player.
    pub rows: Vec<RatingRow>,
}

/// The result of [`fit_elo`].
#[derive(Clone, Debug, PartialEq)]
pub struct EloFit {
    /// Rating of each player (index as given).
    pub elo: Vec<f64>,
    /// Standard error of each rating, in Elo (0 for anchors).
    pub stderr: Vec<f64>,
    /// Connected component of each player (the anchor's component is 0).
    pub component: Vec<usize>,
}

/// Fits ratings for `n` players from `games` given as `(a, b, score of a)` with scores in
/// [0, 1]. `anchor` is rated 0. See the module docs for the model and edge cases.
pub fn fit_elo(n: usize, games: &[(usize, usize, f64)], anchor: usize, opts: &EloOptions) -> EloFit {
    // Pair statistics.
    let mut games_between = vec![vec![0.0f64; n]; n];
    let mut points = vec![vec![0.0f64; n]; n];
    for &(a, b, s) in games {
        if a >= n || b >= n || a == b {
            continue;
        }
        let s = s.clamp(0.0, 1.0);
        games_between[a][b] += 1.0;
        games_between[b][a] += 1.0;
        points[a][b] += s;
        points[b][a] += 1.0 - s;
    }
    add_prior(&mut games_between, &mut points, opts.prior_draws);
    // Components, the anchor's first.
    let mut component = vec![usize::MAX; n];
    let mut comps: Vec<Vec<usize>> = Vec::new();
    let order: Vec<usize> = std::iter::once(anchor).filter(|&a| a < n).chain((0..n).filter(|&i| i != anchor)).collect();
    for &root in &order {
        if component[root] != usize::MAX {
            continue;
        }
        let c = comps.len();
        let mut members = vec![root];
        component[root] = c;
        let mut k = 0;
        while k < members.len() {
            let i = members[k];
            for j in 0..n {
                if games_between[i][j] > 0.0 && component[j] == usize::MAX {
                    component[j] = c;
                    members.push(j);
                }
            }
            k += 1;
        }
        comps.push(members);
    }
    let mut theta = vec![0.0f64; n];
    let mut stderr = vec![0.0f64; n];
    // With the prior every rating is finite, and a long ladder can rise well past any
    // fixed bound (a 2-hour 5x5 run passed +2000 over its first checkpoint): the bound
    // then only guards the arithmetic. Without it perfect scores diverge, so it binds.
    let cap = if opts.prior_draws > 0.0 { NUMERIC_BOUND_ELO } else { opts.max_abs_elo } * LN10_OVER_400;
    for members in &comps {
        // members[0] is the component's anchor.
        let free: Vec<usize> = members[1..].to_vec();
        let m = free.len();
        if m == 0 {
            continue;
        }
        let loglik = |th: &[f64]| {
            let mut ll = 0.0;
            for &i in members {
                for &j in members {
                    let w = points[i][j];
                    if w > 0.0 {
                        ll += w * log_sigmoid(th[i] - th[j]);
                    }
                }
            }
            ll
        };
        let mut info = vec![vec![0.0; m]; m];
        for _iter in 0..200 {
            let mut grad = vec![0.0; m];
            info = vec![vec![0.0; m]; m];
            for (a, &i) in free.iter().enumerate() {
                for &j in members {
                    let nij = games_between[i][j];
                    if nij == 0.0 {
                        continue;
                    }
                    let p = sigmoid(theta[i] - theta[j]);
                    grad[a] += points[i][j] - nij * p;
                    let h = nij * p * (1.0 - p);
                    info[a][a] += h;
                    if let Some(b) = free.iter().position(|&f| f == j) {
                        info[a][b] -= h;
                    }
                }
            }
            let Some(step) = solve(&info, &grad) else { break };
            let ll0 = loglik(&theta);
            let mut t = 1.0;
            let mut improved = false;
            for _ in 0..40 {
                let mut cand = theta.clone();
                for (a, &i) in free.iter().enumerate() {
                    cand[i] = (theta[i] + t * step[a]).clamp(-cap, cap);
                }
                if loglik(&cand) >= ll0 - 1e-12 {
                    theta = cand;
                    improved = true;
                    break;
                }
                t /= 2.0;
            }
            let max_step = step.iter().fold(0.0f64, |acc, s| acc.max((t * s).abs()));
            if !improved || max_step < 1e-10 {
                break;
            }
        }
        if let Some(cov) = invert(&info) {
            for (a, &i) in free.iter().enumerate() {
                stderr[i] = cov[a][a].max(0.0).sqrt() / LN10_OVER_400;
            }
        } else {
            for &i in &free {
                stderr[i] = f64::INFINITY;
            }
        }
    }
    EloFit { elo: theta.iter().map(|t| t / LN10_OVER_400).collect(), stderr, component }
}

/// Adds the prior's virtual draws (module docs): `prior` in total between each two groups
/// of players (strongly connected components of the "took points from" graph) that met,
/// spread evenly over the pairs who met across them.
fn add_prior(games_between: &mut [Vec<f64>], points: &mut [Vec<f64>], prior: f64) {
    let n = points.len();
    if prior <= 0.0 {
        return;
    }
    // reach[i][j]: a chain of "i took points from k" leads from i to j (transitive closure).
    let mut reach: Vec<Vec<bool>> = (0..n).map(|i| (0..n).map(|j| i == j || points[i][j] > 0.0).collect()).collect();
    for k in 0..n {
        let via_k = reach[k].clone();
        for row in reach.iter_mut().filter(|row| row[k]) {
            for (r, &kj) in row.iter_mut().zip(&via_k) {
                *r |= kj;
            }
        }
    }
    // Group of each player: the smallest index it reaches both ways.
    let group: Vec<usize> = (0..n).map(|i| (0..n).find(|&j| reach[i][j] && reach[j][i]).unwrap_or(i)).collect();
    let mut crossing: std::collections::BTreeMap<(usize, usize), Vec<(usize, usize)>> = Default::default();
    for i in 0..n {
        for j in i + 1..n {
            if games_between[i][j] > 0.0 && group[i] != group[j] {
                crossing.entry((group[i].min(group[j]), group[i].max(group[j]))).or_default().push((i, j));
            }
        }
    }
    for pairs in crossing.values() {
        let w = prior / pairs.len() as f64;
        for &(i, j) in pairs {
            games_between[i][j] += w;
            games_between[j][i] += w;
            points[i][j] += w / 2.0;
            points[j][i] += w / 2.0;
        }
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn log_sigmoid(x: f64) -> f64 {
    if x >= 0.0 { -(-x).exp().ln_1p() } else { x - x.exp().ln_1p() }
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting; `None` if singular.
fn solve(a: &[Vec<f64>], b: &[f64]) -> Option<Vec<f64>> {
    let n = b.len();
    let mut m: Vec<Vec<f64>> = a.iter().zip(b).map(|(row, &bi)| row.iter().copied().chain([bi]).collect()).collect();
    for col in 0..n {
        let piv = (col..n).max_by(|&x, &y| m[x][col].abs().total_cmp(&m[y][col].abs()))?;
        if m[piv][col].abs() < 1e-300 {
            return None;
        }
        m.swap(col, piv);
        for r in 0..n {
            if r != col {
                let f = m[r][col] / m[col][col];
                if f != 0.0 {
                    let pivot_row = m[col].clone();
                    for (x, p) in m[r][col..].iter_mut().zip(&pivot_row[col..]) {
                        *x -= f * p;
                    }
                }
            }
        }
    }
    Some((0..n).map(|i| m[i][n] / m[i][i]).collect())
}

fn invert(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let mut cols = Vec::with_capacity(n);
    for k in 0..n {
        let e: Vec<f64> = (0..n).map(|i| if i == k { 1.0 } else { 0.0 }).collect();
        cols.push(solve(a, &e)?);
    }
    Some((0..n).map(|i| (0..n).map(|j| cols[j][i]).collect()).collect())
}

impl RatingsTable {
    /// Rates every player that appears in `records`, plus any in `extra_players` (which
    /// also fixes their order before the others). The anchor is `opts.anchor` if that
    /// player is known, else the first player.
    pub fn from_records(records: &[GameRecord], extra_players: &[String], opts: &EloOptions) -> RatingsTable {
        let mut names: Vec<String> = Vec::new();
        for name in extra_players.iter().chain(records.iter().flat_map(|r| [&r.white, &r.black])) {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        if let Some(pos) = opts.anchor.as_ref().and_then(|a| names.iter().position(|n| n == a)) {
            let a = names.remove(pos);
            names.insert(0, a);
        }
        let idx = |name: &str| names.iter().position(|n| n == name).unwrap_or(0);
        let games: Vec<(usize, usize, f64)> =
            records.iter().map(|r| (idx(&r.white), idx(&r.black), r.white_score)).collect();
        let n = names.len();
        let anchor = 0;
        let fit = fit_elo(n, &games, anchor, opts);
        let mut rows: Vec<RatingRow> = names
            .iter()
            .enumerate()
            .map(|(i, name)| RatingRow {
                name: name.clone(),
                elo: fit.elo[i],
                lo: fit.elo[i] - 1.96 * fit.stderr[i],
                hi: fit.elo[i] + 1.96 * fit.stderr[i],
                games: 0,
                wins: 0,
                draws: 0,
                losses: 0,
                score: 0.0,
                white_games: 0,
                white_score: 0.0,
                black_games: 0,
                black_score: 0.0,
                connected: fit.component[i] == 0,
            })
            .collect();
        for &(w, b, s) in &games {
            if w == b {
                continue;
            }
            for (p, score, white) in [(w, s, true), (b, 1.0 - s, false)] {
                let row = &mut rows[p];
                row.games += 1;
                row.score += score;
                if score > 0.75 {
                    row.wins += 1;
                } else if score < 0.25 {
                    row.losses += 1;
                } else {
                    row.draws += 1;
                }
                if white {
                    row.white_games += 1;
                    row.white_score += score;
                } else {
                    row.black_games += 1;
                    row.black_score += score;
                }
            }
        }
        for row in &mut rows {
            row.score = ratio(row.score, row.games);
            row.white_score = ratio(row.white_score, row.white_games);
            row.black_score = ratio(row.black_score, row.black_games);
        }
        rows.sort_by(|a, b| b.connected.cmp(&a.connected).then(b.elo.total_cmp(&a.elo)));
        RatingsTable { anchor: names.first().cloned().unwrap_or_default(), total_games: games.len() as u64, rows }
    }

    /// The row of `name`.
    pub fn get(&self, name: &str) -> Option<&RatingRow> {
        self.rows.iter().find(|r| r.name == name)
    }

    /// The table as CSV (header line, one row per player).
    pub fn to_csv(&self) -> String {
        let mut s = String::from(
            "name,elo,lo95,hi95,games,wins,draws,losses,score,white_games,white_score,black_games,black_score,connected\n",
        );
        for r in &self.rows {
            let name = if r.name.contains([',', '"', '\n']) {
                format!("\"{}\"", r.name.replace('"', "\"\""))
            } else {
                r.name.clone()
            };
            s.push_str(&format!(
                "{name},{:.1},{:.1},{:.1},{},{},{},{},{:.4},{},{:.4},{},{:.4},{}\n",
                r.elo,
                r.lo,
                r.hi,
                r.games,
                r.wins,
                r.draws,
                r.losses,
                r.score,
                r.white_games,
                r.white_score,
                r.black_games,
                r.black_score,
                r.connected
            ));
        }
        s
    }

    /// Writes the CSV atomically.
    pub fn write_csv(&self, path: &Path) -> Result<(), RatingsError> {
        Ok(write_atomic(path, self.to_csv().as_bytes())?)
    }

    /// Writes the table as pretty JSON atomically, with a `crc32c` field
    /// (`bredon_storage::integrity::to_checked_json`) that `bredon check` verifies.
    pub fn write_json(&self, path: &Path) -> Result<(), RatingsError> {
        let json = bredon_storage::integrity::to_checked_json(self, &[]).map_err(RatingsError::Encode)?;
        Ok(write_atomic(path, &json)?)
    }
}

fn ratio(x: f64, n: u64) -> f64 {
    if n == 0 { 0.0 } else { x / n as f64 }
}

impl fmt::Display for RatingsTable {
    /// A terminal table: rank, name, Elo with its 95% interval, games, W/D/L, score, and
    /// the score as white and as black.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self.rows.iter().map(|r| r.name.chars().count()).max().unwrap_or(4).max(6);
        writeln!(
            f,
            "{:>3}  {:<w$}  {:>7}  {:>17}  {:>6}  {:>14}  {:>6}  {:>12}  {:>12}",
            "#", "player", "elo", "95% ci", "games", "w/d/l", "score", "as white", "as black"
        )?;
        for (i, r) in self.rows.iter().enumerate() {
            let ci = if r.name == self.anchor {
                "anchor".to_string()
            } else if r.hi.is_finite() {
                format!("[{:+.0}, {:+.0}]", r.lo, r.hi)
            } else {
                "-".to_string()
            };
            let mark = if r.connected { "" } else { " *" };
            writeln!(
                f,
                "{:>3}  {:<w$}  {:>+7.1}  {:>17}  {:>6}  {:>14}  {:>5.1}%  {:>5.1}% ({:>3})  {:>5.1}% ({:>3}){mark}",
                i + 1,
                r.name,
                r.elo,
                ci,
                r.games,
                format!("{}/{}/{}", r.wins, r.draws, r.losses),
                100.0 * r.score,
                100.0 * r.white_score,
                r.white_games,
                100.0 * r.black_score,
                r.black_games,
            )?;
        }
        writeln!(f, "anchor: {} = 0; {} games", self.anchor, self.total_games)?;
        if self.rows.iter().any(|r| !r.connected) {
            writeln!(f, "* not connected to the anchor by games: rating relative to its own group")?;
        }
        Ok(())
    }
}
