//! The SQLite connection the shared store ([`crate::store::sql_store`]) runs on: a tiny trait, so
//! the same statements run on a Durable Object's `ctx.storage.sql` and, natively, on
//! rusqlite (the `runway serve` database, and the Durable Object's logic in tests).

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
    /// The integer, or [`DbError::Corrupt`].
    ///
    /// # Errors
    /// The value is not an integer.
    pub fn int(&self) -> Result<i64, DbError> {
        match self {
            Self::Int(i) => Ok(*i),
            other => Err(DbError::Corrupt(format!(
                "expected an integer, got {other:?}"
            ))),
        }
    }

    /// The text, or [`DbError::Corrupt`].
    ///
    /// # Errors
    /// The value is not text.
    pub fn text(self) -> Result<String, DbError> {
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

/// A SQLite connection: a Durable Object's `ctx.storage.sql`, or rusqlite.
pub trait Sql {
    /// Runs one statement with positional `?` parameters; returns every row.
    ///
    /// # Errors
    /// The statement failed.
    fn exec(&self, query: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, DbError>;
}

impl<T: Sql + ?Sized> Sql for &T {
    fn exec(&self, query: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, DbError> {
        (**self).exec(query, params)
    }
}

/// A failure of the database.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DbError {
    /// SQLite refused a statement.
    #[error("sql: {0}")]
    Sql(String),
    /// Stored rows are not what this code wrote.
    #[error("corrupt: {0}")]
    Corrupt(String),
}

impl From<DbError> for crate::error::StoreError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Corrupt(m) => Self::Corrupt(m),
            DbError::Sql(m) if m.contains("SQLITE_TOOBIG") || m.contains("too big") => {
                Self::TooLarge(m)
            }
            DbError::Sql(m) => Self::Unavailable(m),
        }
    }
}

#[cfg(feature = "rusqlite")]
impl Sql for rusqlite::Connection {
    fn exec(&self, query: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, DbError> {
        use rusqlite::types::{Value, ValueRef};
        let err = |e: rusqlite::Error| DbError::Sql(e.to_string());
        let mut stmt = self.prepare_cached(query).map_err(err)?;
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
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        SqlValue::Text(String::from_utf8_lossy(t).into())
                    }
                    ValueRef::Real(f) => SqlValue::Int(f as i64),
                    ValueRef::Null => SqlValue::Null,
                });
            }
            out.push(r);
        }
        Ok(out)
    }
}
