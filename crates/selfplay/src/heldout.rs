//! A network's error on positions it never trained on: the games of real opponents (PTN
//! files), each position judged against what happened in its game. The diagnosis of a
//! run that stopped improving: a loss curve says how well the net fits its own replay
//! window, this says how well it knows games it did not play.
//!
//! Per position, from the side to move's view, against the same targets training uses
//! ([`crate::replay`]): the value against the game's outcome (+1, 0, −1), the flat-margin
//! head against the final flat margin (komi included), and the policy against the move
//! that was played (its probability's negative log and whether it was the network's first
//! choice). The value's bias is also given from White's view (positive: the network
//! thinks White stands better than White did) by side to move, by komi and by the third
//! of the game the position is in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bredon_mcts::Evaluator;
use bredon_rules::notation::Ptn;
use bredon_rules::{Color, GameResult, Move, Position};
use serde::Serialize;

/// Games that cannot make a held-out set.
#[derive(Debug, thiserror::Error)]
pub enum HeldOutError {
    /// A file or directory could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file that is not a PTN game the rules can replay.
    #[error("{}: {detail}", path.display())]
    Ptn {
        /// The file.
        path: PathBuf,
        /// The parser's or the rules' message.
        detail: String,
    },
    /// No game of the size asked for has a result.
    #[error("no {size}x{size} game with a result among the files given")]
    Empty {
        /// The board size.
        size: usize,
    },
}

/// One position of a held-out game and what followed it.
#[derive(Clone, Debug)]
pub struct HeldOutPosition {
    /// The position.
    pub position: Position,
    /// The move played in it.
    pub played: Move,
    /// The game's outcome for the side to move: 1 won, 0 drawn, −1 lost.
    pub outcome: f32,
    /// The final flat margin for the side to move, in flats, komi included.
    pub margin: f32,
    /// Which third of its game the position is in: 0, 1 or 2.
    pub third: usize,
    /// Which game of the set it comes from (0 for the first read).
    pub game: usize,
}

/// The positions of every game of one board size with a result.
#[derive(Clone, Debug)]
pub struct HeldOutSet {
    /// Board size.
    pub size: usize,
    /// Games read.
    pub games: usize,
    /// Files skipped: another board size or no result.
    pub skipped: usize,
    /// Every position that has a move after it.
    pub positions: Vec<HeldOutPosition>,
}

impl HeldOutSet {
    /// The `size`x`size` games with a result among `paths` (PTN files, or directories
    /// searched for `*.ptn`, recursively, in name order). A file that does not parse or
    /// replay is an error naming it; games of other sizes or without a result are counted
    /// as skipped.
    pub fn read(paths: &[PathBuf], size: usize) -> Result<HeldOutSet, HeldOutError> {
        let mut files = Vec::new();
        for path in paths {
            collect_ptn(path, &mut files)?;
        }
        let mut set = HeldOutSet { size, games: 0, skipped: 0, positions: Vec::new() };
        for file in files {
            let text =
                std::fs::read_to_string(&file).map_err(|source| HeldOutError::Read { path: file.clone(), source })?;
            let bad = |detail: String| HeldOutError::Ptn { path: file.clone(), detail };
            let ptn = Ptn::parse(&text).map_err(|e| bad(e.to_string()))?;
            if ptn.size() != size {
                set.skipped += 1;
                continue;
            }
            let replay = ptn.replay().map_err(|e| bad(e.to_string()))?;
            let Some(result) = replay.result().or(ptn.result) else {
                set.skipped += 1;
                continue;
            };
            set.games += 1;
            let last = replay.final_position();
            let (w, b) = last.flat_counts();
            let white_margin = w as f32 - b as f32 - last.half_komi() as f32 / 2.0;
            let plies = replay.moves().len();
            for (ply, (pos, &mv)) in replay.positions().iter().zip(replay.moves()).enumerate() {
                let mover = pos.side_to_move();
                let sign = if mover == Color::White { 1.0 } else { -1.0 };
                set.positions.push(HeldOutPosition {
                    position: pos.clone(),
                    played: mv,
                    outcome: outcome_for(result, mover),
                    margin: white_margin * sign,
                    third: (3 * ply / plies.max(1)).min(2),
                    game: set.games - 1,
                });
            }
        }
        if set.positions.is_empty() {
            return Err(HeldOutError::Empty { size });
        }
        Ok(set)
    }
}

