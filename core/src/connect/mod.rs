//! Connected accounts: a user's OAuth connection to a provider, made in a popup from the
//! `authorization` card and kept in the vault, so a tool can act as that user.
//!
//! The flow: a turn asks [`Turn::connection`](crate::Turn::connection); without a usable
//! token it gets the card, whose link (`{public base}/connect/{id}`) is a single-use state
//! binding worker, workspace, user, thread, provider and a PKCE verifier (kept server-side).
//! Opening the link claims that state and sends the browser to the provider with a new
//! single-use state; the provider's redirect to `{public base}/callback` claims that one,
//! exchanges the code (with the verifier) and seals the tokens into the vault under
//! (workspace, user, provider). Both routes are reachable without Console's header set: the
//! states are what authorize them. Everything here is sans-I/O over the store's primitives
//! ([`crate::store::connections`]) and the adapter's HTTP client.
//!
//! A provider may also be an MCP server's own authorization (`[[mcp]] auth = "oauth"`,
//! `Endpoints::McpServer`, with the feature `mcp-authorization`): its authorization server,
//! endpoints, scopes and `resource` indicator are discovered from the MCP server
//! (`protected_resource.rs`, [`discovery`]) and runway's client there is a Client ID Metadata
//! Document or a registration kept in the store (`client_registration.rs`); then the flow is
//! the same, with `resource` (RFC 8707) on the authorization, token and refresh requests.
//!
//! Operators list and revoke connections through [`accounts`] (`GET`/`DELETE
//! {base}/connections`, behind the header set): revoking hands the token back to the
//! provider's revocation endpoint ([`revoke`], RFC 7009: declared, or read from its issuer's
//! or its MCP server's authorization server's metadata) and deletes the entry.

// Built without the `connect` feature, nothing serves these (the engine reads no connections).
#![cfg_attr(not(feature = "connect"), allow(dead_code))]

pub mod accounts;
#[cfg(feature = "mcp-authorization")]
pub mod client_registration;
pub mod discovery;
pub(crate) mod pkce;
#[cfg(feature = "mcp-authorization")]
pub(crate) mod protected_resource;
pub mod provider;
pub mod revoke;
pub(crate) mod token;
pub mod vault;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::agent::turn_connections::{
    AccessToken, ConnectScope, Connection, ConnectionError, Rejected,
};
use crate::connect::discovery::DiscoveryError;
use crate::connect::provider::{Endpoints, Provider, ProviderEndpoints, Providers};
use crate::connect::revoke::Revocation;
use crate::connect::vault::{Tokens, VaultKey};
use crate::http_client::HttpClient;
use crate::platform::runtime::Runtime;
use crate::protocol::Interrupt;
use crate::store::{ActionClaim, ConnectStage, ConnectState, ConnectionKey, TurnStore};

/// Whether the token endpoint refused runway's client itself (a registration it forgot).
fn is_invalid_client(e: &token::TokenError) -> bool {
    matches!(e, token::TokenError::Refused(code) if code == "invalid_client")
}

/// Whether `tokens`' access token is usable now and not about to expire (else it is
/// refreshed first).
fn is_fresh(tokens: &Tokens, now_ms: u64) -> bool {
    is_usable(tokens, now_ms.saturating_add(REFRESH_MARGIN_MS))
}

/// Whether `tokens`' access token is usable at `at_ms`: what a turn takes from another
/// turn's refresh, however short the provider made its life.
fn is_usable(tokens: &Tokens, at_ms: u64) -> bool {
    !tokens.access_token.is_empty() && tokens.expires_at_ms.is_none_or(|exp| exp > at_ms)
}

