//! A lease on an object: one holder at a time, renewed while the holder lives, lapsing
//! when it dies. The trainer of a run on an object store holds `train.lease` (a local
//! run uses the operating system's file lock instead).
//!
//! The lease is a small JSON object (holder, a random token, expiry time). Acquiring it is
//! a create-if-absent; a lease past its expiry is taken over with a conditional replace
//! (only one of two racing takers wins). A thread renews it every third of its length; if
//! the object stops naming this holder (it lapsed, e.g. the process was paused, and
//! another took it), [`Lease::check`] errors so the holder stops writing. Expiry uses each
//! machine's clock: clocks must agree to within a fraction of the lease length.

use crate::error::{Result, StorageError};
use crate::store::Store;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The contents of a lease object.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LeaseRecord {
    /// Who holds it (`host pid N`), for the message of a refused second holder.
    pub holder: String,
    /// Unique to this holding.
    pub token: String,
    /// When it lapses unless renewed (milliseconds since the Unix epoch).
    pub expires_unix_ms: u64,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// A token unique to this process and moment.
pub fn unique_token() -> String {
    let t = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut x = (t as u64) ^ ((std::process::id() as u64) << 32) ^ (&t as *const _ as u64);
    // splitmix64
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    format!("{:016x}", z ^ (z >> 31))
}

/// This machine's name and this process's id.
pub fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown host".into());
    format!("{host} pid {}", std::process::id())
}

/// A held lease; renewed by a thread until dropped (which releases it).
#[derive(Debug)]
pub struct Lease {
    store: Store,
    key: String,
    token: String,
    stop: Arc<AtomicBool>,
    lost: Arc<Mutex<Option<String>>>,
    renewer: Option<std::thread::JoinHandle<()>>,
}

impl Lease {
    /// Takes the lease `key` of `store` for `holder`, lasting `ttl` past each renewal, or
    /// errors with [`StorageError::LeaseHeld`] naming the current holder.
    pub fn acquire(store: &Store, key: &str, holder: &str, ttl: Duration) -> Result<Lease> {
        let token = unique_token();
        let record =
            |expires| LeaseRecord { holder: holder.to_string(), token: token.clone(), expires_unix_ms: expires };
        let encode = |r: &LeaseRecord| serde_json::to_vec_pretty(r).expect("a lease record serialises");
        let ttl_ms = ttl.as_millis() as u64;
        let mine = encode(&record(now_ms() + ttl_ms));
        if !store.create(key, &mine)? {
            let Some((bytes, version)) = store.get_versioned(key)? else {
                // Released between our two requests: try once more.
                if store.create(key, &mine)? {
                    return Ok(Lease::start(store, key, token, ttl));
                }
                return Err(StorageError::LeaseHeld {
                    url: store.describe(key),
                    holder: "another process".into(),
                    expires_in_secs: ttl.as_secs_f64(),
                });
            };
            match serde_json::from_slice::<LeaseRecord>(&bytes) {
                Ok(held) if held.expires_unix_ms > now_ms() => {
                    return Err(StorageError::LeaseHeld {
                        url: store.describe(key),
                        holder: held.holder,
                        expires_in_secs: (held.expires_unix_ms - now_ms()) as f64 / 1000.0,
                    });
                }
                Ok(held) => eprintln!("taking over {}: {}'s lease lapsed", store.describe(key), held.holder),
                Err(_) => eprintln!("warning: {} is not a lease record; replacing it", store.describe(key)),
            }
            if !store.replace(key, &mine, &version)? {
                let holder = store
                    .get(key)?
                    .and_then(|b| serde_json::from_slice::<LeaseRecord>(&b).ok())
                    .map_or_else(|| "another process".to_string(), |r| r.holder);
                return Err(StorageError::LeaseHeld {
                    url: store.describe(key),
                    holder,
                    expires_in_secs: ttl.as_secs_f64(),
                });
            }
        }
        Ok(Lease::start(store, key, token, ttl))
    }

