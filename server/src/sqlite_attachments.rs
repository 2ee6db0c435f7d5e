//! [`SqliteAttachmentStore`]: the model agent's downloaded attachments in the data
//! directory (`attachments.sqlite3`), so a later turn can use a file after its link expired,
//! and after a restart. The statements are runway-core's ([`SqlAttachmentFiles`]).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use runway_agents::attachments::sql_files::{SCHEMA, SqlAttachmentFiles};
use runway_agents::attachments::{AttachmentStore, KEEP_ATTACHMENTS_FOR};
use runway_core::adapter::{BoxFuture, Runtime, StoreError, TokioRuntime};
use rusqlite::Connection;

/// Attachments in SQLite, on tokio's blocking pool.
#[derive(Clone)]
pub struct SqliteAttachmentStore {
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteAttachmentStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteAttachmentStore")
    }
}

impl SqliteAttachmentStore {
    /// Opens (creating if needed) the database at `path` and its directory.
    ///
    /// # Errors
    /// The directory or the database cannot be created or opened.
    pub fn open(path: &Path) -> Result<Self, String> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let open = || -> Result<Connection, rusqlite::Error> {
            let conn = Connection::open(path)?;
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.busy_timeout(Duration::from_secs(5))?;
            for stmt in SCHEMA {
                conn.execute_batch(stmt)?;
            }
            Ok(conn)
        };
        let conn = open().map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&SqlAttachmentFiles<&Connection>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let c = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&SqlAttachmentFiles::over(&*c))
        })
        .await
        .map_err(|e| StoreError::Unavailable(e.to_string()))?
    }
}

impl AttachmentStore for SqliteAttachmentStore {
    fn put_if_absent<'a>(
        &'a self,
        thread_key: &'a str,
        id: &'a str,
        bytes: Bytes,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let (key, id) = (thread_key.to_owned(), id.to_owned());
        Box::pin(self.with(move |files| {
            let now = TokioRuntime.now_ms();
            let until = now.saturating_add(KEEP_ATTACHMENTS_FOR.as_millis() as u64);
            Ok(files.put_if_absent(&key, &id, &bytes, now, until)?)
        }))
    }

    fn get<'a>(
        &'a self,
        thread_key: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>> {
        let (key, id) = (thread_key.to_owned(), id.to_owned());
        Box::pin(self.with(move |files| {
            Ok(files
                .get(&key, &id, TokioRuntime.now_ms())?
                .map(Bytes::from))
        }))
    }
}
