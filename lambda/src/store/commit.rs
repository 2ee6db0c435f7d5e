//! `finish_turn`: one `TransactWriteItems` saves the context (conditional on its version), the
//! finished run record (conditional on the claim's token) and the arrivals item's expiry
//! (conditional on the turn being the latest arrival). When a condition fails because the
//! thread moved on, the thread is read, the commit merged as
//! [`runway_core::store::turn_state`] decides, and written again.

use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use runway_core::ThreadContext;
use runway_core::adapter::{CommitOutcome, StoreError, TurnCommit};
use runway_core::store::turn_state::{ThreadHead, decide_commit, thread_after};

use super::DynamoStore;
use super::item::{Item, b, expiry, n, s};
use super::payload::{ITEM_PAYLOAD_BYTES, deflate, new_tag, part_items};
use super::retry::{TxFailure, contention_backoff};

/// Payload of one `TransactWriteItems` (its limit is 4 MB for the whole request).
const TX_PAYLOAD_BYTES: usize = 3_500_000;
/// Actions in one `TransactWriteItems` (DynamoDB's limit is 100).
const TX_MAX_ITEMS: usize = 100;
/// Parts a thread context may take. With the default context policy a context needs at most
/// two; a policy that grows it past this fails the turn with [`StoreError::TooLarge`].
const MAX_CONTEXT_PARTS: usize = 8;
/// Attempts of a commit whose thread keeps moving (each: read, merge, conditional write),
/// within [`COMMIT_BUDGET`].
const COMMIT_ATTEMPTS: u32 = 40;
/// How long a commit keeps retrying a thread that keeps moving: under the engine's 8-second
/// bound on one store call.
const COMMIT_BUDGET: Duration = Duration::from_secs(6);

impl DynamoStore {
    /// `finish_turn`: first as if nothing else happened on the thread; when a condition says
    /// otherwise, decided again on what the store holds.
    pub(super) async fn commit(&self, commit: &TurnCommit) -> Result<CommitOutcome, StoreError> {
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
            let key = |i| (run_pk.clone(), format!("part#{tag}#{i:04}"));
            let parts = part_items(&recording, key, None, commit.recording_expires_at_ms);
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
            // Fixed part keys, each carrying the generation: a reader ignores parts left over
            // from a larger, older context.
            let key = |i| (thread_pk.clone(), format!("part#{i:04}"));
            let parts = part_items(&packed, key, Some(&tag), commit.context_expires_at_ms);
            if parts.len() > MAX_CONTEXT_PARTS {
                return Err(StoreError::TooLarge(format!(
                    "thread context of {} compressed bytes",
                    packed.len()
                )));
            }
            head.insert("tag".into(), s(&tag));
            head.insert("parts".into(), n(parts.len() as u64));
            items.extend(parts);
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