    fn start(store: &Store, key: &str, token: String, ttl: Duration) -> Lease {
        let stop = Arc::new(AtomicBool::new(false));
        let lost = Arc::new(Mutex::new(None));
        let renewer = {
            let (store, key, token, stop, lost) =
                (store.clone(), key.to_string(), token.clone(), stop.clone(), lost.clone());
            std::thread::spawn(move || renew_loop(&store, &key, &token, ttl, &stop, &lost))
        };
        Lease { store: store.clone(), key: key.to_string(), token, stop, lost, renewer: Some(renewer) }
    }

    /// Errors with [`StorageError::LeaseLost`] if another process holds the lease now.
    pub fn check(&self) -> Result<()> {
        match self.lost.lock().map(|l| l.clone()) {
            Ok(Some(holder)) => Err(StorageError::LeaseLost { url: self.store.describe(&self.key), holder }),
            _ => Ok(()),
        }
    }
}

fn renew_loop(store: &Store, key: &str, token: &str, ttl: Duration, stop: &AtomicBool, lost: &Mutex<Option<String>>) {
    let period = ttl / 3;
    let mut next = std::time::Instant::now() + period;
    while !stop.load(Ordering::Relaxed) {
        if std::time::Instant::now() < next {
            std::thread::sleep(Duration::from_millis(50).min(period));
            continue;
        }
        next = std::time::Instant::now() + period;
        let current = match store.get_versioned(key) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("warning: renewing {}: {e}", store.describe(key));
                continue;
            }
        };
        let held = current.as_ref().and_then(|(b, v)| serde_json::from_slice::<LeaseRecord>(b).ok().map(|r| (r, v)));
        match held {
            Some((mut r, v)) if r.token == token => {
                r.expires_unix_ms = now_ms() + ttl.as_millis() as u64;
                let bytes = serde_json::to_vec_pretty(&r).expect("a lease record serialises");
                match store.replace(key, &bytes, v) {
                    Ok(true) => {}
                    Ok(false) => {
                        if let Ok(mut l) = lost.lock() {
                            *l = Some("another process".into());
                        }
                        return;
                    }
                    Err(e) => eprintln!("warning: renewing {}: {e}", store.describe(key)),
                }
            }
            other => {
                if let Ok(mut l) = lost.lock() {
                    *l = Some(other.map_or_else(|| "nobody (it was deleted)".to_string(), |(r, _)| r.holder));
                }
                return;
            }
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.renewer.take() {
            let _ = t.join();
        }
        // Release it if it is still ours (a clean exit lets the next holder start at once).
        if let Ok(Some(b)) = self.store.get(&self.key)
            && serde_json::from_slice::<LeaseRecord>(&b).is_ok_and(|r| r.token == self.token)
        {
            let _ = self.store.delete(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_then_lapse_then_takeover() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::local(dir.path());
        let a = Lease::acquire(&s, "train.lease", "alpha", Duration::from_millis(600)).unwrap();
        let e = Lease::acquire(&s, "train.lease", "beta", Duration::from_millis(600)).unwrap_err().to_string();
        assert!(e.contains("held by alpha"), "{e}");
        // Renewed while it lives: still refused after more than one lease length.
        std::thread::sleep(Duration::from_millis(900));
        assert!(Lease::acquire(&s, "train.lease", "beta", Duration::from_millis(600)).is_err());
        a.check().unwrap();
        // A holder that stops renewing (killed) lapses; the next one takes over and the
        // old holder learns it lost the lease.
        a.stop.store(true, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(800));
        let b = Lease::acquire(&s, "train.lease", "beta", Duration::from_millis(600)).unwrap();
        *a.lost.lock().unwrap() = None;
        drop(a); // does not delete b's lease
        assert!(s.get("train.lease").unwrap().is_some());
        b.check().unwrap();
        drop(b);
        assert_eq!(s.get("train.lease").unwrap(), None, "a clean exit releases the lease");
    }
}
