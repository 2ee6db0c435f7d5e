//! Lowkey: the writer, the request model, the schema, and whole turns through [`Runway`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};

use super::*;
use crate::agents::DemoAgent;
use crate::error::TurnErrorCode;
use crate::output::AgentEvent;
use crate::protocol::{ChoiceOption, Interrupt, Limits, ReviewItem};
use crate::wire::Ending;
use crate::{
    Agent, AgentResult, Outcome, Output, Role, Turn,
    adapter::{AuthHeaders, Config, MemoryStore, Reply, Runtime, Runway, Wire},
};

// ---------------------------------------------------------------------------------------------
// Schema and fixtures

fn lowkey_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/lowkey")
}

fn schema() -> Value {
    let text =
        std::fs::read_to_string(lowkey_dir().join("schema/external-turn-protocol.schema.json"))
            .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn request_validator() -> jsonschema::Validator {
    jsonschema::draft202012::new(&schema()).unwrap()
}

fn event_validator() -> jsonschema::Validator {
    let root = schema();
    let event = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": root["$defs"],
        "$ref": "#/$defs/ExternalAgentTurnEvent",
    });
    jsonschema::draft202012::new(&event).unwrap()
}

fn fixtures(kind: &str) -> BTreeMap<String, Value> {
    let dir = lowkey_dir().join("fixtures/requests").join(kind);
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "errors" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        out.insert(name, serde_json::from_str(&text).unwrap());
    }
    assert!(!out.is_empty(), "no fixtures in {}", dir.display());
    out
}

/// Parses NDJSON, checking every line is one schema-valid event echoing protocolVersion 1.
fn events(ndjson: &str) -> Vec<Value> {
    assert!(
        ndjson.is_empty() || ndjson.ends_with('\n'),
        "unterminated line"
    );
    let v = event_validator();
    ndjson
        .lines()
        .map(|line| {
            let e: Value = serde_json::from_str(line).unwrap_or_else(|err| panic!("{line}: {err}"));
            let errors: Vec<String> = v.iter_errors(&e).map(|er| er.to_string()).collect();
            assert!(errors.is_empty(), "{line} breaks the schema: {errors:?}");
            assert_eq!(e["protocolVersion"], 1);
            e
        })
        .collect()
}

/// `type` or `type:status` per event.
fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e["status"].as_str() {
            Some(s) => format!("status:{s}"),
            None => e["type"].as_str().unwrap().to_owned(),
        })
        .collect()
}

fn text_of(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["content"].as_str().unwrap())
        .collect()
}

#[test]
fn every_valid_fixture_passes_the_schema_and_the_parser() {
    let v = request_validator();
    for (name, body) in fixtures("valid") {
        let errors: Vec<String> = v.iter_errors(&body).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
        let parsed = ExternalAgentTurnRequest::from_value(&body);
        assert!(parsed.is_ok(), "{name}: {parsed:?}");
    }
}

#[test]
fn every_invalid_fixture_fails_the_schema_and_the_parser_with_a_clear_message() {
    let v = request_validator();
    let text = std::fs::read_to_string(lowkey_dir().join("fixtures/requests/invalid/errors.json"))
        .unwrap();
    let expected: BTreeMap<String, String> = serde_json::from_str(&text).unwrap();
    let bodies = fixtures("invalid");
    assert_eq!(
        bodies.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "errors.json lists every invalid fixture"
    );
    for (name, body) in bodies {
        assert!(!v.is_valid(&body), "{name} passes the schema");
        let err = ExternalAgentTurnRequest::from_value(&body).unwrap_err();
        assert!(
            err.message().contains(&expected[&name]),
            "{name}: {:?} does not say {:?}",
            err.message(),
            expected[&name]
        );
    }
}

