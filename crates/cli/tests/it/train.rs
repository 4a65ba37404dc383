//! End-to-end training tests on 3x3: the trained network beats the uniform-policy search by a
//! margin a non-learning net cannot reach, and a run killed with SIGKILL at any moment
//! resumes without losing anything.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common;
use common::{TinyConfig, bredon, files_under, flip_byte, repo_file, snapshot};

/// These tests' config: many short generations (24 games of 32 visits, all the training
/// steps they call for), evaluated every 2 generations.
fn train_config(dir: &Path, generations: u32) -> PathBuf {
    train_tiny(generations).write(dir)
}

/// [`train_config`]'s settings, before writing (to change a key or two).
fn train_tiny(generations: u32) -> TinyConfig {
    TinyConfig::new(generations)
        // Every checkpoint file stays, so the kill test can compare all of them.
        .set("train", "optimizer_states_kept", 0)
        .set("train", "max_steps_per_generation", 60)
        .set("selfplay", "games_per_generation", 24)
        .set("selfplay", "visits", 32)
        .set("eval", "every", 2)
        .set("eval", "games", 4)
        .set("eval", "visits", 16)
}

fn wait_for(child: &mut Child, what: &str, cond: impl Fn() -> bool) {
    common::wait_for(child, what, Duration::from_secs(300), cond)
}

fn train(config: &Path, run: &Path, extra: &[&str]) -> Command {
    let mut c = bredon();
    c.arg("train").arg("--config").arg(config).arg("--run").arg(run).arg("--quiet").args(extra);
    c
}

fn checked(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed:\n{}\n{}",
        cmd,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The documented 3x3 config trains for its six generations; the final network then
/// plays the uniform-policy search with the same visits per move (80 games, colours
/// swapped in pairs, varied openings, fixed seeds) and must score at least 65 %: a net
/// that learned nothing cannot (one as good as the uniform policy scores about 50 %, within
/// ±6 % over 80 games; the random gen-0000 scores about 21 %; the trained net about 90 %).
#[test]
fn a_trained_3x3_net_beats_the_uniform_search() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    checked(&mut train(&repo_file("configs/3x3.toml"), &run, &[]));
    let latest = std::fs::read_to_string(run.join("latest")).unwrap().trim().to_string();
    assert_eq!(latest, "gen-0006");
    // Only the newest three checkpoints keep their optimiser state; all keep their model.
    let has = |g: u32, file: &str| run.join(format!("checkpoints/gen-{g:04}/{file}")).is_file();
    assert_eq!(
        (0..=6).map(|g| has(g, "optimizer.bpk")).collect::<Vec<_>>(),
        [false, false, false, false, true, true, true]
    );
    assert!((0..=6).all(|g| has(g, "model.bpk")));
    let ckpt = format!("checkpoint:{};name=trained", run.join("checkpoints").join(&latest).display());
    let out = dir.path().join("match");
    checked(
        bredon()
            .args(["arena", "--size", "3", "--games", "80", "--visits", "64", "--threads", "2"])
            .args(["--player", &ckpt, "--player", "uniform:64", "--out"])
            .arg(&out),
    );
    let records = bredon_arena::load_records(&out.join("results.jsonl")).unwrap();
    assert_eq!(records.len(), 80);
    let score: f64 =
        records.iter().map(|r| if r.white == "trained" { r.white_score } else { 1.0 - r.white_score }).sum::<f64>()
            / records.len() as f64;
    eprintln!("trained 3x3 net vs uniform:64: {:.1}%", score * 100.0);
    assert!(
        score >= 0.65,
        "the trained net scored only {:.1}% against the uniform search (65 % needed)",
        score * 100.0
    );

    // The run's Elo ladder: a curve against minutes of training, as a chart and a table.
    checked(bredon().args(["arena", "--games", "2", "--visits", "16", "--every", "3", "--run"]).arg(&run));
    let svg = std::fs::read_to_string(run.join("arena/elo.svg")).unwrap();
    assert!(svg.contains("minutes of training"), "x axis");
    let csv = std::fs::read_to_string(run.join("arena/elo-curve.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(csv.lines().next().unwrap(), "name,generation,step,minutes,elo,lo95,hi95");
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(names, ["gen-0000", "gen-0003", "gen-0006"]);
    let minutes: Vec<f64> = rows.iter().map(|r| r[3].parse().unwrap()).collect();
    assert!(minutes.windows(2).all(|w| w[0] <= w[1]) && minutes[2] > 0.0, "{minutes:?}");
    assert_eq!(rows[0][4], "0.0", "anchored at the first checkpoint");
}

/// With `[selfplay] overlap`, the next generation's games are played during training by
/// the weights from before it; a kill in the middle loses nothing, and the resumed run
/// ends with every generation's quota, each game played by its generation's model or the
/// one before.
#[test]
fn overlapped_self_play_keeps_the_quota_and_survives_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let config = train_config(dir.path(), 5);
    let text = std::fs::read_to_string(&config).unwrap().replace("[selfplay]\n", "[selfplay]\noverlap = true\n");
    assert!(text.contains("overlap = true"));
    std::fs::write(&config, text).unwrap();
    let run = dir.path().join("run");
    let ck = run.join("checkpoints/gen-0002/state.json");
    let mut child = train(&config, &run, &[]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_for(&mut child, "checkpoint gen-0002", || ck.is_file());
    child.kill().unwrap();
    child.wait().unwrap();
    checked(&mut train(&config, &run, &[]));
    assert_eq!(std::fs::read_to_string(run.join("latest")).unwrap().trim(), "gen-0005");
    let mut by_older = 0;
    for g in 0..5u32 {
        let games_dir = run.join("games").join(format!("gen-{g:04}"));
        assert!(count_files(&games_dir, "game") >= 24, "gen {g}");
        for entry in std::fs::read_dir(&games_dir).unwrap().flatten() {
            if entry.path().extension().is_some_and(|e| e == "game") {
                let (record, _, _) = bredon_selfplay::replay::GameRecord::load(&entry.path()).unwrap();
                let own = format!("gen-{g:04}");
                let older = format!("gen-{:04}", g.saturating_sub(1));
                assert!(record.model == own || record.model == older, "gen {g} game by {}", record.model);
                by_older += usize::from(record.model != own);
            }
        }
    }
    assert!(by_older > 0, "no game was played in the background");
    let lines = std::fs::read_to_string(run.join("logs/generations.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 5, "one log line per generation");
}

fn count_files(dir: &Path, ext: &str) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().filter(|e| e.path().extension().is_some_and(|x| x == ext)).count())
        .unwrap_or(0)
}

/// Kills the trainer with SIGKILL in the middle of self-play, right after a checkpoint
/// appears, and in the middle of training; after each kill, every finished game and every
/// complete checkpoint is still there unchanged, and rerunning the same command finishes
/// the schedule with one log line per generation.
#[test]
fn sigkill_at_any_moment_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = train_config(dir.path(), 4);
    let run = dir.path().join("run");
    let games0 = run.join("games").join("gen-0000");
    let games1 = run.join("games").join("gen-0001");
    let ck = |g: u32| run.join("checkpoints").join(format!("gen-{g:04}")).join("state.json");

    type Moment<'a> = (&'a str, Box<dyn Fn() -> bool + 'a>);
    let kills: [Moment; 3] = [
        ("some games of generation 0", Box::new(|| count_files(&games0, "game") >= 5)),
        ("checkpoint gen-0001", Box::new(|| ck(1).is_file())),
        ("some games of generation 1", Box::new(|| count_files(&games1, "game") >= 3)),
    ];
    for (what, cond) in kills.iter() {
        let mut child = train(&config, &run, &[]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        wait_for(&mut child, what, cond);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // What is complete now must survive the next run untouched.
        // A game is finished once its sample file (`.game`, written after the `.ptn`) exists.
        let games_before: Vec<_> =
            snapshot(&run.join("games")).into_iter().filter(|(p, _)| p.with_extension("game").is_file()).collect();
        // A checkpoint is written once the `latest` pointer has reached it.
        let latest: u32 = std::fs::read_to_string(run.join("latest")).unwrap().trim()["gen-".len()..].parse().unwrap();
        let ckpts_before: Vec<_> = (0..=latest).map(|g| snapshot(ck(g).parent().unwrap())).collect();
        // Resume for a moment, then check nothing finished was lost or rewritten.
        let mut child = train(&config, &run, &[]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        child.kill().unwrap();
        child.wait().unwrap();
        let games_after = snapshot(&run.join("games"));
        for (p, bytes) in &games_before {
            let after = games_after.iter().find(|(q, _)| q == p);
            assert!(
                after.is_some_and(|(_, b)| b == bytes),
                "after the kill at {what}: {} was lost or changed",
                p.display()
            );
        }
        for snap in &ckpts_before {
            for (p, bytes) in snap {
                assert_eq!(&std::fs::read(p).unwrap(), bytes, "checkpoint file {} changed", p.display());
            }
        }
    }
    // Now run to the end.
    checked(&mut train(&config, &run, &[]));
    assert_eq!(std::fs::read_to_string(run.join("latest")).unwrap().trim(), "gen-0004");
    let lines = std::fs::read_to_string(run.join("logs").join("generations.jsonl")).unwrap();
    let gens: Vec<u64> = lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["generation"].as_u64().unwrap())
        .collect();
    assert_eq!(gens, vec![0, 1, 2, 3], "one log line per generation, in order");
    // Each line carries the new network's health; a fresh network has no dead channel.
    for l in lines.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let (dead, tiny) = (v["dead_channels_percent"].as_f64().unwrap(), v["tiny_weights_percent"].as_f64().unwrap());
        assert!(dead == 0.0 && (0.0..=100.0).contains(&tiny), "{l}");
    }
    // Every generation has its full quota of games and the trainer read them all.
    for g in 0..4 {
        assert!(count_files(&run.join("games").join(format!("gen-{g:04}")), "game") >= 24);
    }
    // A finished run stays finished: rerunning does nothing and changes nothing.
    let before = snapshot(&run.join("checkpoints"));
    checked(&mut train(&config, &run, &[]));
    assert_eq!(snapshot(&run.join("checkpoints")), before);
}

/// With gating on, every generation's games are played by the model the gate chose, and
/// the `best` pointer names a complete checkpoint.
#[test]
fn gating_picks_the_self_play_model() {
    let dir = tempfile::tempdir().unwrap();
    let base = train_config(dir.path(), 3);
    let mut text = std::fs::read_to_string(&base).unwrap();
    text.push_str("\n[eval.gate]\nenabled = true\ntest = \"fixed\"\ngames = 4\nthreshold = 0.6\nvisits = 16\n");
    let config = dir.path().join("gated.toml");
    std::fs::write(&config, text).unwrap();
    let run = dir.path().join("run");
    let out = train(&config, &run, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    // "gate: gen-0001 vs gen-0000: 50.0% over 4 games -> gen-0000 keeps playing"
    let decisions: Vec<(String, String)> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("gate: "))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let (cand, inc) = (words[0].to_string(), words[2].trim_end_matches(':').to_string());
            let winner = words[words.iter().position(|w| *w == "->").unwrap() + 1].to_string();
            assert!(winner == cand || winner == inc, "{l}");
            (cand, winner)
        })
        .collect();
    assert_eq!(decisions.len(), 3, "{stderr}");
    let best = std::fs::read_to_string(run.join("best")).unwrap().trim().to_string();
    assert_eq!(best, decisions[2].1);
    // Generation g (1, 2) was played by the model chosen at the gate of gen-g.
    for (g, (cand, winner)) in decisions.iter().enumerate().take(2) {
        assert_eq!(cand, &format!("gen-{:04}", g + 1));
        let games = run.join("games").join(cand);
        let ptn =
            std::fs::read_dir(&games).unwrap().flatten().find(|e| e.path().extension().is_some_and(|x| x == "ptn"));
        let text = std::fs::read_to_string(ptn.unwrap().path()).unwrap();
        assert!(text.contains(&format!("[Player1 \"{winner}\"]")), "{}: {text}", games.display());
    }
    assert!(run.join("arena").join("gating").join("results.jsonl").is_file());
}

