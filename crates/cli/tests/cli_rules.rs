//! End-to-end tests of the rules subcommands of the `bredon` binary.

use std::path::PathBuf;
use std::process::Command;

fn bredon() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bredon"))
}

fn games_dir() -> PathBuf {
    bredon_rules::testdata::shared_data_dir().expect("shared/data").join("games")
}

#[test]
fn perft_last_line_is_exact() {
    let out = bredon().args(["perft", "--size", "5", "--depth", "3"]).output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().last(), Some("perft 3 43320"));
    let out = bredon().args(["perft", "--tps", "x3/x3/x3 1 1", "--depth", "2"]).output().unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().last(), Some("perft 2 72"));
    let bad = bredon().args(["perft", "--tps", "x3/x3 1 1", "--depth", "2"]).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("rows"));
}

#[test]
fn ptn_check_reports_results_of_real_games() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(games_dir()).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    let out = bredon().arg("ptn").arg("check").args(&files).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), files.len());
    for (line, file) in stdout.lines().zip(&files) {
        let game = bredon_rules::notation::Ptn::parse(&std::fs::read_to_string(file).unwrap()).unwrap();
        let replay = game.replay().unwrap();
        let expected = format!(
            "{}: {} {}",
            file.display(),
            replay.result().map_or("0-0", |r| r.ptn()),
            replay.moves().len()
        );
        assert_eq!(line, expected);
    }
}

#[test]
fn ptn_check_names_file_line_and_move_of_an_illegal_move() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.ptn");
    std::fs::write(&f, "[Size \"5\"]\n1. a1 e5 2. a1+ b2\n").unwrap();
    let out = bredon().args(["ptn", "check"]).arg(&f).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.ptn") && err.contains("line 2") && err.contains("a1+"), "{err}");
}

#[test]
fn ptn_show_prints_tps_at_a_ply() {
    let f = games_dir().join("benwo-v1.ptn");
    let out = bredon().args(["ptn", "show", "--ply", "0", "--tps"]).arg(&f).output().unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), "x5/x5/x5/x5/x5 1 1");
    let out = bredon().args(["ptn", "show", "--ply", "9999"]).arg(&f).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("past the end"));
}
