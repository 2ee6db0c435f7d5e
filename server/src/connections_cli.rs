//! `runway connections BASE_URL --header 'Name: value'…`: lists a deployment's connected
//! accounts from `GET {BASE_URL}/connections` (page after page, `nextCursor`) as a table
//! (default) or JSON (`--json`), and with `--revoke` revokes one user's
//! (`DELETE {BASE_URL}/connections`: each token at its provider's revocation endpoint, then
//! deleted from the vault), printing what each provider answered.
//!
//! What the server sends is not trusted: each answer is read up to
//! [`MAX_ANSWER_BYTES`](crate::usage_cli::MAX_ANSWER_BYTES), at most [`MAX_PAGES`] pages are
//! followed, and every string printed has its control and invisible characters escaped.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;

use crate::usage_cli::{json_for_terminal, send_json, terminal_text};

/// The most pages followed (`nextCursor`): 20,000 connections at 500 a page.
pub const MAX_PAGES: usize = 40;

/// `runway connections` options.
#[derive(clap::Args, Debug)]
pub struct ConnectionsArgs {
    /// The deployment's base URL (what Console calls `base_url`).
    pub base_url: String,
    /// A header of the agreed set, `Name: value` (repeat for each).
    #[arg(long = "header", short = 'H')]
    pub headers: Vec<String>,
    /// Only this workspace's connections (Console's `workspaceId`).
    #[arg(long)]
    pub workspace: Option<String>,
    /// Only this user's connections (Console's `userId`).
    #[arg(long)]
    pub user: Option<String>,
    /// Revoke the user's connections (needs --workspace and --user): each token is revoked at
    /// its provider (at its `revocation_url`, or the revocation endpoint its metadata names) and
    /// deleted from the vault.
    #[arg(long, requires_all = ["workspace", "user"])]
    pub revoke: bool,
    /// With --revoke: only the connection to this provider (its `[providers.KEY]`).
    #[arg(long, requires = "revoke")]
    pub provider: Option<String>,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `runway connections`.
pub async fn connections(args: ConnectionsArgs) -> ExitCode {
    let result = if args.revoke {
        revoke(&args).await.map(|report| {
            if args.json {
                json_for_terminal(&serde_json::to_string_pretty(&report).unwrap_or_default())
            } else {
                revoked_table(&report)
            }
        })
    } else {
        list(&args).await.map(|rows| {
            if args.json {
                let all = serde_json::json!({ "connections": rows });
                json_for_terminal(&serde_json::to_string_pretty(&all).unwrap_or_default())
            } else {
                table(&rows)
            }
        })
    };
    match result {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("runway connections: {e}");
            ExitCode::FAILURE
        }
    }
}

fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        // Revocations reach each provider (10 s each at most) before the answer.
        .timeout(Duration::from_secs(120))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())
}

/// `base/connections?…` with `pairs` encoded.
fn url(base: &str, pairs: &[(&str, &str)]) -> Result<String, String> {
    let base = format!("{}/connections", base.trim_end_matches('/'));
    let mut url = url::Url::parse(&base).map_err(|e| format!("{base}: {e}"))?;
    if !pairs.is_empty() {
        url.query_pairs_mut().extend_pairs(pairs);
    }
    Ok(url.into())
}

fn filter_pairs(args: &ConnectionsArgs) -> Vec<(&str, &str)> {
    let mut pairs = Vec::new();
    if let Some(w) = &args.workspace {
        pairs.push(("workspace", w.as_str()));
    }
    if let Some(u) = &args.user {
        pairs.push(("user", u.as_str()));
    }
    pairs
}

/// Every page of the listing, in order.
async fn list(args: &ConnectionsArgs) -> Result<Vec<Value>, String> {
    let client = client()?;
    let mut rows = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut pairs = filter_pairs(args);
        if let Some(c) = &cursor {
            pairs.push(("cursor", c.as_str()));
        }
        let page = send_json(
            &client,
            reqwest::Method::GET,
            &url(&args.base_url, &pairs)?,
            &args.headers,
            "runway connections",
        )
        .await?;
        if let Some(more) = page["connections"].as_array() {
            rows.extend(more.iter().cloned());
        }
        cursor = match &page["nextCursor"] {
            Value::String(c) if !c.is_empty() => Some(cursor_safe(c)?),
            _ => return Ok(rows),
        };
    }
    Err(format!(
        "more than {MAX_PAGES} pages of connections: name a workspace with --workspace"
    ))
}

/// A cursor from the server, if it looks like one (hex, bounded).
fn cursor_safe(cursor: &str) -> Result<String, String> {
    if cursor.len() <= 8192 && cursor.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(cursor.to_owned())
    } else {
        Err("the server sent a nextCursor that is not a /connections cursor".into())
    }
}

async fn revoke(args: &ConnectionsArgs) -> Result<Value, String> {
    let mut pairs = filter_pairs(args);
    if let Some(p) = &args.provider {
        pairs.push(("provider", p.as_str()));
    }
    send_json(
        &client()?,
        reqwest::Method::DELETE,
        &url(&args.base_url, &pairs)?,
        &args.headers,
        "runway connections",
    )
    .await
}

