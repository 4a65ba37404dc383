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

/// Whether the tests run in CI: `CI` is set to anything but empty, `0` or `false`
/// (`.ci/run` exports `CI=1`, as most CI services do). In CI a test whose tool or data is
/// missing fails instead of skipping.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

/// For a test that cannot check what it exists for because `what` is missing (a program, a
/// Python package, a data set; `fix` says how to get it). In CI ([`in_ci`]) it panics:
/// there a missing prerequisite is a failure. Elsewhere it writes a `SKIPPED` line
/// straight to the process's stderr, which the test harness does not capture, so it shows
/// in a plain `cargo test`; the test then returns early.
pub fn skip_or_fail(test: &str, what: &str, fix: &str) {
    if in_ci() {
        panic!("{test}: {what} is missing, and CI must run this test ({fix})");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "\n*** SKIPPED {test}: {what} is missing ({fix}); in CI this fails ***\n");
}

/// A file under the shared data directory ([`shared_data_dir`]), if the directory is found
/// and the file exists.
pub fn shared_data_file(rel: &str) -> Option<PathBuf> {
    shared_data_dir().map(|d| d.join(rel)).filter(|p| p.exists())
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
