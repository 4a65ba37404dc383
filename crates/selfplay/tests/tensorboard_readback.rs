//! Reads our TensorBoard event files back with the real TensorBoard package.
//! Needs `python3 -m pip install tensorboard` (`.ci/run` installs it); outside CI the test
//! is skipped with a SKIPPED line when the package is missing, in CI (`CI=1`) it fails.

use bredon_selfplay::tb::TbLogger;
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

#[test]
fn event_file_reads_back_in_tensorboard() {
    let have = Command::new("python3").args(["-c", "import tensorboard"]).status().is_ok_and(|s| s.success());
    if !have {
        bredon_rules::testdata::skip_or_fail(
            "the TensorBoard read-back",
            "the Python tensorboard package",
            "python3 -m pip install tensorboard",
        );
        return;
    }
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
