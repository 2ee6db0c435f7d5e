//! `GET …/connections?workspace=W&user=U[&cursor=…]` and
//! `DELETE …/connections?workspace=W&user=U[&provider=P]` on [`Runway`]: the connected
//! accounts in the vault (metadata only, at most
//! [`MAX_CONNECTION_ROWS`](crate::connect::accounts::MAX_CONNECTION_ROWS) an answer), and their
//! revocation (see [`crate::connect::accounts`]), behind the same header set as `/usage`.

use bytes::Bytes;

use crate::agent::Agent;
use crate::connect::accounts::{AccountsAccess, decode_cursor};
use crate::error::StoreError;
use crate::platform::runtime::Runtime;
use crate::service::{Runway, json_error, json_response, method_not_allowed};
use crate::store::{ConnectionFilter, ConnectionKey, TurnStore};

/// Longest id (workspace, user, provider) a query names: Console's ids are far shorter.
const MAX_ID_BYTES: usize = 512;

/// Longest cursor accepted (hex of a key of three ids).
const MAX_CURSOR_BYTES: usize = 8 * MAX_ID_BYTES;

/// What a `/connections` query names.
#[derive(Debug, Default)]
struct ConnectionsQuery {
    workspace: Option<String>,
    user: Option<String>,
    provider: Option<String>,
    after: Option<ConnectionKey>,
}

/// The query's parameters, each at most once; `allowed` names those the method takes.
fn parse_query(query: Option<&str>, allowed: &[&str]) -> Result<ConnectionsQuery, String> {
    let mut q = ConnectionsQuery::default();
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if !allowed.contains(&&*k) {
            let k: String = k.chars().take(32).collect();
            return Err(format!(
                "unknown parameter {k:?}: use {}",
                allowed.join(", ")
            ));
        }
        let limit = if k == "cursor" {
            MAX_CURSOR_BYTES
        } else {
            MAX_ID_BYTES
        };
        if v.is_empty() || v.len() > limit {
            return Err(format!("{k} must be 1 to {limit} bytes"));
        }
        let slot = match &*k {
            "workspace" => &mut q.workspace,
            "user" => &mut q.user,
            "provider" => &mut q.provider,
            _ => {
                if q.after.is_some() {
                    return Err("cursor is given twice".into());
                }
                q.after = Some(
                    decode_cursor(&v)
                        .ok_or("cursor is not a nextCursor of a /connections answer")?,
                );
                continue;
            }
        };
        if slot.is_some() {
            return Err(format!("{k} is given twice"));
        }
        *slot = Some(v.into_owned());
    }
    Ok(q)
}

impl<A: Agent, S: TurnStore, R: Runtime> Runway<A, S, R> {
    /// Answers `GET` and `DELETE …/connections` once auth has passed.
    pub(crate) async fn connections_route(
        &self,
        req: &http::Request<Bytes>,
    ) -> http::Response<Bytes> {
        let connections = self.engine.connections.as_ref();
        let access = AccountsAccess {
            vault: connections
                .map(|c| c.vault())
                .or(self.config.vault_key.as_ref()),
            connections,
            // The callback URL of this deployment's connections, as its turns name it: an MCP
            // server's client registration (what its tokens are revoked as) is per callback.
            redirect_uri: format!(
                "{}{}",
                self.public_base_url(req),
                crate::connect::CALLBACK_PATH
            ),
        };
        let store = &self.engine.store;
        let query = req.uri().query();
        match *req.method() {
            http::Method::GET => {
                let q = match parse_query(query, &["workspace", "user", "cursor"]) {
                    Ok(q) => q,
                    Err(message) => return json_error(400, &message),
                };
                if let Some(after) = &q.after
                    && (q.workspace.as_ref().is_some_and(|w| *w != after.workspace)
                        || q.user.as_ref().is_some_and(|u| *u != after.user))
                {
                    return json_error(
                        400,
                        "cursor is not from this query: give the same workspace and user",
                    );
                }
                if q.workspace.is_none() && !store.lists_every_workspace() {
                    return json_error(
                        400,
                        "this deployment's store lists connections one workspace at a time: \
                         give workspace",
                    );
                }
                let filter = ConnectionFilter {
                    workspace: q.workspace,
                    user: q.user,
                };
                let now = self.engine.rt.now_ms();
                match access.list(store, &filter, q.after.as_ref(), now).await {
                    Ok(page) => json_response(200, &page),
                    Err(e) => self.vault_unavailable(&e, "could not list the connections"),
                }
            }
            http::Method::DELETE => {
                let q = match parse_query(query, &["workspace", "user", "provider"]) {
                    Ok(q) => q,
                    Err(message) => return json_error(400, &message),
                };
                let (Some(workspace), Some(user)) = (&q.workspace, &q.user) else {
                    return json_error(
                        400,
                        "revoking needs workspace and user (and optionally provider): one call \
                         never revokes more than one user's connections",
                    );
                };
                let rt = &self.engine.rt;
                let report = access.revoke(store, rt, workspace, user, q.provider.as_deref());
                match report.await {
                    Ok(report) => json_response(200, &report),
                    Err(e) => self.vault_unavailable(&e, "could not revoke the connections"),
                }
            }
            _ => method_not_allowed("GET, DELETE"),
        }
    }

    fn vault_unavailable(&self, e: &StoreError, what: &str) -> http::Response<Bytes> {
        self.engine.note_store_error();
        tracing::error!(code = "STORE_UNAVAILABLE", error = %e, "{what}");
        json_error(503, "storage unavailable")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_checked() {
        let all = ["workspace", "user", "provider"];
        let q = parse_query(Some("workspace=w%201&user=u&provider=acme"), &all).unwrap();
        assert_eq!(q.workspace.as_deref(), Some("w 1"));
        assert_eq!(q.user.as_deref(), Some("u"));
        assert_eq!(q.provider.as_deref(), Some("acme"));
        assert!(parse_query(None, &all).unwrap().workspace.is_none());
        for bad in [
            "workspace=a&workspace=b",
            "workspace=",
            "cursor=00",
            "from=2026-01-01",
        ] {
            assert!(parse_query(Some(bad), &all).is_err(), "{bad}");
        }
        let long = format!("user={}", "u".repeat(MAX_ID_BYTES + 1));
        assert!(parse_query(Some(&long), &all).is_err());
        let get = ["workspace", "user", "cursor"];
        assert!(parse_query(Some("cursor=zz"), &get).is_err());
        assert!(parse_query(Some("provider=acme"), &get).is_err());
    }
}
