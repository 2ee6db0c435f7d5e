//! The pilot checks every adapter runs (issue 18): several Digital Workers on one base_url
//! from a workers file, their threads apart, an unknown `agentId` refused, a burst of turns
//! against a turns-per-minute limit (across every instance sharing the store), and `/usage`
//! behind the header set with the figures of what ran.
//!
//! The target is started with [`PILOT_WORKERS`] as `RUNWAY_WORKERS`: the suite's own
//! `agentId` (and Lowkey's `runway-demo`) stay the demo agent, so the rest of the suite and
//! `runway check --agent-id` run against the same deployment.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::join_all;
use serde_json::{Value, json};

use crate::Target;
use crate::client::{AGENT_ID, Client, fresh_id};

/// The second worker: the echo agent, 10 turns per minute in each workspace.
pub const HR_AGENT_ID: &str = "918273688800000300";

/// The workers file the suite's targets serve (inline, `RUNWAY_WORKERS`).
pub const PILOT_WORKERS: &str = r#"
[workers."918273688800000200"]
name = "Order desk"
agent = "demo"

[workers."918273688800000300"]
name = "HR helper"
agent = "echo"

[workers."runway-demo"]
agent = "demo"

[workspaces."*".workers."918273688800000300"]
limits = { turns_per_minute = 10 }
"#;

fn body(agent: &str, workspace: &str, thread: &str, input: &str) -> Value {
    json!({"protocolVersion": "1", "runId": fresh_id(), "threadId": thread, "agentId": agent,
           "workspaceId": workspace, "input": input})
}

/// Runs the pilot checks; returns one line per failure.
pub async fn run_all<T: Target>(target: &T) -> Vec<String> {
    let c = Client::new(&target.base_url(), target.auth_headers());
    let mut failures = Vec::new();
    let mut check = |name: &str, r: Result<(), String>| match r {
        Ok(()) => eprintln!("[pilot] pass  {name}"),
        Err(e) => {
            eprintln!("[pilot] FAIL  {name}: {e}");
            failures.push(format!("- pilot: {name}: {e}"));
        }
    };
    check(
        "two workers on one base_url, their threads apart",
        two_workers(&c).await,
    );
    check(
        "an unknown agentId is refused with 404 naming it",
        unknown_agent(&c).await,
    );
    let workspace = fresh_id();
    let n = target.burst_turns();
    check(
        &format!("{n} concurrent turns against 10 per minute: exactly 10 run"),
        burst(&c, &workspace, n).await,
    );
    check(
        "/usage needs the header set and counts the burst",
        usage(&c, &workspace, n).await,
    );
    failures
}

async fn two_workers(c: &Client) -> Result<(), String> {
    let (thread, ws, tok) = (fresh_id(), fresh_id(), fresh_id());
    let desk = c
        .turn(&body(AGENT_ID, &ws, &thread, &format!("desk-{tok}")))
        .await;
    let hr = c
        .turn(&body(HR_AGENT_ID, &ws, &thread, &format!("hr-{tok}")))
        .await;
    if hr.text() != format!("hr-{tok}") || hr.last()["type"] != "RUN_FINISHED" {
        return Err(format!("the HR worker (echo) answered {:?}", hr.text()));
    }
    if desk.last()["type"] != "RUN_FINISHED" || desk.text() == format!("desk-{tok}") {
        return Err(format!("the desk worker (demo) answered {:?}", desk.text()));
    }
    // The same threadId on the desk worker: its thread has only its own messages.
    let transcript = c
        .turn(&body(AGENT_ID, &ws, &thread, "/transcript"))
        .await
        .text();
    if !transcript.contains(&format!("desk-{tok}")) || transcript.contains(&format!("hr-{tok}")) {
        return Err(format!("the desk's thread: {transcript:?}"));
    }
    Ok(())
}

