//! [`TurnStore`] in an embedded SQLite database: threads, run records and hosted files
//! survive a restart.
//!
//! Turns and threads are runway-core's shared SQLite store ([`SqlStore`]: the same schema and
//! statements a Cloudflare thread's Durable Object runs), each call inside one
//! `BEGIN IMMEDIATE` transaction, so claims and commits are atomic. Hosted files are this
//! store's own `files` table.
//!
//! Every call runs on the connection's own thread, calls queued together share a commit
//! ([`crate::sqlite_thread`]).

use std::path::Path;

use runway_core::adapter::{
    ActionClaim, CommitOutcome, HostedFile, StoreError, TurnClaim, TurnCommit, TurnStart, TurnStore,
};
use runway_core::store::sql_store::SqlStore;
use runway_core::store::tally::{Tally, TallyKey, TurnTake};
use runway_core::store::{ConnectState, ConnectionFilter, ConnectionKey, StoredConnection};
use rusqlite::{Connection, OptionalExtension, params};

use crate::sqlite_thread::ConnectionThread;

const FILES_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files (
    token       TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    mime        TEXT NOT NULL,
    bytes       BLOB NOT NULL,
    expires_at  INTEGER NOT NULL
);
";

/// Prepared statements kept per connection: more than the store has.
const STATEMENT_CACHE: usize = 64;

/// The SQLite store.
#[derive(Clone)]
pub struct SqliteStore {
    db: ConnectionThread,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteStore")
    }
}