#[test]
fn spec_example_is_read_faithfully() {
    let body = &fixtures("valid")["spec-example"];
    let r = ExternalAgentTurnRequest::from_value(body).unwrap();
    assert_eq!(r.protocol_version, 1);
    assert_eq!(r.plugin_id, "runway");
    assert_eq!(r.session_handle.id, "sess-1:runway-demo");
    assert_eq!(r.session_handle.project_path, "/abs/project");
    assert_eq!(r.turn.user_name.as_deref(), Some("alvin"));
    assert!(!r.turn.headless);
    assert_eq!(r.transcript_window.len(), 3);
    assert_eq!(r.transcript_window[1].role, TranscriptRole::Agent);
    assert_eq!(r.transcript_window[0].timestamp, Some(1_719_000_000_000.0));
    assert_eq!(r.limits.transcript_window_messages, 40);
    let seed = r.seed_messages();
    let roles: Vec<Role> = seed.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::System]);
    assert_eq!(seed[0].content, "A");
}

#[test]
fn seed_drops_this_turn_caps_the_window_and_names_other_agents() {
    let body = &fixtures("valid")["multi-agent-odd-session-id"];
    let r = ExternalAgentTurnRequest::from_value(body).unwrap();
    // The window ends with this turn's own message ("Hello"), and the cap is 2.
    let seed = r.seed_messages();
    assert_eq!(seed.len(), 2);
    assert_eq!(seed[0].content, "Which city?");
    assert_eq!(seed[1].role, Role::Assistant);
    assert_eq!(seed[1].content, "[Muse] Hanoi.");

    let mut r = r;
    r.transcript_window.push(TranscriptMessage {
        role: TranscriptRole::User,
        content: "older copy".into(),
        timestamp: None,
        agent_id: None,
        agent_name: None,
        turn_id: Some(r.turn.turn_id.clone()),
    });
    assert!(r.seed_messages().iter().all(|m| m.content != "older copy"));
}

#[test]
fn storage_ids_are_safe_and_distinct() {
    assert_eq!(storage_id("sess-1:agent"), "sess-1:agent");
    let odd = storage_id("a/b c");
    assert!(odd.starts_with('~') && odd.len() == 65, "{odd}");
    assert_ne!(storage_id("~x"), "~x");
    assert_ne!(storage_id(&"x".repeat(200)), "x".repeat(200));
    assert_ne!(storage_id("a/b"), storage_id("a/c"));
    assert!(!storage_id("a/b\n").contains(['/', '\n']));
}

#[test]
fn fingerprint_ignores_the_window_but_not_the_turn() {
    let body = fixtures("valid")["spec-example"].clone();
    let a = ExternalAgentTurnRequest::from_value(&body).unwrap();
    let mut moved = body.clone();
    moved["transcriptWindow"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "agent", "content": "another agent spoke"}));
    let b = ExternalAgentTurnRequest::from_value(&moved).unwrap();
    assert_eq!(a.fingerprint(), b.fingerprint());
    let mut other = body;
    other["turn"]["message"] = json!("something else");
    let c = ExternalAgentTurnRequest::from_value(&other).unwrap();
    assert_ne!(a.fingerprint(), c.fingerprint());
}

#[test]
fn invalid_json_is_refused() {
    let e = ExternalAgentTurnRequest::from_json(b"{not json").unwrap_err();
    assert!(e.message().starts_with("body is not valid JSON"));
}

// ---------------------------------------------------------------------------------------------
// The writer

fn write(f: impl FnOnce(&mut NdjsonWriter)) -> (String, NdjsonWriter) {
    let mut w = NdjsonWriter::new(Limits::default());
    w.start();
    f(&mut w);
    let mut all = w.take_output();
    if let Some(fin) = w.take_final() {
        all.push_str(&fin);
    }
    (all, w)
}

#[test]
fn minimal_answer() {
    let (out, w) = write(|w| {
        w.apply(AgentEvent::Text("Gold fell ".into()));
        w.apply(AgentEvent::Text("0.5% yesterday.".into()));
        w.finish(Ending::Success);
    });
    assert_eq!(
        out,
        concat!(
            "{\"protocolVersion\":1,\"type\":\"status\",\"status\":\"started\"}\n",
            "{\"protocolVersion\":1,\"type\":\"text\",\"content\":\"Gold fell \"}\n",
            "{\"protocolVersion\":1,\"type\":\"text\",\"content\":\"0.5% yesterday.\"}\n",
            "{\"protocolVersion\":1,\"type\":\"status\",\"status\":\"complete\"}\n",
        )
    );
    events(&out);
    assert_eq!(w.answer(), "Gold fell 0.5% yesterday.");
    // The recording is everything after the first line.
    assert_eq!(out.split_once('\n').unwrap().1, w.recording());
    assert_eq!(<NdjsonWriter as Wire>::CONTENT_TYPE, "application/x-ndjson");
}

