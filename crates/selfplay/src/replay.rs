//! Self-play game records on disk and the replay window that training samples from.
//!
//! A finished game is stored as two immutable files, written atomically and named after
//! the model that played it, under `games/<model>/`:
//! - `<id>.game`: the record in a compact binary format (postcard, a stable serde
//!   encoding, behind a magic header and a format version, followed by a CRC-32C of
//!   everything before it; version-1 records, without the checksum, are still read);
//! - `<id>.ptn`: the same game as readable PTN.
//!
//! A record keeps the moves and, per ply, the search's visit counts; positions are rebuilt
//! by replaying the moves, so a 4x4 game of 30 plies takes well under a kilobyte.

use bredon_rules::{Color, GameOptions, GameResult, Move, Position};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::error::RecordError;
use crate::error::{IoContext, Result};
use crate::fsutil::{TMP_SUFFIX, atomic_write};
use bredon_storage::integrity::{Verified, append_crc, split_crc};

/// First bytes of every `.game` file.
pub const MAGIC: &[u8; 8] = b"BREDONG1";
/// Version of the record layout below (2: version 1 plus a CRC-32C trailer).
pub const FORMAT_VERSION: u32 = 2;

/// How a game ended, as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoredResult {
    /// A real result: winner (0 white, 1 black, 2 draw) and PTN string kind.
    Finished {
        /// 0 = white won, 1 = black won, 2 = draw.
        outcome: u8,
        /// `R`, `F`, `1` (other) or `D` (draw).
        kind: char,
    },
    /// Stopped at the ply cap and adjudicated by the flat count (with komi).
    Adjudicated {
        /// 0 = white, 1 = black, 2 = draw.
        outcome: u8,
    },
}

impl StoredResult {
    /// A game that ended by the rules (or by resignation) with `r`.
    pub fn finished(r: GameResult) -> StoredResult {
        let kind = match r {
            GameResult::Draw => 'D',
            GameResult::Win { kind: bredon_rules::WinKind::Road, .. } => 'R',
            GameResult::Win { kind: bredon_rules::WinKind::Flat, .. } => 'F',
            GameResult::Win { .. } => '1',
        };
        StoredResult::Finished { outcome: Self::outcome_code(r), kind }
    }

    /// A game stopped at the ply limit and scored `r` (by the flat count).
    pub fn adjudicated(r: GameResult) -> StoredResult {
        StoredResult::Adjudicated { outcome: Self::outcome_code(r) }
    }

    /// The winner as stored: 0 white, 1 black, 2 draw.
    fn outcome_code(r: GameResult) -> u8 {
        match r.winner() {
            Some(Color::White) => 0,
            Some(Color::Black) => 1,
            None => 2,
        }
    }

    /// The value target for `color`: +1 win, -1 loss, 0 draw.
    pub fn value_for(self, color: Color) -> f32 {
        let outcome = match self {
            StoredResult::Finished { outcome, .. } | StoredResult::Adjudicated { outcome } => outcome,
        };
        match outcome {
            2 => 0.0,
            o if o as usize == color.index() => 1.0,
            _ => -1.0,
        }
    }

    /// The rules result (an adjudicated game counts as a flat win or a draw).
    pub fn to_game_result(self) -> GameResult {
        use bredon_rules::WinKind;
        let (outcome, kind) = match self {
            StoredResult::Finished { outcome, kind } => (outcome, kind),
            StoredResult::Adjudicated { outcome } => (outcome, 'F'),
        };
        let kind = match kind {
            'R' => WinKind::Road,
            'F' => WinKind::Flat,
            _ => WinKind::Other,
        };
        match outcome {
            0 => GameResult::Win { color: Color::White, kind },
            1 => GameResult::Win { color: Color::Black, kind },
            _ => GameResult::Draw,
        }
    }

    /// Winner, if any.
    pub fn winner(self) -> Option<Color> {
        let outcome = match self {
            StoredResult::Finished { outcome, .. } | StoredResult::Adjudicated { outcome } => outcome,
        };
        (outcome < 2).then(|| Color::from_index(outcome as usize))
    }
}

/// One ply of a record: the move played and the search statistics behind it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlyRecord {
    /// The move played (`Move.0`).
    pub mv: u16,
    /// Root visit counts per move (`Move.0`, visits), or with Gumbel search the improved
    /// policy in millionths: the policy target once normalised. Empty if the ply is not a
    /// training sample (e.g. a cheap search under playout-cap randomisation).
    pub visits: Vec<(u16, u32)>,
    /// The search's root value for the side to move.
    pub root_value: f32,
}