/// A trained checkpoint exports to one file that `analyse`, `play` and `tei` load; a
/// model of the wrong size or a file that is not a model is a clear error.
#[test]
fn exported_model_plays_and_analyses() {
    let dir = tempfile::tempdir().unwrap();
    let config = train_config(dir.path(), 1);
    let run = dir.path().join("run");
    checked(&mut train(&config, &run, &[]));
    let file = dir.path().join("m.bredon");
    let out = checked(bredon().args(["export", "--run"]).arg(&run).arg("-o").arg(&file));
    assert!(out.contains("3x3 b1c16 model") && out.contains("generation 1"), "{out}");
    let game = dir.path().join("g.ptn");
    std::fs::write(&game, "[Size \"3\"]\n\n1. a1 c3\n2. b2 a3\n").unwrap();
    let out = checked(bredon().arg("analyse").arg(&game).arg("--model").arg(&file).args(["--visits", "50"]));
    assert_eq!(out.lines().count(), 2 + 4 + 1, "{out}");
    // The mean of gen-0000's and gen-0001's weights: named for the newest, a model of its
    // own (neither checkpoint's bytes) that plays; more checkpoints than the run has is
    // a clear error.
    let out = checked(bredon().args(["export", "--average", "2", "--run"]).arg(&run));
    let averaged = run.join("exports").join("gen-0001-avg2.bredon");
    assert!(out.contains("gen-0001-avg2.bredon") && out.contains("generation 1"), "{out}");
    let plain = checked(bredon().args(["export", "--generation", "0", "--run"]).arg(&run));
    assert!(plain.contains("generation 0"), "{plain}");
    let mean = std::fs::read(&averaged).unwrap();
    for other in [file.clone(), run.join("exports").join("gen-0000.bredon")] {
        assert_ne!(mean, std::fs::read(&other).unwrap(), "the average is {}", other.display());
    }
    let out = checked(bredon().arg("analyse").arg(&game).arg("--model").arg(&averaged).args(["--visits", "50"]));
    assert_eq!(out.lines().count(), 2 + 4 + 1, "{out}");
    let bad = bredon().args(["export", "--average", "3", "--run"]).arg(&run).output().unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("starts at gen-0000"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let out = checked(
        bredon()
            .arg("play")
            .arg("--model")
            .arg(&file)
            .args(["--visits", "20", "--color", "black", "--save"])
            .arg(dir.path().join("p.ptn"))
            .stdin(Stdio::null()),
    );
    assert!(out.contains("bredon plays"), "{out}");
    // Wrong size and wrong file.
    let bad =
        bredon().arg("play").arg("--model").arg(&file).args(["--size", "5"]).stdin(Stdio::null()).output().unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("is a 3x3 model"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let bad = bredon().arg("tei").arg("--model").arg(&game).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a Bredon model file"));
}

/// `--init-from` starts a new run from a trained model: `gen-0000` holds exactly its
/// weights, the steps continue from its step, and the source is recorded; a model of
/// another architecture is a clear error that creates no checkpoint.
#[test]
fn a_run_starts_from_a_trained_model() {
    let dir = tempfile::tempdir().unwrap();
    let config = train_config(dir.path(), 1);
    let first = dir.path().join("first");
    checked(&mut train(&config, &first, &[]));
    let file = dir.path().join("m.bredon");
    checked(bredon().args(["export", "--run"]).arg(&first).arg("-o").arg(&file));
    let json =
        |p: PathBuf| -> serde_json::Value { serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap() };
    let source_step = json(first.join("checkpoints/gen-0001/state.json"))["step"].as_u64().unwrap();
    assert!(source_step > 0);

    let second = dir.path().join("second");
    checked(train(&config, &second, &["--init-minutes", "7.5", "--init-from"]).arg(&file));
    // The same weights judge a game's positions the same (burn's files carry parameter
    // ids, so their bytes differ).
    let game = dir.path().join("g.ptn");
    std::fs::write(&game, "[Size \"3\"]\n\n1. a1 c3\n2. b2 a3\n3. c2 b3\n").unwrap();
    // Without the header line, which names the model file.
    let analyse = |model: PathBuf| {
        let out = checked(bredon().arg("analyse").arg(&game).arg("--model").arg(model).args(["--visits", "30"]));
        out.split_once('\n').map(|(_, rest)| rest.to_string()).unwrap_or_default()
    };
    let start = analyse(second.join("checkpoints/gen-0000"));
    assert_eq!(start, analyse(file.clone()), "gen-0000 holds the model's weights");
    assert_ne!(start, analyse(first.join("checkpoints/gen-0000")), "the analysis tells weights apart");
    assert_eq!(json(second.join("checkpoints/gen-0000/state.json"))["step"].as_u64(), Some(source_step));
    let after = json(second.join("checkpoints/gen-0001/state.json"))["step"].as_u64().unwrap();
    assert!(after > source_step, "steps continue from the model's: {after} after {source_step}");
    let init = json(second.join("init.json"));
    assert_eq!(init["step"].as_u64(), Some(source_step));
    assert_eq!(init["generation"].as_u64(), Some(1));
    assert_eq!(init["minutes"].as_f64(), Some(7.5));
    // The run's Elo curve counts the model's minutes of training.
    checked(bredon().args(["arena", "--games", "2", "--visits", "8", "--every", "1", "--run"]).arg(&second));
    let csv = std::fs::read_to_string(second.join("arena/elo-curve.csv")).unwrap();
    let minutes: Vec<f64> = csv.lines().skip(1).map(|l| l.split(',').nth(3).unwrap().parse().unwrap()).collect();
    assert_eq!(minutes.len(), 2, "{csv}");
    // gen-0001 sits at the source's minutes plus its own (a fast machine trains the tiny
    // run in well under the curve's 0.01-minute resolution, so compare, don't order).
    let own = json(second.join("checkpoints/gen-0001/state.json"))["elapsed_secs"].as_f64().unwrap() / 60.0;
    assert_eq!(minutes[0], 7.5, "{csv}");
    assert!((minutes[1] - (7.5 + own)).abs() < 0.006, "{csv}: own minutes {own}");
    // `bredon plot` draws such tables; a malformed one is an error naming its line.
    let svg = dir.path().join("curve.svg");
    checked(bredon().arg("plot").arg(second.join("arena/elo-curve.csv")).arg("-o").arg(&svg));
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg") && drawn.contains("elo-curve"), "the series is named after its file");
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, csv.replacen("gen-0001,1,", "gen-0001,1,x,", 1)).unwrap();
    let out = bredon().arg("plot").arg(&bad).arg("-o").arg(&svg).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("line 3"));
    // init.json carries a checksum: `bredon check` verifies it, and a changed one is
    // refused by name where the run reads it (the Elo curve's minutes). A file of an
    // older run, without the checksum, still reads and is counted unverified.
    let check = |run: &PathBuf| {
        let out = bredon().arg("check").arg("--run").arg(run).output().unwrap();
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    };
    let (ok, msg) = check(&second);
    assert!(ok && msg.contains(" 0 damaged") && msg.contains(" 0 unverified"), "{msg}");
    let init_path = second.join("init.json");
    let good = std::fs::read_to_string(&init_path).unwrap();
    assert!(good.contains("\"crc32c\""), "{good}");
    std::fs::write(&init_path, good.replace("7.5", "75.0")).unwrap();
    let (ok, msg) = check(&second);
    assert!(
        !ok && msg.contains(" 1 damaged") && msg.contains("init.json") && msg.contains("init.json is repaired"),
        "{msg}"
    );
    let out = bredon()
        .args(["arena", "--games", "2", "--visits", "8", "--every", "1", "--run"])
        .arg(&second)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("init.json") && err.contains("checksum"), "{err}");
    let mut old: serde_json::Value = serde_json::from_str(&good).unwrap();
    old.as_object_mut().unwrap().remove("crc32c");
    std::fs::write(&init_path, serde_json::to_string_pretty(&old).unwrap()).unwrap();
    let (ok, msg) = check(&second);
    assert!(ok && msg.contains(" 0 damaged") && msg.contains(" 1 unverified"), "{msg}");
    checked(bredon().args(["arena", "--games", "2", "--visits", "8", "--every", "1", "--run"]).arg(&second));
    // From a checkpoint directory, the minutes come from its state.json.
    let fourth = dir.path().join("fourth");
    checked(train(&config, &fourth, &["--init-from"]).arg(first.join("checkpoints/gen-0001")));
    let secs = json(first.join("checkpoints/gen-0001/state.json"))["elapsed_secs"].as_f64().unwrap();
    assert_eq!(json(fourth.join("init.json"))["minutes"].as_f64(), Some(secs / 60.0));

    // Another architecture: refused before anything is written.
    let text = std::fs::read_to_string(&config).unwrap().replace("channels = 16", "channels = 24");
    let wider = dir.path().join("wider.toml");
    std::fs::write(&wider, text).unwrap();
    let third = dir.path().join("third");
    let out = train(&wider, &third, &["--init-from"]).arg(&file).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("b1c16") && err.contains("b1c24"), "{err}");
    assert!(!third.join("latest").exists() && !third.join("checkpoints/gen-0000").exists());

    // Another board size: carried over (KataGo's one net for all sizes: the trunk as it
    // is, layers over N² features fresh); the learning-rate schedule starts again at step
    // 0, and init.json keeps the source's step.
    let text = std::fs::read_to_string(&config).unwrap().replace("size = 3", "size = 4");
    let four = dir.path().join("four.toml");
    std::fs::write(&four, text).unwrap();
    let fifth = dir.path().join("fifth");
    let out = train(&four, &fifth, &["--init-from"]).arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The 3x3 config's dense heads start fresh.
    assert!(err.contains("transferred 3x3 → 4x4") && err.contains("policy_fc.weight"), "{err}");
    assert_eq!(json(fifth.join("checkpoints/gen-0000/state.json"))["step"].as_u64(), Some(0));
    assert_eq!(json(fifth.join("init.json"))["step"].as_u64(), Some(source_step));
    assert_eq!(json(fifth.join("checkpoints/gen-0000/model.json"))["net"]["size"].as_u64(), Some(4));
}

