//! `start_turn`: a conditional `PutItem` claims the run; a refused claim brings the existing
//! record back and [`runway_core::store::turn_state::decide_claim`] says whether it is a
//! replay, a duplicate to wait for, or a reused run id.
//!
//! The thread's owner ([`runway_core::store::turn_state::decide_owner`]) is on its `live`
//! item: `ws`, the owning workspace, holds while the item's `exp_ms` (the context's expiry)
//! or `ws_exp` (the latest claim's lease) is ahead. The `UpdateItem` counting the arrival is
//! conditional on it and records the claiming workspace, so a claim from another workspace
//! counts nothing and costs no extra request on the way in; its run claim is then released.

use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};
use runway_core::adapter::{StoreError, TurnClaim, TurnStart};
use runway_core::store::turn_state::{ClaimDecision, RunPhase, RunRecord, decide_claim};

use super::DynamoStore;
use super::item::{Item, expiry, get_n, get_s, n, s};
use super::payload::{PayloadRef, assemble, inflate, payload_ref};
use super::retry::sdk_error;
use super::thread::decode_thread;

impl DynamoStore {
    /// `start_turn`: claims the run with a conditional `PutItem`; once claimed, counts the
    /// arrival and reads the thread together.
    pub(super) async fn claim(&self, claim: &TurnClaim) -> Result<TurnStart, StoreError> {
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
        // Claimed: count the arrival (only if the thread is nobody's or this workspace's, which
        // then owns it) and read the thread, together.
        let arrive = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(&thread_pk))
            .key("sk", s("live"))
            .update_expression(
                "ADD arrivals :one SET exp_ms = if_not_exists(exp_ms, :exp), \
                 expires_at = if_not_exists(expires_at, :exps), ws = :ws, ws_exp = :exp",
            )
            .condition_expression(
                "attribute_not_exists(ws) OR ws = :ws OR ws = :nobody \
                 OR (exp_ms <= :now AND ws_exp <= :now)",
            )
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":exp", n(claim.lease_until_ms))
            .expression_attribute_values(":exps", n(claim.lease_until_ms.div_ceil(1000)))
            .expression_attribute_values(":ws", s(&claim.workspace))
            .expression_attribute_values(":nobody", s(""))
            .expression_attribute_values(":now", n(claim.now_ms))
            .return_values(ReturnValue::UpdatedNew)
            .send();
        let thread = self.query_all(&thread_pk, None);
        let (arrive, thread) = futures::join!(arrive, thread);
        if let Err(e) = &arrive
            && let Some(UpdateItemError::ConditionalCheckFailedException(_)) = e.as_service_error()
        {
            // Another workspace's thread: nothing counted; the run id is freed for a retry.
            self.release(&run_pk, claim).await;
            return Ok(TurnStart::OtherWorkspace);
        }
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

    /// Best-effort release of a claim whose turn cannot start (the thread read failed, or the
    /// thread is another workspace's), so a later delivery need not wait for the lease.
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
