//! [`Tally`] rows in the DynamoDB table: item `pk` = `tally#{part}`, `sk` = `{item}`, one
//! number attribute per [`Tally::FIELDS`] entry (absent: 0), with `exp_ms` / `expires_at`.
//!
//! Each write counts once per row (see [`runway_core::store::tally`]): the SDK retries a
//! request whose answer came too late, and an `ADD` applied twice would count a turn twice.
//! - `take_turn`: one conditional `UpdateItem` (`ADD turns :1` if `turns < :limit`): atomic
//!   across every Lambda instance, so a turns-per-minute limit holds exactly. The row keeps
//!   the write ids it counts in a string set `w` (no more than its limit: a minute's turns),
//!   checked in the same condition; a write refused because it is already counted reads the
//!   row (`ReturnValuesOnConditionCheckFailure`) and answers `true`.
//! - `return_turn`: `ADD turns -1 DELETE w` if `w` holds the write.
//! - `add_tally`: a day's usage row counts thousands of writes, too many for a set in the
//!   row: a transaction puts a marker item (`pk` = `tallyw#{part}`, `sk` = `{item}/{write}`)
//!   if absent and adds the fields; a marker already there cancels it (already counted).
//! - `tallies`: one consistent `Query` of the part (markers live in their own partition).

use aws_sdk_dynamodb::error::BuildError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use runway_core::adapter::StoreError;
use runway_core::store::tally::{Tally, TallyKey};

use super::DynamoStore;
use super::item::{Item, expiry, get_n, get_s, n, s};
use super::retry::{TxFailure, sdk_error};

fn pk(part: &str) -> String {
    format!("tally#{part}")
}

/// The partition of the write markers of `part`'s rows.
fn marker_pk(part: &str) -> String {
    format!("tallyw#{part}")
}

/// Whether `row` (as DynamoDB returned it) counts the write `write_id` in its set `w`.
fn counts_write(row: Option<&Item>, write_id: &str) -> bool {
    matches!(
        row.and_then(|r| r.get("w")),
        Some(AttributeValue::Ss(ids)) if ids.iter().any(|i| i == write_id)
    )
}

fn build_error(e: BuildError) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

impl DynamoStore {
    pub(super) async fn take_turn_item(
        &self,
        key: &TallyKey,
        limit: u64,
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<bool, StoreError> {
        let r = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk(&key.part)))
            .key("sk", s(&key.item))
            .update_expression("ADD turns :one, w :ids SET exp_ms = :exp, expires_at = :exps")
            .condition_expression(
                "(attribute_not_exists(turns) OR turns < :limit) AND NOT contains(w, :id)",
            )
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":ids", AttributeValue::Ss(vec![write_id.to_owned()]))
            .expression_attribute_values(":id", s(write_id))
            .expression_attribute_values(":limit", n(limit))
            .expression_attribute_values(":exp", n(expires_at_ms))
            .expression_attribute_values(":exps", n(expires_at_ms.div_ceil(1000)))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match r {
            Ok(_) => Ok(true),
            Err(e) => match e.as_service_error() {
                // Refused: full, or this write is already counted (a retry of an applied call).
                Some(UpdateItemError::ConditionalCheckFailedException(c)) => {
                    Ok(counts_write(c.item(), write_id))
                }
                _ => Err(sdk_error("UpdateItem", e)),
            },
        }
    }

    pub(super) async fn return_turn_item(
        &self,
        key: &TallyKey,
        write_id: &str,
    ) -> Result<(), StoreError> {
        let r = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk(&key.part)))
            .key("sk", s(&key.item))
            .update_expression("ADD turns :minus DELETE w :ids")
            .condition_expression("contains(w, :id) AND turns > :zero")
            .expression_attribute_values(":minus", AttributeValue::N("-1".into()))
            .expression_attribute_values(":ids", AttributeValue::Ss(vec![write_id.to_owned()]))
            .expression_attribute_values(":id", s(write_id))
            .expression_attribute_values(":zero", n(0))
            .send()
            .await;
        match r {
            Ok(_) => Ok(()),
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(_)) => Ok(()),
                _ => Err(sdk_error("UpdateItem", e)),
            },
        }
    }

    pub(super) async fn add_tally_item(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<(), StoreError> {
        let mut marker: Item = Item::new();
        marker.insert("pk".into(), s(marker_pk(&key.part)));
        marker.insert("sk".into(), s(format!("{}/{write_id}", key.item)));
        expiry(&mut marker, expires_at_ms);
        let marker = Put::builder()
            .table_name(&self.table)
            .set_item(Some(marker))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(build_error)?;
        let mut add = Update::builder()
            .table_name(&self.table)
            .key("pk", s(pk(&key.part)))
            .key("sk", s(&key.item))
            .expression_attribute_values(":exp", n(expires_at_ms))
            .expression_attribute_values(":exps", n(expires_at_ms.div_ceil(1000)));
        let mut adds = Vec::new();
        for (i, (field, value)) in Tally::FIELDS.iter().zip(tally.values()).enumerate() {
            if value > 0 {
                adds.push(format!("{field} :v{i}"));
                add = add.expression_attribute_values(format!(":v{i}"), n(value));
            }
        }
        let set = "SET exp_ms = :exp, expires_at = :exps";
        let expression = if adds.is_empty() {
            set.to_owned()
        } else {
            format!("ADD {} {set}", adds.join(", "))
        };
        let add = add
            .update_expression(expression)
            .build()
            .map_err(build_error)?;
        let actions = vec![
            TransactWriteItem::builder().put(marker).build(),
            TransactWriteItem::builder().update(add).build(),
        ];
        match self.transact(actions).await {
            Ok(()) => Ok(()),
            // The marker is there: this write was applied before (the SDK retried it).
            Err(TxFailure::Condition(reasons))
                if reasons.first().map(String::as_str) == Some("ConditionalCheckFailed") =>
            {
                Ok(())
            }
            Err(TxFailure::Condition(reasons)) => Err(StoreError::Unavailable(format!(
                "tally transaction cancelled: {}",
                reasons.join(", ")
            ))),
            Err(TxFailure::Store(e)) => Err(e),
        }
    }

    pub(super) async fn tally_rows(
        &self,
        part: &str,
        now_ms: u64,
    ) -> Result<Vec<(String, Tally)>, StoreError> {
        let items = self.query_all(&pk(part), None).await?;
        let mut rows: Vec<(String, Tally)> = items
            .iter()
            .filter(|i| get_n(i, "exp_ms").unwrap_or(0) > now_ms)
            .filter_map(|i| {
                let item = get_s(i, "sk")?.to_owned();
                let mut values = [0u64; Tally::FIELDS.len()];
                for (v, field) in values.iter_mut().zip(Tally::FIELDS) {
                    *v = get_n(i, field).unwrap_or(0);
                }
                Some((item, Tally::from_values(values)))
            })
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(rows)
    }
}
