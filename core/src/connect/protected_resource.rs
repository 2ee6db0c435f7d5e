//! The first step of MCP authorization (`[[mcp]] auth = "oauth"`): which authorization
//! server an MCP server trusts, from its protected resource metadata (RFC 9728).
//!
//! An unauthenticated GET of the server's URL is answered 401 with
//! `WWW-Authenticate: Bearer resource_metadata="…"` (and maybe `scope="…"`); without that
//! parameter the well-known URLs are tried: `/.well-known/oauth-protected-resource` followed
//! by the server's path, then at the root. The metadata's `resource` must be the server
//! (same origin, the server's path at or below the resource's: RFC 9728 §3.3, as the MCP
//! SDKs check it), and its first `authorization_servers` entry is the issuer then read by
//! [`discovery`](crate::connect::discovery). Every document is fetched with the bounds of
//! discovery (64 KiB, 10 s); every URL is https, or http on a loopback address.

use std::sync::Arc;
use std::time::Duration;

use futures::future::{Either, select};
use serde::Deserialize;

use crate::connect::discovery::{DiscoveryError, fetch_json};
use crate::connect::provider::provider_url;
use crate::http_client::{HttpClient, HttpRequest};
use crate::platform::runtime::Runtime;

/// How long the unauthenticated probe of the MCP server may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest `WWW-Authenticate` value looked into.
const MAX_CHALLENGE: usize = 4096;

/// What an MCP server's protected resource metadata says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProtectedResource {
    /// Its resource identifier: the `resource` indicator (RFC 8707) of every authorization
    /// and token request, so the tokens are for this server alone.
    pub(crate) resource: String,
    /// The authorization server it trusts (the first it names).
    pub(crate) issuer: url::Url,
    /// The scopes to ask for: the 401's `scope`, else the metadata's `scopes_supported`.
    pub(crate) scopes: Vec<String>,
}

#[derive(Deserialize)]
struct ResourceMetadata {
    resource: String,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
}

/// The protected resource metadata of the MCP server at `server`.
///
/// # Errors
/// None readable, another resource named, or no usable authorization server.
pub(crate) async fn discover_resource<R: Runtime>(
    http: &Arc<dyn HttpClient>,
    rt: &R,
    server: &url::Url,
) -> Result<ProtectedResource, DiscoveryError> {
    let challenge = probe(http, rt, server).await;
    let mut candidates = Vec::new();
    if let Some(at) = challenge
        .as_ref()
        .and_then(|c| c.resource_metadata.as_deref())
        .and_then(|raw| provider_url(raw).ok())
    {
        candidates.push(at);
    }
    candidates.extend(well_known_urls(server));
    let mut failures = Vec::new();
    for at in candidates {
        let metadata: ResourceMetadata = match fetch_json(http, rt, &at).await {
            Ok(m) => m,
            Err(why) => {
                failures.push(format!("{at}: {why}"));
                continue;
            }
        };
        if !is_resource_of(&metadata.resource, server) {
            return Err(DiscoveryError::BadResourceMetadata(
                at.to_string(),
                "names another resource than the MCP server",
            ));
        }
        let issuer = metadata
            .authorization_servers
            .first()
            .and_then(|raw| provider_url(raw).ok())
            .ok_or_else(|| {
                DiscoveryError::BadResourceMetadata(
                    at.to_string(),
                    "names no usable authorization server",
                )
            })?;
        let scopes = match challenge.as_ref().and_then(|c| c.scope.as_deref()) {
            Some(scope) => scope.split_whitespace().map(str::to_owned).collect(),
            None => metadata.scopes_supported,
        };
        return Ok(ProtectedResource {
            resource: metadata.resource,
            issuer,
            scopes,
        });
    }
    Err(DiscoveryError::NoResourceMetadata(
        server.to_string(),
        failures.join("; "),
    ))
}

/// The parameters of a `Bearer` challenge runway uses.
#[derive(Debug, Default, PartialEq, Eq)]
struct Challenge {
    resource_metadata: Option<String>,
    scope: Option<String>,
}

