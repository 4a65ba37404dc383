//! TensorBoard scalars through `tensorboard-rs`, guarded against its known flaws.
//!
//! tensorboard-rs 0.5.9: `add_histogram`/`add_text` are `unimplemented!()` (we never call
//! them: only scalars go through this type); every I/O error panics, in our thread or in its
//! writer thread (we create and probe the directory first, and run every call under
//! `catch_unwind`; after a failure logging is switched off with one warning instead of
//! taking the training run down); two writers in one directory within the same second get
//! the same file name (the name has only seconds and the pid, so we wait for the next
//! second when this process already opened a writer there this second); queued events are
//! lost unless the writer is dropped before exit (we flush after each batch of scalars and
//! [`TbLogger`] drops the writer in `close`/`Drop`, which the training loop reaches on
//! Ctrl-C too).

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};
use tensorboard_rs::summary_writer::SummaryWriter;

static OPENED: Mutex<Option<HashMap<PathBuf, u64>>> = Mutex::new(None);

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Waits until no writer of this process was opened in `dir` during the current second.
fn reserve_second(dir: &Path) {
    let key = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    loop {
        let mut guard = OPENED.lock().unwrap_or_else(|e| e.into_inner());
        let map = guard.get_or_insert_with(HashMap::new);
        let now = now_secs();
        if map.get(&key) != Some(&now) {
            map.insert(key, now);
            return;
        }
        drop(guard);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A scalar logger writing TensorBoard event files into one directory.
pub struct TbLogger {
    writer: Option<SummaryWriter>,
    dir: PathBuf,
}

impl TbLogger {
    /// Opens a logger in `dir` (created if needed). Never panics: if the directory is not
    /// writable a warning is printed and the logger does nothing.
    pub fn open(dir: &Path) -> TbLogger {
        let probe = || -> std::io::Result<()> {
            std::fs::create_dir_all(dir)?;
            let p = dir.join(format!(".probe-{}", std::process::id()));
            std::fs::write(&p, b"")?;
            std::fs::remove_file(&p)
        };
        if let Err(e) = probe() {
            eprintln!("warning: TensorBoard logging off: {} is not writable: {e}", dir.display());
            return TbLogger { writer: None, dir: dir.to_path_buf() };
        }
        reserve_second(dir);
        let writer = catch_unwind(|| SummaryWriter::new(dir)).ok();
        if writer.is_none() {
            eprintln!("warning: TensorBoard logging off: could not open a writer in {}", dir.display());
        }
        TbLogger { writer, dir: dir.to_path_buf() }
    }

    /// Whether events are being written.
    pub fn is_active(&self) -> bool {
        self.writer.is_some()
    }

    /// The log directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Logs scalars at `step` and flushes. Non-finite values are skipped.
    pub fn scalars(&mut self, step: u64, values: &[(&str, f64)]) {
        let Some(w) = self.writer.as_mut() else { return };
        let ok = catch_unwind(AssertUnwindSafe(|| {
            for &(tag, v) in values {
                if v.is_finite() {
                    w.add_scalar(tag, v as f32, step as usize);
                }
            }
            w.flush();
        }));
        if ok.is_err() {
            eprintln!("warning: TensorBoard logging off after a write error in {}", self.dir.display());
            self.drop_writer();
        }
    }

    fn drop_writer(&mut self) {
        if let Some(w) = self.writer.take() {
            // Dropping joins the writer thread, which flushes; it panics if that thread died.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(w)));
        }
    }

    /// Flushes and closes the event file.
    pub fn close(&mut self) {
        self.drop_writer();
    }
}

impl Drop for TbLogger {
    fn drop(&mut self) {
        self.drop_writer();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_loggers_in_one_directory_make_two_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = TbLogger::open(dir.path());
        let mut b = TbLogger::open(dir.path());
        a.scalars(1, &[("x", 1.0)]);
        b.scalars(1, &[("x", 2.0), ("nan", f64::NAN)]);
        a.close();
        b.close();
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(files.len(), 2);
        for f in files {
            assert!(f.metadata().unwrap().len() > 0);
        }
    }

    #[test]
    fn unwritable_directory_disables_logging_without_panic() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"").unwrap();
        let mut l = TbLogger::open(&file.join("tb"));
        assert!(!l.is_active());
        l.scalars(0, &[("x", 1.0)]);
    }
}