impl PlyRecord {
    /// Whether the ply is a training sample: it has visit counts, not all zero.
    pub fn is_sample(&self) -> bool {
        self.visits.iter().any(|&(_, v)| v > 0)
    }
}

/// A finished self-play game.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GameRecord {
    /// Board size.
    pub size: u8,
    /// Komi in half points.
    pub half_komi: i8,
    /// Name of the model that played (e.g. `gen-0003`).
    pub model: String,
    /// Every ply in order.
    pub plies: Vec<PlyRecord>,
    /// The outcome.
    pub result: StoredResult,
}

/// A normalised visit distribution, shared between the samples that use it.
pub type SharedPolicy = Arc<[(Move, f32)]>;

/// One training sample: a position, its policy target, its value target and the targets
/// of the auxiliary heads (all derived from the record by replaying it). Policies and the
/// final ownership are shared (`Arc`) between the samples of a game, so the auxiliary
/// targets cost the replay window almost no memory.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The position before the move.
    pub position: Position,
    /// Normalised visit distribution over moves.
    pub policy: SharedPolicy,
    /// Game outcome for the side to move (+1, 0, -1).
    pub value: f32,
    /// The search's value of the position for the side to move (the record's root value).
    pub search_value: f32,
    /// Flat margin of the last position of the game (finished, adjudicated or resigned)
    /// for the side to move, komi included, divided by N².
    pub flat_margin: f32,
    /// Owner of each square's top piece in the last position of the game (`row * N +
    /// col`) from **white's** view: +1 white, −1 black, 0 empty (one copy per game; see
    /// [`Sample::ownership_for_mover`]).
    pub final_ownership: Arc<[i8]>,
    /// The next ply's policy target (the opponent's reply), if the game went on and that
    /// ply is a training sample.
    pub opponent_policy: Option<SharedPolicy>,
}

impl Sample {
    /// The final ownership from the side to move's view: +1 its top piece, −1 the
    /// opponent's, 0 empty.
    pub fn ownership_for_mover(&self) -> Vec<i8> {
        let sign = if self.position.side_to_move() == Color::White { 1 } else { -1 };
        self.final_ownership.iter().map(|&o| o * sign).collect()
    }
}

impl GameRecord {
    /// Game options of the record.
    pub fn options(&self) -> GameOptions {
        GameOptions::new(self.size as usize).with_half_komi(self.half_komi)
    }

    /// Number of training samples (plies with visit counts, not all zero), the length of
    /// [`GameRecord::samples`].
    pub fn sample_count(&self) -> usize {
        self.plies.iter().filter(|p| p.is_sample()).count()
    }

    /// Replays the game and returns its training samples.
    pub fn samples(&self) -> Result<Vec<Sample>, RecordError> {
        let mut pos =
            Position::with_options(self.options()).map_err(|source| RecordError::IllegalMove { ply: 0, source })?;
        let policies: Vec<Option<SharedPolicy>> = self
            .plies
            .iter()
            .map(|ply| {
                // Summed wide: a record's counts are not trusted to fit a u32 together.
                let total: u64 = ply.visits.iter().map(|&(_, v)| u64::from(v)).sum();
                ply.is_sample().then(|| ply.visits.iter().map(|&(m, v)| (Move(m), v as f32 / total as f32)).collect())
            })
            .collect();
        let mut out = Vec::with_capacity(self.plies.len());
        let unknown: Arc<[i8]> = Arc::from(Vec::new());
        for (i, ply) in self.plies.iter().enumerate() {
            if let Some(policy) = &policies[i] {
                // Every policy move must be legal where it was searched: training indexes
                // the policy by move, and a move of another board size is out of range.
                if let Some(&(mv, _)) = policy.iter().find(|&&(mv, _)| !pos.is_legal(mv)) {
                    return Err(RecordError::IllegalPolicyMove { ply: i + 1, mv: mv.0 });
                }
                out.push(Sample {
                    position: pos.clone(),
                    policy: policy.clone(),
                    value: self.result.value_for(pos.side_to_move()),
                    search_value: ply.root_value,
                    flat_margin: 0.0,
                    final_ownership: unknown.clone(),
                    opponent_policy: policies.get(i + 1).cloned().flatten(),
                });
            }
            pos.play(Move(ply.mv)).map_err(|source| RecordError::IllegalMove { ply: i + 1, source })?;
        }
        // The last position reached: the end of the game, or where it was adjudicated or
        // resigned.
        let (white_own, white_margin) = final_ownership(&pos);
        let white_own: Arc<[i8]> = Arc::from(white_own);
        for s in &mut out {
            let sign = if s.position.side_to_move() == Color::White { 1.0 } else { -1.0 };
            s.final_ownership = white_own.clone();
            s.flat_margin = white_margin * sign;
        }
        Ok(out)
    }

