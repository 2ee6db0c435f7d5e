//! [`KvAttachmentStore`]: the model agent's downloaded attachments on Workers, in the same KV
//! namespace as hosted files (binding `RUNWAY_FILES`), under keys no hosted-file token can
//! name, kept 30 days.
//!
//! KV has no conditional write: `put_if_absent` reads first and writes when nothing is there,
//! so two turns racing on one file may both write it. Both write the bytes of the same
//! attachment id, so either is right. KV is eventually consistent: a file kept by a turn in
//! one location may take up to about a minute to be visible in another, and a turn there
//! downloads it again while its link is valid.

use bytes::Bytes;
use runway_agents::attachments::{AttachmentStore, KEEP_ATTACHMENTS_FOR, attachment_digest};
use runway_core::adapter::{BoxFuture, StoreError};
use worker::kv::KvStore;

/// Attachments in Workers KV.
pub struct KvAttachmentStore {
    kv: KvStore,
}

impl std::fmt::Debug for KvAttachmentStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KvAttachmentStore")
    }
}

impl KvAttachmentStore {
    /// Attachments in `kv`.
    pub fn new(kv: KvStore) -> Self {
        Self { kv }
    }

    /// `attachment:` and the SHA-256 of thread key and id: fixed length (KV keys are at most
    /// 512 bytes, ids up to 256 characters each), and never a hosted file's `file/` key.
    fn key(thread_key: &str, id: &str) -> String {
        format!("attachment:{}", attachment_digest(thread_key, id))
    }
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("{what}: {e}"))
}

impl AttachmentStore for KvAttachmentStore {
    fn put_if_absent<'a>(
        &'a self,
        thread_key: &'a str,
        id: &'a str,
        bytes: Bytes,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let key = Self::key(thread_key, id);
            let there = self
                .kv
                .get(&key)
                .bytes()
                .await
                .map_err(|e| unavailable("kv get", e))?;
            if there.is_some() {
                return Ok(());
            }
            self.kv
                .put_bytes(&key, &bytes)
                .map_err(|e| unavailable("kv put", e))?
                .expiration_ttl(KEEP_ATTACHMENTS_FOR.as_secs())
                .execute()
                .await
                .map_err(|e| unavailable("kv put", e))
        })
    }

    fn get<'a>(
        &'a self,
        thread_key: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>> {
        Box::pin(async move {
            let bytes = self
                .kv
                .get(&Self::key(thread_key, id))
                .bytes()
                .await
                .map_err(|e| unavailable("kv get", e))?;
            Ok(bytes.map(Bytes::from))
        })
    }
}
