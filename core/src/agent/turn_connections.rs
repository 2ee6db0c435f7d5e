//! [`Turn::connection`](crate::Turn::connection): a turn's way to the user's connected
//! accounts (the vault, [`crate::connect`]), type-erased so [`Turn`](crate::Turn) is not
//! generic over the store.

use std::fmt;
use std::sync::Arc;

use crate::error::StoreError;
use crate::platform::maybe_send::{BoxFuture, MaybeSend, MaybeSync};
use crate::protocol::Interrupt;

/// The user's access token at a provider, to send as `Authorization: Bearer …`. Its `Debug`
/// and `Display` show no token.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken(String);

impl AccessToken {
    /// Wraps a token.
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The token itself: send it to the provider's API only, never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccessToken(<redacted>)")
    }
}

/// What [`Turn::connection`](crate::Turn::connection) found.
#[derive(Debug, Clone, PartialEq)]
pub enum Connection {
    /// The user is connected: here is a token valid now (refreshed if it was about to
    /// expire).
    Token(AccessToken),
    /// The user is not connected (or the connection no longer works): end the turn with this
    /// `authorization` interrupt and keep the pending call; on the turn that answers it, ask
    /// again (the answer is no proof, only the vault is).
    Authorize(Interrupt),
}

/// What [`Turn::connection_rejected`](crate::Turn::connection_rejected) may try before it
/// gives up on a token the provider's API refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// Refresh the token once: the API's first 401 to a call.
    Refresh,
    /// Nothing more: the API refused the call again, with a token refreshed for it.
    GiveUp,
}

/// Why no connection could be looked up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    /// No provider of that key is configured.
    #[error("no provider named {0:?} is configured")]
    UnknownProvider(String),
    /// The provider cannot be reached to connect to (its name, and why): its issuer's
    /// metadata could not be read.
    #[error("{0} cannot be reached to connect to: {1}")]
    Unreachable(String, String),
    /// The turn has no `userId`: nobody could connect an account.
    #[error("connecting {0} needs a signed-in user")]
    NoUser(String),
    /// The deployment has no vault (no provider configured, or a runtime whose store keeps no
    /// connections yet).
    #[error("connected accounts are not configured on this deployment")]
    NotConfigured,
    /// The store failed.
    #[error("the token store failed: {0}")]
    Store(#[from] StoreError),
}

/// Looks connections up for a turn (implemented by the engine).
pub(crate) trait ConnectionSource: MaybeSend + MaybeSync + 'static {
    fn connection<'a>(
        &'a self,
        scope: &'a ConnectScope,
        provider: &'a str,
    ) -> BoxFuture<'a, Result<Connection, ConnectionError>>;

    fn rejected<'a>(
        &'a self,
        scope: &'a ConnectScope,
        provider: &'a str,
        token: &'a AccessToken,
        retry: Rejected,
    ) -> BoxFuture<'a, Result<Connection, ConnectionError>>;

    fn token<'a>(
        &'a self,
        scope: &'a ConnectScope,
        provider: &'a str,
    ) -> BoxFuture<'a, Result<Option<AccessToken>, ConnectionError>>;
}

/// Whose connection a turn asks for, and where its card's link points.
#[derive(Debug, Clone)]
pub(crate) struct ConnectScope {
    pub(crate) worker: String,
    pub(crate) workspace: String,
    pub(crate) user: Option<String>,
    pub(crate) thread: String,
    pub(crate) public_base_url: String,
}

/// What a served turn looks its connections up with. Absent outside a served turn (and in the
/// testing kit): every lookup answers [`ConnectionError::NotConfigured`].
#[derive(Clone, Default)]
pub(crate) struct TurnConnections {
    source: Option<Arc<dyn ConnectionSource>>,
}

impl TurnConnections {
    pub(crate) fn new(source: Arc<dyn ConnectionSource>) -> Self {
        Self {
            source: Some(source),
        }
    }

    pub(crate) async fn get(
        &self,
        scope: &ConnectScope,
        provider: &str,
    ) -> Result<Connection, ConnectionError> {
        match &self.source {
            Some(source) => source.connection(scope, provider).await,
            None => Err(ConnectionError::NotConfigured),
        }
    }

    pub(crate) async fn token(
        &self,
        scope: &ConnectScope,
        provider: &str,
    ) -> Result<Option<AccessToken>, ConnectionError> {
        match &self.source {
            Some(source) => source.token(scope, provider).await,
            None => Err(ConnectionError::NotConfigured),
        }
    }

    pub(crate) async fn rejected(
        &self,
        scope: &ConnectScope,
        provider: &str,
        token: &AccessToken,
        retry: Rejected,
    ) -> Result<Connection, ConnectionError> {
        match &self.source {
            Some(source) => source.rejected(scope, provider, token, retry).await,
            None => Err(ConnectionError::NotConfigured),
        }
    }
}

impl fmt::Debug for TurnConnections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnConnections")
            .field("available", &self.source.is_some())
            .finish()
    }
}
