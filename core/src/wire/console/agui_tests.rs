//! The frame writer in its AG-UI 1.0 dialect ([`FrameWriter::agui`]): what an AG-UI client
//! needs that Console's contract forbids or does not know.

use serde_json::{Value, json};

use super::FrameWriter;
use crate::error::TurnErrorCode;
use crate::protocol::{ChoiceOption, Ending, Interrupt, StreamLimits};

fn frames(s: &str) -> Vec<Value> {
    s.split("\n\n")
        .filter(|l| l.starts_with("data: "))
        .map(|l| serde_json::from_str(&l[6..]).unwrap())
        .collect()
}

fn types(s: &str) -> Vec<String> {
    frames(s)
        .iter()
        .map(|f| f["type"].as_str().unwrap().to_owned())
        .collect()
}

fn run(f: impl FnOnce(&mut FrameWriter)) -> String {
    let mut w = FrameWriter::agui("r1", "t1", Some("r0".into()), StreamLimits::default());
    w.start();
    f(&mut w);
    let mut all = w.take_output();
    if let Some(fin) = w.take_final() {
        all.push_str(&fin);
    }
    all
}

#[test]
fn run_started_comes_first_and_run_finished_names_the_thread_and_run() {
    let out = run(|w| {
        w.text("hi");
        w.finish(Ending::Success);
    });
    let f = frames(&out);
    assert_eq!(f[0]["type"], "RUN_STARTED");
    assert_eq!(f[0]["threadId"], "t1");
    assert_eq!(f[0]["runId"], "r1");
    assert_eq!(f[0]["parentRunId"], "r0");
    assert_eq!(f[0]["protocolVersion"], "1.0");
    assert_eq!(f[1]["type"], "STEP_STARTED");
    assert!(
        f.iter().all(|f| f.get("event_id").is_none()),
        "AG-UI events have no event_id: {out}"
    );
    let last = f.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED");
    assert_eq!(
        (&last["threadId"], &last["runId"], &last["outcome"]),
        (&json!("t1"), &json!("r1"), &json!({"type": "success"}))
    );
}

#[test]
fn reasoning_is_a_span_with_the_reasoning_role() {
    let out = run(|w| {
        w.reasoning("think");
        w.text("answer");
        w.reasoning("more");
        w.finish(Ending::Success);
    });
    assert_eq!(
        types(&out),
        [
            "RUN_STARTED",
            "STEP_STARTED",
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "STEP_FINISHED",
            "RUN_FINISHED"
        ]
    );
    let f = frames(&out);
    assert_eq!(f[3]["role"], "reasoning");
    assert_eq!(f[2]["messageId"], f[3]["messageId"]);
}

#[test]
fn an_open_reasoning_span_is_closed_by_an_abort_tail() {
    let mut w = FrameWriter::agui("r1", "t1", None, StreamLimits::default());
    w.start();
    w.reasoning("think");
    let sent = frames(&w.take_output());
    assert!(!sent[0].as_object().unwrap().contains_key("parentRunId"));
    let tail = w.abort_tail(TurnErrorCode::AgentPanic);
    assert_eq!(
        types(&tail),
        [
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "STEP_FINISHED",
            "RUN_ERROR"
        ]
    );
}

#[test]
fn state_is_the_agents_own_and_activity_deltas_name_their_type() {
    let out = run(|w| {
        w.state_snapshot(json!({"runs": 2, "todos": []}));
        w.state_delta(json!([{"op": "replace", "path": "/runs", "value": 3}]));
        w.activity_delta("a1", json!([]));
        w.activity_snapshot("a1", "progress", json!({"done": 1}));
        w.activity_delta("a1", json!([{"op": "add", "path": "/done", "value": 2}]));
        w.text("ok");
        w.finish(Ending::Success);
    });
    let f = frames(&out);
    let of = |t: &str| {
        f.iter()
            .filter(|x| x["type"] == t)
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        of("STATE_SNAPSHOT")[0]["snapshot"],
        json!({"runs": 2, "todos": []})
    );
    assert_eq!(of("STATE_DELTA")[0]["delta"][0]["path"], "/runs");
    let deltas = of("ACTIVITY_DELTA");
    assert_eq!(
        deltas.len(),
        1,
        "a delta before its snapshot has no type: dropped"
    );
    assert_eq!(deltas[0]["activityType"], "progress");
}