/// Why [`SqliteStore::open`] failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The database could not be opened or its schema created.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// The turn tables could not be created or migrated.
    #[error("cannot create or migrate the turn tables: {0}")]
    Schema(#[from] runway_core::store::sql::DbError),
    /// The thread owning the connection could not be started.
    #[error("cannot start the database thread: {0}")]
    Thread(std::io::Error),
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`.
    ///
    /// # Errors
    /// The database cannot be opened or its schema created, or its thread cannot start.
    pub fn open(path: &Path) -> Result<Self, OpenError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // Every statement runs through rusqlite's prepared-statement cache (`prepare_cached`):
        // room for all of them (about twenty), so none is evicted and parsed again.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        conn.execute_batch(FILES_SCHEMA)?;
        // The turn tables, and the columns added since a database from before was written.
        SqlStore::open(&conn)?;
        let db = ConnectionThread::start(conn).map_err(OpenError::Thread)?;
        Ok(Self { db })
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.db.call(f).await
    }

    /// Runs `f` on the shared turn tables, atomically: committed only if `f` succeeds (inside
    /// the transaction of the calls queued with it; see [`crate::sqlite_thread`]).
    async fn in_transaction<T: Send + 'static>(
        &self,
        f: impl FnOnce(&SqlStore<&Connection>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.db.call(move |c| f(&SqlStore::over(c))).await
    }

    /// Frees the runs a killed earlier process left running (see
    /// [`SqlStore::release_orphaned_claims`]); returns how many. Only for the data directory's
    /// lock holder.
    ///
    /// # Errors
    /// The database failed.
    pub async fn release_orphaned_claims(&self) -> Result<usize, StoreError> {
        self.in_transaction(|db| Ok(db.release_orphaned_claims()?))
            .await
    }

    /// Deletes every expired row; returns how many files went (turn rows are counted by
    /// nobody: they are gone either way).
    ///
    /// # Errors
    /// The database failed.
    pub async fn purge_expired(&self, now_ms: u64) -> Result<usize, StoreError> {
        self.in_transaction(move |db| {
            db.purge(now_ms)?;
            db.sql()
                .execute("DELETE FROM files WHERE expires_at <= ?1", [now_ms as i64])
                .map_err(unavailable)
        })
        .await
    }
}

impl TurnStore for SqliteStore {
    async fn start_turn(&self, claim: &TurnClaim) -> Result<TurnStart, StoreError> {
        let claim = claim.clone();
        self.in_transaction(move |db| Ok(db.start(&claim)?)).await
    }

    async fn finish_turn(&self, commit: &TurnCommit) -> Result<CommitOutcome, StoreError> {
        let commit = commit.clone();
        self.in_transaction(move |db| Ok(db.finish(&commit)?)).await
    }

    async fn latest_arrival(&self, thread_key: &str) -> Result<u64, StoreError> {
        let thread_key = thread_key.to_owned();
        self.with(move |c| Ok(SqlStore::over(c).latest_arrival(&thread_key)?))
            .await
    }

    async fn claim_action(&self, claim: &ActionClaim) -> Result<bool, StoreError> {
        let claim = claim.clone();
        self.in_transaction(move |db| Ok(db.claim_action(&claim)?))
            .await
    }

    async fn put_connect_state(&self, state: &ConnectState) -> Result<(), StoreError> {
        let state = state.clone();
        self.in_transaction(move |db| Ok(db.put_connect_state(&state)?))
            .await
    }

    async fn claim_connect_state(
        &self,
        id: &str,
        now_ms: u64,
    ) -> Result<Option<ConnectState>, StoreError> {
        let id = id.to_owned();
        self.in_transaction(move |db| Ok(db.claim_connect_state(&id, now_ms)?))
            .await
    }

    async fn put_connection(&self, key: &ConnectionKey, sealed: &str) -> Result<(), StoreError> {
        let (key, sealed) = (key.clone(), sealed.to_owned());
        self.in_transaction(move |db| Ok(db.put_connection(&key, &sealed)?))
            .await
    }

    async fn get_connection(&self, key: &ConnectionKey) -> Result<Option<String>, StoreError> {
        let key = key.clone();
        self.with(move |c| Ok(SqlStore::over(c).get_connection(&key)?))
            .await
    }

    async fn list_connections(
        &self,
        filter: &ConnectionFilter,
        after: Option<&ConnectionKey>,
        limit: usize,
    ) -> Result<Vec<StoredConnection>, StoreError> {
        let (filter, after) = (filter.clone(), after.cloned());
        self.with(move |c| {
            Ok(SqlStore::over(c).list_connections(&filter, after.as_ref(), limit)?)
        })
        .await
    }

    async fn delete_connection(&self, key: &ConnectionKey) -> Result<bool, StoreError> {
        let key = key.clone();
        self.in_transaction(move |db| Ok(db.delete_connection(&key)?))
            .await
    }

    async fn take_turns(
        &self,
        takes: &[TurnTake],
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<bool, StoreError> {
        let (takes, write_id) = (takes.to_vec(), write_id.to_owned());
        self.in_transaction(move |db| Ok(db.take_turns(&takes, expires_at_ms, &write_id)?))
            .await
    }

    async fn add_tally(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<(), StoreError> {
        let (key, tally, write_id) = (key.clone(), *tally, write_id.to_owned());
        self.in_transaction(move |db| Ok(db.add_tally(&key, &tally, expires_at_ms, &write_id)?))
            .await
    }

    async fn tallies(&self, part: &str, now_ms: u64) -> Result<Vec<(String, Tally)>, StoreError> {
        let part = part.to_owned();
        self.with(move |c| Ok(SqlStore::over(c).tallies(&part, now_ms)?))
            .await
    }

    async fn put_file(&self, file: &HostedFile) -> Result<(), StoreError> {
        let file = file.clone();
        self.with(move |c| {
            c.prepare_cached(
                "INSERT OR REPLACE INTO files (token, name, mime, bytes, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    file.token,
                    file.name,
                    file.mime,
                    file.bytes,
                    file.expires_at_ms as i64
                ])
            })
            .map(|_| ())
            .map_err(unavailable)
        })
        .await
    }

    async fn get_file(&self, token: &str, now_ms: u64) -> Result<Option<HostedFile>, StoreError> {
        let token = token.to_owned();
        self.with(move |c| {
            c.prepare_cached(
                "SELECT token, name, mime, bytes, expires_at FROM files
                 WHERE token = ?1 AND expires_at > ?2",
            )
            .and_then(|mut stmt| {
                stmt.query_row(params![token, now_ms as i64], |r| {
                    Ok(HostedFile {
                        token: r.get(0)?,
                        name: r.get(1)?,
                        mime: r.get(2)?,
                        bytes: r.get(3)?,
                        expires_at_ms: r.get::<_, i64>(4)? as u64,
                    })
                })
                .optional()
            })
            .map_err(unavailable)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir(name: &str) -> std::path::PathBuf {
        let d =
            std::env::temp_dir().join(format!("runway-sqlite-test-{}-{name}", std::process::id(),));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn passes_the_store_conformance_suite() {
        let dir = tempdir("conformance");
        let s = SqliteStore::open(&dir.join("db")).unwrap();
        runway_core::store::conformance::run_all(&s, "sqlite").await;
        runway_core::store::conformance::run_vault(&s, "sqlite").await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_limit_holds_across_two_stores_on_one_database() {
        // Two stores (two connections, as two processes would have) on one database: the
        // turns-per-minute counter is taken atomically across them.
        let dir = tempdir("two");
        let path = dir.join("db");
        let (a, b) = (
            SqliteStore::open(&path).unwrap(),
            SqliteStore::open(&path).unwrap(),
        );
        let take = TurnTake {
            key: TallyKey::new("meter/workspace/w", "m/1"),
            limit: 10,
        };
        let takes = (0..40).map(|i| {
            let s = if i % 2 == 0 { a.clone() } else { b.clone() };
            let take = take.clone();
            async move {
                s.take_turns(&[take], u64::MAX / 2, &format!("w{i}"))
                    .await
                    .unwrap()
            }
        });
        let taken = futures::future::join_all(takes).await;
        assert_eq!(taken.iter().filter(|t| **t).count(), 10);
        assert_eq!(
            a.tallies("meter/workspace/w", 0).await.unwrap()[0].1.turns,
            10
        );
    }

    #[tokio::test]
    async fn purge_deletes_expired_rows() {
        let dir = tempdir("purge");
        let s = SqliteStore::open(&dir.join("db")).unwrap();
        let c = runway_core::store::conformance::claim("r", "a/t", "f", 0, "k");
        let started = s.start_turn(&c).await.unwrap();
        let commit = runway_core::store::conformance::commit(&c, &started, "q", "a");
        s.finish_turn(&commit).await.unwrap();
        s.purge_expired(100_000).await.unwrap();
        let c = runway_core::store::conformance::claim("r2", "a/t", "f", 100_001, "k2");
        assert!(matches!(
            s.start_turn(&c).await.unwrap(),
            TurnStart::Claimed {
                context: None,
                version: 0,
                arrival: 1
            }
        ));
    }

    #[tokio::test]
    async fn a_database_from_before_thread_owners_opens_and_its_next_turn_owns_the_thread() {
        // The previous release's `turn_threads` (no `workspace` column), one stored thread.
        let dir = tempdir("owners");
        let path = dir.join("db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE turn_threads (thread_key TEXT PRIMARY KEY, version INTEGER NOT NULL,
                 arrivals INTEGER NOT NULL, parts INTEGER NOT NULL,
                 context_expires_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
             CREATE TABLE turn_parts (owner TEXT NOT NULL, seq INTEGER NOT NULL,
                 data TEXT NOT NULL, PRIMARY KEY (owner, seq));
             INSERT INTO turn_threads VALUES ('a/t', 3, 3, 1, 99999999999999, 99999999999999);",
        )
        .unwrap();
        let context = runway_core::ThreadContext {
            turns: 3,
            ..Default::default()
        };
        old.execute(
            "INSERT INTO turn_parts VALUES ('t/a/t', 0, ?1)",
            [serde_json::to_string(&context).unwrap()],
        )
        .unwrap();
        drop(old);
        let s = SqliteStore::open(&path).unwrap();
        // Opening it again finds the column there.
        drop(SqliteStore::open(&path).unwrap());
        let from = |ws: &str, run: &str| {
            runway_core::store::conformance::claim_from(ws, run, "a/t", "f", 1, run)
        };
        let first = s.start_turn(&from("w1", "r1")).await.unwrap();
        assert!(
            matches!(
                &first,
                TurnStart::Claimed { context: Some(c), version: 3, arrival: 4 } if c.turns == 3
            ),
            "{first:?}"
        );
        assert_eq!(
            s.start_turn(&from("w2", "r2")).await.unwrap(),
            TurnStart::OtherWorkspace
        );
    }

    #[tokio::test]
    async fn a_database_from_before_thread_versions_opens_and_serves() {
        // The schema of the previous release: its tables are left alone, never read.
        let dir = tempdir("old");
        let path = dir.join("db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE runs (run_key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL,
                 done INTEGER NOT NULL, recording TEXT, expires_at INTEGER NOT NULL);
             CREATE TABLE threads (thread_key TEXT PRIMARY KEY, context TEXT NOT NULL,
                 expires_at INTEGER NOT NULL);
             INSERT INTO threads VALUES ('a/t', '{\"turns\":1}', 99999999999999);
             INSERT INTO runs VALUES ('r', 'f', 1, 'data: x', 99999999999999);",
        )
        .unwrap();
        drop(old);
        let s = SqliteStore::open(&path).unwrap();
        let c = runway_core::store::conformance::claim("r", "a/t", "f", 1, "k");
        assert!(matches!(
            s.start_turn(&c).await.unwrap(),
            TurnStart::Claimed { context: None, .. }
        ));
        s.purge_expired(2).await.unwrap();
    }

    #[tokio::test]
    async fn a_tally_table_from_before_estimated_tokens_gets_the_column() {
        // turn_tallies as the previous release made it: its rows keep counting.
        let dir = tempdir("tally-columns");
        let path = dir.join("db");
        let old = Connection::open(&path).unwrap();
        let columns: Vec<String> = Tally::FIELDS
            .iter()
            .filter(|f| **f != "estimated_tokens")
            .map(|f| format!("{f} INTEGER NOT NULL DEFAULT 0"))
            .collect();
        old.execute_batch(&format!(
            "CREATE TABLE turn_tallies (part TEXT NOT NULL, item TEXT NOT NULL, {},
                 expires_at INTEGER NOT NULL, PRIMARY KEY (part, item));
             INSERT INTO turn_tallies (part, item, input_tokens, expires_at)
                 VALUES ('usage/2026-12-03', 'w/a', 5, 9000);",
            columns.join(", ")
        ))
        .unwrap();
        drop(old);
        let s = SqliteStore::open(&path).unwrap();
        let key = TallyKey::new("usage/2026-12-03", "w/a");
        let more = Tally {
            input_tokens: 7,
            estimated_tokens: 7,
            ..Tally::default()
        };
        s.add_tally(&key, &more, 9000, "w1").await.unwrap();
        let rows = s.tallies(&key.part, 1000).await.unwrap();
        assert_eq!(
            (rows[0].1.input_tokens, rows[0].1.estimated_tokens),
            (12, 7)
        );
        // Opened again: the column is there, nothing to add.
        drop(s);
        SqliteStore::open(&path).unwrap();
    }
}
