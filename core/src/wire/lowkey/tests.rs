//! Lowkey: the writer, the request model and the schema. Whole turns through `Runway` are in
//! `core/tests/lowkey_turns.rs`.

use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::agent::output::AgentEvent;
use crate::error::TurnErrorCode;
use crate::protocol::lowkey::{
    ExternalAgentTurnRequest, TranscriptMessage, TranscriptRole, storage_id,
};
use crate::protocol::{ChoiceOption, Ending, Interrupt, ReviewItem, Role, StreamLimits};
use crate::wire::writer::Encoding;

#[path = "../../../tests/support/lowkey_schema.rs"]
mod lowkey_schema;
use lowkey_schema::*;

// ---------------------------------------------------------------------------------------------
// Schema and fixtures

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
    let mut w = NdjsonWriter::new(StreamLimits::default());
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
    assert_eq!(Lowkey::CONTENT_TYPE, "application/x-ndjson");
}

#[test]
fn a_recording_beyond_the_pool_is_dropped_and_replays_as_an_error_event() {
    let pool = Box::leak(Box::new(crate::wire::recorder::RecordPool::new(0)));
    let mut w = NdjsonWriter::new(StreamLimits::default()).with_record_pool(pool);
    w.start();
    let answer = "x".repeat(3 * crate::wire::recorder::RECORDED_FLOOR_BYTES);
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
                id: None,
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
    let mut w = NdjsonWriter::new(StreamLimits::default());
    w.start();
    w.heartbeat();
    let out = w.take_output();
    let ev = events(&out);
    assert_eq!(kinds(&ev), ["status:started", "status:working"]);
    assert!(ev[1].get("content").is_none());
    let working = json!({"protocolVersion": 1, "type": "status", "status": "working"});
    assert_eq!(out.lines().nth(1).unwrap(), working.to_string());
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

    let limits = StreamLimits {
        max_stream_bytes: 64 * 1024,
        ..StreamLimits::default()
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
fn lowkey_gets_no_padding_every_line_is_an_event() {
    let mut w = NdjsonWriter::new(StreamLimits::default());
    w.start();
    let first = w.take_output();
    w.pad(100 * 1024);
    assert_eq!(w.take_output(), "");
    assert_eq!(w.stream_bytes(), first.len());
}

#[test]
fn replacement_error_is_an_error_event() {
    let (_, mut w) = write(|w| {
        w.apply(AgentEvent::Text("a".into()));
        w.finish(Ending::Success);
    });
    let line = w.replacement_error(TurnErrorCode::StoreUnavailable);
    let ev = events(&line);
    assert_eq!(ev[0]["type"], "error");
    assert_eq!(
        ev[0]["content"],
        TurnErrorCode::StoreUnavailable.user_message()
    );
}

#[test]
fn terminal_events_are_spotted_and_never_inside_text() {
    let mut w = NdjsonWriter::new(StreamLimits::default());
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
