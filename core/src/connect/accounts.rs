//! What operators see and do with connected accounts (`runway connections`): list the vault's
//! entries with what is known about them — whose, which provider, the scopes granted, when the
//! access token expires, when the user connected — and revoke them. Never a token: the entries
//! are opened here (the scopes and expiry are sealed with the tokens) and only metadata leaves.
//!
//! Revoking one user's connections hands each token back to its provider first (RFC 7009,
//! [`revoke`](crate::connect::revoke), where the provider declares `revocation_url`, or its
//! issuer's metadata, or an MCP server's authorization server's, names a
//! `revocation_endpoint`), then
//! deletes the entry whatever the provider answered, and reports the provider's answer per
//! connection. Revoking always names a workspace and a user, so no call empties the vault of
//! everyone.

use serde::Serialize;

use crate::connect::Connections;
use crate::connect::provider::{Endpoints, Provider};
use crate::connect::revoke::{Revocation, revoke};
use crate::connect::vault::{Tokens, VaultKey};
use crate::error::StoreError;
use crate::platform::runtime::Runtime;
use crate::store::{ConnectionFilter, ConnectionKey, TurnStore};

/// Most connections one `GET /connections` answer lists; the rest are on the next pages
/// (`nextCursor`).
pub const MAX_CONNECTION_ROWS: usize = 500;

/// Most connections one revocation goes through: far more than one user connects (one per
/// provider); past it the answer says `more` and the same call revokes the rest.
pub const MAX_REVOKED: usize = 100;

/// What is known of a connection's tokens, from its sealed entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ConnectionStatus {
    /// A usable access token, or an expired one the refresh token renews at the next use.
    Connected,
    /// The access token expired and there is no refresh token: the next use shows the card.
    Expired,
    /// The provider's API refused the token and it could not be refreshed: the next use shows
    /// the card.
    NeedsReconnect,
    /// The entry does not open (another `RUNWAY_VAULT_KEY`, or tampered with): no connection.
    Unreadable,
}

/// One connection as `GET /connections` lists it: no token, nothing a token can be rebuilt
/// from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionRow {
    /// The workspace (Console's `workspaceId`).
    pub workspace_id: String,
    /// The person (Console's `userId`).
    pub user_id: String,
    /// The provider's key (`[providers.KEY]`).
    pub provider: String,
    /// The provider's display name, when it is configured here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_name: Option<String>,
    /// What the tokens are good for now.
    pub status: ConnectionStatus,
    /// The scopes granted, as the provider said (empty when it did not say).
    pub scopes: Vec<String>,
    /// When the access token expires (ms since the epoch), if the provider said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// Whether a refresh token is kept (the access token is renewed without the user).
    pub refreshable: bool,
    /// When the user connected (ms since the epoch), for entries made since it is recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected_at_ms: Option<u64>,
}

/// One page of connections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionPage {
    /// At most [`MAX_CONNECTION_ROWS`].
    pub connections: Vec<ConnectionRow>,
    /// Present when more follow: the same query with `cursor` set to it reads them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One revoked connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevokedRow {
    /// The workspace.
    pub workspace_id: String,
    /// The person.
    pub user_id: String,
    /// The provider's key.
    pub provider: String,
    /// Whether the vault entry was deleted by this call (false: already gone).
    pub deleted: bool,
    /// What the provider's revocation endpoint said.
    pub revocation: Revocation,
}

/// What a revocation did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevokeReport {
    /// Each connection revoked, in the store's order.
    pub revoked: Vec<RevokedRow>,
    /// More connections matched than [`MAX_REVOKED`]: call again for the rest.
    pub more: bool,
}

/// Whether `key` is runway's client registration at an MCP server's authorization server,
/// not a person's connection.
#[cfg(feature = "mcp-authorization")]
fn is_registration(key: &ConnectionKey) -> bool {
    crate::connect::client_registration::is_registration(key)
}

