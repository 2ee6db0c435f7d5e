//! Downloaded attachments in SQLite ([`SqlAttachmentFiles`]): the statements the native
//! [`AttachmentStore`](super::AttachmentStore) of `runway serve` runs on rusqlite, written
//! against the [`Sql`] trait like the shared turn store ([`runway_core::store::sql_store`]).
//!
//! Bytes are kept base64-encoded (the [`Sql`] trait carries integers and text only), each row
//! expiring `ttl` after it was written; expired rows are deleted at the next write.

use base64::Engine as _;

use runway_core::store::sql::{DbError, Sql, SqlValue};

/// The table, created idempotently (one statement per entry).
pub const SCHEMA: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS attachment_files (
        thread_key  TEXT NOT NULL,
        id          TEXT NOT NULL,
        bytes_b64   TEXT NOT NULL,
        expires_at  INTEGER NOT NULL,
        PRIMARY KEY (thread_key, id)
    )",
    "CREATE INDEX IF NOT EXISTS attachment_files_expiry ON attachment_files (expires_at)",
];

/// The attachment statements over a SQLite connection.
#[derive(Debug)]
pub struct SqlAttachmentFiles<S> {
    sql: S,
}

impl<S: Sql> SqlAttachmentFiles<S> {
    /// Statements on `sql` (whose schema includes [`SCHEMA`]).
    pub fn over(sql: S) -> Self {
        Self { sql }
    }

    /// Keeps `bytes` as attachment `id` of `thread_key` until `expires_at_ms`, unless a live
    /// row is there already; deletes expired rows first.
    ///
    /// # Errors
    /// The database failed.
    pub fn put_if_absent(
        &self,
        thread_key: &str,
        id: &str,
        bytes: &[u8],
        now_ms: u64,
        expires_at_ms: u64,
    ) -> Result<(), DbError> {
        self.sql.exec(
            "DELETE FROM attachment_files WHERE expires_at <= ?",
            &[SqlValue::from(now_ms)],
        )?;
        let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
        self.sql.exec(
            "INSERT OR IGNORE INTO attachment_files (thread_key, id, bytes_b64, expires_at) \
             VALUES (?, ?, ?, ?)",
            &[
                SqlValue::from(thread_key),
                SqlValue::from(id),
                SqlValue::Text(encoded),
                SqlValue::from(expires_at_ms),
            ],
        )?;
        Ok(())
    }

    /// The bytes of attachment `id` of `thread_key`, unless absent or expired at `now_ms`.
    ///
    /// # Errors
    /// The database failed, or the row is not what [`Self::put_if_absent`] wrote.
    pub fn get(&self, thread_key: &str, id: &str, now_ms: u64) -> Result<Option<Vec<u8>>, DbError> {
        let rows = self.sql.exec(
            "SELECT bytes_b64 FROM attachment_files \
             WHERE thread_key = ? AND id = ? AND expires_at > ?",
            &[
                SqlValue::from(thread_key),
                SqlValue::from(id),
                SqlValue::from(now_ms),
            ],
        )?;
        let Some(value) = rows.into_iter().next().and_then(|r| r.into_iter().next()) else {
            return Ok(None);
        };
        base64::engine::general_purpose::STANDARD
            .decode(value.text()?)
            .map(Some)
            .map_err(|e| DbError::Corrupt(format!("attachment bytes: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_write_wins_rows_expire_and_threads_are_apart() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for stmt in SCHEMA {
            conn.execute_batch(stmt).unwrap();
        }
        let files = SqlAttachmentFiles::over(&conn);
        files
            .put_if_absent("a/t", "f", b"\x89PNG first", 0, 100)
            .unwrap();
        files.put_if_absent("a/t", "f", b"second", 0, 100).unwrap();
        assert_eq!(
            files.get("a/t", "f", 50).unwrap().unwrap(),
            b"\x89PNG first"
        );
        assert_eq!(files.get("a/u", "f", 50).unwrap(), None);
        assert_eq!(files.get("a/t", "f", 100).unwrap(), None, "expired");
        // An expired row is replaced by the next write.
        files.put_if_absent("a/t", "f", b"again", 150, 300).unwrap();
        assert_eq!(files.get("a/t", "f", 200).unwrap().unwrap(), b"again");
    }
}
