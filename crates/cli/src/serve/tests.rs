//! The API through the router (no socket): pages, games, searches, runs and every kind
//! of bad request.

use super::*;
use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use tower::ServiceExt;

fn app_with(runs: &[PathBuf]) -> Router {
    // No model directory: the `auto` engine is the uniform evaluator, fast and the same
    // on every machine.
    router(Arc::new(AppState::new(vec![], &[], runs, 2, bredon_infer::Compute::cpu()).unwrap()))
}

fn app() -> Router {
    app_with(&[])
}

async fn call(app: &Router, method: &str, uri: &str, body: Option<&str>) -> (StatusCode, Value) {
    let req = Request::builder().method(method).uri(uri);
    let req = match body {
        Some(b) => req.header("content-type", "application/json").body(Body::from(b.to_string())),
        None => req.body(Body::empty()),
    }
    .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
    let value =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, value)
}

/// Asserts a 4xx with a JSON error containing `needle`.
async fn refused(app: &Router, method: &str, uri: &str, body: Option<&str>, status: u16, needle: &str) {
    let (s, v) = call(app, method, uri, body).await;
    assert_eq!(s.as_u16(), status, "{method} {uri} {body:?}: {v}");
    let msg = v["error"].as_str().unwrap_or_else(|| panic!("{method} {uri}: no JSON error: {v}"));
    assert!(msg.contains(needle), "{method} {uri} {body:?}: {msg:?} lacks {needle:?}");
}

#[tokio::test]
async fn the_page_is_served_and_unknown_paths_are_404() {
    let app = app();
    let resp = app.clone().oneshot(Request::get("/").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers()[header::CONTENT_TYPE].to_str().unwrap().starts_with("text/html"));
    for path in ["/app.js", "/style.css"] {
        let resp = app.clone().oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
    }
    refused(&app, "GET", "/nope.html", None, 404, "no page or API at /nope.html").await;
    refused(&app, "GET", "/api/nothing", None, 404, "/api/nothing").await;
    refused(&app, "GET", "/api/game", None, 405, "method").await;
    let (s, v) = call(&app, "GET", "/api/info", None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["sizes"], json!([3, 4, 5, 6, 7, 8]));
}

