//! The run's files behind one interface ([`Store`]): atomic put, get, list by prefix,
//! delete, and create-if-absent (for leases), on a local directory or an object store.
//!
//! Keys are relative, `/`-separated (`checkpoints/gen-0003/model.json`). A put is atomic
//! on both backends: a reader gets the old object, the new one, or (for a new key)
//! nothing, never part of one. On the local backend that is [`crate::fsutil`]'s temp
//! file and rename; on an object store a single PUT request is atomic by itself.
//!
//! The object-store backend owns a small tokio runtime and blocks on it, so the rest of
//! Bredon stays synchronous. Passing faults (connection refused, a timeout, a 5xx answer:
//! a server restarting) are retried with exponential backoff (0.1 s doubling to 5 s) for
//! up to [`RetryPolicy::max_secs`] (120 s; `BREDON_STORE_RETRY_SECS` overrides it), then
//! the error says the store did not answer. Refusals (wrong credentials, no such bucket)
//! are not retried: [`Store::open`] asks once and names the cause.

use crate::error::{Result, StorageError};
use crate::fsutil;
use object_store::ObjectStoreExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The version of an object as read, for a conditional replace ([`Store::replace`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version(String);

/// How long passing faults of an object store are retried.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Give up after this many seconds of failed tries (0: one try only).
    pub max_secs: f64,
}

/// The environment variable that overrides [`RetryPolicy::max_secs`].
pub const RETRY_ENV: &str = "BREDON_STORE_RETRY_SECS";

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        let max_secs = std::env::var(RETRY_ENV).ok().and_then(|s| s.parse::<f64>().ok()).filter(|s| *s >= 0.0);
        RetryPolicy { max_secs: max_secs.unwrap_or(120.0) }
    }
}

/// A run's storage: a local directory or a prefix of an object-store bucket.
#[derive(Clone, Debug)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
enum Inner {
    Local { root: PathBuf },
    Remote(Remote),
}

struct Remote {
    runtime: tokio::runtime::Runtime,
    store: Arc<dyn object_store::ObjectStore>,
    bucket: String,
    prefix: String,
    retry: RetryPolicy,
    requests: AtomicU64,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Remote(s3://{}/{})", self.bucket, self.prefix)
    }
}

/// Whether an object-store error is a refusal that asking again will not change.
fn permanent(e: &object_store::Error) -> bool {
    use object_store::Error as E;
    match e {
        E::NotFound { .. } | E::AlreadyExists { .. } | E::Precondition { .. } | E::NotModified { .. } => true,
        E::InvalidPath { .. } | E::NotSupported { .. } | E::NotImplemented { .. } => true,
        _ => {
            let s = error_text(e);
            // Whole words only: a bare "403" would also match a port or a byte count in
            // the error's URL (a server on port 35403 made a missing bucket look refused).
            [
                "403 Forbidden",
                "Forbidden",
                "AccessDenied",
                "SignatureDoesNotMatch",
                "InvalidAccessKeyId",
                "NoSuchBucket",
                "400 Bad",
            ]
            .iter()
            .any(|w| s.contains(w))
        }
    }
}

/// An error and its causes on one line.
fn error_text(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut c = e.source();
    while let Some(x) = c {
        let t = x.to_string();
        if !s.contains(&t) {
            s += &format!(": {t}");
        }
        c = x.source();
    }
    s
}

/// What to say about a refused request.
fn explain(e: &object_store::Error) -> String {
    let s = error_text(e);
    if s.contains("NoSuchBucket") {
        format!("the bucket does not exist: create it first, or fix the URL ({s})")
    } else if ["InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403 Forbidden", "Forbidden"]
        .iter()
        .any(|w| s.contains(w))
    {
        format!(
            "access denied: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_REGION) for this bucket ({s})"
        )
    } else {
        s
    }
}

impl Store {
    /// A store on the local directory `root` (created on the first write).
    pub fn local(root: impl Into<PathBuf>) -> Store {
        Store { inner: Arc::new(Inner::Local { root: root.into() }) }
    }

    /// Opens the store of `location`. An object store is configured from the standard AWS
    /// environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
    /// `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP=true` for a plain-http endpoint) and asked once
    /// for the run's objects, so that wrong credentials or a missing bucket are an error
    /// here, naming the cause.
    pub fn open(location: &crate::location::RunLocation) -> Result<Store> {
        Store::open_with(location, RetryPolicy::default(), None)
    }

