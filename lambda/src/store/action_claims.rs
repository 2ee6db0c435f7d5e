//! Action claims in the DynamoDB table ([`TurnStore::claim_action`](runway_core::adapter::TurnStore::claim_action)):
//! one item per action at `pk = action#<sha-256 of thread key and action>`, `sk = action`,
//! holding `claimant` (the holder) and the claim's expiry. A claim is one conditional
//! `PutItem`: it is written only if no claim is held, the held one expired, or it is the
//! claimant's own, so of concurrent claims by different holders exactly one is written.

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use runway_core::adapter::{ActionClaim, StoreError};

use super::DynamoStore;
use super::item::{Item, expiry, n, s};
use super::retry::sdk_error;

impl DynamoStore {
    /// Writes `claim` if it wins; true if it did.
    pub(super) async fn put_action_claim(&self, claim: &ActionClaim) -> Result<bool, StoreError> {
        let mut item = Item::new();
        item.insert("pk".into(), s(format!("action#{}", claim.digest())));
        item.insert("sk".into(), s("action"));
        item.insert("claimant".into(), s(&claim.holder));
        expiry(&mut item, claim.expires_at_ms);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(
                "attribute_not_exists(pk) OR exp_ms <= :now OR claimant = :holder",
            )
            .expression_attribute_values(":now", n(claim.now_ms))
            .expression_attribute_values(":holder", s(&claim.holder))
            .send()
            .await;
        match put {
            Ok(_) => Ok(true),
            Err(e) => match e.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(_)) => Ok(false),
                _ => Err(sdk_error("PutItem", e)),
            },
        }
    }
}
