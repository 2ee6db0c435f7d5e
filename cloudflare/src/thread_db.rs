//! One thread's storage, as it lives in that thread's Durable Object (SQLite-backed).
//!
//! Written against the tiny [`Sql`] trait so the exact statements the Durable Object runs are
//! also unit-tested natively on an in-memory SQLite database. Semantics are those of the
//! `runway` server's SQLite store: a claim is a `runs` row inserted only when no live row
//! exists; a finished run keeps its recording until it expires; expiry is exact on read.
//!
//! Every method is synchronous. Inside a Durable Object, statements run without an `await`
//! between them are atomic with respect to other requests to the object and are committed
//! together (write coalescing), so two concurrent deliveries of one run cannot both claim it.
//!
//! Long texts (recordings up to Console's 8 MiB stream limit, the thread context) are stored
//! in `parts` rows of at most [`PART_BYTES`] (a row holds at most 2 MB).

use crate::parts::{PART_BYTES, split};
use crate::wire::{FinishRequest, StartReply, StartRequest};

/// A value bound to or read from a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// `NULL`.
    Null,
    /// An integer (timestamps in ms are far inside JavaScript's safe range).
    Int(i64),
    /// Text.
    Text(String),
}

impl SqlValue {
    fn int(&self) -> Result<i64, DbError> {
        match self {
            Self::Int(i) => Ok(*i),
            other => Err(DbError::Corrupt(format!(
                "expected an integer, got {other:?}"
            ))),
        }
    }

    fn text(self) -> Result<String, DbError> {
        match self {
            Self::Text(s) => Ok(s),
            other => Err(DbError::Corrupt(format!("expected text, got {other:?}"))),
        }
    }
}

impl From<&str> for SqlValue {
    fn from(s: &str) -> Self {
        Self::Text(s.to_owned())
    }
}

