//! `bredon serve`: play, analyse and watch training runs in the browser.
//!
//! An axum server on a tokio runtime. The page (`crates/cli/web/`: plain HTML, CSS and
//! JavaScript, no build step, nothing fetched from the internet) is compiled into the
//! binary. The JSON API under `/api/` is stateless about games: the page sends the game
//! (size, komi, start, moves, or a PTN/TPS text) with each request and gets every
//! position back checked against the rules. Searches run on threads of their own
//! ([`jobs`]); a request only starts, polls or stops one, so the server answers every tab
//! while the engine thinks. Errors are JSON `{"error": "…"}` with a 4xx status
//! ([`error::ApiError`]).

pub mod error;
pub mod game;
pub mod jobs;
pub mod models;
pub mod runs;
#[cfg(test)]
mod tests;

use anyhow::{Context, Result};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use error::{ApiError, parse_json};
use game::{Game, GameSpec};
use jobs::{Jobs, Plies, RequestBudget};
use models::{ModelChoice, Models};
use runs::RunInfo;

/// Arguments of `bredon serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Port to listen on (0: any free port; the address is printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Address to listen on. The default serves this machine only; `0.0.0.0` serves the
    /// network (there is no authentication).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// A training run or curriculum directory to watch on the dashboard (repeat for several).
    #[arg(long)]
    pub run: Vec<PathBuf>,
    /// A model (`bredon export` file) to offer besides the shipped ones (repeat for
    /// several). The shipped `NxN.bredon` models are found as by `bredon tei`.
    #[arg(long)]
    pub model: Vec<PathBuf>,
    /// Searches that may run at once, over all tabs; more get a 503 "busy".
    #[arg(long, default_value_t = 4)]
    pub max_searches: usize,
}

/// What every request handler shares.
pub struct AppState {
    models: Arc<Models>,
    jobs: Jobs,
    runs: Vec<RunInfo>,
}

impl AppState {
    /// State for the server: models from `model_dirs` plus `extra` (run on `compute`), the
    /// runs in `runs`.
    pub fn new(
        model_dirs: Vec<PathBuf>,
        extra: &[PathBuf],
        runs: &[PathBuf],
        max_searches: usize,
        compute: bredon_infer::Compute,
    ) -> Result<AppState> {
        let runs = runs
            .iter()
            .enumerate()
            .map(|(id, p)| {
                anyhow::ensure!(p.is_dir(), "--run {}: not a directory", p.display());
                let path = p.canonicalize().with_context(|| p.display().to_string())?;
                let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into());
                Ok(RunInfo { id, name, path })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(AppState { models: Arc::new(Models::new(model_dirs, extra, compute)?), jobs: Jobs::new(max_searches), runs })
    }
}

/// Runs the server until Ctrl-C.
pub fn run(args: ServeArgs, compute: &bredon_infer::Compute) -> Result<()> {
    let dirs = crate::model_arg::default_model_dirs();
    let state = Arc::new(AppState::new(dirs, &args.model, &args.run, args.max_searches, compute.clone())?);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind((args.host, args.port))
            .await
            .with_context(|| format!("listening on {}:{}", args.host, args.port))?;
        let addr = listener.local_addr()?;
        println!("bredon serve: http://{addr}/");
        for size in game::SIZES {
            if let Some(f) = state.models.shipped_file(size) {
                println!("bredon serve: {size}x{size} games with {}", f.display());
            } else if let Some((f, meta)) = state.models.carried_file(size) {
                let t = meta.size;
                println!(
                    "bredon serve: {size}x{size} games with {} (a {t}x{t} network carried to {size}x{size})",
                    f.display()
                );
            }
        }
        for r in &state.runs {
            println!("bredon serve: run {} ({})", r.name, r.path.display());
        }
        use std::io::Write;
        std::io::stdout().flush()?;
        let app = router(state.clone());
        let shutdown = {
            let state = state.clone();
            async move {
                let _ = tokio::signal::ctrl_c().await;
                state.jobs.stop_all();
            }
        };
        axum::serve(listener, app).with_graceful_shutdown(shutdown).await.context("serving")
    })
}

/// The largest JSON request body.
const MAX_BODY: usize = 1024 * 1024;

/// The routes: the page's three files, the API, and a JSON 404 for anything else.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(|| async { page("text/html; charset=utf-8", INDEX) }))
        .route("/app.js", get(|| async { page("text/javascript; charset=utf-8", APP_JS) }))
        .route("/style.css", get(|| async { page("text/css; charset=utf-8", STYLE) }))
        .route("/api/info", get(info))
        .route("/api/game", post(game_view))
        .route("/api/search", post(search_start))
        .route("/api/search/{id}", get(search_get))
        .route("/api/search/{id}/stop", post(search_stop))
        .route("/api/models", post(model_upload).layer(DefaultBodyLimit::max(models::MAX_UPLOAD)))
        .route("/api/runs", get(runs_list))
        .route("/api/runs/{id}", get(run_view))
        .route("/api/runs/{id}/games/{generation}/{game}", get(run_game))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}

