//! Auth fails closed: what every deployed runtime (Lambda, Workers) must do when no header set
//! is configured, and when the operator opted out with `RUNWAY_ALLOW_UNAUTHENTICATED=1`.

use serde_json::{Value, json};

use crate::client::{Client, fresh_id, run_body};

/// A deployment without a header set: `/health` answers 200 as before, while `POST /runs`,
/// `POST /lowkey/turn` and `GET /usage` answer 500 with a JSON error naming `setting` and
/// `RUNWAY_ALLOW_UNAUTHENTICATED`, whatever headers a caller guesses. Returns what went
/// wrong.
pub async fn check_refuses_turns_without_auth(base_url: &str, setting: &str) -> Result<(), String> {
    let mut failures = Vec::new();
    let anonymous = Client::new(base_url, Vec::new());
    let (status, health) = anonymous.health().await;
    if status != 200 || health["status"] != "ok" {
        failures.push(format!("/health answered HTTP {status} {health}"));
    }
    let body = run_body(&fresh_id(), &fresh_id(), "Hello");
    let lowkey = json!({
        "protocolVersion": 1, "sessionId": fresh_id(), "turnId": fresh_id(),
        "message": "Hello", "transcript": [],
    });
    let guessing = anonymous.with_auth(vec![("X-API-Key".into(), "guess".into())]);
    for (who, client) in [("no headers", &anonymous), ("a guessed header", &guessing)] {
        for (path, body) in [("/runs", &body), ("/lowkey/turn", &lowkey)] {
            let (status, answer) = client
                .raw(reqwest::Method::POST, path, body.to_string().into_bytes())
                .await;
            if let Err(e) = refusal(status, &answer, setting) {
                failures.push(format!("POST {path} with {who}: {e}"));
            }
        }
        // The usage report names the customers and their spend: closed like turns.
        let (status, answer) = client.raw(reqwest::Method::GET, "/usage", Vec::new()).await;
        if let Err(e) = refusal(status, &answer, setting) {
            failures.push(format!("GET /usage with {who}: {e}"));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

fn refusal(status: u16, answer: &Value, setting: &str) -> Result<(), String> {
    let error = answer["error"].as_str().unwrap_or_default();
    if status == 500 && error.contains(setting) && error.contains("RUNWAY_ALLOW_UNAUTHENTICATED") {
        Ok(())
    } else {
        Err(format!(
            "wanted 500 with an error naming {setting} and RUNWAY_ALLOW_UNAUTHENTICATED, got HTTP {status} {answer}"
        ))
    }
}

/// A deployment with `RUNWAY_ALLOW_UNAUTHENTICATED=1` and no header set: a turn without any
/// header runs to `RUN_FINISHED`. Returns what went wrong.
pub async fn check_serves_anyone(base_url: &str) -> Result<(), String> {
    let anonymous = Client::new(base_url, Vec::new());
    let turn = anonymous
        .turn(&run_body(&fresh_id(), &fresh_id(), "Hello"))
        .await;
    if turn.last()["type"] == "RUN_FINISHED" {
        Ok(())
    } else {
        Err(format!(
            "a turn without headers ended with {} (frames {:?})",
            turn.last(),
            turn.types()
        ))
    }
}
