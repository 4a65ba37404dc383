//! Openings: short move sequences from the empty board that games start from, so that
//! deterministic players do not replay the same game. Each opening is played twice per
//! pairing, once with each player as white.

use std::collections::HashSet;
use std::path::PathBuf;

use bredon_rules::notation::parse_move;
use bredon_rules::{GameOptions, Move, Position};
use rand::SeedableRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::OpeningsError;

/// Where openings come from (`[openings]` of a match config, by `kind`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum OpeningsConfig {
    /// Every game starts from the empty board.
    None,
    /// `count` distinct sequences of `plies` uniformly random legal moves (none of which
    /// ends the game), drawn with `seed`.
    Random {
        /// Plies per opening.
        plies: usize,
        /// Number of distinct openings (fewer if the position has fewer).
        count: usize,
        /// RNG seed.
        seed: u64,
    },
    /// A text file with one opening per line, PTN moves separated by spaces (such as
    /// `shared/data/openings/6s_4ply_balanced_openings.txt`). Empty lines and lines
    /// starting with `#` are skipped.
    File {
        /// The file.
        path: PathBuf,
        /// Use only the first `count` openings (after shuffling, if `shuffle_seed` is set).
        #[serde(default)]
        count: Option<usize>,
        /// Shuffle the openings with this seed before taking `count`.
        #[serde(default)]
        shuffle_seed: Option<u64>,
    },
}

impl Default for OpeningsConfig {
    fn default() -> OpeningsConfig {
        OpeningsConfig::Random { plies: 2, count: 50, seed: 1 }
    }
}

/// An opening: moves from the empty board.
pub type Opening = Vec<Move>;

/// Writes an opening as space-separated PTN moves.
pub fn opening_to_string(opening: &[Move], size: usize) -> String {
    opening.iter().map(|m| m.to_ptn(size)).collect::<Vec<_>>().join(" ")
}

/// Parses one opening line (space-separated PTN moves) and checks every move is legal
/// and does not end the game.
pub fn parse_opening(line: &str, options: GameOptions) -> Result<Opening, OpeningsError> {
    let mut pos = Position::with_options(options)?;
    let mut out = Vec::new();
    for (i, word) in line.split_whitespace().enumerate() {
        let index = i + 1;
        let mv = parse_move(word, options.size).map_err(|source| OpeningsError::BadMove {
            index,
            word: word.to_string(),
            source,
        })?;
        pos.play(mv).map_err(|source| OpeningsError::IllegalMove { index, word: word.to_string(), source })?;
        if pos.result().is_some() {
            return Err(OpeningsError::EndsGame { index, word: word.to_string() });
        }
        out.push(mv);
    }
    Ok(out)
}

/// Produces the openings for a match. `None` gives one empty opening.
pub fn load_openings(config: &OpeningsConfig, options: GameOptions) -> Result<Vec<Opening>, OpeningsError> {
    match config {
        OpeningsConfig::None => Ok(vec![Vec::new()]),
        OpeningsConfig::Random { plies, count, seed } => random_openings(options, *plies, *count, *seed),
        OpeningsConfig::File { path, count, shuffle_seed } => {
            let text =
                std::fs::read_to_string(path).map_err(|source| OpeningsError::Read { path: path.clone(), source })?;
            let mut out = Vec::new();
            for (i, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let opening = parse_opening(line, options).map_err(|e| OpeningsError::BadLine {
                    path: path.clone(),
                    line: i + 1,
                    size: options.size,
                    source: Box::new(e),
                })?;
                out.push(opening);
            }
            if out.is_empty() {
                return Err(OpeningsError::NoOpenings { path: path.clone() });
            }
            if let Some(seed) = shuffle_seed {
                out.shuffle(&mut ChaCha8Rng::seed_from_u64(*seed));
            }
            if let Some(n) = count {
                if *n == 0 {
                    return Err(OpeningsError::ZeroCount);
                }
                out.truncate(*n);
            }
            Ok(out)
        }
    }
}

/// `count` distinct random openings of `plies` legal moves that do not end the game.
pub fn random_openings(
    options: GameOptions,
    plies: usize,
    count: usize,
    seed: u64,
) -> Result<Vec<Opening>, OpeningsError> {
    if count == 0 {
        return Err(OpeningsError::ZeroCount);
    }
    let start = Position::with_options(options)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let attempts = count * 20 + 100;
    for _ in 0..attempts {
        if out.len() == count {
            break;
        }
        let mut pos = start.clone();
        let mut opening = Vec::with_capacity(plies);
        let mut ok = true;
        for _ in 0..plies {
            let moves = pos.legal_moves();
            let Some(&mv) = moves.choose(&mut rng) else {
                ok = false;
                break;
            };
            pos.make(mv);
            if pos.result().is_some() {
                ok = false;
                break;
            }
            opening.push(mv);
        }
        if ok && seen.insert(opening.clone()) {
            out.push(opening);
        }
    }
    if out.is_empty() {
        return Err(OpeningsError::NoRandomOpening { plies });
    }
    Ok(out)
}
