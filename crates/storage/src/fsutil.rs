//! Crash-safe file writing: every file that matters is written to a temporary file in
//! the same directory, flushed to disk, then renamed over the target. A reader sees
//! either the old or the new contents, never a half-written file.
//!
//! A failed write (disk full, permission denied, read-only file system) is an error naming
//! the file and what to do; the target keeps its old contents, so a run stopped by it
//! resumes with nothing lost. For tests, the environment variable
//! `BREDON_INJECT_WRITE_ERROR=PATTERN:ERRNO` makes every write to a path containing
//! `PATTERN` fail with the OS error `ERRNO` (28 = ENOSPC, 13 = EACCES), after the
//! temporary file is created, as a full disk would.

use crate::error::{Result, StorageError};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The suffix of temporary files; readers skip files that end with it.
pub const TMP_SUFFIX: &str = ".tmp";

/// A temporary path beside `path`, unique within this process and across processes.
fn tmp_path(path: &Path) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.{n}{TMP_SUFFIX}", std::process::id()))
}

/// Whether `name` (a file name) is a temporary file of an atomic write.
pub fn is_temp_name(name: &str) -> bool {
    name.ends_with(TMP_SUFFIX) || name.starts_with(".tmp-")
}

/// The environment variable of the write-error injection (see the module docs).
pub const INJECT_ENV: &str = "BREDON_INJECT_WRITE_ERROR";

/// The injected error for a write to `path`, if `BREDON_INJECT_WRITE_ERROR` asks for one.
fn injected_error(path: &Path) -> std::io::Result<()> {
    #[cfg(test)]
    let spec = tests::INJECT
        .with(|i| i.borrow().clone())
        .map(std::ffi::OsString::from)
        .or_else(|| std::env::var_os(INJECT_ENV));
    #[cfg(not(test))]
    let spec = std::env::var_os(INJECT_ENV);
    let Some(spec) = spec else { return Ok(()) };
    let spec = spec.to_string_lossy();
    let Some((pattern, errno)) = spec.rsplit_once(':') else { return Ok(()) };
    match errno.parse::<i32>() {
        Ok(errno) if !pattern.is_empty() && path.to_string_lossy().contains(pattern) => {
            Err(std::io::Error::from_raw_os_error(errno))
        }
        _ => Ok(()),
    }
}

/// A failed write of `path`, with whether the user can fix it.
fn write_error(path: &Path, source: std::io::Error) -> StorageError {
    use std::io::ErrorKind as K;
    let fixable =
        matches!(source.kind(), K::StorageFull | K::PermissionDenied | K::ReadOnlyFilesystem | K::QuotaExceeded);
    StorageError::Write { path: path.to_path_buf(), fixable, source }
}

/// The directory of `path` ("." for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Writes `bytes` to `path` atomically (temp file, fsync, rename, fsync the directory).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent_dir(path);
    fs::create_dir_all(dir).map_err(|e| write_error(dir, e))?;
    let tmp = tmp_path(path);
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        injected_error(path)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    };
    write()
        .inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })
        .map_err(|e| write_error(path, e))
}

/// Creates `path` with `bytes` only if no file is there (atomically: the contents are
/// written to a temporary file first and linked into place, which fails if the target
/// exists). Returns whether this call created it.
pub fn create_if_absent(path: &Path, bytes: &[u8]) -> Result<bool> {
    let dir = parent_dir(path);
    fs::create_dir_all(dir).map_err(|e| write_error(dir, e))?;
    let tmp = tmp_path(path);
    let write = || -> std::io::Result<bool> {
        let mut f = File::create(&tmp)?;
        injected_error(path)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        match fs::hard_link(&tmp, path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(e),
        }
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(true)
    };
    let result = write();
    let _ = fs::remove_file(&tmp);
    result.map_err(|e| write_error(path, e))
}

/// Like [`atomic_write`] but the content is produced by `f` writing into a file at a
/// temporary path (for libraries that only save to a path). The temporary path keeps
/// the target's extension so such libraries don't add another one.
pub fn atomic_write_with<E>(path: &Path, f: impl FnOnce(&Path) -> std::result::Result<(), E>) -> Result<()>
where
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let dir = parent_dir(path);
    fs::create_dir_all(dir).map_err(|e| write_error(dir, e))?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp_dir = dir.join(format!(".tmp-{}-{n}", std::process::id()));
    fs::create_dir_all(&tmp_dir).map_err(|e| write_error(&tmp_dir, e))?;
    let tmp = tmp_dir.join(&name);
    let result = injected_error(path).map_err(|e| write_error(path, e)).and_then(|()| {
        f(&tmp).map_err(|e| StorageError::Produce { path: path.to_path_buf(), source: e.into() })?;
        File::open(&tmp).and_then(|f| f.sync_all()).map_err(|e| write_error(path, e))?;
        fs::rename(&tmp, path).map_err(|e| write_error(path, e))
    });
    let _ = fs::remove_dir_all(&tmp_dir);
    result
}

