//! `runway playground BASE_URL [--header 'Name: value']... [--listen ADDR]`: the playground page
//! for any External Agent. The page talks to this local server only; it forwards `POST /runs`,
//! AG-UI's `POST /agui[/{agentId}]`,
//! `GET /health` and `GET /usage` (the page's usage figures) to `BASE_URL`, and nowhere else,
//! with the agreed headers added (they never reach the browser and are never logged), and
//! streams the agent's answer back chunk by chunk as it arrives.
//!
//! The headers come from `--header` (visible in the process list, like any argument), or,
//! kept out of it, from `--header-file PATH` or `RUNWAY_PLAYGROUND_HEADERS` (one `Name: value`
//! per line). Every route, the page's included, answers this server's own origin only.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use runway_conformance::HeaderSet;
use runway_core::adapter::AuthHeaders;
use tracing::Instrument;

use super::{PageSettings, json_status, method_not_allowed, page_routes};

/// Console's `POST /runs` body limit: the page never needs more.
const MAX_RUN_BODY_BYTES: usize = 1024 * 1024;

/// The longest query `GET /usage` forwards: the page sends `from=YYYY-MM-DD&to=YYYY-MM-DD`
/// (29 bytes); the agent judges the parameters.
const MAX_USAGE_QUERY_BYTES: usize = 256;

/// Console's connect deadline.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Set on a response the proxy made itself because the agent could not be reached, so the
/// page tells "the agent answered 502" from "no answer at all".
pub const PROXY_ERROR_HEADER: &str = "x-playground-proxy-error";

/// The agent's response headers the page needs (to render and to judge); no other is passed on.
const FORWARDED_RESPONSE_HEADERS: [HeaderName; 4] = [
    header::CONTENT_TYPE,
    header::CACHE_CONTROL,
    header::LOCATION,
    HeaderName::from_static("x-accel-buffering"),
];

/// `runway playground` options.
#[derive(clap::Args, Debug)]
pub struct PlaygroundArgs {
    /// The agent's base_url, as pasted into Console (`https://…`; `http://` for a local agent).
    base_url: String,
    /// A header the agent requires, `Name: value` (repeatable). Added by the local proxy only.
    /// Visible in the process list: prefer --header-file or RUNWAY_PLAYGROUND_HEADERS for
    /// secrets.
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// A file of headers the agent requires, one `Name: value` per line (blank lines and
    /// lines starting with `#` are skipped): keeps their values out of the process list.
    #[arg(long = "header-file", value_name = "PATH")]
    header_file: Option<std::path::PathBuf>,
    /// Headers the agent requires, one `Name: value` per line, from the environment.
    #[arg(
        long = "headers-env",
        env = "RUNWAY_PLAYGROUND_HEADERS",
        hide = true,
        hide_env_values = true
    )]
    headers_env: Option<String>,
    /// Address the playground listens on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8788")]
    listen: SocketAddr,
}

#[derive(Debug, thiserror::Error)]
enum PlaygroundError {
    #[error("{0}")]
    BaseUrl(String),
    #[error("{0}")]
    Header(#[from] runway_conformance::transport::BadHeader),
    #[error("--header-file {0}: {1}")]
    HeaderFile(
        std::path::PathBuf,
        runway_agents::start_up_file::StartUpFileError,
    ),
    #[error("cannot build the HTTP client: {0}")]
    Client(reqwest::Error),
    #[error(
        "--listen {0}: the playground adds the agent's credentials to what it forwards, so it \
         listens on a loopback address only"
    )]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {0}: {1}")]
    Listen(SocketAddr, std::io::Error),
}

struct Upstream {
    client: reqwest::Client,
    runs: reqwest::Url,
    agui: reqwest::Url,
    health: reqwest::Url,
    usage: reqwest::Url,
    headers: HeaderSet,
}