/// `--window-from` starts a new run's replay window with another run's games: the files
/// are carried into `<run>/inherited/` byte for byte, `init.json` counts them, the first
/// generation's window holds them besides its own, and `bredon check` reads them. From a
/// checkpoint directory only the games played before it come; another board size and a
/// missing `--init-from` are clear errors that create nothing. `[train] train_after`
/// holds the first training step back until the run has that many samples.
#[test]
fn a_run_continues_another_runs_replay_window() {
    let dir = tempfile::tempdir().unwrap();
    let config = train_config(dir.path(), 2);
    let first = dir.path().join("first");
    checked(&mut train(&config, &first, &[]));
    let json =
        |p: PathBuf| -> serde_json::Value { serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap() };
    let games_in = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> =
            common::files_under(d).into_iter().filter(|p| p.extension().is_some_and(|e| e == "game")).collect();
        v.sort();
        v
    };
    let source_games = games_in(&first.join("games"));
    assert!(source_games.len() >= 48, "two generations of 24 games: {}", source_games.len());
    let source_samples: u64 =
        json_lines(&first.join("logs/generations.jsonl")).iter().map(|l| l["new_samples"].as_u64().unwrap()).sum();

    let second = dir.path().join("second");
    let err = checked_err(
        train(&config, &second, &["--generations", "1", "--window-from"])
            .arg(&first)
            .arg("--init-from")
            .arg(first.join("checkpoints/gen-0002")),
    );
    let init = json(second.join("init.json"));
    assert_eq!(init["window_from"]["games"].as_u64(), Some(source_games.len() as u64), "{init}");
    assert_eq!(init["window_from"]["samples"].as_u64(), Some(source_samples), "{init}");
    assert!(err.contains(&format!("{} games, {source_samples} samples", source_games.len())), "{err}");
    let second_err = err;
    let carried = games_in(&second.join("inherited"));
    assert_eq!(carried.len(), source_games.len());
    for (a, b) in source_games.iter().zip(&carried) {
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), "{} carried as it is", a.display());
    }
    let line = json_lines(&second.join("logs/generations.jsonl"))[0].clone();
    let own = line["new_samples"].as_u64().unwrap();
    assert_eq!(line["window"].as_u64(), Some(source_samples + own), "{line}");
    let report = checked(bredon().arg("check").arg("--run").arg(&second));
    assert!(report.contains(&format!("{} games", source_games.len() + 24)), "{report}");
    // A chain: a run from the second carries the first's games (the second's inherited
    // ones) before the second's own, in that order, under stable names.
    let chained = dir.path().join("chained");
    checked_err(
        train(&config, &chained, &["--generations", "1", "--init-from"])
            .arg(second.join("checkpoints/gen-0001"))
            .arg("--window-from")
            .arg(&second),
    );
    let names = |d: &Path| -> Vec<String> {
        games_in(d).iter().map(|p| p.strip_prefix(d).unwrap().display().to_string()).collect()
    };
    let expect = names(&second.join("inherited"));
    let got = names(&chained.join("inherited"));
    assert_eq!(got.len(), source_games.len() + 24, "{got:?}");
    assert_eq!(got[..source_games.len()], expect[..], "the first run's games first, names kept");
    assert!(got[source_games.len()..].iter().all(|n| n.starts_with("00002-gen-0000/")), "then the second's: {got:?}");

    // From a checkpoint directory: only the games played before it (gen-0000's).
    let third = dir.path().join("third");
    let from = first.join("checkpoints/gen-0001");
    checked_err(
        train(&config, &third, &["--generations", "1", "--init-from"]).arg(&from).arg("--window-from").arg(&from),
    );
    let gen0 = games_in(&first.join("games/gen-0000")).len() as u64;
    assert_eq!(json(third.join("init.json"))["window_from"]["games"].as_u64(), Some(gen0));

    // Another board size, a missing source and no --init-from: errors, nothing created.
    let text = std::fs::read_to_string(&config).unwrap().replace("size = 3", "size = 4");
    let four = dir.path().join("four.toml");
    std::fs::write(&four, text).unwrap();
    for (i, (cfg, args, expect)) in [
        (
            &four,
            vec!["--init-from".to_string(), first.join("checkpoints/gen-0002").display().to_string()],
            "3x3, this run's 4x4",
        ),
        (
            &config,
            vec!["--init-from".into(), first.join("checkpoints/gen-0002").display().to_string()],
            "neither a run directory",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let bad = dir.path().join(format!("bad{i}"));
        let missing = dir.path().join("nowhere");
        let source = if expect.starts_with("neither") { &missing } else { &first };
        let out = train(cfg, &bad, &args.iter().map(String::as_str).collect::<Vec<_>>())
            .arg("--window-from")
            .arg(source)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("--window-from") && err.contains(expect), "{err}");
        assert!(!bad.join("latest").exists() && !bad.join("checkpoints/gen-0000").exists(), "{err}");
    }
    let out = train(&config, &dir.path().join("bad-no-init"), &["--window-from"]).arg(&first).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--init-from"));

    // train_after: no step until the run holds that many samples.
    std::fs::create_dir(dir.path().join("waits")).unwrap();
    let waits = train_tiny(2).set("train", "train_after", 1_000_000).write(&dir.path().join("waits"));
    let fourth = dir.path().join("fourth");
    let err = checked_err(&mut train(&waits, &fourth, &[]));
    let lines = json_lines(&fourth.join("logs/generations.jsonl"));
    assert_eq!(lines.len(), 2);
    for l in &lines {
        assert_eq!(l["step"].as_u64(), Some(0), "{l}");
        assert!(l["samples_before_training"].as_u64().unwrap() > 0, "{l}");
    }
    assert!(err.contains("no training until"), "{err}");
    // A trained model continued with neither its games nor train_after is told how to
    // wait for a window; with train_after, or with --window-from (the second run), not.
    let note = "`[train] train_after`";
    let from = first.join("checkpoints/gen-0002");
    let err = checked_err(train(&config, &dir.path().join("fifth"), &["--generations", "1", "--init-from"]).arg(&from));
    assert!(err.contains(note), "{err}");
    let err = checked_err(train(&waits, &dir.path().join("sixth"), &["--generations", "1", "--init-from"]).arg(&from));
    assert!(!err.contains(note), "{err}");
    assert!(!second_err.contains(note), "{second_err}");
}

