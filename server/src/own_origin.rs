//! Other web pages cannot drive `runway serve` when it has no auth header set.
//!
//! Without `RUNWAY_AUTH_HEADERS`, anything that can reach the port can run turns, and a web
//! page in the user's browser can reach a loopback port: a `text/plain` POST needs no CORS
//! preflight, a `no-cors` fetch from a page on another loopback address is sent, and a page on
//! a DNS-rebinding name reaches the server as if same-origin. So, as the playground proxy does,
//! such a server answers its own origins only:
//! - `Host` must name it: a loopback name (`localhost`, `*.localhost`), a loopback IP, the
//!   address it listens on, or the host of `RUNWAY_PUBLIC_URL` (a rebinding name is none);
//! - a request that changes anything (any method but `GET`/`HEAD`/`OPTIONS`) from a browser
//!   must come from this very origin: an `Origin` other than `scheme://{Host}`, or a
//!   `Sec-Fetch-Site` other than `same-origin`/`none`, is refused;
//! - a `POST` must be `application/json`, which another site cannot send without a CORS
//!   preflight this server never grants.
//!
//! With an auth header set, a page cannot send it (custom headers need the preflight too), so
//! the server's own check is the auth.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The hosts a request may name.
#[derive(Debug, Clone)]
pub struct OwnOrigins {
    listen: IpAddr,
    public_host: Option<String>,
}

impl OwnOrigins {
    /// The origins of a server listening on `listen`, reachable at `public_url` if set.
    pub fn new(listen: SocketAddr, public_url: Option<&str>) -> Self {
        let public_host = public_url
            .and_then(|u| url::Url::parse(u).ok())
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase));
        Self {
            listen: listen.ip(),
            public_host,
        }
    }

    /// Whether `host` (a `Host` header value, `name[:port]`) names this server.
    pub fn allows_host(&self, host: &str) -> bool {
        let Ok(authority) = host.parse::<http::uri::Authority>() else {
            return false;
        };
        let name = authority.host().to_ascii_lowercase();
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return ip.is_loopback() || (!self.listen.is_unspecified() && ip == self.listen);
        }
        name == "localhost"
            || name.ends_with(".localhost")
            || self.public_host.as_deref() == Some(name.as_str())
    }
}

/// Whether a browser sent the request from a page of another origin than `scheme://{host}`
/// (`Origin`, `Sec-Fetch-Site`); a request without those headers is no browser's.
pub fn from_another_page(h: &http::HeaderMap, host: &str) -> bool {
    let text = |name: HeaderName| h.get(name).and_then(|v| v.to_str().ok());
    let own_origin = text(header::ORIGIN).is_none_or(|o| {
        o.eq_ignore_ascii_case(&format!("http://{host}"))
            || o.eq_ignore_ascii_case(&format!("https://{host}"))
    });
    let same_site = text(HeaderName::from_static("sec-fetch-site"))
        .is_none_or(|s| s == "same-origin" || s == "none");
    !(own_origin && same_site)
}

/// Whether the body is declared `application/json` (parameters allowed): a type no page of
/// another origin can send without a CORS preflight.
pub fn is_json(h: &http::HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|c| c.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": message }))).into_response()
}

/// The middleware: refuses what [`OwnOrigins`] does not allow, before any route runs.
pub async fn own_origins_only(
    State(origins): State<Arc<OwnOrigins>>,
    req: Request,
    next: axum::middleware::Next,
) -> Response {
    let h = req.headers();
    let text = |name: HeaderName| h.get(name).and_then(|v| v.to_str().ok());
    let host = text(header::HOST).unwrap_or_default();
    if !origins.allows_host(host) {
        // Debug only: anyone can send these, and each gets its answer.
        tracing::debug!(
            "request refused: its Host is not this server's (no auth is set, so only its \
             own origins are served)"
        );
        return refuse(
            StatusCode::FORBIDDEN,
            "this server answers requests addressed to it by a loopback name or its \
             RUNWAY_PUBLIC_URL only",
        );
    }
    let reads_only = matches!(
        *req.method(),
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    );
    if !reads_only && from_another_page(h, host) {
        tracing::debug!("request refused: sent by another web page (no auth is set)");
        return refuse(
            StatusCode::FORBIDDEN,
            "another web page may not use this server: set RUNWAY_AUTH_HEADERS to serve \
             other clients",
        );
    }
    if *req.method() == http::Method::POST && !is_json(h) {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a request body must be sent as application/json",
        );
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_that_name_this_server() {
        let o = OwnOrigins::new(
            "127.0.0.1:8787".parse().unwrap(),
            Some("https://agent.example.com/base"),
        );
        for ok in [
            "127.0.0.1:8787",
            "localhost:8787",
            "LOCALHOST",
            "app.localhost:1",
            "[::1]:8787",
            "127.0.0.2",
            "agent.example.com",
        ] {
            assert!(o.allows_host(ok), "{ok}");
        }
        for bad in [
            "",
            "evil.example:8787",
            "localhost.evil.example",
            "10.0.0.5:8787",
            "agent.example.com.evil",
            "a b",
        ] {
            assert!(!o.allows_host(bad), "{bad}");
        }
        let lan = OwnOrigins::new("192.168.1.5:8787".parse().unwrap(), None);
        assert!(lan.allows_host("192.168.1.5:8787"));
        let any = OwnOrigins::new("0.0.0.0:8787".parse().unwrap(), None);
        assert!(!any.allows_host("0.0.0.0:8787"));
    }
}
