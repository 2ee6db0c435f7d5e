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

pub(crate) mod pkce;
pub mod provider;
pub(crate) mod token;
pub mod vault;

use std::sync::Arc;

use crate::agent::turn_connections::{AccessToken, ConnectScope, Connection, ConnectionError};
use crate::connect::provider::{Provider, Providers};
use crate::connect::vault::{Tokens, VaultKey};
use crate::http_client::HttpClient;
use crate::platform::runtime::Runtime;
use crate::protocol::Interrupt;
use crate::store::{ConnectStage, ConnectState, ConnectionKey, TurnStore};

/// How long a connect state (the card's link, then the OAuth `state`) works: 10 minutes.
pub const STATE_TTL_MS: u64 = 10 * 60 * 1000;

/// A token expiring sooner than this is refreshed before it is used.
const REFRESH_MARGIN_MS: u64 = 60 * 1000;

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
}

/// The providers, the vault key and the HTTP client token endpoints are reached with.
pub(crate) struct Connections {
    providers: Providers,
    vault: VaultKey,
    http: Arc<dyn HttpClient>,
}

/// What opening the card's link leads to.
#[derive(Debug)]
pub(crate) enum LinkOutcome {
    /// Send the browser here (the provider's authorization endpoint).
    Redirect(String),
    /// The link is unknown, used or expired.
    Refused,
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
    /// Connections to `providers`, sealed under `vault` (required as soon as there is one
    /// provider), reaching token endpoints through `http`.
    pub(crate) fn new(
        providers: Providers,
        vault: Option<VaultKey>,
        http: Option<Arc<dyn HttpClient>>,
    ) -> Result<Option<Self>, ConnectionsError> {
        let Some(first) = providers.iter().next() else {
            return Ok(None);
        };
        let vault = vault.ok_or_else(|| ConnectionsError::NoVaultKey(first.key.clone()))?;
        let http = http.ok_or(ConnectionsError::NoHttpClient)?;
        Ok(Some(Self {
            providers,
            vault,
            http,
        }))
    }

    /// The user's connection to `provider`, or the card to ask for it.
    pub(crate) async fn for_turn<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        scope: &ConnectScope,
        provider: &str,
    ) -> Result<Connection, ConnectionError> {
        let p = self
            .providers
            .get(provider)
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
        let now = rt.now_ms();
        let stored = store.get_connection(&key).await?;
        // An entry that does not open (tampered, another vault key) is no connection.
        let tokens = stored.and_then(|sealed| {
            let opened = self.vault.open(&key, &sealed);
            if opened.is_none() {
                tracing::warn!(
                    provider,
                    "a vault entry did not decrypt: asking to connect again"
                );
            }
            opened
        });
        if let Some(tokens) = tokens {
            let fresh = tokens
                .expires_at_ms
                .is_none_or(|exp| exp > now.saturating_add(REFRESH_MARGIN_MS));
            if fresh {
                return Ok(Connection::Token(AccessToken::new(tokens.access_token)));
            }
            if let Some(refreshed) = self.refresh(store, rt, p, &key, &tokens).await? {
                return Ok(Connection::Token(AccessToken::new(refreshed.access_token)));
            }
        }
        let state = ConnectState {
            id: pkce::random_token(rt),
            stage: ConnectStage::Link,
            worker: scope.worker.clone(),
            thread: scope.thread.clone(),
            key,
            verifier: pkce::random_token(rt),
            redirect_uri: format!("{}{CALLBACK_PATH}", scope.public_base_url),
            expires_at_ms: now.saturating_add(STATE_TTL_MS),
        };
        store.put_connect_state(&state).await?;
        Ok(Connection::Authorize(Interrupt::Authorization {
            provider: p.name.clone(),
            authorize_url: format!("{}{CONNECT_PATH}{}", scope.public_base_url, state.id),
        }))
    }

    /// Refreshes `tokens` and stores the new ones; `None` when there is no refresh token or
    /// the provider refused (the card then).
    async fn refresh<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        p: &Provider,
        key: &ConnectionKey,
        tokens: &Tokens,
    ) -> Result<Option<Tokens>, ConnectionError> {
        let Some(refresh_token) = &tokens.refresh_token else {
            return Ok(None);
        };
        match token::refresh(&self.http, p, refresh_token, rt.now_ms()).await {
            Ok(new) => {
                store.put_connection(key, &self.seal(rt, key, &new)).await?;
                Ok(Some(new))
            }
            Err(e) => {
                tracing::warn!(provider = %p.key, error = %e, "refreshing a connection failed: asking to connect again");
                Ok(None)
            }
        }
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
            .providers
            .get(&state.key.provider)
            .filter(|_| state.stage == ConnectStage::Link)
        else {
            return Ok(LinkOutcome::Refused);
        };
        let next = ConnectState {
            id: pkce::random_token(rt),
            stage: ConnectStage::Callback,
            ..state
        };
        store.put_connect_state(&next).await?;
        let mut url = p.authorize_url.clone();
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &p.client_id)
            .append_pair("redirect_uri", &next.redirect_uri)
            .append_pair("scope", &p.scopes.join(" "))
            .append_pair("state", &next.id)
            .append_pair("code_challenge", &pkce::challenge(&next.verifier))
            .append_pair("code_challenge_method", "S256");
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
            .providers
            .get(&state.key.provider)
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
        match token::exchange_code(
            &self.http,
            p,
            &code,
            &state.verifier,
            &state.redirect_uri,
            rt.now_ms(),
        )
        .await
        {
            Ok(tokens) => {
                let sealed = self.seal(rt, &state.key, &tokens);
                store.put_connection(&state.key, &sealed).await?;
                tracing::info!(provider = %p.key, worker = %state.worker, "account connected");
                Ok(CallbackOutcome::Connected(p.name.clone()))
            }
            Err(e) => {
                tracing::warn!(provider = %p.key, error = %e, "exchanging an authorization code failed");
                Ok(CallbackOutcome::Failed(p.name.clone()))
            }
        }
    }
}