/// Runs `runway playground` until Ctrl-C or SIGTERM.
pub async fn run(args: PlaygroundArgs) -> ExitCode {
    crate::logging::init();
    match serve(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("runway playground: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The base URL without a trailing slash; only http(s), no credentials, query or fragment.
fn parse_base_url(text: &str) -> Result<reqwest::Url, PlaygroundError> {
    let bad = |why: &str| PlaygroundError::BaseUrl(format!("base_url {text:?}: {why}"));
    let mut url = reqwest::Url::parse(text).map_err(|e| bad(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("must be http or https"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must not embed credentials: pass them with --header"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("must not have a query or fragment"));
    }
    let path = url.path().trim_end_matches('/').to_owned();
    url.set_path(&path);
    Ok(url)
}

fn endpoint(base: &reqwest::Url, name: &str) -> reqwest::Url {
    let mut url = base.clone();
    url.set_path(&format!("{}/{name}", base.path().trim_end_matches('/')));
    url
}

async fn serve(args: PlaygroundArgs) -> Result<(), PlaygroundError> {
    if !args.listen.ip().is_loopback() {
        return Err(PlaygroundError::NotLoopback(args.listen));
    }
    let base = parse_base_url(&args.base_url)?;
    let mut lines = args.headers.clone();
    if let Some(path) = &args.header_file {
        let text = runway_agents::read_start_up_file(path)
            .map_err(|e| PlaygroundError::HeaderFile(path.clone(), e))?;
        lines.extend(header_lines(&text));
    }
    if let Some(text) = &args.headers_env {
        lines.extend(header_lines(text));
    }
    let headers = HeaderSet::parse(&lines)?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(PlaygroundError::Client)?;
    let upstream = Arc::new(Upstream {
        client,
        runs: endpoint(&base, "runs"),
        agui: endpoint(&base, "agui"),
        health: endpoint(&base, "health"),
        usage: endpoint(&base, "usage"),
        headers,
    });
    let header_names: Vec<String> = upstream
        .headers
        .0
        .iter()
        .map(|(n, _)| n.as_str().to_owned())
        .collect();
    let settings = PageSettings {
        mode: "proxy",
        target: Some(base.to_string()),
        auth_header_names: Vec::new(),
        auth: AuthHeaders::none(),
    };
    let listener =
        crate::listener::bind(args.listen).map_err(|e| PlaygroundError::Listen(args.listen, e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| PlaygroundError::Listen(args.listen, e))?;
    let app = Router::new()
        .route("/runs", post(forward_run).fallback(method_not_allowed))
        .route("/agui", post(forward_agui).fallback(method_not_allowed))
        .route(
            "/agui/{agent_id}",
            post(forward_agui_worker).fallback(method_not_allowed),
        )
        .route("/health", get(forward_health).fallback(method_not_allowed))
        .route("/usage", get(forward_usage).fallback(method_not_allowed))
        .with_state(upstream)
        .merge(page_routes(settings, ""))
        .fallback(|| async { json_status(StatusCode::NOT_FOUND, "unknown path") })
        // Every route: the page and the findings too, not only the forwarding ones.
        .layer(axum::middleware::from_fn_with_state(addr, own_page_only));
    println!("runway playground for {base}");
    if !header_names.is_empty() {
        println!(
            "adding headers: {} (values never reach the browser)",
            header_names.join(", ")
        );
    }
    println!("open: http://{addr}/");
    // The same connection handling as `runway serve`: a head must arrive within its timeout,
    // connections are bounded, frames go out without Nagle's delay.
    let max_connections = crate::listener::max_connections(crate::listener::raise_fd_limit());
    crate::listener::serve(listener, app, max_connections, crate::shutdown::requested()).await;
    Ok(())
}

/// The `Name: value` lines of a header file or variable (blank and `#` lines skipped).
fn header_lines(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
}

/// Only the playground's own page may use the proxy: the request must name this server as its
/// `Host` (no DNS rebinding), and a browser request must come from this origin (`Origin`,
/// `Sec-Fetch-Site`). A turn must be JSON, which another site cannot send without a CORS
/// preflight this server never grants. Otherwise any web page open in the same browser could
/// make the proxy call the agent with the agreed headers.
async fn own_page_only(
    State(addr): State<SocketAddr>,
    req: Request,
    next: axum::middleware::Next,
) -> Response {
    let h = req.headers();
    let host = h
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let own_host = host == addr.to_string() || host == format!("localhost:{}", addr.port());
    if !own_host || crate::own_origin::from_another_page(h, host) {
        return proxy_error(
            StatusCode::FORBIDDEN,
            "only the playground page served here may use its proxy",
        );
    }
    if req.method() == axum::http::Method::POST && !crate::own_origin::is_json(h) {
        return proxy_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a turn is sent as application/json",
        );
    }
    next.run(req).await
}

async fn forward_run(State(up): State<Arc<Upstream>>, req: Request) -> Response {
    let url = up.runs.clone();
    forward_turn(&up, url, req, "POST /runs").await
}

/// AG-UI's `POST /agui`: the deployment's one agent, forwarded like a Console turn.
async fn forward_agui(State(up): State<Arc<Upstream>>, req: Request) -> Response {
    let url = up.agui.clone();
    forward_turn(&up, url, req, "POST /agui").await
}

/// AG-UI's `POST /agui/{agentId}`: the worker named in the path (re-encoded as one segment).
async fn forward_agui_worker(
    State(up): State<Arc<Upstream>>,
    Path(agent_id): Path<String>,
    req: Request,
) -> Response {
    let url = agui_worker_url(&up.agui, &agent_id);
    forward_turn(&up, url, req, "POST /agui/{agentId}").await
}

fn agui_worker_url(agui: &reqwest::Url, agent_id: &str) -> reqwest::Url {
    let mut url = agui.clone();
    if let Ok(mut segments) = url.path_segments_mut() {
        segments.push(agent_id);
    }
    url
}

/// Forwards a turn's body (bounded as Console bounds `POST /runs`) to `url` with the agreed
/// headers, and streams the answer back.
async fn forward_turn(up: &Upstream, url: reqwest::Url, req: Request, what: &str) -> Response {
    let body = match crate::request_body::read_within(req.into_body(), MAX_RUN_BODY_BYTES).await {
        Ok(b) => b,
        Err(refused) => {
            let mut r = refused.map(Body::from).into_response();
            r.headers_mut()
                .insert(PROXY_ERROR_HEADER, HeaderValue::from_static("1"));
            return r;
        }
    };
    // Logged with the turn's ids (never the headers): the body is the page's own JSON.
    let ids: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let span = tracing::info_span!(
        "turn",
        run_id = ids["runId"].as_str().unwrap_or("-"),
        thread_id = ids["threadId"].as_str().unwrap_or("-"),
    );
    let request = up
        .client
        .post(url)
        .headers(agreed_headers(&up.headers))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "text/event-stream")
        .body(body);
    relay(request, what).instrument(span).await
}

async fn forward_health(State(up): State<Arc<Upstream>>) -> Response {
    let request = up
        .client
        .get(up.health.clone())
        .headers(agreed_headers(&up.headers));
    relay(request, "GET /health").await
}

/// `GET /usage?…`: the deployment's usage report, which the page reads before and after a turn
/// to show what the turn used.
async fn forward_usage(State(up): State<Arc<Upstream>>, RawQuery(query): RawQuery) -> Response {
    let Some(url) = usage_url(&up.usage, query.as_deref()) else {
        return proxy_error(
            StatusCode::BAD_REQUEST,
            "the usage query is too long: use from=YYYY-MM-DD&to=YYYY-MM-DD",
        );
    };
    let request = up.client.get(url).headers(agreed_headers(&up.headers));
    relay(request, "GET /usage").await
}

/// The agent's usage endpoint with the page's query (`None`: a query over
/// [`MAX_USAGE_QUERY_BYTES`]).
fn usage_url(usage: &reqwest::Url, query: Option<&str>) -> Option<reqwest::Url> {
    let query = query.filter(|q| !q.is_empty());
    if query.is_some_and(|q| q.len() > MAX_USAGE_QUERY_BYTES) {
        return None;
    }
    let mut url = usage.clone();
    url.set_query(query);
    Some(url)
}

fn agreed_headers(set: &HeaderSet) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in &set.0 {
        let mut value = value.clone();
        value.set_sensitive(true);
        map.append(name.clone(), value);
    }
    map
}

/// Sends `request` and streams the answer back as it arrives. A body that breaks upstream
/// breaks here too (the chunked response is aborted), so the page sees the truncation.
async fn relay(request: reqwest::RequestBuilder, what: &str) -> Response {
    let upstream = match request.send().await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(endpoint = what, error = %error_chain(&e), "agent unreachable");
            return proxy_error(
                StatusCode::BAD_GATEWAY,
                &format!(
                    "the playground could not reach the agent: {}",
                    error_chain(&e)
                ),
            );
        }
    };
    tracing::info!(
        endpoint = what,
        status = upstream.status().as_u16(),
        "agent answered"
    );
    let mut response = Response::builder().status(upstream.status().as_u16());
    if let Some(h) = response.headers_mut() {
        for name in FORWARDED_RESPONSE_HEADERS {
            for value in upstream.headers().get_all(&name) {
                h.append(name.clone(), value.clone());
            }
        }
    }
    response
        .body(Body::from_stream(upstream.bytes_stream()))
        .unwrap_or_else(|_| proxy_error(StatusCode::BAD_GATEWAY, "invalid response from the agent"))
}

fn proxy_error(status: StatusCode, message: &str) -> Response {
    let mut r = json_status(status, message);
    r.headers_mut()
        .insert(PROXY_ERROR_HEADER, HeaderValue::from_static("1"));
    r
}

/// The error and its causes, which is where reqwest says what went wrong (refused, DNS, TLS).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_rules_and_endpoints() {
        let base = parse_base_url("https://agent.example.com/v1/").unwrap();
        assert_eq!(
            endpoint(&base, "runs").as_str(),
            "https://agent.example.com/v1/runs"
        );
        let base = parse_base_url("http://127.0.0.1:8787").unwrap();
        assert_eq!(
            endpoint(&base, "health").as_str(),
            "http://127.0.0.1:8787/health"
        );
        assert_eq!(
            endpoint(&base, "usage").as_str(),
            "http://127.0.0.1:8787/usage"
        );
        assert_eq!(
            agui_worker_url(&endpoint(&base, "agui"), "desk 7/x").as_str(),
            "http://127.0.0.1:8787/agui/desk%207%2Fx"
        );
        for bad in [
            "ftp://x.example",
            "https://u:p@x.example",
            "https://x.example/?a=1",
            "not a url",
        ] {
            assert!(parse_base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn usage_url_carries_the_page_query_within_its_bound() {
        let usage = endpoint(
            &parse_base_url("https://agent.example.com/v1").unwrap(),
            "usage",
        );
        assert_eq!(
            usage_url(&usage, Some("from=2026-12-01&to=2026-12-03"))
                .unwrap()
                .as_str(),
            "https://agent.example.com/v1/usage?from=2026-12-01&to=2026-12-03"
        );
        for none in [None, Some("")] {
            assert_eq!(
                usage_url(&usage, none).unwrap().as_str(),
                "https://agent.example.com/v1/usage"
            );
        }
        let longest = "x".repeat(MAX_USAGE_QUERY_BYTES);
        assert!(usage_url(&usage, Some(&longest)).is_some());
        assert_eq!(usage_url(&usage, Some(&format!("{longest}x"))), None);
        // Only the query changes: the base path and host stay the agent's.
        let odd = usage_url(&usage, Some("to=../../x&from=@evil.example")).unwrap();
        assert_eq!(odd.host_str(), Some("agent.example.com"));
        assert_eq!(odd.path(), "/v1/usage");
    }
}
