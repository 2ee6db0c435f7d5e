//! What the Worker and a thread's Durable Object say to each other: one JSON request per
//! store call, so a turn costs two Durable Object round trips (`POST /start`,
//! `POST /finish`), plus a few cheap `POST /latest` while it runs (the check for a newer turn,
//! backing off from one heartbeat interval to 60 s: at most 6 in a 290-second turn).
//!
//! The bodies are runway-core's own types ([`TurnClaim`] → [`TurnStart`], [`TurnCommit`] →
//! [`CommitOutcome`]); [`answer`] is everything the Durable Object does with them, on
//! runway-core's shared SQLite store, so it is tested natively over rusqlite.

use runway_core::adapter::{ActionClaim, StoreError, TurnClaim, TurnCommit};
use runway_core::store::sql::{DbError, Sql};
use runway_core::store::sql_store::SqlStore;
use runway_core::store::tally::{Tally, TallyKey, TurnTake};
use runway_core::store::{ConnectState, ConnectionFilter, ConnectionKey};
use serde::{Deserialize, Serialize};

/// Path of the claim call: [`TurnClaim`] in, [`runway_core::adapter::TurnStart`] out.
pub const START_PATH: &str = "/start";
/// Path of the commit call: [`TurnCommit`] in, [`runway_core::adapter::CommitOutcome`] out.
pub const FINISH_PATH: &str = "/finish";
/// Path of the check for a newer turn: [`LatestRequest`] in, the latest arrival (a number) out.
pub const LATEST_PATH: &str = "/latest";
/// Path of an action claim: [`ActionClaim`] in, `true` or `false` out.
pub const CLAIM_ACTION_PATH: &str = "/claim-action";

/// Path of a connect state kept: [`ConnectState`] in, `null` out (to [`CONNECT_STATES_OBJECT`]).
pub const PUT_CONNECT_STATE_PATH: &str = "/connect/put";
/// Path of a connect state claimed: [`ClaimConnectState`] in, the state or `null` out.
pub const CLAIM_CONNECT_STATE_PATH: &str = "/connect/claim";
/// Path of a vault entry stored: [`PutConnection`] in, `null` out (to [`vault_object`]).
pub const PUT_CONNECTION_PATH: &str = "/vault/put";
/// Path of a vault entry read: [`ConnectionKey`] in, the sealed entry or `null` out.
pub const GET_CONNECTION_PATH: &str = "/vault/get";
/// Path of a page of a workspace's vault entries: [`ListConnections`] in,
/// `[StoredConnection…]` out.
pub const LIST_CONNECTIONS_PATH: &str = "/vault/list";
/// Path of a vault entry deleted: [`ConnectionKey`] in, `true` (there was one) or `false` out.
pub const DELETE_CONNECTION_PATH: &str = "/vault/delete";

/// Path of a turns-per-minute count: [`TakeTurns`] in, `true`/`false` out.
pub const TAKE_TURNS_PATH: &str = "/tally/take";
/// Path of an addition to a tally row: [`AddTally`] in, `null` out.
pub const ADD_TALLY_PATH: &str = "/tally/add";
/// Path of a part's rows: [`ListTallies`] in, `[[item, tally]…]` out.
pub const TALLIES_PATH: &str = "/tally/list";

/// The Durable Object holding every turns-per-minute counter of the deployment. A turn is
/// counted in all of its scopes (workspace, worker, the worker in the workspace) at once or
/// in none, and scopes overlap across workspaces and workers, so only one object holding all
/// of them can take a turn from several atomically (a turn refused by one limit never holds
/// a slot of another, even for a moment). One small request per turn with a limit: a Durable
/// Object serves about a thousand a second, far above a deployment's turns. Token and spend
/// counters stay in their scope's own object ([`tally_object`]).
pub const TURN_COUNTS_OBJECT: &str = "#tally-turns";

/// The Durable Object holding `part`'s day, month and usage rows. Thread objects are named by
/// their thread key (`agent/thread`, or `lowkey/…`: ids never contain `#`), so no thread can
/// be named so.
pub fn tally_object(part: &str) -> String {
    format!("#tally/{part}")
}

