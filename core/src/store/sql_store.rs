//! Turns and threads in SQLite: one schema and one implementation, shared by the `runway`
//! server's database and each thread's Durable Object. Pure: it issues statements through
//! [`Sql`] and does no I/O itself; the decisions are [`crate::store::turn_state`]'s.
//!
//! Every method is a sequence of statements that must run atomically: the server wraps each
//! call in a `BEGIN IMMEDIATE` transaction; inside a Durable Object, statements run without an
//! `await` between them are atomic with respect to other requests to the object and are
//! committed together.
//!
//! Long texts (recordings up to Console's 8 MiB stream limit, the thread context) are stored
//! in `turn_parts` rows of at most [`PART_BYTES`] (a Durable Object row holds at most 2 MB).
//!
//! The tables are named `turn_*`: databases written before thread versions existed have
//! `runs`/`threads`/`parts` tables of another shape, which this code never reads (their
//! threads and recordings are not migrated) and so cannot trip over.

use crate::agent::context::ThreadContext;
use crate::store::sql::{DbError, Sql, SqlValue};
use crate::store::text_parts::{PART_BYTES, split};
use crate::store::turn_state::{
    ClaimDecision, OwnerDecision, RunPhase, RunRecord, ThreadHead, decide_claim, decide_commit,
    decide_owner, holds_claim, thread_after,
};
use crate::store::{CommitOutcome, TurnClaim, TurnCommit, TurnStart};

pub use crate::store::sql_schema::{ADDED_COLUMNS, SCHEMA};

fn run_owner(run_key: &str) -> String {
    format!("r/{run_key}")
}

fn thread_owner(thread_key: &str) -> String {
    format!("t/{thread_key}")
}

fn corrupt(what: &str) -> DbError {
    DbError::Corrupt(what.into())
}

/// A run row.
struct RunRow {
    fingerprint: String,
    phase: RunPhase,
    token: String,
    parts: i64,
    expires_at: u64,
}

impl RunRow {
    fn record(&self) -> RunRecord<'_> {
        RunRecord {
            fingerprint: &self.fingerprint,
            phase: self.phase,
            until_ms: self.expires_at,
            token: &self.token,
        }
    }
}

/// A thread row.
struct ThreadRow {
    head: ThreadHead,
    parts: i64,
    context_expires_at: u64,
    /// The row's lifetime: the owner holds until then.
    expires_at: u64,
    /// The owning workspace ('': nobody).
    workspace: String,
}

/// The turn tables over a [`Sql`] connection.
#[derive(Debug)]
pub struct SqlStore<S> {
    sql: S,
}

impl<S: Sql> SqlStore<S> {
    /// The tables on `sql`, created if missing, and the columns added since a table first
    /// shipped ([`ADDED_COLUMNS`]) added to a database from before.
    ///
    /// # Errors
    /// The schema could not be created or migrated.
    pub fn open(sql: S) -> Result<Self, DbError> {
        for stmt in SCHEMA {
            sql.exec(stmt, &[])?;
        }
        for (table, column, definition) in ADDED_COLUMNS {
            // Selecting the column fails only where it is missing: one cheap statement on a
            // current database (a Durable Object opens its store on every call).
            if sql
                .exec(&format!("SELECT {column} FROM {table} LIMIT 0"), &[])
                .is_err()
            {
                sql.exec(
                    &format!("ALTER TABLE {table} ADD COLUMN {column} {definition}"),
                    &[],
                )?;
            }
        }
        Ok(Self { sql })
    }

    /// The tables on `sql`, which already has [`SCHEMA`].
    pub fn over(sql: S) -> Self {
        Self { sql }
    }

    /// The connection.
    pub fn sql(&self) -> &S {
        &self.sql
    }

