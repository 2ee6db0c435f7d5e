//! The HTTP surface, sans I/O: an `http::Request` with its body in, a [`Reply`] out.
//!
//! Every adapter (axum, Lambda, Workers) takes the request in as [`intake`] says (the head
//! checked first, the body read up to [`MAX_BODY_BYTES`](config::MAX_BODY_BYTES)), calls
//! [`Runway::handle`], and either writes the full response or returns the streamed body and
//! runs the turn future beside it. All routing, auth, validation and error shapes live here,
//! so every platform answers the same way.
//!
//! Routes are matched exactly below the configured base path (`RUNWAY_BASE_PATH`, see
//! [`crate::service::routing`]), so the agent can sit under any prefix
//! (`https://agent.example.com/fpt/runs`, or cargo-lambda's `/lambda-url/bootstrap/runs`).

pub(crate) mod access;
#[cfg(feature = "agui")]
mod agui_route;
pub(crate) mod auth;
pub(crate) mod config;
#[cfg(feature = "connect")]
mod connect_route;
#[cfg(feature = "connect")]
mod connections_route;
mod console_route;
pub(crate) mod hosted_files;
pub(crate) mod intake;
#[cfg(feature = "lowkey")]
mod lowkey_route;
pub(crate) mod os_settings;
pub(crate) mod refusal_log;
pub(crate) mod routing;
mod usage_route;
pub(crate) mod workers;

use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;

use crate::agent::Agent;
use crate::http_client::HttpClient;
use crate::meter::{Policy, TurnMetrics};
use crate::platform::maybe_send::BoxFuture;
use crate::platform::runtime::Runtime;
use crate::protocol::{HealthBody, HealthStatus, PROTOCOL_VERSION};
use crate::service::access::Admission;
use crate::service::config::Config;
use crate::service::refusal_log::RefusalLog;
use crate::service::routing::{Route, route};
use crate::service::workers::Workers;
use crate::store::TurnStore;
use crate::turn::body::TurnBody;
use crate::turn::engine::Engine;
use crate::turn::plan::TurnPlan;
use crate::wire::writer::{Encoding, Writer};

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

/// An agent, a store and a runtime, serving Console's and Lowkey's protocols.
pub struct Runway<A, S, R> {
    /// What every turn runs with.
    engine: Arc<Engine<A, S, R>>,
    /// The deployment's settings (the engine runs with its part of them).
    config: Arc<Config>,
    /// Refused requests, logged at a bounded rate.
    refusals: Arc<RefusalLog>,
    /// Turns refused because no header set is configured (logged at error, rate-limited).
    unconfigured_refusals: Arc<RefusalLog>,
    /// What [`crate::Turn::http`] sends through (none: agents get `HttpError::Unavailable`).
    http: Option<Arc<dyn HttpClient>>,
}

impl<A, S, R> Clone for Runway<A, S, R> {
    fn clone(&self) -> Self {
        Self {
            engine: Arc::clone(&self.engine),
            config: Arc::clone(&self.config),
            refusals: Arc::clone(&self.refusals),
            unconfigured_refusals: Arc::clone(&self.unconfigured_refusals),
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
            engine: Arc::new(Engine::new(agent, store, rt, config.turn_config(), policy)),
            config: Arc::new(config),
            refusals: Arc::default(),
            unconfigured_refusals: Arc::default(),
            http: None,
        }
    }

    /// Sends each finished turn's [`TurnReport`](crate::meter::TurnReport) to `metrics`
    /// instead of the default log line ([`LogLine`](crate::meter::LogLine)). Call before serving.
    ///
    /// # Panics
    /// If this `Runway` was already cloned (it is being served).
    pub fn with_metrics(mut self, metrics: impl TurnMetrics) -> Self {
        Arc::get_mut(&mut self.engine)
            .expect("with_metrics is called before serving")
            .metrics = Arc::new(metrics);
        self
    }

    /// The workers served, their limits and model prices.
    pub fn policy(&self) -> &Policy {
        &self.engine.policy
    }

    /// Gives the agent an HTTP client ([`crate::Turn::http`]): `ReqwestClient` on native
    /// targets, `runway-cloudflare`'s on Workers. Without one, the agent's requests fail with
    /// `HttpError::Unavailable`.
    pub fn with_http_client(mut self, client: impl HttpClient) -> Self {
        self.http = Some(Arc::new(client));
        self
    }

