//! Who runway is at an MCP server's authorization server (`[[mcp]] auth = "oauth"`), which
//! knows nothing of it beforehand:
//!
//! - a **Client ID Metadata Document** when the server says
//!   `client_id_metadata_document_supported` and the deployment's public URL is https: the
//!   `client_id` is the URL of the document the deployment serves itself,
//!   `{public base}/oauth-client.json` ([`CLIENT_DOCUMENT_PATH`], [`client_document`]);
//! - else **dynamic client registration** (RFC 7591) at its `registration_endpoint`, as a
//!   public client (PKCE, no secret). The registration is kept in the store, sealed like a
//!   vault entry, under a reserved key per (authorization server, redirect URI): one
//!   registration per deployment, reused by every user, every turn, every process and every
//!   cold start. Of turns (of any process) that find none at the same moment, the one that
//!   wins a lease in the store (its expiring action claim) registers; the others re-read the
//!   store until the registration is there;
//! - else none: the connection cannot be made (a clear tool error).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::connect::discovery::{DiscoveryError, ServerMetadata, bounded_json};
use crate::connect::vault::VaultKey;
use crate::connect::{CALLBACK_PATH, pkce};
use crate::http_client::{HttpClient, HttpRequest};
use crate::platform::runtime::Runtime;
use crate::store::{ActionClaim, ConnectionKey, TurnStore};

/// Where the deployment serves its Client ID Metadata Document, below the base path.
pub const CLIENT_DOCUMENT_PATH: &str = "/oauth-client.json";

/// The workspace of the store entries that keep registrations (with [`REGISTRATION_USER`]
/// and a provider starting with [`REGISTRATION_PREFIX`], which no configured provider key
/// can: keys are refused with a `:`).
pub const REGISTRATION_WORKSPACE: &str = "runway:oauth-clients";

/// The user of the store entries that keep registrations.
pub const REGISTRATION_USER: &str = "runway";

/// The start of a registration entry's provider: a digest of the authorization server and
/// the redirect URI follows.
pub const REGISTRATION_PREFIX: &str = "oauth-client:";

/// The name runway registers under (what consent pages show).
const CLIENT_NAME: &str = "runway";

/// How long the turn that registers holds the lease: the registration request is bounded by
/// 10 s.
const REGISTRATION_LEASE_MS: u64 = 20 * 1000;

/// How long a turn that lost the lease waits for the winner's registration.
const REGISTRATION_WAIT_MS: u64 = 15 * 1000;

/// How often it re-reads the store meanwhile.
const REGISTRATION_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// runway's client at one authorization server. Its `Debug` shows no secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Client {
    /// The `client_id`.
    pub(crate) client_id: String,
    /// The secret, if the server issued one although a public client was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// The store entry keeping runway's registration at `issuer` for `redirect_uri`.
pub(crate) fn registration_key(issuer: &url::Url, redirect_uri: &str) -> ConnectionKey {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("{issuer}\n{redirect_uri}").as_bytes());
    ConnectionKey {
        workspace: REGISTRATION_WORKSPACE.to_owned(),
        user: REGISTRATION_USER.to_owned(),
        provider: format!("{REGISTRATION_PREFIX}{}", hex::encode(digest)),
    }
}

/// Whether `key` is a registration entry, not a person's connection.
pub fn is_registration(key: &ConnectionKey) -> bool {
    key.workspace == REGISTRATION_WORKSPACE && key.provider.starts_with(REGISTRATION_PREFIX)
}

/// The Client ID Metadata Document of the deployment at `public_base_url`.
pub fn client_document(public_base_url: &str) -> serde_json::Value {
    serde_json::json!({
        "client_id": format!("{public_base_url}{CLIENT_DOCUMENT_PATH}"),
        "client_name": CLIENT_NAME,
        "redirect_uris": [format!("{public_base_url}{CALLBACK_PATH}")],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    })
}

/// What runway is at the authorization server `issuer` (described by `server`) for
/// `redirect_uri`: see the module's documentation.
///
/// # Errors
/// [`DiscoveryError::NoRegistration`] when the server offers no way in,
/// [`DiscoveryError::Registration`] when registering failed.
pub(crate) async fn client_for<S: TurnStore, R: Runtime>(
    store: &S,
    rt: &R,
    http: &Arc<dyn HttpClient>,
    vault: &VaultKey,
    server: &ServerMetadata,
    issuer: &url::Url,
    redirect_uri: &str,
) -> Result<Client, DiscoveryError> {
    if let Some(client) = document_client(server, redirect_uri) {
        return Ok(client);
    }
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(DiscoveryError::NoRegistration(issuer.to_string()));
    };
    let failed = |why: String| DiscoveryError::Registration(endpoint.to_string(), why);
    let key = registration_key(issuer, redirect_uri);
    if let Some(client) = kept(store, vault, &key).await.map_err(failed)? {
        return Ok(client);
    }
    let now_ms = rt.now_ms();
    let lease = ActionClaim {
        thread_key: key.provider.clone(),
        action: "register".into(),
        holder: pkce::random_token(rt),
        now_ms,
        expires_at_ms: now_ms.saturating_add(REGISTRATION_LEASE_MS),
    };
    if !store
        .claim_action(&lease)
        .await
        .map_err(|e| failed(e.to_string()))?
    {
        // Another turn registers: its registration, once stored.
        let until = now_ms.saturating_add(REGISTRATION_WAIT_MS);
        while rt.now_ms() < until {
            rt.sleep(REGISTRATION_POLL).await;
            if let Some(client) = kept(store, vault, &key).await.map_err(failed)? {
                return Ok(client);
            }
        }
        return Err(failed("another registration did not finish in time".into()));
    }
    // Won: a registration stored since the first read is the one.
    if let Some(client) = kept(store, vault, &key).await.map_err(failed)? {
        return Ok(client);
    }
    let client = register(http, rt, endpoint, redirect_uri)
        .await
        .map_err(|why| DiscoveryError::Registration(endpoint.to_string(), why))?;
    let mut nonce = [0u8; 12];
    rt.fill_random(&mut nonce);
    store
        .put_connection(&key, &vault.seal_value(&key, &client, nonce))
        .await
        .map_err(|e| DiscoveryError::Registration(endpoint.to_string(), e.to_string()))?;
    tracing::info!(server = %issuer, client_id = %client.client_id, "registered as an OAuth client (RFC 7591)");
    Ok(client)
}

