//! `GET {base}/usage?from=YYYY-MM-DD&to=YYYY-MM-DD`: the usage rows (workspace × worker × UTC
//! day) of a range of days, as JSON.

use futures::future::join_all;
use serde::Serialize;
use time::Date;

use crate::error::StoreError;
use crate::meter::limits::Policy;
use crate::meter::record::usage_part;
use crate::meter::window::{day_of, parse_day};
use crate::store::TurnStore;
use crate::store::tally::Tally;

/// Most days one request reads (one store read per day).
pub const MAX_USAGE_DAYS: i64 = 31;

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

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    /// First day, inclusive.
    pub from: String,
    /// Last day, inclusive.
    pub to: String,
    /// Rows by day, workspace, worker.
    pub rows: Vec<UsageRow>,
    /// Every row added up.
    pub totals: Tally,
    /// `totals.costMicroUsd` in US dollars.
    pub total_cost_usd: f64,
}

/// The days a query asks for: `from` and `to` (`YYYY-MM-DD`, inclusive), by default the last
/// 7 days up to today.
///
/// # Errors
/// A user-safe message: a day that does not parse, `from` after `to`, or more than
/// [`MAX_USAGE_DAYS`] days.
pub fn days_of_query(query: Option<&str>, now_ms: u64) -> Result<(Date, Date), String> {
    let mut from = None;
    let mut to = None;
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
            _ => return Err(format!("unknown parameter {k:?}: use from and to")),
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
    Ok((from, to))
}

/// Reads the rows of the days `from..=to`.
///
/// # Errors
/// The store failed.
pub async fn usage_report<S: TurnStore>(
    store: &S,
    policy: &Policy,
    from: Date,
    to: Date,
    now_ms: u64,
) -> Result<UsageReport, StoreError> {
    let mut days = Vec::new();
    let mut d = from;
    while d <= to {
        days.push(d.to_string());
        d = match d.next_day() {
            Some(n) => n,
            None => break,
        };
    }
    let reads = join_all(days.iter().map(|day| {
        let part = usage_part(day);
        async move { store.tallies(&part, now_ms).await }
    }))
    .await;
    let mut rows = Vec::new();
    let mut totals = Tally::default();
    for (day, read) in days.iter().zip(reads) {
        for (item, tally) in read? {
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
    }
    Ok(UsageReport {
        from: from.to_string(),
        to: to.to_string(),
        rows,
        totals,
        total_cost_usd: totals.cost_micro_usd as f64 / 1_000_000.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries() {
        let now = 1_798_761_570_000; // 2026-12-31
        let (f, t) = days_of_query(None, now).unwrap();
        assert_eq!(
            (f.to_string(), t.to_string()),
            ("2026-12-25".into(), "2026-12-31".into())
        );
        let (f, t) = days_of_query(Some("from=2026-12-01&to=2026-12-02"), now).unwrap();
        assert_eq!(
            (f.to_string(), t.to_string()),
            ("2026-12-01".into(), "2026-12-02".into())
        );
        for bad in [
            "from=x",
            "to=2026-12-01&from=2026-12-02",
            "from=2026-01-01&to=2026-12-01",
            "day=1",
        ] {
            assert!(days_of_query(Some(bad), now).is_err(), "{bad}");
        }
    }
}
