//! Lowkey: whole turns through `Runway::handle`, in process, with the demo agent: every event
//! checked against Lowkey's JSON Schema.
// Served only in a build with runway-core's `lowkey` feature (on by default).
#![cfg(feature = "lowkey")]

use std::time::Duration;

use bytes::Bytes;
use runway_agents::DemoAgent;
use runway_core::adapter::{Access, AuthHeaders, Config};
use runway_core::testing::{TestRunway, VirtualRuntime};
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
use serde_json::{Value, json};

mod support;
use support::lowkey_schema::*;

// ---------------------------------------------------------------------------------------------
// Whole turns through Runway::handle, in process, on the testing kit's virtual clock

type DemoRunway = TestRunway<DemoAgent<VirtualRuntime>>;

fn runway(config: Config) -> DemoRunway {
    let rt = VirtualRuntime::new();
    TestRunway::with(DemoAgent::new(rt.clone()), rt, config)
}

fn request(session: &str, turn_id: &str, message: &str) -> Value {
    json!({
        "protocolVersion": 1,
        "pluginId": "runway",
        "sessionHandle": {
            "id": session, "projectPath": "/abs/project", "sessionId": "s", "agentId": "runway-demo"
        },
        "turn": {"turnId": turn_id, "message": message, "headless": false},
        "transcriptWindow": [],
        "limits": {"transcriptWindowMessages": 40}
    })
}

fn post(path: &str, body: &Value) -> http::Request<Bytes> {
    http::Request::post(path)
        .header("host", "agent.example.com")
        .body(Bytes::from(body.to_string()))
        .unwrap()
}

struct Answer {
    status: u16,
    content_type: String,
    body: String,
}

async fn send<A: Agent>(rw: &TestRunway<A>, req: http::Request<Bytes>) -> Answer {
    let got = rw.request(req).await;
    Answer {
        status: got.status,
        content_type: got.content_type().to_owned(),
        body: got.body(),
    }
}

async fn turn(rw: &DemoRunway, body: &Value) -> Vec<Value> {
    let a = send(rw, post("/lowkey/turn", body)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.content_type, "application/x-ndjson");
    let ev = events(&a.body);
    assert_eq!(kinds(&ev)[0], "status:started");
    let terminal = ev
        .iter()
        .filter(|e| e["type"] == "error" || e["status"] == "complete");
    assert_eq!(terminal.count(), 1, "exactly one terminal event");
    let last = ev.last().unwrap();
    assert!(last["type"] == "error" || last["status"] == "complete");
    ev
}

#[tokio::test]
async fn second_turn_on_a_session_sees_the_first() {
    let rw = runway(Config::unauthenticated());
    let ev = turn(&rw, &request("sess-A", "t1", "A")).await;
    assert_eq!(
        text_of(&ev),
        "You said \"A\". This is the first thing you said in this conversation."
    );
    let ev = turn(&rw, &request("sess-A", "t2", "B")).await;
    assert_eq!(text_of(&ev), "You said \"B\". Before that you said \"A\".");
    // Another session is another conversation.
    let ev = turn(&rw, &request("sess-B", "t1", "C")).await;
    assert!(text_of(&ev).contains("first thing you said"));
}

