//! [`TurnStore`] on Cloudflare: a Durable Object per thread for turns and context, KV for
//! hosted files.
//!
//! - `start_turn` and `finish_turn` are one request each to the thread's Durable Object
//!   (`id_from_name(thread_key)`), which runs runway-core's shared SQLite store on its
//!   storage: two Durable Object round trips per turn, strongly consistent and single-writer.
//!   `latest_arrival` (a heartbeat's check for a newer turn) is one more, cheap one, and so is
//!   `claim_action` (before an approved tool call runs).
//! - Hosted files go to KV with `expirationTtl`: written once, read by an unguessable token,
//!   so KV's eventual consistency (a new key can take up to ~60 s to be visible in other
//!   locations) only means a link opened on another continent within that minute may 404.
//! - Tally rows (limits, usage) live in the object named by their part, `meter/{scope}` or
//!   `usage/{day}`: a workspace's (or worker's) counters are in one object whichever isolate
//!   or location runs the turn, so a limit holds across all of them; a day's usage rows are
//!   one object's, read by `GET /usage` one call per day. The turns-per-minute counters of
//!   every scope are in one object ([`crate::wire::TURN_COUNTS_OBJECT`]), so a turn is
//!   counted in all its scopes at once or in none.
//! - Connected accounts: every connect state in one object ([`CONNECT_STATES_OBJECT`]: the
//!   routes that claim them know only the id), claimed there in one transaction; a
//!   workspace's vault entries in its own object ([`crate::wire::vault_object`]), sealed. So
//!   entries are listed one workspace at a time (no object knows every workspace):
//!   `runway connections` needs `--workspace` on Workers.

use runway_core::adapter::{
    ActionClaim, CommitOutcome, HostedFile, StoreError, TurnClaim, TurnCommit, TurnStart, TurnStore,
};
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::kv::KvStore;
use worker::{Method, ObjectNamespace, Request, RequestInit};

use crate::wire::{
    ADD_TALLY_PATH, AddTally, CLAIM_ACTION_PATH, CLAIM_CONNECT_STATE_PATH, CONNECT_STATES_OBJECT,
    ClaimConnectState, DELETE_CONNECTION_PATH, ErrorReply, FINISH_PATH, GET_CONNECTION_PATH,
    LATEST_PATH, LIST_CONNECTIONS_PATH, LatestRequest, ListConnections, ListTallies,
    PUT_CONNECT_STATE_PATH, PUT_CONNECTION_PATH, PutConnection, START_PATH, TAKE_TURNS_PATH,
    TALLIES_PATH, TURN_COUNTS_OBJECT, TakeTurns, merge_rows, tally_object, tally_objects,
    vault_object,
};
use runway_core::store::tally::{Tally, TallyKey, TurnTake};
use runway_core::store::{ConnectState, ConnectionFilter, ConnectionKey, StoredConnection};

/// KV's shortest accepted `expirationTtl`, in seconds.
const KV_MIN_TTL_SECS: u64 = 60;

/// The Durable Object namespace and the KV namespace.
pub struct CloudflareStore {
    threads: ObjectNamespace,
    files: KvStore,
}

impl std::fmt::Debug for CloudflareStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CloudflareStore")
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileMeta {
    name: String,
    mime: String,
    expires_at_ms: u64,
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("{what}: {e}"))
}

impl CloudflareStore {
    /// A store over the `threads` Durable Object namespace and the `files` KV namespace.
    pub fn new(threads: ObjectNamespace, files: KvStore) -> Self {
        Self { threads, files }
    }

    /// One round trip to the thread's Durable Object.
    async fn call(&self, thread_key: &str, path: &str, body: String) -> Result<String, StoreError> {
        let stub = self
            .threads
            .get_by_name(thread_key)
            .map_err(|e| unavailable("durable object stub", e))?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_body(Some(JsValue::from_str(&body)));
        let req = Request::new_with_init(&format!("https://thread.runway.internal{path}"), &init)
            .map_err(|e| unavailable("durable object request", e))?;
        let mut resp = stub
            .fetch_with_request(req)
            .await
            .map_err(|e| unavailable("durable object call", e))?;
        let status = resp.status_code();
        let text = resp
            .text()
            .await
            .map_err(|e| unavailable("durable object reply", e))?;
        if status == 200 {
            return Ok(text);
        }
        Err(match serde_json::from_str::<ErrorReply>(&text) {
            Ok(e) => e.into_store_error(),
            Err(_) => StoreError::Unavailable(format!("durable object answered {status}")),
        })
    }

    fn file_key(token: &str) -> String {
        format!("file/{token}")
    }
}