const INDEX: &str = include_str!("../../web/index.html");
const APP_JS: &str = include_str!("../../web/app.js");
const STYLE: &str = include_str!("../../web/style.css");

fn page(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound(format!("no page or API at {}", uri.path()))
}

async fn method_not_allowed(uri: Uri) -> Response {
    let body = Json(serde_json::json!({ "error": format!("{} does not take this method", uri.path()) }));
    (StatusCode::METHOD_NOT_ALLOWED, body).into_response()
}

type Api<T> = Result<Json<T>, ApiError>;

async fn info(State(s): State<Arc<AppState>>) -> Api<serde_json::Value> {
    let shipped: Vec<_> = game::SIZES
        .filter_map(|n| s.models.shipped_file(n).map(|f| serde_json::json!({ "size": n, "file": f })))
        .collect();
    Ok(Json(serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "sizes": game::SIZES.collect::<Vec<_>>(),
        "half_komi": [game::HALF_KOMI.start(), game::HALF_KOMI.end()],
        "visits": [jobs::VISITS.start(), jobs::VISITS.end()],
        "millis": [jobs::MILLIS.start(), jobs::MILLIS.end()],
        "shipped": shipped,
        "models": s.models.list(),
        "runs": s.runs,
    })))
}

async fn game_view(body: Result<Bytes, BytesRejection>) -> Api<game::GameView> {
    let spec: GameSpec = parse_json(&body?)?;
    Ok(Json(Game::from_spec(&spec)?.view()))
}

/// `POST /api/search`: `{"game": GAME, "budget": {"visits": N} | {"millis": MS},
/// "plies": "last" | "all", "model": "auto" | "uniform" | ID}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchRequest {
    game: GameSpec,
    budget: RequestBudget,
    #[serde(default)]
    plies: Plies,
    #[serde(default)]
    model: Option<String>,
}

async fn search_start(State(s): State<Arc<AppState>>, body: Result<Bytes, BytesRejection>) -> Api<jobs::JobView> {
    let req: SearchRequest = parse_json(&body?)?;
    let game = Game::from_spec(&req.game)?;
    let choice = ModelChoice::parse(req.model.as_deref());
    Ok(Json(s.jobs.start(s.models.clone(), choice, game, req.plies, req.budget)?))
}

fn parse_id<T: std::str::FromStr>(what: &str, text: &str) -> Result<T, ApiError> {
    text.parse().map_err(|_| ApiError::bad(format!("{what} {text:?} is not a number")))
}

async fn search_get(State(s): State<Arc<AppState>>, Path(id): Path<String>) -> Api<jobs::JobView> {
    Ok(Json(s.jobs.get(parse_id("search id", &id)?)?))
}

async fn search_stop(State(s): State<Arc<AppState>>, Path(id): Path<String>) -> Api<jobs::JobView> {
    Ok(Json(s.jobs.stop(parse_id("search id", &id)?)?))
}

async fn model_upload(
    State(s): State<Arc<AppState>>,
    Query(q): Query<HashMap<String, String>>,
    body: Result<Bytes, BytesRejection>,
) -> Api<models::ModelInfo> {
    let body = body?;
    if body.is_empty() {
        return Err(ApiError::bad("the request body must be a .bredon file"));
    }
    let name = q.get("name").cloned().unwrap_or_else(|| "uploaded.bredon".to_string());
    let models = s.models.clone();
    let info = tokio::task::spawn_blocking(move || models.add(&body, &name, "upload"))
        .await
        .map_err(|e| ApiError::Internal(format!("loading the model failed: {e}")))??;
    Ok(Json(info))
}

async fn runs_list(State(s): State<Arc<AppState>>) -> Api<Vec<RunInfo>> {
    Ok(Json(s.runs.clone()))
}

fn find_run(s: &AppState, id: &str) -> Result<RunInfo, ApiError> {
    let n: usize = parse_id("run id", id)?;
    s.runs.get(n).cloned().ok_or_else(|| {
        ApiError::NotFound(format!("no run {n}: the server watches {} (give more with --run)", s.runs.len()))
    })
}

async fn run_view(State(s): State<Arc<AppState>>, Path(id): Path<String>) -> Api<runs::RunView> {
    let run = find_run(&s, &id)?;
    let view = tokio::task::spawn_blocking(move || runs::read_run(&run))
        .await
        .map_err(|e| ApiError::Internal(format!("reading the run failed: {e}")))??;
    Ok(Json(view))
}

async fn run_game(
    State(s): State<Arc<AppState>>,
    Path((id, generation, game)): Path<(String, String, String)>,
) -> Api<game::GameView> {
    let run = find_run(&s, &id)?;
    let generation: u32 = parse_id("generation", &generation)?;
    let text = tokio::task::spawn_blocking(move || runs::read_game(&run, generation, &game))
        .await
        .map_err(|e| ApiError::Internal(format!("reading the game failed: {e}")))??;
    let spec = GameSpec { text: Some(text), ..GameSpec::default() };
    Ok(Json(Game::from_spec(&spec)?.view()))
}