/// The JSON lines of a file.
fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap().lines().map(json_line).collect()
}

/// Runs a command that must succeed; returns its standard error.
fn checked_err(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{cmd:?} failed:\n{err}");
    err
}

/// `bredon fit` trains a run's exported model on the run's stored games alone: the output
/// directory gets the config, one report a line at the planned steps and an export at
/// each, whose step continues the model's; two fits with the same seed give the same
/// network and another decay setting a different one; a second fit into the same
/// directory and a directory of no games are clear errors.
#[test]
fn fit_trains_on_stored_games_alone() {
    let dir = tempfile::tempdir().unwrap();
    let config = train_config(dir.path(), 1);
    let run = dir.path().join("run");
    checked(&mut train(&config, &run, &[]));
    let model = dir.path().join("m.bredon");
    checked(bredon().args(["export", "--run"]).arg(&run).arg("-o").arg(&model));
    let fit = |config: &Path, out: &Path| {
        let mut c = bredon();
        c.arg("fit").arg("--config").arg(config).arg("--games").arg(run.join("games"));
        c.arg("--init").arg(&model).args(["--steps", "5", "--report-every", "2", "--out"]).arg(out);
        c
    };
    let a = dir.path().join("fit-a");
    let table = checked(&mut fit(&config, &a));
    assert!(table.contains("dormant"), "{table}");
    let reports: Vec<serde_json::Value> = std::fs::read_to_string(a.join("fit.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let steps: Vec<u64> = reports.iter().map(|r| r["step"].as_u64().unwrap()).collect();
    assert_eq!(steps, vec![0, 2, 4, 5]);
    let start = reports[0]["model_step"].as_u64().unwrap();
    assert!(start > 0, "the model's own step");
    assert_eq!(reports[3]["model_step"].as_u64(), Some(start + 5));
    assert!(reports[3]["policy_loss"].as_f64().unwrap() > 0.0);
    assert_eq!(std::fs::read(a.join("config.toml")).unwrap(), std::fs::read(&config).unwrap());
    let analyse = |m: PathBuf| {
        let game = dir.path().join("g.ptn");
        std::fs::write(&game, "[Size \"3\"]\n\n1. a1 c3\n2. b2 a3\n").unwrap();
        let out = checked(bredon().arg("analyse").arg(&game).arg("--model").arg(m).args(["--visits", "20"]));
        out.split_once('\n').map(|(_, rest)| rest.to_string()).unwrap_or_default()
    };
    let end_a = analyse(a.join("step-000005.bredon"));
    assert_ne!(end_a, analyse(a.join("step-000000.bredon")), "five steps changed the network");
    let b = dir.path().join("fit-b");
    checked(&mut fit(&config, &b));
    assert_eq!(end_a, analyse(b.join("step-000005.bredon")), "same data, start, seed: same network");
    // The old default (L2 through Adam, its factor following the mode: 1e-4).
    let l2 = train_tiny(1).set("train", "weight_decay_mode", "l2").write(&{
        let d = dir.path().join("c");
        std::fs::create_dir_all(&d).unwrap();
        d
    });
    let c = dir.path().join("fit-c");
    checked(&mut fit(&l2, &c));
    assert_ne!(end_a, analyse(c.join("step-000005.bredon")), "the decay setting is what differs");

    let again = fit(&config, &a).output().unwrap();
    assert!(
        !again.status.success() && common::text(&again).contains("already holds a fit"),
        "{}",
        common::text(&again)
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = bredon()
        .arg("fit")
        .arg("--config")
        .arg(&config)
        .arg("--games")
        .arg(&empty)
        .arg("--out")
        .arg(dir.path().join("fit-empty"))
        .output()
        .unwrap();
    assert!(!out.status.success() && common::text(&out).contains("no training samples"), "{}", common::text(&out));
}

/// A curriculum (`[[stage]]` entries in one config) walks 3x3 → 4x4 with a deeper net →
/// 4x4 deeper again, each stage a run directory started from the stage before; killed
/// inside its second stage, `bredon train --run` resumes there (the first stage
/// untouched, the second from its own newest checkpoint) and finishes. The third stage,
/// on the second's board, starts its replay window with the second's games; the second,
/// on another board, starts empty.
#[test]
fn a_curriculum_walks_its_stages_and_resumes_after_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let stage = |name: &str, generations: i64, extra: &[(&str, toml::Table)]| {
        let mut t = toml::Table::new();
        t.insert("name".into(), name.into());
        t.insert("generations".into(), generations.into());
        for (k, v) in extra {
            t.insert((*k).into(), toml::Value::Table(v.clone()));
        }
        toml::Value::Table(t)
    };
    let table = |text: &str| -> toml::Table { toml::from_str(text).unwrap() };
    let config = TinyConfig::new(1)
        .top(
            "stage",
            vec![
                stage("3x3", 1, &[]),
                stage("4x4-b2", 4, &[("game", table("size = 4")), ("net", table("blocks = 2"))]),
                stage("4x4-b3", 1, &[("game", table("size = 4")), ("net", table("blocks = 3"))]),
            ],
        )
        .write(dir.path());
    let run = dir.path().join("run");
    let first = run.join("stages/01-3x3");
    let second = run.join("stages/02-4x4-b2");
    let third = run.join("stages/03-4x4-b3");
    let json =
        |p: PathBuf| -> serde_json::Value { serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap() };
    let mut child = train(&config, &run, &[]).stderr(Stdio::null()).spawn().unwrap();
    wait_for(&mut child, "the second stage's gen-0002", || {
        std::fs::read_to_string(second.join("latest")).is_ok_and(|l| l.trim() == "gen-0002")
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!second.join("stage-done.json").exists());
    let first_files = snapshot(&first);
    let done = json(first.join("stage-done.json"));
    assert_eq!((done["name"].as_str(), done["generation"].as_u64()), (Some("3x3"), Some(1)));
    let init = json(second.join("init.json"));
    assert_eq!(init["source"].as_str().map(PathBuf::from), Some(first.join("checkpoints/gen-0001")));
    assert_eq!(init["minutes"].as_f64(), done["total_minutes"].as_f64());
    let model = json(second.join("checkpoints/gen-0000/model.json"));
    assert_eq!((model["net"]["size"].as_u64(), model["net"]["blocks"].as_u64()), (Some(4), Some(2)));

    // Resumed from the run directory alone.
    let out = bredon().arg("train").arg("--run").arg(&run).arg("--quiet").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("stage 2/3 4x4-b2: resuming") && !err.contains("stage 1/3"), "{err}");
    assert!(err.contains("[stage 2/3 4x4-b2] gen   2"), "{err}");
    assert!(err.contains("stage 3/3 4x4-b3: starting") && err.contains("[stage 3/3 4x4-b3] gen   0"), "{err}");
    assert_eq!(snapshot(&first), first_files, "a finished stage is not touched again");
    assert_eq!(json(second.join("init.json")), init, "the stage is resumed, not started again");
    assert_eq!(std::fs::read_to_string(second.join("latest")).unwrap().trim(), "gen-0004");
    assert_eq!(json(second.join("stage-done.json"))["generation"].as_u64(), Some(4));
    let log = std::fs::read_to_string(second.join("logs/generations.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 4, "{log}");
    assert!(log.lines().all(|l| json_line(l)["stage"] == "4x4-b2"), "{log}");
    assert!(init.get("window_from").is_none(), "a stage on another board starts an empty window: {init}");
    let grown = json(third.join("init.json"));
    assert_eq!(grown["source"].as_str().map(PathBuf::from), Some(second.join("checkpoints/gen-0004")));
    let played: u64 = log.lines().map(|l| json_line(l)["games"].as_u64().unwrap()).sum();
    assert_eq!(grown["window_from"]["games"].as_u64(), Some(played), "the 4x4 stage's games carried: {grown}");
    let first_line =
        json_line(std::fs::read_to_string(third.join("logs/generations.jsonl")).unwrap().lines().next().unwrap());
    assert!(first_line["window"].as_u64() > first_line["new_samples"].as_u64(), "{first_line}");
    // Done: a second resume trains nothing; --minutes is refused with a reason.
    let again = bredon().arg("train").arg("--run").arg(&run).arg("--quiet").output().unwrap();
    assert!(again.status.success() && String::from_utf8_lossy(&again.stderr).contains("every stage"));
    let refused = bredon().arg("train").arg("--run").arg(&run).args(["--minutes", "3"]).output().unwrap();
    assert!(!refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("[[stage]]"));

    // `bredon check` on the curriculum's directory checks every stage in one report.
    let check = || {
        let out = bredon().arg("check").arg("--run").arg(&run).output().unwrap();
        (out.status.success(), common::text(&out))
    };
    let (ok, msg) = check();
    assert!(ok && msg.contains(" 0 damaged") && msg.contains(" 0 unverified"), "{msg}");
    let games = |msg: &str| -> u64 {
        let after = msg.rsplit_once(" damaged; ").unwrap().1;
        after.split_whitespace().next().unwrap().parse().unwrap()
    };
    let on_disk = |stage: &Path| -> u64 {
        files_under(stage).iter().filter(|p| p.extension().is_some_and(|e| e == "game")).count() as u64
    };
    assert_eq!(games(&msg), on_disk(&first) + on_disk(&second) + on_disk(&third), "{msg}");
    // Commands that work on one run name the stages instead.
    let out = bredon().args(["arena", "--games", "2", "--run"]).arg(&run).output().unwrap();
    let msg = common::text(&out);
    assert!(!out.status.success() && msg.contains("is a curriculum") && msg.contains("02-4x4-b2"), "{msg}");
    // A stage-done.json changed by hand: named, and the resume refuses it until it is
    // deleted, when the resume finds the stage's limits reached and writes it again.
    let done_path = second.join("stage-done.json");
    let text = std::fs::read_to_string(&done_path).unwrap();
    std::fs::write(&done_path, text.replace("\"generation\": 4", "\"generation\": 3")).unwrap();
    let (ok, msg) = check();
    assert!(!ok && msg.contains(" 1 damaged") && msg.contains("02-4x4-b2/stage-done.json"), "{msg}");
    assert!(msg.contains("cannot resume past this stage"), "{msg}");
    let refused = bredon().arg("train").arg("--run").arg(&run).arg("--quiet").output().unwrap();
    assert!(
        !refused.status.success() && common::text(&refused).contains("stage-done.json"),
        "{}",
        common::text(&refused)
    );
    std::fs::remove_file(&done_path).unwrap();
    let healed = bredon().arg("train").arg("--run").arg(&run).arg("--quiet").output().unwrap();
    assert!(healed.status.success() && !common::text(&healed).contains("[stage 2/3"), "{}", common::text(&healed));
    assert_eq!(json(done_path.clone())["generation"].as_u64(), Some(4));
    assert_eq!(std::fs::read_to_string(second.join("latest")).unwrap().trim(), "gen-0004", "nothing trained");
    // Damage inside a stage's run is found as in a single run.
    flip_byte(&first.join("checkpoints/gen-0001/model.bpk"), 500);
    let (ok, msg) = check();
    assert!(!ok && msg.contains(" 1 damaged") && msg.contains("01-3x3/checkpoints/gen-0001/model.bpk"), "{msg}");
}

/// `--start-stage` begins a new curriculum at a later stage from a model trained
/// elsewhere (here a one-generation 3x3 run): the stages before it are marked skipped,
/// naming the model, and the stage starts from that model with the minutes given. A
/// stage the curriculum lacks is refused before anything is written, and so is
/// `--start-stage` on a curriculum that exists or on a single run's config.
#[test]
fn a_curriculum_can_begin_at_a_later_stage_from_a_given_model() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("single")).unwrap();
    let single = TinyConfig::new(1).write(&dir.path().join("single"));
    let elsewhere = dir.path().join("elsewhere");
    checked(&mut train(&single, &elsewhere, &[]));
    let model = elsewhere.join("checkpoints/gen-0001");
    let stage = |name: &str, extra: Option<(&str, &str)>| {
        let mut t = toml::Table::new();
        t.insert("name".into(), name.into());
        t.insert("generations".into(), 1.into());
        if let Some((k, v)) = extra {
            t.insert(k.into(), toml::Value::Table(toml::from_str(v).unwrap()));
        }
        toml::Value::Table(t)
    };
    let config = TinyConfig::new(1)
        .top("stage", vec![stage("3x3", None), stage("4x4", Some(("game", "size = 4")))])
        .write(dir.path());
    let run = dir.path().join("run");
    let start = |stage: &str, run: &Path| {
        let mut c = train(&config, run, &["--start-stage", stage, "--init-from"]);
        c.arg(&model).args(["--init-minutes", "7"]);
        c
    };

    let unknown = start("5x5", &run).output().unwrap();
    assert!(!unknown.status.success(), "{}", common::text(&unknown));
    assert!(common::text(&unknown).contains("the curriculum's stages are 1 3x3, 2 4x4"), "{}", common::text(&unknown));
    assert!(!run.exists(), "a refused start writes nothing");

    let err = checked_err(&mut start("4x4", &run));
    assert!(err.contains("stage 1/2 3x3: skipped") && err.contains("stage 2/2 4x4: starting"), "{err}");
    assert!(!err.contains("[stage 1/2"), "the skipped stage trains nothing: {err}");
    let json =
        |p: PathBuf| -> serde_json::Value { serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap() };
    let skipped = json(run.join("stages/01-3x3/stage-done.json"));
    assert_eq!(skipped["skipped_for"].as_str().map(PathBuf::from), Some(model.clone()), "{skipped}");
    assert!(!run.join("stages/01-3x3/checkpoints").exists());
    let init = json(run.join("stages/02-4x4/init.json"));
    assert_eq!(init["source"].as_str().map(PathBuf::from), Some(model.clone()), "{init}");
    assert_eq!(init["minutes"].as_f64(), Some(7.0), "{init}");
    let grown = json(run.join("stages/02-4x4/checkpoints/gen-0000/model.json"));
    assert_eq!(grown["net"]["size"].as_u64(), Some(4), "{grown}");
    assert_eq!(json(run.join("stages/02-4x4/stage-done.json"))["generation"].as_u64(), Some(1));

    let again = start("4x4", &run).output().unwrap();
    assert!(!again.status.success() && common::text(&again).contains("exists already"), "{}", common::text(&again));
    let resumed = bredon().arg("train").arg("--run").arg(&run).arg("--quiet").output().unwrap();
    assert!(resumed.status.success() && common::text(&resumed).contains("every stage"), "{}", common::text(&resumed));
    let plain = bredon()
        .arg("train")
        .arg("--config")
        .arg(&single)
        .arg("--run")
        .arg(dir.path().join("plain"))
        .args(["--start-stage", "2", "--init-from"])
        .arg(&model)
        .output()
        .unwrap();
    assert!(
        !plain.status.success() && common::text(&plain).contains("no [[stage]] entries"),
        "{}",
        common::text(&plain)
    );
}

/// `--steps` (`[schedule] steps`) stops a run after that many training steps, the last
/// generation cut to the steps left, with no generation or time limit; a curriculum
/// stage with `steps` ends the same way and the next stage starts from it.
#[test]
fn a_step_limit_ends_a_run_and_a_curriculum_stage_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let step_of = |checkpoint: PathBuf| -> u64 {
        let state: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(checkpoint.join("state.json")).unwrap()).unwrap();
        state["step"].as_u64().unwrap()
    };
    let latest = |run: &Path| run.join("checkpoints").join(std::fs::read_to_string(run.join("latest")).unwrap().trim());
    let config = TinyConfig::new(0).write(dir.path());
    let run = dir.path().join("run");
    checked(&mut train(&config, &run, &["--steps", "20"]));
    assert_eq!(step_of(latest(&run)), 20, "stopped at the limit, not a generation later");
    let log = std::fs::read_to_string(run.join("logs/generations.jsonl")).unwrap();
    let steps: Vec<u64> = log.lines().map(|l| json_line(l)["step"].as_u64().unwrap()).collect();
    assert!(steps.len() >= 2 && steps.windows(2).all(|w| w[0] < w[1]), "{log}");
    // Each line says what is left of the limit: the steps, then none on the last.
    for (line, step) in log.lines().zip(&steps) {
        let to_go = &json_line(line)["to_go"];
        assert_eq!(to_go["limit"], "steps", "{line}");
        assert_eq!(to_go["steps"].as_u64(), Some(20 - step), "{line}");
    }

    std::fs::create_dir_all(dir.path().join("c")).unwrap();
    let stage = |name: &str, key: &str| {
        let mut t = toml::Table::new();
        t.insert("name".into(), name.into());
        t.insert(key.into(), 15.into());
        toml::Value::Table(t)
    };
    let curriculum =
        TinyConfig::new(0).top("stage", vec![stage("a", "steps"), stage("b", "steps")]).write(&dir.path().join("c"));
    let crun = dir.path().join("crun");
    let err = checked_err(&mut train(&curriculum, &crun, &[]));
    assert!(err.contains("stage 2/2 b: starting (until 15 steps)"), "{err}");
    let (a, b) = (crun.join("stages/01-a"), crun.join("stages/02-b"));
    assert_eq!(step_of(latest(&a)), 15);
    assert_eq!(step_of(b.join("checkpoints/gen-0000")), 15, "b starts from a's newest checkpoint");
    assert_eq!(step_of(latest(&b)), 30, "b's 15 steps count from its own start");
    let refused = bredon().arg("train").arg("--run").arg(&crun).args(["--steps", "3"]).output().unwrap();
    assert!(!refused.status.success() && common::text(&refused).contains("--steps"), "{}", common::text(&refused));
}

