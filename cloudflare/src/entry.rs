//! The Worker's `fetch` handler for any agent ([`fetch`]): a thin adapter around
//! [`Runway::handle`].
//!
//! It reads the request as the core's intake says ([`Runway::intake`]: the head first, then
//! the body up to [`runway_core::adapter::MAX_BODY_BYTES`]), lets the core answer, and
//! either returns the full response or returns the streamed body at once and runs the turn
//! beside it with `ctx.waitUntil`, so the turn can still commit after a client disconnect.

use std::cell::RefCell;

use bytes::Bytes;
use futures::StreamExt;
use runway_core::Agent;
use runway_core::adapter::{BadRequest, IntakeRefusal, Reply, Runway, TurnBody, json_error};
use runway_core::connect::provider::Providers;
use worker::{Context, Env, Request};

#[cfg(feature = "model")]
use std::sync::Arc;

#[cfg(feature = "model")]
use runway_agents::ModelAgent;
use runway_agents::{WORKERS_FILE_SETTING, WORKERS_SETTING};
use runway_core::Workers;

use crate::analytics::AnalyticsMetrics;
use crate::console_log::ConsoleLog;
#[cfg(feature = "model")]
use crate::download_client::DownloadClient;
use crate::fetch_client::FetchClient;
#[cfg(feature = "model")]
use crate::kv_attachments::KvAttachmentStore;
use crate::live::{Pump, install_panic_hook};
use crate::runtime::WorkersRuntime;
use crate::store::CloudflareStore;

/// Name of the Durable Object binding (`[[durable_objects.bindings]]` in `wrangler.toml`).
pub const THREADS_BINDING: &str = "RUNWAY_THREADS";
/// Name of the KV binding for hosted files (`[[kv_namespaces]]` in `wrangler.toml`).
pub const FILES_BINDING: &str = "RUNWAY_FILES";
/// Name of the optional Workers Analytics Engine binding (`[[analytics_engine_datasets]]`):
/// one data point per turn when it is configured.
pub const ANALYTICS_BINDING: &str = "RUNWAY_ANALYTICS";

/// Every agent is served as [`Workers`] (a single agent as [`Workers::from_agent`]: one
/// agent for every `agentId`, as the core serves a plain agent), so the engine is compiled
/// once per wire format rather than once per agent type as well: about 40 KiB gzip less in a
/// Worker that has both a single agent and the workers file (BENCHMARKS.md).
type App = Runway<Workers, CloudflareStore, WorkersRuntime>;

thread_local! {
    /// One app per isolate (and per instance: a panic re-initialises the instance and so
    /// rebuilds it). It holds what `/health` knows in memory.
    static APP: RefCell<Option<App>> = const { RefCell::new(None) };
}

