//! The model agent's downloaded attachments in the DynamoDB table: [`AttachmentStore`] for
//! [`DynamoStore`], so a later turn (on any instance) can use a file after its link expired.
//!
//! A file is one head item at `pk = attachment#<sha-256 of thread key and id>`, `sk = file`,
//! with the bytes inline up to [`ITEM_PAYLOAD_BYTES`], else in parts. Unlike a hosted file's
//! parts, each part has a partition of its own (`{head pk}#part#{tag}#{i}`): a 4 MiB file is
//! twelve parts, and twelve in one partition would be throttled by DynamoDB's per-partition
//! write rate. Parts are written first and the head last, conditionally (the first download
//! wins; parts of a losing write expire with their TTL). Kept 30 days.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use bytes::Bytes;
use runway_agents::attachments::{AttachmentStore, KEEP_ATTACHMENTS_FOR, attachment_digest};
use runway_core::adapter::{BoxFuture, StoreError};

use super::DynamoStore;
use super::item::{Item, b, expiry, get_n, n, s};
use super::payload::{ITEM_PAYLOAD_BYTES, PayloadRef, new_tag, part_items, payload_ref};
use super::retry::{backoff, sdk_error};

/// Keys in one `BatchGetItem` (DynamoDB's limit is 100).
const BATCH_GET_KEYS: usize = 100;
/// Rounds of `BatchGetItem` retrying unprocessed keys.
const BATCH_GET_ATTEMPTS: u32 = 6;

fn head_pk(thread_key: &str, id: &str) -> String {
    format!("attachment#{}", attachment_digest(thread_key, id))
}

fn part_pk(head: &str, tag: &str, i: usize) -> String {
    format!("{head}#part#{tag}#{i:04}")
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl DynamoStore {
    async fn put_attachment(
        &self,
        thread_key: &str,
        id: &str,
        bytes: &[u8],
    ) -> Result<(), StoreError> {
        let pk = head_pk(thread_key, id);
        let expires_at_ms = now_ms().saturating_add(KEEP_ATTACHMENTS_FOR.as_millis() as u64);
        let mut head = Item::new();
        head.insert("pk".into(), s(&pk));
        head.insert("sk".into(), s("file"));
        head.insert("size".into(), n(bytes.len() as u64));
        expiry(&mut head, expires_at_ms);
        if bytes.len() <= ITEM_PAYLOAD_BYTES {
            head.insert("data".into(), b(bytes.to_vec()));
        } else {
            let tag = new_tag();
            let key = |i| (part_pk(&pk, &tag, i), "part".to_owned());
            let parts = part_items(bytes, key, None, expires_at_ms);
            head.insert("tag".into(), s(&tag));
            head.insert("parts".into(), n(parts.len() as u64));
            self.batch_put(parts).await?;
        }
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(head))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match put {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(()) // kept already: the first download wins
            }
            Err(e) => Err(sdk_error("PutItem", e)),
        }
    }

    async fn get_attachment(
        &self,
        thread_key: &str,
        id: &str,
    ) -> Result<Option<Bytes>, StoreError> {
        let pk = head_pk(thread_key, id);
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(&pk))
            .key("sk", s("file"))
            .send()
            .await
            .map_err(|e| sdk_error("GetItem", e))?;
        let Some(head) = out.item else {
            return Ok(None);
        };
        if get_n(&head, "exp_ms").unwrap_or(0) <= now_ms() {
            return Ok(None);
        }
        let (tag, parts) = match payload_ref(&head)? {
            PayloadRef::Inline(d) => return Ok(Some(Bytes::copy_from_slice(d))),
            PayloadRef::Parts { tag, parts } => (tag.to_owned(), parts),
        };
        let keys: Vec<String> = (0..parts).map(|i| part_pk(&pk, &tag, i)).collect();
        let mut found: HashMap<String, Vec<u8>> = HashMap::new();
        for chunk in keys.chunks(BATCH_GET_KEYS) {
            let mut pending: Vec<HashMap<String, AttributeValue>> = chunk
                .iter()
                .map(|k| HashMap::from([("pk".into(), s(k)), ("sk".into(), s("part"))]))
                .collect();
            let mut attempt = 0;
            while !pending.is_empty() {
                let request = KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut pending)))
                    .consistent_read(true)
                    .build()
                    .map_err(|e| StoreError::Unavailable(e.to_string()))?;
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request)
                    .send()
                    .await
                    .map_err(|e| sdk_error("BatchGetItem", e))?;
                for item in out
                    .responses
                    .and_then(|mut r| r.remove(&self.table))
                    .unwrap_or_default()
                {
                    if let (Some(AttributeValue::S(k)), Some(AttributeValue::B(d))) =
                        (item.get("pk"), item.get("data"))
                    {
                        found.insert(k.clone(), d.clone().into_inner());
                    }
                }
                pending = out
                    .unprocessed_keys
                    .and_then(|mut u| u.remove(&self.table))
                    .map(|k| k.keys)
                    .unwrap_or_default();
                if !pending.is_empty() {
                    attempt += 1;
                    if attempt >= BATCH_GET_ATTEMPTS {
                        return Err(StoreError::Throttled(
                            "BatchGetItem kept leaving keys unprocessed".into(),
                        ));
                    }
                    tokio::time::sleep(backoff(attempt)).await;
                }
            }
        }
        let mut bytes = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            let part = found.remove(k).ok_or_else(|| {
                StoreError::Corrupt(format!("attachment part {i} of {parts} missing"))
            })?;
            bytes.extend_from_slice(&part);
        }
        Ok(Some(Bytes::from(bytes)))
    }
}

impl AttachmentStore for DynamoStore {
    fn put_if_absent<'a>(
        &'a self,
        thread_key: &'a str,
        id: &'a str,
        bytes: Bytes,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.put_attachment(thread_key, id, &bytes).await })
    }

    fn get<'a>(
        &'a self,
        thread_key: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>> {
        Box::pin(async move { self.get_attachment(thread_key, id).await })
    }
}