#[test]
fn a_recording_beyond_the_pool_is_dropped_and_replays_as_an_error_event() {
    let pool = Box::leak(Box::new(crate::recorder::RecordPool::new(0)));
    let mut w = NdjsonWriter::new(Limits::default()).with_record_pool(pool);
    w.start();
    let answer = "x".repeat(3 * crate::recorder::RECORDED_FLOOR_BYTES);
    w.text(&answer);
    w.finish(Ending::Success);
    let mut out = w.take_output();
    out.push_str(&w.take_final().unwrap());
    assert_eq!(
        text_of(&events(&out)),
        answer,
        "the client still gets all of it"
    );
    let replay = events(&w.take_recording());
    assert_eq!(kinds(&replay), ["error"]);
    assert_eq!(pool.used(), 0);
}

#[test]
fn tool_calls_are_working_lines_and_split_paragraphs() {
    let (out, w) = write(|w| {
        w.apply(AgentEvent::Text("Let me look.".into()));
        w.apply(AgentEvent::ToolCallStart {
            id: "c1".into(),
            name: "lookup_time".into(),
        });
        w.apply(AgentEvent::ToolCallArgs {
            id: "c1".into(),
            delta: "{\"zone\":\"UTC\"}".into(),
        });
        w.apply(AgentEvent::ToolCallEnd { id: "c1".into() });
        w.apply(AgentEvent::ToolCallResult {
            id: "c1".into(),
            content: "12:00".into(),
        });
        w.apply(AgentEvent::ToolCallStart {
            id: "c1".into(),
            name: "lookup_time".into(),
        });
        w.apply(AgentEvent::Text("It is 12:00.".into()));
        w.finish(Ending::Success);
    });
    let ev = events(&out);
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
    assert_eq!(ev[3]["content"], "\n\nIt is 12:00.");
    assert_eq!(w.answer(), "Let me look.\n\nIt is 12:00.");
    assert!(
        !out.contains("12:00\"}") || !out.contains("zone"),
        "args not sent"
    );
}

#[test]
fn reasoning_steps_and_state_map_to_status_or_nothing() {
    let (out, _) = write(|w| {
        w.apply(AgentEvent::StepStarted("search".into()));
        w.apply(AgentEvent::Reasoning("secret chain".into()));
        w.apply(AgentEvent::Reasoning(" of thought".into()));
        w.apply(AgentEvent::EndReasoning);
        w.apply(AgentEvent::StepFinished("search".into()));
        w.apply(AgentEvent::StateSnapshot(json!({"todos": [1]})));
        w.apply(AgentEvent::ActivitySnapshot {
            message_id: "a".into(),
            activity_type: "plan".into(),
            content: json!({}),
        });
        w.apply(AgentEvent::Custom {
            name: "other".into(),
            value: json!(1),
        });
        w.apply(AgentEvent::Text("Answer.".into()));
        w.finish(Ending::Success);
    });
    let ev = events(&out);
    assert_eq!(
        kinds(&ev),
        [
            "status:started",
            "status:working",
            "status:working",
            "text",
            "status:complete"
        ]
    );
    assert_eq!(ev[1]["content"], "search");
    assert_eq!(ev[2]["content"], "Thinking…");
    assert!(!out.contains("secret chain"));
    assert_eq!(ev[3]["content"], "Answer.");
}

