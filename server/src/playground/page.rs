//! The page's files, embedded in the binary so the playground works offline.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");

/// Everything the page loads comes from its own origin; it talks only to its own origin.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

/// `GET /`: the chat page.
pub async fn index() -> Response {
    asset(INDEX, "text/html; charset=utf-8")
}

/// `GET /playground/app.js`.
pub async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

/// `GET /playground/app.css`.
pub async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}
