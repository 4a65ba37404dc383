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
        let expected =
            format!("{}: {} {}", file.display(), replay.result().map_or("0-0", |r| r.ptn()), replay.moves().len());
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

#[test]
fn ptn_check_tolerates_quirks_and_always_prints_the_computed_result() {
    let dir = tempfile::tempdir().unwrap();
    // A puzzle whose TPS starts at move 2 but whose moves restart at `1.`.
    let puzzle = dir.path().join("puzzle.ptn");
    std::fs::write(&puzzle, "[TPS \"2,x2/x,1,x/x3 1 2\"]\n1. c1 a1\n").unwrap();
    // A Result tag the moves do not give (white's road on row 1 at ply 5).
    let wrong = dir.path().join("wrong-result.ptn");
    std::fs::write(&wrong, "[Size \"3\"]\n[Result \"0-R\"]\n1. c3 a1 2. b1 c2 3. c1\n").unwrap();
    let out = bredon().args(["ptn", "check"]).arg(&puzzle).arg(&wrong).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [format!("{}: 0-0 2", puzzle.display()), format!("{}: R-0 5", wrong.display())]
    );
    assert!(
        stderr.contains("puzzle.ptn: warning: line 2, column 1: found move number \"1.\" where 2. was expected"),
        "{stderr}"
    );
    assert!(stderr.contains("wrong-result.ptn: warning: the Result is 0-R but the moves give R-0"), "{stderr}");
    // --strict turns the warnings into a failure; the results are still printed.
    let out = bredon().args(["ptn", "check", "--strict"]).arg(&puzzle).arg(&wrong).output().unwrap();
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    // An unreadable file fails the run, but the other files are still checked.
    let missing = dir.path().join("missing.ptn");
    let out = bredon().args(["ptn", "check"]).arg(&missing).arg(&wrong).output().unwrap();
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("{}: R-0 5", wrong.display()));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.ptn: error: cannot read"));
}
