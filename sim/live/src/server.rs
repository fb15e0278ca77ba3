//! The HTTP side of `loopsim serve`: an OpenAI-compatible Chat Completions endpoint and the
//! tool and event endpoints a runtime's fake tool handlers call, on loopback only.
//!
//! axum on a small tokio runtime of its own thread; every handler takes the world's lock for a
//! few microseconds and never sleeps (time is virtual).

use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use loopsim_engine::retry::ProviderFault;
use serde_json::{Value, json};

use crate::live_world::{LiveError, LiveWorld};
use crate::openai::ChatRequest;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("--listen {0}: loopsim serves on loopback only (127.0.0.1 or ::1)")]
    NotLoopback(SocketAddr),
    #[error("--listen {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the server's runtime: {0}")]
    Runtime(std::io::Error),
}

type Shared = Arc<Mutex<LiveWorld>>;

/// How long a parent's request may wait for its children to catch up in virtual time.
const CATCH_UP_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// A running server; [`ServerHandle::stop`] ends it and hands back the world.
pub struct ServerHandle {
    addr: SocketAddr,
    world: Shared,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Requests the server could not answer, for the caller's error report.
    errors: Arc<Mutex<Vec<String>>>,
}

impl ServerHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL an OpenAI-compatible client takes (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The requests answered with an error so far.
    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// Reads the world while the server runs.
    pub fn with_world<T>(&self, f: impl FnOnce(&mut LiveWorld) -> T) -> T {
        let mut w = self.world.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut w)
    }

    /// Stops serving and waits for the server thread to end.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[derive(Clone)]
struct AppState {
    world: Shared,
    errors: Arc<Mutex<Vec<String>>>,
}

/// Starts serving `world` on `addr` (port 0: any free port) from a thread of its own.
pub fn start(world: LiveWorld, addr: SocketAddr) -> Result<ServerHandle, ServeError> {
    if !addr.ip().is_loopback() {
        return Err(ServeError::NotLoopback(addr));
    }
    let listener = TcpListener::bind(addr).map_err(|source| ServeError::Bind { addr, source })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    let world = Arc::new(Mutex::new(world));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let state = AppState {
        world: Arc::clone(&world),
        errors: Arc::clone(&errors),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let app = router(state);
    let listener = {
        let _guard = rt.enter();
        tokio::net::TcpListener::from_std(listener).map_err(ServeError::Runtime)?
    };
    let thread = std::thread::Builder::new()
        .name("loopsim-serve".into())
        .spawn(move || {
            rt.block_on(async move {
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await;
            });
            rt.shutdown_background();
        })
        .map_err(ServeError::Runtime)?;
    Ok(ServerHandle {
        addr: bound,
        world,
        stop: Some(tx),
        thread: Some(thread),
        errors,
    })
}

fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/chat/completions", post(chat))
        .route("/v1/models", get(models))
        .route("/models", get(models))
        .route("/loopsim/v1/tool", post(tool))
        .route("/loopsim/v1/event", post(event))
        .route("/loopsim/v1/order", post(order))
        .route("/loopsim/v1/iteration", post(iteration))
        .route("/loopsim/v1/events", get(events))
        .route("/loopsim/v1/health", get(|| async { "ok" }))
        .route("/api/tags", get(ollama_tags))
        .route("/api/show", post(ollama_show))
        .fallback(not_found)
        .with_state(state)
}

fn error(state: &AppState, status: StatusCode, message: String) -> Response {
    if let Ok(mut e) = state.errors.lock() {
        e.push(message.clone());
    }
    (
        status,
        axum::Json(json!({ "error": { "message": message, "type": "loopsim" } })),
    )
        .into_response()
}

async fn not_found(State(state): State<AppState>, uri: axum::http::Uri) -> Response {
    // Runtimes probe for local-server APIs (Ollama, llama.cpp); a 404 tells them this is not
    // one. Probes are not errors.
    let _ = &state;
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({ "error": { "message": format!("no such endpoint: {uri}") } })),
    )
        .into_response()
}

async fn models(State(state): State<AppState>) -> Response {
    let names: Vec<String> = {
        let w = state.world.lock().unwrap_or_else(|p| p.into_inner());
        w.model_names()
    };
    let data: Vec<Value> = names
        .iter()
        .map(|n| json!({ "id": n, "object": "model", "owned_by": "loopsim" }))
        .collect();
    axum::Json(json!({ "object": "list", "data": data })).into_response()
}

