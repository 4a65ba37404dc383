//! The results file and game files.
//!
//! **Results file** (`results.jsonl`): one [`GameRecord`] per line, JSON. It is
//! *append-only*: each game is appended as one `write` of a whole line followed by
//! `fsync`, so a kill can at worst leave a torn last line with no newline. Readers skip
//! such a line (a final line without a newline is treated as absent), and the next append
//! first truncates the file back to its last newline. So the file never holds a corrupt
//! record, records already written are never rewritten, and the cost per game stays
//! constant however long the file grows (unlike rewrite-and-rename).
//!
//! **Tables and games**: written with `bredon_storage::fsutil::atomic_write` (temporary
//! file in the same directory, synced, renamed, directory synced), so readers see the old
//! or the new file, never half of one.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use bredon_rules::notation::Ptn;
use bredon_rules::{GameOptions, Move, Position};
use serde::{Deserialize, Serialize};

use crate::error::ResultsError;
use crate::game::{GameOutcome, Termination};

/// One finished game, as stored in the results file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GameRecord {
    /// Identifies the game within its match schedule (`white|black|pair|swap` plus the
    /// match settings' fingerprint): used to skip games already played when a match
    /// is resumed.
    pub key: String,
    /// White's name.
    pub white: String,
    /// Black's name.
    pub black: String,
    /// PTN result (`R-0`, `0-F`, `1/2-1/2`, `1-0`, ...).
    pub result: String,
    /// White's score: 1, 0.5 or 0.
    pub white_score: f64,
    /// Plies played, the opening included.
    pub plies: usize,
    /// How the game ended.
    pub termination: Termination,
    /// Board size.
    pub size: usize,
    /// Komi in half points.
    pub half_komi: i8,
    /// The opening, space-separated PTN moves.
    pub opening: String,
    /// Index of the opening pair within the pairing.
    pub pair: usize,
    /// The PTN file, relative to the output directory.
    pub ptn_file: String,
    /// When the game finished, seconds since the Unix epoch.
    pub finished_unix: u64,
}

impl GameRecord {
    /// Black's score.
    pub fn black_score(&self) -> f64 {
        1.0 - self.white_score
    }
}

/// Writes `contents` to `path` atomically, through `bredon_storage::fsutil::atomic_write`
/// (temp file in the same directory, fsync, rename, directory sync).
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), ResultsError> {
    Ok(bredon_storage::fsutil::atomic_write(path, contents)?)
}

/// Appends one record to a JSONL results file (see the [module docs](self)): repairs a
/// torn last line first, writes the line in one call and syncs.
pub fn append_record(path: &Path, record: &GameRecord) -> Result<(), ResultsError> {
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| ResultsError::CreateDir { path: dir.to_path_buf(), source })?;
    }
    let mut line = serde_json::to_string(record).map_err(ResultsError::Encode)?;
    line.push('\n');
    let r = (|| {
        let mut f = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        let len = f.seek(SeekFrom::End(0))?;
        if len > 0 {
            let good = complete_prefix_len(&mut f, len)?;
            if good != len {
                f.set_len(good)?;
                f.seek(SeekFrom::Start(good))?;
            }
        }
        f.write_all(line.as_bytes())?;
        f.sync_data()
    })();
    r.map_err(|source| ResultsError::Append { path: path.to_path_buf(), source })
}

/// Length of the file up to and including its last newline.
fn complete_prefix_len(f: &mut File, len: u64) -> std::io::Result<u64> {
    let mut end = len;
    let mut buf = vec![0u8; 4096];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let n = (end - start) as usize;
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(&mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// Reads every complete record of a results file (a missing file has none). A torn last
/// line (no newline) is ignored; a complete line that is not a valid record is an error
/// naming the line.
pub fn load_records(path: &Path) -> Result<Vec<GameRecord>, ResultsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(ResultsError::Read { path: path.to_path_buf(), source }),
    };
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    let mut out = Vec::new();
    for (i, line) in complete.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let rec: GameRecord = serde_json::from_str(line).map_err(|source| ResultsError::BadRecord {
            path: path.to_path_buf(),
            line: i + 1,
            source,
        })?;
        out.push(rec);
    }
    Ok(out)
}

/// Today's date as `YYYY.MM.DD` (UTC), the PTN `Date` format.
pub fn ptn_date(unix_secs: u64) -> String {
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = (unix_secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}.{m:02}.{d:02}")
}

/// Seconds since the Unix epoch.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The PTN text of a finished game, with tags `Site`, `Date`, `Player1`, `Player2`,
/// `Size`, `Komi`, `Opening`, `Result` (and `Termination` for forfeits and adjudicated
/// games).
pub fn game_ptn(
    white: &str,
    black: &str,
    options: GameOptions,
    opening: &[Move],
    outcome: &GameOutcome,
    unix_secs: u64,
) -> Result<String, ResultsError> {
    let start = Position::with_options(options)?;
    let mut ptn = Ptn::new(&start);
    ptn.tags.clear();
    ptn.set_tag("Site", "bredon arena");
    ptn.set_tag("Date", &ptn_date(unix_secs));
    ptn.set_tag("Player1", white);
    ptn.set_tag("Player2", black);
    ptn.set_tag("Size", &options.size.to_string());
    let hk = options.half_komi as i32;
    let komi = if hk % 2 == 0 {
        format!("{}", hk / 2)
    } else {
        format!("{}{}.5", if hk < 0 { "-" } else { "" }, (hk / 2).abs())
    };
    ptn.set_tag("Komi", &komi);
    let (stones, caps) = bredon_rules::default_reserves(options.size);
    if options.stones != stones {
        ptn.set_tag("Flats", &options.stones.to_string());
    }
    if options.caps != caps {
        ptn.set_tag("Caps", &options.caps.to_string());
    }
    ptn.set_tag("Opening", &crate::openings::opening_to_string(opening, options.size));
    for &mv in &outcome.moves {
        ptn.push_move(mv);
    }
    ptn.set_result(Some(outcome.result));
    match &outcome.termination {
        Termination::Rules => {}
        Termination::PlyLimit => ptn.set_tag("Termination", "adjudicated at the ply limit"),
        Termination::Forfeit { loser, reason } => ptn.set_tag("Termination", &format!("{loser} forfeits: {reason}")),
    }
    Ok(ptn.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(ptn_date(0), "1970.01.01");
        assert_eq!(ptn_date(951_782_400), "2000.02.29");
        assert_eq!(ptn_date(1_700_000_000), "2023.11.14");
    }
}
