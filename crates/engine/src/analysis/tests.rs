//! The engine through its line interface: answers, errors naming fields, the queue.

use super::query::DEFAULT_MULTIPV;
use super::*;
use serde_json::Value;
use std::io::Cursor;
use std::path::Path;

/// A writer whose bytes the test reads after [`serve`] returns.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every line `engine` answers to `input`, parsed.
fn exchange(engine: &AnalysisEngine, input: &str) -> Vec<Value> {
    let out = Shared::default();
    serve(engine, Cursor::new(input.to_string().into_bytes()), out.clone()).unwrap();
    let bytes = out.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap().lines().map(|l| serde_json::from_str(l).expect(l)).collect()
}

fn by_id<'a>(lines: &'a [Value], id: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["id"] == id).collect()
}

/// The shipped 4x4 network (WDL and auxiliary heads).
fn shipped_4x4() -> AnalysisModel {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped/4x4.bredon");
    let (net, meta) = bredon_nn::load_exported(&path).unwrap();
    AnalysisModel {
        name: "4x4.bredon".into(),
        evaluator: Arc::new(bredon_infer::NetEvaluator::new(net.clone(), meta.size)),
        heads: Some(Arc::new(Heads::new(net, meta.size))),
    }
}

const ROAD_IN_ONE: &str = "x4/x4/2,2,2,x/1,1,1,x 1 4";

#[test]
fn bad_queries_get_errors_naming_the_field_and_the_next_query_is_answered() {
    let engine = AnalysisEngine::new([]);
    let input = [
        "{\"id\": \"broken\", ",
        r#"{"id":"typo","tps":"x3/x3/x3 1 1","komy":2}"#,
        r#"{"id":"tps","tps":"x3/x3/q3 1 1"}"#,
        r#"{"id":"komi","tps":"x3/x3/x3 1 1","komi":2.3}"#,
        "",
        r#"{"id":"ok","tps":"x3/x3/x3 1 1","visits":20,"multipv":3}"#,
    ]
    .join("\n");
    let lines = exchange(&engine, &input);
    assert_eq!(lines.len(), 5, "{lines:?}");
    let broken = lines.iter().find(|l| l["id"].is_null()).expect("the malformed line's error");
    assert!(broken["error"].as_str().unwrap().starts_with("malformed JSON"), "{broken}");
    assert!(broken["field"].is_null());
    for (id, field, needle) in
        [("typo", "komy", "unknown field `komy`"), ("tps", "tps", "bad TPS"), ("komi", "komi", "multiple of 0.5")]
    {
        let e = by_id(&lines, id);
        assert_eq!(e.len(), 1, "{lines:?}");
        assert_eq!(e[0]["field"], field, "{}", e[0]);
        assert!(e[0]["error"].as_str().unwrap().contains(needle), "{}", e[0]);
    }
    let ok = by_id(&lines, "ok");
    assert_eq!(ok.len(), 1);
    let a = ok[0];
    assert!(a.get("error").is_none(), "{a}");
    assert_eq!(a["model"], "uniform", "no 3x3 network was given");
    assert_eq!(a["visits"], 20);
    assert_eq!(a["moves"].as_array().unwrap().len(), 3);
    assert_eq!(a["moves"][0]["move"], a["best_move"]);
    assert!(a["wdl"].is_null() && a["margin"].is_null(), "the uniform evaluator has no such heads: {a}");
    assert!(a.get("ownership").is_none(), "not asked for: {a}");
    assert!(a.get("ply").is_none(), "a TPS has no ply: {a}");
}

