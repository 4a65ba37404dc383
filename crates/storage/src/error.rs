//! The storage crate's errors: each names the file or object and what went wrong, and for
//! the faults a user can fix, what to do.

use std::path::PathBuf;

/// An error of the storage crate.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Writing a local file failed; the file keeps its previous contents.
    #[error("writing {} failed{}", path.display(), if *fixable { " (the file keeps its previous contents); free disk space or fix the permissions, then run the same command again to continue" } else { "" })]
    Write {
        /// The file.
        path: PathBuf,
        /// Whether the user can fix it (no space, no permission, read-only file system).
        fixable: bool,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The function that writes a file's contents (e.g. a library saving to a path) failed.
    #[error("writing {} failed (the file keeps its previous contents)", path.display())]
    Produce {
        /// The file.
        path: PathBuf,
        /// What the producer reported.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Reading a local file or listing a directory failed.
    #[error("reading {}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file or object failed its integrity check.
    #[error("{name}: {problem}")]
    Damaged {
        /// The file or object.
        name: String,
        /// What is wrong.
        problem: IntegrityError,
    },
    /// A `--run` location that is neither a path nor a supported URL.
    #[error("bad run location {given:?}: {problem}")]
    BadLocation {
        /// What was given.
        given: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The object store refused or failed a request for good (not a passing fault).
    #[error("{op} {url} failed: {problem}")]
    Remote {
        /// The request (`put`, `get`, `list`, `delete`, `create`).
        op: &'static str,
        /// The object or prefix, as a URL.
        url: String,
        /// What went wrong and what to do.
        problem: String,
    },
    /// The object store did not answer, however often it was asked.
    #[error(
        "{op} {url} failed: the object store did not answer for {secs:.0} s ({attempts} tries): {problem}; \
         check that the server is up and AWS_ENDPOINT_URL is right, then run the same command again"
    )]
    Unavailable {
        /// The request.
        op: &'static str,
        /// The object or prefix, as a URL.
        url: String,
        /// Tries made.
        attempts: u32,
        /// Seconds spent trying.
        secs: f64,
        /// The last error.
        problem: String,
    },
    /// Another process holds the lease (e.g. a second trainer of one run).
    #[error(
        "{url} is held by {holder} until {expires_in_secs:.0} s from now (renewed while it runs); \
         stop that process first, or wait for its lease to lapse if it was killed"
    )]
    LeaseHeld {
        /// The lease object.
        url: String,
        /// Who holds it.
        holder: String,
        /// Seconds until it lapses unless renewed.
        expires_in_secs: f64,
    },
    /// This process's lease was taken over (it was not renewed in time).
    #[error(
        "{url}: this process's lease lapsed and {holder} holds it now; stopping so that two processes never write the run"
    )]
    LeaseLost {
        /// The lease object.
        url: String,
        /// Who holds it now.
        holder: String,
    },
}

/// What is wrong with a file or object's contents. The checks are in `integrity`, which
/// re-exports this type (kept here so that this module needs nothing from that one);
/// checksums are shown as `integrity::crc_hex` writes them, 8 lower-case hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntegrityError {
    /// Shorter than its checksum trailer.
    #[error("too short to hold a checksum ({len} bytes)")]
    TooShort {
        /// Its length.
        len: usize,
    },
    /// The trailer or field does not match the contents.
    #[error("checksum mismatch (stored {stored:08x}, contents {actual:08x}): the file is damaged or truncated")]
    Mismatch {
        /// The stored checksum.
        stored: u32,
        /// The checksum of the contents.
        actual: u32,
    },
    /// The checksum recorded in another file does not match.
    #[error("checksum mismatch (recorded {recorded:08x}, contents {actual:08x}): the file is damaged or was replaced")]
    Recorded {
        /// The recorded checksum.
        recorded: u32,
        /// The checksum of the contents.
        actual: u32,
    },
    /// Not JSON, not an object, a bad checksum field, or fields of the wrong shape.
    #[error("{0}")]
    Json(String),
}

/// The storage crate's result.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// An error and its sources joined by `": "`, as `anyhow`'s `{:#}` writes them: for
/// library crates that store or compare a whole message (forfeit reasons, tests).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        next = cause.source();
    }
    s
}