    /// [`crate::adapter::TurnStore::start_turn`]: claims the run (as [`decide_claim`] says) and,
    /// only once claimed and only if the thread is not another workspace's ([`decide_owner`]),
    /// counts the arrival, records the owner and loads the thread.
    ///
    /// # Errors
    /// SQLite failed or stored rows are corrupt.
    pub fn start(&self, claim: &TurnClaim) -> Result<TurnStart, DbError> {
        let run = self.run(&claim.run_key)?;
        match decide_claim(run.as_ref().map(RunRow::record), claim) {
            ClaimDecision::Replay => {
                let parts = run.map_or(0, |r| r.parts);
                return Ok(TurnStart::Finished {
                    recording: self.read_parts(&run_owner(&claim.run_key), parts)?,
                });
            }
            ClaimDecision::Wait => return Ok(TurnStart::Running),
            ClaimDecision::Conflict => return Ok(TurnStart::Conflict),
            ClaimDecision::Take => {}
        }
        let thread = self.thread(&claim.thread_key)?;
        let owner = thread
            .as_ref()
            .filter(|t| t.expires_at > claim.now_ms)
            .map(|t| t.workspace.as_str());
        if decide_owner(owner, &claim.workspace) == OwnerDecision::Refuse {
            return Ok(TurnStart::OtherWorkspace);
        }
        // A lapsed claim or an expired recording: take the run over.
        self.delete_parts(&run_owner(&claim.run_key))?;
        self.sql.exec(
            "INSERT OR REPLACE INTO turn_runs (run_key, fingerprint, done, token, parts, expires_at)
             VALUES (?, ?, 0, ?, 0, ?)",
            &[
                claim.run_key.as_str().into(),
                claim.fingerprint.as_str().into(),
                claim.token.as_str().into(),
                claim.lease_until_ms.into(),
            ],
        )?;
        self.sql.exec(
            "INSERT INTO turn_threads
                 (thread_key, version, arrivals, parts, context_expires_at, expires_at, workspace)
             VALUES (?, 0, 1, 0, 0, ?, ?)
             ON CONFLICT (thread_key) DO UPDATE SET
                 arrivals = arrivals + 1,
                 expires_at = MAX(expires_at, excluded.expires_at),
                 workspace = excluded.workspace",
            &[
                claim.thread_key.as_str().into(),
                claim.lease_until_ms.into(),
                claim.workspace.as_str().into(),
            ],
        )?;
        // The row as read above, one arrival later (the transaction keeps anyone else out).
        let Some(thread) = thread else {
            return Ok(TurnStart::Claimed {
                context: None,
                version: 0,
                arrival: 1,
            });
        };
        let context = if thread.context_expires_at > claim.now_ms && thread.parts > 0 {
            let json = self.read_parts(&thread_owner(&claim.thread_key), thread.parts)?;
            Some(parse_context(&json)?)
        } else {
            None
        };
        Ok(TurnStart::Claimed {
            context,
            version: thread.head.version,
            arrival: thread.head.latest_arrival + 1,
        })
    }

    /// [`crate::adapter::TurnStore::finish_turn`]: only while the run's record carries the commit's
    /// token ([`holds_claim`]), saves the thread as [`decide_commit`] and [`thread_after`]
    /// say, and the run's recording.
    ///
    /// # Errors
    /// SQLite failed or stored rows are corrupt.
    pub fn finish(&self, commit: &TurnCommit) -> Result<CommitOutcome, DbError> {
        let run = self.run(&commit.run_key)?;
        if !holds_claim(run.as_ref().map(RunRow::record), &commit.token) {
            return Ok(CommitOutcome::ClaimLost);
        }
        let thread = self.thread(&commit.thread_key)?;
        let head = thread.as_ref().map(|t| t.head).unwrap_or_default();
        let decision = decide_commit(head, commit);
        let stored = match &thread {
            Some(t)
                if decision != crate::store::turn_state::CommitDecision::Apply
                    && t.context_expires_at > commit.now_ms
                    && t.parts > 0 =>
            {
                let json = self.read_parts(&thread_owner(&commit.thread_key), t.parts)?;
                Some(parse_context(&json)?)
            }
            _ => None,
        };
        let context = thread_after(decision, stored, commit);
        let json = serde_json::to_string(&context)
            .map_err(|e| DbError::Corrupt(format!("thread context: {e}")))?;
        let t = self.write_parts(&thread_owner(&commit.thread_key), &json)?;
        self.sql.exec(
            "INSERT INTO turn_threads
                 (thread_key, version, arrivals, parts, context_expires_at, expires_at)
             VALUES (?, 1, ?, ?, ?, ?)
             ON CONFLICT (thread_key) DO UPDATE SET
                 version = version + 1,
                 parts = excluded.parts,
                 context_expires_at = excluded.context_expires_at,
                 expires_at = MAX(expires_at, excluded.expires_at)",
            &[
                commit.thread_key.as_str().into(),
                commit.arrival.into(),
                SqlValue::Int(t),
                commit.context_expires_at_ms.into(),
                commit.context_expires_at_ms.into(),
            ],
        )?;
        let r = self.write_parts(&run_owner(&commit.run_key), &commit.recording)?;
        self.sql.exec(
            "INSERT OR REPLACE INTO turn_runs (run_key, fingerprint, done, token, parts, expires_at)
             VALUES (?, ?, 1, ?, ?, ?)",
            &[
                commit.run_key.as_str().into(),
                commit.fingerprint.as_str().into(),
                commit.token.as_str().into(),
                SqlValue::Int(r),
                commit.recording_expires_at_ms.into(),
            ],
        )?;
        Ok(decision.outcome())
    }

