//! `bredon analyse --json`, the JSON analysis engine, as a process: the Python client of
//! `docs/examples/analyse.py` run as it is against the built binary, and bad queries
//! answered one by one with errors naming the field while the process goes on.

use crate::common;

use bredon_rules::testdata::skip_or_fail;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

#[test]
fn the_python_example_runs_against_the_binary() {
    const TEST: &str = "the_python_example_runs_against_the_binary";
    if !Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return skip_or_fail(TEST, "python3", "apt-get install python3");
    }
    let out = Command::new("python3")
        .arg(common::repo_file("docs/examples/analyse.py"))
        .arg(env!("CARGO_BIN_EXE_bredon"))
        .current_dir(common::repo_file(""))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("all answers as expected"), "{stdout}");
    assert!(stdout.contains("typo: error in field 'komy'"), "{stdout}");
}

#[test]
fn each_bad_query_gets_an_error_naming_its_field_and_the_next_is_answered() {
    let mut engine = common::bredon()
        .args(["analyse", "--json"])
        .current_dir(common::repo_file(""))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = engine.stdin.take().unwrap();
    let mut lines = BufReader::new(engine.stdout.take().unwrap()).lines();
    let mut ask = |line: &str| -> Value {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        serde_json::from_str(&lines.next().expect("an answer line").unwrap()).unwrap()
    };
    let good = r#"{"id":"good","tps":"x4/x4/2,2,2,x/1,1,1,x 1 4","visits":16,"ownership":true}"#;
    let bad = [
        // Not JSON: no id or field can be read.
        (r#"{"id":"json","tps":"#, None, None),
        (r#"{"id":"field","tps":"x4/x4/x4/x4 1 1","visit":16}"#, Some("field"), Some("visit")),
        (r#"{"id":"tps","tps":"x4/x4/x4/x9 1 1"}"#, Some("tps"), Some("tps")),
        (r#"{"id":"komi","tps":"x4/x4/x4/x4 1 1","komi":1.2}"#, Some("komi"), Some("komi")),
    ];
    for (line, id, field) in bad {
        let e = ask(line);
        assert!(e["error"].is_string(), "{line}: {e}");
        assert_eq!((e["id"].as_str(), e["field"].as_str()), (id, field), "{line}: {e}");
        // The engine is still there: the next query is answered.
        let a = ask(good);
        assert_eq!((&a["id"], &a["best_move"], &a["proven"]), (&"good".into(), &"d1".into(), &"win".into()), "{a}");
        assert_eq!(a["model"], "4x4.bredon", "the shipped 4x4 network: {a}");
        assert_eq!(a["ownership"].as_array().map(Vec::len), Some(16), "{a}");
    }
    // 7x7 and 8x8 have their own shipped models; 3x3 has none: the nearest size's network
    // without a layer sized by its board (5x5's: the 4x4 one is dense) carried there
    // answers, with its heads.
    let a = ask(r#"{"id":"seven","tps":"x7/x7/x7/x7/x7/x7/x7 1 1","visits":16,"ownership":true}"#);
    assert_eq!(a["model"], "7x7.bredon", "{a}");
    assert_eq!(a["ownership"].as_array().map(Vec::len), Some(49), "{a}");
    let a = ask(r#"{"id":"eight","tps":"x8/x8/x8/x8/x8/x8/x8/x8 1 1","visits":16,"ownership":true}"#);
    assert_eq!(a["model"], "8x8.bredon", "{a}");
    assert_eq!(a["ownership"].as_array().map(Vec::len), Some(64), "{a}");
    let a = ask(r#"{"id":"three","tps":"x3/x3/x3 1 1","visits":16,"ownership":true}"#);
    assert_eq!(a["model"], "5x5.bredon (a 5x5 network carried to 3x3)", "{a}");
    assert_eq!(a["ownership"].as_array().map(Vec::len), Some(9), "{a}");
    assert!(a["wdl"].is_array() && a["best_move"].is_string(), "{a}");
    drop(stdin);
    assert!(lines.next().is_none(), "nothing more after the end of input");
    assert!(engine.wait().unwrap().success());
}
