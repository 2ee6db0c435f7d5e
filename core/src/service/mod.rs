//! The HTTP surface, sans I/O: an `http::Request` with its body in, a [`Reply`] out.
//!
//! Every adapter (axum, Lambda, Workers) reads the body (refusing more than
//! [`MAX_BODY_BYTES`]), calls [`Runway::handle`], and either writes the full response or
//! returns the streamed body and runs the turn future beside it. All routing, auth, validation
//! and error shapes live here, so every platform answers the same way.
//!
//! Routes are matched exactly below the configured base path (`RUNWAY_BASE_PATH`, see
//! [`crate::service::routing`]), so the agent can sit under any prefix
//! (`https://agent.example.com/fpt/runs`, or cargo-lambda's `/lambda-url/bootstrap/runs`).

pub(crate) mod auth;
pub(crate) mod config;
mod console_route;
pub(crate) mod hosted_files;
mod lowkey_route;
pub(crate) mod os_settings;
pub(crate) mod refusal_log;
pub(crate) mod routing;
mod usage_route;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use serde_json::json;
use tracing::Instrument;

use crate::agent::Agent;
use crate::agent::Workers;
use crate::error::{StoreError, TurnErrorCode};
use crate::http_client::{Http, HttpClient};
use crate::meter::{LogLine, Policy, TurnMetrics};
use crate::platform::maybe_send::BoxFuture;
use crate::platform::runtime::Runtime;
use crate::protocol::{HealthBody, HealthStatus, PROTOCOL_VERSION};
use crate::service::config::Config;
use crate::service::refusal_log::RefusalLog;
use crate::service::routing::{Route, route};
use crate::store::TurnStore;
use crate::turn::abort_tail::PANIC_MESSAGE;
use crate::turn::body::{TurnBody, body_with_first_chunk};
use crate::turn::engine::{Driver, TurnPlan};
use crate::wire::Wire;

/// What an adapter sends back.
pub enum Reply {
    /// A complete response.
    Full(http::Response<Bytes>),
    /// A streamed turn: return `response` at once and run `turn` to completion beside it
    /// (`tokio::spawn`, `wasm_bindgen_futures::spawn_local`…). The first frame is already in
    /// the body. Dropping the body (client gone) makes `turn` stop the agent and finish.
    Stream {
        /// Headers and the streamed body.
        response: http::Response<TurnBody>,
        /// The turn itself.
        turn: BoxFuture<'static, ()>,
    },
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Full(r) => f.debug_tuple("Full").field(&r.status()).finish(),
            Self::Stream { .. } => f.write_str("Stream"),
        }
    }
}

pub(crate) struct Shared<A, S, R> {
    pub(crate) agent: A,
    pub(crate) store: S,
    pub(crate) rt: R,
    pub(crate) config: Config,
    /// The workers served, their limits and model prices ([`Workers`]'s, or one agent for
    /// every `agentId`).
    pub(crate) policy: Arc<Policy>,
    /// Where each turn's report goes.
    pub(crate) metrics: Arc<dyn TurnMetrics>,
    last_store_error_ms: AtomicU64,
    refusals: RefusalLog,
}

impl<A, S, R: Runtime> Shared<A, S, R> {
    pub(crate) fn note_store_error(&self, _e: &StoreError) {
        self.last_store_error_ms
            .store(self.rt.now_ms().max(1), Ordering::Relaxed);
    }
}

/// An agent, a store and a runtime, serving Console's and Lowkey's protocols.
pub struct Runway<A, S, R> {
    shared: Arc<Shared<A, S, R>>,
    /// What [`crate::Turn::http`] sends through (none: agents get `HttpError::Unavailable`).
    http: Option<Arc<dyn HttpClient>>,
}

impl<A, S, R> Clone for Runway<A, S, R> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            http: self.http.clone(),
        }
    }
}

impl<A: Agent, S: TurnStore, R: Runtime> Runway<A, S, R> {
    /// Serves `agent`, keeping threads in `store`. When `agent` is a [`Workers`], only its
    /// `agentId`s are served, under its limits; any other agent serves every `agentId`.
    pub fn new(agent: A, store: S, rt: R, config: Config) -> Self {
        let policy = (&agent as &dyn std::any::Any)
            .downcast_ref::<Workers>()
            .map_or_else(Policy::serve_any, |w| w.policy().clone());
        Self {
            shared: Arc::new(Shared {
                agent,
                store,
                rt,
                config,
                policy: Arc::new(policy),
                metrics: Arc::new(LogLine),
                last_store_error_ms: AtomicU64::new(0),
                refusals: RefusalLog::default(),
            }),
            http: None,
        }
    }

