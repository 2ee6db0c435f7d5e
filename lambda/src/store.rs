//! [`TurnStore`] in one DynamoDB table (single-table design, on-demand capacity).
//!
//! # Items
//!
//! Every item has a string partition key `pk`, a string sort key `sk`, `exp_ms` (exact expiry,
//! ms since the epoch) and `expires_at` (the same instant in seconds, the table's TTL attribute).
//!
//! | item | `pk` | `sk` | other attributes |
//! |---|---|---|---|
//! | run record | `run#{run key}` | `run` | `fp` fingerprint, `st` `running`/`done`, `tok` the claim's fencing token, recording as `data` or `tag`+`parts` |
//! | recording part | `run#{run key}` | `part#{tag}#{i}` | `data` |
//! | thread context | `thread#{thread key}` | `ctx` | `ver` version, context JSON as `data` or `tag`+`parts` |
//! | thread arrivals | `thread#{thread key}` | `live` | `arrivals`: claims counted so far (the latest is the live turn) |
//! | superseded turn | `thread#{thread key}` | `msg#{arrival}` | `arr`, its messages (JSON) as `data`: folded into the context on read, deleted by the next commit that writes them into it |
//! | context part | `thread#{thread key}` | `part#{i}` | `tag`, `data` |
//! | hosted file | `file#{token}` | `file` | `name`, `mime`, `size`, bytes as `data` or `tag`+`parts` |
//! | file part | `file#{token}` | `part#{tag}#{i}` | `data` |
//! | action claim | `action#{sha-256 of thread key and action}` | `action` | `claimant` the holder (see [`TurnStore::claim_action`]) |
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
//!   counting the arrival (`ADD arrivals :1`) and a consistent `Query` of the thread's items,
//!   sent concurrently. A duplicate delivery costs one conditional write per poll and reads
//!   nothing else.
//! - [`TurnStore::finish_turn`]: one `TransactWriteItems` saving the context (conditional on
//!   its version), the finished run record (conditional on the claim's token) and the
//!   arrivals item's expiry, checking the turn is still the latest arrival. When a condition
//!   fails because the thread moved on, the thread is read and the commit merged as
//!   [`runway_core::store::turn_state`] decides, and written again, conditional on the version read.
//! - [`TurnStore::latest_arrival`]: one consistent `GetItem` of the small `live` item, at
//!   each heartbeat while the agent runs.
//!
//! So an ordinary turn costs four requests whatever the thread's length (plus one small read
//! per heartbeat). Only exceptional turns cost more: overlapping turns (a `Query` and a
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

mod action_claims;
mod attachments;
mod tallies;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, PutRequest, ReturnValue, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update, WriteRequest,
};
use runway_core::ThreadContext;
use runway_core::adapter::{
    ActionClaim, CommitOutcome, HostedFile, StoreError, TurnClaim, TurnCommit, TurnStart, TurnStore,
};
use runway_core::store::tally::{Tally, TallyKey};
use runway_core::store::turn_state::{
    ClaimDecision, RunPhase, RunRecord, ThreadHead, decide_claim, decide_commit, thread_after,
};

type Item = HashMap<String, AttributeValue>;

/// Payload bytes one item carries: DynamoDB items are limited to 400 KB including attribute
/// names and the other attributes, so this leaves about 50 KB for those.
pub const ITEM_PAYLOAD_BYTES: usize = 350_000;

/// Payload of one `TransactWriteItems` (its limit is 4 MB for the whole request).
const TX_PAYLOAD_BYTES: usize = 3_500_000;
/// Actions in one `TransactWriteItems` (DynamoDB's limit is 100).
const TX_MAX_ITEMS: usize = 100;
/// Items in one `BatchWriteItem` (DynamoDB's limit).
const BATCH_ITEMS: usize = 25;
/// Parts a thread context may take. With the default context policy a context needs at most
/// two; a policy that grows it past this fails the turn with [`StoreError::TooLarge`].
const MAX_CONTEXT_PARTS: usize = 8;
/// Largest hosted file: 2 parts (700 KB). Every part of a file shares one partition key, and
/// one DynamoDB partition takes at most 1,000 write units (1 KB each) per second: a larger
/// file would be throttled part by part and slow the turn for seconds. The adapter lowers the
/// core's `max_file_bytes` to this, so a larger file is refused before any write, with an
/// error log naming both sizes.
pub const MAX_FILE_BYTES: usize = 2 * ITEM_PAYLOAD_BYTES;
/// Largest decompressed payload accepted when reading (the stream cap is 8 MiB).
const MAX_INFLATED_BYTES: u64 = 64 * 1024 * 1024;
/// Attempts for a transaction cancelled by throttling or a conflicting transaction.
const TX_ATTEMPTS: u32 = 4;
/// Attempts for the unprocessed remainder of a `BatchWriteItem`.
const BATCH_ATTEMPTS: u32 = 6;
/// Attempts of a commit whose thread keeps moving (each: read, merge, conditional write),
/// within [`COMMIT_BUDGET`].
const COMMIT_ATTEMPTS: u32 = 40;
/// How long a commit keeps retrying a thread that keeps moving: under the engine's 8-second
/// bound on one store call.
const COMMIT_BUDGET: Duration = Duration::from_secs(6);