fn collect_ptn(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), HeldOutError> {
    let read = |source| HeldOutError::Read { path: path.to_path_buf(), source };
    if !path.is_dir() {
        std::fs::metadata(path).map_err(read)?;
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(path).map_err(read)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>().map_err(read)?;
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            collect_ptn(&entry, out)?;
        } else if entry.extension().is_some_and(|e| e == "ptn") {
            out.push(entry);
        }
    }
    Ok(())
}

/// 1 if `color` won, −1 if it lost, 0 for a draw.
fn outcome_for(result: GameResult, color: Color) -> f32 {
    match result {
        GameResult::Win { color: winner, .. } if winner == color => 1.0,
        GameResult::Win { .. } => -1.0,
        GameResult::Draw => 0.0,
    }
}

/// A mean and how many values it is over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Mean {
    /// The mean (0 over nothing).
    pub mean: f64,
    /// How many values.
    pub n: usize,
}

impl Mean {
    fn of(sum: f64, n: usize) -> Mean {
        Mean { mean: if n == 0 { 0.0 } else { sum / n as f64 }, n }
    }
}

/// A network's errors on a [`HeldOutSet`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeadErrors {
    /// Positions judged.
    pub positions: usize,
    /// Mean squared error of the value against the outcome (the value head's training loss
    /// without WDL; 1 = always the opposite sign, 0 = perfect).
    pub value_mse: f64,
    /// The value's bias from White's view: mean of (the network's value for White − White's
    /// outcome); positive = the network overrates White.
    pub white_bias: f64,
    /// [`HeadErrors::white_bias`] over the positions with White to move and with Black to move.
    pub white_bias_by_mover: [Mean; 2],
    /// [`HeadErrors::white_bias`] by the game's komi (half points).
    pub white_bias_by_half_komi: BTreeMap<i8, Mean>,
    /// [`HeadErrors::white_bias`] by third of the game (opening, middle, end).
    pub white_bias_by_third: [Mean; 3],
    /// Value mean squared error by third of the game.
    pub value_mse_by_third: [Mean; 3],
    /// Mean of −ln(the policy's probability of the move played).
    pub policy_nll: f64,
    /// Share of positions whose move played was the policy's first choice.
    pub policy_top1: f64,
    /// Mean absolute error of the flat-margin head, in flats (networks with it only).
    pub margin_mae: Option<f64>,
    /// Standard errors of [`HeadErrors::value_mse`], [`HeadErrors::white_bias`] and
    /// [`HeadErrors::policy_nll`], with the games as the unit of sampling (a game's
    /// positions are not independent of each other).
    pub standard_errors: [f64; 3],
    /// Per game: positions and the sums of squared value error, White bias and policy NLL
    /// (for [`paired_difference`]).
    #[serde(skip)]
    pub per_game: Vec<GameSums>,
}

/// One game's share of [`HeadErrors`]: its positions and its sums of squared value error,
/// White bias and policy NLL.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GameSums {
    /// Positions.
    pub n: usize,
    /// Sums of (value error², White bias, policy NLL).
    pub sums: [f64; 3],
}

/// Mean over positions of each of the three sums, and its standard error with games as
/// the unit of sampling (the ratio estimator's: √Σ_g (S_g − m·n_g)² / Σ_g n_g).
fn clustered(games: &[GameSums], what: impl Fn(&GameSums) -> f64) -> (f64, f64) {
    let n: usize = games.iter().map(|g| g.n).sum();
    if n == 0 {
        return (0.0, 0.0);
    }
    let m = games.iter().map(&what).sum::<f64>() / n as f64;
    let var: f64 = games.iter().map(|g| (what(g) - m * g.n as f64).powi(2)).sum();
    (m, var.sqrt() / n as f64)
}

/// `b` − `a` (two networks measured on the same set) in value MSE, White bias and policy
/// NLL, each with its standard error over games: paired, so far smaller than either
/// network's own error.
pub fn paired_difference(a: &HeadErrors, b: &HeadErrors) -> [(f64, f64); 3] {
    assert_eq!(a.per_game.len(), b.per_game.len(), "two networks on the same held-out set");
    let diff: Vec<GameSums> = a
        .per_game
        .iter()
        .zip(&b.per_game)
        .map(|(x, y)| GameSums { n: x.n, sums: [0, 1, 2].map(|i| y.sums[i] - x.sums[i]) })
        .collect();
    [0, 1, 2].map(|i| clustered(&diff, |g| g.sums[i]))
}

/// Positions evaluated per batch.
const BATCH: usize = 256;