    /// Sends each finished turn's [`TurnReport`](crate::meter::TurnReport) to `metrics`
    /// instead of the default log line ([`LogLine`]). Call before serving.
    ///
    /// # Panics
    /// If this `Runway` was already cloned (it is being served).
    pub fn with_metrics(mut self, metrics: impl TurnMetrics) -> Self {
        Arc::get_mut(&mut self.shared)
            .expect("with_metrics is called before serving")
            .metrics = Arc::new(metrics);
        self
    }

    /// The workers served, their limits and model prices.
    pub fn policy(&self) -> &Policy {
        &self.shared.policy
    }

    /// Gives the agent an HTTP client ([`crate::Turn::http`]): `ReqwestClient` on native
    /// targets, `runway-cloudflare`'s on Workers. Without one, the agent's requests fail with
    /// `HttpError::Unavailable`.
    pub fn with_http_client(mut self, client: impl HttpClient) -> Self {
        self.http = Some(Arc::new(client));
        self
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.shared.store
    }

    /// The `/health` body: no store, no model, only what is known in memory. `degraded` for a
    /// while after a store error.
    pub fn health(&self) -> HealthBody {
        let last = self.shared.last_store_error_ms.load(Ordering::Relaxed);
        let window = self.shared.config.degraded_after_store_error.as_millis() as u64;
        let status = if last != 0 && self.shared.rt.now_ms() < last + window {
            HealthStatus::Degraded
        } else {
            HealthStatus::Ok
        };
        HealthBody {
            status,
            protocol_versions: vec![PROTOCOL_VERSION.into()],
            name: Some(self.shared.config.name.clone()),
            version: Some(self.shared.config.version.clone()),
        }
    }

    /// Decides from the request head alone whether its body may be read. Every route but
    /// hosted files needs the auth header set, so adapters call this before reading a body:
    /// a stranger's request is refused without runway buffering any of it. `Err` is the
    /// complete answer (401). [`Runway::handle`] checks the same again.
    pub fn authorize(
        &self,
        parts: &http::request::Parts,
    ) -> Result<(), Box<http::Response<Bytes>>> {
        // Hosted files need no auth (a browser opens the link). Anything else, an unknown path
        // included, needs the header set, so a stranger's body is never read.
        let open = matches!(
            route(parts.uri.path(), &self.shared.config.base_path),
            Some(Route::File { .. })
        );
        if open || self.shared.config.auth.check(&parts.headers) {
            return Ok(());
        }
        if let Some(unlogged) = self.shared.refusals.admit(self.shared.rt.now_ms()) {
            tracing::warn!(path = %parts.uri.path(), unlogged, "request refused before its body: missing or wrong auth headers");
        }
        Err(Box::new(json_error(401, "unauthorized")))
    }

    /// Answers one HTTP request.
    pub async fn handle(&self, req: http::Request<Bytes>) -> Reply {
        let path = req.uri().path().to_owned();
        let method = req.method().clone();
        let route = match route(&path, &self.shared.config.base_path) {
            Some(Route::File { token, name }) => {
                if method != http::Method::GET && method != http::Method::HEAD {
                    return Reply::Full(method_not_allowed("GET"));
                }
                return Reply::Full(self.serve_file(token, name).await);
            }
            Some(r) => r,
            None => {
                return Reply::Full(json_error(
                    404,
                    "no such endpoint: use POST /runs, POST /lowkey/turn, GET /health or GET /usage",
                ));
            }
        };
        if !self.shared.config.auth.check(req.headers()) {
            // Anyone can send these: one line per interval, with how many were not logged.
            if let Some(unlogged) = self.shared.refusals.admit(self.shared.rt.now_ms()) {
                tracing::warn!(path = %path, unlogged, "request refused: missing or wrong auth headers");
            }
            return Reply::Full(json_error(401, "unauthorized"));
        }
        match route {
            Route::Health => {
                if method != http::Method::GET && method != http::Method::HEAD {
                    return Reply::Full(method_not_allowed("GET"));
                }
                Reply::Full(json_response(200, &self.health()))
            }
            Route::Runs => self.console_route(&req),
            Route::LowkeyTurn => self.lowkey_route(&req),
            Route::Usage => Reply::Full(self.usage_route(&req).await),
            Route::File { .. } => unreachable!("answered above"),
        }
    }

