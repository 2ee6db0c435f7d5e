//! [`Tally`] rows in the DynamoDB table: item `pk` = `tally#{part}`, `sk` = `{item}`, one
//! number attribute per [`Tally::FIELDS`] entry (absent: 0), with `exp_ms` / `expires_at`.
//!
//! - `take_turn`: one conditional `UpdateItem` (`ADD turns :1` if `turns < :limit`): atomic
//!   across every Lambda instance, so a turns-per-minute limit holds exactly.
//! - `return_turn`: `ADD turns -1` if `turns > 0`.
//! - `add_tally`: one `UpdateItem` adding the non-zero fields.
//! - `tallies`: one consistent `Query` of the part.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use runway_core::adapter::StoreError;
use runway_core::store::tally::{Tally, TallyKey};

use super::{DynamoStore, get_n, get_s, n, s, sdk_error};

fn pk(part: &str) -> String {
    format!("tally#{part}")
}

impl DynamoStore {
    pub(super) async fn take_turn_item(
        &self,
        key: &TallyKey,
        limit: u64,
        expires_at_ms: u64,
    ) -> Result<bool, StoreError> {
        let r = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk(&key.part)))
            .key("sk", s(&key.item))
            .update_expression("ADD turns :one SET exp_ms = :exp, expires_at = :exps")
            .condition_expression("attribute_not_exists(turns) OR turns < :limit")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":limit", n(limit))
            .expression_attribute_values(":exp", n(expires_at_ms))
            .expression_attribute_values(":exps", n(expires_at_ms.div_ceil(1000)))
            .send()
            .await;
        match r {
            Ok(_) => Ok(true),
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(_)) => Ok(false),
                _ => Err(sdk_error("UpdateItem", e)),
            },
        }
    }

    pub(super) async fn return_turn_item(&self, key: &TallyKey) -> Result<(), StoreError> {
        let r = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk(&key.part)))
            .key("sk", s(&key.item))
            .update_expression("ADD turns :minus")
            .condition_expression("turns > :zero")
            .expression_attribute_values(":minus", AttributeValue::N("-1".into()))
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
    ) -> Result<(), StoreError> {
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk(&key.part)))
            .key("sk", s(&key.item))
            .expression_attribute_values(":exp", n(expires_at_ms))
            .expression_attribute_values(":exps", n(expires_at_ms.div_ceil(1000)));
        let mut adds = Vec::new();
        for (i, (field, value)) in Tally::FIELDS.iter().zip(tally.values()).enumerate() {
            if value > 0 {
                adds.push(format!("{field} :v{i}"));
                req = req.expression_attribute_values(format!(":v{i}"), n(value));
            }
        }
        let set = "SET exp_ms = :exp, expires_at = :exps";
        let expression = if adds.is_empty() {
            set.to_owned()
        } else {
            format!("ADD {} {set}", adds.join(", "))
        };
        req.update_expression(expression)
            .send()
            .await
            .map_err(|e| sdk_error("UpdateItem", e))?;
        Ok(())
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
                let mut values = [0u64; 16];
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