/// A stage's export carries how far into the stage it is (`bredon export --run` of a
/// curriculum exports its newest stage), and a curriculum lost with its machine goes on
/// from that export with the rest of the stage: `--start-stage b --init-from EXPORT`
/// trains b's steps less those behind the export, keeps them across a resume, and its
/// next export counts both parts. An export at or past the end of the stage is refused
/// before anything is written.
#[test]
fn a_curriculum_goes_on_from_a_stage_export_with_the_rest_of_the_stage() {
    let dir = tempfile::tempdir().unwrap();
    let json =
        |p: PathBuf| -> serde_json::Value { serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap() };
    let step_of = |run: &Path| -> u64 {
        let latest = std::fs::read_to_string(run.join("latest")).unwrap();
        json(run.join("checkpoints").join(latest.trim()).join("state.json"))["step"].as_u64().unwrap()
    };
    let stage = |name: &str, key: &str, n: toml::Value| {
        let mut t = toml::Table::new();
        t.insert("name".into(), name.into());
        t.insert(key.into(), n);
        t
    };
    // Stage a of 15 steps, then stage b with `b`'s tables or keys.
    let curriculum_with = |sub: &str, b: toml::Table| {
        let d = dir.path().join(sub);
        std::fs::create_dir_all(&d).unwrap();
        let stages = vec![toml::Value::Table(stage("a", "steps", 15.into())), toml::Value::Table(b)];
        TinyConfig::new(0).top("stage", stages).write(&d)
    };
    let curriculum = |sub: &str, b: (&str, toml::Value)| curriculum_with(sub, stage("b", b.0, b.1));
    let inspect = |model: &Path| -> serde_json::Value {
        let out = bredon().arg("inspect").arg(model).args(["--json", "--positions", "0"]).output().unwrap();
        assert!(out.status.success(), "{}", common::text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };

    // The first machine: stage b stops after one generation, its export says how far.
    let first = dir.path().join("first");
    checked(&mut train(&curriculum("c1", ("generations", 1.into())), &first, &[]));
    let export = dir.path().join("b.bredon");
    let out = bredon().arg("export").arg("--run").arg(&first).arg("--out").arg(&export).output().unwrap();
    let text = common::text(&out);
    assert!(out.status.success() && text.contains("is a curriculum: exporting its newest stage"), "{text}");
    let done_b = step_of(&first.join("stages/02-b")) - 15;
    assert!(done_b > 0, "{text}");
    let carried = inspect(&export)["stage"].clone();
    assert_eq!((carried["name"].as_str(), carried["steps"].as_u64()), (Some("b"), Some(done_b)), "{carried}");
    let carried_minutes = carried["minutes"].as_f64().unwrap();
    assert!(carried_minutes > 0.0, "{carried}");

    // The second machine: b is 10 steps longer than the export got; only those 10 train.
    // The export names its stage, so the curriculum begins at b without --start-stage.
    let c2 = curriculum("c2", ("steps", (done_b as i64 + 10).into()));
    let second = dir.path().join("second");
    let err = checked_err(&mut train(&c2, &second, &["--init-from", export.to_str().unwrap()]));
    assert!(err.contains("was trained inside stage 2/2 b: the curriculum begins there"), "{err}");
    assert!(err.contains("stage 1/2 a: skipped") && !err.contains("[stage 1/2"), "{err}");
    assert!(err.contains(&format!("going on from {}: {done_b} steps, 1 generations", export.display())), "{err}");
    assert!(err.contains(&format!("starting (until {} steps; {done_b} steps", done_b + 10)), "{err}");
    let b = second.join("stages/02-b");
    assert_eq!(step_of(&b), 15 + done_b + 10, "{err}");
    assert_eq!(json(b.join("init.json"))["stage"], carried);
    let done = json(b.join("stage-done.json"));
    let latest_dir = b.join("checkpoints").join(std::fs::read_to_string(b.join("latest")).unwrap().trim());
    let own = json(latest_dir.join("state.json"))["elapsed_secs"].as_f64().unwrap() / 60.0;
    let close = |a: &serde_json::Value, b: f64| (a.as_f64().unwrap() - b).abs() < 1e-6;
    assert!(close(&done["stage_minutes"], carried_minutes + own), "{done} {carried_minutes} + {own}");
    assert!(close(&done["total_minutes"], carried_minutes + own), "the export's minutes count in all: {done}");
    let first_line =
        json_line(std::fs::read_to_string(b.join("logs/generations.jsonl")).unwrap().lines().next().unwrap());
    let trained = first_line["step"].as_u64().unwrap() - (15 + done_b);
    assert_eq!(first_line["to_go"]["steps"].as_u64(), Some(10 - trained), "{first_line}");
    // A resume counts the carried steps too: with the marker gone, nothing more trains.
    let latest = std::fs::read_to_string(b.join("latest")).unwrap();
    std::fs::remove_file(b.join("stage-done.json")).unwrap();
    checked(bredon().arg("train").arg("--run").arg(&second).arg("--quiet"));
    assert_eq!(std::fs::read_to_string(b.join("latest")).unwrap(), latest);
    assert!(b.join("stage-done.json").is_file());
    // The next export, of the checkpoint by a relative path, counts both machines' part.
    let again = dir.path().join("b2.bredon");
    let relative = format!("checkpoints/{}", latest.trim());
    checked(bredon().current_dir(&b).arg("export").arg(relative).arg("--out").arg(&again));
    let both = inspect(&again)["stage"].clone();
    let generations = latest.trim().trim_start_matches("gen-").parse::<u64>().unwrap();
    assert_eq!(both["steps"].as_u64(), Some(done_b + 10), "{both}");
    assert_eq!(both["generations"].as_u64(), Some(1 + generations), "{both}");

    // A stage of the same name that trains another network (2 blocks, not 1) is not the
    // stage the export was inside: refused by name, before anything is written, without
    // --start-stage; with it, the stage starts from the export and trains all of itself.
    let mut b2 = stage("b", "steps", 5.into());
    b2.insert("net".into(), toml::Value::Table([("blocks".to_string(), 2.into())].into_iter().collect()));
    let other = curriculum_with("c4", b2);
    let fourth = dir.path().join("fourth");
    let out = train(&other, &fourth, &["--init-from", export.to_str().unwrap()]).output().unwrap();
    let text = common::text(&out);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("was trained inside a stage named b, but not this curriculum's stage 2/2 b"), "{text}");
    assert!(text.contains("the model is a 3x3 b1c16 network, the stage trains a 3x3 b2c16 one"), "{text}");
    assert!(!fourth.exists(), "a refused start writes nothing");
    let err =
        checked_err(&mut train(&other, &fourth, &["--start-stage", "b", "--init-from", export.to_str().unwrap()]));
    assert!(err.contains("stage 2/2 b: starting (until 5 steps)"), "{err}");
    assert!(!err.contains("going on from"), "nothing of another stage's progress counts: {err}");
    assert_eq!(step_of(&fourth.join("stages/02-b")), 15 + done_b + 5, "{err}");

    // An export that has done the whole stage, by its steps, generations or minutes, is
    // refused, naming the stage.
    let limits = [
        ("steps", toml::Value::from(done_b as i64)),
        ("generations", 1.into()),
        ("minutes", (carried_minutes / 2.0).into()),
    ];
    for (i, (key, limit)) in limits.into_iter().enumerate() {
        let config = curriculum(&format!("c3-{i}"), (key, limit));
        let third = dir.path().join(format!("third-{i}"));
        let out =
            train(&config, &third, &["--start-stage", "b", "--init-from", export.to_str().unwrap()]).output().unwrap();
        let text = common::text(&out);
        assert!(!out.status.success() && text.contains("of stage b, which runs until"), "{key}: {text}");
        assert!(text.contains("last stage"), "{text}");
        assert!(!third.exists(), "a refused start writes nothing");
    }
}