/// The lease on spending `refresh_token` for `key`: the store's expiring put-if-absent
/// claim ([`TurnStore::claim_action`], atomic on every store), named by a digest of the
/// token (never the token) under a scope of the connection's own. Of the turns that find
/// the same expiring token at once, one wins; after [`REFRESH_LEASE_MS`] it is free again
/// (a provider that does not rotate keeps its refresh token valid).
fn refresh_lease<R: Runtime>(rt: &R, key: &ConnectionKey, refresh_token: &str) -> ActionClaim {
    use sha2::Digest as _;
    let now_ms = rt.now_ms();
    ActionClaim {
        thread_key: format!(
            "vault:{}",
            hex::encode(sha2::Sha256::digest(key.associated_data()))
        ),
        action: format!(
            "refresh:{}",
            hex::encode(sha2::Sha256::digest(refresh_token.as_bytes()))
        ),
        holder: pkce::random_token(rt),
        now_ms,
        expires_at_ms: now_ms.saturating_add(REFRESH_LEASE_MS),
    }
}

/// How long a connect state (the card's link, then the OAuth `state`) works: 10 minutes.
pub const STATE_TTL_MS: u64 = 10 * 60 * 1000;

/// A token expiring sooner than this is refreshed before it is used.
const REFRESH_MARGIN_MS: u64 = 60 * 1000;

/// How long a turn holds the lease on spending one refresh token: the provider's answer
/// comes well within it (the token endpoint's requests are bounded by the HTTP client).
const REFRESH_LEASE_MS: u64 = 30 * 1000;

/// How long a turn that lost the lease waits for the winner's tokens.
const REFRESH_WAIT_MS: u64 = 10 * 1000;

/// How often it re-reads the vault meanwhile.
const REFRESH_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// The path of the card's link below the base path (`/connect/{id}`).
pub const CONNECT_PATH: &str = "/connect/";

/// The provider's redirect back, below the base path.
pub const CALLBACK_PATH: &str = "/callback";

/// Why connected accounts cannot be served as configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionsError {
    /// A provider is configured but `RUNWAY_VAULT_KEY` is not.
    #[error(
        "provider {0:?} is configured but RUNWAY_VAULT_KEY is not set: set it to 32 random \
         bytes in base64 (openssl rand -base64 32) to keep tokens encrypted"
    )]
    NoVaultKey(String),
    /// No HTTP client to reach token endpoints with.
    #[error("connected accounts need an HTTP client (call with_http_client first)")]
    NoHttpClient,
    /// Two workers (or a worker and the deployment) declare the same provider key
    /// differently: their users' tokens would be one vault entry sent to both.
    #[error(
        "[providers.{0}] is declared differently by workers {1:?} and {2:?}: a provider key \
         names one provider per deployment (one token per user); declare it the same way or \
         give one of them another key"
    )]
    ProviderClash(String, String, String),
    /// A provider is configured, but this build has no connected accounts (runway-core's
    /// `connect` feature is off).
    #[error(
        "provider {0:?} is configured but this build has no connected accounts: build with \
         runway-core's `connect` feature (on by default), or remove the provider"
    )]
    NotBuilt(String),
}

/// The providers, the vault key and the HTTP client token endpoints are reached with.
pub(crate) struct Connections {
    /// Providers of every worker (`Runway::with_providers`).
    providers: Providers,
    /// Each worker's own providers (`Workers::providers`: a workers file's tools files).
    per_worker: BTreeMap<String, Providers>,
    vault: VaultKey,
    http: Arc<dyn HttpClient>,
    /// What was discovered for providers declared by `issuer` or by an MCP server, once
    /// read (by [`discovered_key`]); forgotten when using it fails, so it is read again.
    discovered: std::sync::Mutex<BTreeMap<String, Resolved>>,
}

/// A provider ready to be used: its endpoints and, for an MCP server's own authorization,
/// runway's client there, the scopes and the `resource` indicator found for it.
#[derive(Clone)]
struct Resolved {
    endpoints: ProviderEndpoints,
    /// The provider as runway is its client (an MCP server's: the discovered client id,
    /// secret and scopes in place of the unused configured ones).
    provider: Provider,
    /// The RFC 8707 `resource` of every authorization, token and refresh request.
    resource: Option<String>,
    /// The authorization server whose registration (kept in the store) the client is.
    #[cfg_attr(not(feature = "mcp-authorization"), allow(dead_code))]
    issuer: Option<url::Url>,
}

