//! `RunwayThread`: the Durable Object holding one thread (SQLite-backed storage,
//! `new_sqlite_classes` migration).
//!
//! It answers the Worker's calls (`/start`, `/finish`, `/latest`; see [`crate::wire`]) with
//! runway-core's shared SQLite store ([`SqlStore`]), and keeps one alarm set at the earliest expiry among its rows. When the alarm
//! fires it deletes what expired (a finished run's recording after `recording_ttl`, the
//! thread after `RUNWAY_CONTEXT_TTL_SECS` of idleness) and, once nothing is left, deletes the
//! object's whole storage: an idle thread costs nothing.

use std::cell::Cell;

use worker::{
    DurableObject, Env, Request, Response, Result, ScheduledTime, SqlStorage, SqlStorageValue,
    State, durable_object,
};

use runway_core::store::sql::{DbError, Sql, SqlValue};
use runway_core::store::sql_store::SqlStore;

use crate::wire::{CallError, answer};

/// `ctx.storage.sql` as a [`Sql`] connection.
struct DoSql(SqlStorage);

impl Sql for DoSql {
    fn exec(
        &self,
        query: &str,
        params: &[SqlValue],
    ) -> std::result::Result<Vec<Vec<SqlValue>>, DbError> {
        let bindings: Vec<SqlStorageValue> = params
            .iter()
            .map(|p| match p {
                SqlValue::Null => SqlStorageValue::Null,
                SqlValue::Int(i) => SqlStorageValue::Integer(*i),
                SqlValue::Text(s) => SqlStorageValue::String(s.clone()),
            })
            .collect();
        let cursor = self
            .0
            .exec(query, bindings)
            .map_err(|e| DbError::Sql(e.to_string()))?;
        cursor
            .raw()
            .map(|row| {
                row.map_err(|e| DbError::Sql(e.to_string())).map(|values| {
                    values
                        .into_iter()
                        .map(|v| match v {
                            SqlStorageValue::Integer(i) => SqlValue::Int(i),
                            SqlStorageValue::Float(f) => SqlValue::Int(f as i64),
                            SqlStorageValue::Boolean(b) => SqlValue::Int(i64::from(b)),
                            SqlStorageValue::String(s) => SqlValue::Text(s),
                            SqlStorageValue::Blob(b) => {
                                SqlValue::Text(String::from_utf8_lossy(&b).into_owned())
                            }
                            SqlStorageValue::Null => SqlValue::Null,
                        })
                        .collect()
                })
            })
            .collect()
    }
}

/// One thread's Durable Object.
#[durable_object]
pub struct RunwayThread {
    state: State,
    /// The alarm as last read or set (`None` until known).
    alarm_at: Cell<Option<Option<i64>>>,
}

fn error_response(e: &CallError) -> Result<Response> {
    let (status, reply) = e.reply();
    tracing::error!(error = %e, "thread call failed");
    Ok(Response::from_json(&reply)?.with_status(status))
}

impl RunwayThread {
    fn db(&self) -> std::result::Result<SqlStore<DoSql>, DbError> {
        SqlStore::open(DoSql(self.state.storage().sql()))
    }

    /// Points the alarm at `next` (the earliest expiry), if it is not there already.
    async fn schedule(&self, next: Option<u64>) -> Result<()> {
        let storage = self.state.storage();
        let current = match self.alarm_at.get() {
            Some(known) => known,
            None => storage.get_alarm().await?,
        };
        let wanted = next.map(|t| t as i64);
        if wanted != current
            && let Some(t) = wanted
        {
            storage
                .set_alarm(ScheduledTime::new(js_sys::Date::new(&(t as f64).into())))
                .await?;
        }
        self.alarm_at.set(Some(wanted.or(current)));
        Ok(())
    }
}

impl DurableObject for RunwayThread {
    fn new(state: State, env: Env) -> Self {
        crate::console_log::ConsoleLog::install(
            env.var("RUNWAY_LOG").ok().map(|v| v.to_string()).as_deref(),
        );
        Self {
            state,
            alarm_at: Cell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let path = req.path();
        let body = req.text().await?;
        // Everything between reading the body and answering runs without an await on
        // anything but this object's own storage: claims and commits are serialized here.
        let outcome = self
            .db()
            .map_err(CallError::from)
            .and_then(|db| answer(&db, &path, &body));
        match outcome {
            Ok((json, next)) => {
                if let Some(next) = next {
                    self.schedule(next).await?;
                }
                Ok(Response::ok(json)?)
            }
            Err(e) => error_response(&e),
        }
    }

    async fn alarm(&self) -> Result<Response> {
        // The alarm that woke us is spent.
        self.alarm_at.set(Some(None));
        let now = js_sys::Date::now() as u64;
        match self.db().and_then(|db| db.purge(now)) {
            Ok(None) => {
                self.state.storage().delete_all().await?;
                tracing::debug!("idle thread expired: storage deleted");
            }
            Ok(Some(next)) => self.schedule(Some(next)).await?,
            Err(e) => {
                tracing::error!(error = %e, "thread purge failed");
                return Err(worker::Error::RustError(e.to_string()));
            }
        }
        Response::ok("")
    }
}
