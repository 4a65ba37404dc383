//! Crash-safe file writing: every file that matters is written to a temporary file in
//! the same directory, flushed to disk, then renamed over the target. A reader sees
//! either the old or the new contents, never a half-written file.

use anyhow::{Context, Result};
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

/// Writes `bytes` to `path` atomically (temp file, fsync, rename, fsync the directory).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = tmp_path(path);
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
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
    .with_context(|| format!("writing {}", path.display()))
}

/// Like [`atomic_write`] but the content is produced by `f` writing into a file at a
/// temporary path (for libraries that only save to a path). The temporary path keeps
/// the target's extension so such libraries don't add another one.
pub fn atomic_write_with(path: &Path, f: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp_dir = dir.join(format!(".tmp-{}-{n}", std::process::id()));
    fs::create_dir_all(&tmp_dir)?;
    let tmp = tmp_dir.join(&name);
    let result = f(&tmp).and_then(|()| {
        File::open(&tmp).and_then(|f| f.sync_all()).with_context(|| format!("syncing {}", tmp.display()))?;
        fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
        Ok(())
    });
    let _ = fs::remove_dir_all(&tmp_dir);
    result
}

/// Removes leftovers of interrupted atomic writes in `dir` (not recursive).
pub fn remove_stale_temps(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(TMP_SUFFIX) {
                let _ = fs::remove_file(e.path());
            } else if name.starts_with(".tmp-") {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a").join("x.json");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(p.parent().unwrap()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        atomic_write_with(&dir.path().join("m.bpk"), |t| Ok(fs::write(t, b"model")?)).unwrap();
        assert_eq!(fs::read(dir.path().join("m.bpk")).unwrap(), b"model");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn failed_write_reports_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        fs::write(&blocker, b"").unwrap();
        let err = atomic_write(&blocker.join("sub").join("x"), b"1").unwrap_err();
        assert!(format!("{err:#}").contains("file"), "{err:#}");
    }
}
