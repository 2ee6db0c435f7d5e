//! `runway usage BASE_URL --header 'Name: value'…`: reads `GET {BASE_URL}/usage` from any
//! deployment, page after page (`nextCursor`), and prints it as a table (default), JSON
//! (`--json`: the rows with their ids and counts) or CSV (`--csv`).
//!
//! What the server sends is not trusted: each answer is read up to [`MAX_ANSWER_BYTES`], at
//! most [`MAX_PAGES`] pages are followed, and every string printed has its control and
//! invisible characters escaped (a CSV cell that a spreadsheet would run as a formula is
//! prefixed with `'`).

use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;

/// The most bytes of one `/usage` answer read (a page of 1,000 rows is about 400 KiB).
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// The most pages followed (`nextCursor`): 20,000 rows at 1,000 a page.
pub const MAX_PAGES: usize = 20;

/// `runway usage` options.
#[derive(clap::Args, Debug)]
pub struct UsageArgs {
    /// The deployment's base URL (what Console calls `base_url`).
    pub base_url: String,
    /// A header of the agreed set, `Name: value` (repeat for each).
    #[arg(long = "header", short = 'H')]
    pub headers: Vec<String>,
    /// First day, YYYY-MM-DD (UTC; default: 6 days before --to).
    #[arg(long)]
    pub from: Option<String>,
    /// Last day, YYYY-MM-DD (UTC; default: today).
    #[arg(long)]
    pub to: Option<String>,
    /// Print the report as JSON: every workspace × worker × day row with its ids and counts.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print the rows as CSV.
    #[arg(long)]
    pub csv: bool,
}

