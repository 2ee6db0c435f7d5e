//! [`AttachmentStore`]: where downloaded attachments are kept with their thread, so a later
//! turn can still use a file after its link expired.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use std::time::Duration;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use runway_core::adapter::StoreError;
use runway_core::{MaybeSend, MaybeSync, adapter::BoxFuture};

/// How long every backend keeps a downloaded attachment (from its download, not tied to the
/// thread's context TTL).
pub const KEEP_ATTACHMENTS_FOR: Duration = Duration::from_secs(30 * 24 * 3600);

/// A fixed-length key for attachment `id` of `thread_key`: the hex SHA-256 of both, with a
/// separator neither can contain. For stores whose keys are short (KV: 512 bytes; one
/// DynamoDB partition per file) while ids and thread keys may each be 256 characters.
pub fn attachment_digest(thread_key: &str, id: &str) -> String {
    let mut h = Sha256::new();
    h.update(thread_key.as_bytes());
    h.update([0]);
    h.update(id.as_bytes());
    hex::encode(h.finalize())
}

/// Downloaded attachments, keyed by thread key and attachment id.
///
/// A file is written once (`put_if_absent`: the first download wins, a second one of the same
/// id is ignored) and read by later turns of the same thread only.
pub trait AttachmentStore: MaybeSend + MaybeSync + 'static {
    /// Keeps `bytes` as attachment `id` of `thread_key`, unless one is kept already.
    fn put_if_absent<'a>(
        &'a self,
        thread_key: &'a str,
        id: &'a str,
        bytes: Bytes,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The bytes kept as attachment `id` of `thread_key`, if any.
    fn get<'a>(
        &'a self,
        thread_key: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>>;
}

/// An [`AttachmentStore`] in the process's memory, bounded in total bytes (the oldest files
/// are forgotten first). Nothing survives a restart, and on Lambda or Workers each instance
/// has its own: a later turn served elsewhere downloads the file again while its link is
/// valid.
#[derive(Debug)]
pub struct MemoryAttachmentStore {
    max_total_bytes: usize,
    inner: Mutex<MemoryFiles>,
}

#[derive(Debug, Default)]
struct MemoryFiles {
    files: HashMap<(String, String), Bytes>,
    order: VecDeque<(String, String)>,
    total: usize,
}

impl MemoryAttachmentStore {
    /// A store holding at most `max_total_bytes` of files.
    pub fn new(max_total_bytes: usize) -> Self {
        Self {
            max_total_bytes,
            inner: Mutex::default(),
        }
    }
}

impl AttachmentStore for MemoryAttachmentStore {
    fn put_if_absent<'a>(
        &'a self,
        thread_key: &'a str,
        id: &'a str,
        bytes: Bytes,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if bytes.len() > self.max_total_bytes {
                return Ok(());
            }
            let mut m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            let key = (thread_key.to_owned(), id.to_owned());
            if m.files.contains_key(&key) {
                return Ok(());
            }
            while m.total + bytes.len() > self.max_total_bytes {
                let Some(old) = m.order.pop_front() else {
                    break;
                };
                if let Some(b) = m.files.remove(&old) {
                    m.total -= b.len();
                }
            }
            m.total += bytes.len();
            m.order.push_back(key.clone());
            m.files.insert(key, bytes);
            Ok(())
        })
    }

    fn get<'a>(
        &'a self,
        thread_key: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>> {
        Box::pin(async move {
            let m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            Ok(m.files
                .get(&(thread_key.to_owned(), id.to_owned()))
                .cloned())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;

    #[test]
    fn first_put_wins_threads_are_apart_and_the_oldest_goes_first() {
        let s = MemoryAttachmentStore::new(10);
        block_on(async {
            s.put_if_absent("a/t1", "f", Bytes::from_static(b"one"))
                .await
                .unwrap();
            s.put_if_absent("a/t1", "f", Bytes::from_static(b"two"))
                .await
                .unwrap();
            assert_eq!(s.get("a/t1", "f").await.unwrap().unwrap(), "one");
            assert_eq!(s.get("a/t2", "f").await.unwrap(), None);
            s.put_if_absent("a/t1", "g", Bytes::from_static(b"12345678"))
                .await
                .unwrap();
            assert_eq!(s.get("a/t1", "f").await.unwrap(), None, "evicted");
            assert_eq!(s.get("a/t1", "g").await.unwrap().unwrap(), "12345678");
            s.put_if_absent("a/t1", "h", Bytes::from(vec![0; 11]))
                .await
                .unwrap();
            assert_eq!(
                s.get("a/t1", "h").await.unwrap(),
                None,
                "over the cap: not kept"
            );
        });
    }
}