    /// Serves connected accounts for `providers` (every worker's), and for each worker's own
    /// when the agent is a [`Workers`] ([`Workers::providers`]): [`crate::Turn::connection`],
    /// and the routes `GET {base}/connect/{id}` and `GET {base}/callback`, sealing tokens with
    /// `config.vault_key`. Call after [`Runway::with_http_client`] and before serving; no
    /// providers changes nothing.
    ///
    /// # Errors
    /// A provider without `RUNWAY_VAULT_KEY` (named), one key declared differently by two
    /// workers, or no HTTP client.
    ///
    /// # Panics
    /// If this `Runway` was already cloned (it is being served).
    pub fn with_providers(
        mut self,
        providers: crate::connect::provider::Providers,
    ) -> Result<Self, crate::connect::ConnectionsError> {
        let engine =
            Arc::get_mut(&mut self.engine).expect("with_providers is called before serving");
        // A workers file's workers bring their own (their tools files').
        let per_worker = (&engine.agent as &dyn std::any::Any)
            .downcast_ref::<Workers>()
            .map(|w| w.worker_providers().clone())
            .unwrap_or_default();
        #[cfg(feature = "connect")]
        {
            engine.connections = crate::connect::Connections::new(
                providers,
                per_worker,
                self.config.vault_key.clone(),
                self.http.clone(),
            )?;
        }
        // Built without connected accounts: a provider is refused at start-up (never a turn
        // that cannot reach the account it was configured for).
        #[cfg(not(feature = "connect"))]
        if let Some(p) = providers
            .iter()
            .chain(per_worker.values().flat_map(|ps| ps.iter()))
            .next()
        {
            return Err(crate::connect::ConnectionsError::NotBuilt(p.key.clone()));
        }
        Ok(self)
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.engine.store
    }

    /// The `/health` body: no store, no model, only what is known in memory. `degraded` for a
    /// while after a store error.
    pub fn health(&self) -> HealthBody {
        let window = self.config.degraded_after_store_error;
        let status = if self.engine.store_failed_within(window) {
            HealthStatus::Degraded
        } else {
            HealthStatus::Ok
        };
        HealthBody {
            status,
            protocol_versions: vec![PROTOCOL_VERSION.into()],
            name: Some(self.config.name.clone()),
            version: Some(self.config.version.clone()),
        }
    }

    /// Decides from the request head alone whether its body may be read. Every route but
    /// hosted files needs the auth header set, so adapters call this (through
    /// [`Runway::intake`]) before reading a body: a stranger's request is refused without
    /// runway buffering any of it. `Err` is the
    /// complete answer (401; 500 for a turn when no header set is configured, see
    /// [`crate::adapter::Access`]). [`Runway::handle`] checks the same again.
    pub fn authorize(
        &self,
        parts: &http::request::Parts,
    ) -> Result<(), Box<http::Response<Bytes>>> {
        // Hosted files need no auth (a browser opens the link). Anything else, an unknown path
        // included, needs the header set, so a stranger's body is never read.
        let route = route(parts.uri.path(), &self.config.base_path);
        // The connect routes are opened by a browser too: their single-use state authorizes
        // them (see `crate::connect`).
        if matches!(
            route,
            Some(
                Route::File { .. }
                    | Route::Connect { .. }
                    | Route::Callback
                    | Route::ClientDocument
            )
        ) {
            return Ok(());
        }
        self.check_access(parts.uri.path(), route.as_ref(), &parts.headers)
    }

    /// The access decision for a request to `route` (`None`: no such endpoint, which needs
    /// the header set like any other), with its logging; `Err` is the answer.
    fn check_access(
        &self,
        path: &str,
        route: Option<&Route<'_>>,
        headers: &http::HeaderMap,
    ) -> Result<(), Box<http::Response<Bytes>>> {
        // Without a header set only /health answers: turns, the usage report and anything an
        // adapter serves beside them (`runway serve`'s /metrics) stay closed.
        let guarded = !matches!(route, Some(Route::Health));
        let now = self.engine.rt.now_ms();
        match self.config.access.admits(headers, guarded) {
            Admission::Admitted => Ok(()),
            Admission::Unauthorized => {
                // Anyone can send these: one line per interval, with how many were not logged.
                if let Some(unlogged) = self.refusals.count_refusal(now) {
                    tracing::warn!(path = %path, unlogged, "request refused: missing or wrong auth headers");
                }
                Err(Box::new(json_error(401, "unauthorized")))
            }
            Admission::Unconfigured(message) => {
                if let Some(unlogged) = self.unconfigured_refusals.count_refusal(now) {
                    tracing::error!(code = "AUTH_NOT_CONFIGURED", path = %path, unlogged, "request refused: {message}");
                }
                Err(Box::new(json_error(500, &message)))
            }
        }
    }