    /// [`Store::open`] with a retry policy, and with `settings` (pairs of AWS environment
    /// variable names and values, e.g. `("AWS_ENDPOINT_URL", …)`) instead of the
    /// environment when given.
    pub fn open_with(
        location: &crate::location::RunLocation,
        retry: RetryPolicy,
        settings: Option<&[(&str, String)]>,
    ) -> Result<Store> {
        let (bucket, prefix) = match location {
            crate::location::RunLocation::Local(root) => return Ok(Store::local(root.clone())),
            crate::location::RunLocation::S3 { bucket, prefix } => (bucket.clone(), prefix.clone()),
        };
        let url = location.to_string();
        let config = |problem: String| StorageError::Remote { op: "open", url: url.clone(), problem };
        let var = |name: &str| match settings {
            Some(pairs) => pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()),
            None => std::env::var(name).ok(),
        };
        let mut builder = match settings {
            None => object_store::aws::AmazonS3Builder::from_env(),
            Some(pairs) => {
                let mut b = object_store::aws::AmazonS3Builder::new();
                for (k, v) in pairs {
                    let key: object_store::aws::AmazonS3ConfigKey =
                        k.to_ascii_lowercase().parse().map_err(|e| config(format!("{k}: {e}")))?;
                    b = b.with_config(key, v);
                }
                b
            }
        };
        builder = builder
            .with_bucket_name(&bucket)
            .with_conditional_put(object_store::aws::S3ConditionalPut::ETagMatch)
            // Our own loop retries (below), so that its limit and message are ours.
            .with_retry(object_store::RetryConfig {
                max_retries: 0,
                retry_timeout: Duration::from_secs(30),
                ..Default::default()
            });
        // `AWS_ENDPOINT_URL` names a server of its own: address buckets by path, as
        // S3-compatible servers expect.
        if var("AWS_ENDPOINT_URL").is_some() || var("AWS_ENDPOINT").is_some() {
            builder = builder.with_virtual_hosted_style_request(false);
        }
        if var("AWS_REGION").is_none() && var("AWS_DEFAULT_REGION").is_none() {
            builder = builder.with_region("us-east-1");
        }
        let store =
            builder.build().map_err(|e| config(format!("{} (set the AWS_* environment variables)", error_text(&e))))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| config(format!("starting the I/O runtime: {e}")))?;
        let s = Store {
            inner: Arc::new(Inner::Remote(Remote {
                runtime,
                store: Arc::new(store),
                bucket,
                prefix,
                retry,
                requests: AtomicU64::new(0),
            })),
        };
        s.list("")?;
        Ok(s)
    }

    /// `key` as a path or URL, for messages.
    pub fn describe(&self, key: &str) -> String {
        match &*self.inner {
            Inner::Local { root } => root.join(key).display().to_string(),
            Inner::Remote(r) if r.prefix.is_empty() => format!("s3://{}/{key}", r.bucket),
            Inner::Remote(r) => format!("s3://{}/{}/{key}", r.bucket, r.prefix),
        }
    }

    /// Requests sent to the object store so far (0 for a local store), tries included.
    pub fn requests(&self) -> u64 {
        match &*self.inner {
            Inner::Local { .. } => 0,
            Inner::Remote(r) => r.requests.load(Ordering::Relaxed),
        }
    }

    /// Writes `bytes` under `key`, atomically, replacing what was there.
    pub fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        match &*self.inner {
            Inner::Local { root } => fsutil::atomic_write(&root.join(key), bytes),
            Inner::Remote(r) => {
                let payload = object_store::PutPayload::from(bytes.to_vec());
                r.call(self, "put", key, |s, p| {
                    let payload = payload.clone();
                    async move { s.put_opts(&p, payload, object_store::PutMode::Overwrite.into()).await.map(|_| ()) }
                })
            }
        }
    }

    /// The object under `key`, or `None` if there is none.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.get_versioned(key)?.map(|(b, _)| b))
    }

    /// The object under `key` and its version (for [`Store::replace`]), or `None`.
    pub fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>> {
        match &*self.inner {
            Inner::Local { root } => {
                let p = root.join(key);
                match std::fs::read(&p) {
                    Ok(b) => {
                        let v = Version(crate::integrity::crc_hex(crate::integrity::crc32c(&b)));
                        Ok(Some((b, v)))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) if p.is_dir() => Err(StorageError::Read { path: p, source: e }),
                    Err(e) => Err(StorageError::Read { path: p, source: e }),
                }
            }
            Inner::Remote(r) => {
                let got = r.call(self, "get", key, |s, p| async move {
                    match s.get_opts(&p, Default::default()).await {
                        Ok(g) => {
                            let tag = g.meta.e_tag.clone().unwrap_or_default();
                            let bytes = g.bytes().await?;
                            Ok(Some((bytes.to_vec(), Version(tag))))
                        }
                        Err(object_store::Error::NotFound { .. }) => Ok(None),
                        Err(e) => Err(e),
                    }
                })?;
                Ok(got)
            }
        }
    }

    /// The keys under `prefix` (a key prefix such as `games/gen-0003/`), sorted;
    /// temporary files of unfinished local writes are left out.
    pub fn list(&self, prefix: &str) -> Result<Vec<String>> {
        match &*self.inner {
            Inner::Local { root } => {
                let mut out = Vec::new();
                let (dir, _) = prefix.rsplit_once('/').unwrap_or(("", prefix));
                list_local(root, &root.join(dir), &mut out)?;
                out.retain(|k| k.starts_with(prefix));
                out.sort();
                Ok(out)
            }
            Inner::Remote(r) => {
                let mut keys = r.call(self, "list", prefix, |s, p| {
                    let want = p.clone();
                    async move {
                        use futures::TryStreamExt;
                        // object_store lists by path segments; list the parent and filter.
                        let parent: object_store::path::Path = match want.as_ref().rsplit_once('/') {
                            Some((dir, _)) => dir.into(),
                            None => object_store::path::Path::default(),
                        };
                        let parent = if parent.as_ref().is_empty() { None } else { Some(parent) };
                        let metas: Vec<object_store::ObjectMeta> = s.list(parent.as_ref()).try_collect().await?;
                        Ok(metas.into_iter().map(|m| m.location.to_string()).collect::<Vec<_>>())
                    }
                })?;
                let base = if r.prefix.is_empty() { String::new() } else { format!("{}/", r.prefix) };
                let full = format!("{base}{prefix}");
                keys.retain(|k| k.starts_with(&full));
                let mut keys: Vec<String> = keys.into_iter().map(|k| k[base.len()..].to_string()).collect();
                keys.sort();
                Ok(keys)
            }
        }
    }

    /// Deletes `key` (no error if it is not there).
    pub fn delete(&self, key: &str) -> Result<()> {
        match &*self.inner {
            Inner::Local { root } => {
                let p = root.join(key);
                match std::fs::remove_file(&p) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    Err(e) => Err(StorageError::Write { path: p, fixable: false, source: e }),
                }
            }
            Inner::Remote(r) => r.call(self, "delete", key, |s, p| async move {
                match s.delete(&p).await {
                    Err(object_store::Error::NotFound { .. }) => Ok(()),
                    x => x,
                }
            }),
        }
    }

    /// Creates `key` with `bytes` only if there is no object under it; returns whether
    /// this call created it (`false`: someone else's object is there, unchanged).
    pub fn create(&self, key: &str, bytes: &[u8]) -> Result<bool> {
        match &*self.inner {
            Inner::Local { root } => fsutil::create_if_absent(&root.join(key), bytes),
            Inner::Remote(r) => {
                let payload = object_store::PutPayload::from(bytes.to_vec());
                let mut tries = 0;
                let created = r.call(self, "create", key, |s, p| {
                    let payload = payload.clone();
                    tries += 1;
                    let retried = tries > 1;
                    async move {
                        match s.put_opts(&p, payload.clone(), object_store::PutMode::Create.into()).await {
                            Ok(_) => Ok(true),
                            Err(
                                object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. },
                            ) => {
                                // A retried create whose first try went through finds its own
                                // object: that is a success.
                                if retried
                                    && let Ok(g) = s.get(&p).await
                                    && let Ok(b) = g.bytes().await
                                    && b.as_ref() == payload_bytes(&payload).as_slice()
                                {
                                    return Ok(true);
                                }
                                Ok(false)
                            }
                            Err(e) => Err(e),
                        }
                    }
                })?;
                Ok(created)
            }
        }
    }

    /// Replaces `key` with `bytes` only if it is still at `version` (read by
    /// [`Store::get_versioned`]); returns whether it was replaced. Atomic on an object
    /// store (`If-Match`); on a local directory a check then a write (local runs are
    /// guarded by the trainer's file lock instead).
    pub fn replace(&self, key: &str, bytes: &[u8], version: &Version) -> Result<bool> {
        match &*self.inner {
            Inner::Local { .. } => match self.get_versioned(key)? {
                Some((_, v)) if &v == version => self.put(key, bytes).map(|()| true),
                _ => Ok(false),
            },
            Inner::Remote(r) => {
                let payload = object_store::PutPayload::from(bytes.to_vec());
                let tag = version.0.clone();
                r.call(self, "replace", key, |s, p| {
                    let payload = payload.clone();
                    let update = object_store::UpdateVersion { e_tag: Some(tag.clone()), version: None };
                    async move {
                        match s.put_opts(&p, payload, object_store::PutMode::Update(update).into()).await {
                            Ok(_) => Ok(true),
                            Err(object_store::Error::Precondition { .. } | object_store::Error::NotFound { .. }) => {
                                Ok(false)
                            }
                            Err(e) => Err(e),
                        }
                    }
                })
            }
        }
    }
}

