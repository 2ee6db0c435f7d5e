//! An AG-UI client-side tool round trip (issue 28) on any runtime serving the model agent,
//! driven by the official client (`@ag-ui/client` 1.0.0 `HttpAgent`, tests/agui/run.mjs): the
//! model calls the client's `confirm_order`, the run ends with the call pending, the client
//! runs it and the next run's result continues the loop; each final event reports the tokens
//! the endpoint reported.
//!
//! [`client_tool_model`] answers the model requests this check causes (and `None` to the
//! others, for the test's own script), so it runs beside a runtime's other model checks.

use serde_json::{Value, json};

use crate::agui;
use crate::client::fresh_id;
use crate::scripted_server::{Recorded, Reply, ScriptedServer, chunk};
use crate::target_auth;

/// The client's tool.
const TOOL: &str = "confirm_order";

/// Whether a model request offers the client's tool: one of this check's.
fn offers_the_tool(body: &Value) -> bool {
    body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["function"]["name"] == TOOL))
}

/// The model's answer to a request of this check: text and a call of `confirm_order` first,
/// the answer once the client's result is the last message. `None` for any other request.
pub fn client_tool_model(r: &Recorded) -> Option<Reply> {
    let body = r.json();
    if !offers_the_tool(&body) {
        return None;
    }
    let answered = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "tool");
    Some(if answered {
        Reply::sse(&[
            chunk::role(),
            chunk::text("Order 7 is confirmed."),
            chunk::finish("stop"),
            chunk::usage(),
        ])
    } else {
        Reply::sse(&[
            chunk::role(),
            chunk::text("Let me ask you."),
            chunk::tool_start(0, "call_ord7", TOOL, "{\"id\":"),
            chunk::tool_args(0, "\"7\"}"),
            chunk::finish("tool_calls"),
            chunk::usage(),
        ])
    })
}

/// The round trip against `{base_url}/agui` (a deployment of one model agent), whose model is
/// `model` (answering with [`client_tool_model`]); returns the official client's report.
pub async fn a_client_tool_round_trip(base_url: &str, model: &ScriptedServer) -> Value {
    let case = json!({
        "name": "client tool",
        "threadId": fresh_id(),
        "runId": fresh_id(),
        "input": "Please confirm order 7",
        "tools": [{"name": TOOL, "description": "Ask the user to confirm an order",
                   "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}],
        "toolResult": "confirmed by Ada",
    });
    let url = format!("{base_url}/agui");
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
    let usage = r["usage"].as_array().unwrap();
    assert_eq!(usage.len(), 2, "{r:#}");
    for entry in usage {
        assert_eq!(
            (
                &entry[0]["inputTokens"],
                &entry[0]["outputTokens"],
                &entry[0]["totalTokens"]
            ),
            (&json!(21), &json!(9), &json!(30)),
            "{r:#}"
        );
    }
    let failures = agui::conformance_failures(&reports).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // The model was offered the client's tool, and got its result once, after its call.
    let calls: Vec<Value> = model
        .requests()
        .iter()
        .map(|c| c.json())
        .filter(offers_the_tool)
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["stream_options"]["include_usage"], true);
    let sent: Vec<(&str, &str)> = calls[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["content"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        sent,
        [
            ("user", "Please confirm order 7"),
            ("assistant", "Let me ask you."),
            ("tool", "confirmed by Ada")
        ]
    );
    let result = calls[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(result["tool_call_id"], "call_ord7");
    r.clone()
}
