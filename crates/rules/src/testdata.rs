//! Locating Bredon's shared reference data (`../shared/data` beside the repository).

use std::path::PathBuf;

/// The `shared/data` directory: `$BREDON_SHARED_DATA` if set, else the first `shared/data`
/// found walking up from this crate's directory (the repository sits beside `shared/`).
pub fn shared_data_dir() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("BREDON_SHARED_DATA") {
        return Some(PathBuf::from(p));
    }
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    loop {
        let candidate = dir.join("shared").join("data");
        if candidate.is_dir() {
            return Some(candidate);
        }
        if !dir.pop() {
            return None;
        }
    }
}

/// One perft reference entry: a start position (TPS, or `None` for the empty board of
/// `size`) and the node counts per depth.
#[derive(Clone, Debug)]
pub struct PerftCase {
    /// Board size.
    pub size: usize,
    /// TPS of the position, `None` for the start position.
    pub tps: Option<String>,
    /// `(depth, nodes)` pairs.
    pub counts: Vec<(u32, u64)>,
}

/// Parses the `perft.txt` format (see the file's header comment).
pub fn parse_perft_file(text: &str) -> Result<Vec<PerftCase>, String> {
    let mut cases: Vec<PerftCase> = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |m: &str| format!("perft.txt line {}: {m}: {line:?}", no + 1);
        let (key, rest) = line.split_once(' ').ok_or_else(|| err("expected `key value`"))?;
        match key {
            "size" => cases.push(PerftCase {
                size: rest.trim().parse().map_err(|_| err("bad size"))?,
                tps: None,
                counts: Vec::new(),
            }),
            "tps" => {
                let case = cases.last_mut().ok_or_else(|| err("tps before size"))?;
                let rest = rest.trim();
                case.tps = (rest != "start").then(|| rest.to_string());
            }
            "perft" => {
                let case = cases.last_mut().ok_or_else(|| err("perft before size"))?;
                let (d, n) = rest.trim().split_once(' ').ok_or_else(|| err("expected depth and nodes"))?;
                case.counts.push((d.parse().map_err(|_| err("bad depth"))?, n.parse().map_err(|_| err("bad count"))?));
            }
            _ => return Err(err("unknown key")),
        }
    }
    Ok(cases)
}
