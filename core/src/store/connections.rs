//! Connected accounts in the store: the vault's sealed entries, keyed by (workspace, user,
//! provider), and the single-use OAuth states of connections being made.
//!
//! The store only keeps what it is given: entries arrive sealed (encrypted by
//! [`crate::connect::vault`]) and leave sealed, so no store, log or backup sees a token. A
//! state is claimed atomically (read and deleted in one step): of any number of concurrent
//! claims of one state, at most one gets it, on every backend (a transaction on SQLite and in
//! the Durable Object, one lock in memory), checked by the store conformance suite.
//!
//! Operators list entries by workspace and user, page by page in key order, and delete them
//! one by one ([`crate::connect::accounts`], `runway connections`): still sealed here, opened
//! only by the service layer, which gives out metadata and never a token.

use serde::{Deserialize, Serialize};

use crate::store::sql::{DbError, Sql, SqlValue};
use crate::store::sql_store::SqlStore;

/// Whose connection: one user's, in one workspace, to one provider. One user's connection is
/// never another user's, nor the same user's in another workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionKey {
    /// The workspace (its storage form).
    pub workspace: String,
    /// The person (Console's `userId`).
    pub user: String,
    /// The provider's key in the tools file (`[providers.KEY]`).
    pub provider: String,
}

impl ConnectionKey {
    /// The key as associated data for the vault's cipher: each part length-prefixed, so no
    /// two keys give the same bytes.
    pub fn associated_data(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for part in [&self.workspace, &self.user, &self.provider] {
            out.extend_from_slice(&(part.len() as u64).to_be_bytes());
            out.extend_from_slice(part.as_bytes());
        }
        out
    }
}

/// Which vault entries a listing names: one workspace's, one user's, or both (`None`: any).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionFilter {
    /// Only this workspace's entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Only this user's entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

impl ConnectionFilter {
    /// Whether `key` is one of the entries the filter names.
    pub fn matches(&self, key: &ConnectionKey) -> bool {
        self.workspace.as_ref().is_none_or(|w| *w == key.workspace)
            && self.user.as_ref().is_none_or(|u| *u == key.user)
    }
}

/// A vault entry as a listing gives it: whose, and still sealed.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredConnection {
    /// Whose connection.
    pub key: ConnectionKey,
    /// The sealed entry ([`crate::connect::vault`]).
    pub sealed: String,
}

impl std::fmt::Debug for StoredConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredConnection")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// Which step of the flow a state authorizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConnectStage {
    /// The card's link (`GET /connect/{id}`): opening it sends the browser to the provider.
    Link,
    /// The provider's redirect back (`GET /callback?state=…`): it exchanges the code.
    Callback,
}

/// A connection being made: what an OAuth state binds, kept server-side only.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectState {
    /// The state's id (random, 256 bits, URL-safe): the card's link or the OAuth `state`.
    pub id: String,
    /// Which route may claim it.
    pub stage: ConnectStage,
    /// The Digital Worker (`agentId`) whose turn asked.
    pub worker: String,
    /// The thread whose pending call waits for the connection.
    pub thread: String,
    /// Whose connection it makes.
    pub key: ConnectionKey,
    /// The PKCE code verifier (never in a URL).
    pub verifier: String,
    /// The `redirect_uri` the authorization is asked with (`{public base}/callback`), sent
    /// again with the code.
    pub redirect_uri: String,
    /// When the state stops working (ms since the epoch).
    pub expires_at_ms: u64,
}

impl std::fmt::Debug for ConnectState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectState")
            .field("stage", &self.stage)
            .field("worker", &self.worker)
            .field("key", &self.key)
            .field("expires_at_ms", &self.expires_at_ms)
            .finish_non_exhaustive()
    }
}

impl<S: Sql> SqlStore<S> {
    /// [`crate::adapter::TurnStore::put_connect_state`].
    ///
    /// # Errors
    /// SQLite failed.
    pub fn put_connect_state(&self, state: &ConnectState) -> Result<(), DbError> {
        let data = serde_json::to_string(state).map_err(|e| DbError::Corrupt(e.to_string()))?;
        self.sql().exec(
            "INSERT OR REPLACE INTO turn_connect_states (id, data, expires_at) VALUES (?, ?, ?)",
            &[
                state.id.as_str().into(),
                SqlValue::Text(data),
                SqlValue::from(state.expires_at_ms),
            ],
        )?;
        Ok(())
    }

