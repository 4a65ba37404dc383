//! Openings: short move sequences from the empty board that games start from, so that
//! deterministic players do not replay the same game. Each opening is played twice per
//! pairing, once with each player as white.

use std::collections::HashSet;
use std::path::PathBuf;

use anyhow::{Context, bail};
use bredon_rules::notation::parse_move;
use bredon_rules::{GameOptions, Move, Position};
use rand::SeedableRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Where openings come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
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
pub fn parse_opening(line: &str, options: GameOptions) -> anyhow::Result<Opening> {
    let mut pos = Position::with_options(options)?;
    let mut out = Vec::new();
    for (i, word) in line.split_whitespace().enumerate() {
        let mv = parse_move(word, options.size).with_context(|| format!("move {} {word:?}", i + 1))?;
        pos.play(mv).with_context(|| format!("move {} {word:?} is illegal", i + 1))?;
        if pos.result().is_some() {
            bail!("move {} {word:?} ends the game", i + 1);
        }
        out.push(mv);
    }
    Ok(out)
}

/// Produces the openings for a match. `None` gives one empty opening.
pub fn load_openings(config: &OpeningsConfig, options: GameOptions) -> anyhow::Result<Vec<Opening>> {
    match config {
        OpeningsConfig::None => Ok(vec![Vec::new()]),
        OpeningsConfig::Random { plies, count, seed } => random_openings(options, *plies, *count, *seed),
        OpeningsConfig::File { path, count, shuffle_seed } => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("reading openings file {}", path.display()))?;
            let mut out = Vec::new();
            for (i, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let opening = parse_opening(line, options)
                    .with_context(|| format!("{}:{}: bad opening for size {}", path.display(), i + 1, options.size))?;
                out.push(opening);
            }
            if out.is_empty() {
                bail!("openings file {} has no openings", path.display());
            }
            if let Some(seed) = shuffle_seed {
                out.shuffle(&mut ChaCha8Rng::seed_from_u64(*seed));
            }
            if let Some(n) = count {
                if *n == 0 {
                    bail!("openings count must be at least 1");
                }
                out.truncate(*n);
            }
            Ok(out)
        }
    }
}

/// `count` distinct random openings of `plies` legal moves that do not end the game.
pub fn random_openings(options: GameOptions, plies: usize, count: usize, seed: u64) -> anyhow::Result<Vec<Opening>> {
    if count == 0 {
        bail!("openings count must be at least 1");
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
        bail!("could not draw any random opening of {plies} plies");
    }
    Ok(out)
}
