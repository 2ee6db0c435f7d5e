//! Reading a thread: one consistent `Query` of its partition gives the context (inline or in
//! parts), its version, the arrivals count, and the superseded turns' messages, folded into the
//! context in arrival order.

use aws_sdk_dynamodb::types::AttributeValue;
use runway_core::ThreadContext;
use runway_core::adapter::StoreError;
use runway_core::store::turn_state::ThreadHead;

use super::DynamoStore;
use super::item::{Item, get_n, get_s, s};
use super::payload::{PayloadRef, assemble, inflate, payload_ref};
use super::retry::sdk_error;

impl DynamoStore {
    /// The thread as stored: context (`None` if absent or expired at `now_ms`) and head.
    pub(super) async fn read_thread(
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

    /// The `live` item's arrival count: one small consistent read, made by the supersede check.
    pub(super) async fn arrivals(&self, thread_key: &str) -> Result<u64, StoreError> {
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
}

/// The stored context among a thread's items (`None` if absent or expired at `now_ms`), its
/// version (0 if absent; a context written before versions existed is version 0 too), and the
/// sort keys of the superseded turns' `msg#` items folded into it (in arrival order, each
/// once: a message already in the context is not inserted again).
pub(super) fn decode_thread(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::item::{b, expiry};
    use crate::store::payload::deflate;

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
}