/// Why a transaction was not written.
enum TxFailure {
    /// A condition failed: the cancellation reason code of each action, in order.
    Condition(Vec<String>),
    /// Anything else.
    Store(StoreError),
}

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

    /// Runs `items` as one transaction, retrying cancellations caused by throttling or a
    /// conflicting transaction with backoff and jitter.
    async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<(), TxFailure> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let r = self
                .client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await;
            let e = match r {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            let retryable = match e.as_service_error() {
                Some(TransactWriteItemsError::TransactionCanceledException(c)) => {
                    c.cancellation_reasons().iter().any(|r| {
                        matches!(
                            r.code(),
                            Some(
                                "ThrottlingError"
                                    | "ProvisionedThroughputExceeded"
                                    | "TransactionConflict"
                                    | "RequestLimitExceeded"
                            )
                        )
                    })
                }
                Some(TransactWriteItemsError::TransactionInProgressException(_)) => true,
                _ => false,
            };
            if let Some(TransactWriteItemsError::TransactionCanceledException(c)) =
                e.as_service_error()
                && !retryable
                && c.cancellation_reasons()
                    .iter()
                    .any(|r| r.code() == Some("ConditionalCheckFailed"))
            {
                return Err(TxFailure::Condition(
                    c.cancellation_reasons()
                        .iter()
                        .map(|r| r.code().unwrap_or("None").to_owned())
                        .collect(),
                ));
            }
            if !retryable || attempt >= TX_ATTEMPTS {
                return Err(TxFailure::Store(match e.as_service_error() {
                    Some(TransactWriteItemsError::TransactionCanceledException(c)) => {
                        let codes: Vec<&str> = c
                            .cancellation_reasons()
                            .iter()
                            .filter_map(|r| r.code())
                            .filter(|c| *c != "None")
                            .collect();
                        if retryable {
                            StoreError::Throttled(format!(
                                "TransactWriteItems cancelled: {codes:?}"
                            ))
                        } else {
                            StoreError::Unavailable(format!(
                                "TransactWriteItems cancelled: {codes:?}"
                            ))
                        }
                    }
                    _ => sdk_error("TransactWriteItems", e),
                }));
            }
            tracing::warn!(attempt, "transaction cancelled by contention: retrying");
            tokio::time::sleep(backoff(attempt)).await;
        }
    }

    /// Writes `items` with `BatchWriteItem`, 25 at a time, retrying unprocessed items with
    /// backoff and jitter. Not atomic: used for parts that nothing references yet.
    async fn batch_put(&self, items: Vec<Item>) -> Result<(), StoreError> {
        let mut pending: Vec<WriteRequest> = items
            .into_iter()
            .map(|item| {
                PutRequest::builder()
                    .set_item(Some(item))
                    .build()
                    .map(|p| WriteRequest::builder().put_request(p).build())
                    .map_err(|e| StoreError::Unavailable(e.to_string()))
            })
            .collect::<Result<_, _>>()?;
        let mut attempt = 0;
        while !pending.is_empty() {
            let rest = pending.split_off(pending.len().min(BATCH_ITEMS));
            let batch = std::mem::replace(&mut pending, rest);
            let out = self
                .client
                .batch_write_item()
                .request_items(&self.table, batch)
                .send()
                .await
                .map_err(|e| sdk_error("BatchWriteItem", e))?;
            let unprocessed = out
                .unprocessed_items
                .and_then(|mut m| m.remove(&self.table))
                .unwrap_or_default();
            if !unprocessed.is_empty() {
                attempt += 1;
                if attempt >= BATCH_ATTEMPTS {
                    return Err(StoreError::Throttled(format!(
                        "BatchWriteItem left {} items unprocessed",
                        unprocessed.len()
                    )));
                }
                tokio::time::sleep(backoff(attempt)).await;
                pending.extend(unprocessed);
            }
        }
        Ok(())
    }

    async fn replay_of(&self, run_pk: &str, record: &Item) -> Result<TurnStart, StoreError> {
        let recording = match payload_ref(record)? {
            PayloadRef::Inline(data) => inflate(data)?,
            PayloadRef::Parts { tag, parts } => {
                let prefix = format!("part#{tag}#");
                let items = self.query_all(run_pk, Some(&prefix)).await?;
                inflate(&assemble(&items, &prefix, parts, None)?)?
            }
        };
        let recording = String::from_utf8(recording)
            .map_err(|_| StoreError::Corrupt("recording is not UTF-8".into()))?;
        Ok(TurnStart::Finished { recording })
    }

    /// A claim refused by the condition: the record is live (not expired).
    async fn refused(
        &self,
        claim: &TurnClaim,
        run_pk: &str,
        record: Option<Item>,
    ) -> Result<TurnStart, StoreError> {
        let record = match record {
            Some(r) if !r.is_empty() => r,
            // An emulator that ignores ReturnValuesOnConditionCheckFailure: read it.
            _ => {
                let out = self
                    .client
                    .get_item()
                    .table_name(&self.table)
                    .consistent_read(true)
                    .key("pk", s(run_pk))
                    .key("sk", s("run"))
                    .send()
                    .await
                    .map_err(|e| sdk_error("GetItem", e))?;
                match out.item {
                    Some(r) => r,
                    None => return Ok(TurnStart::Running),
                }
            }
        };
        let stored = RunRecord {
            fingerprint: get_s(&record, "fp").unwrap_or_default(),
            phase: if get_s(&record, "st") == Some("done") {
                RunPhase::Done
            } else {
                RunPhase::Running
            },
            until_ms: get_n(&record, "exp_ms").unwrap_or(0),
            token: get_s(&record, "tok").unwrap_or_default(),
        };
        match decide_claim(Some(stored), claim) {
            ClaimDecision::Replay => self.replay_of(run_pk, &record).await,
            ClaimDecision::Conflict => Ok(TurnStart::Conflict),
            // Refused by the condition yet free by now (it lapsed in between): the next poll
            // takes it.
            ClaimDecision::Wait | ClaimDecision::Take => Ok(TurnStart::Running),
        }
    }

    /// Best-effort release of a claim whose turn cannot start (the thread read failed), so a
    /// later delivery need not wait for the lease.
    async fn release(&self, run_pk: &str, claim: &TurnClaim) {
        let r = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(run_pk))
            .key("sk", s("run"))
            .condition_expression("st = :running AND tok = :tok")
            .expression_attribute_values(":running", s("running"))
            .expression_attribute_values(":tok", s(&claim.token))
            .send()
            .await;
        if let Err(e) = r {
            tracing::warn!(error = %DisplayErrorContext(&e), "could not release a run claim");
        }
    }
}

