//! AG-UI client-side tools and `usage[]` on `runway serve` with the model agent (issue 28),
//! driven by the official client (`@ag-ui/client` 1.0.0 `HttpAgent`, tests/agui/run.mjs)
//! against a scripted OpenAI-compatible model on loopback: the model calls the client's tool,
//! the run ends with it pending, the client runs it and the next run's result continues the
//! loop; every final event reports the tokens the model endpoint reported.
//!
//! `runway serve` only: the shared suite's Lambda and Worker deployments run the demo agent,
//! which offers no client tools.

use std::time::Duration;

use runway_e2e::client::fresh_id;
use runway_e2e::scripted_server::{Reply, ScriptedServer, chunk};
use runway_e2e::{AgentProcess, TARGET_ENV, agui, free_data_dir, runway_binary, target_auth};
use serde_json::{Value, json};
use tokio::process::Command;

async fn serve(model_base_url: &str) -> AgentProcess {
    let data_dir = free_data_dir("agui-model");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .envs(TARGET_ENV)
        .env("RUNWAY_AGENT", "model")
        .env("RUNWAY_MODEL_BASE_URL", format!("{model_base_url}/v1"))
        .env("RUNWAY_MODEL", "test-model")
        .env("RUNWAY_LOG", "warn")
        .env_remove("RUNWAY_WORKERS");
    AgentProcess::start(cmd, Duration::from_secs(30)).await
}

#[tokio::test]
async fn a_client_tool_round_trip_through_the_official_client_with_usage() {
    let model = ScriptedServer::script(vec![
        Reply::sse(&[
            chunk::role(),
            chunk::text("Let me ask you."),
            chunk::tool_start(0, "call_ord7", "confirm_order", "{\"id\":"),
            chunk::tool_args(0, "\"7\"}"),
            chunk::finish("tool_calls"),
            chunk::usage(),
        ]),
        Reply::sse(&[
            chunk::role(),
            chunk::text("Order 7 is confirmed."),
            chunk::finish("stop"),
            chunk::usage(),
        ]),
    ])
    .await;
    let process = serve(&model.base_url).await;
    let case = json!({
        "name": "client tool",
        "threadId": fresh_id(),
        "runId": fresh_id(),
        "input": "Please confirm order 7",
        "tools": [{"name": "confirm_order", "description": "Ask the user to confirm an order",
                   "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}],
        "toolResult": "confirmed by Ada",
    });
    let url = format!("{}/agui", process.base_url());
    let reports = agui::official_client(&url, &target_auth(), &[case])
        .await
        .unwrap();
    let r = &reports[0];
    assert_eq!(r["accepted"], true, "{r:#}");
    assert_eq!(r["valid"], r["frames"], "schema: {}", r["invalid"]);
    assert_eq!(r["warnings"], json!([]), "the client repaired frames");
    assert_eq!(agui::runs_of(r), 2, "{r:#}");
    // The first run left the call for the client, by the model's id.
    assert_eq!(r["pendingToolCallIds"], json!(["call_ord7"]), "{r:#}");
    assert_eq!(r["outcome"], "success");
    // The client's messages: what the model said, the call, its result, then the answer that
    // used it, each its own message (the second run's ids are not the first's).
    let messages = r["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "assistant", "tool", "assistant"],
        "{r:#}"
    );
    assert_eq!(messages[2]["toolCalls"][0]["id"], "call_ord7");
    assert_eq!(
        messages[2]["toolCalls"][0]["function"]["arguments"],
        "{\"id\":\"7\"}"
    );
    assert_eq!(
        agui::text_of(r, "assistant"),
        ["Let me ask you.", "", "Order 7 is confirmed."]
    );
    // Each run's final event reports what the endpoint reported (21 in, 9 out per call).
    let entry = json!([{"provider": "openai-compatible", "model": "test-model",
        "inputTokens": 21, "outputTokens": 9, "totalTokens": 30}]);
    assert_eq!(r["usage"], json!([entry, entry]), "{r:#}");

    // The model was offered the client's tool, and got its result once, after its call.
    let calls: Vec<Value> = model.requests().iter().map(|c| c.json()).collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["tools"][0]["function"]["name"], "confirm_order");
    assert_eq!(calls[0]["stream_options"]["include_usage"], true);
    let sent: Vec<(&str, &str)> = calls[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["content"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        sent[1..],
        [
            ("user", "Please confirm order 7"),
            ("assistant", "Let me ask you."),
            ("tool", "confirmed by Ada")
        ]
    );
    assert_eq!(calls[1]["messages"][3]["tool_call_id"], "call_ord7");
    process.stop().await;
}