#[test]
fn an_interrupt_has_an_id_a_reason_and_a_message() {
    let out = run(|w| {
        w.finish(Ending::Interrupt(Interrupt::Approval {
            prompt: "Go?".into(),
        }));
    });
    let last = frames(&out).pop().unwrap();
    let i = &last["outcome"]["interrupts"][0];
    assert_eq!(last["outcome"]["type"], "interrupt");
    assert_eq!(i["id"], "r1.interrupt");
    // AG-UI's core reasons where one fits, runway's namespaced ones otherwise; Console's kind
    // in the metadata.
    assert_eq!(i["reason"], "confirmation");
    assert_eq!(i["message"], "Go?");
    assert!(i.get("kind").is_none() && i.get("prompt").is_none(), "{i}");
    assert_eq!(i["metadata"], json!({"kind": "approval"}), "{i}");
    assert_eq!(
        i["responseSchema"]["properties"]["decision"]["enum"],
        json!(["approve", "reject"])
    );
}

#[test]
fn the_rest_of_a_question_is_in_its_metadata() {
    let out = run(|w| {
        w.finish(Ending::Interrupt(Interrupt::Choice {
            prompt: "Which?".into(),
            options: vec![ChoiceOption {
                id: "red".into(),
                label: "Red".into(),
            }],
        }));
    });
    let last = frames(&out).pop().unwrap();
    let i = &last["outcome"]["interrupts"][0];
    assert_eq!(i["reason"], "input_required");
    assert_eq!(i["metadata"]["kind"], "choice");
    assert_eq!(i["metadata"]["options"][0]["id"], "red");
    assert_eq!(
        i["responseSchema"]["properties"]["decision"]["enum"],
        json!(["respond", "reject"])
    );
}

#[test]
fn every_kind_has_an_ag_ui_reason() {
    let reason = |i: Interrupt| {
        let out = run(|w| w.finish(Ending::Interrupt(i)));
        let last = frames(&out).pop().unwrap();
        let i = &last["outcome"]["interrupts"][0];
        (i["reason"].clone(), i["metadata"]["kind"].clone())
    };
    assert_eq!(
        reason(Interrupt::Input {
            prompt: "Name?".into()
        }),
        (json!("input_required"), json!("input"))
    );
    assert_eq!(
        reason(Interrupt::Authorization {
            provider: "Acme".into(),
            authorize_url: "https://agent.example.com/connect/x".into(),
        }),
        (json!("runway:authorization"), json!("authorization"))
    );
}

/// Console's frames keep what Console's contract asks (no `RUN_STARTED`, no reasoning span,
/// `event_id`s, Console's interrupt fields) and are AG-UI 1.0 events one by one: role
/// `reasoning`, `threadId` and `runId` on `RUN_FINISHED`, an interrupt's `id` and `reason`.
#[test]
fn console_frames_are_agui_events_one_by_one() {
    let mut w = FrameWriter::new("r1", StreamLimits::default()).with_thread_id("t1");
    w.start();
    w.reasoning("think");
    w.finish(Ending::Interrupt(Interrupt::Approval {
        prompt: "Book it?".into(),
    }));
    let mut out = w.take_output();
    out.push_str(&w.take_final().unwrap());
    let t = types(&out);
    assert_eq!(t[0], "STEP_STARTED");
    assert!(
        !t.iter()
            .any(|t| t == "REASONING_START" || t == "REASONING_END" || t == "RUN_STARTED")
    );
    let f = frames(&out);
    assert_eq!(f[1]["role"], "reasoning");
    assert!(f.iter().all(|f| f["event_id"].is_string()));
    let last = f.last().unwrap();
    assert_eq!(
        (&last["threadId"], &last["runId"]),
        (&json!("t1"), &json!("r1"))
    );
    assert_eq!(
        last["outcome"]["interrupts"][0],
        json!({"kind": "approval", "prompt": "Book it?", "id": "r1.interrupt", "reason": "confirmation"})
    );
}

/// A writer told no thread names none: Console discards a final frame naming another thread.
#[test]
fn without_a_thread_run_finished_names_only_the_run() {
    let mut w = FrameWriter::new("r1", StreamLimits::default());
    w.start();
    w.text("hi");
    w.finish(Ending::Success);
    let mut out = w.take_output();
    out.push_str(&w.take_final().unwrap());
    let last = frames(&out).pop().unwrap();
    assert!(last.get("threadId").is_none(), "{out}");
    assert_eq!(last["runId"], "r1", "{out}");
}