impl DynamoStore {
    /// The thread as stored: context (`None` if absent or expired at `now_ms`) and head.
    async fn read_thread(
        &self,
        thread_pk: &str,
        now_ms: u64,
    ) -> Result<(Option<ThreadContext>, ThreadHead, Vec<String>), StoreError> {
        let items = self.query_all(thread_pk, None).await?;
        let (context, version, folded) = decode_thread(&items, now_ms)?;
        let latest_arrival = items
            .iter()
            .find(|i| get_s(i, "sk") == Some("live"))
            .and_then(|i| get_n(i, "arrivals"))
            .unwrap_or(0);
        Ok((
            context,
            ThreadHead {
                version,
                latest_arrival,
            },
            folded,
        ))
    }

    /// The run record (with its recording) as one `Put`, and the recording's parts: in the
    /// transaction when they fit, else returned to be written first.
    fn run_items(&self, commit: &TurnCommit, tx_bytes: usize) -> (Vec<Item>, Vec<Item>) {
        let run_pk = format!("run#{}", commit.run_key);
        let recording = deflate(commit.recording.as_bytes());
        let tag = new_tag();
        let mut run = Item::new();
        run.insert("pk".into(), s(&run_pk));
        run.insert("sk".into(), s("run"));
        run.insert("fp".into(), s(&commit.fingerprint));
        run.insert("st".into(), s("done"));
        run.insert("tok".into(), s(&commit.token));
        expiry(&mut run, commit.recording_expires_at_ms);
        let mut in_tx = Vec::new();
        let mut early = Vec::new();
        if recording.len() <= ITEM_PAYLOAD_BYTES {
            run.insert("data".into(), b(recording));
        } else {
            let parts: Vec<Item> = recording
                .chunks(ITEM_PAYLOAD_BYTES)
                .enumerate()
                .map(|(i, part)| {
                    let mut p = Item::new();
                    p.insert("pk".into(), s(&run_pk));
                    p.insert("sk".into(), s(format!("part#{tag}#{i:04}")));
                    p.insert("data".into(), b(part.to_vec()));
                    expiry(&mut p, commit.recording_expires_at_ms);
                    p
                })
                .collect();
            run.insert("tag".into(), s(&tag));
            run.insert("parts".into(), n(parts.len() as u64));
            if tx_bytes + recording.len() <= TX_PAYLOAD_BYTES && parts.len() + 8 < TX_MAX_ITEMS {
                in_tx = parts;
            } else {
                // Too big for one transaction: parts first (nothing points at them yet, and
                // their keys carry this commit's generation), then the transaction that
                // makes them reachable.
                early = parts;
            }
        }
        in_tx.push(run);
        (in_tx, early)
    }