#[test]
fn files_are_links_once_per_url_on_every_channel() {
    let url = "https://agent.example.com/files/abc/report.csv";
    let (out, w) = write(|w| {
        w.apply(AgentEvent::Text("Here it is.".into()));
        w.apply(AgentEvent::Artifact(crate::Artifact {
            id: "f1".into(),
            name: "report.csv".into(),
            url: url.into(),
            mime: "text/csv".into(),
            size_bytes: 10,
        }));
        w.apply(AgentEvent::Custom {
            name: "file".into(),
            value: json!({"name": "report.csv", "url": url}),
        });
        w.apply(AgentEvent::StateSnapshot(
            json!({"artifacts": [{"name": "report.csv", "url": url}]}),
        ));
        w.apply(AgentEvent::StateDelta(json!([
            {"op": "add", "path": "/artifacts/-", "value": {"name": "b.pdf", "url": "https://x.example/b.pdf"}},
            {"op": "add", "path": "/todos/0", "value": {"url": "https://x.example/not-a-file"}}
        ])));
        w.apply(AgentEvent::Text("Anything else?".into()));
        w.finish(Ending::Success);
    });
    let ev = events(&out);
    let texts: Vec<&str> = ev
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "Here it is.",
            &format!("\n\nFile: [report.csv]({url})"),
            "\n\nFile: [b.pdf](https://x.example/b.pdf)",
            "\n\nAnything else?"
        ]
    );
    assert!(w.answer().contains(url));
}

#[test]
fn interrupt_is_the_question_then_complete() {
    let (out, w) = write(|w| {
        w.apply(AgentEvent::Text("Found VN123.".into()));
        w.finish(Ending::Interrupt(Interrupt::Choice {
            prompt: "Which colour?".into(),
            options: vec![
                ChoiceOption {
                    id: "r".into(),
                    label: "Red".into(),
                },
                ChoiceOption {
                    id: "g".into(),
                    label: "Green".into(),
                },
            ],
        }));
    });
    let ev = events(&out);
    assert_eq!(
        kinds(&ev),
        ["status:started", "text", "text", "status:complete"]
    );
    assert_eq!(ev[2]["content"], "\n\nWhich colour? (Red / Green)");
    // The engine adds the question to the transcript itself.
    assert_eq!(w.answer(), "Found VN123.");
    assert!(matches!(w.ending(), Some(Ending::Interrupt(_))));

    let (out, _) = write(|w| {
        w.finish(Ending::Interrupt(Interrupt::Approval {
            prompt: "Book it?".into(),
        }));
    });
    let ev = events(&out);
    assert_eq!(ev[1]["content"], "Book it?");
    assert_eq!(kinds(&ev).last().unwrap(), "status:complete");
}

#[test]
fn an_invalid_interrupt_is_an_error() {
    let (out, w) = write(|w| {
        w.finish(Ending::Interrupt(Interrupt::Review {
            prompt: "ok?".into(),
            items: vec![ReviewItem {
                name: String::new(),
                arguments: json!({}),
            }],
        }));
    });
    let ev = events(&out);
    assert_eq!(kinds(&ev), ["status:started", "error"]);
    assert!(matches!(
        w.ending(),
        Some(Ending::Error {
            code: TurnErrorCode::InterruptInvalid,
            ..
        })
    ));
}

#[test]
fn errors_are_terminal_and_nothing_follows() {
    let (out, _) = write(|w| {
        w.apply(AgentEvent::Text("partial".into()));
        w.finish(Ending::error(TurnErrorCode::AgentError, "It broke."));
        w.apply(AgentEvent::Text("late".into()));
        w.heartbeat();
        w.finish(Ending::Success);
    });
    let ev = events(&out);
    assert_eq!(kinds(&ev), ["status:started", "text", "error"]);
    assert_eq!(ev[2]["content"], "It broke.");
    assert!(!out.contains("late"));
}

#[test]
fn no_text_is_an_error_not_an_empty_answer() {
    let (out, w) = write(|w| {
        w.apply(AgentEvent::ToolCallStart {
            id: "c".into(),
            name: "x".into(),
        });
        w.finish(Ending::Success);
    });
    assert_eq!(
        kinds(&events(&out)),
        ["status:started", "status:working", "error"]
    );
    assert!(matches!(
        w.ending(),
        Some(Ending::Error {
            code: TurnErrorCode::EmptyAnswer,
            ..
        })
    ));
}