    /// [`crate::adapter::TurnStore::latest_arrival`]: one indexed read.
    ///
    /// # Errors
    /// SQLite failed.
    pub fn latest_arrival(&self, thread_key: &str) -> Result<u64, DbError> {
        Ok(self
            .thread(thread_key)?
            .map_or(0, |t| t.head.latest_arrival))
    }

    /// Ends the lease of every run still marked running, so a retry takes it over at once;
    /// returns how many there were.
    ///
    /// Only for a database no live process can be writing: the caller must know every
    /// earlier holder is dead (`runway serve` holds its data directory's lock, so at startup
    /// any running claim belongs to a process that crashed or was killed). Otherwise a
    /// retry would wait out a dead process's lease, up to the turn deadline plus 30 s.
    ///
    /// # Errors
    /// SQLite failed.
    pub fn release_orphaned_claims(&self) -> Result<usize, DbError> {
        let running = self
            .sql
            .exec("SELECT COUNT(*) FROM turn_runs WHERE done = 0", &[])?;
        let count = running
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .map_or(Ok(0), |v| v.int())?;
        self.sql
            .exec("UPDATE turn_runs SET expires_at = 0 WHERE done = 0", &[])?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// When the next row expires (ms since the epoch), `None` if nothing that expires is
    /// stored: the time to set a Durable Object's alarm to. Vault entries never expire: the
    /// Durable Object keeps them in objects of their own, which never set an alarm.
    ///
    /// # Errors
    /// SQLite failed.
    pub fn next_expiry(&self) -> Result<Option<u64>, DbError> {
        let rows = self.sql.exec(
            "SELECT MIN(e) FROM (
                 SELECT MIN(expires_at) AS e FROM turn_runs
                 UNION ALL SELECT MIN(expires_at) AS e FROM turn_threads
                 UNION ALL SELECT MIN(expires_at) AS e FROM turn_actions
                 UNION ALL SELECT MIN(expires_at) AS e FROM turn_connect_states
                 UNION ALL SELECT MIN(expires_at) AS e FROM turn_tallies)",
            &[],
        )?;
        match rows.into_iter().next().and_then(|r| r.into_iter().next()) {
            Some(SqlValue::Int(e)) => Ok(Some(u64::try_from(e).unwrap_or(0))),
            _ => Ok(None),
        }
    }