    /// The context's head item (version `version`) and its parts.
    fn context_items(
        &self,
        commit: &TurnCommit,
        context: &ThreadContext,
        version: u64,
    ) -> Result<Vec<Item>, StoreError> {
        let thread_pk = format!("thread#{}", commit.thread_key);
        let json = serde_json::to_vec(context).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let packed = deflate(&json);
        let tag = new_tag();
        let mut items = Vec::new();
        let mut head = Item::new();
        head.insert("pk".into(), s(&thread_pk));
        head.insert("sk".into(), s("ctx"));
        head.insert("ver".into(), n(version));
        expiry(&mut head, commit.context_expires_at_ms);
        if packed.len() <= ITEM_PAYLOAD_BYTES {
            head.insert("data".into(), b(packed));
        } else {
            let parts: Vec<&[u8]> = packed.chunks(ITEM_PAYLOAD_BYTES).collect();
            if parts.len() > MAX_CONTEXT_PARTS {
                return Err(StoreError::TooLarge(format!(
                    "thread context of {} compressed bytes",
                    packed.len()
                )));
            }
            head.insert("tag".into(), s(&tag));
            head.insert("parts".into(), n(parts.len() as u64));
            for (i, part) in parts.into_iter().enumerate() {
                let mut p = Item::new();
                p.insert("pk".into(), s(&thread_pk));
                p.insert("sk".into(), s(format!("part#{i:04}")));
                p.insert("tag".into(), s(&tag));
                p.insert("data".into(), b(part.to_vec()));
                expiry(&mut p, commit.context_expires_at_ms);
                items.push(p);
            }
        }
        // The head last: [`DynamoStore::commit_actions`] puts its condition on it.
        items.push(head);
        Ok(items)
    }

    /// A superseded turn's messages as their own `msg#{arrival}` item: written without a
    /// condition on the context, so overlapping turns never contend for it.
    fn superseded_item(&self, commit: &TurnCommit) -> Result<Item, StoreError> {
        let thread = thread_after(
            runway_core::store::turn_state::CommitDecision::Superseded,
            None,
            commit,
        );
        let json =
            serde_json::to_vec(&thread.messages).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut item = Item::new();
        item.insert("pk".into(), s(format!("thread#{}", commit.thread_key)));
        item.insert("sk".into(), s(format!("msg#{:020}", commit.arrival)));
        item.insert("arr".into(), n(commit.arrival));
        item.insert("data".into(), b(deflate(&json)));
        expiry(&mut item, commit.context_expires_at_ms);
        Ok(item)
    }

    /// The transaction of one commit attempt, in order: `thread_items` (the last one
    /// conditional on the context's version when `version` is given), the arrivals item's
    /// expiry (conditional on `latest` still being the latest arrival when given), deletes of
    /// `folded` message items, then the run's recording and record (the record conditional on
    /// the claim's token). Returns the actions and the indexes of the arrivals and run record
    /// actions.
    #[allow(clippy::too_many_arguments)]
    fn commit_actions(
        &self,
        commit: &TurnCommit,
        thread_items: Vec<Item>,
        version: Option<u64>,
        latest: Option<u64>,
        folded: &[String],
        run_items: Vec<Item>,
    ) -> Result<(Vec<TransactWriteItem>, usize, usize), StoreError> {
        let build = |e: aws_sdk_dynamodb::error::BuildError| StoreError::Unavailable(e.to_string());
        let thread_pk = format!("thread#{}", commit.thread_key);
        let mut actions = Vec::new();
        let last = thread_items.len().saturating_sub(1);
        for (i, item) in thread_items.into_iter().enumerate() {
            let mut put = Put::builder().table_name(&self.table).set_item(Some(item));
            match version {
                Some(0) if i == last => put = put.condition_expression("attribute_not_exists(ver)"),
                Some(v) if i == last => {
                    put = put
                        .condition_expression("ver = :ver")
                        .expression_attribute_values(":ver", n(v));
                }
                _ => {}
            }
            actions.push(
                TransactWriteItem::builder()
                    .put(put.build().map_err(build)?)
                    .build(),
            );
        }
        let mut live = Update::builder()
            .table_name(&self.table)
            .key("pk", s(&thread_pk))
            .key("sk", s("live"))
            .update_expression("SET exp_ms = :exp, expires_at = :exps")
            .expression_attribute_values(":exp", n(commit.context_expires_at_ms))
            .expression_attribute_values(":exps", n(commit.context_expires_at_ms.div_ceil(1000)));
        if let Some(latest) = latest {
            live = live
                .condition_expression("arrivals = :latest")
                .expression_attribute_values(":latest", n(latest));
        }
        let live_at = actions.len();
        actions.push(
            TransactWriteItem::builder()
                .update(live.build().map_err(build)?)
                .build(),
        );
        // A transaction holds at most 100 actions: what does not fit is folded again (and
        // deduplicated) on the next read, and deleted by a later commit.
        let room = TX_MAX_ITEMS.saturating_sub(actions.len() + run_items.len() + 1);
        for sk in folded.iter().take(room) {
            let delete = aws_sdk_dynamodb::types::Delete::builder()
                .table_name(&self.table)
                .key("pk", s(&thread_pk))
                .key("sk", s(sk))
                .build()
                .map_err(build)?;
            actions.push(TransactWriteItem::builder().delete(delete).build());
        }
        let run_at = actions.len() + run_items.len() - 1;
        for item in run_items {
            let mut put = Put::builder().table_name(&self.table).set_item(Some(item));
            if actions.len() == run_at {
                put = put
                    .condition_expression("st = :running AND tok = :tok")
                    .expression_attribute_values(":running", s("running"))
                    .expression_attribute_values(":tok", s(&commit.token));
            }
            actions.push(
                TransactWriteItem::builder()
                    .put(put.build().map_err(build)?)
                    .build(),
            );
        }
        Ok((actions, live_at, run_at))
    }
}