/// Without MCP servers' authorization there are none.
#[cfg(not(feature = "mcp-authorization"))]
fn is_registration(_: &ConnectionKey) -> bool {
    false
}

/// Where a page of connections starts: after this entry. As a query value: hex of the key's
/// JSON, so any id is safe in a URL.
pub fn encode_cursor(key: &ConnectionKey) -> String {
    hex::encode(serde_json::to_vec(&[&key.workspace, &key.user, &key.provider]).unwrap_or_default())
}

/// A cursor [`encode_cursor`] made, if `text` is one.
pub fn decode_cursor(text: &str) -> Option<ConnectionKey> {
    let bytes = hex::decode(text).ok()?;
    let [workspace, user, provider]: [String; 3] = serde_json::from_slice(&bytes).ok()?;
    Some(ConnectionKey {
        workspace,
        user,
        provider,
    })
}

/// What the vault's entries are opened and revoked with: the vault key, and the configured
/// providers with the client their revocation endpoints are reached through.
pub(crate) struct AccountsAccess<'a> {
    /// `RUNWAY_VAULT_KEY` (none: every entry is [`ConnectionStatus::Unreadable`]).
    pub(crate) vault: Option<&'a VaultKey>,
    /// The providers (none configured: no names, nothing revoked at a provider).
    pub(crate) connections: Option<&'a Connections>,
    /// The deployment's callback URL (`{public base}/callback`), as turns build it: the
    /// client registration an MCP server's tokens were issued to is kept per callback URL.
    pub(crate) redirect_uri: String,
}

