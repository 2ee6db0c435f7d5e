//! [`TurnStore`] in one DynamoDB table (single-table design, on-demand capacity).
//!
//! # Items
//!
//! Every item has a string partition key `pk`, a string sort key `sk`, `exp_ms` (exact expiry,
//! ms since the epoch) and `expires_at` (the same instant in seconds, the table's TTL attribute),
//! except vault entries, which are kept until replaced.
//!
//! | item | `pk` | `sk` | other attributes |
//! |---|---|---|---|
//! | run record | `run#{run key}` | `run` | `fp` fingerprint, `st` `running`/`done`, `tok` the claim's fencing token, recording as `data` or `tag`+`parts` |
//! | recording part | `run#{run key}` | `part#{tag}#{i}` | `data` |
//! | thread context | `thread#{thread key}` | `ctx` | `ver` version, context JSON as `data` or `tag`+`parts` |
//! | thread arrivals and owner | `thread#{thread key}` | `live` | `arrivals`: claims counted so far (the latest is the live turn); `ws`: the workspace owning the thread, until the later of `exp_ms` and `ws_exp` (the latest claim's lease) |
//! | superseded turn | `thread#{thread key}` | `msg#{arrival}` | `arr`, its messages (JSON) as `data`: folded into the context on read, deleted by the next commit that writes them into it |
//! | context part | `thread#{thread key}` | `part#{i}` | `tag`, `data` |
//! | hosted file | `file#{token}` | `file` | `name`, `mime`, `size`, bytes as `data` or `tag`+`parts` |
//! | file part | `file#{token}` | `part#{tag}#{i}` | `data` |
//! | action claim | `action#{sha-256 of thread key and action}` | `action` | `claimant` the holder (see [`TurnStore::claim_action`]) |
//! | connect state | `connect#{state id}` | `state` | the state as JSON in `data` (see `connections.rs`) |
//! | vault entry | `connection#{workspace}` | `["user","provider"]` (JSON) | the sealed entry's bytes in `sealed`; no expiry (listed by a `Query` of the workspace, or a `Scan` for every workspace) |
//! | tally row (limits, usage) | `tally#{part}` | `{item}` | a number per `Tally::FIELDS` entry (see `tallies.rs`) |
//!
//! Recordings and contexts are deflate-compressed JSON/SSE text; an item holds at most
//! [`ITEM_PAYLOAD_BYTES`] of payload (DynamoDB's item limit is 400 KB), and anything larger is
//! split into parts. Hosted files are stored as they are, in parts when large.
//!
//! # Requests per turn
//!
//! - [`TurnStore::start_turn`]: a conditional `PutItem` claiming the run
//!   (`attribute_not_exists(pk) OR exp_ms <= :now`, with `ReturnValuesOnConditionCheckFailure`
//!   so a refused claim brings the existing record back). Only once claimed: an `UpdateItem`
//!   counting the arrival (`ADD arrivals :1`), conditional on the thread being nobody's or the
//!   claiming workspace's, and a consistent `Query` of the thread's items, sent concurrently
//!   (a claim on another workspace's thread then deletes its run record: one more request,
//!   only for a refused turn). A duplicate delivery costs one conditional write per poll and reads
//!   nothing else.
//! - [`TurnStore::finish_turn`]: one `TransactWriteItems` saving the context (conditional on
//!   its version), the finished run record (conditional on the claim's token) and the
//!   arrivals item's expiry, checking the turn is still the latest arrival. When a condition
//!   fails because the thread moved on, the thread is read and the commit merged as
//!   [`runway_core::store::turn_state`] decides, and written again, conditional on the version read.
//! - [`TurnStore::latest_arrival`]: one consistent `GetItem` of the small `live` item, a few
//!   times while the agent runs (one heartbeat interval in, then backing off to every 60 s).
//!
//! So an ordinary turn costs four requests whatever the thread's length (plus at most six small
//! reads in a 290-second turn). Only exceptional turns cost more: overlapping turns (a `Query` and a
//! second transaction), a recording too large for one transaction (its parts are written first
//! with `BatchWriteItem`), a replay of a recording kept in parts (one `Query`), a thread larger
//! than a 1 MB query page.
//!
//! # Expiry
//!
//! DynamoDB's TTL deletes expired items eventually (and local emulators never), so every read
//! compares `exp_ms` with the caller's clock: an expired item is absent, exactly.
//!
//! # Failures
//!
//! The SDK retries throttling and transient errors with exponential backoff and full jitter
//! (see [`crate::sdk_config`]); a transaction cancelled because of throttling or a conflicting
//! transaction is retried here the same way. What still fails is a [`StoreError`], which the
//! engine turns into `RUN_ERROR` and a `degraded` `/health`.
//!
//! # Where things are
//!
//! | file | what |
//! |---|---|
//! | `item.rs` | the attribute codec: key, expiry and typed attribute helpers |
//! | `payload.rs` | payloads: deflate, inline or in parts, and reassembly |
//! | `claim.rs` | `start_turn`: the conditional claim, replays, releasing a claim |
//! | `thread.rs` | reading a thread: its context, version, arrivals, superseded turns |
//! | `commit.rs` | `finish_turn`: one transaction, merged and retried when the thread moved |
//! | `retry.rs` | transactions and batches retried with backoff; SDK errors as `StoreError` |
//! | `files.rs` | hosted files |
//! | `action_claims.rs` | action claims: an approved call runs once |
//! | `connections.rs` | connected accounts: the vault's sealed entries, single-use connect states |
//! | `tallies.rs` | tally rows: turns per minute, usage (the workers file's limits) |
//! | `attachments.rs` | the model agent's kept attachments |