#[test]
fn a_run_that_leaves_client_tool_calls_finishes_naming_them() {
    let out = run(|w| {
        w.client_tool_call_start("call_x", "confirm_order");
        w.tool_call_args("call_x", "{\"id\":\"7\"}");
        w.tool_call_end("call_x");
        // One the agent answered itself (refused) is not left for the client.
        w.client_tool_call_start("call_y", "confirm_order");
        w.tool_call_result("call_y", "Error: not run");
        w.finish(Ending::Success);
    });
    assert_eq!(
        types(&out),
        [
            "RUN_STARTED",
            "STEP_STARTED",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_START",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "STEP_FINISHED",
            "RUN_FINISHED"
        ]
    );
    let f = frames(&out);
    assert_eq!(f[2]["toolCallId"], "call_x");
    assert_eq!(
        f.last().unwrap()["outcome"],
        json!({"type": "success", "pendingToolCallIds": ["call_x"]}),
        "no text, yet not EMPTY_ANSWER: the call is the answer"
    );
    // A question or an error leaves nothing for the client.
    let out = run(|w| {
        w.client_tool_call_start("call_x", "confirm_order");
        w.finish(Ending::failed(TurnErrorCode::AgentError));
    });
    assert_eq!(frames(&out).last().unwrap()["type"], "RUN_ERROR");
}

#[test]
fn console_never_names_pending_calls() {
    let mut w = FrameWriter::new("r1", StreamLimits::default());
    w.start();
    w.client_tool_call_start("call_x", "confirm_order");
    w.text("asked");
    w.report_usage(vec![crate::protocol::agui::TokenUsage {
        provider: None,
        model: "m".into(),
        input_tokens: 1,
        output_tokens: 1,
        reasoning_tokens: 0,
    }]);
    w.finish(Ending::Success);
    let mut out = w.take_output();
    out.push_str(&w.take_final().unwrap());
    let last = frames(&out).pop().unwrap();
    assert_eq!(last["outcome"], json!({"type": "success"}));
    assert!(last.get("usage").is_none(), "{last}");
    assert!(!w.reports_usage());
}

#[test]
fn the_final_event_reports_usage_per_model() {
    let usage = || {
        vec![
            crate::protocol::agui::TokenUsage {
                provider: Some("openai".into()),
                model: "gpt-4o-mini".into(),
                input_tokens: 120,
                output_tokens: 30,
                reasoning_tokens: 10,
            },
            crate::protocol::agui::TokenUsage {
                provider: None,
                model: "small".into(),
                input_tokens: 5,
                output_tokens: 2,
                reasoning_tokens: 0,
            },
        ]
    };
    let out = run(|w| {
        assert!(w.reports_usage());
        w.report_usage(usage());
        w.text("hi");
        w.finish(Ending::Success);
    });
    assert_eq!(
        frames(&out).last().unwrap()["usage"],
        json!([
            {"provider": "openai", "model": "gpt-4o-mini", "inputTokens": 120, "outputTokens": 30, "totalTokens": 150, "reasoningTokens": 10},
            {"model": "small", "inputTokens": 5, "outputTokens": 2, "totalTokens": 7}
        ])
    );
    let out = run(|w| {
        w.report_usage(usage());
        w.finish(Ending::failed(TurnErrorCode::AgentError));
    });
    let last = frames(&out).pop().unwrap();
    assert_eq!(
        (&last["type"], last["usage"][0]["inputTokens"].as_u64()),
        (&json!("RUN_ERROR"), Some(120))
    );
    // No usage reported: no field.
    let out = run(|w| {
        w.text("hi");
        w.finish(Ending::Success);
    });
    assert!(frames(&out).last().unwrap().get("usage").is_none());
}

#[test]
fn message_ids_are_unique_in_the_thread_not_only_in_the_run() {
    let ids = |run: &str| {
        let mut w = FrameWriter::agui(run, "t1", None, StreamLimits::default());
        w.start();
        w.text("one");
        w.end_text();
        w.reasoning("two");
        w.finish(Ending::Success);
        let mut out = w.take_output();
        out.push_str(&w.take_final().unwrap());
        frames(&out)
            .iter()
            .filter_map(|f| f["messageId"].as_str().map(str::to_owned))
            .collect::<std::collections::BTreeSet<_>>()
    };
    let (first, second) = (ids("r1"), ids("r2"));
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(first.is_disjoint(&second), "{first:?} {second:?}");
    assert_eq!(first, ids("r1"), "a replay names them alike");
    assert!(first.iter().all(|id| id.starts_with('m')), "{first:?}");
    // Console's are `m{n}`, as its contract has them.
    let mut w = FrameWriter::new("r1", StreamLimits::default());
    w.start();
    w.text("one");
    assert!(w.take_output().contains("\"messageId\":\"m1\""));
}

