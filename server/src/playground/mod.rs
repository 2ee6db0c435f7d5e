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
//! `agentId`, ids as runway stores them: `GET /playground/storage-id`) and shows what the row
//! gained as the turn's, and its thread's, usage.

pub mod findings;
pub mod page;
pub mod proxy;

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
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
            &at("/playground/storage-id"),
            get(storage_id).fallback(method_not_allowed),
        )
        .route(
            &at("/playground/findings"),
            post(findings::judge).fallback(method_not_allowed),
        )
        .with_state(Arc::new(settings))
}

/// `GET /playground/storage-id?id=…`: `{"storageId"}`, the form runway stores the id in (in the
/// usage report's rows, say), derived by the core's one `storage_id`, so the page never
/// re-derives a storage format of its own.
async fn storage_id(uri: Uri) -> Response {
    let id = uri.query().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes()).find_map(|(k, v)| (k == "id").then_some(v))
    });
    match id {
        Some(id) => axum::Json(serde_json::json!({
            "storageId": runway_core::adapter::storage_id(&id)
        }))
        .into_response(),
        None => json_status(StatusCode::BAD_REQUEST, "give the id: ?id=…"),
    }
}

/// A known path with the wrong method: 405 with a JSON error, like every other refusal.
pub async fn method_not_allowed() -> Response {
    json_status(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
}

/// An error answer: `status` with `{"error": message}`.
pub fn json_status(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": message }))).into_response()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use tower::ServiceExt;

    use super::*;

    async fn get(router: &Router, uri: &str) -> (StatusCode, serde_json::Value) {
        let req = axum::http::Request::get(uri).body(Body::empty()).unwrap();
        let r = router.clone().oneshot(req).await.unwrap();
        let status = r.status();
        let body = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    /// The page reads usage rows by the ids' stored form, which the server gives it from the
    /// core's `storage_id`: verbatim when short and plain, else `~` and the SHA-256 in hex.
    #[tokio::test]
    async fn the_page_gets_an_ids_storage_form_from_the_server() {
        let router: Router = page_routes(PageSettings::serve(&AuthHeaders::default()), "/base");
        let (status, body) = get(&router, "/base/playground/storage-id?id=desk-7").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, serde_json::json!({ "storageId": "desk-7" }));
        // `desk~7`, percent-encoded as the page sends it.
        let (_, body) = get(&router, "/base/playground/storage-id?id=desk%7E7").await;
        assert_eq!(
            body["storageId"],
            "~d7a012ef0bddae1ad60dcbcab1d33b56e8c6cda909fe30a88e6f95186f61f41f"
        );
        let long = "7".repeat(129);
        let (_, body) = get(&router, &format!("/base/playground/storage-id?id={long}")).await;
        assert_eq!(body["storageId"], runway_core::adapter::storage_id(&long));
        assert!(body["storageId"].as_str().unwrap().starts_with('~'));
        let (status, body) = get(&router, "/base/playground/storage-id").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(body["error"].is_string());
    }
}
