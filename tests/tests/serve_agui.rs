//! AG-UI 1.0 on `runway serve` (issue 28, first slice): the official client (`@ag-ui/client`
//! 1.0.0 `HttpAgent.runAgent`: parse, verify, apply) over the demo agent's turns, every frame
//! checked against `@ag-ui/core` 1.0.0's `EventSchema` (tests/agui/run.mjs, installed by
//! scripts/setup-agui.sh). One server for the file.

use std::path::Path;
use std::time::Duration;

use runway_e2e::client::fresh_id;
use runway_e2e::{AgentProcess, Client, TARGET_ENV, free_data_dir, runway_binary, target_auth};
use serde_json::{Value, json};
use tokio::process::Command;

async fn serve() -> (AgentProcess, Client) {
    let data_dir = free_data_dir("agui");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .envs(TARGET_ENV)
        .env("RUNWAY_LOG", "warn")
        .env_remove("RUNWAY_WORKERS");
    let process = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let client = Client::new(process.base_url(), target_auth());
    (process, client)
}

/// Runs `cases` through tests/agui/run.mjs against `url`; one report per case.
async fn official_client(url: &str, cases: &[Value]) -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("agui");
    assert!(
        dir.join("node_modules/@ag-ui/client").exists(),
        "run scripts/setup-agui.sh first"
    );
    let headers: serde_json::Map<String, Value> = target_auth()
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let arg = json!({"url": url, "headers": headers, "cases": cases}).to_string();
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        Command::new("node")
            .arg("run.mjs")
            .arg(arg)
            .current_dir(&dir)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the AG-UI client finishes within 120 s")
    .expect("node");
    assert!(
        out.status.success(),
        "run.mjs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "run.mjs printed no report ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn case(name: &str, thread: &str, input: &str) -> Value {
    json!({"name": name, "threadId": thread, "runId": fresh_id(), "input": input})
}

fn text_of(report: &Value, role: &str) -> Vec<String> {
    report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == role)
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn the_official_client_accepts_every_run_and_every_frame_is_schema_valid() {
    let (_process, client) = serve().await;
    let url = format!("{}/agui", client.base());
    let thread = fresh_id();
    let history = json!([
        {"id": "h1", "role": "user", "content": "I like apples"},
        {"id": "h2", "role": "assistant", "content": "Noted: apples."}
    ]);
    let mut second = case("second run, whole history", &thread, "/transcript");
    second["history"] = json!([
        {"id": "c1", "role": "user", "content": "hello there"},
        {"id": "c2", "role": "assistant", "content": "You said \"hello there\"."}
    ]);
    let mut fork = case("fork with history", &fresh_id(), "/transcript");
    fork["history"] = history;
    let mut workspace = case("in a workspace", &fresh_id(), "hi");
    workspace["forwardedProps"] = json!({"workspaceId": "ws-agui", "userId": "ada"});
    let mut approved = case("interrupt, then resume", &fresh_id(), "/input");
    approved["resume"] =
        json!({"status": "resolved", "payload": {"decision": "respond", "message": "Ada"}});
    let mut cancelled = case("interrupt, then cancel", &fresh_id(), "/approve");
    cancelled["resume"] = json!({"status": "cancelled"});
    let cases = vec![
        case("plain", &thread, "hello there"),
        second,
        case("tool", &fresh_id(), "/tool"),
        case("reasoning", &fresh_id(), "/reason"),
        case("file", &fresh_id(), "/file"),
        case("long answer", &fresh_id(), "/long 300000"),
        case("heartbeats", &fresh_id(), "/slow 2"),
        case("error", &fresh_id(), "/fail"),
        case("interrupt", &fresh_id(), "/approve"),
        approved,
        cancelled,
        fork,
        workspace,
        json!({"name": "replay of plain", "replayOf": "plain"}),
    ];
    let reports = official_client(&url, &cases).await;
    assert_eq!(reports.len(), cases.len());
    let accepted = reports.iter().filter(|r| r["accepted"] == true).count();
    let runs_of = |r: &Value| {
        r["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| *e == "RUN_STARTED")
            .count()
    };
    let runs: usize = reports.iter().map(runs_of).sum();
    let accepted_runs: usize = reports
        .iter()
        .filter(|r| r["accepted"] == true)
        .map(runs_of)
        .sum();
    let frames: u64 = reports.iter().map(|r| r["frames"].as_u64().unwrap()).sum();
    let valid: u64 = reports.iter().map(|r| r["valid"].as_u64().unwrap()).sum();
    println!(
        "AG-UI: {accepted} of {} cases ({accepted_runs} of {runs} runs) accepted by @ag-ui/client; {valid} of {frames} frames valid against @ag-ui/core EventSchema",
        reports.len()
    );
    for r in &reports {
        assert_eq!(r["accepted"], true, "{r:#}");
        assert_eq!(r["valid"], r["frames"], "{r:#}");
        assert_eq!(
            r["warnings"],
            json!([]),
            "the client repaired nothing: {r:#}"
        );
        let events: Vec<&str> = r["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        assert_eq!(events.first(), Some(&"RUN_STARTED"), "{r:#}");
        let finals = events
            .iter()
            .filter(|e| matches!(**e, "RUN_FINISHED" | "RUN_ERROR"))
            .count();
        let runs = events.iter().filter(|e| **e == "RUN_STARTED").count();
        assert_eq!(finals, runs, "exactly one final event per run: {r:#}");
    }
    let by_name = |n: &str| reports.iter().find(|r| r["name"] == n).unwrap();

    let plain = by_name("plain");
    assert_eq!(plain["outcome"], "success", "{plain:#}");
    let answer = text_of(plain, "assistant");
    assert_eq!(answer.len(), 1, "{plain:#}");
    assert!(
        answer[0].starts_with("You said \"hello there\"."),
        "{answer:?}"
    );

    // The thread is runway's: the client's whole history is not appended again.
    let second = by_name("second run, whole history");
    let transcript = text_of(second, "assistant").pop().unwrap();
    assert!(transcript.starts_with("2 messages:"), "{transcript}");
    assert_eq!(
        transcript.matches("hello there").count(),
        2,
        "the first input once, and the first answer quoting it once: {transcript}"
    );

    let tool = by_name("tool");
    let events = tool["events"].to_string();
    for t in [
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
    ] {
        assert!(events.contains(t), "{t}: {tool:#}");
    }
    assert!(
        tool["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "tool" && m["content"] == "12:00 UTC"),
        "{tool:#}"
    );

    let reasoning = by_name("reasoning");
    let events = reasoning["events"].to_string();
    for t in [
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
    ] {
        assert!(events.contains(t), "{t}: {reasoning:#}");
    }
    assert!(!text_of(reasoning, "reasoning").is_empty(), "{reasoning:#}");

    assert!(
        by_name("file")["events"]
            .to_string()
            .contains("STATE_SNAPSHOT"),
        "{:#}",
        by_name("file")
    );
    let long: usize = text_of(by_name("long answer"), "assistant")
        .iter()
        .map(String::len)
        .sum();
    assert_eq!(long, 300_000);
    let slow = by_name("heartbeats");
    assert_eq!(slow["outcome"], "success", "{slow:#}");
    assert!(
        slow["comments"].as_u64().unwrap() >= 1,
        "a silence of 2 s with a 1 s heartbeat is kept alive with SSE comments: {slow:#}"
    );

    let error = by_name("error");
    assert_eq!(error["runError"]["code"], "AGENT_ERROR", "{error:#}");

    let interrupt = by_name("interrupt");
    assert_eq!(interrupt["outcome"], "interrupt", "{interrupt:#}");
    let asked = &interrupt["interrupts"][0];
    assert_eq!(asked["reason"], "approval", "{interrupt:#}");
    assert_eq!(asked["message"], "Approve the demo action?");
    assert!(
        asked["id"].as_str().unwrap().ends_with(".interrupt"),
        "{asked}"
    );
    assert!(asked["responseSchema"].is_object(), "{asked}");

    // resume[] maps back onto the agent's Resume, and the question is not asked again.
    let resumed = by_name("interrupt, then resume");
    assert_eq!(resumed["outcome"], "success", "{resumed:#}");
    assert_eq!(
        text_of(resumed, "assistant"),
        ["To \"What is your name?\", you answered \"Ada\"."]
    );
    let cancelled = by_name("interrupt, then cancel");
    assert_eq!(
        text_of(cancelled, "assistant"),
        ["To \"Approve the demo action?\", you rejected."]
    );

    let fork = by_name("fork with history");
    let transcript = text_of(fork, "assistant").pop().unwrap();
    assert!(transcript.contains("user: I like apples"), "{transcript}");

    assert_eq!(by_name("in a workspace")["outcome"], "success");
    // Usage is counted as for Console turns: per workspace (forwardedProps.workspaceId, else
    // `default`) and worker (`default` on a single-agent deployment).
    let (status, _, usage) = client.get_with_auth("/usage").await;
    assert_eq!(status, 200, "{usage}");
    let usage: Value = serde_json::from_str(&usage).unwrap();
    let turns = |workspace: &str| {
        usage["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["workspaceId"] == workspace && r["agentId"] == "default")
            .map(|r| r["turns"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(turns("ws-agui"), 1, "{usage:#}");
    assert_eq!(
        turns("default") as usize,
        runs - 2,
        "every run but the replay and the one in ws-agui: {usage:#}"
    );

    // A replayed runId answers the recorded events, not a new run.
    let replay = by_name("replay of plain");
    assert_eq!(replay["events"], plain["events"]);
    assert_eq!(text_of(replay, "assistant"), text_of(plain, "assistant"));
}

#[tokio::test]
async fn invalid_input_is_a_4xx_json_error_and_auth_is_the_same_as_runs() {
    let (_process, client) = serve().await;
    let (status, body) = client
        .raw(
            reqwest::Method::POST,
            "/agui",
            br#"{"threadId": 1}"#.to_vec(),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"].as_str().unwrap().contains("threadId"),
        "{body}"
    );
    let ok = json!({"threadId": "t", "runId": fresh_id(), "messages": []});
    let (status, body) = client
        .with_auth(vec![])
        .raw(reqwest::Method::POST, "/agui", ok.to_string().into_bytes())
        .await;
    assert_eq!(status, 401, "{body}");
    let (status, _) = client.raw(reqwest::Method::GET, "/agui", Vec::new()).await;
    assert_eq!(status, 405);
}