/// Appends a request body to `$LOOPSIM_SERVE_LOG`, when set (for debugging a runtime).
fn log_request(body: &[u8]) {
    if let Some(path) = std::env::var_os("LOOPSIM_SERVE_LOG") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(body);
            let _ = f.write_all(b"\n");
        }
    }
}

async fn chat(State(state): State<AppState>, body: Bytes) -> Response {
    log_request(&body);
    let req = match ChatRequest::parse(&body) {
        Ok(r) => r,
        Err(e) => return error(&state, StatusCode::BAD_REQUEST, e.to_string()),
    };
    // Children run in threads at their own pace: a parent whose next move depends on them
    // waits (in wall-clock time, never in virtual time) until they are past its clock.
    let deadline = std::time::Instant::now() + CATCH_UP_LIMIT;
    loop {
        let wait = {
            let mut w = state.world.lock().unwrap_or_else(|p| p.into_inner());
            w.must_wait(&req)
        };
        if !wait {
            break;
        }
        if std::time::Instant::now() > deadline {
            return error(
                &state,
                StatusCode::GATEWAY_TIMEOUT,
                format!("children did not catch up within {CATCH_UP_LIMIT:?}"),
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let answer = {
        let mut w = state.world.lock().unwrap_or_else(|p| p.into_inner());
        w.chat(&req).map(|r| (r, w.reply_id()))
    };
    match answer {
        Ok((reply, id)) => {
            if req.stream {
                (
                    [
                        (header::CONTENT_TYPE, "text/event-stream"),
                        (header::CACHE_CONTROL, "no-cache"),
                    ],
                    reply.to_sse(&id, &req.model, req.include_usage),
                )
                    .into_response()
            } else {
                axum::Json(reply.to_json(&id, &req.model)).into_response()
            }
        }
        Err(LiveError::Provider(f)) if f.fault == ProviderFault::DroppedStream => dropped_stream(),
        Err(LiveError::Provider(f)) => provider_error(&f),
        Err(e @ LiveError::ContextOverflow { .. }) => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({ "error": {
                "message": e.to_string(),
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            } })),
        )
            .into_response(),
        Err(e) => error(&state, status_of(&e), e.to_string()),
    }
}

/// A stream that drops before its first token: the headers and an SSE comment go out (so
/// the client has begun reading the stream), then the connection closes mid-body. The
/// client's HTTP library reports the incomplete chunked body as a protocol error.
fn dropped_stream() -> Response {
    let chunks = futures_util::stream::unfold(0u8, |step| async move {
        match step {
            0 => Some((Ok(Bytes::from_static(b": loopsim\n\n")), 1)),
            1 => {
                // Let the headers and the comment reach the client before the drop.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                Some((
                    Err(std::io::Error::other("the scenario drops this stream")),
                    2,
                ))
            }
            _ => None,
        }
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        axum::body::Body::from_stream(chunks),
    )
        .into_response()
}

/// The scenario's provider failing an attempt, as a provider says it: the status, an
/// OpenAI-shaped error body, and a rate limit's `Retry-After` when the scenario sets one.
fn provider_error(f: &loopsim_world::faults::Failure) -> Response {
    let status = f
        .fault
        .status()
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let (message, kind) = match f.fault {
        ProviderFault::RateLimit => (
            "loopsim: the scenario's provider is rate limiting this request",
            "rate_limit_error",
        ),
        ProviderFault::ServerError | ProviderFault::DroppedStream => (
            "loopsim: the scenario's provider failed this request",
            "server_error",
        ),
    };
    let body = axum::Json(json!({ "error": { "message": message, "type": kind } }));
    match f.retry_after_s {
        Some(s) => (status, [(header::RETRY_AFTER, format!("{s}"))], body).into_response(),
        None => (status, body).into_response(),
    }
}