#[tokio::test]
async fn a_console_caller_cannot_name_a_lowkey_session() {
    // Console ids may contain `:`, so `lowkey:` + a Console-shaped key was reachable from
    // Console's agentId (issue 11, item 6).
    let rw = runway(Config::unauthenticated());
    turn(&rw, &request("sess1", "t1", "lowkey secret")).await;
    let body = json!({"protocolVersion": "1", "runId": "r1", "threadId": "sess1",
                      "agentId": "lowkey:runway-demo", "workspaceId": "w", "input": "hi"});
    let a = send(&rw, post("/runs", &body)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(!a.body.contains("lowkey secret"), "{}", a.body);
    assert!(a.body.contains("first thing you said"), "{}", a.body);
}

#[tokio::test]
async fn transcript_window_seeds_an_unknown_session_only() {
    let rw = runway(Config::unauthenticated());
    let mut body = request("sess-seeded", "t9", "B");
    body["transcriptWindow"] = json!([
        {"role": "user", "content": "A", "turnId": "t8"},
        {"role": "agent", "content": "You said \"A\".", "agentId": "runway-demo", "turnId": "t8"},
        {"role": "user", "content": "B", "turnId": "t9"}
    ]);
    let ev = turn(&rw, &body).await;
    assert_eq!(text_of(&ev), "You said \"B\". Before that you said \"A\".");
    // Known now: runway's own context wins over a window that says otherwise.
    let mut body = request("sess-seeded", "t10", "C");
    body["transcriptWindow"] = json!([{"role": "user", "content": "Z"}]);
    let ev = turn(&rw, &body).await;
    assert_eq!(text_of(&ev), "You said \"C\". Before that you said \"B\".");
}

#[tokio::test]
async fn a_repeated_turn_id_replays_and_a_reused_one_is_refused() {
    let rw = runway(Config::unauthenticated());
    let first = turn(&rw, &request("sess-I", "t1", "A")).await;
    let again = turn(&rw, &request("sess-I", "t1", "A")).await;
    assert_eq!(first, again);
    // The replay did not run the agent again.
    let ev = turn(&rw, &request("sess-I", "t2", "/count")).await;
    assert_eq!(text_of(&ev), "The agent has run 2 times on this thread.");
    // Same turnId, different message.
    let ev = turn(&rw, &request("sess-I", "t1", "something else")).await;
    assert_eq!(kinds(&ev), ["status:started", "error"]);
    assert!(ev[1]["content"].as_str().unwrap().contains("already used"));
    // The same turnId in another session is another turn.
    let ev = turn(&rw, &request("sess-J", "t1", "A")).await;
    assert!(text_of(&ev).contains("first thing you said"));
}

#[tokio::test]
async fn a_session_belongs_to_the_plugin_that_started_it() {
    // Lowkey carries no workspace: the plugin is the one its limits and usage count under,
    // so a session started by one plugin refuses another's turns (issue 25).
    let rw = runway(Config::unauthenticated());
    turn(&rw, &request("sess-P", "t1", "plugin secret")).await;
    let mut other = request("sess-P", "t2", "what was said?");
    other["pluginId"] = json!("other-plugin");
    let ev = turn(&rw, &other).await;
    assert_eq!(kinds(&ev), ["status:started", "error"]);
    assert_eq!(
        ev[1]["content"],
        "This conversation belongs to another workspace. Please start a new conversation."
    );
    // The owner goes on; the refused turn was never run.
    let ev = turn(&rw, &request("sess-P", "t3", "/count")).await;
    assert_eq!(text_of(&ev), "The agent has run 2 times on this thread.");
}

#[tokio::test]
async fn richer_outputs_are_mapped() {
    let rw = runway(Config::unauthenticated());
    let ev = turn(&rw, &request("sess-R", "t1", "/tool")).await;
    assert_eq!(
        kinds(&ev),
        [
            "status:started",
            "text",
            "status:working",
            "text",
            "status:complete"
        ]
    );
    assert_eq!(ev[2]["content"], "Running lookup_time…");

    let ev = turn(&rw, &request("sess-R", "t2", "/approve")).await;
    assert_eq!(kinds(&ev), ["status:started", "text", "status:complete"]);
    assert_eq!(ev[1]["content"], "Approve the demo action?");

    let ev = turn(&rw, &request("sess-R", "t3", "/file")).await;
    let text = text_of(&ev);
    assert!(
        text.starts_with(
            // The request's Host header (agent.example.com) is the caller's: links never use it.
            "Here is your file.\n\nFile: [runway-demo.csv](http://localhost/files/"
        ),
        "{text}"
    );
    assert!(text.ends_with("/runway-demo.csv)"), "{text}");

    let ev = turn(&rw, &request("sess-R", "t4", "/fail")).await;
    assert_eq!(kinds(&ev), ["status:started", "error"]);
    assert_eq!(ev[1]["content"], "The demo agent failed on purpose.");

    let ev = turn(&rw, &request("sess-R", "t5", "/reason")).await;
    assert_eq!(
        kinds(&ev),
        [
            "status:started",
            "status:working",
            "text",
            "status:complete"
        ]
    );
}

#[tokio::test]
async fn heartbeats_flow_while_the_agent_is_silent() {
    let config = Config {
        heartbeat: Duration::from_millis(100),
        ..Config::unauthenticated()
    };
    let rw = runway(config);
    let ev = turn(&rw, &request("sess-H", "t1", "/slow 1")).await;
    let k = kinds(&ev);
    assert!(
        k.iter().filter(|k| *k == "status:working").count() >= 3,
        "{k:?}"
    );
    assert_eq!(text_of(&ev), "Done waiting 1 seconds.");
}

#[tokio::test]
async fn bad_input_auth_and_methods_are_4xx_json() {
    let rw = runway(Config::unauthenticated());
    let a = send(&rw, post("/lowkey/turn", &json!({"protocolVersion": 2}))).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.content_type, "application/json");
    let v: Value = serde_json::from_str(&a.body).unwrap();
    assert!(v["error"].as_str().unwrap().contains("protocolVersion"));

    let get = http::Request::get("/lowkey/turn")
        .body(Bytes::new())
        .unwrap();
    assert_eq!(send(&rw, get).await.status, 405);

    let big = json!({"x": "y".repeat(runway_core::adapter::MAX_BODY_BYTES)});
    assert_eq!(send(&rw, post("/lowkey/turn", &big)).await.status, 413);

    let a = send(&rw, post("/nowhere", &json!({}))).await;
    assert_eq!(a.status, 404);
    assert!(a.body.contains("POST /lowkey/turn"));

    // Only under the configured base path, like /runs.
    let ev = send(&rw, post("/fpt/lowkey/turn", &request("s-p", "t", "A"))).await;
    assert_eq!(ev.status, 404);
    let based = runway(Config {
        base_path: "/fpt".into(),
        ..Config::unauthenticated()
    });
    let ev = send(&based, post("/fpt/lowkey/turn", &request("s-p", "t", "A"))).await;
    assert_eq!(ev.status, 200);
    let ev = send(&based, post("/lowkey/turn", &request("s-p", "t2", "A"))).await;
    assert_eq!(ev.status, 404);

    let mut auth = AuthHeaders::none();
    auth.insert("x-api-key", "k1").unwrap();
    let rw = runway(Config {
        access: Access::Headers(auth),
        ..Config::unauthenticated()
    });
    let a = send(&rw, post("/lowkey/turn", &request("s", "t", "A"))).await;
    assert_eq!(a.status, 401);
    let mut req = post("/lowkey/turn", &request("s", "t", "A"));
    req.headers_mut()
        .insert("x-api-key", http::HeaderValue::from_static("k1"));
    assert_eq!(send(&rw, req).await.status, 200);
}