mod action_claims;
mod attachments;
mod claim;
mod commit;
mod connections;
mod files;
mod item;
mod payload;
mod retry;
mod tallies;
mod thread;

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use runway_core::adapter::{
    ActionClaim, CommitOutcome, HostedFile, StoreError, TurnClaim, TurnCommit, TurnStart, TurnStore,
};
use runway_core::store::tally::{Tally, TallyKey, TurnTake};
use runway_core::store::{ConnectState, ConnectionFilter, ConnectionKey, StoredConnection};

pub use files::MAX_FILE_BYTES;
use item::{Item, s};
pub use payload::ITEM_PAYLOAD_BYTES;
use retry::sdk_error;

/// The DynamoDB store. Cheap to clone (the SDK client is shared).
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    /// Per claim token: the `msg#` items the claim's thread read folded into the context, for
    /// the turn's commit to delete once the context it writes holds them.
    folded: std::sync::Arc<std::sync::Mutex<HashMap<String, Vec<String>>>>,
}

impl DynamoStore {
    /// A store on `table` through `client`. Makes no request.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            folded: std::sync::Arc::default(),
        }
    }

    /// The table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Every item of partition `pk` (whose sort key starts with `sk_prefix`, if given), read
    /// consistently, page after page.
    async fn query_all(&self, pk: &str, sk_prefix: Option<&str>) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let mut q = self
                .client
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .expression_attribute_values(":pk", s(pk))
                .set_exclusive_start_key(start.take());
            q = match sk_prefix {
                Some(p) => q
                    .key_condition_expression("pk = :pk AND begins_with(sk, :p)")
                    .expression_attribute_values(":p", s(p)),
                None => q.key_condition_expression("pk = :pk"),
            };
            let out = q.send().await.map_err(|e| sdk_error("Query", e))?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(items),
            }
        }
    }
}

/// Each call is one concept's entry point (see the table above).
impl TurnStore for DynamoStore {
    async fn start_turn(&self, claim: &TurnClaim) -> Result<TurnStart, StoreError> {
        self.claim(claim).await
    }

    async fn finish_turn(&self, commit: &TurnCommit) -> Result<CommitOutcome, StoreError> {
        self.commit(commit).await
    }

    async fn latest_arrival(&self, thread_key: &str) -> Result<u64, StoreError> {
        self.arrivals(thread_key).await
    }

    async fn claim_action(&self, claim: &ActionClaim) -> Result<bool, StoreError> {
        self.put_action_claim(claim).await
    }

    async fn put_connect_state(&self, state: &ConnectState) -> Result<(), StoreError> {
        self.put_connect_state_item(state).await
    }

    async fn claim_connect_state(
        &self,
        id: &str,
        now_ms: u64,
    ) -> Result<Option<ConnectState>, StoreError> {
        self.claim_connect_state_item(id, now_ms).await
    }

    async fn put_connection(&self, key: &ConnectionKey, sealed: &str) -> Result<(), StoreError> {
        self.put_connection_item(key, sealed).await
    }

    async fn get_connection(&self, key: &ConnectionKey) -> Result<Option<String>, StoreError> {
        self.get_connection_item(key).await
    }

    async fn list_connections(
        &self,
        filter: &ConnectionFilter,
        after: Option<&ConnectionKey>,
        limit: usize,
    ) -> Result<Vec<StoredConnection>, StoreError> {
        self.list_connection_items(filter, after, limit).await
    }

    async fn delete_connection(&self, key: &ConnectionKey) -> Result<bool, StoreError> {
        self.delete_connection_item(key).await
    }

    async fn put_file(&self, file: &HostedFile) -> Result<(), StoreError> {
        self.put_hosted_file(file).await
    }

    async fn get_file(&self, token: &str, now_ms: u64) -> Result<Option<HostedFile>, StoreError> {
        self.get_hosted_file(token, now_ms).await
    }

    async fn take_turns(
        &self,
        takes: &[TurnTake],
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<bool, StoreError> {
        self.take_turns_items(takes, expires_at_ms, write_id).await
    }

    async fn add_tally(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<(), StoreError> {
        self.add_tally_item(key, tally, expires_at_ms, write_id)
            .await
    }

    async fn tallies(&self, part: &str, now_ms: u64) -> Result<Vec<(String, Tally)>, StoreError> {
        self.tally_rows(part, now_ms).await
    }
}
