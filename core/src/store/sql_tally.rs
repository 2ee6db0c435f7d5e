//! [`Tally`] rows in SQLite, for [`SqlStore`]: the `runway serve` database and each Durable
//! Object (a `meter/…` or `usage/…` object holds the rows of its part).
//!
//! Like the rest of [`SqlStore`], each method is a few statements the caller runs atomically
//! (one transaction on the server, no `await` in between in a Durable Object).

use std::sync::LazyLock;

use crate::meter::tally::{Tally, TallyKey, TurnTake};
use crate::store::sql::{DbError, Sql, SqlValue};
use crate::store::sql_store::SqlStore;

fn int(v: u64) -> SqlValue {
    SqlValue::from(v)
}

/// Adds a [`Tally`] to its row, saturating: SQLite turns an integer sum past 2^63−1 into a
/// float, which would read back as corrupt; a count stops at the top instead. Written once:
/// formatting it on every call was an eighth of `runway serve`'s instructions per turn.
static ADD_TALLY: LazyLock<String> = LazyLock::new(|| {
    let sums: Vec<String> = Tally::FIELDS
        .iter()
        .map(|f| {
            format!(
                "{f} = CASE WHEN {f} > {max} - excluded.{f} THEN {max} ELSE {f} + excluded.{f} END",
                max = i64::MAX
            )
        })
        .collect();
    format!(
        "INSERT INTO turn_tallies (part, item, {columns}, expires_at)
         VALUES (?, ?, {marks}, ?)
         ON CONFLICT (part, item) DO UPDATE SET {sums},
             expires_at = MAX(expires_at, excluded.expires_at)",
        columns = Tally::FIELDS.join(", "),
        marks = vec!["?"; Tally::FIELDS.len()].join(", "),
        sums = sums.join(", "),
    )
});

/// A part's live rows, every [`Tally`] field in order.
static TALLIES: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT item, {} FROM turn_tallies WHERE part = ? AND expires_at > ? ORDER BY item",
        Tally::FIELDS.join(", ")
    )
});

impl<S: Sql> SqlStore<S> {
    /// [`crate::adapter::TurnStore::take_turns`]: every row or none, in the caller's one
    /// transaction.
    ///
    /// # Errors
    /// SQLite failed.
    pub fn take_turns(
        &self,
        takes: &[TurnTake],
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<bool, DbError> {
        // All or nothing: a write is counted in every row or in none.
        if let Some(first) = takes.first()
            && self.counts_write(&first.key, write_id)?
        {
            return Ok(true);
        }
        for take in takes {
            let rows = self.sql().exec(
                "SELECT turns FROM turn_tallies WHERE part = ? AND item = ?",
                &[take.key.part.as_str().into(), take.key.item.as_str().into()],
            )?;
            let turns = match rows.into_iter().next().and_then(|r| r.into_iter().next()) {
                Some(v) => u64::try_from(v.int()?).unwrap_or(0),
                None => 0,
            };
            if turns >= take.limit {
                return Ok(false);
            }
        }
        let one = Tally {
            turns: 1,
            ..Tally::default()
        };
        for take in takes {
            self.add_tally(&take.key, &one, expires_at_ms, write_id)?;
        }
        Ok(true)
    }

    /// [`crate::adapter::TurnStore::add_tally`].
    ///
    /// # Errors
    /// SQLite failed.
    pub fn add_tally(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<(), DbError> {
        // Marks the write and learns whether it was new in one statement: no row back, the
        // row already counts it.
        let marked = self.sql().exec(
            "INSERT INTO turn_tally_writes (part, item, write_id, expires_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (part, item, write_id) DO NOTHING RETURNING 1",
            &[
                key.part.as_str().into(),
                key.item.as_str().into(),
                write_id.into(),
                int(expires_at_ms),
            ],
        )?;
        if marked.is_empty() {
            return Ok(());
        }
        let mut params = vec![key.part.as_str().into(), key.item.as_str().into()];
        params.extend(tally.values().into_iter().map(int));
        params.push(int(expires_at_ms));
        self.sql().exec(&ADD_TALLY, &params)?;
        Ok(())
    }

    /// Whether the row `key` counts the write `write_id`.
    fn counts_write(&self, key: &TallyKey, write_id: &str) -> Result<bool, DbError> {
        let rows = self.sql().exec(
            "SELECT 1 FROM turn_tally_writes WHERE part = ? AND item = ? AND write_id = ?",
            &[
                key.part.as_str().into(),
                key.item.as_str().into(),
                write_id.into(),
            ],
        )?;
        Ok(!rows.is_empty())
    }

    /// [`crate::adapter::TurnStore::tallies`].
    ///
    /// # Errors
    /// SQLite failed or a row is not what this code wrote.
    pub fn tallies(&self, part: &str, now_ms: u64) -> Result<Vec<(String, Tally)>, DbError> {
        let rows = self.sql().exec(&TALLIES, &[part.into(), int(now_ms)])?;
        rows.into_iter()
            .map(|row| {
                let mut row = row.into_iter();
                let item = row
                    .next()
                    .ok_or_else(|| DbError::Corrupt("turn_tallies row".into()))?
                    .text()?;
                let mut values = [0u64; Tally::FIELDS.len()];
                for v in &mut values {
                    let cell = row
                        .next()
                        .ok_or_else(|| DbError::Corrupt("turn_tallies row".into()))?;
                    *v = u64::try_from(cell.int()?).unwrap_or(0);
                }
                Ok((item, Tally::from_values(values)))
            })
            .collect()
    }
}
