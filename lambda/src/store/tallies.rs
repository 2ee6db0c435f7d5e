//! [`Tally`] rows in the DynamoDB table: item `pk` = `tally#{part}`, `sk` = `{item}`, one
//! number attribute per [`Tally::FIELDS`] entry (absent: 0), with `exp_ms` / `expires_at`.
//!
//! Each write counts once per row (see [`runway_core::store::tally`]): the SDK retries a
//! request whose answer came too late, and an `ADD` applied twice would count a turn twice.
//! Every write is one transaction that puts a marker item (`pk` = `tallyw#{part}`,
//! `sk` = `{item}/{write}`, expiring with the row) if absent and updates the row; a marker
//! already there cancels it (already counted). No item grows with the writes it counts: a
//! row keeping its write ids in a set of its own passed DynamoDB's 400 KB item limit at
//! about 11,000 turns in a minute, and every turn after that failed.
//! - `take_turns`: the marker (of the first row) and one conditional update per row
//!   (`ADD turns :1` if `turns < :limit`) in one `TransactWriteItems`: all rows or none,
//!   atomic across every Lambda instance, so a turns-per-minute limit holds exactly and a
//!   turn refused by one limit never holds a slot of another. 2 WRU per item: 4 for one
//!   limit, 2 more per further limit.
//! - `add_tally`: the marker and `ADD` of the fields.
//! - `tallies`: one consistent `Query` of the part (markers live in their own partition).

use aws_sdk_dynamodb::error::BuildError;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};
use runway_core::adapter::StoreError;
use runway_core::store::tally::{Tally, TallyKey, TurnTake};

use super::DynamoStore;
use super::item::{Item, expiry, get_n, get_s, n, s};
use super::retry::TxFailure;

fn pk(part: &str) -> String {
    format!("tally#{part}")
}

/// The partition of the write markers of `part`'s rows.
fn marker_pk(part: &str) -> String {
    format!("tallyw#{part}")
}

fn build_error(e: BuildError) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

impl DynamoStore {
    pub(super) async fn take_turns_items(
        &self,
        takes: &[TurnTake],
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<bool, StoreError> {
        let Some(first) = takes.first() else {
            return Ok(true);
        };
        // The marker first: its cancellation reason is the first one.
        let mut actions = vec![self.marker(&first.key, expires_at_ms, write_id)?];
        for take in takes {
            let update = Update::builder()
                .table_name(&self.table)
                .key("pk", s(pk(&take.key.part)))
                .key("sk", s(&take.key.item))
                .update_expression("ADD turns :one SET exp_ms = :exp, expires_at = :exps")
                .condition_expression("attribute_not_exists(turns) OR turns < :limit")
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":limit", n(take.limit))
                .expression_attribute_values(":exp", n(expires_at_ms))
                .expression_attribute_values(":exps", n(expires_at_ms.div_ceil(1000)))
                .build()
                .map_err(build_error)?;
            actions.push(TransactWriteItem::builder().update(update).build());
        }
        match self.transact(actions).await {
            Ok(()) => Ok(true),
            Err(TxFailure::Condition(reasons)) => {
                let failed = |r: &String| r == "ConditionalCheckFailed";
                if reasons.first().is_some_and(failed) {
                    // The marker is there: this write was applied before (the SDK retried it).
                    Ok(true)
                } else if reasons.iter().any(failed) {
                    // A row is at its limit.
                    Ok(false)
                } else {
                    Err(StoreError::Unavailable(format!(
                        "turn count transaction cancelled: {}",
                        reasons.join(", ")
                    )))
                }
            }
            Err(TxFailure::Store(e)) => Err(e),
        }
    }

    /// The put-if-absent of the marker saying `key`'s row counts `write_id`.
    fn marker(
        &self,
        key: &TallyKey,
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut marker: Item = Item::new();
        marker.insert("pk".into(), s(marker_pk(&key.part)));
        marker.insert("sk".into(), s(format!("{}/{write_id}", key.item)));
        expiry(&mut marker, expires_at_ms);
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(marker))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    pub(super) async fn add_tally_item(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<(), StoreError> {
        let marker = self.marker(key, expires_at_ms, write_id)?;
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
        let actions = vec![marker, TransactWriteItem::builder().update(add).build()];
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