impl AccountsAccess<'_> {
    fn open(&self, key: &ConnectionKey, sealed: &str) -> Option<Tokens> {
        self.vault.and_then(|v| v.open(key, sealed))
    }

    /// The provider `key`, whichever worker declares it.
    fn provider(&self, key: &str) -> Option<&Provider> {
        self.connections.and_then(|c| c.any_provider(key))
    }

    /// One page of the connections `filter` names, after `after`.
    pub(crate) async fn list<S: TurnStore>(
        &self,
        store: &S,
        filter: &ConnectionFilter,
        after: Option<&ConnectionKey>,
        now_ms: u64,
    ) -> Result<ConnectionPage, StoreError> {
        // One more than a page: whether another page follows, without an empty last one.
        let mut found = store
            .list_connections(filter, after, MAX_CONNECTION_ROWS + 1)
            .await?;
        let more = found.len() > MAX_CONNECTION_ROWS;
        found.truncate(MAX_CONNECTION_ROWS);
        let next_cursor = more
            .then(|| found.last().map(|c| encode_cursor(&c.key)))
            .flatten();
        let connections = found
            .into_iter()
            // runway's own client registrations (MCP servers' authorization) are no one's.
            .filter(|c| !is_registration(&c.key))
            .map(|c| {
                let tokens = self.open(&c.key, &c.sealed);
                self.row(c.key, tokens.as_ref(), now_ms)
            })
            .collect();
        Ok(ConnectionPage {
            connections,
            next_cursor,
        })
    }

    fn row(&self, key: ConnectionKey, tokens: Option<&Tokens>, now_ms: u64) -> ConnectionRow {
        let status = match tokens {
            None => ConnectionStatus::Unreadable,
            Some(t) if t.access_token.is_empty() => ConnectionStatus::NeedsReconnect,
            Some(t)
                if t.refresh_token.is_none()
                    && t.expires_at_ms.is_some_and(|exp| exp <= now_ms) =>
            {
                ConnectionStatus::Expired
            }
            Some(_) => ConnectionStatus::Connected,
        };
        ConnectionRow {
            provider_name: self.provider(&key.provider).map(|p| p.name.clone()),
            workspace_id: key.workspace,
            user_id: key.user,
            provider: key.provider,
            status,
            scopes: tokens
                .and_then(|t| t.scope.as_deref())
                .map(|s| s.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default(),
            expires_at_ms: tokens.and_then(|t| t.expires_at_ms),
            refreshable: tokens.is_some_and(|t| t.refresh_token.is_some()),
            connected_at_ms: tokens.and_then(|t| t.connected_at_ms),
        }
    }

    /// Revokes `user`'s connections in `workspace` (to `provider` only, if given): each token
    /// at its provider's revocation endpoint, then the entry deleted from the vault whatever
    /// the provider answered.
    pub(crate) async fn revoke<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        workspace: &str,
        user: &str,
        provider: Option<&str>,
    ) -> Result<RevokeReport, StoreError> {
        let filter = ConnectionFilter {
            workspace: Some(workspace.to_owned()),
            user: Some(user.to_owned()),
        };
        let mut revoked = Vec::new();
        let mut after: Option<ConnectionKey> = None;
        loop {
            let page = store
                .list_connections(&filter, after.as_ref(), MAX_REVOKED)
                .await?;
            let last_page = page.len() < MAX_REVOKED;
            after = page.last().map(|c| c.key.clone());
            for entry in page {
                // The store was asked for this workspace and user: anything else is not
                // touched, whatever a store returns.
                if entry.key.workspace != workspace
                    || entry.key.user != user
                    || provider.is_some_and(|p| p != entry.key.provider)
                {
                    continue;
                }
                if revoked.len() == MAX_REVOKED {
                    return Ok(RevokeReport {
                        revoked,
                        more: true,
                    });
                }
                let revocation = self
                    .revoke_at_provider(store, rt, &entry.key, &entry.sealed)
                    .await;
                let deleted = store.delete_connection(&entry.key).await?;
                tracing::info!(
                    provider = %entry.key.provider,
                    outcome = ?revocation,
                    deleted,
                    "a connected account was revoked"
                );
                revoked.push(RevokedRow {
                    workspace_id: entry.key.workspace,
                    user_id: entry.key.user,
                    provider: entry.key.provider,
                    deleted,
                    revocation,
                });
            }
            if last_page {
                return Ok(RevokeReport {
                    revoked,
                    more: false,
                });
            }
        }
    }

    /// Revokes the entry's token where its provider takes revocations: the provider's
    /// `revocation_url`, else (a provider declared by its `issuer`, an MCP server's own
    /// authorization) the `revocation_endpoint` its metadata names, as the client the tokens
    /// were issued to.
    async fn revoke_at_provider<S: TurnStore, R: Runtime>(
        &self,
        store: &S,
        rt: &R,
        key: &ConnectionKey,
        sealed: &str,
    ) -> Revocation {
        let (Some(connections), Some(p)) = (self.connections, self.provider(&key.provider)) else {
            return Revocation::UnknownProvider;
        };
        // Configured endpoints and none declared: nothing to look up.
        if matches!(p.endpoints, Endpoints::Given(_)) && p.revocation_url.is_none() {
            return Revocation::NotDeclared;
        }
        let Some(tokens) = self.open(key, sealed) else {
            return Revocation::NoToken;
        };
        let client = match connections
            .revoking_client(store, rt, p, &self.redirect_uri)
            .await
        {
            Ok(client) => client,
            Err(report) => return report,
        };
        if client.revocation_url.is_none() {
            return Revocation::NotDeclared;
        }
        revoke(connections.http(), rt, &client, &tokens).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_any_key_and_nothing_else_is_one() {
        let key = ConnectionKey {
            workspace: "w/1 &x".into(),
            user: "ü\"".into(),
            provider: "acme".into(),
        };
        let c = encode_cursor(&key);
        assert!(c.bytes().all(|b| b.is_ascii_hexdigit()), "{c}");
        assert_eq!(decode_cursor(&c), Some(key));
        for junk in ["", "zz", &hex::encode("[\"a\",\"b\"]"), &hex::encode("{}")] {
            assert_eq!(decode_cursor(junk), None, "{junk}");
        }
    }
}
