//! [`TurnStore`] in an embedded SQLite database: threads, run records and hosted files
//! survive a restart.
//!
//! Each call runs on tokio's blocking pool inside one transaction. A run claim is a row
//! inserted only if no live row exists, under `BEGIN IMMEDIATE`, so two concurrent deliveries
//! of one run cannot both claim it.

use std::path::Path;
use std::sync::{Arc, Mutex};

use runway_core::{
    HostedFile, StoreError, ThreadContext, TurnClaim, TurnCommit, TurnStart, TurnStore,
};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    run_key     TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    done        INTEGER NOT NULL,
    recording   TEXT,
    expires_at  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS threads (
    thread_key  TEXT PRIMARY KEY,
    context     TEXT NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
    token       TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    mime        TEXT NOT NULL,
    bytes       BLOB NOT NULL,
    expires_at  INTEGER NOT NULL
);
";

/// The SQLite store.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteStore")
    }
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`.
    ///
    /// # Errors
    /// The database cannot be opened or its schema created.
    pub fn open(path: &Path) -> Result<Self, rusqlite::Error> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(SCHEMA)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            // A panic inside a transaction rolls it back when the transaction drops, so the
            // connection is consistent even if the lock was poisoned.
            let mut c = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut c)
        })
        .await
        .map_err(unavailable)?
    }

    /// Deletes every expired row; returns how many went.
    ///
    /// # Errors
    /// The database failed.
    pub async fn purge_expired(&self, now_ms: u64) -> Result<usize, StoreError> {
        self.with(move |c| {
            let now = now_ms as i64;
            let mut n = 0;
            for table in ["runs", "threads", "files"] {
                n += c
                    .execute(
                        &format!("DELETE FROM {table} WHERE expires_at <= ?1"),
                        [now],
                    )
                    .map_err(unavailable)?;
            }
            Ok(n)
        })
        .await
    }
}

impl TurnStore for SqliteStore {
    async fn start_turn(&self, claim: &TurnClaim) -> Result<TurnStart, StoreError> {
        let claim = claim.clone();
        self.with(move |c| {
            let tx = c
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            let now = claim.now_ms as i64;
            let existing: Option<(String, bool, Option<String>)> = tx
                .query_row(
                    "SELECT fingerprint, done, recording FROM runs
                     WHERE run_key = ?1 AND expires_at > ?2",
                    params![claim.run_key, now],
                    |r| Ok((r.get(0)?, r.get::<_, i64>(1)? != 0, r.get(2)?)),
                )
                .optional()
                .map_err(unavailable)?;
            if let Some((fingerprint, done, recording)) = existing {
                return Ok(if fingerprint != claim.fingerprint {
                    TurnStart::Conflict
                } else if done {
                    TurnStart::Finished {
                        recording: recording.unwrap_or_default(),
                    }
                } else {
                    TurnStart::Running
                });
            }
            tx.execute(
                "INSERT OR REPLACE INTO runs (run_key, fingerprint, done, recording, expires_at)
                 VALUES (?1, ?2, 0, NULL, ?3)",
                params![
                    claim.run_key,
                    claim.fingerprint,
                    claim.lease_until_ms as i64
                ],
            )
            .map_err(unavailable)?;
            let context: Option<String> = tx
                .query_row(
                    "SELECT context FROM threads WHERE thread_key = ?1 AND expires_at > ?2",
                    params![claim.thread_key, now],
                    |r| r.get(0),
                )
                .optional()
                .map_err(unavailable)?;
            tx.commit().map_err(unavailable)?;
            let context = context
                .map(|json| {
                    serde_json::from_str::<ThreadContext>(&json)
                        .map_err(|e| StoreError::Corrupt(e.to_string()))
                })
                .transpose()?;
            Ok(TurnStart::Claimed { context })
        })
        .await
    }

    async fn finish_turn(&self, commit: &TurnCommit) -> Result<(), StoreError> {
        let commit = commit.clone();
        self.with(move |c| {
            let context =
                serde_json::to_string(&commit.context).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            let tx = c
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            tx.execute(
                "INSERT OR REPLACE INTO threads (thread_key, context, expires_at) VALUES (?1, ?2, ?3)",
                params![commit.thread_key, context, commit.context_expires_at_ms as i64],
            )
            .map_err(unavailable)?;
            tx.execute(
                "INSERT OR REPLACE INTO runs (run_key, fingerprint, done, recording, expires_at)
                 VALUES (?1, ?2, 1, ?3, ?4)",
                params![
                    commit.run_key,
                    commit.fingerprint,
                    commit.recording,
                    commit.recording_expires_at_ms as i64
                ],
            )
            .map_err(unavailable)?;
            tx.commit().map_err(unavailable)
        })
        .await
    }

    async fn put_file(&self, file: &HostedFile) -> Result<(), StoreError> {
        let file = file.clone();
        self.with(move |c| {
            c.execute(
                "INSERT OR REPLACE INTO files (token, name, mime, bytes, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    file.token,
                    file.name,
                    file.mime,
                    file.bytes,
                    file.expires_at_ms as i64
                ],
            )
            .map(|_| ())
            .map_err(unavailable)
        })
        .await
    }

    async fn get_file(&self, token: &str, now_ms: u64) -> Result<Option<HostedFile>, StoreError> {
        let token = token.to_owned();
        self.with(move |c| {
            c.query_row(
                "SELECT token, name, mime, bytes, expires_at FROM files
                 WHERE token = ?1 AND expires_at > ?2",
                params![token, now_ms as i64],
                |r| {
                    Ok(HostedFile {
                        token: r.get(0)?,
                        name: r.get(1)?,
                        mime: r.get(2)?,
                        bytes: r.get(3)?,
                        expires_at_ms: r.get::<_, i64>(4)? as u64,
                    })
                },
            )
            .optional()
            .map_err(unavailable)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(run: &str, fp: &str, now: u64) -> TurnClaim {
        TurnClaim {
            run_key: run.into(),
            thread_key: "a/t".into(),
            fingerprint: fp.into(),
            now_ms: now,
            lease_until_ms: now + 1000,
        }
    }

    fn commit(run: &str, fp: &str, now: u64) -> TurnCommit {
        TurnCommit {
            run_key: run.into(),
            fingerprint: fp.into(),
            thread_key: "a/t".into(),
            context: ThreadContext {
                turns: 1,
                ..ThreadContext::default()
            },
            context_expires_at_ms: now + 10_000,
            recording: "data: x\n\n".into(),
            recording_expires_at_ms: now + 10_000,
        }
    }

    #[tokio::test]
    async fn claim_replay_conflict_and_expiry() {
        let dir = tempdir();
        let s = SqliteStore::open(&dir.join("db")).unwrap();
        assert_eq!(
            s.start_turn(&claim("r", "f", 0)).await.unwrap(),
            TurnStart::Claimed { context: None }
        );
        assert_eq!(
            s.start_turn(&claim("r", "f", 10)).await.unwrap(),
            TurnStart::Running
        );
        assert_eq!(
            s.start_turn(&claim("r", "g", 10)).await.unwrap(),
            TurnStart::Conflict
        );
        // The lease lapsed (a crashed delivery): the run can be claimed again.
        assert!(matches!(
            s.start_turn(&claim("r", "f", 5000)).await.unwrap(),
            TurnStart::Claimed { .. }
        ));
        s.finish_turn(&commit("r", "f", 5000)).await.unwrap();
        assert_eq!(
            s.start_turn(&claim("r", "f", 5001)).await.unwrap(),
            TurnStart::Finished {
                recording: "data: x\n\n".into()
            }
        );
        let TurnStart::Claimed { context } = s.start_turn(&claim("r2", "f", 5002)).await.unwrap()
        else {
            panic!("r2 must be claimable")
        };
        assert_eq!(context.unwrap().turns, 1);
        // Expired rows are invisible before they are purged.
        let TurnStart::Claimed { context } = s.start_turn(&claim("r3", "f", 20_000)).await.unwrap()
        else {
            panic!("r3 must be claimable")
        };
        assert!(context.is_none());
        assert!(s.purge_expired(100_000).await.unwrap() >= 2);
    }

    fn tempdir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "runway-sqlite-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