    /// Streams a turn with `wire`: writes its first bytes into the body, then hands back the
    /// body and the engine's future.
    pub(crate) fn stream<W: Wire>(
        &self,
        mut wire: W,
        plan: TurnPlan,
        span: tracing::Span,
    ) -> Reply {
        wire.start();
        let first = wire.take_output();
        let abort_tail = wire.abort_tail(TurnErrorCode::AgentPanic, PANIC_MESSAGE);
        let (sender, body) = body_with_first_chunk(first, abort_tail);
        let shared = Arc::clone(&self.shared);
        let mut plan = plan;
        let (http, http_guard) = Http::for_turn(
            self.http.clone(),
            Arc::clone(&shared) as _,
            shared.config.turn_deadline,
        );
        plan.turn.http = http;
        // Action claims are held per delivery: a re-delivery of this run is another holder.
        let mut holder = [0u8; 16];
        shared.rt.fill_random(&mut holder);
        plan.turn.actions = crate::agent::turn_actions::TurnActions::new(
            Arc::clone(&shared) as _,
            plan.thread_key.clone(),
            hex::encode(holder),
        );
        plan.turn
            .usage
            .start(shared.rt.now_ms(), Arc::clone(&shared.policy));
        let report_turn = plan.turn.clone();
        // The body stays open until the turn's usage is recorded: on Lambda the invocation
        // ends with the body, and nothing after it is sure to run.
        let body_open = sender.tx.clone();
        let turn = async move {
            // Dropped when the turn ends or is dropped: ends every request the agent started.
            let _http_guard = http_guard;
            Driver::new(&shared, wire, sender).drive(plan).await;
            crate::meter::record::after_turn(&shared, &report_turn).await;
            drop(body_open);
        }
        .instrument(span);
        let mut response = http::Response::new(body);
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static(W::CONTENT_TYPE),
        );
        headers.insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("no-cache"),
        );
        headers.insert("x-accel-buffering", http::HeaderValue::from_static("no"));
        Reply::Stream {
            response,
            turn: Box::pin(turn),
        }
    }

    async fn serve_file(&self, token: &str, name: &str) -> http::Response<Bytes> {
        if !hosted_files::is_token(token) {
            return json_error(404, "no such file");
        }
        let now = self.shared.rt.now_ms();
        match self.shared.store.get_file(token, now).await {
            // The link names the file: the same token under another name is not it.
            Ok(Some(file)) if file.name == name => hosted_files::file_response(file),
            Ok(Some(_)) => json_error(404, "no such file"),
            Ok(None) => json_error(404, "no such file, or the link has expired"),
            Err(e) => {
                self.shared.note_store_error(&e);
                tracing::error!(code = "STORE_UNAVAILABLE", error = %e, "could not read a hosted file");
                json_error(503, "storage unavailable")
            }
        }
    }

    /// The absolute base URL hosted-file links start with: `config.public_url` if set, else
    /// the origin the platform vouches for ([`PlatformOrigin`] in the request's extensions),
    /// else the request URI's own scheme and authority when it is absolute (Workers: the
    /// Worker's URL), else `http://localhost`; then `config.base_path`. Never `Host` or
    /// `X-Forwarded-Proto`: a caller sets those, and the links are stored in the recording
    /// that replays.
    pub fn public_base_url<B>(&self, req: &http::Request<B>) -> String {
        let config = &self.shared.config;
        if let Some(u) = &config.public_url {
            return u.clone();
        }
        let origin = match (req.extensions().get::<PlatformOrigin>(), req.uri()) {
            (Some(o), _) => o.0.clone(),
            (None, uri) => match (uri.scheme_str(), uri.authority()) {
                (Some(scheme), Some(authority)) => format!("{scheme}://{authority}"),
                _ => "http://localhost".to_owned(),
            },
        };
        format!("{}{}", origin.trim_end_matches('/'), config.base_path)
    }
}

/// The origin (`scheme://host[:port]`) a request reached, as the platform, not the caller,
/// knows it: the Lambda function URL's domain, the local server's listen address. An adapter
/// puts it in the request's extensions; hosted-file links are built from it when
/// `RUNWAY_PUBLIC_URL` is unset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformOrigin(pub String);

/// `{"error": message}` with `status`.
pub fn json_error(status: u16, message: &str) -> http::Response<Bytes> {
    json_response(status, &json!({ "error": message }))
}

pub(crate) fn json_response<T: serde::Serialize>(status: u16, body: &T) -> http::Response<Bytes> {
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CACHE_CONTROL, "no-store")
        .body(Bytes::from(serde_json::to_vec(body).unwrap_or_default()))
        .unwrap_or_default()
}

pub(crate) fn method_not_allowed(allow: &'static str) -> http::Response<Bytes> {
    let mut r = json_error(405, &format!("method not allowed: use {allow}"));
    r.headers_mut()
        .insert(http::header::ALLOW, http::HeaderValue::from_static(allow));
    r
}
