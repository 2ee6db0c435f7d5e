//! The playground: a chat page that shows an External Agent the way Console shows it, with the
//! raw frames, their arrival times and the contract findings of each turn beside the chat.
//!
//! `runway serve` answers `GET /` with it for the agent it serves (same origin). `runway
//! playground BASE_URL` serves the same page for any External Agent through a small proxy
//! ([`proxy`]) that adds the agreed headers. Only the local server has it: the Lambda and
//! Workers adapters never serve the page.
//!
//! The page (plain HTML, CSS and JS in [`page`], embedded in the binary) plays the turns itself:
//! it posts to `runs` relative to its own URL and records every chunk with its arrival time. It
//! then posts that recording to `POST /playground/findings` ([`findings`]), which judges it
//! with runway-conformance's rules, the same ones `runway check` applies. Around each turn it
//! reads the deployment's `GET usage` (the row of its own random `workspaceId` × the turn's
//! `agentId`) and shows what the row gained as the turn's, and its thread's, usage.

pub mod findings;
pub mod page;
pub mod proxy;

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use runway_core::adapter::AuthHeaders;

/// What the page needs to know about where it is served, and who may use its endpoint.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageSettings {
    /// `serve` (the page and the agent share an origin) or `proxy` (`runway playground`).
    pub mode: &'static str,
    /// The agent's base URL, shown in the page header (`runway playground` only).
    pub target: Option<String>,
    /// Header names the agent requires that the page must ask the user for (`runway serve`
    /// with `RUNWAY_AUTH_HEADERS`; the proxy adds its own, so none there). Never values.
    pub auth_header_names: Vec<String>,
    /// On `runway serve`, the findings endpoint asks for the agent's own header set: a server
    /// that refuses strangers a turn does not judge their recordings either.
    #[serde(skip)]
    pub auth: AuthHeaders,
}

impl PageSettings {
    /// The page on `runway serve`, whose agent requires `auth`.
    pub fn serve(auth: &AuthHeaders) -> Self {
        PageSettings {
            mode: "serve",
            target: None,
            auth_header_names: auth.names().map(str::to_owned).collect(),
            auth: auth.clone(),
        }
    }
}

/// The page, its assets, its settings and the findings endpoint, for any router state, below
/// `base_path` (`""` or `/a/b`): the page at `{base_path}/` calls `runs`, `health` and `usage`
/// by relative URLs, so it reaches the agent's routes under the same base path.
pub fn page_routes<S: Clone + Send + Sync + 'static>(
    settings: PageSettings,
    base_path: &str,
) -> Router<S> {
    let at = |path: &str| format!("{base_path}{path}");
    let mut router = Router::new().route(&at("/"), get(page::index).fallback(method_not_allowed));
    for &(name, source) in page::MODULES {
        router = router.route(
            &at(&format!("/playground/{name}")),
            get(move || async move { page::script(source) }).fallback(method_not_allowed),
        );
    }
    router
        .route(
            &at("/playground/app.css"),
            get(page::style).fallback(method_not_allowed),
        )
        .route(
            &at("/playground/settings"),
            get(|State(s): State<Arc<PageSettings>>| async move { axum::Json(s.as_ref().clone()) })
                .fallback(method_not_allowed),
        )
        .route(
            &at("/playground/findings"),
            post(findings::judge).fallback(method_not_allowed),
        )
        .with_state(Arc::new(settings))
}

/// A known path with the wrong method: 405 with a JSON error, like every other refusal.
pub async fn method_not_allowed() -> Response {
    json_status(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
}

/// An error answer: `status` with `{"error": message}`.
pub fn json_status(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": message }))).into_response()
}