/// `[eval.anchor]`: every checkpoint plays an outside engine over TEI (here `bredon tei`
/// itself, a real engine process) and the run's Elo is fitted on that engine's scale.
#[test]
fn an_outside_anchor_rates_each_checkpoint_on_its_scale() {
    let dir = tempfile::tempdir().unwrap();
    let engine = format!("tei:{} tei;name=bredon-tei;nodes=16", env!("CARGO_BIN_EXE_bredon"));
    let mut anchor = toml::Table::new();
    anchor.insert("player".into(), engine.into());
    anchor.insert("every".into(), 1.into());
    anchor.insert("games".into(), 2.into());
    let config = TinyConfig::new(2).set("eval", "anchor", anchor).write(dir.path());
    let run = dir.path().join("run");
    let out = train(&config, &run, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    // "anchor: gen-0001 vs bredon-tei: 50.0% over 2 games (1-0-1), Elo +0 [-400, +400] on bredon-tei's scale"
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("anchor: ")).collect();
    let played: Vec<&str> = lines.iter().map(|l| l.split_whitespace().nth(1).unwrap()).collect();
    assert!(played.contains(&"gen-0001") && played.contains(&"gen-0002"), "{stderr}");
    for l in &lines {
        assert!(
            l.contains("vs bredon-tei: ") && l.contains(" over 2 games ") && l.ends_with("on bredon-tei's scale"),
            "{l}"
        );
    }
    let anchor_dir = run.join("arena").join("anchor");
    let records = bredon_arena::load_records(&anchor_dir.join("results.jsonl")).unwrap();
    assert_eq!(records.len(), 2 * lines.len(), "{records:?}");
    for r in &records {
        assert!(r.white == "bredon-tei" || r.black == "bredon-tei", "{r:?}");
        assert!(!matches!(r.termination, bredon_arena::Termination::Forfeit { .. }), "{r:?}");
        assert_eq!(r.size, 3);
    }
    // The fit rates the anchor at 0, and the curve has a point per checkpoint that played.
    let ratings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(anchor_dir.join("ratings.json")).unwrap()).unwrap();
    assert_eq!(ratings["anchor"], "bredon-tei", "{ratings}");
    let curve = std::fs::read_to_string(anchor_dir.join("elo-curve.csv")).unwrap();
    for g in &played {
        assert!(curve.lines().any(|l| l.starts_with(&format!("{g},"))), "{g} missing from:\n{curve}");
    }
    assert!(anchor_dir.join("elo.svg").is_file());
}

/// An anchor that cannot start stops `bredon train` before the first generation, naming
/// the config key.
#[test]
fn a_missing_anchor_engine_is_refused_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let mut anchor = toml::Table::new();
    anchor.insert("player".into(), "tei:/nonexistent/tei-engine;name=outside".into());
    let config = TinyConfig::new(1).set("eval", "anchor", anchor).write(dir.path());
    let run = dir.path().join("run");
    let out = train(&config, &run, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("[eval.anchor] player") && stderr.contains("/nonexistent/tei-engine"), "{stderr}");
    assert!(!run.join("checkpoints").join("gen-0001").exists(), "trained despite the bad anchor");
}

fn json_line(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap()
}
