//! The revocation endpoint (RFC 7009): a connection's token handed back to its provider
//! before `runway connections --revoke` deletes the connection from the vault (the
//! provider's `revocation_url`, else the `revocation_endpoint` of its issuer's metadata, or,
//! for an MCP server with `auth = "oauth"`, of its authorization server's), over the
//! adapter's [`HttpClient`], within [`REVOKE_TIMEOUT`] and [`MAX_REVOKE_RESPONSE`]. The
//! refresh token is revoked when there is one (a provider revokes the grant's access tokens
//! with it, RFC 7009 §2.1), else the access token.

use std::sync::Arc;
use std::time::Duration;

use futures::future::{Either, select};
use serde::{Deserialize, Serialize};

use crate::connect::provider::Provider;
use crate::connect::token::client_request;
use crate::connect::vault::Tokens;
use crate::http_client::HttpClient;
use crate::platform::runtime::Runtime;

/// How long the provider has to answer.
pub const REVOKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest revocation answer read (an error body: RFC 7009 answers 200 with nothing).
pub const MAX_REVOKE_RESPONSE: usize = 16 * 1024;

/// What the provider said to a revocation (never carries a token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum Revocation {
    /// HTTP 200: revoked (or already invalid, which RFC 7009 answers the same way).
    Revoked {
        /// Which token was sent: `refresh_token` or `access_token`.
        token: String,
    },
    /// The provider refused (its `error` code, or the HTTP status).
    Refused {
        /// Why, as the provider said.
        reason: String,
    },
    /// No answer (unreachable, timed out, an unreadable answer).
    Unreachable {
        /// What failed.
        reason: String,
    },
    /// The provider declares no revocation endpoint (no `revocation_url`, and none in the
    /// metadata of its `issuer` or of an MCP server's authorization server): the tokens were
    /// only deleted.
    NotDeclared,
    /// An MCP server's connection (`auth = "oauth"`) whose tokens were issued to a client
    /// registration runway no longer keeps (for this deployment's callback URL): there is no
    /// client to revoke them as, and the tokens were only deleted.
    NoClient,
    /// The provider is not configured here any more: the tokens were only deleted.
    UnknownProvider,
    /// The vault entry does not open (another vault key, tampered) or holds no token: there
    /// is nothing to revoke.
    NoToken,
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: String,
}

/// Revokes `tokens` at `provider`'s revocation endpoint, if it has one, as runway's client
/// there (`provider` as `Connections::revoking_client` gives it: the endpoint and the client of a provider declared by its issuer or of an MCP server
/// filled in).
pub(crate) async fn revoke<R: Runtime>(
    http: &Arc<dyn HttpClient>,
    rt: &R,
    provider: &Provider,
    tokens: &Tokens,
) -> Revocation {
    let Some(url) = &provider.revocation_url else {
        return Revocation::NotDeclared;
    };
    let (token, hint) = match (&tokens.refresh_token, tokens.access_token.as_str()) {
        (Some(refresh), _) if !refresh.is_empty() => (refresh.as_str(), "refresh_token"),
        (_, access) if !access.is_empty() => (access, "access_token"),
        _ => return Revocation::NoToken,
    };
    let Ok(request) = client_request(
        provider,
        url,
        &[("token", token), ("token_type_hint", hint)],
    ) else {
        return Revocation::Unreachable {
            reason: "the client credentials cannot be sent".into(),
        };
    };
    let exchange = async {
        let response = http.send(request).await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response
            .bytes_limited(MAX_REVOKE_RESPONSE)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((status, body))
    };
    let timer = rt.sleep(REVOKE_TIMEOUT);
    let (status, body) = match select(Box::pin(exchange), Box::pin(timer)).await {
        Either::Left((Ok(answer), _)) => answer,
        Either::Left((Err(reason), _)) => return Revocation::Unreachable { reason },
        Either::Right(_) => {
            return Revocation::Unreachable {
                reason: format!("no answer within {REVOKE_TIMEOUT:?}"),
            };
        }
    };
    if status.is_success() {
        return Revocation::Revoked {
            token: hint.to_owned(),
        };
    }
    let reason = match serde_json::from_slice::<ErrorResponse>(&body) {
        Ok(e) => e
            .error
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(64)
            .collect(),
        Err(_) => format!("HTTP {}", status.as_u16()),
    };
    Revocation::Refused { reason }
}