/// Why the Worker cannot serve: a deployment mistake, reported on every request as 500.
#[derive(Debug, thiserror::Error)]
enum SetupError {
    #[error("configuration: {0}")]
    Config(#[from] BadRequest),
    #[error("binding {0} is missing: check wrangler.toml")]
    Binding(&'static str),
    #[error("configuration: {0}")]
    Agent(String),
}

/// A setting from a secret (`wrangler secret put`, `.dev.vars`) or a `[vars]` entry.
pub(crate) fn setting(env: &Env, name: &str) -> Option<String> {
    env.secret(name)
        .map(|s| s.to_string())
        .or_else(|_| env.var(name).map(|v| v.to_string()))
        .ok()
}

fn app(
    make_agent: impl FnOnce(&Env) -> Result<(Workers, Providers), String>,
    env: &Env,
) -> Result<App, SetupError> {
    let cached = APP.with(|a| a.borrow().clone());
    if let Some(app) = cached {
        return Ok(app);
    }
    ConsoleLog::install(setting(env, "RUNWAY_LOG").as_deref());
    install_panic_hook();
    let mut config = crate::worker_config::worker_config(|k| setting(env, k))?;
    // Deployed before `wrangler secret put`: every turn is refused with a 500 naming the
    // secret, never served to anyone.
    config.access = config.access.naming_missing(
        "the RUNWAY_AUTH_HEADERS secret (printf 'Name: value' | npx wrangler secret put RUNWAY_AUTH_HEADERS)",
    );
    config.access.log_at_start();
    let rt = WorkersRuntime;
    let (agent, providers) = make_agent(env).map_err(SetupError::Agent)?;
    let threads = env
        .durable_object(THREADS_BINDING)
        .map_err(|_| SetupError::Binding(THREADS_BINDING))?;
    let files = env
        .kv(FILES_BINDING)
        .map_err(|_| SetupError::Binding(FILES_BINDING))?;
    // Providers need the RUNWAY_VAULT_KEY secret: without it every request answers 500,
    // logged naming it.
    let app = Runway::new(agent, CloudflareStore::new(threads, files), rt, config)
        .with_http_client(FetchClient)
        .with_providers(providers)
        .map_err(|e| SetupError::Agent(e.to_string()))?;
    // A Workers Analytics Engine data point per turn when the binding is configured; else the
    // structured log line (Workers Logs).
    let app = match env.analytics_engine(ANALYTICS_BINDING) {
        Ok(dataset) => app.with_metrics(AnalyticsMetrics::new(dataset)),
        Err(_) => app,
    };
    APP.with(|a| *a.borrow_mut() = Some(app.clone()));
    Ok(app)
}

/// Answers one request to your Worker with `agent`; call it from your `#[event(fetch)]`:
///
/// ```ignore
/// #[worker::event(fetch)]
/// async fn fetch(
///     req: worker::Request,
///     env: worker::Env,
///     ctx: worker::Context,
/// ) -> worker::Result<worker::web_sys::Response> {
///     runway_cloudflare::fetch(MyAgent, req, env, ctx).await
/// }
/// ```
///
/// The agent given on an isolate's first request is kept for the isolate's lifetime (with the
/// settings read from `env` then); later calls drop theirs, so build it cheaply. Threads live
/// in the `RunwayThread` Durable Object class this crate exports into your Worker (binding
/// [`THREADS_BINDING`]) and hosted files in KV (binding [`FILES_BINDING`]); a missing binding
/// or a bad `RUNWAY_*` setting answers 500 and logs why.
///
/// # Errors
/// Only when a response cannot be built at all; every other failure is an HTTP answer.
pub async fn fetch<A: Agent>(
    agent: A,
    req: Request,
    env: Env,
    ctx: Context,
) -> worker::Result<web_sys::Response> {
    fetch_with(|_| Ok(agent), req, env, ctx).await
}

/// [`fetch`] for an agent built from the Worker's settings: `make_agent` runs only when the
/// isolate's app is built (its first request, or after a panic), never per request, so an
/// agent that parses configuration (a tools file, say) costs that CPU once. Its `Err` answers
/// 500 `agent misconfigured` and is logged.
///
/// # Errors
/// Only when a response cannot be built at all; every other failure is an HTTP answer.
pub async fn fetch_with<A: Agent>(
    make_agent: impl FnOnce(&Env) -> Result<A, String>,
    req: Request,
    env: Env,
    ctx: Context,
) -> worker::Result<web_sys::Response> {
    fetch_with_providers(
        |env| make_agent(env).map(|a| (a, Providers::new())),
        req,
        env,
        ctx,
    )
    .await
}

/// [`fetch_with`], serving connected accounts too: `make_agent` gives the agent and its OAuth
/// providers (see [`Runway::with_providers`]; the tools file's `[providers.KEY]` for the
/// built-in model agent). Providers need the `RUNWAY_VAULT_KEY` secret (without it every
/// request answers 500, logged naming it), and `GET {base}/connect/{id}` and
/// `GET {base}/callback` answer.
///
/// # Errors
/// Only when a response cannot be built at all; every other failure is an HTTP answer.
pub async fn fetch_with_providers<A: Agent>(
    make_agent: impl FnOnce(&Env) -> Result<(A, Providers), String>,
    req: Request,
    env: Env,
    ctx: Context,
) -> worker::Result<web_sys::Response> {
    let workers_file = [WORKERS_SETTING, WORKERS_FILE_SETTING]
        .iter()
        .any(|k| setting(&env, k).is_some_and(|v| !v.trim().is_empty()));
    let workers = |env: &Env| {
        let (agent, providers) = make_agent(env)?;
        if workers_file {
            Ok((workers_of(agent, env)?, Providers::new()))
        } else {
            Ok((Workers::from_agent(agent), providers))
        }
    };
    serve(workers, req, env, ctx).await
}

/// The workers of `RUNWAY_WORKERS` (a Worker has no files: `RUNWAY_WORKERS_FILE` is refused,
/// and tools go inline, `tools = '''…'''`), with `agent` as `agent = "main"` (or its names,
/// if it is a [`Workers`]). Model workers download attachments with `fetch` and keep them in
/// the hosted files' KV namespace, like the built-in model agent.
///
/// The workers file needs the crate's `model` feature; without it a set workers file is
/// refused (500, logged), never ignored: its workers and limits are not dropped silently.
fn workers_of<A: Agent>(agent: A, env: &Env) -> Result<Workers, String> {
    if setting(env, WORKERS_FILE_SETTING).is_some_and(|v| !v.trim().is_empty()) {
        return Err(format!(
            "{WORKERS_FILE_SETTING}: a Worker has no files: put the workers file itself in {WORKERS_SETTING}"
        ));
    }
    workers_from_file(agent, env)
}

#[cfg(not(feature = "model"))]
fn workers_from_file<A: Agent>(agent: A, env: &Env) -> Result<Workers, String> {
    let _ = (agent, env);
    Err(format!(
        "{WORKERS_SETTING}: the workers file needs runway-cloudflare's `model` feature"
    ))
}

#[cfg(feature = "model")]
fn workers_from_file<A: Agent>(agent: A, env: &Env) -> Result<Workers, String> {
    let code = Workers::from_agent(agent);
    let files = files_kv(env)?;
    let prepare = |m: ModelAgent<WorkersRuntime>| model_on_workers(m, files.clone());
    let no_files = |_: &str| -> Result<String, String> {
        Err("a Worker has no files: give the tools inline (tools = '''…''')".into())
    };
    runway_agents::workers_from_settings(
        &code,
        &WorkersRuntime,
        &|k| setting(env, k),
        &no_files,
        &prepare,
    )?
    .ok_or_else(|| "no workers file".into())
}

/// A model agent as every Worker serves it: downloads, HTTP tools and MCP servers through
/// `fetch` without following redirects (the agent re-checks each hop and keeps a tool's
/// headers on its own origin), kept attachments in the hosted files' KV namespace `files`.
/// Used by the repo's Worker and by a workers file's model workers alike.
#[cfg(feature = "model")]
pub(crate) fn model_on_workers(
    model: ModelAgent<WorkersRuntime>,
    files: worker::kv::KvStore,
) -> ModelAgent<WorkersRuntime> {
    model
        .with_download_client(Arc::new(DownloadClient))
        .with_tool_client(Arc::new(DownloadClient))
        .with_mcp_client(Arc::new(DownloadClient))
        .with_attachment_store(Arc::new(KvAttachmentStore::new(files)))
}

/// The hosted files' KV namespace, where a model agent keeps attachments.
#[cfg(feature = "model")]
pub(crate) fn files_kv(env: &Env) -> Result<worker::kv::KvStore, String> {
    env.kv(FILES_BINDING)
        .map_err(|_| format!("the {FILES_BINDING} KV binding is missing"))
}

/// [`fetch_with`] for the agent as [`Workers`].
async fn serve(
    make_agent: impl FnOnce(&Env) -> Result<(Workers, Providers), String>,
    req: Request,
    env: Env,
    ctx: Context,
) -> worker::Result<web_sys::Response> {
    let app = match app(make_agent, &env) {
        Ok(app) => app,
        Err(e) => {
            web_sys::console::error_1(&format!("runway cannot start: {e}").into());
            return full(json_error(500, "agent misconfigured"));
        }
    };
    // Aborted when the client disconnects (`enable_request_signal` in wrangler.toml): without
    // it, a Worker only notices a hang-up when a write fails.
    let hang_up = req.inner().signal();
    let req = match to_http(&app, req).await {
        Ok(r) => r,
        Err(resp) => return full(resp),
    };
    match app.handle(req).await {
        Reply::Full(r) => full(r),
        Reply::Stream { response, turn } => {
            let (parts, body) = response.into_parts();
            let (resp, pump) = streamed(parts, body, &hang_up)?;
            ctx.wait_until(async move {
                futures::join!(pump.run(), turn);
            });
            Ok(resp)
        }
    }
}

/// The request as the core wants it, or the error response to send. The body is read only
/// after [`Runway::intake`] accepted the head, into the accumulator it gives.
async fn to_http(
    app: &App,
    mut req: Request,
) -> Result<http::Request<Bytes>, http::Response<Bytes>> {
    let mut builder = http::Request::builder()
        .method(req.inner().method().as_str())
        .uri(req.inner().url());
    for (name, value) in req.headers().entries() {
        builder = builder.header(name, value);
    }
    let (parts, ()) = builder
        .body(())
        .map_err(|_| json_error(400, "malformed request"))?
        .into_parts();
    let mut intake = app.intake(&parts).map_err(IntakeRefusal::into_response)?;
    if req.inner().body().is_some() {
        let unreadable = |_| IntakeRefusal::Unreadable.into_response();
        let mut stream = req.stream().map_err(unreadable)?;
        while let Some(chunk) = stream.next().await {
            intake
                .push(&chunk.map_err(unreadable)?)
                .map_err(IntakeRefusal::into_response)?;
        }
    }
    Ok(http::Request::from_parts(parts, intake.finish()))
}

fn init_with(parts: &http::response::Parts) -> worker::Result<web_sys::ResponseInit> {
    let headers = web_sys::Headers::new()?;
    for (name, value) in &parts.headers {
        if let Ok(v) = value.to_str() {
            headers.append(name.as_str(), v)?;
        }
    }
    let init = web_sys::ResponseInit::new();
    init.set_status(parts.status.as_u16());
    init.set_headers(&headers);
    Ok(init)
}

pub(crate) fn full(resp: http::Response<Bytes>) -> worker::Result<web_sys::Response> {
    let (parts, body) = resp.into_parts();
    let init = init_with(&parts)?;
    let mut bytes = body.to_vec();
    let body = (!bytes.is_empty()).then_some(bytes.as_mut_slice());
    Ok(web_sys::Response::new_with_opt_u8_array_and_init(
        body, &init,
    )?)
}

/// A response whose body is the readable side of a `TransformStream`, the first frame already
/// written into it, and the pump feeding it the rest until the turn ends or `hang_up` aborts.
fn streamed(
    parts: http::response::Parts,
    body: TurnBody,
    hang_up: &web_sys::AbortSignal,
) -> worker::Result<(web_sys::Response, Pump)> {
    let init = init_with(&parts)?;
    let pipe = web_sys::TransformStream::new()?;
    let writer = pipe.writable().get_writer()?;
    let pump = Pump::start(body, writer, hang_up);
    let resp =
        web_sys::Response::new_with_opt_readable_stream_and_init(Some(&pipe.readable()), &init)?;
    Ok((resp, pump))
}
