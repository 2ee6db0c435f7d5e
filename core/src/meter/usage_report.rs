//! `GET {base}/usage?from=YYYY-MM-DD&to=YYYY-MM-DD[&cursor=…]`: the usage rows (workspace ×
//! worker × UTC day) of a range of days, as JSON, at most [`MAX_USAGE_ROWS`] an answer; the
//! answer's `nextCursor` asks for the next page.

use serde::Serialize;
use time::Date;

use crate::error::StoreError;
use crate::keys::usage_part;
use crate::meter::limits::Policy;
use crate::meter::tally::{Tally, TallyStore};
use crate::meter::window::{day_of, parse_day};

/// Most days one request reads (one store read per day).
pub const MAX_USAGE_DAYS: i64 = 31;

/// Most rows one answer holds; the rest are on the next pages (`nextCursor`).
pub const MAX_USAGE_ROWS: usize = 1_000;

/// One row of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageRow {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    /// Console's `workspaceId` (in its storage form).
    pub workspace_id: String,
    /// Console's `agentId` (in its storage form).
    pub agent_id: String,
    /// The worker's display name, when the workers file gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_name: Option<String>,
    /// The counts.
    #[serde(flatten)]
    pub tally: Tally,
    /// `costMicroUsd` in US dollars.
    pub cost_usd: f64,
}

/// One page of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    /// First day, inclusive.
    pub from: String,
    /// Last day, inclusive.
    pub to: String,
    /// Rows by day, workspace, worker: at most [`MAX_USAGE_ROWS`].
    pub rows: Vec<UsageRow>,
    /// The rows of this page added up.
    pub totals: Tally,
    /// `totals.costMicroUsd` in US dollars.
    pub total_cost_usd: f64,
    /// Present when more rows follow: the same query with `cursor` set to it reads them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Where a page of the report starts: after the row `item` of `day`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageCursor {
    day: Date,
    item: String,
}

impl UsageCursor {
    /// The cursor as a query value: hex, so any item is safe in a URL.
    pub fn encode(&self) -> String {
        hex::encode(format!("{}/{}", self.day, self.item))
    }

    /// A cursor [`UsageCursor::encode`] made, if `text` is one.
    pub fn decode(text: &str) -> Option<Self> {
        let text = String::from_utf8(hex::decode(text).ok()?).ok()?;
        let (day, item) = text.split_once('/')?;
        Some(Self {
            day: parse_day(day)?,
            item: item.to_owned(),
        })
    }
}

/// What a `GET /usage` asks for: the days `from..=to` and, past the first page, where to go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageQuery {
    /// First day, inclusive.
    pub from: Date,
    /// Last day, inclusive.
    pub to: Date,
    /// The page starts after this row (`cursor`).
    pub after: Option<UsageCursor>,
}

/// The query's days, `from` and `to` (`YYYY-MM-DD`, inclusive), by default the last 7 days up
/// to today, and its `cursor`.
///
/// # Errors
/// A user-safe message: a day that does not parse, `from` after `to`, more than
/// [`MAX_USAGE_DAYS`] days, or a cursor that is not one of these days'.
pub fn usage_query(query: Option<&str>, now_ms: u64) -> Result<UsageQuery, String> {
    let mut from = None;
    let mut to = None;
    let mut after = None;
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let day = || parse_day(v).ok_or_else(|| format!("{k} must be a day like 2026-12-01"));
        match k {
            "from" => from = Some(day()?),
            "to" => to = Some(day()?),
            "cursor" => {
                after = Some(
                    UsageCursor::decode(v)
                        .ok_or("cursor is not a nextCursor of a /usage answer")?,
                );
            }
            _ => {
                let k: String = k.chars().take(32).collect();
                return Err(format!("unknown parameter {k:?}: use from, to and cursor"));
            }
        }
    }
    let to = to.unwrap_or_else(|| day_of(now_ms));
    let from = match from {
        Some(f) => f,
        None => to - time::Duration::days(6),
    };
    if from > to {
        return Err("from is after to".into());
    }
    if (to - from).whole_days() >= MAX_USAGE_DAYS {
        return Err(format!("at most {MAX_USAGE_DAYS} days at a time"));
    }
    if after.as_ref().is_some_and(|c| c.day < from || c.day > to) {
        return Err("cursor is not from these days: give the same from and to".into());
    }
    Ok(UsageQuery { from, to, after })
}