impl TurnStore for DynamoStore {
    async fn start_turn(&self, claim: &TurnClaim) -> Result<TurnStart, StoreError> {
        let run_pk = format!("run#{}", claim.run_key);
        let thread_pk = format!("thread#{}", claim.thread_key);
        let mut item = Item::new();
        item.insert("pk".into(), s(&run_pk));
        item.insert("sk".into(), s("run"));
        item.insert("fp".into(), s(&claim.fingerprint));
        item.insert("st".into(), s("running"));
        item.insert("tok".into(), s(&claim.token));
        expiry(&mut item, claim.lease_until_ms);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk) OR exp_ms <= :now")
            .expression_attribute_values(":now", n(claim.now_ms))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        if let Err(e) = put {
            return match e.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(c)) => {
                    let record = c.item().cloned();
                    self.refused(claim, &run_pk, record).await
                }
                _ => Err(sdk_error("PutItem", e)),
            };
        }
        // Claimed: count the arrival and read the thread, together.
        let arrive = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(&thread_pk))
            .key("sk", s("live"))
            .update_expression(
                "ADD arrivals :one SET exp_ms = if_not_exists(exp_ms, :exp), \
                 expires_at = if_not_exists(expires_at, :exps)",
            )
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":exp", n(claim.lease_until_ms))
            .expression_attribute_values(":exps", n(claim.lease_until_ms.div_ceil(1000)))
            .return_values(ReturnValue::UpdatedNew)
            .send();
        let thread = self.query_all(&thread_pk, None);
        let (arrive, thread) = futures::join!(arrive, thread);
        let arrival = arrive
            .map_err(|e| sdk_error("UpdateItem", e))
            .and_then(|out| {
                out.attributes
                    .as_ref()
                    .and_then(|a| get_n(a, "arrivals"))
                    .ok_or_else(|| StoreError::Corrupt("arrivals not returned".into()))
            });
        match arrival.and_then(|a| Ok((a, decode_thread(&thread?, claim.now_ms)?))) {
            Ok((arrival, (context, version, folded))) => {
                if !folded.is_empty() {
                    self.folded
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(claim.token.clone(), folded);
                }
                Ok(TurnStart::Claimed {
                    context,
                    version,
                    arrival,
                })
            }
            Err(e) => {
                // The turn cannot start: free the run id for a later delivery.
                self.release(&run_pk, claim).await;
                Err(e)
            }
        }
    }

    async fn finish_turn(&self, commit: &TurnCommit) -> Result<CommitOutcome, StoreError> {
        // First as if nothing else happened on the thread (one transaction, no read); when a
        // condition says otherwise, decide again on what the store holds.
        let mut head = ThreadHead {
            version: commit.base_version,
            latest_arrival: commit.arrival,
        };
        let mut stored: Option<ThreadContext> = None;
        let mut folded = self
            .folded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&commit.token)
            .unwrap_or_default();
        let mut early_written = false;
        let started = std::time::Instant::now();
        for attempt in 1..=COMMIT_ATTEMPTS {
            if attempt > 1 {
                if started.elapsed() > COMMIT_BUDGET {
                    break;
                }
                // Overlapping turns commit at about the same time: spread them out.
                tokio::time::sleep(contention_backoff(attempt)).await;
            }
            let decision = decide_commit(head, commit);
            let superseded = decision == runway_core::store::turn_state::CommitDecision::Superseded;
            let (thread_items, version, latest) = if superseded {
                (vec![self.superseded_item(commit)?], None, None)
            } else {
                let context = thread_after(decision, stored.take(), commit);
                (
                    self.context_items(commit, &context, head.version + 1)?,
                    Some(head.version),
                    Some(head.latest_arrival),
                )
            };
            let thread_bytes: usize = thread_items
                .iter()
                .filter_map(|i| match i.get("data") {
                    Some(AttributeValue::B(d)) => Some(d.as_ref().len()),
                    _ => None,
                })
                .sum();
            let (run_items, early) = self.run_items(commit, thread_bytes);
            if !early.is_empty() && !early_written {
                tracing::info!(
                    parts = early.len(),
                    "recording larger than one transaction: writing its parts first"
                );
                self.batch_put(early).await?;
                early_written = true;
            }
            let deletes: &[String] = if superseded { &[] } else { &folded };
            let (actions, live_at, run_at) =
                self.commit_actions(commit, thread_items, version, latest, deletes, run_items)?;
            let failed = |codes: &[String], i: usize| {
                codes.get(i).map(String::as_str) == Some("ConditionalCheckFailed")
            };
            match self.transact(actions).await {
                Ok(()) => return Ok(decision.outcome()),
                Err(TxFailure::Store(e)) => return Err(e),
                Err(TxFailure::Condition(codes)) => {
                    if failed(&codes, run_at) {
                        return Ok(CommitOutcome::ClaimLost);
                    }
                    if failed(&codes, live_at) {
                        // A newer turn arrived: this one is superseded, whatever the context.
                        head.latest_arrival = head.latest_arrival.max(commit.arrival + 1);
                        continue;
                    }
                    tracing::info!(attempt, "the thread moved on since it was read: merging");
                    let thread_pk = format!("thread#{}", commit.thread_key);
                    let (context, read, now_folded) =
                        self.read_thread(&thread_pk, commit.now_ms).await?;
                    stored = context;
                    head = read;
                    folded = now_folded;
                }
            }
        }
        Err(StoreError::Throttled(
            "the thread kept changing while this turn was saved".into(),
        ))
    }

    async fn latest_arrival(&self, thread_key: &str) -> Result<u64, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .consistent_read(true)
            .key("pk", s(format!("thread#{thread_key}")))
            .key("sk", s("live"))
            .projection_expression("arrivals")
            .send()
            .await
            .map_err(|e| sdk_error("GetItem", e))?;
        Ok(out
            .item
            .as_ref()
            .and_then(|i| get_n(i, "arrivals"))
            .unwrap_or(0))
    }

    async fn claim_action(&self, claim: &ActionClaim) -> Result<bool, StoreError> {
        self.put_action_claim(claim).await
    }

    async fn put_file(&self, file: &HostedFile) -> Result<(), StoreError> {
        if file.bytes.len() > MAX_FILE_BYTES {
            return Err(StoreError::TooLarge(format!(
                "file of {} bytes (at most {MAX_FILE_BYTES})",
                file.bytes.len()
            )));
        }
        let pk = format!("file#{}", file.token);
        let mut head = Item::new();
        head.insert("pk".into(), s(&pk));
        head.insert("sk".into(), s("file"));
        head.insert("name".into(), s(&file.name));
        head.insert("mime".into(), s(&file.mime));
        head.insert("size".into(), n(file.bytes.len() as u64));
        expiry(&mut head, file.expires_at_ms);
        if file.bytes.len() <= ITEM_PAYLOAD_BYTES {
            head.insert("data".into(), b(file.bytes.clone()));
        } else {
            let tag = new_tag();
            let parts: Vec<Item> = file
                .bytes
                .chunks(ITEM_PAYLOAD_BYTES)
                .enumerate()
                .map(|(i, part)| {
                    let mut p = Item::new();
                    p.insert("pk".into(), s(&pk));
                    p.insert("sk".into(), s(format!("part#{tag}#{i:04}")));
                    p.insert("data".into(), b(part.to_vec()));
                    expiry(&mut p, file.expires_at_ms);
                    p
                })
                .collect();
            head.insert("tag".into(), s(&tag));
            head.insert("parts".into(), n(parts.len() as u64));
            self.batch_put(parts).await?;
        }
        // The head last: the file is visible only once every part is stored.
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(head))
            .send()
            .await
            .map_err(|e| sdk_error("PutItem", e))?;
        Ok(())
    }

    async fn take_turn(
        &self,
        key: &TallyKey,
        limit: u64,
        expires_at_ms: u64,
    ) -> Result<bool, StoreError> {
        self.take_turn_item(key, limit, expires_at_ms).await
    }

    async fn return_turn(&self, key: &TallyKey) -> Result<(), StoreError> {
        self.return_turn_item(key).await
    }

    async fn add_tally(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
    ) -> Result<(), StoreError> {
        self.add_tally_item(key, tally, expires_at_ms).await
    }

    async fn tallies(&self, part: &str, now_ms: u64) -> Result<Vec<(String, Tally)>, StoreError> {
        self.tally_rows(part, now_ms).await
    }

    async fn get_file(&self, token: &str, now_ms: u64) -> Result<Option<HostedFile>, StoreError> {
        let pk = format!("file#{token}");
        let items = self.query_all(&pk, None).await?;
        let Some(head) = items.iter().find(|i| get_s(i, "sk") == Some("file")) else {
            return Ok(None);
        };
        let expires_at_ms = get_n(head, "exp_ms").unwrap_or(0);
        if expires_at_ms <= now_ms {
            return Ok(None);
        }
        let bytes = match payload_ref(head)? {
            PayloadRef::Inline(d) => d.to_vec(),
            PayloadRef::Parts { tag, parts } => {
                assemble(&items, &format!("part#{tag}#"), parts, None)?
            }
        };
        Ok(Some(HostedFile {
            token: token.to_owned(),
            name: get_s(head, "name").unwrap_or("file").to_owned(),
            mime: get_s(head, "mime")
                .unwrap_or("application/octet-stream")
                .to_owned(),
            bytes,
            expires_at_ms,
        }))
    }
}

