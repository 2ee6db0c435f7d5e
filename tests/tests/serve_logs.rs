//! What `runway serve` logs about a turn names it: every line carries the run and thread ids
//! (the turn id and session on Lowkey), the agentId and the workspaceId (the plugin id on
//! Lowkey) at every `RUNWAY_LOG` level, including `warn`, the
//! level an operator picks to keep log costs down.

use std::process::Stdio;
use std::time::Duration;

use runway_e2e::client::{AGENT_ID, WORKSPACE_ID, fresh_id, run_body};
use runway_e2e::{Client, TARGET_ENV, free_data_dir, runway_binary, target_auth};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_warnings_carry_the_run_and_thread_ids_at_the_warn_level() {
    let dir = free_data_dir("logs");
    let mut child = Command::new(runway_binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .envs(TARGET_ENV)
        .env("RUNWAY_LOG", "warn")
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

    let c = Client::new(&base, target_auth());
    let (run_id, thread_id) = (fresh_id(), format!("logs-{}", fresh_id()));
    let failed = c.turn(&run_body(&run_id, &thread_id, "/fail")).await;
    assert!(
        failed.types().contains(&"RUN_ERROR"),
        "{:?}",
        failed.types()
    );

    // The same on Lowkey: its turn id and session name the lines.
    let (turn_id, session) = (format!("t{}", fresh_id()), format!("s{}", fresh_id()));
    let lowkey = serde_json::json!({
        "protocolVersion": 1,
        "pluginId": "runway-e2e",
        "sessionHandle": {"id": session, "projectPath": "/p", "sessionId": "lowkey-s", "agentId": "runway-demo"},
        "turn": {"turnId": turn_id, "message": "/fail", "headless": false, "userName": "e2e"},
        "transcriptWindow": [],
        "limits": {"transcriptWindowMessages": 40}
    });
    let mut post = reqwest::Client::new()
        .post(format!("{base}/lowkey/turn"))
        .header("content-type", "application/json")
        .body(lowkey.to_string());
    for (k, v) in target_auth() {
        post = post.header(k, v);
    }
    let answer = post
        .send()
        .await
        .expect("lowkey turn")
        .text()
        .await
        .unwrap();
    assert!(answer.contains(r#""type":"error""#), "{answer}");

    let _ = child.start_kill();
    let mut logs = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stderr.read_to_string(&mut logs)).await;
    let _ = std::fs::remove_dir_all(dir);
    let about_the_turn: Vec<&str> = logs.lines().filter(|l| l.contains("RUN_ERROR")).collect();
    assert!(
        !about_the_turn.is_empty(),
        "no warning about the failed turn:\n{logs}"
    );
    assert_eq!(about_the_turn.len(), 2, "one line per failed turn:\n{logs}");
    let (console, lowkey) = (about_the_turn[0], about_the_turn[1]);
    assert!(
        console.contains(&run_id) && console.contains(&thread_id),
        "the line about the Console turn lacks its run or thread id: {console}"
    );
    // The worker and the customer too: a pilot's operator filters by them.
    assert!(
        console.contains(&format!("agentId={AGENT_ID}"))
            && console.contains(&format!("workspaceId={WORKSPACE_ID}")),
        "the line about the Console turn lacks its agentId or workspaceId: {console}"
    );
    assert!(
        lowkey.contains(&turn_id) && lowkey.contains(&session),
        "the line about the Lowkey turn lacks its turn id or session: {lowkey}"
    );
    assert!(
        lowkey.contains("agentId=runway-demo") && lowkey.contains("workspaceId=runway-e2e"),
        "the line about the Lowkey turn lacks its agent or plugin id: {lowkey}"
    );
}