/// The agent sees the Lowkey turn as documented.
#[derive(Debug, Clone, Default)]
struct Inspect;

impl Agent for Inspect {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        out.text(format!(
            "{:?}|{}|{}|{}|{}|{:?}|{}|{}",
            turn.protocol,
            turn.run_id,
            turn.thread_id,
            turn.agent_id,
            turn.workspace_id,
            turn.user_id,
            turn.input,
            turn.context.messages.len(),
        ));
        Ok(Outcome::Done)
    }
}

#[tokio::test]
async fn the_agent_sees_the_turn_as_documented() {
    let rw = TestRunway::new(Inspect);
    let mut body = request("sess-X", "t1", "hi");
    body["turn"]["userName"] = json!("alvin");
    body["transcriptWindow"] = json!([{"role": "user", "content": "earlier"}]);
    let text = send(&rw, post("/lowkey/turn", &body)).await.body;
    assert_eq!(
        text_of(&events(&text)),
        "Lowkey|t1|sess-X|runway-demo|runway|Some(\"alvin\")|hi|1"
    );
    body["turn"]["turnId"] = json!("t2");
    body["turn"]["headless"] = json!(true);
    let text = send(&rw, post("/lowkey/turn", &body)).await.body;
    assert_eq!(
        text_of(&events(&text)),
        "Lowkey|t2|sess-X|runway-demo|runway|None|hi|3"
    );
}
