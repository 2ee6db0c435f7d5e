//! The token endpoint (RFC 6749 §4.1.3 and §6): a code or a refresh token in, tokens out,
//! over the adapter's [`HttpClient`]. The client authenticates with HTTP Basic when it has a
//! secret (`client_secret_basic`, the default of RFC 6749 §2.3.1), by `client_id` alone when
//! it is public.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use crate::connect::provider::Provider;
use crate::connect::vault::Tokens;
use crate::http_client::HttpClient;
use crate::http_client::HttpRequest;

/// Largest token response read.
const MAX_TOKEN_RESPONSE: usize = 64 * 1024;

/// Why the token endpoint gave no tokens (never carries a token or a secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// The request failed on the way.
    #[error("the token endpoint could not be reached: {0}")]
    Unreachable(String),
    /// The endpoint refused (its `error` code, e.g. `invalid_grant`).
    #[error("the token endpoint refused: {0}")]
    Refused(String),
    /// The answer is not a token response.
    #[error("the token endpoint answered something else than tokens")]
    Malformed,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: String,
}

/// Exchanges an authorization `code` (with its PKCE `verifier` and the `redirect_uri` it was
/// asked with) for tokens; `resource`: the RFC 8707 indicator the code was asked with.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn exchange_code(
    client: &Arc<dyn HttpClient>,
    provider: &Provider,
    token_url: &url::Url,
    code: &str,
    verifier: &str,
    redirect_uri: &str,
    resource: Option<&str>,
    now_ms: u64,
) -> Result<Tokens, TokenError> {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("code_verifier", verifier),
    ];
    form.extend(resource.map(|r| ("resource", r)));
    request(client, provider, token_url, &form, now_ms).await
}

/// Refreshes with `refresh_token`; a provider that sends no new refresh token keeps the old
/// one valid (RFC 6749 §6), so it is kept. `resource`: as [`exchange_code`].
pub(crate) async fn refresh(
    client: &Arc<dyn HttpClient>,
    provider: &Provider,
    token_url: &url::Url,
    refresh_token: &str,
    resource: Option<&str>,
    now_ms: u64,
) -> Result<Tokens, TokenError> {
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
    ];
    form.extend(resource.map(|r| ("resource", r)));
    let mut tokens = request(client, provider, token_url, &form, now_ms).await?;
    if tokens.refresh_token.is_none() {
        tokens.refresh_token = Some(refresh_token.to_owned());
    }
    Ok(tokens)
}

/// A form POST to one of `provider`'s endpoints (token, revocation), as runway's client there:
/// HTTP Basic with the secret (`client_secret_basic`), else `client_id` in the form. `Err`:
/// the credentials cannot be a header value.
pub(crate) fn client_request(
    provider: &Provider,
    url: &url::Url,
    form: &[(&str, &str)],
) -> Result<HttpRequest, ()> {
    let mut pairs = form.to_vec();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    headers.insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static("application/json"),
    );
    match &provider.client_secret {
        Some(secret) => {
            // RFC 6749 §2.3.1: both form-urlencoded before they are joined.
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let basic = STANDARD.encode(format!("{}:{}", enc(&provider.client_id), enc(secret)));
            let mut value =
                http::HeaderValue::try_from(format!("Basic {basic}")).map_err(|_| ())?;
            value.set_sensitive(true);
            headers.insert(http::header::AUTHORIZATION, value);
        }
        None => pairs.push(("client_id", &provider.client_id)),
    }
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    Ok(HttpRequest {
        method: http::Method::POST,
        url: url.clone(),
        headers,
        body: body.into(),
    })
}

async fn request(
    client: &Arc<dyn HttpClient>,
    provider: &Provider,
    token_url: &url::Url,
    form: &[(&str, &str)],
    now_ms: u64,
) -> Result<Tokens, TokenError> {
    let request = client_request(provider, token_url, form)
        .map_err(|()| TokenError::Unreachable("client credentials".into()))?;
    let response = client
        .send(request)
        .await
        .map_err(|e| TokenError::Unreachable(e.to_string()))?;
    let status = response.status();
    let bytes = response
        .bytes_limited(MAX_TOKEN_RESPONSE)
        .await
        .map_err(|e| TokenError::Unreachable(e.to_string()))?;
    if !status.is_success() {
        return Err(match serde_json::from_slice::<ErrorResponse>(&bytes) {
            Ok(e) => TokenError::Refused(e.error.chars().take(64).collect()),
            Err(_) => TokenError::Refused(format!("HTTP {}", status.as_u16())),
        });
    }
    let t: TokenResponse = serde_json::from_slice(&bytes).map_err(|_| TokenError::Malformed)?;
    if t.access_token.is_empty()
        || t.token_type
            .as_deref()
            .is_some_and(|k| !k.eq_ignore_ascii_case("bearer"))
    {
        return Err(TokenError::Malformed);
    }
    Ok(Tokens {
        access_token: t.access_token,
        refresh_token: t.refresh_token,
        expires_at_ms: t
            .expires_in
            .map(|s| now_ms.saturating_add(s.saturating_mul(1000))),
        scope: t.scope,
        connected_at_ms: None,
    })
}
