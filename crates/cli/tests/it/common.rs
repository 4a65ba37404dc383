//! Helpers shared by the `bredon` binary's integration tests.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// The `bredon` binary under test.
pub fn bredon() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bredon"))
}

/// Headless Chromium, its WebDriver and Python's selenium, for the browser tests.
pub struct Chromium {
    /// The browser.
    pub browser: PathBuf,
    /// Its WebDriver.
    pub driver: PathBuf,
}

impl Chromium {
    /// The browser tools, or `None` after saying loudly which is missing (outside CI; in
    /// CI a missing tool fails `test`).
    pub fn find(test: &str) -> Option<Chromium> {
        use bredon_rules::testdata::skip_or_fail;
        let Some(browser) = which(&["chromium", "chromium-browser"]) else {
            skip_or_fail(test, "chromium", "apt-get install chromium chromium-driver");
            return None;
        };
        let Some(driver) = which(&["chromedriver"]) else {
            skip_or_fail(test, "chromedriver", "apt-get install chromium-driver");
            return None;
        };
        let selenium = Command::new("python3").args(["-c", "import selenium"]).status();
        if !selenium.is_ok_and(|s| s.success()) {
            skip_or_fail(test, "Python selenium", "python3 -m pip install selenium");
            return None;
        }
        Some(Chromium { browser, driver })
    }

    /// `python3 SCRIPT` with the tools in `CHROMIUM` and `CHROMEDRIVER`.
    pub fn python(&self, script: &Path) -> Command {
        let mut cmd = Command::new("python3");
        cmd.arg(script).env("CHROMIUM", &self.browser).env("CHROMEDRIVER", &self.driver);
        cmd
    }
}

/// The first of `names` found on `PATH`.
pub fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n))).find(|p| p.is_file())
}

/// A file of the repository (`configs/3x3.toml`).
pub fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

/// The tests' training config: `configs/3x3.toml` made tiny (a 1-block, 16-channel
/// network; 12 games of 16 visits, 4 at a time, and at most 12 training steps a
/// generation; in-run evaluation off) for `generations` generations. `set` changes any
/// key, `write` writes it.
pub struct TinyConfig {
    table: toml::Table,
}

impl TinyConfig {
    /// The tiny config with `generations` generations.
    pub fn new(generations: u32) -> TinyConfig {
        let text = std::fs::read_to_string(repo_file("configs/3x3.toml")).unwrap();
        TinyConfig { table: toml::from_str(&text).unwrap() }
            .set("net", "blocks", 1)
            .set("net", "channels", 16)
            .set("selfplay", "games_per_generation", 12)
            .set("selfplay", "concurrent_games", 4)
            .set("selfplay", "visits", 16)
            .set("train", "max_steps_per_generation", 12)
            .set("eval", "every", 0)
            .set("schedule", "generations", generations as i64)
    }

    /// Sets `[section] key = value`.
    pub fn set(mut self, section: &str, key: &str, value: impl Into<toml::Value>) -> TinyConfig {
        let table = self.table.entry(section).or_insert_with(|| toml::Value::Table(Default::default()));
        table.as_table_mut().unwrap().insert(key.into(), value.into());
        self
    }

    /// Sets a top-level key (e.g. `stage`, a curriculum's list of stages).
    pub fn top(mut self, key: &str, value: impl Into<toml::Value>) -> TinyConfig {
        self.table.insert(key.into(), value.into());
        self
    }

    /// Writes it to `dir/tiny.toml` and returns that path.
    pub fn write(&self, dir: &Path) -> PathBuf {
        let path = dir.join("tiny.toml");
        std::fs::write(&path, toml::to_string(&self.table).unwrap()).unwrap();
        path
    }
}

/// A finished command's stdout and stderr, as text.
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

pub use bredon_storage::fsutil::files_under;

/// Damages `path` by flipping one bit of its byte at `at` (or its last byte).
pub fn flip_byte(path: &Path, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    let at = at.min(b.len() - 1);
    b[at] ^= 0x20;
    std::fs::write(path, b).unwrap();
}

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
