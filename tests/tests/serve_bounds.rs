//! Every input `runway serve` and the `runway` commands take is bounded: `/metrics` does not
//! grow with the agentIds callers send, ids cannot forge or flood log lines, a file read at
//! start-up is refused past 1 MiB, `/usage` answers in pages, and `runway usage` escapes and
//! bounds what a server sends it.

use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt;
use runway_e2e::client::{AGENT_ID, fresh_id};
use runway_e2e::{AgentProcess, Client, TARGET_ENV, free_data_dir, runway_binary, target_auth};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

/// `runway serve` with the demo agent serving every agentId (no workers file).
async fn serve_demo(label: &str) -> (AgentProcess, std::path::PathBuf) {
    let dir = free_data_dir(label);
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .envs(TARGET_ENV)
        .env_remove("RUNWAY_WORKERS")
        .env_remove("RUNWAY_WORKERS_FILE")
        .env("RUNWAY_LOG", "warn");
    (AgentProcess::start(cmd, Duration::from_secs(30)).await, dir)
}

fn lowkey_turn(turn_id: &str, session: &str, agent: &str, plugin: &str, message: &str) -> Value {
    json!({
        "protocolVersion": 1,
        "pluginId": plugin,
        "sessionHandle": {"id": session, "projectPath": "/p", "sessionId": "s", "agentId": agent},
        "turn": {"turnId": turn_id, "message": message, "headless": false, "userName": "e2e"},
        "transcriptWindow": [],
        "limits": {"transcriptWindowMessages": 40}
    })
}