/// The stored context among a thread's items (`None` if absent or expired at `now_ms`), its
/// version (0 if absent; a context written before versions existed is version 0 too), and the
/// sort keys of the superseded turns' `msg#` items folded into it (in arrival order, each
/// once: a message already in the context is not inserted again).
fn decode_thread(
    items: &[Item],
    now_ms: u64,
) -> Result<(Option<ThreadContext>, u64, Vec<String>), StoreError> {
    let head = items.iter().find(|i| get_s(i, "sk") == Some("ctx"));
    let version = head.and_then(|h| get_n(h, "ver")).unwrap_or(0);
    let mut context = match head {
        Some(head) if get_n(head, "exp_ms").unwrap_or(0) > now_ms => {
            let compressed = match payload_ref(head)? {
                PayloadRef::Inline(d) => d.to_vec(),
                PayloadRef::Parts { tag, parts } => assemble(items, "part#", parts, Some(tag))?,
            };
            let json = inflate(&compressed)?;
            Some(
                serde_json::from_slice::<ThreadContext>(&json)
                    .map_err(|e| StoreError::Corrupt(format!("thread context: {e}")))?,
            )
        }
        _ => None,
    };
    let mut folded = Vec::new();
    let mut pending: Vec<&Item> = items
        .iter()
        .filter(|i| get_s(i, "sk").is_some_and(|sk| sk.starts_with("msg#")))
        .filter(|i| get_n(i, "exp_ms").unwrap_or(0) > now_ms)
        .collect();
    pending.sort_by_key(|i| get_n(i, "arr").unwrap_or(0));
    for item in pending {
        let arrival = get_n(item, "arr").unwrap_or(0);
        let Some(AttributeValue::B(data)) = item.get("data") else {
            return Err(StoreError::Corrupt("message item without data".into()));
        };
        let messages: Vec<runway_core::Message> = serde_json::from_slice(&inflate(data.as_ref())?)
            .map_err(|e| StoreError::Corrupt(format!("superseded turn's messages: {e}")))?;
        let thread = context.get_or_insert_with(ThreadContext::default);
        let already = thread.messages.iter().any(|m| {
            m.arrival == Some(arrival) && messages.first().is_some_and(|f| f.run_id == m.run_id)
        });
        if !already {
            let at = thread
                .messages
                .iter()
                .position(|m| m.arrival.unwrap_or(0) > arrival)
                .unwrap_or(thread.messages.len());
            thread.messages.splice(at..at, messages);
            thread.turns += 1;
        }
        folded.extend(get_s(item, "sk").map(str::to_owned));
    }
    Ok((context, version, folded))
}