#[test]
fn heartbeat_is_a_bare_working_line_and_not_recorded() {
    let mut w = NdjsonWriter::new(Limits::default());
    w.start();
    w.heartbeat();
    let out = w.take_output();
    let ev = events(&out);
    assert_eq!(kinds(&ev), ["status:started", "status:working"]);
    assert!(ev[1].get("content").is_none());
    assert_eq!(w.recording(), "");
}

#[test]
fn long_text_is_split_within_the_line_limit_and_the_stream_stops_before_its_limit() {
    let big = "é\"\n".repeat(200_000);
    let (out, w) = write(|w| {
        w.apply(AgentEvent::Text(big.clone()));
        w.finish(Ending::Success);
    });
    for line in out.lines() {
        assert!(line.len() < 256 * 1024, "line of {} bytes", line.len());
    }
    let ev = events(&out);
    assert_eq!(text_of(&ev), big);
    assert_eq!(w.answer(), big);

    let limits = Limits {
        max_stream_bytes: 64 * 1024,
        ..Limits::default()
    };
    let mut w = NdjsonWriter::new(limits);
    w.start();
    let mut out = w.take_output();
    for _ in 0..1000 {
        w.apply(AgentEvent::Text("x".repeat(1000)));
        out.push_str(&w.take_output());
        if w.ending().is_some() {
            break;
        }
    }
    out.push_str(&w.take_final().unwrap());
    assert!(out.len() <= 64 * 1024, "{} bytes", out.len());
    let ev = events(&out);
    assert_eq!(ev.last().unwrap()["type"], "error");
}

#[test]
fn replacement_error_is_an_error_event() {
    let (_, mut w) = write(|w| {
        w.apply(AgentEvent::Text("a".into()));
        w.finish(Ending::Success);
    });
    let line = Wire::replacement_error(&mut w, TurnErrorCode::StoreUnavailable, "store down");
    let ev = events(&line);
    assert_eq!(ev[0]["type"], "error");
    assert_eq!(ev[0]["content"], "store down");
}

// ---------------------------------------------------------------------------------------------
// Whole turns through Runway::handle, in process

/// Tokio's timer and clock; a counter for entropy (file tokens need only be distinct here).
#[derive(Debug, Clone, Default)]
struct TestRt(std::sync::Arc<AtomicU64>);

impl Runtime for TestRt {
    type Sleep = tokio::time::Sleep;

    fn sleep(&self, duration: Duration) -> Self::Sleep {
        tokio::time::sleep(duration)
    }

    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }

    fn fill_random(&self, buf: &mut [u8]) {
        let n = self.0.fetch_add(1, Ordering::Relaxed).to_le_bytes();
        for (i, b) in buf.iter_mut().enumerate() {
            *b = n[i % 8] ^ (i as u8);
        }
    }
}

type TestRunway = Runway<DemoAgent<TestRt>, MemoryStore, TestRt>;

