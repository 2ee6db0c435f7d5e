//! Approvals under attack (issue 20), on any runtime serving the model agent with the
//! `issue_refund` tool (`approval = true`, POST `{tools}/refunds`): an edit lands on the call
//! it names among two calls of one tool, and ten concurrent approvals of one pending call run
//! it once.
//!
//! [`approvals_model`] answers the model requests these checks cause (and `None` to the
//! others, for the test's own script).

use serde_json::{Value, json};

use crate::client::{Client, fresh_id, run_body};
use crate::scripted_server::{Recorded, Reply, ScriptedServer, chunk};

/// What the user says to start the two-call review.
const TWO_CALLS: &str = "Refund A-1 and B-2";
/// What the user says to start the review approved ten times at once.
const ONE_CALL: &str = "Refund R-1";

/// The model's answer to a request of these checks: two `issue_refund` calls for
/// [`TWO_CALLS`], one for [`ONE_CALL`], "Done." after tool results. `None` for any other
/// request.
pub fn approvals_model(r: &Recorded) -> Option<Reply> {
    let body = r.json();
    let messages = body["messages"].as_array()?;
    let asked = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .find(|c| *c == TWO_CALLS || *c == ONE_CALL)?;
    if messages.last().is_some_and(|m| m["role"] == "tool") {
        return Some(Reply::sse(&[
            chunk::role(),
            chunk::text("Done."),
            chunk::finish("stop"),
        ]));
    }
    let calls: &[(&str, &str)] = if asked == TWO_CALLS {
        &[
            ("A-1", "{\"order\":\"A-1\"}"),
            ("B-2", "{\"order\":\"B-2\"}"),
        ]
    } else {
        &[("R-1", "{\"order\":\"R-1\"}")]
    };
    let mut chunks = vec![chunk::role()];
    for (i, (id, args)) in calls.iter().enumerate() {
        chunks.push(chunk::tool_start(i as u32, id, "issue_refund", args));
    }
    chunks.push(chunk::finish("tool_calls"));
    Some(Reply::sse(&chunks))
}

fn refunds_of(tools: &ScriptedServer, order: &str) -> Vec<Value> {
    tools
        .requests()
        .iter()
        .filter(|r| r.target == "/refunds")
        .map(Recorded::json)
        .filter(|b| b["order"].as_str().is_some_and(|o| o.starts_with(order)))
        .collect()
}

fn resume(thread: &str, decision: Value) -> Value {
    let mut b = run_body(&fresh_id(), thread, "");
    b["resume"] = decision;
    b
}

/// The user edits the second of two `issue_refund` calls (by its id): exactly it runs, as
/// edited; the first is asked about again, and runs as shown once approved. An edit that does
/// not say which of the two it is for is refused first, and runs nothing.
pub async fn an_edit_lands_on_the_call_it_names(client: &Client, tools: &ScriptedServer) {
    let thread = fresh_id();
    let t = client
        .turn(&run_body(&fresh_id(), &thread, TWO_CALLS))
        .await;
    let items = t.last()["outcome"]["interrupts"][0]["items"].clone();
    assert_eq!(items[0]["id"], "A-1", "{:?}", t.frames);
    assert_eq!(items[1]["id"], "B-2", "{:?}", t.frames);
    let t = client
        .turn(&resume(
            &thread,
            json!({"decision": "edit", "editedAction":
                {"name": "issue_refund", "arguments": {"order": "B-2-edited"}}}),
        ))
        .await;
    assert!(t.text().contains("Nothing was run"), "{}", t.text());
    let again = t.last()["outcome"]["interrupts"][0]["items"].clone();
    assert_eq!(again.as_array().map(Vec::len), Some(2), "{:?}", t.frames);
    assert!(
        refunds_of(tools, "A-1").is_empty() && refunds_of(tools, "B-2").is_empty(),
        "an ambiguous edit ran something"
    );
    let t = client
        .turn(&resume(
            &thread,
            json!({"decision": "edit", "editedAction":
                {"id": "B-2", "name": "issue_refund", "arguments": {"order": "B-2-edited"}}}),
        ))
        .await;
    let again = t.last()["outcome"]["interrupts"][0]["items"].clone();
    assert_eq!(again.as_array().map(Vec::len), Some(1), "{:?}", t.frames);
    assert_eq!(again[0]["id"], "A-1");
    assert_eq!(refunds_of(tools, "B-2"), [json!({"order": "B-2-edited"})]);
    assert!(
        refunds_of(tools, "A-1").is_empty(),
        "A-1 ran before its approval"
    );
    let t = client
        .turn(&resume(&thread, json!({"decision": "approve"})))
        .await;
    assert_eq!(t.text(), "Done.", "{:?}", t.frames);
    assert_eq!(refunds_of(tools, "A-1"), [json!({"order": "A-1"})]);
    assert_eq!(refunds_of(tools, "B-2").len(), 1);
}

/// Ten `approve` resumes of one pending call sent at once (ten runIds on one thread) run it
/// once; each turn ends with a final frame.
pub async fn concurrent_approvals_run_the_call_once(client: &Client, tools: &ScriptedServer) {
    let thread = fresh_id();
    let t = client.turn(&run_body(&fresh_id(), &thread, ONE_CALL)).await;
    assert_eq!(t.last()["outcome"]["type"], "interrupt", "{:?}", t.frames);
    let bodies: Vec<Value> = (0..10)
        .map(|_| resume(&thread, json!({"decision": "approve"})))
        .collect();
    let turns = futures::future::join_all(bodies.iter().map(|b| client.turn(b))).await;
    for t in &turns {
        let last = t.last();
        assert!(
            last["type"] == "RUN_FINISHED" || last["type"] == "RUN_ERROR",
            "{:?}",
            t.frames
        );
    }
    assert_eq!(
        refunds_of(tools, "R-1").len(),
        1,
        "one approval, one refund"
    );
}