    /// Encodes the record with its header and checksum.
    pub fn to_bytes(&self) -> Result<Vec<u8>, RecordError> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend(postcard::to_allocvec(self).map_err(RecordError::Encode)?);
        append_crc(&mut out);
        Ok(out)
    }

    /// Decodes a record, checking the header and the checksum.
    pub fn from_bytes(bytes: &[u8]) -> Result<GameRecord, RecordError> {
        Ok(GameRecord::from_bytes_verified(bytes)?.0)
    }

    /// Decodes a record and says whether it carried a checksum (version 1 did not). The
    /// record's fields are checked to be in range; [`GameRecord::samples`] checks that
    /// the moves are legal.
    pub fn from_bytes_verified(bytes: &[u8]) -> Result<(GameRecord, Verified), RecordError> {
        if bytes.len() < 12 || &bytes[..8] != MAGIC {
            return Err(RecordError::BadMagic);
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        let (body, verified) = match version {
            1 => (&bytes[12..], Verified::NoChecksum),
            FORMAT_VERSION => {
                // What the checksum covers may be shorter than the header (a 12- to 15-byte
                // file; only a fuzz build, which skips the checksum, reaches it).
                let body = split_crc(bytes)?;
                let Some(body) = body.get(12..) else { return Err(RecordError::Truncated { len: bytes.len() }) };
                (body, Verified::Ok)
            }
            _ => return Err(RecordError::UnknownFormat { found: version, latest: FORMAT_VERSION }),
        };
        let record: GameRecord = postcard::from_bytes(body).map_err(RecordError::Undecodable)?;
        if !(3..=8).contains(&record.size) {
            return Err(RecordError::OutOfRange(format!("board size {}", record.size)));
        }
        let outcome = match record.result {
            StoredResult::Finished { outcome, .. } | StoredResult::Adjudicated { outcome } => outcome,
        };
        if outcome > 2 {
            return Err(RecordError::OutOfRange(format!("outcome {outcome}")));
        }
        if record.plies.iter().any(|p| !p.root_value.is_finite()) {
            return Err(RecordError::OutOfRange("a non-finite root value".into()));
        }
        Ok((record, verified))
    }

    /// Reads and checks a `.game` file, replaying it: the record and its training
    /// samples. Errors name the file.
    pub fn load(path: &Path) -> Result<(GameRecord, Vec<Sample>, Verified), RecordError> {
        let bytes = std::fs::read(path).map_err(|source| RecordError::Read { path: path.into(), source })?;
        let in_file = |e| RecordError::In { path: path.into(), source: Box::new(e) };
        let (record, verified) = GameRecord::from_bytes_verified(&bytes).map_err(in_file)?;
        let samples = record.samples().map_err(in_file)?;
        Ok((record, samples, verified))
    }

    /// The game as PTN text with tags.
    pub fn to_ptn(&self) -> String {
        let n = self.size as usize;
        let result = self.result.to_game_result().ptn();
        let komi = self.half_komi as f32 / 2.0;
        let mut s = format!(
            "[Site \"bredon self-play\"]\n[Player1 \"{m}\"]\n[Player2 \"{m}\"]\n[Size \"{n}\"]\n[Komi \"{komi}\"]\n[Result \"{result}\"]\n",
            m = self.model
        );
        if matches!(self.result, StoredResult::Adjudicated { .. }) {
            s.push_str("[Termination \"ply cap, adjudicated by flat count\"]\n");
        }
        s.push('\n');
        for (i, ply) in self.plies.iter().enumerate() {
            if i % 2 == 0 {
                s.push_str(&format!("{}. ", i / 2 + 1));
            }
            s.push_str(&Move(ply.mv).to_ptn(n));
            s.push(if i % 2 == 1 { '\n' } else { ' ' });
        }
        s.push_str(result);
        s.push('\n');
        s
    }
}

/// Top-piece owner of every square from white's view (+1 white, −1 black, 0 empty) and
/// white's flat margin (komi included) divided by N².
pub fn final_ownership(pos: &Position) -> (Vec<i8>, f32) {
    let n = pos.size();
    let own = (0..n * n)
        .map(|sq| match pos.top(bredon_rules::Square(sq as u8)) {
            Some(p) if p.color == Color::White => 1,
            Some(_) => -1,
            None => 0,
        })
        .collect();
    let (w, b) = pos.flat_counts();
    let margin = w as f32 - b as f32 - pos.half_komi() as f32 / 2.0;
    (own, margin / (n * n) as f32)
}

