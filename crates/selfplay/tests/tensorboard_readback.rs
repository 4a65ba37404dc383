//! Reads our TensorBoard event files back with the real TensorBoard package.
//! Needs `python3 -m pip install tensorboard` (`.ci/run` installs it). Without the
//! package the test is reported as ignored, with a line saying why; in CI (`CI=1`) it runs
//! and fails. (A test harness of its own, `libtest-mimic`, so that a missing package is
//! counted as ignored rather than as a pass.)

use bredon_selfplay::tb::TbLogger;
use libtest_mimic::{Arguments, Failed, Trial};
use std::process::Command;

const READER: &str = r#"
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1])
acc.Reload()
for tag in sorted(acc.Tags()["scalars"]):
    for e in acc.Scalars(tag):
        print(f"{tag} {e.step} {e.value:.4f}")
"#;

/// What the test needs, and how to get it.
const NEEDS: &str = "the Python tensorboard package (python3 -m pip install tensorboard)";

fn main() {
    let args = Arguments::from_args();
    let have = Command::new("python3").args(["-c", "import tensorboard"]).status().is_ok_and(|s| s.success());
    let ignored = !have && !bredon_rules::testdata::in_ci();
    if ignored {
        eprintln!("event_file_reads_back_in_tensorboard: ignored, {NEEDS} is missing; in CI it runs and fails");
    }
    let trial = Trial::test("event_file_reads_back_in_tensorboard", move || {
        if !have {
            return Err(Failed::from(format!("{NEEDS} is missing, and CI must run this test")));
        }
        event_file_reads_back_in_tensorboard();
        Ok(())
    })
    .with_ignored_flag(ignored);
    libtest_mimic::run(&args, vec![trial]).exit();
}

fn event_file_reads_back_in_tensorboard() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = TbLogger::open(dir.path());
    for step in 0..5u64 {
        log.scalars(step, &[("loss/policy", 2.0 - step as f64 * 0.25), ("lr", 0.01)]);
    }
    log.close();
    let out = Command::new("python3").args(["-c", READER]).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 10, "{text}");
    assert!(lines.contains(&"loss/policy 4 1.0000"), "{text}");
    assert!(lines.contains(&"lr 0 0.0100"), "{text}");
}