fn status_of(e: &LiveError) -> StatusCode {
    match e {
        LiveError::BadRequest(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

async fn tool(State(state): State<AppState>, body: Bytes) -> Response {
    let parsed: Result<Value, _> = serde_json::from_slice(&body);
    let Ok(v) = parsed else {
        return error(&state, StatusCode::BAD_REQUEST, "tool: not JSON".into());
    };
    // A runtime that does not tell its tools their call's id sends `id: null`: the call is
    // then found by its tool and arguments.
    let id = v.get("id").and_then(Value::as_str);
    let (true, Some(name)) = (
        id.is_some() || v.get("id").is_some_and(Value::is_null),
        v.get("tool").and_then(Value::as_str),
    ) else {
        return error(
            &state,
            StatusCode::BAD_REQUEST,
            "tool: needs `id` (a string, or null to match by arguments) and `tool`".into(),
        );
    };
    let args_text = v.get("args").map(Value::to_string).unwrap_or("{}".into());
    let Ok(args) = loopsim_engine::json::parse(args_text.as_bytes()) else {
        return error(&state, StatusCode::BAD_REQUEST, "tool: bad `args`".into());
    };
    let answer = {
        let mut w = state.world.lock().unwrap_or_else(|p| p.into_inner());
        match id {
            Some(id) => w.tool(id, name, &args),
            None => w.tool_by_args(name, &args),
        }
    };
    match answer {
        Ok(a) => axum::Json(json!({
            "result": a.result,
            "failed": a.failed,
            "interrupt": a.interrupt,
        }))
        .into_response(),
        Err(e) => error(&state, status_of(&e), e.to_string()),
    }
}

async fn event(State(state): State<AppState>, body: Bytes) -> Response {
    let parsed: Result<Value, _> = serde_json::from_slice(&body);
    let Ok(v) = parsed else {
        return error(&state, StatusCode::BAD_REQUEST, "event: not JSON".into());
    };
    let result = {
        let mut w = state.world.lock().unwrap_or_else(|p| p.into_inner());
        w.runtime_event(&v)
    };
    match result {
        Ok(()) => axum::Json(json!({ "ok": true })).into_response(),
        Err(e) => error(&state, StatusCode::BAD_REQUEST, e.to_string()),
    }
}

/// The top of an iteration of a child's loop: `{"agent": NAME}` in, `{"crash": bool}` out.
async fn iteration(State(state): State<AppState>, body: Bytes) -> Response {
    let parsed: Result<Value, _> = serde_json::from_slice(&body);
    let agent = parsed
        .ok()
        .and_then(|v| v.get("agent")?.as_str().map(str::to_string));
    let Some(agent) = agent else {
        return error(
            &state,
            StatusCode::BAD_REQUEST,
            "iteration: needs `agent`, a string".into(),
        );
    };
    let result = {
        let mut w = state.world.lock().unwrap_or_else(|p| p.into_inner());
        w.iteration_top(&agent)
    };
    match result {
        Ok(crash) => axum::Json(json!({ "crash": crash })).into_response(),
        Err(e) => error(&state, StatusCode::BAD_REQUEST, e.to_string()),
    }
}

async fn order(State(state): State<AppState>, body: Bytes) -> Response {
    let parsed: Result<Value, _> = serde_json::from_slice(&body);
    let notes: Option<Vec<String>> = parsed.ok().and_then(|v| {
        v.get("notes")?
            .as_array()?
            .iter()
            .map(|n| n.as_str().map(str::to_string))
            .collect()
    });
    let Some(notes) = notes else {
        return error(
            &state,
            StatusCode::BAD_REQUEST,
            "order: needs `notes`, an array of strings".into(),
        );
    };
    let order = {
        let w = state.world.lock().unwrap_or_else(|p| p.into_inner());
        w.result_order("parent", &notes)
    };
    axum::Json(json!({ "order": order })).into_response()
}

/// Ollama's model list, only when the scenario's model runs on an Ollama with too small a
/// context (`context_too_small` first); otherwise a 404, as for every local-server probe.
async fn ollama_tags(State(state): State<AppState>) -> Response {
    let (ctx, names) = {
        let w = state.world.lock().unwrap_or_else(|p| p.into_inner());
        (w.ollama_num_ctx(), w.model_names())
    };
    match ctx {
        Some(_) => {
            let models: Vec<Value> = names
                .iter()
                .map(|n| json!({ "name": n, "model": n }))
                .collect();
            axum::Json(json!({ "models": models })).into_response()
        }
        None => (StatusCode::NOT_FOUND, "no such endpoint: /api/tags").into_response(),
    }
}

async fn ollama_show(State(state): State<AppState>) -> Response {
    let ctx = {
        let w = state.world.lock().unwrap_or_else(|p| p.into_inner());
        w.ollama_num_ctx()
    };
    match ctx {
        Some(n) => axum::Json(json!({
            "parameters": format!("num_ctx {n}"),
            "model_info": { "general.context_length": n },
        }))
        .into_response(),
        None => (StatusCode::NOT_FOUND, "no such endpoint: /api/show").into_response(),
    }
}

/// What happened so far, as trace event lines (JSON lines, in the trace's order).
async fn events(State(state): State<AppState>) -> Response {
    let events = {
        let w = state.world.lock().unwrap_or_else(|p| p.into_inner());
        w.events_in_order()
    };
    let mut body = String::new();
    for e in &events {
        body.push_str(&serde_json::to_string(e).unwrap_or_default());
        body.push('\n');
    }
    ([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response()
}
