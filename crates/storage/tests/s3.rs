//! The object-store backend against a real S3 server (s3s-fs) on the loopback: every
//! operation, the faults (server down and back, down for good, wrong credentials, no
//! bucket) and the lease.

use bredon_s3_test_server::S3Server;
use bredon_storage::{Lease, RetryPolicy, RunLocation, StorageError, Store};
use std::time::{Duration, Instant};

fn open(server: &S3Server, url: &str, retry_secs: f64) -> Result<Store, StorageError> {
    let env = server.env();
    let pairs: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, v.clone())).collect();
    Store::open_with(&url.parse::<RunLocation>().unwrap(), RetryPolicy { max_secs: retry_secs }, Some(&pairs))
}

#[test]
fn every_operation_works_on_a_real_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = S3Server::start(dir.path(), "runs").unwrap();
    let s = open(&server, "s3://runs/a/b", 5.0).unwrap();
    assert_eq!(s.get("latest").unwrap(), None);
    s.put("latest", b"gen-0001\n").unwrap();
    s.put("games/gen-0001/w1.games", b"x").unwrap();
    s.put("games/gen-0001/w2.games", b"y").unwrap();
    s.put("games/gen-00010/w3.games", b"z").unwrap();
    assert_eq!(s.get("latest").unwrap().unwrap(), b"gen-0001\n");
    assert_eq!(s.list("games/gen-0001/").unwrap(), ["games/gen-0001/w1.games", "games/gen-0001/w2.games"]);
    assert_eq!(s.list("").unwrap().len(), 4);
    // Another run in the same bucket is not listed.
    let other = open(&server, "s3://runs/a", 5.0).unwrap();
    assert_eq!(other.list("games/").unwrap(), Vec::<String>::new());
    // Create-if-absent and conditional replace.
    assert!(s.create("train.lease", b"one").unwrap());
    assert!(!s.create("train.lease", b"two").unwrap());
    let (b, v) = s.get_versioned("train.lease").unwrap().unwrap();
    assert_eq!(b, b"one");
    assert!(s.replace("train.lease", b"three", &v).unwrap());
    assert!(!s.replace("train.lease", b"four", &v).unwrap(), "a stale version must not replace");
    assert_eq!(s.get("train.lease").unwrap().unwrap(), b"three");
    s.delete("train.lease").unwrap();
    s.delete("train.lease").unwrap();
    assert_eq!(s.get("train.lease").unwrap(), None);
    assert!(s.requests() > 10);
}

#[test]
fn a_second_holder_is_refused_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let server = S3Server::start(dir.path(), "runs").unwrap();
    let s = open(&server, "s3://runs/r", 5.0).unwrap();
    let lease = Lease::acquire(&s, "train.lease", "host-a pid 1", Duration::from_secs(30)).unwrap();
    let e = Lease::acquire(&s, "train.lease", "host-b pid 2", Duration::from_secs(30)).unwrap_err();
    assert!(matches!(e, StorageError::LeaseHeld { .. }), "{e}");
    assert!(e.to_string().contains("host-a pid 1") && e.to_string().contains("s3://runs/r/train.lease"), "{e}");
    lease.check().unwrap();
    drop(lease);
    let _b = Lease::acquire(&s, "train.lease", "host-b pid 2", Duration::from_secs(30)).unwrap();
}

/// The server goes away and comes back within the retry window: nothing is lost and the
/// request succeeds. With no retries the same fault is an error (the handling is what
/// makes it pass); a server that stays down is a clear error in bounded time.
#[test]
fn a_restarted_server_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = S3Server::start(dir.path(), "runs").unwrap();
    let s = open(&server, "s3://runs/r", 20.0).unwrap();
    let no_retry = open(&server, "s3://runs/r", 0.0).unwrap();
    let short_retry = open(&server, "s3://runs/r", 0.5).unwrap();
    s.put("checkpoints/gen-0001/model.json", b"{}").unwrap();
    server.stop();
    let e = no_retry.put("x", b"1").unwrap_err();
    assert!(matches!(e, StorageError::Unavailable { attempts: 1, .. }), "{e}");
    let t = Instant::now();
    let msg = short_retry.get("latest").unwrap_err().to_string();
    assert!(t.elapsed() < Duration::from_secs(10));
    assert!(
        msg.contains("did not answer") && msg.contains("AWS_ENDPOINT_URL") && msg.contains("s3://runs/r/latest"),
        "{msg}"
    );
    let back = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        server.restart().unwrap();
        server
    });
    let t = Instant::now();
    s.put("games/gen-0001/w.games", b"batch").unwrap();
    assert!(t.elapsed() > Duration::from_millis(1000), "the server was down; the request must have waited");
    assert_eq!(s.get("checkpoints/gen-0001/model.json").unwrap().unwrap(), b"{}");
    let _server = back.join().unwrap();
    assert_eq!(s.list("games/").unwrap(), ["games/gen-0001/w.games"]);
}

#[test]
fn wrong_credentials_and_a_missing_bucket_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let server = S3Server::start(dir.path(), "runs").unwrap();
    let mut env: Vec<(&str, String)> = server.env().into_iter().collect();
    for (k, v) in &mut env {
        if *k == "AWS_SECRET_ACCESS_KEY" {
            *v = "not-the-secret".into();
        }
    }
    let t = Instant::now();
    let e = Store::open_with(&"s3://runs/r".parse().unwrap(), RetryPolicy { max_secs: 30.0 }, Some(&env)).unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(5), "a refusal is not retried");
    let msg = e.to_string();
    assert!(
        msg.contains("access denied") && msg.contains("AWS_SECRET_ACCESS_KEY") && msg.contains("s3://runs/r"),
        "{msg}"
    );
    let e = open(&server, "s3://no-such-bucket/r", 30.0).unwrap_err().to_string();
    assert!(e.contains("bucket does not exist") && e.contains("s3://no-such-bucket/r"), "{e}");
}