/// Reads one page of the rows `query` asks for: at most `max_rows` (the route gives
/// [`MAX_USAGE_ROWS`]), day by day, stopping at the first day that fills the page.
///
/// # Errors
/// The store failed.
pub async fn usage_report<S: TallyStore>(
    store: &S,
    policy: &Policy,
    query: &UsageQuery,
    now_ms: u64,
    max_rows: usize,
) -> Result<UsageReport, StoreError> {
    let mut rows: Vec<UsageRow> = Vec::new();
    let mut totals = Tally::default();
    let mut next_cursor = None;
    let mut d = query.after.as_ref().map_or(query.from, |c| c.day);
    'days: while d <= query.to {
        let day = d.to_string();
        for (item, tally) in store.tallies(&usage_part(&day), now_ms).await? {
            // Items come in item order: the cursor's row and those before it were read.
            if query
                .after
                .as_ref()
                .is_some_and(|c| c.day == d && item.as_str() <= c.item.as_str())
            {
                continue;
            }
            if rows.len() >= max_rows {
                if let Some(last) = rows.last() {
                    let cursor = UsageCursor {
                        day: parse_day(&last.day).unwrap_or(d),
                        item: format!("{}/{}", last.workspace_id, last.agent_id),
                    };
                    next_cursor = Some(cursor.encode());
                }
                break 'days;
            }
            let (workspace_id, agent_id) = item.split_once('/').unwrap_or((item.as_str(), ""));
            totals.add(&tally);
            rows.push(UsageRow {
                day: day.clone(),
                workspace_id: workspace_id.to_owned(),
                agent_id: agent_id.to_owned(),
                worker_name: policy.name(agent_id).map(str::to_owned),
                tally,
                cost_usd: tally.cost_micro_usd as f64 / 1_000_000.0,
            });
        }
        d = match d.next_day() {
            Some(n) => n,
            None => break,
        };
    }
    Ok(UsageReport {
        from: query.from.to_string(),
        to: query.to.to_string(),
        rows,
        totals,
        total_cost_usd: totals.cost_micro_usd as f64 / 1_000_000.0,
        next_cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries() {
        let now = 1_798_761_570_000; // 2026-12-31
        let q = usage_query(None, now).unwrap();
        assert_eq!(
            (q.from.to_string(), q.to.to_string()),
            ("2026-12-25".into(), "2026-12-31".into())
        );
        let q = usage_query(Some("from=2026-12-01&to=2026-12-02"), now).unwrap();
        assert_eq!(
            (q.from.to_string(), q.to.to_string()),
            ("2026-12-01".into(), "2026-12-02".into())
        );
        for bad in [
            "from=x",
            "to=2026-12-01&from=2026-12-02",
            "from=2026-01-01&to=2026-12-01",
            "day=1",
        ] {
            assert!(usage_query(Some(bad), now).is_err(), "{bad}");
        }
        let cursor = UsageCursor {
            day: parse_day("2026-11-01").unwrap(),
            item: "w/a".into(),
        };
        let outside = format!("from=2026-12-01&cursor={}", cursor.encode());
        assert!(usage_query(Some(&outside), now).is_err());
        assert!(usage_query(Some("cursor=zz"), now).is_err());
    }

    /// 2,500 rows over three days, read in pages of at most `MAX_USAGE_ROWS`: every row once,
    /// in order, and the last page says no more.
    #[test]
    fn pages_hold_at_most_the_cap_and_together_every_row() {
        use crate::meter::tally::TallyKey;
        use crate::store::memory::MemoryStore;
        futures::executor::block_on(async {
            let store = MemoryStore::new();
            let mut expected = Vec::new();
            for (day, n) in [
                ("2026-12-01", 1_200),
                ("2026-12-02", 300),
                ("2026-12-03", 1_000),
            ] {
                for i in 0..n {
                    let item = format!("ws{i:05}/agent");
                    let tally = Tally {
                        turns: 1,
                        ..Tally::default()
                    };
                    let key = TallyKey::new(usage_part(day), item.clone());
                    store
                        .add_tally(&key, &tally, u64::MAX, &format!("{day}{i}"))
                        .await
                        .unwrap();
                    expected.push(format!("{day} {item}"));
                }
            }
            let now = 1_798_761_570_000; // 2026-12-31
            let mut query = usage_query(Some("from=2026-12-01&to=2026-12-31"), now).unwrap();
            let (mut seen, mut pages) = (Vec::new(), 0);
            loop {
                let page = usage_report(&store, &Policy::default(), &query, now, MAX_USAGE_ROWS)
                    .await
                    .unwrap();
                pages += 1;
                assert!(page.rows.len() <= MAX_USAGE_ROWS);
                assert_eq!(page.totals.turns, page.rows.len() as u64);
                seen.extend(
                    page.rows
                        .iter()
                        .map(|r| format!("{} {}/{}", r.day, r.workspace_id, r.agent_id)),
                );
                let Some(next) = page.next_cursor else { break };
                query = usage_query(
                    Some(&format!("from=2026-12-01&to=2026-12-31&cursor={next}")),
                    now,
                )
                .unwrap();
            }
            assert_eq!(pages, 3);
            assert_eq!(seen, expected);
        });
    }
}