enum PayloadRef<'a> {
    Inline(&'a [u8]),
    Parts { tag: &'a str, parts: usize },
}

fn payload_ref(item: &Item) -> Result<PayloadRef<'_>, StoreError> {
    if let Some(AttributeValue::B(d)) = item.get("data") {
        return Ok(PayloadRef::Inline(d.as_ref()));
    }
    match (get_s(item, "tag"), get_n(item, "parts")) {
        (Some(tag), Some(parts)) if parts > 0 => Ok(PayloadRef::Parts {
            tag,
            parts: parts as usize,
        }),
        _ => Err(StoreError::Corrupt(
            "item has neither data nor parts".into(),
        )),
    }
}

/// Concatenates parts `{prefix}0000`… in order; with `tag`, each part must carry that `tag`
/// attribute (fixed-index parts left over from a larger, older value are ignored).
fn assemble(
    items: &[Item],
    prefix: &str,
    parts: usize,
    tag: Option<&str>,
) -> Result<Vec<u8>, StoreError> {
    let mut by_sk: HashMap<&str, &Item> = HashMap::new();
    for i in items {
        if let Some(sk) = get_s(i, "sk") {
            by_sk.insert(sk, i);
        }
    }
    let mut out = Vec::new();
    for i in 0..parts {
        let sk = format!("{prefix}{i:04}");
        let part = by_sk
            .get(sk.as_str())
            .filter(|p| tag.is_none() || get_s(p, "tag") == tag)
            .ok_or_else(|| StoreError::Corrupt(format!("part {i} of {parts} missing")))?;
        match part.get("data") {
            Some(AttributeValue::B(d)) => out.extend_from_slice(d.as_ref()),
            _ => return Err(StoreError::Corrupt(format!("part {i} has no data"))),
        }
    }
    Ok(out)
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn b(v: Vec<u8>) -> AttributeValue {
    AttributeValue::B(Blob::new(v))
}

fn get_s<'a>(item: &'a Item, k: &str) -> Option<&'a str> {
    match item.get(k) {
        Some(AttributeValue::S(v)) => Some(v),
        _ => None,
    }
}

