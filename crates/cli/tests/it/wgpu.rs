//! `bredon` on burn's wgpu backend, end to end (built with `--features wgpu`; in CI on
//! Mesa's lavapipe Vulkan driver, which runs on the CPU). Without an adapter these tests
//! fail: there is no skip.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common;
use common::bredon;

fn wait_for(child: &mut Child, what: &str, cond: impl Fn() -> bool) {
    common::wait_for(child, what, Duration::from_secs(600), cond)
}

fn checked(cmd: &mut Command) -> (String, String) {
    let out = cmd.output().unwrap();
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(out.status.success(), "{cmd:?} failed:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The tests' tiny 3x3 config on wgpu, small enough for lavapipe (a few steps of 32 a
/// generation, the WDL and auxiliary heads on), `generations` of them.
fn tiny_config(dir: &Path, generations: u32) -> PathBuf {
    common::TinyConfig::new(generations)
        .set("net", "value_hidden", 16)
        .set("net", "policy_filters", 4)
        .set("net", "wdl", true)
        .set("net", "aux", true)
        .set("selfplay", "games_per_generation", 16)
        .set("selfplay", "concurrent_games", 8)
        .set("selfplay", "max_plies", 30)
        .set("train", "batch_size", 32)
        .set("train", "max_steps_per_generation", 6)
        .set("train", "window_min", 200)
        .set("train", "optimizer_states_kept", 0)
        .set("schedule", "seed", 3)
        .set("device", "name", "wgpu")
        .write(dir)
}

fn log_lines(run: &Path) -> usize {
    std::fs::read_to_string(run.join("logs/generations.jsonl")).map(|t| t.lines().count()).unwrap_or(0)
}

/// A run on wgpu (the config's `[device]`) killed with SIGKILL after its first
/// checkpoint, resumed on the CPU (`--device cpu` overrides the config) and back on wgpu;
/// its export then plays on the CPU and on wgpu with the same evaluations.
#[test]
fn a_3x3_run_trains_on_wgpu_survives_a_kill_moves_between_devices_and_its_export_plays_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let config = tiny_config(dir.path(), 3);
    let train = |extra: &[&str]| {
        let mut c = bredon();
        c.arg("train").arg("--config").arg(&config).arg("--run").arg(&run).arg("--quiet").args(extra);
        c
    };
    // On wgpu until the first checkpoint, then SIGKILL.
    let ck1 = run.join("checkpoints/gen-0001/state.json");
    let mut child = train(&[]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_for(&mut child, "checkpoint gen-0001", || ck1.is_file());
    child.kill().unwrap();
    child.wait().unwrap();
    // Resumed on the CPU for one more generation.
    let (_, err) = checked(&mut train(&["--device", "cpu", "--generations", "2"]));
    assert!(!err.contains("device: wgpu"), "{err}");
    assert_eq!(std::fs::read_to_string(run.join("latest")).unwrap().trim(), "gen-0002");
    // Back on wgpu (from the config) to the end.
    let (_, err) = checked(&mut train(&[]));
    assert!(err.contains("device: wgpu"), "the trainer does not say it runs on wgpu:\n{err}");
    assert_eq!(std::fs::read_to_string(run.join("latest")).unwrap().trim(), "gen-0003");
    assert_eq!(log_lines(&run), 3, "one log line per generation");
    checked(bredon().arg("check").arg("--run").arg(&run));

    // The export is device-independent: it plays on the CPU (fast and burn paths) and on
    // wgpu (burn's forward pass and Bredon's WGSL kernels), and the four analyses of a game
    // agree on every value.
    let model = dir.path().join("m.bredon");
    checked(bredon().arg("export").arg("--run").arg(&run).arg("-o").arg(&model));
    let game = dir.path().join("g.ptn");
    std::fs::write(&game, "[Size \"3\"]\n\n1. a1 c3 2. b2 b3 3. c2 a3\n").unwrap();
    let analyse = |extra: &[&str]| {
        let (out, _) =
            checked(bredon().arg("analyse").arg(&game).arg("--model").arg(&model).args(["--visits", "1"]).args(extra));
        out
    };
    // The "white" column of every ply: a value, or won/lost/drawn when proven.
    let values = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.split_whitespace().next().is_some_and(|w| w.parse::<usize>().is_ok()))
            .map(|l| l.split_whitespace().nth(2).unwrap().to_string())
            .collect()
    };
    let fast = analyse(&["--device", "cpu", "--inference", "fast"]);
    let burn_cpu = analyse(&["--device", "cpu", "--inference", "burn"]);
    let gpu = analyse(&["--device", "wgpu", "--inference", "burn"]);
    let wgsl = analyse(&["--device", "wgpu", "--inference", "wgsl"]);
    eprintln!("cpu fast:\n{fast}\nwgpu:\n{gpu}\nwgsl:\n{wgsl}");
    let (a, b, c, d) = (values(&fast), values(&burn_cpu), values(&gpu), values(&wgsl));
    assert!(a.len() >= 6, "no values found in:\n{fast}");
    assert_eq!((a.len(), b.len(), d.len()), (c.len(), c.len(), c.len()));
    for (i, (((x, y), z), w)) in a.iter().zip(&b).zip(&c).zip(&d).enumerate() {
        match (x.parse::<f64>(), y.parse::<f64>(), z.parse::<f64>(), w.parse::<f64>()) {
            (Ok(x), Ok(y), Ok(z), Ok(w)) => {
                assert!(
                    (x - y).abs() <= 0.011 && (x - z).abs() <= 0.011 && (x - w).abs() <= 0.011,
                    "ply {}: values {x} (fast) {y} (burn cpu) {z} (wgpu) {w} (wgsl)",
                    i + 1
                )
            }
            _ => assert!(x == y && x == z && x == w, "ply {}: {x} (fast) {y} (burn cpu) {z} (wgpu) {w} (wgsl)", i + 1),
        }
    }
}

