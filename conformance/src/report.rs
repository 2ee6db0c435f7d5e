//! The checklist report: one line per onboarding checklist item, readable at
//! a glance, plus the findings behind each line with the four things an
//! operator needs to line up logs (runId, threadId, timestamp, code).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::findings::{Code, Finding, Severity};
use crate::transport::Settings;

/// The verdict of one checklist line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Met.
    Pass,
    /// Not checked (and why is in the detail).
    Skip,
    /// Met, with something users would suffer from.
    Warn,
    /// Not met.
    Fail,
}

impl Status {
    /// The label printed in the checklist.
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Skip => "SKIP",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }
}

/// A finding placed in the report, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReportedFinding {
    /// The finding.
    #[serde(flatten)]
    pub finding: Finding,
    /// Which request revealed it (`"context turn 1"`, `"/health"`...).
    pub source: String,
    /// The request's runId, for a turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The request's threadId, for a turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// When the request was sent (RFC 3339, UTC).
    pub at: String,
}

/// One line of the checklist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckItem {
    /// A stable machine name (`"endpoints"`, `"context"`...).
    pub key: &'static str,
    /// The line's title, as in the contract's checklist.
    pub title: String,
    /// The verdict.
    pub status: Status,
    /// The measured figure (TTFB, longest silence...), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figure: Option<String>,
    /// The codes behind the verdict.
    pub codes: Vec<Code>,
    /// One sentence explaining the verdict.
    pub detail: String,
    /// The findings placed on this line.
    pub findings: Vec<ReportedFinding>,
}

impl CheckItem {
    /// A new line, passing until told otherwise.
    pub fn new(key: &'static str, title: impl Into<String>) -> Self {
        CheckItem {
            key,
            title: title.into(),
            status: Status::Pass,
            figure: None,
            codes: Vec::new(),
            detail: String::new(),
            findings: Vec::new(),
        }
    }

    /// Adds a finding: the status rises to `Fail` for an error, `Warn` for
    /// a warning.
    pub fn add(&mut self, finding: ReportedFinding) {
        let status = match finding.finding.severity {
            Severity::Error => Status::Fail,
            Severity::Warning => Status::Warn,
        };
        self.raise(status);
        self.add_code(finding.finding.code);
        self.findings.push(finding);
    }

    /// Lists a code behind the verdict whose finding sits on another line
    /// (e.g. the turn that failed with `TTFB_TIMEOUT`), raising the status
    /// accordingly.
    pub fn add_code(&mut self, code: Code) {
        if !self.codes.contains(&code) {
            self.codes.push(code);
        }
        self.raise(match code.severity() {
            Severity::Error => Status::Fail,
            Severity::Warning => Status::Warn,
        });
    }

    /// Raises the status (never lowers it; `Skip` is replaced by anything
    /// worse than `Pass`).
    pub fn raise(&mut self, status: Status) {
        if status > self.status {
            self.status = status;
        }
    }

    /// Marks the line skipped with a reason. A line that already carries
    /// a warning or a failure keeps that status (only the reason is set).
    pub fn skip(&mut self, why: impl Into<String>) {
        if self.status == Status::Pass {
            self.status = Status::Skip;
        }
        self.detail = why.into();
    }
}

/// The whole check.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// The agent checked.
    pub base_url: String,
    /// The deadlines, limits and egress mode used.
    pub settings: Settings,
    /// The checklist, in order.
    pub items: Vec<CheckItem>,
    /// Remarks that are not findings (e.g. egress rules not applied).
    pub notes: Vec<String>,
}

impl CheckReport {
    /// Number of lines with `status`.
    pub fn count(&self, status: Status) -> usize {
        self.items.iter().filter(|i| i.status == status).count()
    }

    /// Every code reported on any line, deduplicated.
    pub fn codes(&self) -> BTreeSet<Code> {
        self.items
            .iter()
            .flat_map(|i| i.codes.iter().copied())
            .collect()
    }

