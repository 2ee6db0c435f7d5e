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
//! - Listing one workspace's entries is a `Query` of its partition (a user's: with
//!   `begins_with(sk, ["user",)`); listing every workspace's is a `Scan` of the table filtered
//!   on the `connection#` partitions (an operator's rare command: it reads the whole table,
//!   page after page). Either goes on after the last entry listed (`ExclusiveStartKey`).
//!   Deleting is one `DeleteItem`.

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use runway_core::adapter::StoreError;
use runway_core::store::{ConnectState, ConnectionFilter, ConnectionKey, StoredConnection};

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

/// The prefix of the sort keys of `user`'s entries: `["user",`.
fn user_prefix(user: &str) -> String {
    let mut p = serde_json::to_string(&[user]).expect("a string serializes as JSON");
    p.pop();
    p.push(',');
    p
}

/// The item's key as `ExclusiveStartKey`.
fn start_key(key: &ConnectionKey) -> Item {
    let (pk, sk) = connection_keys(key);
    Item::from([("pk".to_owned(), s(pk)), ("sk".to_owned(), s(sk))])
}

/// A vault entry item as listed.
fn stored_connection(item: &Item) -> Result<StoredConnection, StoreError> {
    let workspace = get_s(item, "pk")
        .and_then(|pk| pk.strip_prefix("connection#"))
        .ok_or_else(|| corrupt("connection"))?;
    let (user, provider): (String, String) = get_s(item, "sk")
        .and_then(|sk| serde_json::from_str(sk).ok())
        .ok_or_else(|| corrupt("connection"))?;
    let sealed = match item.get("sealed") {
        Some(AttributeValue::B(bytes)) => {
            String::from_utf8(bytes.clone().into_inner()).map_err(|_| corrupt("connection"))?
        }
        _ => return Err(corrupt("connection")),
    };
    Ok(StoredConnection {
        key: ConnectionKey {
            workspace: workspace.to_owned(),
            user,
            provider,
        },
        sealed,
    })
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

    pub(super) async fn list_connection_items(
        &self,
        filter: &ConnectionFilter,
        after: Option<&ConnectionKey>,
        limit: usize,
    ) -> Result<Vec<StoredConnection>, StoreError> {
        let mut found: Vec<StoredConnection> = Vec::new();
        let mut start = after.map(start_key);
        let page = i32::try_from(limit.clamp(1, 1000)).unwrap_or(1000);
        while found.len() < limit {
            let (items, next) = match &filter.workspace {
                Some(w) => {
                    let mut q = self
                        .client
                        .query()
                        .table_name(&self.table)
                        .consistent_read(true)
                        .limit(page)
                        .expression_attribute_values(":pk", s(format!("connection#{w}")))
                        .set_exclusive_start_key(start.take());
                    q = match &filter.user {
                        Some(u) => q
                            .key_condition_expression("pk = :pk AND begins_with(sk, :u)")
                            .expression_attribute_values(":u", s(user_prefix(u))),
                        None => q.key_condition_expression("pk = :pk"),
                    };
                    let out = q.send().await.map_err(|e| sdk_error("Query", e))?;
                    (out.items, out.last_evaluated_key)
                }
                None => {
                    let mut q = self
                        .client
                        .scan()
                        .table_name(&self.table)
                        .consistent_read(true)
                        .expression_attribute_values(":c", s("connection#"))
                        .set_exclusive_start_key(start.take());
                    q = match &filter.user {
                        Some(u) => q
                            .filter_expression("begins_with(pk, :c) AND begins_with(sk, :u)")
                            .expression_attribute_values(":u", s(user_prefix(u))),
                        None => q.filter_expression("begins_with(pk, :c)"),
                    };
                    let out = q.send().await.map_err(|e| sdk_error("Scan", e))?;
                    (out.items, out.last_evaluated_key)
                }
            };
            for item in items.unwrap_or_default() {
                found.push(stored_connection(&item)?);
            }
            match next {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        // A page read past `limit` ends the listing at the last entry given: the next call
        // goes on after it.
        found.truncate(limit);
        Ok(found)
    }

    pub(super) async fn delete_connection_item(
        &self,
        key: &ConnectionKey,
    ) -> Result<bool, StoreError> {
        let (pk, sk) = connection_keys(key);
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(sk))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| sdk_error("DeleteItem", e))?;
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }
}