    /// Deletes everything expired at `now_ms`; returns [`SqlStore::next_expiry`] afterwards
    /// (`None`: nothing is left).
    ///
    /// # Errors
    /// SQLite failed.
    pub fn purge(&self, now_ms: u64) -> Result<Option<u64>, DbError> {
        let now = SqlValue::from(now_ms);
        self.sql.exec(
            "DELETE FROM turn_parts WHERE owner IN
                 (SELECT 'r/' || run_key FROM turn_runs WHERE expires_at <= ?
                  UNION ALL SELECT 't/' || thread_key FROM turn_threads WHERE expires_at <= ?)",
            &[now.clone(), now.clone()],
        )?;
        self.sql.exec(
            "DELETE FROM turn_runs WHERE expires_at <= ?",
            std::slice::from_ref(&now),
        )?;
        self.sql.exec(
            "DELETE FROM turn_threads WHERE expires_at <= ?",
            std::slice::from_ref(&now),
        )?;
        self.sql.exec(
            "DELETE FROM turn_actions WHERE expires_at <= ?",
            std::slice::from_ref(&now),
        )?;
        self.sql.exec(
            "DELETE FROM turn_connect_states WHERE expires_at <= ?",
            std::slice::from_ref(&now),
        )?;
        self.sql.exec(
            "DELETE FROM turn_tallies WHERE expires_at <= ?",
            std::slice::from_ref(&now),
        )?;
        self.sql.exec(
            "DELETE FROM turn_tally_writes WHERE expires_at <= ?",
            &[now],
        )?;
        self.next_expiry()
    }

    fn run(&self, run_key: &str) -> Result<Option<RunRow>, DbError> {
        let rows = self.sql.exec(
            "SELECT fingerprint, done, token, parts, expires_at FROM turn_runs WHERE run_key = ?",
            &[run_key.into()],
        )?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let mut row = row.into_iter();
        let (Some(fp), Some(done), Some(token), Some(parts), Some(exp)) =
            (row.next(), row.next(), row.next(), row.next(), row.next())
        else {
            return Err(corrupt("turn_runs row"));
        };
        Ok(Some(RunRow {
            fingerprint: fp.text()?,
            phase: if done.int()? != 0 {
                RunPhase::Done
            } else {
                RunPhase::Running
            },
            token: token.text()?,
            parts: parts.int()?,
            expires_at: u64::try_from(exp.int()?).unwrap_or(0),
        }))
    }

    fn thread(&self, thread_key: &str) -> Result<Option<ThreadRow>, DbError> {
        let rows = self.sql.exec(
            "SELECT version, arrivals, parts, context_expires_at, expires_at, workspace
             FROM turn_threads WHERE thread_key = ?",
            &[thread_key.into()],
        )?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let mut row = row.into_iter();
        let (Some(version), Some(arrivals), Some(parts), Some(exp), Some(row_exp), Some(ws)) = (
            row.next(),
            row.next(),
            row.next(),
            row.next(),
            row.next(),
            row.next(),
        ) else {
            return Err(corrupt("turn_threads row"));
        };
        let n = |v: SqlValue| v.int().map(|i| u64::try_from(i).unwrap_or(0));
        Ok(Some(ThreadRow {
            head: ThreadHead {
                version: n(version)?,
                latest_arrival: n(arrivals)?,
            },
            parts: parts.int()?,
            context_expires_at: n(exp)?,
            expires_at: n(row_exp)?,
            workspace: ws.text()?,
        }))
    }

    fn delete_parts(&self, owner: &str) -> Result<(), DbError> {
        self.sql
            .exec("DELETE FROM turn_parts WHERE owner = ?", &[owner.into()])?;
        Ok(())
    }

    fn write_parts(&self, owner: &str, text: &str) -> Result<i64, DbError> {
        self.delete_parts(owner)?;
        let pieces = split(text, PART_BYTES);
        for (seq, piece) in pieces.iter().enumerate() {
            self.sql.exec(
                "INSERT INTO turn_parts (owner, seq, data) VALUES (?, ?, ?)",
                &[owner.into(), SqlValue::Int(seq as i64), (*piece).into()],
            )?;
        }
        Ok(pieces.len() as i64)
    }

    fn read_parts(&self, owner: &str, expected: i64) -> Result<String, DbError> {
        let rows = self.sql.exec(
            "SELECT data FROM turn_parts WHERE owner = ? ORDER BY seq",
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
                .ok_or_else(|| corrupt("empty parts row"))?;
            out.push_str(&data.text()?);
        }
        Ok(out)
    }
}

fn parse_context(json: &str) -> Result<ThreadContext, DbError> {
    serde_json::from_str(json).map_err(|e| DbError::Corrupt(format!("thread context: {e}")))
}