/// `ms` since the epoch as `YYYY-MM-DD HH:MM UTC`.
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// A text field of `row`, escaped for a terminal.
fn text(row: &Value, field: &str) -> String {
    match &row[field] {
        Value::String(s) => terminal_text(s),
        Value::Null => String::new(),
        v => terminal_text(&v.to_string()),
    }
}

fn time_cell(row: &Value, field: &str) -> String {
    row[field].as_u64().map(utc).unwrap_or_else(|| "-".into())
}

fn provider_cell(row: &Value) -> String {
    match row["providerName"].as_str() {
        Some(name) => format!("{} ({})", terminal_text(name), text(row, "provider")),
        None => text(row, "provider"),
    }
}

/// Lines of cells, each column as wide as its widest cell.
fn aligned(lines: &[Vec<String>]) -> String {
    let columns = lines.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            lines
                .iter()
                .map(|l| l[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for l in lines {
        let cells: Vec<String> = l
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.trim_end().to_owned()
}

fn table(rows: &[Value]) -> String {
    if rows.is_empty() {
        return "no connected accounts".into();
    }
    let mut lines = vec![
        [
            "workspace",
            "user",
            "provider",
            "status",
            "scopes",
            "expires",
            "connected",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for row in rows {
        let scopes: Vec<String> = row["scopes"]
            .as_array()
            .map(|s| {
                s.iter()
                    .filter_map(Value::as_str)
                    .map(terminal_text)
                    .collect()
            })
            .unwrap_or_default();
        let mut status = text(row, "status");
        if row["refreshable"] == true {
            status.push_str(" (refreshable)");
        }
        lines.push(vec![
            text(row, "workspaceId"),
            text(row, "userId"),
            provider_cell(row),
            status,
            if scopes.is_empty() {
                "-".into()
            } else {
                scopes.join(" ")
            },
            time_cell(row, "expiresAtMs"),
            time_cell(row, "connectedAtMs"),
        ]);
    }
    aligned(&lines)
}

/// What the provider said, in words.
fn revocation_cell(r: &Value) -> String {
    match r["outcome"].as_str() {
        Some("revoked") => format!("revoked ({})", text(r, "token")),
        Some("refused") => format!("refused: {}", text(r, "reason")),
        Some("unreachable") => format!("unreachable: {}", text(r, "reason")),
        Some("notDeclared") => "no revocation endpoint declared".into(),
        Some("noClient") => "no client registration kept to revoke as".into(),
        Some("unknownProvider") => "provider not configured".into(),
        Some("noToken") => "no readable token".into(),
        _ => terminal_text(&r.to_string()),
    }
}

fn revoked_table(report: &Value) -> String {
    let rows = report["revoked"].as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        return "no connected accounts to revoke".into();
    }
    let mut lines = vec![
        [
            "workspace",
            "user",
            "provider",
            "deleted",
            "at the provider",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for row in &rows {
        lines.push(vec![
            text(row, "workspaceId"),
            text(row, "userId"),
            text(row, "provider"),
            if row["deleted"] == true {
                "yes"
            } else {
                "already gone"
            }
            .into(),
            revocation_cell(&row["revocation"]),
        ]);
    }
    let mut out = aligned(&lines);
    if report["more"] == true {
        out.push_str("\nmore connections match: run the same command again for the rest");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_796_256_000_000 + 3_723_000), "2026-12-03 01:02 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00 UTC");
    }

    #[test]
    fn tables_escape_what_the_server_sends() {
        let rows = vec![
            json!({"workspaceId": "w1", "userId": "u\u{1b}[31m", "provider": "acme",
            "providerName": "Acme CRM", "status": "connected", "refreshable": true,
            "scopes": ["openid", "orders:read"], "expiresAtMs": 0}),
        ];
        let t = table(&rows);
        assert!(t.contains("u\\u{1b}[31m"), "{t}");
        assert!(!t.contains('\u{1b}'), "{t}");
        assert!(t.contains("Acme CRM (acme)"), "{t}");
        assert!(t.contains("connected (refreshable)"), "{t}");
        assert!(t.contains("openid orders:read"), "{t}");
        assert!(t.contains("1970-01-01 00:00 UTC"), "{t}");
        assert_eq!(table(&[]), "no connected accounts");
        let report = json!({"revoked": [{"workspaceId": "w1", "userId": "u1", "provider": "acme",
            "deleted": true, "revocation": {"outcome": "refused", "reason": "invalid_client"}}],
            "more": true});
        let t = revoked_table(&report);
        assert!(t.contains("refused: invalid_client"), "{t}");
        assert!(
            t.ends_with("run the same command again for the rest"),
            "{t}"
        );
    }

    #[test]
    fn urls_encode_the_ids() {
        assert_eq!(
            url("http://h/base/", &[("workspace", "w 1&x"), ("user", "u")]).unwrap(),
            "http://h/base/connections?workspace=w+1%26x&user=u"
        );
        assert!(cursor_safe("00ff").is_ok());
        assert!(cursor_safe("00ff&x=1").is_err());
    }
}