/// Evaluates every position of `set` with `evaluator` (a network of `set.size`, or one
/// carried there) and measures its heads against the games.
pub fn measure(evaluator: &dyn Evaluator, set: &HeldOutSet) -> HeadErrors {
    let (mut top1, mut margin_err, mut margin_n) = (0usize, 0.0, 0usize);
    let mut by_mover = [(0.0, 0usize); 2];
    let mut by_komi: BTreeMap<i8, (f64, usize)> = BTreeMap::new();
    let mut by_third = [(0.0, 0usize); 3];
    let mut mse_third = [(0.0, 0usize); 3];
    let mut per_game = vec![GameSums::default(); set.games];
    for chunk in set.positions.chunks(BATCH) {
        let legal: Vec<Vec<Move>> = chunk.iter().map(|p| p.position.legal_moves()).collect();
        let refs: Vec<&Position> = chunk.iter().map(|p| &p.position).collect();
        let legal_refs: Vec<&[Move]> = legal.iter().map(Vec::as_slice).collect();
        let evals = evaluator.evaluate_batch(&refs, &legal_refs);
        for ((p, moves), eval) in chunk.iter().zip(&legal).zip(evals) {
            let v = f64::from(eval.value);
            let err = v - f64::from(p.outcome);
            mse_third[p.third].0 += err * err;
            mse_third[p.third].1 += 1;
            let white = if p.position.side_to_move() == Color::White { 1.0 } else { -1.0 };
            let b = err * white;
            let m = p.position.side_to_move().index();
            by_mover[m].0 += b;
            by_mover[m].1 += 1;
            let k = by_komi.entry(p.position.half_komi()).or_default();
            k.0 += b;
            k.1 += 1;
            by_third[p.third].0 += b;
            by_third[p.third].1 += 1;
            let i = moves.iter().position(|&mv| mv == p.played).expect("the move played is legal");
            let surprise = -f64::from(eval.policy[i].max(1e-9)).ln();
            let g = &mut per_game[p.game];
            g.n += 1;
            g.sums[0] += err * err;
            g.sums[1] += b;
            g.sums[2] += surprise;
            let best = eval.policy.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(j, _)| j);
            top1 += usize::from(best == Some(i));
            if let Some(mg) = eval.margin {
                margin_err += (f64::from(mg) - f64::from(p.margin)).abs();
                margin_n += 1;
            }
        }
    }
    let n = set.positions.len();
    // Each total and its standard error from the games' sums.
    let [(value_mse, se_mse), (white_bias, se_bias), (policy_nll, se_nll)] =
        [0, 1, 2].map(|i| clustered(&per_game, |g| g.sums[i]));
    HeadErrors {
        positions: n,
        value_mse,
        white_bias,
        white_bias_by_mover: by_mover.map(|(s, n)| Mean::of(s, n)),
        white_bias_by_half_komi: by_komi.into_iter().map(|(k, (s, n))| (k, Mean::of(s, n))).collect(),
        white_bias_by_third: by_third.map(|(s, n)| Mean::of(s, n)),
        value_mse_by_third: mse_third.map(|(s, n)| Mean::of(s, n)),
        policy_nll,
        policy_top1: top1 as f64 / n as f64,
        margin_mae: (margin_n > 0).then(|| margin_err / margin_n as f64),
        standard_errors: [se_mse, se_bias, se_nll],
        per_game,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bredon_mcts::{Evaluation, UniformEvaluator};

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    /// Two 3x3 games White wins by road, one 4x4 game and one without a result.
    fn games() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("more")).unwrap();
        write(dir.path(), "a.ptn", "[Size \"3\"]\n[Result \"R-0\"]\n\n1. c3 a1\n2. b1 c2\n3. c1 R-0\n");
        write(&dir.path().join("more"), "b.ptn", "[Size \"3\"]\n[Komi \"1\"]\n\n1. c3 a1\n2. a2 c2\n3. a3 R-0\n");
        write(dir.path(), "c.ptn", "[Size \"4\"]\n[Result \"0-R\"]\n\n1. a1 d4\n");
        write(dir.path(), "d.ptn", "[Size \"3\"]\n\n1. a1 c3\n");
        write(dir.path(), "notes.txt", "not a game");
        dir
    }

    #[test]
    fn a_set_holds_every_position_of_its_sizes_games_with_what_followed() {
        let dir = games();
        let set = HeldOutSet::read(&[dir.path().to_path_buf()], 3).unwrap();
        assert_eq!((set.games, set.skipped, set.positions.len()), (2, 2, 10));
        // White won both: +1 where White moves, −1 where Black does (the first ply is
        // White's move placing Black's flat, still White to move).
        for p in &set.positions {
            let want = if p.position.side_to_move() == Color::White { 1.0 } else { -1.0 };
            assert_eq!(p.outcome, want);
            assert!(p.position.is_legal(p.played));
        }
        // The first game ends with White's road a1 b1 c1 and Black's c3 c2 on the board:
        // 3 − 2 − komi 0 = +1 for White.
        assert_eq!(set.positions[0].margin, 1.0);
        // The second, with komi 1 (game `b`, read from the sub-directory): 3 − 2 − 1 = 0.
        assert_eq!(set.positions[5].margin, 0.0);
        assert_eq!(set.positions[0].third, 0);
        assert_eq!(set.positions[4].third, 2);
        let err = HeldOutSet::read(&[dir.path().to_path_buf()], 6).unwrap_err();
        assert!(err.to_string().contains("no 6x6 game with a result"), "{err}");
        write(dir.path(), "e.ptn", "[Size \"3\"]\n[Result \"R-0\"]\n\n1. a1 a1\n");
        let err = HeldOutSet::read(&[dir.path().to_path_buf()], 3).unwrap_err();
        assert!(err.to_string().contains("e.ptn"), "{err}");
    }

    /// An evaluator that says White wins, puts all its policy on the last legal move and
    /// expects White to win by 2 flats.
    struct WhiteWins;

    impl Evaluator for WhiteWins {
        fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
            positions
                .iter()
                .zip(legal)
                .map(|(p, moves)| {
                    let white = if p.side_to_move() == Color::White { 1.0 } else { -1.0 };
                    let mut policy = vec![0.0; moves.len()];
                    *policy.last_mut().unwrap() = 1.0;
                    Evaluation { margin: Some(2.0 * white), ..Evaluation::new(policy, white) }
                })
                .collect()
        }
    }

    #[test]
    fn the_errors_are_measured_against_the_games() {
        let dir = games();
        let set = HeldOutSet::read(&[dir.path().to_path_buf()], 3).unwrap();
        // White won both games: a network sure of it has no value error and no bias.
        let right = measure(&WhiteWins, &set);
        assert_eq!((right.value_mse, right.white_bias), (0.0, 0.0));
        assert_eq!(right.margin_mae, Some((5.0 * 1.0 + 5.0 * 2.0) / 10.0));
        // The uniform evaluator: value 0 everywhere, so error 1 and a bias of −1 (it
        // underrates White, who won) in every group.
        let uniform = measure(&UniformEvaluator, &set);
        assert_eq!(uniform.value_mse, 1.0);
        assert_eq!(uniform.white_bias, -1.0);
        assert_eq!(uniform.white_bias_by_mover.map(|m| m.n), [6, 4]);
        assert!(uniform.white_bias_by_mover.iter().all(|m| m.mean == -1.0));
        assert_eq!(uniform.white_bias_by_half_komi.keys().copied().collect::<Vec<_>>(), [0, 2]);
        assert_eq!(uniform.margin_mae, None);
        // Its policy is uniform: the move played has probability 1/legal moves.
        let want: f64 = set.positions.iter().map(|p| (p.position.legal_moves().len() as f64).ln()).sum::<f64>() / 10.0;
        assert!((uniform.policy_nll - want).abs() < 1e-6, "{} vs {want}", uniform.policy_nll);
        // The last legal move is rarely the move played.
        assert!(right.policy_top1 < 0.5, "{}", right.policy_top1);
        // Standard errors over the two games: none where every position errs alike.
        assert_eq!(uniform.standard_errors[..2], [0.0, 0.0]);
        // Paired: the sure network is 1 better in value MSE and 1 less biased, exactly.
        let [mse, bias, _] = paired_difference(&uniform, &right);
        assert_eq!((mse, bias), ((-1.0, 0.0), (1.0, 0.0)));
        let [_, _, same] = paired_difference(&uniform, &uniform);
        assert_eq!(same, (0.0, 0.0));
    }

    #[test]
    fn standard_errors_treat_a_game_as_the_unit() {
        // Two games of 2 positions: errors 1, 1 and 0, 0 give a mean of 0.5 and a standard
        // error of √((2 − 1)² + (0 − 1)²) / 4.
        let games = [GameSums { n: 2, sums: [2.0, 0.0, 0.0] }, GameSums { n: 2, sums: [0.0, 0.0, 0.0] }];
        let (m, se) = clustered(&games, |g| g.sums[0]);
        assert_eq!((m, se), (0.5, 2f64.sqrt() / 4.0));
    }
}