impl TurnStore for CloudflareStore {
    async fn start_turn(&self, claim: &TurnClaim) -> Result<TurnStart, StoreError> {
        let body = serde_json::to_string(claim).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let text = self.call(&claim.thread_key, START_PATH, body).await?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("start reply: {e}")))
    }

    async fn finish_turn(&self, commit: &TurnCommit) -> Result<CommitOutcome, StoreError> {
        let body = serde_json::to_string(commit).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let text = self.call(&commit.thread_key, FINISH_PATH, body).await?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("finish reply: {e}")))
    }

    async fn latest_arrival(&self, thread_key: &str) -> Result<u64, StoreError> {
        let body = serde_json::to_string(&LatestRequest {
            thread_key: thread_key.to_owned(),
        })
        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let text = self.call(thread_key, LATEST_PATH, body).await?;
        text.trim()
            .parse()
            .map_err(|e| StoreError::Corrupt(format!("latest reply: {e}")))
    }

    async fn claim_action(&self, claim: &ActionClaim) -> Result<bool, StoreError> {
        let body = serde_json::to_string(claim).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let text = self
            .call(&claim.thread_key, CLAIM_ACTION_PATH, body)
            .await?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("claim reply: {e}")))
    }

    async fn put_connect_state(&self, state: &ConnectState) -> Result<(), StoreError> {
        self.call(
            CONNECT_STATES_OBJECT,
            PUT_CONNECT_STATE_PATH,
            to_json(state)?,
        )
        .await
        .map(drop)
    }

    async fn claim_connect_state(
        &self,
        id: &str,
        now_ms: u64,
    ) -> Result<Option<ConnectState>, StoreError> {
        let body = to_json(&ClaimConnectState {
            id: id.to_owned(),
            now_ms,
        })?;
        let text = self
            .call(CONNECT_STATES_OBJECT, CLAIM_CONNECT_STATE_PATH, body)
            .await?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("claim reply: {e}")))
    }

    async fn put_connection(&self, key: &ConnectionKey, sealed: &str) -> Result<(), StoreError> {
        let body = to_json(&PutConnection {
            key: key.clone(),
            sealed: sealed.to_owned(),
        })?;
        self.call(&vault_object(&key.workspace), PUT_CONNECTION_PATH, body)
            .await
            .map(drop)
    }

    async fn get_connection(&self, key: &ConnectionKey) -> Result<Option<String>, StoreError> {
        let text = self
            .call(
                &vault_object(&key.workspace),
                GET_CONNECTION_PATH,
                to_json(key)?,
            )
            .await?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("vault reply: {e}")))
    }

    async fn list_connections(
        &self,
        filter: &ConnectionFilter,
        after: Option<&ConnectionKey>,
        limit: usize,
    ) -> Result<Vec<StoredConnection>, StoreError> {
        let Some(workspace) = &filter.workspace else {
            return Err(StoreError::Unavailable(
                "the Workers store lists connected accounts one workspace at a time".into(),
            ));
        };
        let body = to_json(&ListConnections {
            filter: filter.clone(),
            after: after.cloned(),
            limit,
        })?;
        let text = self
            .call(&vault_object(workspace), LIST_CONNECTIONS_PATH, body)
            .await?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("vault reply: {e}")))
    }

    fn lists_every_workspace(&self) -> bool {
        false
    }

    async fn delete_connection(&self, key: &ConnectionKey) -> Result<bool, StoreError> {
        let text = self
            .call(
                &vault_object(&key.workspace),
                DELETE_CONNECTION_PATH,
                to_json(key)?,
            )
            .await?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("vault reply: {e}")))
    }

    async fn take_turns(
        &self,
        takes: &[TurnTake],
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<bool, StoreError> {
        let body = to_json(&TakeTurns {
            takes: takes.to_vec(),
            expires_at_ms,
            write_id: write_id.to_owned(),
        })?;
        let text = self.call(TURN_COUNTS_OBJECT, TAKE_TURNS_PATH, body).await?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("take reply: {e}")))
    }

    async fn add_tally(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<(), StoreError> {
        let body = to_json(&AddTally {
            key: key.clone(),
            tally: *tally,
            expires_at_ms,
            write_id: write_id.to_owned(),
        })?;
        self.call(&tally_object(&key.part), ADD_TALLY_PATH, body)
            .await
            .map(drop)
    }

    async fn tallies(&self, part: &str, now_ms: u64) -> Result<Vec<(String, Tally)>, StoreError> {
        let body = to_json(&ListTallies {
            part: part.to_owned(),
            now_ms,
        })?;
        let objects = tally_objects(part);
        let replies = futures::future::join_all(
            objects
                .iter()
                .map(|object| self.call(object, TALLIES_PATH, body.clone())),
        )
        .await;
        let mut lists = Vec::with_capacity(replies.len());
        for text in replies {
            lists.push(
                serde_json::from_str(&text?)
                    .map_err(|e| StoreError::Corrupt(format!("tallies reply: {e}")))?,
            );
        }
        Ok(merge_rows(lists))
    }

    async fn put_file(&self, file: &HostedFile) -> Result<(), StoreError> {
        let now = js_sys::Date::now() as u64;
        let ttl = file.expires_at_ms.saturating_sub(now).div_ceil(1000);
        let meta = FileMeta {
            name: file.name.clone(),
            mime: file.mime.clone(),
            expires_at_ms: file.expires_at_ms,
        };
        // The token is the link's secret: never let it reach a log line.
        let scrub = |e: worker::kv::KvError| e.to_string().replace(&file.token, "<token>");
        self.files
            .put_bytes(&Self::file_key(&file.token), &file.bytes)
            .map_err(|e| unavailable("kv put", scrub(e)))?
            .expiration_ttl(ttl.max(KV_MIN_TTL_SECS))
            .metadata(meta)
            .map_err(|e| unavailable("kv put", scrub(e)))?
            .execute()
            .await
            .map_err(|e| unavailable("kv put", scrub(e)))
    }

    async fn get_file(&self, token: &str, now_ms: u64) -> Result<Option<HostedFile>, StoreError> {
        let scrub = |e: worker::kv::KvError| e.to_string().replace(token, "<token>");
        let (bytes, meta) = self
            .files
            .get(&Self::file_key(token))
            .bytes_with_metadata::<FileMeta>()
            .await
            .map_err(|e| unavailable("kv get", scrub(e)))?;
        Ok(match (bytes, meta) {
            (Some(bytes), Some(meta)) if meta.expires_at_ms > now_ms => Some(HostedFile {
                token: token.to_owned(),
                name: meta.name,
                mime: meta.mime,
                bytes,
                expires_at_ms: meta.expires_at_ms,
            }),
            _ => None,
        })
    }
}

fn to_json<T: Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Corrupt(e.to_string()))
}