/// Writes a record (`.ptn` then `.game`) as `<dir>/<id>`, `dir` being the directory of the
/// generation the game belongs to (`RunDir::generation_games_dir`). The `.game` file is
/// the one that counts; it is written last so a record is never seen half-done. The
/// record's `model` is the network that played it: that generation's checkpoint, unless
/// gating kept an older one.
pub fn store_game(dir: &Path, record: &GameRecord, id: &str) -> Result<PathBuf> {
    atomic_write(&dir.join(format!("{id}.ptn")), record.to_ptn().as_bytes())?;
    let path = dir.join(format!("{id}.game"));
    atomic_write(&path, &record.to_bytes()?)?;
    Ok(path)
}

/// All `.game` files under `games_dir`, sorted by model directory then file name.
pub fn list_game_files(games_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let Ok(models) = std::fs::read_dir(games_dir) else { return Ok(files) };
    let mut model_dirs: Vec<PathBuf> = models.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    model_dirs.sort();
    for d in model_dirs {
        let mut fs: Vec<PathBuf> = std::fs::read_dir(&d)
            .io("reading", &d)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "game") && !p.to_string_lossy().ends_with(TMP_SUFFIX))
            .collect();
        fs.sort();
        files.extend(fs);
    }
    Ok(files)
}

/// Number of finished games in a generation's directory `dir`.
pub fn count_games(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "game")).count())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_record() -> GameRecord {
        let mut pos = Position::new(3).unwrap();
        let mut plies = Vec::new();
        while pos.result().is_none() {
            let moves = pos.legal_moves();
            let mv = moves[plies.len() * 7 % moves.len()];
            plies.push(PlyRecord { mv: mv.0, visits: vec![(mv.0, 3), (moves[0].0, 1)], root_value: 0.1 });
            pos.play(mv).unwrap();
        }
        GameRecord {
            size: 3,
            half_komi: 0,
            model: "gen-0000".into(),
            plies,
            result: StoredResult::finished(pos.result().unwrap()),
        }
    }

    #[test]
    fn record_round_trip_and_samples() {
        let r = sample_record();
        let bytes = r.to_bytes().unwrap();
        assert_eq!(GameRecord::from_bytes(&bytes).unwrap(), r);
        assert!(GameRecord::from_bytes(&bytes[..10]).is_err());
        // Every single-bit flip and every truncation is caught by the checksum.
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x08;
            assert!(GameRecord::from_bytes(&b).is_err(), "flip at byte {i} read back");
        }
        for n in 0..bytes.len() {
            assert!(GameRecord::from_bytes(&bytes[..n]).is_err(), "truncation to {n} bytes read back");
        }
        // Version-1 records (no checksum) still read, unverified.
        let mut v1 = bytes[..bytes.len() - 4].to_vec();
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(GameRecord::from_bytes_verified(&v1).unwrap(), (r.clone(), Verified::NoChecksum));
        let samples = r.samples().unwrap();
        assert_eq!(samples.len(), r.plies.len());
        for s in &samples {
            let total: f32 = s.policy.iter().map(|p| p.1).sum();
            assert!((total - 1.0).abs() < 1e-6);
            assert!(s.position.is_legal(s.policy[0].0));
        }
        // Values alternate in sign with the side to move unless the game is drawn.
        if r.result.winner().is_some() {
            assert_eq!(samples[0].value, -samples[1].value);
        }
        // Auxiliary targets: ownership and margin of the final position, from the side
        // to move's view; the opponent policy is the next ply's target.
        let mut last = Position::new(3).unwrap();
        for p in &r.plies {
            last.play(Move(p.mv)).unwrap();
        }
        let (own, margin) = final_ownership(&last);
        for (i, s) in samples.iter().enumerate() {
            let sign = if s.position.side_to_move() == Color::White { 1 } else { -1 };
            assert_eq!(s.ownership_for_mover(), own.iter().map(|&o| o * sign).collect::<Vec<i8>>());
            assert_eq!(s.flat_margin, margin * sign as f32);
            if i + 1 < samples.len() {
                assert_eq!(s.opponent_policy.as_ref(), Some(&samples[i + 1].policy));
            } else {
                assert!(s.opponent_policy.is_none(), "the last ply has no reply");
            }
        }
    }

    /// Hostile records with valid checksums (found by the `game_record` fuzz target): a
    /// policy move that is not legal (here a 6x6 square on 3x3, which indexed past the
    /// policy in training) is refused naming the ply; visit counts whose sum passes
    /// `u32::MAX` (an overflow: a panic in debug builds, probabilities above 1 in release)
    /// give a policy that sums to 1.
    #[test]
    fn hostile_visit_counts_are_refused_or_normalised() {
        let mut r = sample_record();
        let far = Move::place(bredon_rules::Square(35), bredon_rules::PieceKind::Flat);
        r.plies[1].visits.push((far.0, 1));
        let back = GameRecord::from_bytes(&r.to_bytes().unwrap()).unwrap();
        let e = back.samples().unwrap_err();
        assert!(matches!(e, RecordError::IllegalPolicyMove { ply: 2, mv } if mv == far.0), "{e}");
        let mut r = sample_record();
        r.plies[0].visits = vec![(r.plies[0].mv, u32::MAX), (r.plies[0].visits[1].0, u32::MAX)];
        let samples = GameRecord::from_bytes(&r.to_bytes().unwrap()).unwrap().samples().unwrap();
        let total: f32 = samples[0].policy.iter().map(|p| p.1).sum();
        assert!((total - 1.0).abs() < 1e-6, "{total}");
    }

    /// A ply whose visit counts are all zero is no sample, and `sample_count` says so (it
    /// counted it: found by the `game_record` fuzz target).
    #[test]
    fn zero_visit_counts_are_no_sample() {
        let mut r = sample_record();
        let n = r.sample_count();
        r.plies[0].visits = vec![(r.plies[0].mv, 0), (r.plies[0].visits[1].0, 0)];
        assert_eq!(r.sample_count(), n - 1);
        assert_eq!(r.samples().unwrap().len(), n - 1);
    }

    #[test]
    fn auxiliary_targets_of_an_adjudicated_game() {
        // Four plies on 3x3 (white a1, black c3 swapped in the opening, then white b2,
        // black b1), then adjudicated; the second ply has no visits (a fast search).
        let mut p = Position::with_options(GameOptions::new(3).with_half_komi(1)).unwrap();
        let names = ["a1", "c3", "b2", "b1"];
        let mut plies = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let mv = bredon_rules::notation::parse_move(name, 3).unwrap();
            let visits = if i == 1 { vec![] } else { vec![(mv.0, 5)] };
            plies.push(PlyRecord { mv: mv.0, visits, root_value: 0.0 });
            p.play(mv).unwrap();
        }
        let r = GameRecord {
            size: 3,
            half_komi: 1,
            model: "gen-0000".into(),
            plies,
            result: StoredResult::adjudicated(p.flat_result()),
        };
        let samples = r.samples().unwrap();
        assert_eq!(samples.len(), 3);
        // Final board: a1 black (placed by white in the opening), c3 white, b2 white, b1
        // black. White 2 flats, black 2, komi 0.5: white's margin is -0.5 / 9.
        let (own, margin) = final_ownership(&p);
        assert_eq!(own, vec![-1, -1, 0, 0, 1, 0, 0, 0, 1]);
        assert!((margin - (-0.5 / 9.0)).abs() < 1e-6);
        assert_eq!(samples[0].ownership_for_mover(), own);
        assert_eq!(samples[1].position.side_to_move(), Color::White);
        assert_eq!(samples[2].ownership_for_mover(), own.iter().map(|o| -o).collect::<Vec<_>>());
        assert!(Arc::ptr_eq(&samples[0].final_ownership, &samples[2].final_ownership), "one copy per game");
        assert!((samples[2].flat_margin - 0.5 / 9.0).abs() < 1e-6);
        // Ply 1's reply (ply 2) has no visits: no opponent target; ply 3's is ply 4's.
        assert!(samples[0].opponent_policy.is_none());
        assert_eq!(samples[1].opponent_policy.as_ref(), Some(&samples[2].policy));
        assert!(samples[2].opponent_policy.is_none());
    }

    #[test]
    fn stored_games_are_listed_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let r = sample_record();
        let games = dir.path().join("gen-0000");
        store_game(&games, &r, "a").unwrap();
        store_game(&games, &r, "b").unwrap();
        assert_eq!(count_games(&games), 2);
        assert_eq!(list_game_files(dir.path()).unwrap().len(), 2);
        let ptn = std::fs::read_to_string(dir.path().join("gen-0000/a.ptn")).unwrap();
        assert!(ptn.contains("[Size \"3\"]"));
    }
}