/// The pid in a temporary file's name (`.NAME.PID.N.tmp` or `.tmp-PID-N`).
fn temp_owner(name: &str) -> Option<u32> {
    if let Some(rest) = name.strip_prefix(".tmp-") {
        return rest.split('-').next()?.parse().ok();
    }
    let stem = name.strip_suffix(TMP_SUFFIX)?;
    let mut parts = stem.rsplit('.');
    let _n = parts.next()?;
    parts.next()?.parse().ok()
}

/// Whether process `pid` is alive on this machine (Linux: `/proc/PID`; elsewhere assume
/// it is, so nothing in use is removed).
fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let proc = Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

/// Removes leftovers of interrupted atomic writes in `dir` (not recursive): temporary
/// files of processes that no longer run. Those of live processes (a trainer and
/// `bredon selfplay` workers share a run) are left alone.
pub fn remove_stale_temps(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !is_temp_name(&name) || temp_owner(&name).is_some_and(process_alive) {
                continue;
            }
            if name.starts_with(".tmp-") {
                let _ = fs::remove_dir_all(e.path());
            } else {
                let _ = fs::remove_file(e.path());
            }
        }
    }
}

/// Every file under `dir` at any depth, sorted (a missing or unreadable directory has
/// none; for listings that must see everything there is, not for the run's own reads).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// This thread's stand-in for `BREDON_INJECT_WRITE_ERROR` (tests run in parallel
        /// threads; the environment is shared).
        pub(super) static INJECT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
    }

    use crate::error_chain as chain;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a").join("x.json");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(p.parent().unwrap()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        atomic_write_with(&dir.path().join("m.bpk"), |t| fs::write(t, b"model")).unwrap();
        assert_eq!(fs::read(dir.path().join("m.bpk")).unwrap(), b"model");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn create_if_absent_creates_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lease");
        assert!(create_if_absent(&p, b"first").unwrap());
        assert!(!create_if_absent(&p, b"second").unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"first");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "temporaries left behind");
    }

    #[test]
    fn only_temps_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let dead = 999_999_999u32; // above Linux's pid_max
        for name in [format!(".a.game.{me}.3.tmp"), format!(".a.game.{dead}.3.tmp"), "keep.game".into()] {
            fs::write(dir.path().join(name), b"x").unwrap();
        }
        fs::create_dir(dir.path().join(format!(".tmp-{me}-1"))).unwrap();
        fs::create_dir(dir.path().join(format!(".tmp-{dead}-1"))).unwrap();
        remove_stale_temps(dir.path());
        let mut left: Vec<String> =
            fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        left.sort();
        assert_eq!(left, [format!(".a.game.{me}.3.tmp"), format!(".tmp-{me}-1"), "keep.game".to_string()]);
    }

    #[test]
    fn injected_write_errors_are_clear_and_leave_the_old_contents() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state.json");
        atomic_write(&p, b"old").unwrap();
        INJECT.with(|i| *i.borrow_mut() = Some(format!("{}:28", dir.path().display())));
        let e = atomic_write(&p, b"new").unwrap_err();
        let e2 = atomic_write_with(&dir.path().join("m.bpk"), |t| fs::write(t, b"model")).unwrap_err();
        INJECT.with(|i| *i.borrow_mut() = None);
        for e in [e, e2] {
            let msg = chain(&e);
            assert!(msg.contains("No space left on device") && msg.contains("run the same command again"), "{msg}");
        }
        assert_eq!(fs::read(&p).unwrap(), b"old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "temporaries left behind");
    }

    #[test]
    fn failed_write_reports_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        fs::write(&blocker, b"").unwrap();
        let err = atomic_write(&blocker.join("sub").join("x"), b"1").unwrap_err();
        assert!(chain(&err).contains("file"), "{}", chain(&err));
        let err = atomic_write_with(&dir.path().join("y"), |_| Err("the library failed")).unwrap_err();
        assert!(chain(&err).contains("y failed") && chain(&err).contains("the library failed"), "{}", chain(&err));
    }
}