/// The key of `p`'s discovered data: per redirect URI for an MCP server's (the client
/// registered there is for one redirect URI).
fn discovered_key(p: &Provider, redirect_uri: &str) -> String {
    match &p.endpoints {
        #[cfg(feature = "mcp-authorization")]
        Endpoints::McpServer(_) => format!("{}\n{redirect_uri}", p.key),
        _ => {
            let _ = redirect_uri;
            p.key.clone()
        }
    }
}

/// The redirect URI of a turn's connections.
fn redirect_uri_of(scope: &ConnectScope) -> String {
    format!("{}{CALLBACK_PATH}", scope.public_base_url)
}

/// What opening the card's link leads to.
#[derive(Debug)]
pub(crate) enum LinkOutcome {
    /// Send the browser here (the provider's authorization endpoint).
    Redirect(String),
    /// The link is unknown, used or expired.
    Refused,
    /// The provider's metadata could not be read (its name): the link was used up.
    Unreachable(String),
}

/// What the provider's redirect back led to.
#[derive(Debug)]
pub(crate) enum CallbackOutcome {
    /// Connected: the provider's display name.
    Connected(String),
    /// The user (or the provider) said no: the provider's name and the OAuth error code.
    Declined(String, String),
    /// The state is unknown, used or expired (a replay, a forgery): nothing changed.
    Refused,
    /// The code could not be exchanged (the provider's name).
    Failed(String),
}

impl Connections {
    /// Connections to `providers` (every worker's) and `per_worker` (each worker's own),
    /// sealed under `vault` (required as soon as there is one provider), reaching token
    /// endpoints through `http`.
    pub(crate) fn new(
        providers: Providers,
        per_worker: BTreeMap<String, Providers>,
        vault: Option<VaultKey>,
        http: Option<Arc<dyn HttpClient>>,
    ) -> Result<Option<Self>, ConnectionsError> {
        // One definition per key: the vault keeps one entry per (workspace, user, key).
        let mut seen: BTreeMap<&str, (&str, &Provider)> = BTreeMap::new();
        let every = providers.iter().map(|p| ("*", p));
        let own = per_worker
            .iter()
            .flat_map(|(w, ps)| ps.iter().map(move |p| (w.as_str(), p)));
        for (worker, p) in every.chain(own) {
            match seen.get(p.key.as_str()) {
                Some((other, q)) if *q != p => {
                    return Err(ConnectionsError::ProviderClash(
                        p.key.clone(),
                        (*other).to_owned(),
                        worker.to_owned(),
                    ));
                }
                Some(_) => {}
                None => {
                    seen.insert(&p.key, (worker, p));
                }
            }
        }
        let Some((first, _)) = seen.first_key_value() else {
            return Ok(None);
        };
        let vault = vault.ok_or_else(|| ConnectionsError::NoVaultKey((*first).to_owned()))?;
        let http = http.ok_or(ConnectionsError::NoHttpClient)?;
        Ok(Some(Self {
            providers,
            per_worker,
            vault,
            http,
            discovered: std::sync::Mutex::default(),
        }))
    }