/// The Client ID Metadata Document's client, when `server` takes one and the deployment's
/// public URL (before `redirect_uri`'s callback path) is https.
fn document_client(server: &ServerMetadata, redirect_uri: &str) -> Option<Client> {
    let base = redirect_uri.strip_suffix(CALLBACK_PATH).unwrap_or_default();
    (server.client_id_metadata_documents && base.starts_with("https://")).then(|| Client {
        client_id: format!("{base}{CLIENT_DOCUMENT_PATH}"),
        client_secret: None,
    })
}

/// The client runway already is at `issuer` (described by `server`) for `redirect_uri`: its
/// Client ID Metadata Document, or the registration kept in the store; never a new
/// registration (what revoking a connection's tokens needs: the client they were issued to).
///
/// # Errors
/// The store could not be read (why, naming no secret).
pub(crate) async fn kept_client<S: TurnStore>(
    store: &S,
    vault: &VaultKey,
    server: &ServerMetadata,
    issuer: &url::Url,
    redirect_uri: &str,
) -> Result<Option<Client>, String> {
    if let Some(client) = document_client(server, redirect_uri) {
        return Ok(Some(client));
    }
    kept(store, vault, &registration_key(issuer, redirect_uri)).await
}

/// The registration kept at `key`, if one opens.
async fn kept<S: TurnStore>(
    store: &S,
    vault: &VaultKey,
    key: &ConnectionKey,
) -> Result<Option<Client>, String> {
    let sealed = store.get_connection(key).await.map_err(|e| e.to_string())?;
    Ok(sealed.and_then(|sealed| vault.open_value::<Client>(key, &sealed)))
}

/// Forgets the registration kept for `issuer` and `redirect_uri` (the server no longer
/// knows it): the next connection registers again.
pub(crate) async fn forget<S: TurnStore>(store: &S, issuer: &url::Url, redirect_uri: &str) {
    if let Err(e) = store
        .delete_connection(&registration_key(issuer, redirect_uri))
        .await
    {
        tracing::warn!(error = %e, "a refused client registration could not be forgotten");
    }
}

#[derive(Deserialize)]
struct Registered {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
}

/// RFC 7591 §3.1: registers runway as a public client redirecting to `redirect_uri`.
async fn register<R: Runtime>(
    http: &Arc<dyn HttpClient>,
    rt: &R,
    endpoint: &url::Url,
    redirect_uri: &str,
) -> Result<Client, String> {
    let body = serde_json::json!({
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static("application/json"),
    );
    let request = HttpRequest {
        method: http::Method::POST,
        url: endpoint.clone(),
        headers,
        body: serde_json::to_vec(&body).unwrap_or_default().into(),
    };
    let r: Registered = bounded_json(http, rt, request).await?;
    // A client id is sent in URLs and forms: a bounded printable one only.
    if r.client_id.is_empty()
        || r.client_id.len() > 512
        || r.client_id.chars().any(|c| c.is_control())
    {
        return Err("the answer has no usable client_id".into());
    }
    Ok(Client {
        client_id: r.client_id,
        client_secret: r.client_secret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_registration_entry_per_server_and_redirect_uri_never_a_persons() {
        let a: url::Url = "https://as.example".parse().unwrap();
        let b: url::Url = "https://other.example".parse().unwrap();
        let k = registration_key(&a, "https://r.example/callback");
        assert_eq!(k, registration_key(&a, "https://r.example/callback"));
        assert_ne!(k, registration_key(&b, "https://r.example/callback"));
        assert_ne!(k, registration_key(&a, "https://s.example/callback"));
        assert!(is_registration(&k));
        assert!(!is_registration(&ConnectionKey {
            workspace: "w".into(),
            user: "u".into(),
            provider: "mcp:orders".into(),
        }));
    }

    #[test]
    fn the_client_document_names_its_own_url_and_the_callback() {
        let d = client_document("https://runway.example/base");
        assert_eq!(
            d["client_id"],
            "https://runway.example/base/oauth-client.json"
        );
        assert_eq!(
            d["redirect_uris"][0],
            "https://runway.example/base/callback"
        );
        assert_eq!(d["token_endpoint_auth_method"], "none");
    }
}
