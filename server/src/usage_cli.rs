//! `runway usage BASE_URL --header 'Name: value'…`: reads `GET {BASE_URL}/usage` from any
//! deployment and prints it as a table (default), JSON (`--json`: the rows with their ids and
//! counts) or CSV (`--csv`).

use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;

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
                serde_json::to_string_pretty(&report).unwrap_or_default()
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

async fn fetch(args: &UsageArgs) -> Result<Value, String> {
    let mut url = format!("{}/usage", args.base_url.trim_end_matches('/'));
    let mut query = Vec::new();
    if let Some(f) = &args.from {
        query.push(format!("from={f}"));
    }
    if let Some(t) = &args.to {
        query.push(format!("to={t}"));
    }
    if !query.is_empty() {
        url = format!("{url}?{}", query.join("&"));
    }
    let mut req = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?
        .get(&url);
    for h in &args.headers {
        let (name, value) = h
            .split_once(':')
            .ok_or_else(|| format!("--header {h:?} is not `Name: value`"))?;
        req = req.header(name.trim(), value.trim());
    }
    let resp = req.send().await.map_err(|e| format!("GET {url}: {e}"))?;
    let status = resp.status();
    let body: Value = resp
        .json()
        .await
        .map_err(|e| format!("GET {url}: HTTP {status}, not JSON: {e}"))?;
    if !status.is_success() {
        let why = body["error"].as_str().unwrap_or("no error message");
        return Err(match status.as_u16() {
            401 => format!("HTTP 401: {why} (give the agreed headers with --header)"),
            s => format!("HTTP {s}: {why}"),
        });
    }
    Ok(body)
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

fn cell(row: &Value, field: &str) -> String {
    match &row[field] {
        Value::String(s) => s.clone(),
        Value::Number(n) if field == "costUsd" => format!("{:.4}", n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

fn worker_cell(row: &Value) -> String {
    match row["workerName"].as_str() {
        Some(name) => format!("{name} ({})", cell(row, "agentId")),
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
        report["from"].as_str().unwrap_or("?"),
        report["to"].as_str().unwrap_or("?")
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

fn csv(report: &Value) -> String {
    let quote = |s: String| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s
        }
    };
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