    /// Answers one HTTP request.
    pub async fn handle(&self, req: http::Request<Bytes>) -> Reply {
        let path = req.uri().path().to_owned();
        let method = req.method().clone();
        let route = match route(&path, &self.config.base_path) {
            Some(Route::File { token, name }) => {
                if method != http::Method::GET && method != http::Method::HEAD {
                    return Reply::Full(method_not_allowed("GET"));
                }
                return Reply::Full(self.serve_file(token, name).await);
            }
            #[cfg(feature = "connect")]
            Some(Route::Connect { id }) => {
                if method != http::Method::GET {
                    return Reply::Full(method_not_allowed("GET"));
                }
                return Reply::Full(self.connect_route(id).await);
            }
            #[cfg(feature = "connect")]
            Some(Route::Callback) => {
                if method != http::Method::GET {
                    return Reply::Full(method_not_allowed("GET"));
                }
                let query = req.uri().query().unwrap_or("").to_owned();
                return Reply::Full(self.callback_route(&query).await);
            }
            #[cfg(not(feature = "connect"))]
            Some(Route::Connect { .. } | Route::Callback) => {
                return Reply::Full(not_built("connected accounts", "connect"));
            }
            #[cfg(feature = "connect")]
            Some(Route::ClientDocument) => {
                if method != http::Method::GET && method != http::Method::HEAD {
                    return Reply::Full(method_not_allowed("GET"));
                }
                let base = self.public_base_url(&req);
                return Reply::Full(self.client_document_route(&base));
            }
            Some(r) => r,
            None => {
                return Reply::Full(json_error(
                    404,
                    "no such endpoint: use POST /runs, POST /agui, POST /lowkey/turn, GET /health, GET /usage or GET /connections",
                ));
            }
        };
        if let Err(refused) = self.check_access(&path, Some(&route), req.headers()) {
            return Reply::Full(*refused);
        }
        match route {
            Route::Health => {
                if method != http::Method::GET && method != http::Method::HEAD {
                    return Reply::Full(method_not_allowed("GET"));
                }
                Reply::Full(json_response(200, &self.health()))
            }
            Route::Runs => self.console_route(&req),
            #[cfg(feature = "lowkey")]
            Route::LowkeyTurn => self.lowkey_route(&req),
            #[cfg(not(feature = "lowkey"))]
            Route::LowkeyTurn => Reply::Full(not_built("Lowkey's protocol", "lowkey")),
            #[cfg(feature = "agui")]
            Route::Agui { agent_id } => self.agui_route(&req, agent_id),
            #[cfg(not(feature = "agui"))]
            Route::Agui { .. } => Reply::Full(not_built("AG-UI", "agui")),
            Route::Usage => Reply::Full(self.usage_route(&req).await),
            #[cfg(feature = "connect")]
            Route::Connections => Reply::Full(self.connections_route(&req).await),
            #[cfg(not(feature = "connect"))]
            Route::Connections => Reply::Full(not_built("connected accounts", "connect")),
            Route::File { .. }
            | Route::Connect { .. }
            | Route::Callback
            | Route::ClientDocument => {
                unreachable!("answered above")
            }
        }
    }

    /// Streams a turn written by `writer`: its first bytes are in the body before the
    /// engine runs.
    #[allow(private_bounds)]
    pub(crate) fn stream<E: Encoding>(
        &self,
        writer: Writer<E>,
        plan: TurnPlan,
        span: tracing::Span,
    ) -> Reply {
        let (body, turn) = self.engine.start(writer, plan, self.http.clone(), span);
        let mut response = http::Response::new(body);
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static(E::CONTENT_TYPE),
        );
        headers.insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("no-cache"),
        );
        headers.insert("x-accel-buffering", http::HeaderValue::from_static("no"));
        Reply::Stream { response, turn }
    }

    async fn serve_file(&self, token: &str, name: &str) -> http::Response<Bytes> {
        if !hosted_files::is_token(token) {
            return json_error(404, "no such file");
        }
        let now = self.engine.rt.now_ms();
        match self.engine.store.get_file(token, now).await {
            // The link names the file: the same token under another name is not it.
            Ok(Some(file)) if file.name == name => hosted_files::file_response(file),
            Ok(Some(_)) => json_error(404, "no such file"),
            Ok(None) => json_error(404, "no such file, or the link has expired"),
            Err(e) => {
                self.engine.note_store_error();
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
        let config = &self.config;
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

/// The answer to a route of a part this build left out (a cargo feature of runway-core that is
/// off): 404 with `{"error"}` naming the part and the feature, so an operator sees at once that
/// the deployment, not the request, is missing something.
#[cfg(any(
    not(feature = "lowkey"),
    not(feature = "agui"),
    not(feature = "connect")
))]
fn not_built(part: &str, feature: &str) -> http::Response<Bytes> {
    json_error(
        404,
        &format!(
            "this deployment was built without {part}: it needs runway-core's `{feature}` \
             feature (on by default; see the README's \"Cargo features\")"
        ),
    )
}

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