    /// [`crate::adapter::TurnStore::claim_connect_state`]: reads and deletes the state in one
    /// transaction.
    ///
    /// # Errors
    /// SQLite failed or the row is corrupt.
    pub fn claim_connect_state(
        &self,
        id: &str,
        now_ms: u64,
    ) -> Result<Option<ConnectState>, DbError> {
        let rows = self.sql().exec(
            "DELETE FROM turn_connect_states WHERE id = ? RETURNING data, expires_at",
            &[id.into()],
        )?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let mut row = row.into_iter();
        let (Some(data), Some(exp)) = (row.next(), row.next()) else {
            return Err(DbError::Corrupt("turn_connect_states row".into()));
        };
        if u64::try_from(exp.int()?).unwrap_or(0) <= now_ms {
            return Ok(None);
        }
        let state: ConnectState =
            serde_json::from_str(&data.text()?).map_err(|e| DbError::Corrupt(e.to_string()))?;
        Ok(Some(state))
    }

    /// [`crate::adapter::TurnStore::put_connection`].
    ///
    /// # Errors
    /// SQLite failed.
    pub fn put_connection(&self, key: &ConnectionKey, sealed: &str) -> Result<(), DbError> {
        self.sql().exec(
            "INSERT OR REPLACE INTO turn_connections (workspace, user_id, provider, sealed)
             VALUES (?, ?, ?, ?)",
            &[
                key.workspace.as_str().into(),
                key.user.as_str().into(),
                key.provider.as_str().into(),
                sealed.into(),
            ],
        )?;
        Ok(())
    }

    /// [`crate::adapter::TurnStore::get_connection`].
    ///
    /// # Errors
    /// SQLite failed or the row is corrupt.
    pub fn get_connection(&self, key: &ConnectionKey) -> Result<Option<String>, DbError> {
        let rows = self.sql().exec(
            "SELECT sealed FROM turn_connections
             WHERE workspace = ? AND user_id = ? AND provider = ?",
            &[
                key.workspace.as_str().into(),
                key.user.as_str().into(),
                key.provider.as_str().into(),
            ],
        )?;
        match rows.into_iter().next().and_then(|r| r.into_iter().next()) {
            None => Ok(None),
            Some(v) => Ok(Some(v.text()?)),
        }
    }
}

impl<S: Sql> SqlStore<S> {
    /// [`crate::adapter::TurnStore::list_connections`]: in key order (workspace, user,
    /// provider), after `after`.
    ///
    /// # Errors
    /// SQLite failed or a row is corrupt.
    pub fn list_connections(
        &self,
        filter: &ConnectionFilter,
        after: Option<&ConnectionKey>,
        limit: usize,
    ) -> Result<Vec<StoredConnection>, DbError> {
        let mut conditions = Vec::new();
        let mut params: Vec<SqlValue> = Vec::new();
        if let Some(w) = &filter.workspace {
            conditions.push("workspace = ?");
            params.push(w.as_str().into());
        }
        if let Some(u) = &filter.user {
            conditions.push("user_id = ?");
            params.push(u.as_str().into());
        }
        if let Some(a) = after {
            conditions.push("(workspace, user_id, provider) > (?, ?, ?)");
            params.extend([
                a.workspace.as_str().into(),
                a.user.as_str().into(),
                a.provider.as_str().into(),
            ]);
        }
        let mut query =
            "SELECT workspace, user_id, provider, sealed FROM turn_connections".to_owned();
        if !conditions.is_empty() {
            query.push_str(" WHERE ");
            query.push_str(&conditions.join(" AND "));
        }
        query.push_str(" ORDER BY workspace, user_id, provider LIMIT ?");
        params.push(SqlValue::from(limit as u64));
        let rows = self.sql().exec(&query, &params)?;
        rows.into_iter()
            .map(|row| {
                let mut row = row.into_iter();
                let mut next = || {
                    row.next()
                        .ok_or_else(|| DbError::Corrupt("turn_connections row".into()))?
                        .text()
                };
                Ok(StoredConnection {
                    key: ConnectionKey {
                        workspace: next()?,
                        user: next()?,
                        provider: next()?,
                    },
                    sealed: next()?,
                })
            })
            .collect()
    }

    /// [`crate::adapter::TurnStore::delete_connection`]: whether there was an entry.
    ///
    /// # Errors
    /// SQLite failed.
    pub fn delete_connection(&self, key: &ConnectionKey) -> Result<bool, DbError> {
        let rows = self.sql().exec(
            "DELETE FROM turn_connections
             WHERE workspace = ? AND user_id = ? AND provider = ? RETURNING 1",
            &[
                key.workspace.as_str().into(),
                key.user.as_str().into(),
                key.provider.as_str().into(),
            ],
        )?;
        Ok(!rows.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn associated_data_tells_every_key_apart() {
        let k = |w: &str, u: &str, p: &str| ConnectionKey {
            workspace: w.into(),
            user: u.into(),
            provider: p.into(),
        };
        assert_ne!(
            k("ab", "c", "p").associated_data(),
            k("a", "bc", "p").associated_data()
        );
        assert_eq!(
            k("a", "b", "c").associated_data(),
            k("a", "b", "c").associated_data()
        );
    }
}