async fn unknown_agent(c: &Client) -> Result<(), String> {
    let stranger = "918273688800000999";
    let t = c
        .turn(&body(stranger, &fresh_id(), &fresh_id(), "hello"))
        .await;
    let error: Value = serde_json::from_str(&t.body).unwrap_or(Value::Null);
    if t.status != 404
        || !error["error"]
            .as_str()
            .is_some_and(|e| e.contains(stranger))
        || !t.frames.is_empty()
    {
        return Err(format!("HTTP {} {:?}", t.status, t.body));
    }
    let lowkey = json!({"protocolVersion": 1, "pluginId": "p",
        "sessionHandle": {"id": fresh_id(), "projectPath": "/p", "sessionId": "s", "agentId": "someone-else"},
        "turn": {"turnId": fresh_id(), "message": "hi", "headless": true},
        "transcriptWindow": [], "limits": {"transcriptWindowMessages": 40}});
    let (status, error) = c
        .raw(
            reqwest::Method::POST,
            "/lowkey/turn",
            lowkey.to_string().into_bytes(),
        )
        .await;
    if status != 404
        || !error["error"]
            .as_str()
            .is_some_and(|e| e.contains("someone-else"))
    {
        return Err(format!("Lowkey: HTTP {status} {error}"));
    }
    Ok(())
}

/// Waits until at least 15 s remain in the current UTC minute (the limit's window), so a burst
/// that takes a few seconds falls in one window.
async fn align_to_minute() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let into = now.as_millis() % 60_000;
    if into > 40_000 {
        tokio::time::sleep(Duration::from_millis((60_000 - into) as u64 + 200)).await;
    }
}

async fn burst(c: &Client, workspace: &str, n: usize) -> Result<(), String> {
    align_to_minute().await;
    let minute = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() / 60;
    let started = SystemTime::now();
    let turns = join_all((0..n).map(|i| {
        let b = body(HR_AGENT_ID, workspace, &fresh_id(), &format!("burst {i}"));
        async move { c.turn(&b).await }
    }))
    .await;
    if minute(SystemTime::now()) != minute(started) {
        return Err("the burst took longer than its minute: the check cannot tell".into());
    }
    let ran = turns
        .iter()
        .filter(|t| t.last()["type"] == "RUN_FINISHED")
        .count();
    let limited: Vec<_> = turns
        .iter()
        .filter(|t| t.last()["type"] == "RUN_ERROR" && t.last()["code"] == "RATE_LIMITED")
        .collect();
    let first_frames_at_once = turns.iter().all(|t| {
        t.frames
            .first()
            .is_some_and(|f| f["type"] == "STEP_STARTED")
    });
    let message = limited
        .first()
        .map(|t| t.last()["message"].clone())
        .unwrap_or_default();
    if ran != 10 || limited.len() != n - 10 || !first_frames_at_once {
        let other: Vec<Value> = turns
            .iter()
            .filter(|t| t.last()["code"] != "RATE_LIMITED" && t.last()["type"] != "RUN_FINISHED")
            .map(|t| t.last())
            .take(3)
            .collect();
        return Err(format!(
            "{ran} ran, {} refused RATE_LIMITED, first frames at once: {first_frames_at_once}; others {other:?}",
            limited.len()
        ));
    }
    if !message.as_str().is_some_and(|m| m.contains("try again in")) {
        return Err(format!("the refusal does not say when: {message}"));
    }
    Ok(())
}

async fn usage(c: &Client, workspace: &str, n: usize) -> Result<(), String> {
    let (status, _) = c
        .with_auth(Vec::new())
        .raw(reqwest::Method::GET, "/usage", Vec::new())
        .await;
    if status != 401 {
        return Err(format!("GET /usage without the headers: HTTP {status}"));
    }
    let (status, report) = c.raw(reqwest::Method::GET, "/usage", Vec::new()).await;
    let row = report["rows"]
        .as_array()
        .and_then(|rows| {
            rows.iter()
                .find(|r| r["workspaceId"] == workspace && r["agentId"] == HR_AGENT_ID)
        })
        .cloned()
        .unwrap_or(Value::Null);
    if status != 200
        || row["turns"] != n
        || row["succeeded"] != 10
        || row["rateLimited"] != n - 10
        || row["workerName"] != "HR helper"
    {
        return Err(format!("HTTP {status}, row {row}"));
    }
    Ok(())
}