fn runway(config: Config) -> TestRunway {
    let rt = TestRt::default();
    Runway::new(DemoAgent::new(rt.clone()), MemoryStore::new(), rt, config)
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

async fn send(rw: &TestRunway, req: http::Request<Bytes>) -> Answer {
    match rw.handle(req).await {
        Reply::Full(r) => Answer {
            status: r.status().as_u16(),
            content_type: r.headers()[http::header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .into(),
            body: String::from_utf8(r.into_body().to_vec()).unwrap(),
        },
        Reply::Stream { response, turn } => {
            let task = tokio::spawn(turn);
            let status = response.status().as_u16();
            let content_type = response.headers()[http::header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .to_owned();
            let mut body = response.into_body();
            let mut text = String::new();
            while let Some(Ok(chunk)) = body.next().await {
                text.push_str(std::str::from_utf8(&chunk).unwrap());
            }
            task.await.unwrap();
            Answer {
                status,
                content_type,
                body: text,
            }
        }
    }
}

async fn turn(rw: &TestRunway, body: &Value) -> Vec<Value> {
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
    let rw = runway(Config::default());
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
    let rw = runway(Config::default());
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
    let rw = runway(Config::default());
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
    let rw = runway(Config::default());
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
async fn richer_outputs_are_mapped() {
    let rw = runway(Config::default());
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
        ..Config::default()
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
    let rw = runway(Config::default());
    let a = send(&rw, post("/lowkey/turn", &json!({"protocolVersion": 2}))).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.content_type, "application/json");
    let v: Value = serde_json::from_str(&a.body).unwrap();
    assert!(v["error"].as_str().unwrap().contains("protocolVersion"));

    let get = http::Request::get("/lowkey/turn")
        .body(Bytes::new())
        .unwrap();
    assert_eq!(send(&rw, get).await.status, 405);

    let big = json!({"x": "y".repeat(crate::adapter::MAX_BODY_BYTES)});
    assert_eq!(send(&rw, post("/lowkey/turn", &big)).await.status, 413);

    let a = send(&rw, post("/nowhere", &json!({}))).await;
    assert_eq!(a.status, 404);
    assert!(a.body.contains("POST /lowkey/turn"));

    // Only under the configured base path, like /runs.
    let ev = send(&rw, post("/fpt/lowkey/turn", &request("s-p", "t", "A"))).await;
    assert_eq!(ev.status, 404);
    let based = runway(Config {
        base_path: "/fpt".into(),
        ..Config::default()
    });
    let ev = send(&based, post("/fpt/lowkey/turn", &request("s-p", "t", "A"))).await;
    assert_eq!(ev.status, 200);
    let ev = send(&based, post("/lowkey/turn", &request("s-p", "t2", "A"))).await;
    assert_eq!(ev.status, 404);

    let mut auth = AuthHeaders::none();
    auth.insert("x-api-key", "k1").unwrap();
    let rw = runway(Config {
        auth,
        ..Config::default()
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
    let rt = TestRt::default();
    let rw = Runway::new(Inspect, MemoryStore::new(), rt, Config::default());
    let mut body = request("sess-X", "t1", "hi");
    body["turn"]["userName"] = json!("alvin");
    body["transcriptWindow"] = json!([{"role": "user", "content": "earlier"}]);
    let Reply::Stream { response, turn } = rw.handle(post("/lowkey/turn", &body)).await else {
        panic!("not a stream");
    };
    tokio::spawn(turn);
    let mut b = response.into_body();
    let mut text = String::new();
    while let Some(Ok(c)) = b.next().await {
        text.push_str(std::str::from_utf8(&c).unwrap());
    }
    assert_eq!(
        text_of(&events(&text)),
        "Lowkey|t1|sess-X|runway-demo|runway|Some(\"alvin\")|hi|1"
    );
    body["turn"]["turnId"] = json!("t2");
    body["turn"]["headless"] = json!(true);
    let Reply::Stream { response, turn } = rw.handle(post("/lowkey/turn", &body)).await else {
        panic!("not a stream");
    };
    tokio::spawn(turn);
    let mut b = response.into_body();
    let mut text = String::new();
    while let Some(Ok(c)) = b.next().await {
        text.push_str(std::str::from_utf8(&c).unwrap());
    }
    assert_eq!(
        text_of(&events(&text)),
        "Lowkey|t2|sess-X|runway-demo|runway|None|hi|3"
    );
}

#[test]
fn terminal_events_are_spotted_and_never_inside_text() {
    let mut w = NdjsonWriter::new(Limits::default());
    w.start();
    w.text("{\"protocolVersion\":1,\"type\":\"error\" is only text here");
    let body = w.take_output();
    assert!(!has_terminal_event(body.as_bytes()));
    w.finish(Ending::Success);
    assert!(has_terminal_event(w.take_final().unwrap().as_bytes()));
    let e = error_event("Sorry.");
    assert!(has_terminal_event(e.as_bytes()));
    assert_eq!(events(&e)[0]["content"], "Sorry.");
}
