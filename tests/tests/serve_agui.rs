//! AG-UI 1.0 on `runway serve` (issue 28): the shared suite's AG-UI cases (`runway_e2e::agui`,
//! which every adapter's suite also runs) on a fresh server, where the `default` workspace's
//! usage can be counted, and the endpoint's refusals.

use std::time::Duration;

use runway_e2e::client::fresh_id;
use runway_e2e::{
    AgentProcess, Client, TARGET_ENV, agui, free_data_dir, runway_binary, target_auth,
};
use serde_json::json;
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

/// The shared suite's AG-UI cases (`runway_e2e::agui`, run on every adapter) on a fresh
/// server, where the turns in the `default` workspace (no `forwardedProps.workspaceId`) can be
/// counted.
#[tokio::test]
async fn the_official_client_accepts_every_run_and_every_frame_is_schema_valid() {
    let (_process, client) = serve().await;
    let url = format!("{}/agui", client.base());
    let cases = agui::cases(None);
    let reports = agui::official_client(&url, &target_auth(), &cases)
        .await
        .unwrap();
    assert_eq!(reports.len(), cases.len());
    let runs: usize = reports.iter().map(agui::runs_of).sum();
    let frames: u64 = reports.iter().map(|r| r["frames"].as_u64().unwrap()).sum();
    let valid: u64 = reports.iter().map(|r| r["valid"].as_u64().unwrap()).sum();
    let accepted = reports.iter().filter(|r| r["accepted"] == true).count();
    println!(
        "AG-UI: {accepted} of {} cases ({runs} runs) accepted by @ag-ui/client; {valid} of {frames} frames valid against @ag-ui/core EventSchema",
        reports.len()
    );
    let mut failures = agui::check_reports(&reports);
    failures.extend(agui::conformance_failures(&reports).await);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Usage is counted as for Console turns: per workspace (forwardedProps.workspaceId, else
    // `default`): every run but the replay and the one in ws-agui.
    let want = runs as u64 - 2;
    assert_eq!(
        agui::usage_turns(&client, "default", want).await.unwrap(),
        want
    );
    assert_eq!(agui::usage_turns(&client, "ws-agui", 1).await.unwrap(), 1);
}

/// Console's own stream (`POST /runs`) is AG-UI 1.0 frame by frame, while `runway check
/// --strict` (the Console suites) still passes it.
#[tokio::test]
async fn consoles_stream_is_agui_frame_by_frame() {
    let (_process, client) = serve().await;
    let failures = agui::console_frames_are_agui(&client).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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

/// The suite's `ag-ui-validate` run fails on what the validator reports: a run whose text has
/// no start and which never finishes is two failures; a clean run is none (its `info` advice,
/// such as the missing timestamps, does not fail).
#[tokio::test]
async fn ag_ui_validate_fails_the_suite_on_a_broken_run_and_passes_a_clean_one() {
    let frames = |events: &[serde_json::Value]| {
        events
            .iter()
            .map(|e| format!("data: {e}\n\n"))
            .collect::<String>()
    };
    let started = json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"});
    let broken = frames(&[
        started.clone(),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}),
    ]);
    let clean = frames(&[
        started,
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m"}),
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success"}}),
    ]);
    let failures = agui::conformance_failures(&[
        json!({"name": "broken", "bodies": [broken]}),
        json!({"name": "clean", "bodies": [clean]}),
    ])
    .await;
    assert_eq!(failures.len(), 2, "{failures:#?}");
    assert!(
        failures.iter().all(|f| f.contains("\"broken #1\"")),
        "{failures:#?}"
    );
    assert!(
        failures.iter().any(|f| f.contains("AGUI101")),
        "{failures:#?}"
    );
    assert!(
        failures.iter().any(|f| f.contains("AGUI003")),
        "{failures:#?}"
    );
}
