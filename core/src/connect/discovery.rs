//! A provider declared by its `issuer`: its authorization and token endpoints read from its
//! metadata, RFC 8414 (`/.well-known/oauth-authorization-server`) first, then OpenID Connect
//! Discovery (`/.well-known/openid-configuration`). Each fetch is bounded in size and time;
//! the metadata must name the same issuer (RFC 8414 §3.3: a document served for another
//! issuer is refused), and its endpoints must be https, or http on a loopback address.

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
}

#[derive(Deserialize)]
struct Metadata {
    issuer: String,
    #[serde(default)]
    authorization_endpoint: Option<String>,
    #[serde(default)]
    token_endpoint: Option<String>,
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

/// The endpoints `issuer` publishes.
///
/// # Errors
/// No metadata, another issuer named, or an endpoint that is missing or not allowed.
pub(crate) async fn discover<R: Runtime>(
    http: &Arc<dyn HttpClient>,
    rt: &R,
    issuer: &url::Url,
) -> Result<ProviderEndpoints, DiscoveryError> {
    let mut failures = Vec::new();
    for at in metadata_urls(issuer) {
        let metadata = match fetch(http, rt, &at).await {
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
        return Ok(ProviderEndpoints {
            authorize_url: endpoint(metadata.authorization_endpoint, "authorization_endpoint")?,
            token_url: endpoint(metadata.token_endpoint, "token_endpoint")?,
        });
    }
    Err(DiscoveryError::NotFound(
        issuer.to_string(),
        failures.join("; "),
    ))
}

/// One metadata document, within [`FETCH_TIMEOUT`] and [`MAX_METADATA`].
async fn fetch<R: Runtime>(
    http: &Arc<dyn HttpClient>,
    rt: &R,
    at: &url::Url,
) -> Result<Metadata, String> {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static("application/json"),
    );
    let request = HttpRequest {
        method: http::Method::GET,
        url: at.clone(),
        headers,
        body: bytes::Bytes::new(),
    };
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
        serde_json::from_slice::<Metadata>(&body).map_err(|_| "not metadata".to_owned())
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