fn get_n(item: &Item, k: &str) -> Option<u64> {
    match item.get(k) {
        Some(AttributeValue::N(v)) => v.parse().ok(),
        _ => None,
    }
}

/// Sets the exact expiry and the TTL attribute (seconds, rounded up).
fn expiry(item: &mut Item, at_ms: u64) {
    item.insert("exp_ms".into(), n(at_ms));
    item.insert("expires_at".into(), n(at_ms.div_ceil(1000)));
}

/// A short random generation tag, so parts of different writes never share a key.
fn new_tag() -> String {
    format!("{:016x}", fastrand::u64(..))
}

fn deflate(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(
        Vec::with_capacity(data.len() / 4 + 64),
        flate2::Compression::fast(),
    );
    // Writing into a Vec cannot fail.
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

fn inflate(data: &[u8]) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::new();
    flate2::read::DeflateDecoder::new(data)
        .take(MAX_INFLATED_BYTES)
        .read_to_end(&mut out)
        .map_err(|e| StoreError::Corrupt(format!("cannot decompress: {e}")))?;
    Ok(out)
}

/// Exponential backoff with full jitter: a random wait in `[0, min(2 s, 50 ms × 2^attempt))`.
pub(crate) fn backoff(attempt: u32) -> Duration {
    let cap = 50u64.saturating_mul(1 << attempt.min(10)).min(2000);
    Duration::from_millis(fastrand::u64(cap / 4..=cap))
}

/// Full jitter for commits of overlapping turns: a random wait in
/// `[0, min(400 ms, 10 ms × 2^attempt))`.
fn contention_backoff(attempt: u32) -> Duration {
    let cap = 10u64.saturating_mul(1 << attempt.min(10)).min(400);
    Duration::from_millis(fastrand::u64(0..cap))
}

/// A [`StoreError`] for a failed SDK call: throttling after the SDK's own retries is
/// [`StoreError::Throttled`], an item over the size limit [`StoreError::TooLarge`], anything
/// else [`StoreError::Unavailable`].
fn sdk_error<E, R>(op: &str, e: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let code = e.code().map(str::to_owned);
    let message = e.message().unwrap_or_default().to_owned();
    match code.as_deref() {
        Some(
            "ProvisionedThroughputExceededException"
            | "ThrottlingException"
            | "RequestLimitExceeded",
        ) => StoreError::Throttled(format!("{op}: {}", code.unwrap_or_default())),
        Some("ItemCollectionSizeLimitExceededException") => {
            StoreError::TooLarge(format!("{op}: {message}"))
        }
        Some("ValidationException") if message.contains("size") => {
            StoreError::TooLarge(format!("{op}: {message}"))
        }
        Some(c) => StoreError::Unavailable(format!("{op}: {c}: {message}")),
        None => StoreError::Unavailable(format!("{op}: {}", DisplayErrorContext(&e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deflate_round_trips_and_shrinks_sse() {
        let sse = "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"a1\",\"delta\":\"runway streams long answers in pieces. \"}\n\n".repeat(10_000);
        let packed = deflate(sse.as_bytes());
        assert!(
            packed.len() * 20 < sse.len(),
            "{} -> {}",
            sse.len(),
            packed.len()
        );
        assert_eq!(inflate(&packed).unwrap(), sse.as_bytes());
    }

    #[test]
    fn corrupt_payload_is_an_error() {
        assert!(matches!(
            inflate(b"not deflate"),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn parts_assemble_in_order_and_check_generation() {
        let mk = |sk: &str, tag: &str, data: &[u8]| {
            let mut i = Item::new();
            i.insert("sk".into(), s(sk));
            i.insert("tag".into(), s(tag));
            i.insert("data".into(), b(data.to_vec()));
            i
        };
        let items = vec![
            mk("part#0001", "g", b"world"),
            mk("part#0000", "g", b"hello "),
            mk("part#0002", "old", b"stale"),
        ];
        assert_eq!(
            assemble(&items, "part#", 2, Some("g")).unwrap(),
            b"hello world"
        );
        assert!(assemble(&items, "part#", 3, Some("g")).is_err());
    }

    #[test]
    fn expired_context_is_absent() {
        let mut head = Item::new();
        head.insert("sk".into(), s("ctx"));
        head.insert(
            "data".into(),
            b(deflate(
                &serde_json::to_vec(&ThreadContext::default()).unwrap(),
            )),
        );
        expiry(&mut head, 1_000);
        let items = vec![head];
        assert!(decode_thread(&items, 999).unwrap().0.is_some());
        assert!(decode_thread(&items, 1_000).unwrap().0.is_none());
    }

    #[test]
    fn backoff_grows_and_is_bounded() {
        for attempt in 1..20 {
            let d = backoff(attempt);
            assert!(d <= Duration::from_secs(2));
        }
        assert!(backoff(1) <= Duration::from_millis(100));
    }
}