/// Runs `runway usage`.
pub async fn usage(args: UsageArgs) -> ExitCode {
    match fetch(&args).await {
        Ok(report) => {
            let text = if args.json {
                json_for_terminal(&serde_json::to_string_pretty(&report).unwrap_or_default())
            } else if args.csv {
                csv(&report)
            } else {
                table(&report)
            };
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("runway usage: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Every page of the report, merged: the rows in order, the totals added up.
async fn fetch(args: &UsageArgs) -> Result<Value, String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let mut query = Vec::new();
    if let Some(f) = &args.from {
        query.push(format!("from={f}"));
    }
    if let Some(t) = &args.to {
        query.push(format!("to={t}"));
    }
    let base = format!("{}/usage", args.base_url.trim_end_matches('/'));
    let mut report = Value::Null;
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut page_query = query.clone();
        if let Some(c) = &cursor {
            page_query.push(format!("cursor={c}"));
        }
        let url = if page_query.is_empty() {
            base.clone()
        } else {
            format!("{base}?{}", page_query.join("&"))
        };
        let page = fetch_page(&client, &url, &args.headers).await?;
        cursor = match &page["nextCursor"] {
            Value::String(c) if !c.is_empty() => Some(url_safe(c)?),
            _ => None,
        };
        merge(&mut report, page);
        if cursor.is_none() {
            return Ok(report);
        }
    }
    Err(format!(
        "more than {MAX_PAGES} pages of usage: ask for fewer days with --from and --to"
    ))
}

/// A cursor from the server, if it is safe to put in a URL as it is.
fn url_safe(cursor: &str) -> Result<String, String> {
    if cursor.len() <= 4096 && cursor.bytes().all(|b| b.is_ascii_alphanumeric()) {
        Ok(cursor.to_owned())
    } else {
        Err("the server sent a nextCursor that is not a /usage cursor".into())
    }
}

/// Adds `page` to `report`: its rows after those read, its totals to the totals.
fn merge(report: &mut Value, page: Value) {
    if report.is_null() {
        *report = page;
        if let Some(o) = report.as_object_mut() {
            o.remove("nextCursor");
        }
        return;
    }
    if let (Some(rows), Some(more)) = (report["rows"].as_array_mut(), page["rows"].as_array()) {
        rows.extend(more.iter().cloned());
    }
    if let (Some(totals), Some(more)) =
        (report["totals"].as_object_mut(), page["totals"].as_object())
    {
        for (k, v) in more {
            let sum = totals.get(k).and_then(Value::as_u64).unwrap_or(0) + v.as_u64().unwrap_or(0);
            totals.insert(k.clone(), sum.into());
        }
    }
    let cost = report["totalCostUsd"].as_f64().unwrap_or(0.0)
        + page["totalCostUsd"].as_f64().unwrap_or(0.0);
    report["totalCostUsd"] = cost.into();
}

/// One answer of `GET url`, read up to [`MAX_ANSWER_BYTES`].
async fn fetch_page(
    client: &reqwest::Client,
    url: &str,
    headers: &[String],
) -> Result<Value, String> {
    send_json(client, reqwest::Method::GET, url, headers, "runway usage").await
}

/// The JSON answer of `method url` with `headers` (`Name: value`), read up to
/// [`MAX_ANSWER_BYTES`]; an error answer as its status and its `error`, escaped. `command`
/// names the CLI in messages.
pub(crate) async fn send_json(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    headers: &[String],
    command: &str,
) -> Result<Value, String> {
    let mut req = client.request(method.clone(), url);
    for h in headers {
        let (name, value) = h
            .split_once(':')
            .ok_or_else(|| format!("--header {h:?} is not `Name: value`"))?;
        req = req.header(name.trim(), value.trim());
    }
    let mut resp = req
        .send()
        .await
        .map_err(|e| format!("{method} {url}: {e}"))?;
    let status = resp.status();
    let too_large = || {
        format!(
            "{method} {url}: the answer is larger than {} MiB, the most {command} reads",
            MAX_ANSWER_BYTES / (1024 * 1024)
        )
    };
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_ANSWER_BYTES as u64)
    {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("{method} {url}: {e}"))?
    {
        if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    let body: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{method} {url}: HTTP {status}, not JSON: {e}"))?;
    if !status.is_success() {
        let why = terminal_text(body["error"].as_str().unwrap_or("no error message"));
        return Err(match status.as_u16() {
            401 => format!("HTTP 401: {why} (give the agreed headers with --header)"),
            s => format!("HTTP {s}: {why}"),
        });
    }
    Ok(body)
}

/// Whether `c` must not reach a terminal as it is: control characters (C0, DEL, C1: escape
/// sequences, carriage returns that overwrite a line) and invisible or bidirectional
/// formatting characters that make a line read otherwise than it is.
fn unsafe_on_a_terminal(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// `s` with every character [`unsafe_on_a_terminal`] written as `\u{…}`.
pub(crate) fn terminal_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if unsafe_on_a_terminal(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// JSON text with every character [`unsafe_on_a_terminal`] that serde_json leaves as it is
/// (DEL, C1, formatting characters; it escapes C0 itself) written as a JSON `\u` escape (four hex digits):
/// the same JSON, safe to print. Such characters only occur inside strings; the line feeds
/// between values are kept.
pub(crate) fn json_for_terminal(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c != '\n' && unsafe_on_a_terminal(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The columns of the table and the CSV: title, JSON field.
const COLUMNS: [(&str, &str); 12] = [
    ("day", "day"),
    ("workspace", "workspaceId"),
    ("worker", "agentId"),
    ("turns", "turns"),
    ("ok", "succeeded"),
    ("questions", "interrupted"),
    ("rate_limited", "rateLimited"),
    ("quota_exceeded", "quotaExceeded"),
    ("failed", "failed"),
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cost_usd", "costUsd"),
];

/// The table's columns after [`COLUMNS`] (the CSV has them among its later columns).
const TABLE_ONLY: [(&str, &str); 1] = [("estimated_tokens", "estimatedTokens")];

fn table_columns() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    COLUMNS.iter().chain(TABLE_ONLY.iter())
}

/// A field of `row` as printed, escaped for a terminal.
fn cell(row: &Value, field: &str) -> String {
    match &row[field] {
        Value::String(s) => terminal_text(s),
        Value::Number(n) if field == "costUsd" => format!("{:.4}", n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::Null => String::new(),
        v => terminal_text(&v.to_string()),
    }
}

fn worker_cell(row: &Value) -> String {
    match row["workerName"].as_str() {
        Some(name) => format!("{} ({})", terminal_text(name), cell(row, "agentId")),
        None => cell(row, "agentId"),
    }
}

fn rows(report: &Value) -> Vec<Value> {
    report["rows"].as_array().cloned().unwrap_or_default()
}

fn table(report: &Value) -> String {
    let mut lines: Vec<Vec<String>> = vec![table_columns().map(|(t, _)| (*t).to_owned()).collect()];
    for row in rows(report) {
        lines.push(
            table_columns()
                .map(|(_, f)| {
                    if *f == "agentId" {
                        worker_cell(&row)
                    } else {
                        cell(&row, f)
                    }
                })
                .collect(),
        );
    }
    let mut total = report["totals"].clone();
    total["day"] = Value::String("total".into());
    total["costUsd"] = report["totalCostUsd"].clone();
    lines.push(
        table_columns()
            .map(|(_, f)| {
                if *f == "agentId" || *f == "workspaceId" {
                    String::new()
                } else {
                    cell(&total, f)
                }
            })
            .collect(),
    );
    let widths: Vec<usize> = (0..COLUMNS.len() + TABLE_ONLY.len())
        .map(|i| {
            lines
                .iter()
                .map(|l| l[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = format!(
        "usage from {} to {} (UTC days)\n",
        terminal_text(report["from"].as_str().unwrap_or("?")),
        terminal_text(report["to"].as_str().unwrap_or("?"))
    );
    for l in &lines {
        let cells: Vec<String> = l
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i < 3 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.trim_end().to_owned()
}

/// A CSV cell: quoted when it holds a separator or a quote, and prefixed with `'` when a
/// spreadsheet would read it as a formula (it starts with `=`, `+`, `-` or `@`). Counts and
/// costs are never negative, so only text cells (ids, names) can be.
fn csv_cell(s: String) -> String {
    let s = if s.starts_with(['=', '+', '-', '@']) {
        format!("'{s}")
    } else {
        s
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

fn csv(report: &Value) -> String {
    let quote = csv_cell;
    let mut out = COLUMNS
        .iter()
        .map(|(t, _)| *t)
        .collect::<Vec<_>>()
        .join(",");
    out.push_str(
        ",worker_name,reasoning_tokens,model_calls,tool_calls,tool_failures,attachment_bytes,estimated_tokens\n",
    );
    for row in rows(report) {
        let mut cells: Vec<String> = COLUMNS.iter().map(|(_, f)| quote(cell(&row, f))).collect();
        for f in [
            "workerName",
            "reasoningTokens",
            "modelCalls",
            "toolCalls",
            "toolFailures",
            "attachmentBytes",
            "estimatedTokens",
        ] {
            cells.push(quote(cell(&row, f)));
        }
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report() -> Value {
        json!({"from": "2026-12-01", "to": "2026-12-07",
               "rows": [{"day": "2026-12-01", "workspaceId": "918273600000000001", "agentId": "918273688800000200",
                         "workerName": "Order desk, EU", "turns": 3, "succeeded": 2, "interrupted": 0, "rateLimited": 1,
                         "quotaExceeded": 0, "failed": 0, "inputTokens": 42, "outputTokens": 18, "reasoningTokens": 0,
                         "modelCalls": 2, "toolCalls": 1, "toolFailures": 0, "attachmentBytes": 0, "costUsd": 0.0000171}],
               "totals": {"turns": 3, "succeeded": 2, "interrupted": 0, "rateLimited": 1, "quotaExceeded": 0, "failed": 0,
                          "inputTokens": 42, "outputTokens": 18, "estimatedTokens": 7}, "totalCostUsd": 0.0000171})
    }

    #[test]
    fn table_and_csv() {
        let t = table(&report());
        assert!(t.contains("Order desk, EU (918273688800000200)"), "{t}");
        assert!(t.lines().last().unwrap().starts_with("total"), "{t}");
        assert!(
            t.lines().nth(1).unwrap().ends_with("estimated_tokens"),
            "{t}"
        );
        assert!(t.lines().last().unwrap().ends_with(" 7"), "{t}");
        let c = csv(&report());
        let line = c.lines().nth(1).unwrap();
        assert!(line.starts_with("2026-12-01,918273600000000001,918273688800000200,3,2,0,1,0,0,42,18,0.0000,\"Order desk, EU\""), "{c}");
    }
}