/// The Durable Object holding every connect state of the deployment. The `/connect/{id}` and
/// `/callback` routes carry nothing but the state's id, so a state must be findable from its
/// id alone; a state is written and claimed once per connection made (a person clicking a
/// card), far below what one object serves. Its alarm purges expired states.
pub const CONNECT_STATES_OBJECT: &str = "#connect-states";

/// The Durable Object holding the vault entries of `workspace` (each user's, each provider's):
/// only ever vault entries, which do not expire, so it never sets an alarm and its storage is
/// never purged.
pub fn vault_object(workspace: &str) -> String {
    format!("#vault/{workspace}")
}

/// The objects holding rows of `part`: its own (added rows) and the turn counts' object
/// ([`TURN_COUNTS_OBJECT`], rows taken by turns), read together.
pub fn tally_objects(part: &str) -> [String; 2] {
    [tally_object(part), TURN_COUNTS_OBJECT.to_owned()]
}

/// The rows of one part read from each of [`tally_objects`], as one list in item order.
pub fn merge_rows(lists: Vec<Vec<(String, Tally)>>) -> Vec<(String, Tally)> {
    let mut rows: Vec<(String, Tally)> = lists.into_iter().flatten().collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

/// `POST /tally/take`, to [`TURN_COUNTS_OBJECT`]: atomic inside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TakeTurns {
    /// The rows and their limits.
    pub takes: Vec<TurnTake>,
    /// The rows' expiry.
    pub expires_at_ms: u64,
    /// The turn's write id (a write counts once).
    pub write_id: String,
}

/// `POST /tally/add`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddTally {
    /// The row.
    pub key: TallyKey,
    /// What to add.
    pub tally: Tally,
    /// The row's expiry.
    pub expires_at_ms: u64,
    /// The turn's write id (a write counts once).
    pub write_id: String,
}

/// `POST /tally/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTallies {
    /// The part.
    pub part: String,
    /// Rows expired by then are left out.
    pub now_ms: u64,
}

/// `POST /connect/claim`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimConnectState {
    /// The state's id.
    pub id: String,
    /// A state expired by then is not given out.
    pub now_ms: u64,
}

/// `POST /vault/put`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PutConnection {
    /// Whose entry.
    pub key: ConnectionKey,
    /// The sealed entry.
    pub sealed: String,
}

/// `POST /vault/list`: a page of the entries of the workspace whose object is asked (the
/// filter names it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListConnections {
    /// Which entries.
    pub filter: ConnectionFilter,
    /// The page starts after this entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<ConnectionKey>,
    /// At most this many entries.
    pub limit: usize,
}

/// `POST /latest`: which arrival is the thread's live turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LatestRequest {
    /// The thread.
    pub thread_key: String,
}

/// A Durable Object call that could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No such call.
    #[error("no such thread call: {0}")]
    NotFound(String),
    /// The body is not the call's JSON.
    #[error("bad thread call body: {0}")]
    BadBody(String),
    /// The thread's database failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

impl CallError {
    /// The error answer sent back to the Worker, and its status.
    pub fn reply(&self) -> (u16, ErrorReply) {
        let (status, kind) = match self {
            Self::NotFound(_) => (404, "unavailable"),
            Self::BadBody(_) => (400, "unavailable"),
            Self::Db(DbError::Corrupt(_)) => (500, "corrupt"),
            Self::Db(DbError::Sql(m)) if m.contains("SQLITE_TOOBIG") || m.contains("too big") => {
                (500, "too_large")
            }
            Self::Db(DbError::Sql(_)) => (500, "unavailable"),
        };
        (
            status,
            ErrorReply {
                kind: kind.into(),
                message: self.to_string(),
            },
        )
    }
}

