//! A provider declared by its `issuer`: its authorization, token and revocation endpoints read
//! from its metadata, RFC 8414 (`/.well-known/oauth-authorization-server`) first, then OpenID Connect
//! Discovery (`/.well-known/openid-configuration`). Each fetch is bounded in size and time;
//! the metadata must name the same issuer (RFC 8414 §3.3: a document served for another
//! issuer is refused), and its endpoints must be https, or http on a loopback address (the
//! revocation endpoint, RFC 7009, is optional: absent, the provider revokes nothing; present
//! and not allowed, the metadata is refused like one with such a token endpoint).

use std::sync::Arc;
use std::time::Duration;

use futures::future::{Either, select};
use serde::Deserialize;

use crate::connect::provider::{ProviderEndpoints, provider_url};
use crate::http_client::{HttpClient, HttpRequest};
use crate::platform::runtime::Runtime;

/// Largest metadata document read.
const MAX_METADATA: usize = 64 * 1024;

/// How long one metadata fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an issuer's endpoints could not be found (names no secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    /// Neither metadata document could be read.
    #[error("no authorization server metadata at {0} ({1})")]
    NotFound(String, String),
    /// The metadata names another issuer.
    #[error("the metadata at {0} names another issuer")]
    IssuerMismatch(String),
    /// An endpoint it names is missing or not https (http only on loopback).
    #[error("the metadata at {0} has no usable {1}")]
    BadEndpoint(String, &'static str),
    /// An MCP server (`auth = "oauth"`) publishes no protected resource metadata
    /// (RFC 9728) runway could read.
    #[cfg(feature = "mcp-authorization")]
    #[error("no protected resource metadata for {0} ({1})")]
    NoResourceMetadata(String, String),
    /// The protected resource metadata names another resource than the MCP server, or no
    /// usable authorization server.
    #[cfg(feature = "mcp-authorization")]
    #[error("the protected resource metadata at {0} {1}")]
    BadResourceMetadata(String, &'static str),
    /// The authorization server does not say it supports PKCE with S256 (the MCP
    /// authorization spec has clients refuse it).
    #[cfg(feature = "mcp-authorization")]
    #[error("the authorization server {0} does not support PKCE with S256")]
    NoPkce(String),
    /// The authorization server offers no way for runway to become its client.
    #[cfg(feature = "mcp-authorization")]
    #[error(
        "the authorization server {0} supports neither dynamic client registration nor client \
         ID metadata documents (those need an https RUNWAY_PUBLIC_URL)"
    )]
    NoRegistration(String),
    /// Dynamic client registration failed.
    #[cfg(feature = "mcp-authorization")]
    #[error("registering runway as a client at {0} failed ({1})")]
    Registration(String, String),
}

#[derive(Deserialize)]
struct Metadata {
    issuer: String,
    #[serde(default)]
    authorization_endpoint: Option<String>,
    #[serde(default)]
    token_endpoint: Option<String>,
    #[serde(default)]
    revocation_endpoint: Option<String>,
    #[cfg(feature = "mcp-authorization")]
    #[serde(default)]
    registration_endpoint: Option<String>,
    #[cfg(feature = "mcp-authorization")]
    #[serde(default)]
    client_id_metadata_document_supported: Option<bool>,
    #[cfg(feature = "mcp-authorization")]
    #[serde(default)]
    code_challenge_methods_supported: Option<Vec<String>>,
}

/// What an authorization server publishes beyond its endpoints: what an MCP client
/// (`[[mcp]] auth = "oauth"`) needs to become its client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerMetadata {
    /// Its authorization and token endpoints.
    pub(crate) endpoints: ProviderEndpoints,
    /// Its token revocation endpoint (RFC 7009), if it publishes one.
    pub(crate) revocation_endpoint: Option<url::Url>,
    /// Its dynamic client registration endpoint (RFC 7591), if it has a usable one.
    #[cfg(feature = "mcp-authorization")]
    pub(crate) registration_endpoint: Option<url::Url>,
    /// It takes an https URL of a Client ID Metadata Document as `client_id`.
    #[cfg(feature = "mcp-authorization")]
    pub(crate) client_id_metadata_documents: bool,
    /// It says it supports PKCE with S256 (`code_challenge_methods_supported`).
    #[cfg(feature = "mcp-authorization")]
    pub(crate) pkce_s256: bool,
}

/// The well-known URLs of `issuer`'s metadata, in the order they are tried: RFC 8414's
/// (the well-known segment before the issuer's path), then OpenID's (after it).
fn metadata_urls(issuer: &url::Url) -> Vec<url::Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut rfc8414 = issuer.clone();
    rfc8414.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    let mut openid = issuer.clone();
    openid.set_path(&format!("{path}/.well-known/openid-configuration"));
    for u in [&mut rfc8414, &mut openid] {
        u.set_query(None);
        u.set_fragment(None);
    }
    vec![rfc8414, openid]
}

