//! Helpers shared by the `bredon` binary's integration tests (each test file has
//! `mod common;` and uses what it needs).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// The `bredon` binary under test.
pub fn bredon() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bredon"))
}

/// A file of the repository (`configs/3x3.toml`).
pub fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

/// `configs/3x3.toml` with `edits` (`(section, key, value)`) and in-run evaluation off
/// unless an edit turns it on, written to `dir/tiny.toml`.
pub fn tiny_config(dir: &Path, edits: &[(&str, &str, toml::Value)]) -> PathBuf {
    let text = std::fs::read_to_string(repo_file("configs/3x3.toml")).unwrap();
    let mut cfg: toml::Table = toml::from_str(&text).unwrap();
    let mut set = |section: &str, key: &str, v: toml::Value| {
        cfg.entry(section).or_insert_with(|| toml::Value::Table(Default::default()));
        cfg[section].as_table_mut().unwrap().insert(key.into(), v);
    };
    set("eval", "every", 0.into());
    for (s, k, v) in edits {
        set(s, k, v.clone());
    }
    let path = dir.join("tiny.toml");
    std::fs::write(&path, toml::to_string(&cfg).unwrap()).unwrap();
    path
}

/// A finished command's stdout and stderr, as text.
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

pub use bredon_storage::fsutil::files_under;

/// Every file under `dir` with its contents, sorted by path.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<_> =
        files_under(dir).into_iter().map(|p| (p.clone(), std::fs::read(&p).unwrap_or_default())).collect();
    out.sort();
    out
}

/// Waits until `cond` holds, failing if `child` exits first or `limit` passes.
pub fn wait_for(child: &mut Child, what: &str, limit: Duration, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("training exited ({status}) before {what}");
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