fn approval() -> Ending {
    Ending::Interrupt(Interrupt::Approval {
        prompt: "Go?".into(),
    })
}

/// AG-UI's interrupt rule: the client's state and messages, as the run left them, come in
/// `STATE_SNAPSHOT` and `MESSAGES_SNAPSHOT` before the interrupting `RUN_FINISHED`.
#[test]
fn an_interrupt_is_preceded_by_the_state_and_messages_snapshots() {
    let sent = vec![
        json!({"id": "u1", "role": "user", "content": [{"type": "text", "text": "go"}]}),
        json!({"id": "u2", "role": "user", "content": "and?"}),
    ];
    let mut w = FrameWriter::agui("r1", "t1", None, StreamLimits::default())
        .with_client_view(sent.clone(), json!({"todos": []}));
    w.start();
    w.text("Checking.");
    w.tool_call_start("c1", "clock");
    w.tool_call_args("c1", "{}");
    w.tool_call_result("c1", "12:00");
    w.state_delta(json!([{"op": "add", "path": "/todos/-", "value": "ask"}]));
    w.finish(approval());
    let mut out = w.take_output();
    out.push_str(&w.take_final().unwrap());
    let f = frames(&out);
    let n = f.len();
    assert_eq!(
        types(&out)[n - 3..],
        ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    );
    assert_eq!(f[n - 3]["snapshot"], json!({"todos": ["ask"]}));
    let messages = f[n - 2]["messages"].as_array().unwrap();
    assert_eq!(messages[..2], sent[..], "the client's own, as sent");
    let text_id = f
        .iter()
        .find(|f| f["type"] == "TEXT_MESSAGE_START")
        .unwrap()["messageId"]
        .clone();
    assert_eq!(
        messages[2..],
        [
            json!({"id": text_id, "role": "assistant", "content": "Checking."}),
            json!({"id": "c1", "role": "assistant", "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "clock", "arguments": "{}"}}
            ]}),
            json!({"id": "c1-result", "toolCallId": "c1", "role": "tool", "content": "12:00"}),
        ]
    );
    // A replay sends them too.
    assert!(w.recording().contains("MESSAGES_SNAPSHOT"));
}

#[test]
fn only_an_interrupt_sends_the_snapshots_and_console_never_does() {
    let view = |w: FrameWriter| w.with_client_view(vec![], json!({}));
    let mut done = view(FrameWriter::agui("r1", "t1", None, StreamLimits::default()));
    done.start();
    done.text("hi");
    done.finish(Ending::Success);
    let out = done.take_output() + &done.take_final().unwrap();
    assert!(!out.contains("SNAPSHOT"), "{out}");
    let mut console = view(FrameWriter::new("r1", StreamLimits::default()));
    console.start();
    console.finish(approval());
    let out = console.take_output() + &console.take_final().unwrap();
    assert!(!out.contains("SNAPSHOT"), "{out}");
}

#[test]
fn a_snapshot_that_does_not_fit_is_left_out_and_the_question_still_asked() {
    let limits = StreamLimits {
        max_frame_bytes: 2048,
        ..StreamLimits::default()
    };
    let big = vec![json!({"id": "u1", "role": "user", "content": "x".repeat(4096)})];
    let mut w = FrameWriter::agui("r1", "t1", None, limits).with_client_view(big, json!({}));
    w.start();
    w.finish(approval());
    let out = w.take_output() + &w.take_final().unwrap();
    let t = types(&out);
    assert!(t.contains(&"STATE_SNAPSHOT".to_owned()));
    assert!(!t.contains(&"MESSAGES_SNAPSHOT".to_owned()), "{t:?}");
    assert_eq!(t.last().unwrap(), "RUN_FINISHED");
}

#[test]
fn after_a_delta_the_client_could_not_apply_no_state_snapshot_is_guessed() {
    let mut w = FrameWriter::agui("r1", "t1", None, StreamLimits::default())
        .with_client_view(vec![], json!({"n": 1}));
    w.start();
    w.state_delta(json!([{"op": "remove", "path": "/missing"}]));
    w.finish(approval());
    let out = w.take_output() + &w.take_final().unwrap();
    let t = types(&out);
    assert_eq!(
        t.iter().filter(|t| *t == "STATE_SNAPSHOT").count(),
        0,
        "{t:?}"
    );
    assert!(t.contains(&"MESSAGES_SNAPSHOT".to_owned()), "{t:?}");
}