#[test]
fn a_road_in_one_is_found_proven_and_reported_from_each_side() {
    let engine = AnalysisEngine::new([]);
    let q = |id: &str, perspective: &str| {
        format!(r#"{{"id":"{id}","tps":"{ROAD_IN_ONE}","visits":50,"perspective":"{perspective}"}}"#)
    };
    let lines = exchange(&engine, &[q("w", "white"), q("b", "black"), q("m", "side_to_move")].join("\n"));
    let (w, b, m) = (by_id(&lines, "w")[0], by_id(&lines, "b")[0], by_id(&lines, "m")[0]);
    assert_eq!(w["best_move"], "d1", "{w}");
    assert_eq!(w["pv"][0], "d1");
    assert_eq!((&w["proven"], &w["value"], &w["perspective"]), (&"win".into(), &1.0.into(), &"white".into()));
    assert_eq!((&b["proven"], &b["value"], &b["perspective"]), (&"loss".into(), &(-1.0).into(), &"black".into()));
    assert_eq!(m["perspective"], "white", "white is to move");
    assert_eq!(m["to_move"], "white");
    assert_eq!(w["moves"][0]["move"], "d1");
    assert_eq!(w["moves"][0]["pv"][0], "d1");
    assert_eq!((&w["moves"][0]["proven"], &b["moves"][0]["proven"]), (&"win".into(), &"loss".into()));
    assert_eq!(w["proven_plies"], 1, "d1 ends the game: {w}");
    assert_eq!(w["wdl"], serde_json::json!([1.0, 0.0, 0.0]), "a proof is a certain win: {w}");
    assert_eq!(b["wdl"], serde_json::json!([0.0, 0.0, 1.0]));
}

#[test]
fn a_game_is_answered_ply_by_ply_in_the_order_asked_and_its_end_is_exact() {
    let engine = AnalysisEngine::new([]);
    // White's first flat is on a3 (each side places the other's first); 4. c1 makes a
    // road on the first rank.
    let ptn = r#"[Size \"3\"]\n[Komi \"0.5\"]\n\n1. c3 a3\n2. a1 b3\n3. b1 a2\n4. c1 R-0\n"#;
    let lines = exchange(&engine, &format!(r#"{{"id":"g","ptn":"{ptn}","plies":[7,2],"visits":30,"ownership":true}}"#));
    assert_eq!(lines.iter().map(|l| l["ply"].as_u64().unwrap()).collect::<Vec<_>>(), vec![7, 2]);
    let end = &lines[0];
    assert_eq!(end["result"], "R-0", "{end}");
    assert_eq!((&end["proven"], &end["value"]), (&"win".into(), &1.0.into()));
    assert_eq!(end["wdl"], serde_json::json!([1.0, 0.0, 0.0]));
    assert_eq!(end["komi"], 0.5);
    // White a1 b1 c1 a3, black a2 b3 c3: 4 - 3 - 0.5.
    assert_eq!(end["margin"], 0.5);
    assert_eq!(end["ownership"], serde_json::json!([1.0, 1.0, 1.0, -1.0, 0.0, 0.0, 1.0, -1.0, -1.0]));
    assert!(end["best_move"].is_null() && end["moves"].as_array().unwrap().is_empty());
    let two = &lines[1];
    assert_eq!(two["to_move"], "white");
    assert_eq!(two["tps"], "1,x,2/x3/x3 1 2");
    assert!(two["best_move"].is_string());
    assert!(two["ownership"].is_null(), "asked for, but the uniform evaluator has none: {two}");
    // All plies by default.
    let lines = exchange(&engine, &format!(r#"{{"id":"g","ptn":"{ptn}","visits":5}}"#));
    assert_eq!(lines.iter().map(|l| l["ply"].as_u64().unwrap()).collect::<Vec<_>>(), (0..=7).collect::<Vec<_>>());
}

#[test]
fn a_query_arriving_during_a_search_is_read_at_once() {
    let engine = AnalysisEngine::new([]);
    // The second line is malformed: its error comes out while the first query searches.
    let input = r#"{"id":"slow","tps":"x6/x6/x6/x6/x6/x6 1 1","movetime_ms":600}
{"id":"bad","tps":"x6/x6/x6/x6/x6/x6 1 1","visits":0}
{"id":"next","tps":"x6/x6/x6/x6/x6/x6 1 1","visits":10}
"#;
    let lines = exchange(&engine, input);
    let ids: Vec<&str> = lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["bad", "slow", "next"], "{lines:?}");
    assert_eq!(lines[0]["field"], "visits");
    assert!(lines[1]["time_ms"].as_u64().unwrap() >= 500, "{}", lines[1]);
}

#[test]
fn a_network_gives_wdl_margin_and_ownership_from_the_asked_side() {
    let engine = AnalysisEngine::new([(4, shipped_4x4())]);
    let tps = "x4/x,2,2,x/x,1,1,x/x4 1 3";
    let q = |id: &str, p: &str| {
        format!(r#"{{"id":"{id}","tps":"{tps}","komi":1,"visits":40,"ownership":true,"perspective":"{p}"}}"#)
    };
    let lines = exchange(&engine, &[q("w", "white"), q("b", "black")].join("\n"));
    let (w, b) = (by_id(&lines, "w")[0], by_id(&lines, "b")[0]);
    assert_eq!(w["model"], "4x4.bredon");
    assert_eq!(w["komi"], 1.0);
    let wdl: Vec<f64> = w["wdl"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(wdl.len(), 3);
    assert!((wdl.iter().sum::<f64>() - 1.0).abs() < 1e-3, "{wdl:?}");
    let own: Vec<f64> = w["ownership"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(own.len(), 16);
    assert!(own.iter().all(|o| (-1.0..=1.0).contains(o)));
    assert!(w["margin"].as_f64().unwrap().abs() <= 16.0);
    // The same search from black's side: every number flips, WDL's win and loss swap.
    let close = |a: &Value, b: &Value| (a.as_f64().unwrap() + b.as_f64().unwrap()).abs() < 1e-5;
    assert!(close(&w["value"], &b["value"]) && close(&w["margin"], &b["margin"]), "{w}\n{b}");
    assert_eq!((&w["wdl"][0], &w["wdl"][1]), (&b["wdl"][2], &b["wdl"][1]));
    for sq in 0..16 {
        assert!(close(&w["ownership"][sq], &b["ownership"][sq]));
    }
    assert_eq!(w["best_move"], b["best_move"]);
    let moves = w["moves"].as_array().unwrap();
    assert_eq!(moves.len(), DEFAULT_MULTIPV);
    let priors: f64 = moves.iter().map(|m| m["prior"].as_f64().unwrap()).sum();
    assert!(priors > 0.0 && priors <= 1.0 + 1e-4, "{priors}");
    // Each visited move has its own value, margin and line.
    for (m, mb) in moves.iter().zip(b["moves"].as_array().unwrap()) {
        if m["visits"].as_u64().unwrap() > 0 {
            assert!(close(&m["value"], &mb["value"]) && close(&m["margin"], &mb["margin"]), "{m}\n{mb}");
            assert_eq!(m["pv"][0], m["move"]);
        }
    }
    assert_eq!(moves[0]["pv"], w["pv"], "the best move's line is the principal variation");
    // A size without a network: the uniform evaluator, said so.
    let lines = exchange(&engine, r#"{"id":"five","tps":"x5/x5/x5/x5/x5 1 1","visits":5,"ownership":true}"#);
    assert_eq!(lines[0]["model"], "uniform");
    assert!(lines[0]["ownership"].is_null());
}