    /// `p` ready to use for connections redirected to `redirect_uri`: configured, or read
    /// from its issuer's metadata, or (an MCP server's) discovered and registered (once per
    /// process; a failure is tried again on the next use).
    async fn resolve<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        p: &Provider,
        redirect_uri: &str,
    ) -> Result<Resolved, DiscoveryError> {
        if let Endpoints::Given(e) = &p.endpoints {
            return Ok(Resolved {
                endpoints: e.clone(),
                provider: p.clone(),
                resource: None,
                issuer: None,
            });
        }
        let cache_key = discovered_key(p, redirect_uri);
        if let Some(r) = self.discovered_lock().get(&cache_key) {
            return Ok(r.clone());
        }
        let found = match &p.endpoints {
            Endpoints::Given(_) => unreachable!("answered above"),
            Endpoints::Issuer(issuer) => discovery::discover_server(&self.http, rt, issuer)
                .await
                .map(|metadata| Resolved {
                    endpoints: metadata.endpoints,
                    // A configured `revocation_url` wins over the metadata's.
                    provider: Provider {
                        revocation_url: p.revocation_url.clone().or(metadata.revocation_endpoint),
                        ..p.clone()
                    },
                    resource: None,
                    issuer: None,
                }),
            #[cfg(feature = "mcp-authorization")]
            Endpoints::McpServer(server) => {
                self.discover_mcp(store, rt, p, server, redirect_uri).await
            }
        };
        #[cfg(not(feature = "mcp-authorization"))]
        let _ = store;
        match &found {
            Ok(r) => {
                self.discovered_lock().insert(cache_key, r.clone());
            }
            Err(e) => {
                tracing::warn!(provider = %p.key, error = %e, "the provider's metadata could not be read");
            }
        }
        found
    }

    /// `p` as runway is its client when revoking a connection made with `redirect_uri`: the
    /// client the tokens were issued to, with the revocation endpoint filled in (configured;
    /// else, for a provider declared by its `issuer`, the metadata's; for an MCP server's own
    /// authorization, its authorization server's). `revocation_url` none: there is none.
    /// Never registers a client (one registered now was not issued these tokens).
    ///
    /// # Errors
    /// What to report instead: the metadata could not be read, or the registration an MCP
    /// server's tokens were issued to is not kept.
    pub(crate) async fn revoking_client<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        p: &Provider,
        redirect_uri: &str,
    ) -> Result<Provider, Revocation> {
        let unreachable = |e: DiscoveryError| Revocation::Unreachable {
            reason: e.to_string(),
        };
        match &p.endpoints {
            Endpoints::Given(_) => Ok(p.clone()),
            Endpoints::Issuer(_) if p.revocation_url.is_some() => Ok(p.clone()),
            Endpoints::Issuer(_) => self
                .resolve(store, rt, p, redirect_uri)
                .await
                .map(|r| r.provider)
                .map_err(unreachable),
            #[cfg(feature = "mcp-authorization")]
            Endpoints::McpServer(server) => {
                let cached = self
                    .discovered_lock()
                    .get(&discovered_key(p, redirect_uri))
                    .map(|r| r.provider.clone());
                if let Some(client) = cached {
                    return Ok(client);
                }
                let resource = protected_resource::discover_resource(&self.http, rt, server)
                    .await
                    .map_err(unreachable)?;
                let metadata = discovery::discover_server(&self.http, rt, &resource.issuer)
                    .await
                    .map_err(unreachable)?;
                if metadata.revocation_endpoint.is_none() {
                    return Ok(Provider {
                        revocation_url: None,
                        ..p.clone()
                    });
                }
                let client = client_registration::kept_client(
                    store,
                    &self.vault,
                    &metadata,
                    &resource.issuer,
                    redirect_uri,
                )
                .await
                .map_err(|reason| Revocation::Unreachable { reason })?
                .ok_or(Revocation::NoClient)?;
                Ok(Provider {
                    client_id: client.client_id,
                    client_secret: client.client_secret,
                    revocation_url: metadata.revocation_endpoint,
                    ..p.clone()
                })
            }
        }
    }

    /// An MCP server's authorization: its protected resource metadata, its authorization
    /// server's metadata, and runway's client there.
    #[cfg(feature = "mcp-authorization")]
    async fn discover_mcp<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        p: &Provider,
        server: &url::Url,
        redirect_uri: &str,
    ) -> Result<Resolved, DiscoveryError> {
        let resource = protected_resource::discover_resource(&self.http, rt, server).await?;
        let metadata = discovery::discover_server(&self.http, rt, &resource.issuer).await?;
        if !metadata.pkce_s256 {
            return Err(DiscoveryError::NoPkce(resource.issuer.to_string()));
        }
        let client = client_registration::client_for(
            store,
            rt,
            &self.http,
            &self.vault,
            &metadata,
            &resource.issuer,
            redirect_uri,
        )
        .await?;
        Ok(Resolved {
            endpoints: metadata.endpoints,
            provider: Provider {
                client_id: client.client_id,
                client_secret: client.client_secret,
                scopes: resource.scopes,
                revocation_url: metadata.revocation_endpoint,
                ..p.clone()
            },
            resource: Some(resource.resource),
            issuer: Some(resource.issuer),
        })
    }

    /// Using what was discovered for `p` failed: it is read again at the next use; a client
    /// the authorization server no longer knows (`invalid_client`) registers again.
    async fn forget_discovered<S: TurnStore>(
        &self,
        store: &S,
        p: &Provider,
        redirect_uri: &str,
        invalid_client: bool,
    ) {
        let Some(was) = self
            .discovered_lock()
            .remove(&discovered_key(p, redirect_uri))
        else {
            return;
        };
        #[cfg(feature = "mcp-authorization")]
        if let (true, Some(issuer)) = (invalid_client, &was.issuer) {
            client_registration::forget(store, issuer, redirect_uri).await;
        }
        #[cfg(not(feature = "mcp-authorization"))]
        let _ = (store, invalid_client, was);
    }

    fn discovered_lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Resolved>> {
        self.discovered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The provider `key`, whichever worker declares it (one definition per key: see
    /// [`Connections::new`]).
    pub(crate) fn any_provider(&self, key: &str) -> Option<&Provider> {
        self.providers
            .get(key)
            .or_else(|| self.per_worker.values().find_map(|own| own.get(key)))
    }

    /// Whether a provider is an MCP server's own authorization (`auth = "oauth"`): only
    /// then is the Client ID Metadata Document served.
    #[cfg(feature = "mcp-authorization")]
    pub(crate) fn has_mcp_servers(&self) -> bool {
        self.providers
            .iter()
            .chain(self.per_worker.values().flat_map(Providers::iter))
            .any(|p| matches!(p.endpoints, Endpoints::McpServer(_)))
    }

    /// The vault key.
    pub(crate) fn vault(&self) -> &VaultKey {
        &self.vault
    }

    /// The HTTP client providers are reached through.
    pub(crate) fn http(&self) -> &Arc<dyn HttpClient> {
        &self.http
    }

    /// The provider `key` as worker `worker` knows it: its own, else every worker's.
    fn provider(&self, worker: &str, key: &str) -> Option<&Provider> {
        self.per_worker
            .get(worker)
            .and_then(|own| own.get(key))
            .or_else(|| self.providers.get(key))
    }

    /// The user's connection to `provider`, or the card to ask for it.
    pub(crate) async fn for_turn<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        scope: &ConnectScope,
        provider: &str,
    ) -> Result<Connection, ConnectionError> {
        let (p, key) = self.scoped(scope, provider)?;
        if let Some(token) = self
            .usable(store, rt, p, &key, &redirect_uri_of(scope))
            .await?
        {
            return Ok(Connection::Token(token));
        }
        self.card(store, rt, scope, p, key).await
    }

    /// The user's token at `provider` if they are connected (refreshed first if it was about
    /// to expire), else `None`: no card, so nothing is written to the store.
    pub(crate) async fn token_for_turn<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        scope: &ConnectScope,
        provider: &str,
    ) -> Result<Option<AccessToken>, ConnectionError> {
        let (p, key) = self.scoped(scope, provider)?;
        self.usable(store, rt, p, &key, &redirect_uri_of(scope))
            .await
    }

    /// The vault's token for `key`, refreshed first if it was about to expire; `None`: no
    /// entry, one that does not open, or no refresh possible.
    async fn usable<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        p: &Provider,
        key: &ConnectionKey,
        redirect_uri: &str,
    ) -> Result<Option<AccessToken>, ConnectionError> {
        let Some(tokens) = self.stored(store, key).await? else {
            return Ok(None);
        };
        if is_fresh(&tokens, rt.now_ms()) {
            return Ok(Some(AccessToken::new(tokens.access_token)));
        }
        Ok(self
            .refresh(store, rt, p, key, &tokens, redirect_uri)
            .await?
            .map(|refreshed| AccessToken::new(refreshed.access_token)))
    }

    /// The API answered 401 to `rejected`, the user's token at `provider`: another token if
    /// the vault has a newer one (another turn refreshed), else one refresh when `retry` is
    /// [`Rejected::Refresh`](crate::Rejected::Refresh); when neither gives one, the entry is marked unusable (so no
    /// turn sends that token again) and the card is returned.
    pub(crate) async fn rejected<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        scope: &ConnectScope,
        provider: &str,
        rejected: &AccessToken,
        retry: Rejected,
    ) -> Result<Connection, ConnectionError> {
        let (p, key) = self.scoped(scope, provider)?;
        let redirect_uri = redirect_uri_of(scope);
        #[cfg(feature = "mcp-authorization")]
        if matches!(p.endpoints, Endpoints::McpServer(_)) {
            // The server refused a token: what it said about itself is read again.
            self.forget_discovered(store, p, &redirect_uri, false).await;
        }
        if let Some(tokens) = self.stored(store, &key).await? {
            if tokens.access_token != rejected.expose() {
                if is_usable(&tokens, rt.now_ms()) {
                    return Ok(Connection::Token(AccessToken::new(tokens.access_token)));
                }
            } else if retry == Rejected::Refresh
                && let Some(refreshed) = self
                    .refresh(store, rt, p, &key, &tokens, &redirect_uri)
                    .await?
            {
                return Ok(Connection::Token(AccessToken::new(refreshed.access_token)));
            }
            // Read again: the user may have connected anew, or another turn refreshed, while
            // this one asked; only the refused token is marked.
            let still = self.stored(store, &key).await?;
            if still.is_some_and(|now| now.access_token == rejected.expose()) {
                tracing::info!(provider = %p.key, "the API refused a stored token: asking to connect again");
                store
                    .put_connection(&key, &self.seal(rt, &key, &Tokens::unusable()))
                    .await?;
            }
        }
        self.card(store, rt, scope, p, key).await
    }

    /// The provider `provider` as the turn's worker knows it, and whose connection to it.
    fn scoped(
        &self,
        scope: &ConnectScope,
        provider: &str,
    ) -> Result<(&Provider, ConnectionKey), ConnectionError> {
        let p = self
            .provider(&scope.worker, provider)
            .ok_or_else(|| ConnectionError::UnknownProvider(provider.to_owned()))?;
        let user = scope
            .user
            .clone()
            .ok_or_else(|| ConnectionError::NoUser(p.name.clone()))?;
        let key = ConnectionKey {
            workspace: scope.workspace.clone(),
            user,
            provider: provider.to_owned(),
        };
        Ok((p, key))
    }

    /// The vault's tokens for `key`: none without an entry, or with one that does not open
    /// (tampered, another vault key), which is no connection.
    async fn stored<S: TurnStore>(
        &self,
        store: &S,
        key: &ConnectionKey,
    ) -> Result<Option<Tokens>, ConnectionError> {
        let stored = store.get_connection(key).await?;
        Ok(stored.and_then(|sealed| {
            let opened = self.vault.open(key, &sealed);
            if opened.is_none() {
                tracing::warn!(
                    provider = %key.provider,
                    "a vault entry did not decrypt: asking to connect again"
                );
            }
            opened
        }))
    }

    /// The card asking the user to connect: a new single-use link state.
    async fn card<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        scope: &ConnectScope,
        p: &Provider,
        key: ConnectionKey,
    ) -> Result<Connection, ConnectionError> {
        // A provider that cannot be found gets no card whose link could only fail.
        self.resolve(store, rt, p, &redirect_uri_of(scope))
            .await
            .map_err(|e| ConnectionError::Unreachable(p.name.clone(), e.to_string()))?;
        let state = ConnectState {
            id: pkce::random_token(rt),
            stage: ConnectStage::Link,
            worker: scope.worker.clone(),
            thread: scope.thread.clone(),
            key,
            verifier: pkce::random_token(rt),
            redirect_uri: redirect_uri_of(scope),
            expires_at_ms: rt.now_ms().saturating_add(STATE_TTL_MS),
        };
        store.put_connect_state(&state).await?;
        Ok(Connection::Authorize(Interrupt::Authorization {
            provider: p.name.clone(),
            authorize_url: format!("{}{CONNECT_PATH}{}", scope.public_base_url, state.id),
        }))
    }

    /// Refreshes `tokens` and stores the new ones; `None` when there is no refresh token or
    /// the provider refused (the card then). One refresh token is spent once: the turn that
    /// claims its lease (see [`refresh_lease`]) asks the provider; a turn that loses waits
    /// for the winner's tokens in the vault. A provider rotating refresh tokens would
    /// refuse the second use of one, and may revoke the whole grant for it.
    async fn refresh<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        p: &Provider,
        key: &ConnectionKey,
        tokens: &Tokens,
        redirect_uri: &str,
    ) -> Result<Option<Tokens>, ConnectionError> {
        let Some(refresh_token) = &tokens.refresh_token else {
            return Ok(None);
        };
        let lease = refresh_lease(rt, key, refresh_token);
        if !store.claim_action(&lease).await? {
            return self.await_refreshed(store, rt, key, tokens).await;
        }
        // Won: a refresh that finished since the vault was read already spent this one.
        if let Some(now) = self.stored(store, key).await?
            && now.refresh_token != tokens.refresh_token
        {
            return Ok(is_usable(&now, rt.now_ms()).then_some(now));
        }
        let resolved = match self.resolve(store, rt, p, redirect_uri).await {
            Ok(r) => r,
            Err(_) => return Ok(None),
        };
        match token::refresh(
            &self.http,
            &resolved.provider,
            &resolved.endpoints.token_url,
            refresh_token,
            resolved.resource.as_deref(),
            rt.now_ms(),
        )
        .await
        {
            Ok(mut new) => {
                new.connected_at_ms = tokens.connected_at_ms;
                store.put_connection(key, &self.seal(rt, key, &new)).await?;
                Ok(Some(new))
            }
            Err(e) => {
                tracing::warn!(provider = %p.key, error = %e, "refreshing a connection failed: asking to connect again");
                self.forget_discovered(store, p, redirect_uri, is_invalid_client(&e))
                    .await;
                Ok(None)
            }
        }
    }

    /// Another turn holds the lease on `old`'s refresh token: re-reads the vault until its
    /// tokens replace `old` (at most [`REFRESH_WAIT_MS`]); `None` if they do not come, or
    /// the entry became unusable.
    async fn await_refreshed<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        key: &ConnectionKey,
        old: &Tokens,
    ) -> Result<Option<Tokens>, ConnectionError> {
        let until = rt.now_ms().saturating_add(REFRESH_WAIT_MS);
        while rt.now_ms() < until {
            rt.sleep(REFRESH_POLL).await;
            match self.stored(store, key).await? {
                Some(now) if now.access_token != old.access_token => {
                    return Ok(is_usable(&now, rt.now_ms()).then_some(now));
                }
                Some(_) => {}
                None => return Ok(None),
            }
        }
        tracing::warn!(provider = %key.provider, "another turn's refresh did not finish in time: asking to connect again");
        Ok(None)
    }

    fn seal<R: Runtime>(&self, rt: &R, key: &ConnectionKey, tokens: &Tokens) -> String {
        let mut nonce = [0u8; 12];
        rt.fill_random(&mut nonce);
        self.vault.seal(key, tokens, nonce)
    }

    /// `GET {base}/connect/{id}`: claims the card's state and sends the browser to the
    /// provider with a new one.
    pub(crate) async fn open_link<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        id: &str,
    ) -> Result<LinkOutcome, crate::error::StoreError> {
        if !pkce::is_token(id) {
            return Ok(LinkOutcome::Refused);
        }
        let Some(state) = store.claim_connect_state(id, rt.now_ms()).await? else {
            return Ok(LinkOutcome::Refused);
        };
        let Some(p) = self
            .provider(&state.worker, &state.key.provider)
            .filter(|_| state.stage == ConnectStage::Link)
        else {
            return Ok(LinkOutcome::Refused);
        };
        let Ok(resolved) = self.resolve(store, rt, p, &state.redirect_uri).await else {
            return Ok(LinkOutcome::Unreachable(p.name.clone()));
        };
        let next = ConnectState {
            id: pkce::random_token(rt),
            stage: ConnectStage::Callback,
            ..state
        };
        store.put_connect_state(&next).await?;
        let client = &resolved.provider;
        let mut url = resolved.endpoints.authorize_url;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &next.redirect_uri);
            // An MCP server that names no scopes gets none asked for.
            if resolved.resource.is_none() || !client.scopes.is_empty() {
                query.append_pair("scope", &client.scopes.join(" "));
            }
            query
                .append_pair("state", &next.id)
                .append_pair("code_challenge", &pkce::challenge(&next.verifier))
                .append_pair("code_challenge_method", "S256");
            if let Some(resource) = &resolved.resource {
                query.append_pair("resource", resource);
            }
        }
        Ok(LinkOutcome::Redirect(url.into()))
    }

    /// `GET {base}/callback?state=…&code=…` (or `&error=…`): claims the state, exchanges the
    /// code and seals the tokens into the vault.
    pub(crate) async fn callback<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        query: &str,
    ) -> Result<CallbackOutcome, crate::error::StoreError> {
        let (mut state_id, mut code, mut error) = (None, None, None);
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "state" => state_id = Some(v.into_owned()),
                "code" => code = Some(v.into_owned()),
                "error" => error = Some(v.into_owned()),
                _ => {}
            }
        }
        let Some(id) = state_id.filter(|s| pkce::is_token(s)) else {
            return Ok(CallbackOutcome::Refused);
        };
        let Some(state) = store.claim_connect_state(&id, rt.now_ms()).await? else {
            return Ok(CallbackOutcome::Refused);
        };
        let Some(p) = self
            .provider(&state.worker, &state.key.provider)
            .filter(|_| state.stage == ConnectStage::Callback)
        else {
            return Ok(CallbackOutcome::Refused);
        };
        if let Some(error) = error {
            let code: String = error
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .take(64)
                .collect();
            return Ok(CallbackOutcome::Declined(p.name.clone(), code));
        }
        let Some(code) = code else {
            return Ok(CallbackOutcome::Failed(p.name.clone()));
        };
        let Ok(resolved) = self.resolve(store, rt, p, &state.redirect_uri).await else {
            return Ok(CallbackOutcome::Failed(p.name.clone()));
        };
        match token::exchange_code(
            &self.http,
            &resolved.provider,
            &resolved.endpoints.token_url,
            &code,
            &state.verifier,
            &state.redirect_uri,
            resolved.resource.as_deref(),
            rt.now_ms(),
        )
        .await
        {
            Ok(mut tokens) => {
                tokens.connected_at_ms = Some(rt.now_ms());
                let sealed = self.seal(rt, &state.key, &tokens);
                store.put_connection(&state.key, &sealed).await?;
                tracing::info!(provider = %p.key, worker = %state.worker, "account connected");
                Ok(CallbackOutcome::Connected(p.name.clone()))
            }
            Err(e) => {
                tracing::warn!(provider = %p.key, error = %e, "exchanging an authorization code failed");
                self.forget_discovered(store, p, &state.redirect_uri, is_invalid_client(&e))
                    .await;
                Ok(CallbackOutcome::Failed(p.name.clone()))
            }
        }
    }
}