    /// The process exit code: 1 on any failure (or, with `strict`, any
    /// warning), 0 otherwise.
    pub fn exit_code(&self, strict: bool) -> i32 {
        let failed = self.count(Status::Fail) > 0;
        let warned = self.count(Status::Warn) > 0;
        if failed || (strict && warned) { 1 } else { 0 }
    }

    /// The machine-readable report.
    pub fn to_json(&self, strict: bool) -> String {
        let value = serde_json::json!({
            "base_url": self.base_url,
            "exit_code": self.exit_code(strict),
            "summary": {
                "pass": self.count(Status::Pass),
                "fail": self.count(Status::Fail),
                "warn": self.count(Status::Warn),
                "skip": self.count(Status::Skip),
            },
            "settings": self.settings,
            "items": self.items,
            "notes": self.notes,
        });
        serde_json::to_string_pretty(&value).expect("the report always serializes")
    }

    /// The human checklist.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "runway check {}", self.base_url);
        let width = self.items.iter().map(|i| i.title.len()).max().unwrap_or(0);
        for item in &self.items {
            let mut line = format!("  [{}] {:width$}", item.status.label(), item.title);
            if let Some(f) = &item.figure {
                let _ = write!(line, "  {f}");
            }
            if !item.codes.is_empty() {
                let codes: Vec<&str> = item.codes.iter().map(|c| c.as_str()).collect();
                let _ = write!(line, "  {}", codes.join(", "));
            }
            let _ = writeln!(out, "{}", line.trim_end());
            if !item.detail.is_empty() {
                let _ = writeln!(out, "         {}", item.detail);
            }
            for f in &item.findings {
                let ids = match (&f.run_id, &f.thread_id) {
                    (Some(r), Some(t)) => format!(" runId={r} threadId={t}"),
                    _ => String::new(),
                };
                let _ = writeln!(
                    out,
                    "         - {} {} ({}{} at {}): {}",
                    if f.finding.severity == Severity::Error {
                        "error"
                    } else {
                        "warning"
                    },
                    f.finding.code,
                    f.source,
                    ids,
                    f.at,
                    f.finding.message
                );
            }
        }
        for note in &self.notes {
            let _ = writeln!(out, "  note: {note}");
        }
        let _ = writeln!(
            out,
            "{} passed, {} failed, {} warned, {} skipped",
            self.count(Status::Pass),
            self.count(Status::Fail),
            self.count(Status::Warn),
            self.count(Status::Skip)
        );
        out
    }
}

/// Formats a time as RFC 3339 UTC with milliseconds
/// (`2026-08-20T09:15:02.123Z`).
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_787_130_000_123);
        assert_eq!(rfc3339(t), "2026-08-19T09:00:00.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn status_only_rises() {
        let mut item = CheckItem::new("x", "X");
        item.add_code(Code::HeartbeatGap);
        assert_eq!(item.status, Status::Warn);
        item.add_code(Code::ContextLost);
        assert_eq!(item.status, Status::Fail);
        item.raise(Status::Warn);
        assert_eq!(item.status, Status::Fail);
        assert_eq!(item.codes, vec![Code::HeartbeatGap, Code::ContextLost]);
    }

    #[test]
    fn exit_codes() {
        let mut r = CheckReport {
            base_url: "http://x".into(),
            settings: Settings::default(),
            items: vec![CheckItem::new("a", "A")],
            notes: vec![],
        };
        assert_eq!(r.exit_code(true), 0);
        r.items[0].raise(Status::Warn);
        assert_eq!(r.exit_code(false), 0);
        assert_eq!(r.exit_code(true), 1);
        r.items[0].raise(Status::Fail);
        assert_eq!(r.exit_code(false), 1);
        let text = r.render_text();
        assert!(text.contains("[FAIL] A"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&r.to_json(false)).unwrap();
        assert_eq!(json["exit_code"], 1);
        assert_eq!(json["items"][0]["status"], "fail");
    }
}