fn payload_bytes(p: &object_store::PutPayload) -> Vec<u8> {
    p.iter().flat_map(|b| b.iter().copied()).collect()
}

/// The files under `dir` as keys relative to `root`, temporaries left out.
fn list_local(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StorageError::Read { path: dir.to_path_buf(), source: e }),
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if fsutil::is_temp_name(&name) {
            continue;
        }
        let p = e.path();
        if p.is_dir() {
            list_local(root, &p, out)?;
        } else if let Ok(rel) = p.strip_prefix(root) {
            out.push(rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"));
        }
    }
    Ok(())
}

impl Remote {
    /// The object path of `key`.
    fn path(&self, key: &str) -> object_store::path::Path {
        if self.prefix.is_empty() { key.into() } else { format!("{}/{key}", self.prefix).into() }
    }

    /// Runs one request, retrying passing faults with backoff (see the module docs).
    fn call<T, F, Fut>(&self, store: &Store, op: &'static str, key: &str, mut f: F) -> Result<T>
    where
        F: FnMut(Arc<dyn object_store::ObjectStore>, object_store::path::Path) -> Fut,
        Fut: std::future::Future<Output = object_store::Result<T>>,
    {
        let start = Instant::now();
        let mut delay = Duration::from_millis(100);
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            self.requests.fetch_add(1, Ordering::Relaxed);
            let result = self.runtime.block_on(f(self.store.clone(), self.path(key)));
            let e = match result {
                Ok(x) => return Ok(x),
                Err(e) => e,
            };
            let url = store.describe(key);
            if permanent(&e) {
                return Err(StorageError::Remote { op, url, problem: explain(&e) });
            }
            let spent = start.elapsed().as_secs_f64();
            if spent + delay.as_secs_f64() > self.retry.max_secs {
                return Err(StorageError::Unavailable { op, url, attempts, secs: spent, problem: error_text(&e) });
            }
            if attempts == 1 || attempts.is_power_of_two() {
                eprintln!("warning: {op} {url}: {} (retrying for up to {:.0} s)", error_text(&e), self.retry.max_secs);
            }
            std::thread::sleep(delay);
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal is told by its words, not by digits that happen to be in the URL.
    #[test]
    fn refusals_are_told_apart_whatever_the_port() {
        let generic = |text: &str| object_store::Error::Generic { store: "S3", source: text.to_string().into() };
        let missing = generic(
            "Error performing GET http://127.0.0.1:35403/no-such-bucket?list-type=2 in 8ms - Server returned \
             non-2xx status code: 404 Not Found: <Error><Code>NoSuchBucket</Code></Error>",
        );
        assert!(permanent(&missing));
        assert!(explain(&missing).starts_with("the bucket does not exist"), "{}", explain(&missing));
        let denied = generic(
            "Error performing GET http://127.0.0.1:9000/runs - Server returned non-2xx status code: 403 Forbidden",
        );
        assert!(permanent(&denied));
        assert!(explain(&denied).starts_with("access denied"), "{}", explain(&denied));
        let down = generic("Error performing GET http://127.0.0.1:40300/runs: connection refused");
        assert!(!permanent(&down), "a server that is down is retried");
    }

    #[test]
    fn local_store_puts_lists_creates_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::local(dir.path());
        assert_eq!(s.get("a/b.txt").unwrap(), None);
        s.put("a/b.txt", b"one").unwrap();
        s.put("a/c/d.txt", b"two").unwrap();
        s.put("ab.txt", b"three").unwrap();
        std::fs::write(dir.path().join("a/.x.1.2.tmp"), b"half").unwrap();
        assert_eq!(s.list("a/").unwrap(), ["a/b.txt", "a/c/d.txt"]);
        assert_eq!(s.list("a").unwrap(), ["a/b.txt", "a/c/d.txt", "ab.txt"]);
        assert_eq!(s.list("zz/").unwrap(), Vec::<String>::new());
        assert!(s.create("lease", b"me").unwrap());
        assert!(!s.create("lease", b"you").unwrap());
        let (b, v) = s.get_versioned("lease").unwrap().unwrap();
        assert_eq!(b, b"me");
        assert!(s.replace("lease", b"me again", &v).unwrap());
        assert!(!s.replace("lease", b"stale", &v).unwrap());
        assert_eq!(s.get("lease").unwrap().unwrap(), b"me again");
        s.delete("lease").unwrap();
        s.delete("lease").unwrap();
        assert_eq!(s.get("lease").unwrap(), None);
        assert_eq!(s.requests(), 0);
    }
}