/// An unauthenticated GET of the server: its 401's challenge, if it answered one in time.
async fn probe<R: Runtime>(
    http: &Arc<dyn HttpClient>,
    rt: &R,
    server: &url::Url,
) -> Option<Challenge> {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static("application/json, text/event-stream"),
    );
    let request = HttpRequest {
        method: http::Method::GET,
        url: server.clone(),
        headers,
        body: bytes::Bytes::new(),
    };
    let sent = http.send(request);
    let timer = rt.sleep(PROBE_TIMEOUT);
    let response = match select(Box::pin(sent), Box::pin(timer)).await {
        Either::Left((Ok(r), _)) => r,
        _ => return None,
    };
    if response.status() != http::StatusCode::UNAUTHORIZED {
        return None;
    }
    // The body is not read: dropping the response ends it.
    response
        .headers()
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter(|v| v.len() <= MAX_CHALLENGE)
        .map(parse_challenge)
        .find(|c| c.resource_metadata.is_some() || c.scope.is_some())
}

/// `resource_metadata` and `scope` of a `Bearer …` challenge (quoted or bare values).
fn parse_challenge(value: &str) -> Challenge {
    let mut out = Challenge::default();
    let Some(rest) = value
        .trim_start()
        .get(..6)
        .filter(|s| s.eq_ignore_ascii_case("bearer"))
        .map(|_| &value.trim_start()[6..])
    else {
        return out;
    };
    let mut rest = rest;
    while let Some(eq) = rest.find('=') {
        let name = rest[..eq]
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = rest[eq + 1..].trim_start();
        let (val, next) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            }
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim(), &after[end..])
        };
        match name.as_str() {
            "resource_metadata" => out.resource_metadata = Some(val.to_owned()),
            "scope" => out.scope = Some(val.to_owned()),
            _ => {}
        }
        rest = next;
    }
    out
}

/// RFC 9728 §3.1's URLs for `server`: the well-known segment before its path, then at the
/// root alone.
fn well_known_urls(server: &url::Url) -> Vec<url::Url> {
    let path = server.path().trim_end_matches('/');
    let mut urls = Vec::new();
    for suffix in [path, ""] {
        let mut u = server.clone();
        u.set_path(&format!("/.well-known/oauth-protected-resource{suffix}"));
        u.set_query(None);
        u.set_fragment(None);
        if !urls.contains(&u) {
            urls.push(u);
        }
    }
    urls
}

/// Whether `resource` names the MCP server at `server`: the same origin, and the server's
/// path at or below the resource's (a trailing slash aside).
fn is_resource_of(resource: &str, server: &url::Url) -> bool {
    let Ok(resource) = url::Url::parse(resource) else {
        return false;
    };
    if resource.origin() != server.origin() {
        return false;
    }
    let base = resource.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    path == base || path.starts_with(&format!("{base}/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_gives_the_metadata_url_and_scope() {
        let c = parse_challenge(
            "Bearer error=\"invalid_token\", error_description=\"a, b\", \
             resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\", scope=\"a b\"",
        );
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(parse_challenge("Basic realm=\"x\""), Challenge::default());
        assert_eq!(
            parse_challenge("bearer resource_metadata=https://x.example/m")
                .resource_metadata
                .as_deref(),
            Some("https://x.example/m")
        );
    }

    #[test]
    fn well_known_urls_are_the_path_form_then_the_root() {
        let urls: Vec<String> = well_known_urls(&"https://mcp.example/v1/mcp/".parse().unwrap())
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            urls,
            [
                "https://mcp.example/.well-known/oauth-protected-resource/v1/mcp",
                "https://mcp.example/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            well_known_urls(&"https://mcp.example".parse().unwrap()).len(),
            1
        );
    }

    #[test]
    fn the_resource_must_be_the_server_or_above_it_on_its_origin() {
        let server: url::Url = "https://mcp.example/v1/mcp".parse().unwrap();
        assert!(is_resource_of("https://mcp.example/v1/mcp", &server));
        assert!(is_resource_of("https://mcp.example/v1/mcp/", &server));
        assert!(is_resource_of("https://mcp.example/", &server));
        assert!(is_resource_of("https://mcp.example", &server));
        assert!(!is_resource_of("https://mcp.example/v1/mc", &server));
        assert!(!is_resource_of("https://evil.example/v1/mcp", &server));
        assert!(!is_resource_of("http://mcp.example/v1/mcp", &server));
        assert!(!is_resource_of(
            "https://mcp.example/v1/mcp/deeper",
            &server
        ));
    }
}