/// What a thread's Durable Object answers to `path` with `body`: the reply's JSON, and, when
/// rows were written, the earliest expiry to point the object's alarm at (`Some(None)`:
/// nothing left). Runs without an `await`, so it is atomic inside the object.
///
/// # Errors
/// An unknown path, a bad body, or the database failed.
pub fn answer<S: Sql>(
    db: &SqlStore<S>,
    path: &str,
    body: &str,
) -> Result<(String, Option<Option<u64>>), CallError> {
    let bad = |e: serde_json::Error| CallError::BadBody(e.to_string());
    match path {
        START_PATH => {
            let claim: TurnClaim = serde_json::from_str(body).map_err(bad)?;
            let reply = db.start(&claim)?;
            let next = match reply {
                runway_core::adapter::TurnStart::Claimed { .. } => Some(db.next_expiry()?),
                _ => None,
            };
            Ok((json(&reply), next))
        }
        FINISH_PATH => {
            let commit: TurnCommit = serde_json::from_str(body).map_err(bad)?;
            let outcome = db.finish(&commit)?;
            Ok((json(&outcome), Some(db.next_expiry()?)))
        }
        LATEST_PATH => {
            let req: LatestRequest = serde_json::from_str(body).map_err(bad)?;
            Ok((db.latest_arrival(&req.thread_key)?.to_string(), None))
        }
        CLAIM_ACTION_PATH => {
            let claim: ActionClaim = serde_json::from_str(body).map_err(bad)?;
            let won = db.claim_action(&claim)?;
            Ok((json(&won), won.then(|| db.next_expiry()).transpose()?))
        }
        TAKE_TURNS_PATH => {
            let req: TakeTurns = serde_json::from_str(body).map_err(bad)?;
            let taken = db.take_turns(&req.takes, req.expires_at_ms, &req.write_id)?;
            Ok((json(&taken), Some(db.next_expiry()?)))
        }
        ADD_TALLY_PATH => {
            let req: AddTally = serde_json::from_str(body).map_err(bad)?;
            db.add_tally(&req.key, &req.tally, req.expires_at_ms, &req.write_id)?;
            Ok(("null".into(), Some(db.next_expiry()?)))
        }
        TALLIES_PATH => {
            let req: ListTallies = serde_json::from_str(body).map_err(bad)?;
            Ok((json(&db.tallies(&req.part, req.now_ms)?), None))
        }
        PUT_CONNECT_STATE_PATH => {
            let state: ConnectState = serde_json::from_str(body).map_err(bad)?;
            db.put_connect_state(&state)?;
            Ok(("null".into(), Some(db.next_expiry()?)))
        }
        CLAIM_CONNECT_STATE_PATH => {
            let req: ClaimConnectState = serde_json::from_str(body).map_err(bad)?;
            Ok((json(&db.claim_connect_state(&req.id, req.now_ms)?), None))
        }
        PUT_CONNECTION_PATH => {
            let req: PutConnection = serde_json::from_str(body).map_err(bad)?;
            db.put_connection(&req.key, &req.sealed)?;
            Ok(("null".into(), None))
        }
        GET_CONNECTION_PATH => {
            let key: ConnectionKey = serde_json::from_str(body).map_err(bad)?;
            Ok((json(&db.get_connection(&key)?), None))
        }
        LIST_CONNECTIONS_PATH => {
            let req: ListConnections = serde_json::from_str(body).map_err(bad)?;
            let page = db.list_connections(&req.filter, req.after.as_ref(), req.limit)?;
            Ok((json(&page), None))
        }
        DELETE_CONNECTION_PATH => {
            let key: ConnectionKey = serde_json::from_str(body).map_err(bad)?;
            Ok((json(&db.delete_connection(&key)?), None))
        }
        other => Err(CallError::NotFound(other.to_owned())),
    }
}

/// A reply as JSON (replies are plain data: serializing them cannot fail).
fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// An error answer from the Durable Object (any status but 200).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReply {
    /// `corrupt`, `too_large` or `unavailable`.
    pub kind: String,
    /// What went wrong (no user data).
    pub message: String,
}

impl ErrorReply {
    /// The store error this reply stands for.
    pub fn into_store_error(self) -> StoreError {
        match self.kind.as_str() {
            "corrupt" => StoreError::Corrupt(self.message),
            "too_large" => StoreError::TooLarge(self.message),
            _ => StoreError::Unavailable(self.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_map_to_store_errors() {
        let e = |k: &str| {
            ErrorReply {
                kind: k.into(),
                message: "m".into(),
            }
            .into_store_error()
        };
        assert_eq!(e("corrupt"), StoreError::Corrupt("m".into()));
        assert_eq!(e("too_large"), StoreError::TooLarge("m".into()));
        assert_eq!(e("other"), StoreError::Unavailable("m".into()));
    }
}
