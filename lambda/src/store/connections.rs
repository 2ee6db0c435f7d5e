//! Connected accounts in the DynamoDB table (see [`runway_core::store::connections`]): the
//! vault's sealed entries and the single-use connect states.
//!
//! - A connect state is one item at `pk = connect#{id}`, `sk = state`, the state as JSON in
//!   `data`, with the usual exact expiry (`exp_ms`) and TTL (`expires_at`). Claiming it is one
//!   `DeleteItem` conditional on the item existing and not having expired, returning the
//!   deleted item (`ReturnValues=ALL_OLD`): DynamoDB runs a conditional delete atomically, so
//!   of concurrent claims exactly one deletes it and gets it back. An expired state is never
//!   given out, even while the TTL has not yet deleted it.
//! - A vault entry is one item at `pk = connection#{workspace}`, `sk` = the JSON array
//!   `[user, provider]` (unambiguous whatever the names hold; one workspace's entries are one
//!   partition, listable by a `Query`), the sealed entry's bytes in the binary `sealed`
//!   attribute. Entries do not expire: the tokens inside carry their own expiry.

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use runway_core::adapter::StoreError;
use runway_core::store::{ConnectState, ConnectionKey};

use super::DynamoStore;
use super::item::{Item, b, expiry, get_s, n, s};
use super::retry::sdk_error;

fn state_pk(id: &str) -> String {
    format!("connect#{id}")
}

fn connection_keys(key: &ConnectionKey) -> (String, String) {
    let sk =
        serde_json::to_string(&[&key.user, &key.provider]).expect("two strings serialize as JSON");
    (format!("connection#{}", key.workspace), sk)
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("{what} item"))
}

impl DynamoStore {
    pub(super) async fn put_connect_state_item(
        &self,
        state: &ConnectState,
    ) -> Result<(), StoreError> {
        let data = serde_json::to_string(state).map_err(|_| corrupt("connect state"))?;
        let mut item = Item::new();
        item.insert("pk".into(), s(state_pk(&state.id)));
        item.insert("sk".into(), s("state"));
        item.insert("data".into(), s(data));
        expiry(&mut item, state.expires_at_ms);
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| sdk_error("PutItem", e))?;
        Ok(())
    }

    pub(super) async fn claim_connect_state_item(
        &self,
        id: &str,
        now_ms: u64,
    ) -> Result<Option<ConnectState>, StoreError> {
        let deleted = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(state_pk(id)))
            .key("sk", s("state"))
            .condition_expression("attribute_exists(pk) AND exp_ms > :now")
            .expression_attribute_values(":now", n(now_ms))
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        let old = match deleted {
            Ok(out) => out.attributes.unwrap_or_default(),
            Err(e) => {
                return match e.as_service_error() {
                    // Absent (never made, already claimed) or expired.
                    Some(DeleteItemError::ConditionalCheckFailedException(_)) => Ok(None),
                    _ => Err(sdk_error("DeleteItem", e)),
                };
            }
        };
        let data = get_s(&old, "data").ok_or_else(|| corrupt("connect state"))?;
        let state = serde_json::from_str(data).map_err(|_| corrupt("connect state"))?;
        Ok(Some(state))
    }

    pub(super) async fn put_connection_item(
        &self,
        key: &ConnectionKey,
        sealed: &str,
    ) -> Result<(), StoreError> {
        let (pk, sk) = connection_keys(key);
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(pk))
            .item("sk", s(sk))
            .item("sealed", b(sealed.as_bytes().to_vec()))
            .send()
            .await
            .map_err(|e| sdk_error("PutItem", e))?;
        Ok(())
    }

    pub(super) async fn get_connection_item(
        &self,
        key: &ConnectionKey,
    ) -> Result<Option<String>, StoreError> {
        let (pk, sk) = connection_keys(key);
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .consistent_read(true)
            .key("pk", s(pk))
            .key("sk", s(sk))
            .send()
            .await
            .map_err(|e| sdk_error("GetItem", e))?;
        let Some(item) = out.item else {
            return Ok(None);
        };
        match item.get("sealed") {
            Some(AttributeValue::B(bytes)) => String::from_utf8(bytes.clone().into_inner())
                .map(Some)
                .map_err(|_| corrupt("connection")),
            _ => Err(corrupt("connection")),
        }
    }
}
