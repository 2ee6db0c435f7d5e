//! Hosted files: a `file` head item (name, type, size) at `file#{token}`, the bytes inline or
//! in parts written before the head, so a file is visible only once complete.

use runway_core::adapter::{HostedFile, StoreError};

use super::DynamoStore;
use super::item::{Item, b, expiry, get_n, get_s, n, s};
use super::payload::{ITEM_PAYLOAD_BYTES, PayloadRef, assemble, new_tag, part_items, payload_ref};
use super::retry::sdk_error;

/// Largest hosted file: 2 parts (700 KB). Every part of a file shares one partition key, and
/// one DynamoDB partition takes at most 1,000 write units (1 KB each) per second: a larger
/// file would be throttled part by part and slow the turn for seconds. The adapter lowers the
/// core's `max_file_bytes` to this, so a larger file is refused before any write, with an
/// error log naming both sizes.
pub const MAX_FILE_BYTES: usize = 2 * ITEM_PAYLOAD_BYTES;

impl DynamoStore {
    pub(super) async fn put_hosted_file(&self, file: &HostedFile) -> Result<(), StoreError> {
        if file.bytes.len() > MAX_FILE_BYTES {
            return Err(StoreError::TooLarge(format!(
                "file of {} bytes (at most {MAX_FILE_BYTES})",
                file.bytes.len()
            )));
        }
        let pk = format!("file#{}", file.token);
        let mut head = Item::new();
        head.insert("pk".into(), s(&pk));
        head.insert("sk".into(), s("file"));
        head.insert("name".into(), s(&file.name));
        head.insert("mime".into(), s(&file.mime));
        head.insert("size".into(), n(file.bytes.len() as u64));
        expiry(&mut head, file.expires_at_ms);
        if file.bytes.len() <= ITEM_PAYLOAD_BYTES {
            head.insert("data".into(), b(file.bytes.clone()));
        } else {
            let tag = new_tag();
            let key = |i| (pk.clone(), format!("part#{tag}#{i:04}"));
            let parts = part_items(&file.bytes, key, None, file.expires_at_ms);
            head.insert("tag".into(), s(&tag));
            head.insert("parts".into(), n(parts.len() as u64));
            self.batch_put(parts).await?;
        }
        // The head last: the file is visible only once every part is stored.
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(head))
            .send()
            .await
            .map_err(|e| sdk_error("PutItem", e))?;
        Ok(())
    }

    pub(super) async fn get_hosted_file(
        &self,
        token: &str,
        now_ms: u64,
    ) -> Result<Option<HostedFile>, StoreError> {
        let pk = format!("file#{token}");
        let items = self.query_all(&pk, None).await?;
        let Some(head) = items.iter().find(|i| get_s(i, "sk") == Some("file")) else {
            return Ok(None);
        };
        let expires_at_ms = get_n(head, "exp_ms").unwrap_or(0);
        if expires_at_ms <= now_ms {
            return Ok(None);
        }
        let bytes = match payload_ref(head)? {
            PayloadRef::Inline(d) => d.to_vec(),
            PayloadRef::Parts { tag, parts } => {
                assemble(&items, &format!("part#{tag}#"), parts, None)?
            }
        };
        Ok(Some(HostedFile {
            token: token.to_owned(),
            name: get_s(head, "name").unwrap_or("file").to_owned(),
            mime: get_s(head, "mime")
                .unwrap_or("application/octet-stream")
                .to_owned(),
            bytes,
            expires_at_ms,
        }))
    }
}