/// Everything `issuer` publishes that runway uses.
///
/// # Errors
/// No metadata, another issuer named, or an endpoint that is missing or not allowed.
pub(crate) async fn discover_server<R: Runtime>(
    http: &Arc<dyn HttpClient>,
    rt: &R,
    issuer: &url::Url,
) -> Result<ServerMetadata, DiscoveryError> {
    let mut failures = Vec::new();
    for at in metadata_urls(issuer) {
        let metadata: Metadata = match fetch_json(http, rt, &at).await {
            Ok(m) => m,
            Err(why) => {
                failures.push(why);
                continue;
            }
        };
        // RFC 8414 §3.3: identical to the issuer configured (a trailing slash aside).
        if metadata.issuer.trim_end_matches('/') != issuer.as_str().trim_end_matches('/') {
            return Err(DiscoveryError::IssuerMismatch(at.to_string()));
        }
        let endpoint = |raw: Option<String>, name: &'static str| {
            raw.and_then(|r| provider_url(&r).ok())
                .ok_or_else(|| DiscoveryError::BadEndpoint(at.to_string(), name))
        };
        return Ok(ServerMetadata {
            endpoints: ProviderEndpoints {
                authorize_url: endpoint(metadata.authorization_endpoint, "authorization_endpoint")?,
                token_url: endpoint(metadata.token_endpoint, "token_endpoint")?,
            },
            // Optional, but never a URL the token endpoint would be refused at: a token is
            // sent there too.
            revocation_endpoint: match metadata.revocation_endpoint {
                None => None,
                raw => Some(endpoint(raw, "revocation_endpoint")?),
            },
            #[cfg(feature = "mcp-authorization")]
            registration_endpoint: metadata
                .registration_endpoint
                .and_then(|r| provider_url(&r).ok()),
            #[cfg(feature = "mcp-authorization")]
            client_id_metadata_documents: metadata
                .client_id_metadata_document_supported
                .unwrap_or(false),
            #[cfg(feature = "mcp-authorization")]
            pkce_s256: metadata
                .code_challenge_methods_supported
                .is_some_and(|m| m.iter().any(|c| c == "S256")),
        });
    }
    Err(DiscoveryError::NotFound(
        issuer.to_string(),
        failures.join("; "),
    ))
}

/// One metadata document (JSON), within [`FETCH_TIMEOUT`] and [`MAX_METADATA`].
pub(crate) async fn fetch_json<T: serde::de::DeserializeOwned, R: Runtime>(
    http: &Arc<dyn HttpClient>,
    rt: &R,
    at: &url::Url,
) -> Result<T, String> {
    let request = HttpRequest {
        method: http::Method::GET,
        url: at.clone(),
        headers: accept_json(),
        body: bytes::Bytes::new(),
    };
    bounded_json(http, rt, request).await
}

/// `Accept: application/json`.
fn accept_json() -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static("application/json"),
    );
    headers
}

/// Sends `request` and reads its JSON answer (a 2xx), within [`FETCH_TIMEOUT`] and
/// [`MAX_METADATA`]; the error says why, naming no secret.
pub(crate) async fn bounded_json<T: serde::de::DeserializeOwned, R: Runtime>(
    http: &Arc<dyn HttpClient>,
    rt: &R,
    request: HttpRequest,
) -> Result<T, String> {
    let exchange = async {
        let response = http.send(request).await.map_err(|e| e.to_string())?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("HTTP {}", status.as_u16()));
        }
        let body = response
            .bytes_limited(MAX_METADATA)
            .await
            .map_err(|e| e.to_string())?;
        serde_json::from_slice::<T>(&body).map_err(|_| "not the expected JSON document".to_owned())
    };
    let timer = rt.sleep(FETCH_TIMEOUT);
    match select(Box::pin(exchange), Box::pin(timer)).await {
        Either::Left((result, _)) => result,
        Either::Right(_) => Err(format!("no answer within {FETCH_TIMEOUT:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_8414_inserts_the_well_known_segment_openid_appends_it() {
        let urls = |i: &str| {
            metadata_urls(&i.parse().unwrap())
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            urls("https://acme.example"),
            [
                "https://acme.example/.well-known/oauth-authorization-server",
                "https://acme.example/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            urls("https://acme.example/tenant/"),
            [
                "https://acme.example/.well-known/oauth-authorization-server/tenant",
                "https://acme.example/tenant/.well-known/openid-configuration"
            ]
        );
    }
}