impl From<u64> for SqlValue {
    fn from(n: u64) -> Self {
        Self::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

/// A SQLite connection: the Durable Object's `ctx.storage.sql`, or rusqlite in tests.
pub trait Sql {
    /// Runs one statement with positional `?` parameters; returns every row.
    ///
    /// # Errors
    /// The statement failed.
    fn exec(&self, query: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, DbError>;
}

/// A failure of the thread's database.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DbError {
    /// SQLite refused a statement.
    #[error("sql: {0}")]
    Sql(String),
    /// Stored rows are not what this code wrote.
    #[error("corrupt: {0}")]
    Corrupt(String),
}

const SCHEMA: [&str; 3] = [
    "CREATE TABLE IF NOT EXISTS runs (
        run_key     TEXT PRIMARY KEY,
        fingerprint TEXT NOT NULL,
        done        INTEGER NOT NULL,
        parts       INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS threads (
        thread_key  TEXT PRIMARY KEY,
        parts       INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS parts (
        owner TEXT NOT NULL,
        seq   INTEGER NOT NULL,
        data  TEXT NOT NULL,
        PRIMARY KEY (owner, seq)
    )",
];

fn run_owner(run_key: &str) -> String {
    format!("r/{run_key}")
}

fn thread_owner(thread_key: &str) -> String {
    format!("t/{thread_key}")
}

/// A thread's tables over a [`Sql`] connection.
#[derive(Debug)]
pub struct ThreadDb<S> {
    sql: S,
}

impl<S: Sql> ThreadDb<S> {
    /// The tables on `sql`, created if missing.
    ///
    /// # Errors
    /// The schema could not be created.
    pub fn open(sql: S) -> Result<Self, DbError> {
        for stmt in SCHEMA {
            sql.exec(stmt, &[])?;
        }
        Ok(Self { sql })
    }

    /// Claims the run and loads the thread: [`StartReply::Claimed`] for exactly one of any
    /// number of concurrent claims of a run.
    ///
    /// # Errors
    /// SQLite failed or stored rows are corrupt.
    pub fn start(&self, claim: &StartRequest) -> Result<StartReply, DbError> {
        let now = SqlValue::from(claim.now_ms);
        let existing = self.sql.exec(
            "SELECT fingerprint, done, parts FROM runs WHERE run_key = ? AND expires_at > ?",
            &[claim.run_key.as_str().into(), now.clone()],
        )?;
        if let Some(row) = existing.into_iter().next() {
            let mut row = row.into_iter();
            let (Some(fp), Some(done), Some(parts)) = (row.next(), row.next(), row.next()) else {
                return Err(DbError::Corrupt("runs row".into()));
            };
            return Ok(if fp.text()? != claim.fingerprint {
                StartReply::Conflict
            } else if done.int()? != 0 {
                StartReply::Finished {
                    recording: self.read_parts(&run_owner(&claim.run_key), parts.int()?)?,
                }
            } else {
                StartReply::Running
            });
        }
        // A lapsed claim or an expired recording: take the run over.
        self.delete_parts(&run_owner(&claim.run_key))?;
        self.sql.exec(
            "INSERT OR REPLACE INTO runs (run_key, fingerprint, done, parts, expires_at)
             VALUES (?, ?, 0, 0, ?)",
            &[
                claim.run_key.as_str().into(),
                claim.fingerprint.as_str().into(),
                claim.lease_until_ms.into(),
            ],
        )?;
        let thread = self.sql.exec(
            "SELECT parts FROM threads WHERE thread_key = ? AND expires_at > ?",
            &[claim.thread_key.as_str().into(), now],
        )?;
        let context = match thread.into_iter().next().and_then(|r| r.into_iter().next()) {
            Some(parts) => Some(self.read_parts(&thread_owner(&claim.thread_key), parts.int()?)?),
            None => None,
        };
        Ok(StartReply::Claimed { context })
    }

    /// Saves the thread and the run's recording, releasing the claim.
    ///
    /// # Errors
    /// SQLite failed.
    pub fn finish(&self, commit: &FinishRequest) -> Result<(), DbError> {
        let t = self.write_parts(&thread_owner(&commit.thread_key), &commit.context)?;
        self.sql.exec(
            "INSERT OR REPLACE INTO threads (thread_key, parts, expires_at) VALUES (?, ?, ?)",
            &[
                commit.thread_key.as_str().into(),
                SqlValue::Int(t),
                commit.context_expires_at_ms.into(),
            ],
        )?;
        let r = self.write_parts(&run_owner(&commit.run_key), &commit.recording)?;
        self.sql.exec(
            "INSERT OR REPLACE INTO runs (run_key, fingerprint, done, parts, expires_at)
             VALUES (?, ?, 1, ?, ?)",
            &[
                commit.run_key.as_str().into(),
                commit.fingerprint.as_str().into(),
                SqlValue::Int(r),
                commit.recording_expires_at_ms.into(),
            ],
        )?;
        Ok(())
    }

    /// When the next row expires (ms since the epoch), `None` if nothing is stored: the time
    /// to set the object's alarm to.
    ///
    /// # Errors
    /// SQLite failed.
    pub fn next_expiry(&self) -> Result<Option<u64>, DbError> {
        let rows = self.sql.exec(
            "SELECT MIN(e) FROM (
                 SELECT MIN(expires_at) AS e FROM runs
                 UNION ALL SELECT MIN(expires_at) AS e FROM threads)",
            &[],
        )?;
        match rows.into_iter().next().and_then(|r| r.into_iter().next()) {
            Some(SqlValue::Int(e)) => Ok(Some(u64::try_from(e).unwrap_or(0))),
            _ => Ok(None),
        }
    }

    /// Deletes everything expired at `now_ms`; returns [`ThreadDb::next_expiry`] afterwards
    /// (`None`: the thread is idle and gone, the object's storage can be dropped whole).
    ///
    /// # Errors
    /// SQLite failed.
    pub fn purge(&self, now_ms: u64) -> Result<Option<u64>, DbError> {
        let now = SqlValue::from(now_ms);
        self.sql.exec(
            "DELETE FROM parts WHERE owner IN
                 (SELECT 'r/' || run_key FROM runs WHERE expires_at <= ?
                  UNION ALL SELECT 't/' || thread_key FROM threads WHERE expires_at <= ?)",
            &[now.clone(), now.clone()],
        )?;
        self.sql.exec(
            "DELETE FROM runs WHERE expires_at <= ?",
            std::slice::from_ref(&now),
        )?;
        self.sql
            .exec("DELETE FROM threads WHERE expires_at <= ?", &[now])?;
        self.next_expiry()
    }

    fn delete_parts(&self, owner: &str) -> Result<(), DbError> {
        self.sql
            .exec("DELETE FROM parts WHERE owner = ?", &[owner.into()])?;
        Ok(())
    }

    fn write_parts(&self, owner: &str, text: &str) -> Result<i64, DbError> {
        self.delete_parts(owner)?;
        let pieces = split(text, PART_BYTES);
        for (seq, piece) in pieces.iter().enumerate() {
            self.sql.exec(
                "INSERT INTO parts (owner, seq, data) VALUES (?, ?, ?)",
                &[owner.into(), SqlValue::Int(seq as i64), (*piece).into()],
            )?;
        }
        Ok(pieces.len() as i64)
    }

    fn read_parts(&self, owner: &str, expected: i64) -> Result<String, DbError> {
        let rows = self.sql.exec(
            "SELECT data FROM parts WHERE owner = ? ORDER BY seq",
            &[owner.into()],
        )?;
        if rows.len() as i64 != expected {
            return Err(DbError::Corrupt(format!(
                "{expected} parts expected, {} found",
                rows.len()
            )));
        }
        let mut out = String::new();
        for row in rows {
            let data = row
                .into_iter()
                .next()
                .ok_or_else(|| DbError::Corrupt("empty parts row".into()))?;
            out.push_str(&data.text()?);
        }
        Ok(out)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use rusqlite::types::{Value, ValueRef};

    struct Lite(rusqlite::Connection);

    impl Sql for Lite {
        fn exec(&self, query: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, DbError> {
            let err = |e: rusqlite::Error| DbError::Sql(e.to_string());
            let mut stmt = self.0.prepare(query).map_err(err)?;
            let values: Vec<Value> = params
                .iter()
                .map(|p| match p {
                    SqlValue::Null => Value::Null,
                    SqlValue::Int(i) => Value::Integer(*i),
                    SqlValue::Text(s) => Value::Text(s.clone()),
                })
                .collect();
            let n = stmt.column_count();
            let mut rows = stmt
                .query(rusqlite::params_from_iter(values))
                .map_err(err)?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().map_err(err)? {
                let mut r = Vec::with_capacity(n);
                for i in 0..n {
                    r.push(match row.get_ref(i).map_err(err)? {
                        ValueRef::Integer(i) => SqlValue::Int(i),
                        ValueRef::Text(t) => SqlValue::Text(String::from_utf8_lossy(t).into()),
                        _ => SqlValue::Null,
                    });
                }
                out.push(r);
            }
            Ok(out)
        }
    }

    fn db() -> ThreadDb<Lite> {
        ThreadDb::open(Lite(rusqlite::Connection::open_in_memory().unwrap())).unwrap()
    }

    fn claim(run: &str, fp: &str, now: u64) -> StartRequest {
        StartRequest {
            run_key: run.into(),
            thread_key: "a/t".into(),
            fingerprint: fp.into(),
            now_ms: now,
            lease_until_ms: now + 1000,
        }
    }

    fn commit(run: &str, fp: &str, now: u64, recording: String) -> FinishRequest {
        FinishRequest {
            run_key: run.into(),
            fingerprint: fp.into(),
            thread_key: "a/t".into(),
            context: "{\"turns\":1}".into(),
            context_expires_at_ms: now + 10_000,
            recording,
            recording_expires_at_ms: now + 5_000,
        }
    }

    #[test]
    fn claim_running_conflict_lease_and_replay() {
        let d = db();
        assert_eq!(
            d.start(&claim("r", "f", 0)).unwrap(),
            StartReply::Claimed { context: None }
        );
        assert_eq!(d.start(&claim("r", "f", 10)).unwrap(), StartReply::Running);
        assert_eq!(d.start(&claim("r", "g", 10)).unwrap(), StartReply::Conflict);
        // The lease lapsed (a crashed delivery): the run can be claimed again.
        assert!(matches!(
            d.start(&claim("r", "f", 5000)).unwrap(),
            StartReply::Claimed { .. }
        ));
        d.finish(&commit("r", "f", 5000, "data: x\n\n".into()))
            .unwrap();
        assert_eq!(
            d.start(&claim("r", "f", 5001)).unwrap(),
            StartReply::Finished {
                recording: "data: x\n\n".into()
            }
        );
        assert_eq!(
            d.start(&claim("r", "g", 5001)).unwrap(),
            StartReply::Conflict
        );
        assert_eq!(
            d.start(&claim("r2", "f", 5002)).unwrap(),
            StartReply::Claimed {
                context: Some("{\"turns\":1}".into())
            }
        );
    }

    #[test]
    fn expiry_is_exact_on_read() {
        let d = db();
        d.start(&claim("r", "f", 0)).unwrap();
        d.finish(&commit("r", "f", 0, "rec".into())).unwrap();
        // The recording expired at 5000 (not yet purged): the run is new again.
        assert!(matches!(
            d.start(&claim("r", "f", 5000)).unwrap(),
            StartReply::Claimed { context: Some(_) }
        ));
        // The context expired at 10 000.
        assert_eq!(
            d.start(&claim("r3", "f", 10_000)).unwrap(),
            StartReply::Claimed { context: None }
        );
    }

    #[test]
    fn recordings_larger_than_a_row_are_chunked() {
        let d = db();
        let big: String = "é".repeat(3 * PART_BYTES / 2 + 17);
        d.start(&claim("r", "f", 0)).unwrap();
        d.finish(&commit("r", "f", 0, big.clone())).unwrap();
        let rows = d
            .sql
            .exec(
                "SELECT MAX(length(CAST(data AS BLOB))) , COUNT(*) FROM parts WHERE owner = 'r/r'",
                &[],
            )
            .unwrap();
        assert_eq!(rows[0][1], SqlValue::Int(4));
        assert!(rows[0][0].int().unwrap() <= PART_BYTES as i64);
        assert_eq!(
            d.start(&claim("r", "f", 1)).unwrap(),
            StartReply::Finished { recording: big }
        );
        // Rewriting with a shorter recording leaves no stale parts behind.
        d.finish(&commit("r", "f", 0, "short".into())).unwrap();
        assert_eq!(
            d.start(&claim("r", "f", 1)).unwrap(),
            StartReply::Finished {
                recording: "short".into()
            }
        );
    }

    #[test]
    fn missing_parts_are_reported_as_corrupt() {
        let d = db();
        d.start(&claim("r", "f", 0)).unwrap();
        d.finish(&commit("r", "f", 0, "rec".into())).unwrap();
        d.sql
            .exec("DELETE FROM parts WHERE owner = 'r/r'", &[])
            .unwrap();
        assert!(matches!(
            d.start(&claim("r", "f", 1)),
            Err(DbError::Corrupt(_))
        ));
    }

    #[test]
    fn purge_plans_the_alarm_and_empties_an_idle_thread() {
        let d = db();
        assert_eq!(d.next_expiry().unwrap(), None);
        d.start(&claim("r", "f", 0)).unwrap();
        assert_eq!(d.next_expiry().unwrap(), Some(1000));
        d.finish(&commit("r", "f", 0, "rec".into())).unwrap();
        // Recording at 5000, context at 10 000.
        assert_eq!(d.next_expiry().unwrap(), Some(5000));
        assert_eq!(d.purge(4999).unwrap(), Some(5000));
        assert_eq!(d.purge(5000).unwrap(), Some(10_000));
        let parts = d.sql.exec("SELECT owner FROM parts", &[]).unwrap();
        assert_eq!(parts, vec![vec![SqlValue::Text("t/a/t".into())]]);
        assert_eq!(d.purge(10_000).unwrap(), None);
        let left = d
            .sql
            .exec(
                "SELECT (SELECT COUNT(*) FROM runs) + (SELECT COUNT(*) FROM threads) + (SELECT COUNT(*) FROM parts)",
                &[],
            )
            .unwrap();
        assert_eq!(left, vec![vec![SqlValue::Int(0)]]);
    }
}
