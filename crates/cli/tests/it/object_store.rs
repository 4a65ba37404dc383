//! A run on an S3-compatible object store (a real server, s3s-fs, on the loopback): one
//! trainer and two `bredon selfplay` workers, a worker killed during its upload, the
//! server stopped and restarted mid-run, a second trainer refused, wrong credentials and
//! a missing bucket; `bredon check --run s3://…` afterwards finds nothing lost or counted
//! twice.

use bredon_s3_test_server::S3Server;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{TinyConfig, text};

/// These tests' config: smaller still (8 games of 8 visits, 2 at a time, an 8-channel
/// net, 4 training steps a generation, no overlap).
fn store_config(dir: &Path, generations: u32) -> PathBuf {
    TinyConfig::new(generations)
        .set("net", "channels", 8)
        .set("selfplay", "games_per_generation", 8)
        .set("selfplay", "concurrent_games", 2)
        .set("selfplay", "visits", 8)
        .set("selfplay", "overlap", false)
        .set("train", "max_steps_per_generation", 4)
        .write(dir)
}

/// `bredon` with the server's environment and a cache under `cache`.
fn bredon(server: &S3Server, cache: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_bredon"));
    for (k, v) in server.env() {
        c.env(k, v);
    }
    c.env("BREDON_CACHE", cache).env("BREDON_STORE_RETRY_SECS", "30").env("BREDON_LEASE_SECS", "6");
    c
}

fn wait(child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    let mut child = child;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("{what} did not finish in {limit:?}:\n{}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Objects under `prefix` in the server's directory (s3s-fs: one file per object).
fn objects(root: &Path, prefix: &str) -> Vec<String> {
    let mut out: Vec<String> = common::files_under(&root.join(prefix))
        .iter()
        .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

#[test]
fn a_trainer_and_two_workers_through_a_restarted_server() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("s3");
    let cache = dir.path().join("cache");
    let mut server = S3Server::start(&data, "runs").unwrap();
    let cfg = store_config(dir.path(), 3);
    let url = "s3://runs/tiny";
    let trainer = bredon(&server, &cache)
        .args(["train", "--run", url, "--external-selfplay", "--quiet", "--config"])
        .arg(&cfg)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A second trainer is refused and told who holds the run (the first waits for games).
    // (The lease is one object, one file: wait for that file, not for files under it.)
    let start = Instant::now();
    while !data.join("runs/tiny/train.lease").is_file() {
        assert!(start.elapsed() < Duration::from_secs(60), "the trainer took no lease in 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let second = bredon(&server, &cache.join("second")).args(["train", "--run", url, "--quiet"]).output().unwrap();
    let msg = text(&second);
    assert!(!second.status.success() && msg.contains("train.lease") && msg.contains("pid"), "{msg}");
    // Two workers with their own local copies (as on two machines).
    let worker = |n: u32| {
        bredon(&server, &cache.join(format!("m{n}")))
            .args(["selfplay", "--run", url])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (w1, w2) = (worker(1), worker(2));
    // The server goes away for 3 s mid-run and comes back with its objects.
    std::thread::sleep(Duration::from_secs(1));
    server.stop();
    std::thread::sleep(Duration::from_secs(3));
    server.restart().unwrap();
    let t = wait(trainer, Duration::from_secs(300), "trainer");
    assert!(t.status.success(), "{}", text(&t));
    let log = text(&t);
    assert!(log.contains("object-store requests this generation"), "{log}");
    // The workers play on until killed (perhaps in the middle of an upload).
    let mut retried = false;
    for mut w in [w1, w2] {
        w.kill().unwrap();
        let out = w.wait_with_output().unwrap();
        assert!(text(&out).contains("games played by this process"), "{}", text(&out));
        retried |= text(&out).contains("retrying");
    }
    assert!(retried || log.contains("retrying"), "nobody met the stopped server:\n{log}");
    let latest = std::fs::read_to_string(data.join("runs/tiny/latest")).unwrap();
    assert_eq!(latest.trim(), "gen-0003");
    // Nothing lost, nothing counted twice.
    let check = bredon(&server, &cache).args(["check", "--run", url]).output().unwrap();
    let msg = text(&check);
    assert!(check.status.success(), "{msg}");
    assert!(msg.contains("0 damaged") && msg.contains(" 0 of them in two bundles"), "{msg}");
    let games: usize = msg.split(" distinct games").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
    assert!(games >= 24, "3 generations of 8 games: {msg}");
}

/// A worker killed after its upload went through but before it noted it, and one killed
/// before its upload: a worker started on the same local copy sends what they left, and
/// the games count once.
#[test]
fn a_killed_worker_loses_nothing_and_counts_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("s3");
    let cache = dir.path().join("cache");
    let server = S3Server::start(&data, "runs").unwrap();
    let cfg = store_config(dir.path(), 1);
    let url = "s3://runs/k";
    // Create the run (one generation, played by the trainer itself).
    let out = bredon(&server, &cache)
        .args(["train", "--run", url, "--quiet", "--generations", "1", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let w = cache.join("worker");
    let worker_bundles =
        |data: &Path| objects(data, "runs/k/games").into_iter().filter(|o| !o.ends_with("-own.bundle")).count();
    // Killed before its upload: its 2 games wait in its copy's outbox, nothing is sent.
    let out = bredon(&server, &w)
        .args(["selfplay", "--run", url, "--games", "2"])
        .env("BREDON_INJECT_UPLOAD_KILL", "before-put")
        .output()
        .unwrap();
    assert!(!out.status.success() && text(&out).contains("injected kill"), "{}", text(&out));
    assert_eq!(worker_bundles(&data), 0);
    // The next worker on that copy sends them first, and is killed after the upload went
    // through but before it noted it.
    let out = bredon(&server, &w)
        .args(["selfplay", "--run", url, "--games", "2"])
        .env("BREDON_INJECT_UPLOAD_KILL", "after-put")
        .output()
        .unwrap();
    assert!(!out.status.success() && text(&out).contains("injected kill"), "{}", text(&out));
    assert_eq!(worker_bundles(&data), 1);
    // The next one sends that batch again (same object, same contents) and plays 2 more.
    let out = bredon(&server, &w).args(["selfplay", "--run", url, "--games", "2"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("left by an earlier worker"), "{}", text(&out));
    assert_eq!(worker_bundles(&data), 2);
    let check = bredon(&server, &cache).args(["check", "--run", url]).output().unwrap();
    let msg = text(&check);
    assert!(check.status.success(), "{msg}");
    // 8 games of the trainer's generation + 2 (killed before the upload) + 2 = 12, once each.
    assert!(msg.contains("12 distinct games") && msg.contains(" 0 of them in two bundles"), "{msg}");
}

#[test]
fn wrong_credentials_and_a_missing_bucket_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let server = S3Server::start(&dir.path().join("s3"), "runs").unwrap();
    let cache = dir.path().join("cache");
    let out = bredon(&server, &cache)
        .args(["check", "--run", "s3://runs/x"])
        .env("AWS_SECRET_ACCESS_KEY", "wrong")
        .output()
        .unwrap();
    let msg = text(&out);
    assert!(!out.status.success() && msg.contains("access denied") && msg.contains("AWS_SECRET_ACCESS_KEY"), "{msg}");
    let out = bredon(&server, &cache).args(["selfplay", "--run", "s3://nope/x"]).output().unwrap();
    let msg = text(&out);
    assert!(!out.status.success() && msg.contains("bucket does not exist") && msg.contains("s3://nope/x"), "{msg}");
}