#[tokio::test]
async fn a_game_comes_back_checked_with_every_position() {
    let app = app();
    let (s, v) =
        call(&app, "POST", "/api/game", Some(r#"{"size": 5, "half_komi": 4, "moves": ["a1", "d4", "Cb2"]}"#)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["positions"].as_array().unwrap().len(), 4);
    assert_eq!(v["positions"][3]["board"][6], "1C");
    assert_eq!(v["positions"][3]["to_move"], "black");
    assert!(v["ptn"].as_str().unwrap().contains("[Komi \"2\"]"), "{v}");
    assert!(v["positions"][3]["legal"].as_array().unwrap().iter().any(|m| m == "a1>"));
    // A pasted PTN with a result, and a TPS.
    let (s, v) =
        call(&app, "POST", "/api/game", Some(r#"{"text": "[Size \"3\"]\n\n1. a1 c3\n2. b1 c2\n3. c1 0-1"}"#)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["result"], "0-1");
    let (s, v) =
        call(&app, "POST", "/api/game", Some(r#"{"text": "x4/x4/2,2,2,x/1,1,1,x 1 4", "moves": ["d1"]}"#)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["result_text"], "White wins by road");
}

#[tokio::test]
async fn bad_games_are_400_with_the_reason() {
    let app = app();
    let bad = [
        ("{", "malformed JSON"),
        ("", "needs a JSON body"),
        (r#"{"size": 9}"#, "board size 9 is not supported"),
        (r#"{"size": 2}"#, "board size 2"),
        (r#"{"size": "five"}"#, "malformed JSON"),
        (r#"{"size": 5, "colour": "red"}"#, "unknown field `colour`"),
        (r#"{"size": 5, "half_komi": 11}"#, "half_komi 11 is out of range"),
        (r#"{"size": 5, "half_komi": 1000}"#, "malformed JSON"),
        (r#"{"size": 3, "moves": ["a1", "a1"]}"#, "move 2 \"a1\" is illegal: cannot place on an occupied square"),
        (r#"{"size": 3, "moves": ["a1", "Cb1"]}"#, "move 2 \"Cb1\" is illegal"),
        (r#"{"size": 3, "moves": ["q7"]}"#, "move 1 \"q7\""),
        (r#"{"text": "[Size \"3\"]\n\n1. a1 a1"}"#, "PTN: "),
        (r#"{"text": "[Size \"12\"]\n\n1. a1"}"#, "PTN: "),
        (r#"{"text": "x3/x3 1 1"}"#, "TPS"),
        (r#"{"text": "x5/x5/x5/x5/x5 1 1", "size": 4}"#, "is 5x5 but size is 4"),
        (r#"{"tps": "x3/x3/x3 1 1", "text": "x"}"#, "not both"),
        (r#"{}"#, "needs a `size`"),
    ];
    for (body, needle) in bad {
        refused(&app, "POST", "/api/game", Some(body), 400, needle).await;
    }
    let huge = format!(r#"{{"text": "{}"}}"#, "x".repeat(MAX_BODY + 10));
    refused(&app, "POST", "/api/game", Some(&huge), 413, "too large").await;
}

async fn wait(app: &Router, id: u64) -> Value {
    for _ in 0..600 {
        let (s, v) = call(app, "GET", &format!("/api/search/{id}"), None).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        if v["status"] != "running" {
            return v;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("search {id} did not finish");
}

#[tokio::test]
async fn the_engine_finds_the_road_in_one_and_says_it_is_proven() {
    let app = app();
    let body = r#"{"game": {"tps": "x4/x4/2,2,2,x/1,1,1,x 1 4"}, "budget": {"visits": 100}}"#;
    let (s, v) = call(&app, "POST", "/api/search", Some(body)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let v = wait(&app, v["id"].as_u64().unwrap()).await;
    assert_eq!(v["status"], "done", "{v}");
    let r = &v["results"][0];
    assert_eq!(r["best"], "d1", "{v}");
    assert_eq!(r["proven"], "win");
    assert_eq!(r["proven_text"], "White wins (proven)");
    assert_eq!(r["white_win"], 1.0);
    let heat: f64 = r["heat"].as_array().unwrap().iter().map(|h| h.as_f64().unwrap()).sum();
    assert!((heat - 1.0).abs() < 1e-3, "the heat map is the policy per square: {heat}");
}

#[tokio::test]
async fn a_whole_game_is_analysed_and_a_long_search_can_be_stopped() {
    let app = app();
    let body = r#"{"game": {"size": 3, "moves": ["a1", "c3", "b2"]}, "plies": "all", "budget": {"visits": 30}}"#;
    let (_, v) = call(&app, "POST", "/api/search", Some(body)).await;
    let v = wait(&app, v["id"].as_u64().unwrap()).await;
    assert_eq!(v["status"], "done");
    assert_eq!(v["plies"], json!([0, 1, 2, 3]));
    assert!(v["results"].as_array().unwrap().iter().all(|r| r["best"].is_string()), "{v}");
    // A two-minute search, stopped at once: it ends with a move, and the server answered
    // meanwhile.
    let body = r#"{"game": {"size": 6}, "budget": {"millis": 120000}}"#;
    let (s, v) = call(&app, "POST", "/api/search", Some(body)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let id = v["id"].as_u64().unwrap();
    let (s, _) = call(&app, "POST", "/api/game", Some(r#"{"size": 6}"#)).await;
    assert_eq!(s, StatusCode::OK);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let (s, _) = call(&app, "POST", &format!("/api/search/{id}/stop"), None).await;
    assert_eq!(s, StatusCode::OK);
    let began = std::time::Instant::now();
    let v = wait(&app, id).await;
    assert!(began.elapsed().as_secs() < 5);
    assert_eq!(v["status"], "stopped");
    assert!(v["results"][0]["best"].is_string(), "{v}");
}

#[tokio::test]
async fn bad_searches_are_refused_with_the_reason() {
    let app = app();
    let bad = [
        (r#"{"game": {"size": 3}}"#, "missing field `budget`"),
        (r#"{"game": {"size": 3}, "budget": {"visits": 0}}"#, "visits 0 is out of range"),
        (r#"{"game": {"size": 3}, "budget": {"millis": 5}}"#, "millis 5 is out of range"),
        (r#"{"game": {"size": 3}, "budget": {"nodes": 5}}"#, "malformed JSON"),
        (r#"{"game": {"size": 3}, "budget": {"visits": 5}, "plies": "some"}"#, "malformed JSON"),
        (r#"{"game": {"size": 3}, "budget": {"visits": 5}, "model": "m-9"}"#, "no model \"m-9\""),
        (r#"{"game": {"size": 10}, "budget": {"visits": 5}}"#, "board size 10"),
        (
            r#"{"game": {"tps": "x4/x4/2,2,2,x/1,1,1,x 1 4", "moves": ["d1"]}, "budget": {"visits": 5}}"#,
            "the game is over",
        ),
    ];
    for (body, needle) in bad {
        refused(&app, "POST", "/api/search", Some(body), 400, needle).await;
    }
    refused(&app, "GET", "/api/search/77", None, 404, "no search 77").await;
    refused(&app, "GET", "/api/search/x", None, 400, "search id \"x\" is not a number").await;
    refused(&app, "POST", "/api/search/77/stop", None, 404, "no search 77").await;
    refused(&app, "POST", "/api/models?name=junk.bredon", Some("not a model"), 400, "junk.bredon is not a model").await;
    refused(&app, "POST", "/api/models", None, 400, "must be a .bredon file").await;
    // A model may be larger than a JSON request: 2 MB reach the loader (and are no model).
    let big = "x".repeat(2_000_000);
    refused(&app, "POST", "/api/models?name=big.bredon", Some(&big), 400, "big.bredon is not a model").await;
}

#[tokio::test]
async fn too_many_searches_at_once_are_503() {
    let app = app();
    let body = r#"{"game": {"size": 5}, "budget": {"millis": 60000}}"#;
    let mut ids = vec![];
    for _ in 0..2 {
        let (s, v) = call(&app, "POST", "/api/search", Some(body)).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        ids.push(v["id"].as_u64().unwrap());
    }
    refused(&app, "POST", "/api/search", Some(body), 503, "searches are running").await;
    for id in ids {
        call(&app, "POST", &format!("/api/search/{id}/stop"), None).await;
        wait(&app, id).await;
    }
    let (s, _) = call(&app, "POST", "/api/search", Some(r#"{"game": {"size": 3}, "budget": {"visits": 5}}"#)).await;
    assert_eq!(s, StatusCode::OK);
}

/// A run directory with the files the dashboard reads.
pub fn fixture_run(dir: &std::path::Path) {
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::fs::create_dir_all(dir.join("arena")).unwrap();
    std::fs::create_dir_all(dir.join("games/gen-0002")).unwrap();
    std::fs::write(dir.join("latest"), "gen-0003\n").unwrap();
    let mut log = String::new();
    for g in 0..3 {
        log += &format!(
            "{{\"generation\":{g},\"step\":{},\"games\":64,\"policy_loss\":{},\"value_loss\":0.8,\"games_per_hour\":9000.0,\"white_wins\":0.5,\"black_wins\":0.5,\"draws\":0.0}}\n",
            g * 30,
            2.0 - g as f64 * 0.1
        );
    }
    log += "{\"generation\":3,\"ste"; // a torn last line, as while the trainer writes
    std::fs::write(dir.join("logs/generations.jsonl"), log).unwrap();
    std::fs::write(
        dir.join("arena/elo-curve.csv"),
        "name,generation,step,minutes,elo,lo95,hi95\ngen-0000,0,0,0.00,0.0,0.0,0.0\ngen-0003,3,90,4.5,120.0,60.0,180.0\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("games/gen-0002/1-42.ptn"),
        "[Size \"3\"]\n[Result \"R-0\"]\n\n1. a1 c3\n2. c1 b1\n3. b2 a2\n4. c2 R-0\n",
    )
    .unwrap();
}

#[tokio::test]
async fn a_run_is_read_as_it_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("tiny");
    fixture_run(&run);
    let app = app_with(std::slice::from_ref(&run));
    let (s, v) = call(&app, "GET", "/api/runs", None).await;
    assert_eq!((s, v[0]["name"].as_str()), (StatusCode::OK, Some("tiny")));
    let (s, v) = call(&app, "GET", "/api/runs/0", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["generations"].as_array().unwrap().len(), 3, "the torn line is left out");
    assert_eq!(v["elo"][1]["hi95"], 180.0);
    assert_eq!(v["games"][0]["id"], "1-42");
    assert_eq!(v["games"][0]["result"], "R-0");
    let (s, v) = call(&app, "GET", "/api/runs/0/games/2/1-42", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["moves"].as_array().unwrap().len(), 7);
    refused(&app, "GET", "/api/runs/1", None, 404, "no run 1").await;
    refused(&app, "GET", "/api/runs/x", None, 400, "run id").await;
    refused(&app, "GET", "/api/runs/0/games/2/nope", None, 404, "no game nope").await;
    refused(&app, "GET", "/api/runs/0/games/2/..%2F..%2Fconfig", None, 400, "bad game id").await;
    refused(&app, "GET", "/api/runs/0/games/two/1-42", None, 400, "generation").await;
    // A damaged curve is reported, not a failure of the whole view.
    std::fs::write(run.join("arena/elo-curve.csv"), "nonsense\n").unwrap();
    let (s, v) = call(&app, "GET", "/api/runs/0", None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(v["elo_error"].as_str().unwrap().contains("no `name` column"));
}

#[tokio::test]
async fn a_network_adds_the_flat_margin_and_the_ownership_map() {
    // The shipped models: `auto` plays 4x4 with the shipped network (WDL and aux heads).
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped");
    let app = router(Arc::new(AppState::new(vec![shipped], &[], &[], 2, bredon_infer::Compute::cpu()).unwrap()));
    // Three plies of a 4x4 game; the last position is searched, then the whole game.
    let body = r#"{"game": {"size": 4, "half_komi": 1, "moves": ["a1", "d4", "b2"]}, "plies": "all", "budget": {"visits": 20}}"#;
    let (s, v) = call(&app, "POST", "/api/search", Some(body)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let v = wait(&app, v["id"].as_u64().unwrap()).await;
    assert_eq!(v["status"], "done", "{v}");
    for r in v["results"].as_array().unwrap() {
        let margin = r["white_margin"].as_f64().unwrap_or_else(|| panic!("no margin: {r}"));
        assert!(margin.is_finite() && margin.abs() <= 16.0, "{margin}");
        let own = r["ownership"].as_array().unwrap();
        assert_eq!(own.len(), 16, "{r}");
        assert!(own.iter().all(|o| (-1.0..=1.0).contains(&o.as_f64().unwrap())), "{r}");
    }
    // White's view on every ply: the same position searched with black to move gives the
    // map of the same sign, so after 1. a1 (black's flat on a1) black owns a1 at once.
    let after_a1 = &v["results"][1]["ownership"];
    assert!(after_a1[0].as_f64().unwrap() < 0.0, "a1 holds black's flat: {after_a1}");
    // A finished game's margin and owners are counted, not predicted: white's road on
    // rank 1 (a1 b1 c1 d1), black on a2 b2 c2, komi 0.5.
    let body = r#"{"game": {"tps": "x4/x4/2,2,2,x/1,1,1,x 1 4", "half_komi": 1, "moves": ["d1"]}, "plies": "all", "budget": {"visits": 5}}"#;
    let (_, v) = call(&app, "POST", "/api/search", Some(body)).await;
    let v = wait(&app, v["id"].as_u64().unwrap()).await;
    let end = &v["results"][1];
    assert_eq!(end["white_margin"], 0.5, "4 - 3 - 0.5: {end}");
    assert_eq!(
        end["ownership"].as_array().unwrap()[..8],
        json!([1.0, 1.0, 1.0, 1.0, -1.0, -1.0, -1.0, 0.0]).as_array().unwrap()[..]
    );
    // The uniform evaluator predicts neither.
    let body = r#"{"game": {"size": 4}, "budget": {"visits": 5}, "model": "uniform"}"#;
    let (_, v) = call(&app, "POST", "/api/search", Some(body)).await;
    let v = wait(&app, v["id"].as_u64().unwrap()).await;
    assert!(v["results"][0]["white_margin"].is_null() && v["results"][0]["ownership"].is_null(), "{v}");
}

#[test]
fn auto_plays_a_size_without_its_own_model_with_the_nearest_network_carried_there() {
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(shipped.join("4x4.bredon"), dir.path().join("4x4.bredon")).unwrap();
    std::fs::copy(shipped.join("5x5.bredon"), dir.path().join("5x5.bredon")).unwrap();
    let models = models::Models::new(vec![dir.path().to_path_buf()], &[], bredon_infer::Compute::cpu()).unwrap();
    // 4x4 and 5x5 have their own; 7x7 gets the 5x5 network (the dense 4x4 one plays no
    // other size), loaded only when asked for.
    assert!(models.carried_file(5).is_none());
    let (file, meta) = models.carried_file(7).expect("7x7 is played by a carried network");
    assert_eq!((file, meta.size), (dir.path().join("5x5.bredon"), 5));
    let engine = models.engine(&models::ModelChoice::Auto, 7).unwrap();
    assert!(engine.name.ends_with("5x5.bredon (a 5x5 network carried to 7x7)"), "{}", engine.name);
    let pos = bredon_rules::Position::new(7).unwrap();
    let legal = pos.legal_moves();
    let eval = engine.evaluator.evaluate_batch(&[&pos], &[&legal]).pop().unwrap();
    assert_eq!(eval.policy.len(), legal.len());
    let heads = engine.heads.as_ref().expect("a network's heads").evaluate(&[&pos]).unwrap();
    assert_eq!(heads[0].ownership.as_ref().map(Vec::len), Some(49));
    // With no network that plays every size, a size without a model is the uniform search.
    std::fs::remove_file(dir.path().join("5x5.bredon")).unwrap();
    let models = models::Models::new(vec![dir.path().to_path_buf()], &[], bredon_infer::Compute::cpu()).unwrap();
    assert!(models.carried_file(7).is_none());
    assert_eq!(models.engine(&models::ModelChoice::Auto, 7).unwrap().name, "the uniform evaluator");
}

#[tokio::test]
async fn a_curriculum_is_shown_at_its_newest_stage() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("curr");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("curriculum.toml"),
        "[game]\nsize = 3\n[[stage]]\nname = \"3x3\"\ngenerations = 3\n[[stage]]\nname = \"4x4\"\ngame = { size = 4 }\n",
    )
    .unwrap();
    // `latest` names a complete checkpoint (one with its state.json).
    let checkpoint = |stage: &std::path::Path, name: &str| {
        std::fs::create_dir_all(stage.join("checkpoints").join(name)).unwrap();
        std::fs::write(stage.join("checkpoints").join(name).join("state.json"), "{}").unwrap();
        std::fs::write(stage.join("latest"), format!("{name}\n")).unwrap();
    };
    fixture_run(&root.join("stages/01-3x3"));
    checkpoint(&root.join("stages/01-3x3"), "gen-0003");
    let app = app_with(std::slice::from_ref(&root));
    let (s, v) = call(&app, "GET", "/api/runs/0", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!((v["name"].as_str(), v["stage"].as_str()), (Some("curr / 01-3x3"), Some("01-3x3")));
    assert_eq!(v["generations"].as_array().unwrap().len(), 3);
    let (s, _) = call(&app, "GET", "/api/runs/0/games/2/1-42", None).await;
    assert_eq!(s, StatusCode::OK);
    // The second stage's first checkpoint: the page moves there.
    let second = root.join("stages/02-4x4");
    checkpoint(&second, "gen-0000");
    let (s, v) = call(&app, "GET", "/api/runs/0", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["stage"].as_str(), Some("02-4x4"));
    assert_eq!(v["generations"].as_array().unwrap().len(), 0);
    refused(&app, "GET", "/api/runs/0/games/2/1-42", None, 404, "no game 1-42").await;
    // A damaged curriculum.toml is named.
    std::fs::write(root.join("curriculum.toml"), "[[stage]]\n").unwrap();
    refused(&app, "GET", "/api/runs/0", None, 500, "curriculum.toml").await;
}
