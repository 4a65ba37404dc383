//! Self-play workers beside a trainer: `bredon selfplay --run` on a curriculum's
//! directory plays for the stage being trained and follows the curriculum to the next.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::common::{TinyConfig, bredon, files_under};

fn stage(name: &str, generations: i64, size: i64) -> toml::Value {
    let mut t = toml::Table::new();
    t.insert("name".into(), name.into());
    t.insert("generations".into(), generations.into());
    let mut game = toml::Table::new();
    game.insert("size".into(), size.into());
    t.insert("game".into(), toml::Value::Table(game));
    toml::Value::Table(t)
}

fn train(config: &Path, run: &Path) -> Command {
    let mut c = bredon();
    c.arg("train").arg("--config").arg(config).arg("--run").arg(run).arg("--quiet");
    c.stdout(Stdio::null()).stderr(Stdio::null());
    c
}

/// Game records under `stage`'s games whose id names process `pid`.
fn games_of(stage: &Path, pid: u32) -> usize {
    let tag = format!("-{pid}.game");
    files_under(&stage.join("games")).iter().filter(|p| p.to_string_lossy().ends_with(&tag)).count()
}

fn wait(child: &mut Child, what: &str, cond: impl Fn() -> bool) {
    crate::common::wait_for(child, what, Duration::from_secs(300), cond)
}

/// Waits up to two minutes for `child` to exit by itself; `why` says what a timeout means.
fn exits(child: &mut Child, why: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "{why}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_worker_follows_a_curriculum_from_stage_to_stage() {
    let dir = tempfile::tempdir().unwrap();
    let config = TinyConfig::new(1).top("stage", vec![stage("3x3", 3, 3), stage("4x4", 3, 4)]).write(dir.path());
    let run = dir.path().join("run");
    let (first, second) = (run.join("stages/01-3x3"), run.join("stages/02-4x4"));
    let latest = |stage: &Path| stage.join("latest").is_file();
    let kill = |c: &mut Child| {
        c.kill().unwrap();
        c.wait().unwrap();
    };

    // The trainer stopped inside the first stage; a worker joins and plays for it.
    let mut trainer = train(&config, &run).spawn().unwrap();
    wait(&mut trainer, "the first stage's first checkpoint", || latest(&first));
    kill(&mut trainer);
    let log = dir.path().join("worker.log");
    let mut worker = bredon()
        .arg("selfplay")
        .arg("--run")
        .arg(&run)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let pid = worker.id();
    wait(&mut worker, "the worker's games in the first stage", || games_of(&first, pid) > 0);
    // The trainer goes on into the second stage; the worker moves there with it.
    let mut trainer = train(&config, &run).spawn().unwrap();
    wait(&mut trainer, "the second stage's first checkpoint", || latest(&second));
    kill(&mut trainer);
    wait(&mut worker, "the worker's games in the second stage", || games_of(&second, pid) > 0);
    // When every stage is done, the worker stops by itself.
    let status = train(&config, &run).status().unwrap();
    assert!(status.success());
    let status = exits(&mut worker, "the worker went on after the last stage");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{text}");
    assert!(text.contains("stage 1 (3x3): self-play into") && text.contains("stage 2 (4x4): self-play into"), "{text}");
    assert!(text.contains("every stage of the curriculum") && text.contains("is done"), "{text}");
    assert!(first.join("stage-done.json").is_file() && second.join("stage-done.json").is_file());
}

/// With `--external-selfplay` the curriculum's trainer plays nothing: a worker on the
/// curriculum's directory plays every stage's games, and both stop when it is done.
#[test]
fn a_curriculum_trains_on_a_workers_games_alone() {
    let dir = tempfile::tempdir().unwrap();
    let config = TinyConfig::new(1).top("stage", vec![stage("3x3", 2, 3), stage("4x4", 2, 4)]).write(dir.path());
    let run = dir.path().join("run");
    let mut trainer = train(&config, &run).arg("--external-selfplay").spawn().unwrap();
    wait(&mut trainer, "the curriculum's directory", || run.join("curriculum.toml").is_file());
    let worker = bredon().arg("selfplay").arg("--run").arg(&run).stdout(Stdio::null()).stderr(Stdio::piped()).spawn();
    let worker = worker.unwrap();
    let pid = worker.id();
    let out = worker.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("every stage of the curriculum"), "{text}");
    let status = exits(&mut trainer, "the trainer did not finish");
    assert!(status.success());
    for stage in [run.join("stages/01-3x3"), run.join("stages/02-4x4")] {
        let all = files_under(&stage.join("games")).into_iter().filter(|p| p.extension().is_some_and(|e| e == "game"));
        assert_eq!(all.count(), games_of(&stage, pid), "{}: every game is the worker's", stage.display());
        assert!(games_of(&stage, pid) >= 2 * 12, "{}: two generations of 12 games", stage.display());
    }
}