async fn post_lowkey(base: &str, body: &Value) -> String {
    let mut post = reqwest::Client::new()
        .post(format!("{base}/lowkey/turn"))
        .header("content-type", "application/json")
        .timeout(Duration::from_secs(30))
        .body(body.to_string());
    for (k, v) in target_auth() {
        post = post.header(k, v);
    }
    post.send()
        .await
        .expect("lowkey turn")
        .text()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_stay_small_whatever_agent_ids_turns_carry() {
    let (server, dir) = serve_demo("metrics").await;
    let base = server.base_url().to_owned();
    let ids: Vec<String> = (0..60)
        .map(|i| format!("{i}-{}", "x".repeat(16 * 1024)))
        .collect();
    futures::stream::iter(ids.iter().map(|agent| {
        let body = lowkey_turn(&fresh_id(), &fresh_id(), agent, "runway-e2e", "hi");
        let base = base.clone();
        async move { post_lowkey(&base, &body).await }
    }))
    .buffer_unordered(4)
    .for_each(|answer| async move {
        assert!(answer.contains(r#""status":"complete""#), "{answer}");
    })
    .await;
    let (status, _, text) = Client::new(&base, target_auth())
        .get_with_auth("/metrics")
        .await;
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    assert_eq!(status, 200);
    assert!(
        text.len() < 8 * 1024,
        "/metrics is {} bytes after 60 turns with 16 KiB agentIds",
        text.len()
    );
    assert!(
        text.contains("runway_turns_total{worker=\"other\",outcome=\"SUCCESS\"} 60\n"),
        "{text}"
    );
}

/// The lines `runway serve` logs at `RUNWAY_LOG=info` while it serves one Lowkey turn with
/// `ids` (turnId, session id, agentId, pluginId), failing it (`/fail`) so it logs a warning too.
async fn logs_of_a_lowkey_turn(ids: [&str; 4]) -> String {
    let dir = free_data_dir("log-ids");
    let mut child = Command::new(runway_binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .envs(TARGET_ENV)
        .env("RUNWAY_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("runway starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.trim().strip_prefix("base_url:") {
                return url.trim().to_owned();
            }
        }
        panic!("no base_url");
    })
    .await
    .expect("ready");
    let mut stderr = child.stderr.take().unwrap();
    let [turn, session, agent, plugin] = ids;
    let answer = post_lowkey(&base, &lowkey_turn(turn, session, agent, plugin, "/fail")).await;
    assert!(answer.contains(r#""type":"error""#), "{answer}");
    let _ = child.start_kill();
    let mut logs = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stderr.read_to_string(&mut logs)).await;
    let _ = std::fs::remove_dir_all(dir);
    logs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lowkey_ids_neither_forge_nor_flood_log_lines() {
    let plugin = format!("p{}", "y".repeat(60_000));
    let logs = logs_of_a_lowkey_turn([
        "t1\nFORGED turn line",
        "s1\r\nFORGED session line",
        "runway-demo\nFORGED agent line",
        &plugin,
    ])
    .await;
    assert!(
        logs.lines().any(|l| l.contains("RUN_ERROR")),
        "no line about the failed turn:\n{logs}"
    );
    for line in logs.lines() {
        assert!(
            !line.trim_start().starts_with("FORGED"),
            "a request id started a log line: {line}"
        );
        assert!(
            line.len() < 2_000,
            "a {}-byte log line: {}…",
            line.len(),
            &line[..200]
        );
    }
    // Still there to read: escaped, and cut with a marker.
    assert!(
        logs.contains(r"t1\u{a}FORGED\u{20}turn\u{20}line"),
        "{logs}"
    );
    assert!(logs.contains("bytes]"), "{logs}");
}

/// `runway serve` with `env`: it must refuse to start, quickly; returns what it printed.
async fn refused_start(env: &[(&str, &str)]) -> String {
    let dir = free_data_dir("start-up-file");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .envs(TARGET_ENV)
        .envs(env.iter().copied())
        .env("RUNWAY_LOG", "warn")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(20), cmd.output())
        .await
        .expect("runway serve stopped at once")
        .expect("runway serve ran");
    let _ = std::fs::remove_dir_all(dir);
    assert!(!out.status.success(), "it started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn a_large_file(name: &str) -> std::path::PathBuf {
    let dir = free_data_dir("large-files");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    // Valid TOML (comments) well past 1 MiB: refused for its size alone.
    std::fs::write(&path, "# padding\n".repeat(200_000)).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_up_file_past_one_mib_is_refused_naming_it() {
    let large = a_large_file("workers.toml");
    let large = large.to_str().unwrap();
    let said = refused_start(&[("RUNWAY_WORKERS_FILE", large)]).await;
    assert!(
        said.contains(large) && said.contains("larger than 1 MiB"),
        "{said}"
    );
    let said = refused_start(&[
        ("RUNWAY_AGENT", "model"),
        ("RUNWAY_MODEL_BASE_URL", "http://127.0.0.1:9/v1"),
        ("RUNWAY_MODEL", "m"),
        ("RUNWAY_TOOLS_FILE", large),
    ])
    .await;
    assert!(
        said.contains("RUNWAY_TOOLS_FILE")
            && said.contains(large)
            && said.contains("larger than 1 MiB"),
        "{said}"
    );
    let workers = format!(
        "[workers.\"{AGENT_ID}\"]\nagent = \"model\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\ntools_file = \"{large}\"\n"
    );
    let said = refused_start(&[("RUNWAY_WORKERS", &workers)]).await;
    assert!(
        said.contains(large) && said.contains("larger than 1 MiB"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_device_named_as_a_start_up_file_is_refused() {
    let said = refused_start(&[("RUNWAY_WORKERS_FILE", "/dev/zero")]).await;
    assert!(
        said.contains("/dev/zero") && said.contains("larger than 1 MiB"),
        "{said}"
    );
    let workers = format!(
        "[workers.\"{AGENT_ID}\"]\nagent = \"model\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\ntools_file = \"/dev/zero\"\n"
    );
    let said = refused_start(&[("RUNWAY_WORKERS", &workers)]).await;
    assert!(
        said.contains("/dev/zero") && said.contains("larger than 1 MiB"),
        "{said}"
    );
    // The playground's --header-file too.
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        Command::new(runway_binary())
            .args([
                "playground",
                "http://127.0.0.1:9",
                "--listen",
                "127.0.0.1:0",
                "--header-file",
                "/dev/zero",
            ])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("runway playground stopped at once")
    .expect("runway playground ran");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        said.contains("/dev/zero") && said.contains("larger than 1 MiB"),
        "{said}"
    );
}

async fn runway_usage(base: &str, extra: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(runway_binary());
    cmd.arg("usage").arg(base).kill_on_drop(true);
    for (k, v) in target_auth() {
        cmd.arg("--header").arg(format!("{k}: {v}"));
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.args(extra).output())
        .await
        .expect("runway usage ended in time")
        .expect("runway usage ran");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_answers_in_pages_of_at_most_a_thousand_rows_on_serve() {
    let (server, dir) = serve_demo("usage-pages").await;
    let base = server.base_url().to_owned();
    let c = Client::new(&base, target_auth());
    // 1,001 workspaces, one turn each: 1,001 usage rows today.
    futures::stream::iter((0..1_001).map(|i| {
        let c = c.clone();
        async move {
            let body = json!({"protocolVersion": "1", "runId": fresh_id(), "threadId": fresh_id(),
                              "agentId": AGENT_ID, "workspaceId": format!("ws{i:04}"), "input": "hi"});
            let (status, _) = c
                .raw(reqwest::Method::POST, "/runs", body.to_string().into_bytes())
                .await;
            assert_eq!(status, 200);
        }
    }))
    .buffer_unordered(8)
    .collect::<Vec<()>>()
    .await;
    let (status, _, first) = c.get_with_auth("/usage").await;
    assert_eq!(status, 200, "{first}");
    let first: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["rows"].as_array().unwrap().len(), 1_000);
    assert_eq!(first["totals"]["turns"], 1_000);
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let (status, _, second) = c.get_with_auth(&format!("/usage?cursor={cursor}")).await;
    assert_eq!(status, 200, "{second}");
    let second: Value = serde_json::from_str(&second).unwrap();
    assert_eq!(second["rows"].as_array().unwrap().len(), 1);
    assert_eq!(second["rows"][0]["workspaceId"], "ws1000");
    assert!(second.get("nextCursor").is_none(), "{second}");
    let (status, _, bad) = c.get_with_auth("/usage?cursor=zz").await;
    assert_eq!(status, 400, "{bad}");

    // `runway usage` follows the pages.
    let (ok, csv, err) = runway_usage(&base, &["--csv"]).await;
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    assert!(ok, "{err}");
    assert_eq!(csv.lines().count(), 1 + 1_001, "{err}");
}

/// A loopback server answering every request with `answer(request line)`, as raw bytes.
async fn scripted_usage_server(answer: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = std::sync::Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let line = head.lines().next().unwrap_or_default().to_owned();
                let _ = sock.write_all(&answer(&line)).await;
            });
        }
    });
    format!("http://{addr}")
}

fn json_answer(body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn row(workspace: &str, agent: &str, name: &str) -> Value {
    json!({"day": "2026-12-01", "workspaceId": workspace, "agentId": agent, "workerName": name,
           "turns": 1, "succeeded": 1, "interrupted": 0, "rateLimited": 0, "quotaExceeded": 0,
           "failed": 0, "inputTokens": 10, "outputTokens": 5, "costUsd": 0.5})
}

fn page(rows: Vec<Value>, next: Option<&str>) -> Value {
    let n = rows.len() as u64;
    let mut p = json!({"from": "2026-12-01", "to": "2026-12-07", "rows": rows,
        "totals": {"turns": n, "succeeded": n, "interrupted": 0, "rateLimited": 0,
                   "quotaExceeded": 0, "failed": 0, "inputTokens": 10 * n, "outputTokens": 5 * n},
        "totalCostUsd": 0.5 * n as f64});
    if let Some(c) = next {
        p["nextCursor"] = c.into();
    }
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runway_usage_escapes_what_the_server_sends_and_follows_its_pages() {
    let base = scripted_usage_server(|line| {
        if line.contains("cursor=c0ffee") {
            json_answer(&page(
                vec![row("=HYPERLINK(\"http://x\")", "@SUM(A1)", "second page")],
                None,
            ))
        } else {
            json_answer(&page(
                vec![row(
                    "ws\u{1b}]0;pwned\u{7}\u{1b}[2J",
                    "a\u{9b}31m",
                    "Desk\r\u{202e}evil",
                )],
                Some("c0ffee"),
            ))
        }
    })
    .await;
    let (ok, table, err) = runway_usage(&base, &[]).await;
    assert!(ok, "{err}");
    let (ok, csv, err) = runway_usage(&base, &["--csv"]).await;
    assert!(ok, "{err}");
    let (ok, json, err) = runway_usage(&base, &["--json"]).await;
    assert!(ok, "{err}");
    for (what, out) in [("table", &table), ("csv", &csv), ("json", &json)] {
        assert!(
            !out.contains(['\u{1b}', '\u{7}', '\u{9b}', '\r', '\u{202e}']),
            "{what} prints a raw control character: {out:?}"
        );
    }
    assert!(table.contains(r"ws\u{1b}]0;pwned\u{7}\u{1b}[2J"), "{table}");
    assert!(table.contains(r"Desk\u{d}\u{202e}evil"), "{table}");
    // Both pages, their totals added up.
    assert!(table.contains("second page"), "{table}");
    let total = table.lines().last().unwrap();
    assert!(
        total.starts_with("total") && total.contains(" 2 ") && total.contains("1.0000"),
        "{table}"
    );
    // A cell a spreadsheet would run is text.
    let second = csv.lines().nth(2).expect("the second page's row");
    assert!(
        second.starts_with(r#"2026-12-01,"'=HYPERLINK(""http://x"")",'@SUM(A1),"#),
        "{csv}"
    );
    let parsed: Value = serde_json::from_str(&json).expect("still JSON");
    assert_eq!(parsed["rows"][0]["agentId"], "a\u{9b}31m");
    assert_eq!(parsed["rows"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runway_usage_stops_reading_an_endless_answer() {
    // A 200 MB answer, chunked and written as it is read: the reader must stop at its cap.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let served = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        let _ = sock.read(&mut buf).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
        let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, " ".repeat(1 << 20));
        let mut sent = 0usize;
        if sock.write_all(head.as_bytes()).await.is_ok() {
            for _ in 0..200 {
                if sock.write_all(chunk.as_bytes()).await.is_err() {
                    break;
                }
                sent += 1 << 20;
            }
        }
        sent
    });
    let (ok, _, err) = runway_usage(&base, &[]).await;
    assert!(!ok);
    assert!(err.contains("larger than 4 MiB"), "{err}");
    let sent = served.await.unwrap();
    assert!(sent < 100 << 20, "the reader went on to {sent} bytes");
}