/// `--device` names a backend and an adapter that exist, or the command stops with a
/// message that says what is there.
#[test]
fn a_missing_adapter_is_a_clear_error_naming_the_adapters() {
    let out =
        bredon().args(["bench", "train", "--size", "3", "--seconds", "0", "--device", "wgpu:7"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no wgpu:7 adapter") && err.contains("adapters seen: wgpu:0"), "{err}");
    let (list, _) = checked(bredon().arg("devices"));
    assert!(list.lines().any(|l| l.starts_with("wgpu:0")), "{list}");
}

/// `bench train` on the device ends with a step timed phase by phase: every phase with its
/// wall time, the calling thread's and the process's CPU time, and the step's total.
#[test]
fn bench_train_prints_each_phase_of_a_step_on_the_device() {
    let (out, _) = checked(bredon().args([
        "--device",
        "wgpu",
        "bench",
        "train",
        "--size",
        "3",
        "--blocks",
        "1",
        "--channels",
        "8",
        "--batch",
        "8",
        "--seconds",
        "0",
    ]));
    // On a GPU too the step's convolutions are burn's conv2d by default (the faster on an
    // H200, docs/gpu.md).
    assert!(out.lines().any(|l| l.starts_with("train 3x3 ") && l.contains(" on wgpu, direct convolutions: ")), "{out}");
    for phase in ["prepare", "forward", "backward", "update", "step"] {
        let line = out.lines().find(|l| l.trim_start().starts_with(&format!("{phase} "))).unwrap_or_else(|| {
            panic!("no {phase} line in:\n{out}");
        });
        let numbers: Vec<f64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        assert!(numbers.len() >= 2 && numbers.iter().all(|&x| x >= 0.0), "{line}");
        if cfg!(unix) {
            assert!(line.contains(" thread ") && line.contains(" process"), "{line}");
        }
        if phase == "forward" || phase == "backward" || phase == "step" {
            assert!(numbers[0] > 0.0, "{phase} took no time: {line}");
        }
    }
}

/// `bench nn` on the device measures the WGSL kernels in each asked-for arithmetic of the
/// trunk side by side, says which one `auto` chose, names the one the adapter lacks
/// (lavapipe has no cooperative matrices), and `--compare-cpu` holds each to the fast path.
#[test]
fn bench_nn_measures_the_wgsl_kernels_in_each_arithmetic() {
    let (out, _) = checked(bredon().args([
        "--device",
        "wgpu",
        "bench",
        "nn",
        "--sizes",
        "4",
        "--blocks",
        "1",
        "--channels",
        "16",
        "--batches",
        "8",
        "--seconds",
        "0",
        "--arithmetic",
        "f32,f16-pairs,tensor",
        "--compare-cpu",
    ]));
    let row = |a: &str| out.lines().find(|l| l.starts_with("4x4 ") && l.split_whitespace().nth(3) == Some(a));
    for a in ["f32", "f16-pairs"] {
        let line = row(a).unwrap_or_else(|| panic!("no {a} row in:\n{out}"));
        let rates: Vec<f64> = line.split_whitespace().skip(4).take(2).map(|w| w.parse().unwrap()).collect();
        assert!(rates.len() == 2 && rates.iter().all(|&r| r > 0.0), "{line}");
        let compared = out.lines().find(|l| l.starts_with(&format!("4x4 wgsl {a} against the fast path:")));
        assert!(compared.is_some_and(|l| l.ends_with("within 1e-3")), "{a}: {out}");
    }
    assert!(row("f32").unwrap().ends_with("(auto)"), "{out}");
    let tensor = row("tensor").unwrap_or_else(|| panic!("no tensor row in:\n{out}"));
    assert!(tensor.contains("is not on this adapter: the adapter has no cooperative matrices"), "{tensor}");
    let bad = bredon().args(["bench", "nn", "--arithmetic", "bf16"]).output().unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success() && err.contains("unknown arithmetic \"bf16\""), "{err}");
}
