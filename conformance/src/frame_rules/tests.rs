//! The frame rules, frame by frame.

use serde_json::json;

use super::*;

fn engine() -> FrameRules {
    FrameRules::new(RunIds {
        run_id: "11".into(),
        thread_id: "22".into(),
    })
}

/// Feeds frames, closes the stream, returns every code seen.
fn codes(frames: &[Value]) -> Vec<Code> {
    let mut e = engine();
    let mut all = Vec::new();
    for f in frames {
        all.extend(e.on_frame(f.to_string().as_bytes()).findings);
    }
    all.extend(e.finish(StreamEnd::Closed));
    all.into_iter().map(|f| f.code).collect()
}

fn answer(text: &str) -> Vec<Value> {
    vec![
        json!({"type":"TEXT_MESSAGE_START","messageId":"a1","role":"assistant"}),
        json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":text}),
        json!({"type":"TEXT_MESSAGE_END","messageId":"a1"}),
    ]
}

fn finished() -> Value {
    json!({"type":"RUN_FINISHED","outcome":{"type":"success"}})
}

fn with_final(mut frames: Vec<Value>) -> Vec<Value> {
    frames.push(finished());
    frames
}

#[test]
fn the_minimal_stream_is_clean() {
    let mut e = engine();
    for f in with_final(answer("Gold fell 0.5%")) {
        let step = e.on_frame(f.to_string().as_bytes());
        assert!(step.findings.is_empty(), "{:?}", step.findings);
    }
    assert!(e.finish(StreamEnd::Closed).is_empty());
    assert_eq!(e.final_frame(), Some(&FinalFrame::Success));
    assert_eq!(e.answer(), "Gold fell 0.5%");
}

#[test]
fn a_full_clean_turn_with_tools_steps_reasoning_state_and_files() {
    let frames = vec![
        json!({"type":"STEP_STARTED","stepName":"plan","run_id":"11","threadId":"22"}),
        json!({"type":"REASONING_MESSAGE_START","messageId":"r1"}),
        json!({"type":"REASONING_MESSAGE_CONTENT","messageId":"r1","delta":"hm"}),
        json!({"type":"REASONING_MESSAGE_END","messageId":"r1"}),
        json!({"type":"TEXT_MESSAGE_START","messageId":"a1"}),
        json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"Looking"}),
        json!({"type":"TEXT_MESSAGE_END","messageId":"a1"}),
        json!({"type":"TOOL_CALL_START","toolCallId":"t1","toolCallName":"lookup"}),
        json!({"type":"TOOL_CALL_ARGS","toolCallId":"t1","delta":"{}"}),
        json!({"type":"TOOL_CALL_END","toolCallId":"t1"}),
        json!({"type":"TOOL_CALL_RESULT","toolCallId":"t1","content":"ok"}),
        json!({"type":"ACTIVITY_SNAPSHOT","messageId":"x","activityType":"plan","content":{}}),
        json!({"type":"STATE_SNAPSHOT","snapshot":{"artifacts":[{"url":"https://f.example.com/a.pdf"}],"todos":[]}}),
        json!({"type":"STATE_DELTA","delta":[{"op":"add","path":"/files/0","value":{}}]}),
        json!({"type":"CUSTOM","name":"file","value":{"url":"https://f.example.com/b.pdf"}}),
        json!({"type":"TEXT_MESSAGE_START","messageId":"a2"}),
        json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a2","delta":"Done"}),
        json!({"type":"TEXT_MESSAGE_END","messageId":"a2"}),
        json!({"type":"STEP_FINISHED","stepName":"plan"}),
        finished(),
    ];
    assert_eq!(codes(&frames), vec![]);
}

#[test]
fn envelope_mismatch_discards() {
    let mut e = engine();
    let step = e.on_frame(br#"{"type":"RUN_FINISHED","outcome":{"type":"success"},"run_id":"99"}"#);
    assert_eq!(step.disposition, Disposition::Dropped);
    assert_eq!(step.findings[0].code, Code::EnvelopeMismatch);
    let step = e.on_frame(br#"{"type":"STEP_STARTED","stepName":"s","threadId":22}"#);
    assert_eq!(step.findings[0].code, Code::EnvelopeMismatch);
    // null counts as absent.
    let step = e.on_frame(br#"{"type":"STEP_STARTED","stepName":"s","run_id":null}"#);
    assert_eq!(step.disposition, Disposition::Accepted);
}

#[test]
fn each_rule_has_its_code() {
    let cases: Vec<(Vec<Value>, Code)> = vec![
        (with_final([vec![json!({"type":"TEXT_MESSAGE_CHUNK"})], answer("x")].concat()), Code::UnknownFrameType),
        (with_final([vec![json!({"type":"RUN_STARTED"})], answer("x")].concat()), Code::RunStartedSent),
        (with_final([vec![json!({"type":"REASONING_END"})], answer("x")].concat()), Code::ReasoningEndSent),
        (with_final([vec![json!({"type":"TOOL_CALL_START","toolCallId":"t"})], answer("x")].concat()), Code::MalformedFrame),
        (with_final([vec![json!({"type":"TOOL_CALL_ARGS","toolCallId":"t","delta":{}})], answer("x")].concat()), Code::MalformedFrame),
        (with_final([vec![json!([1])], answer("x")].concat()), Code::MalformedFrame),
        (with_final([vec![json!({"type":"STATE_SNAPSHOT","snapshot":{"todos":[],"mood":"ok"}})], answer("x")].concat()), Code::StateKeyDropped),
        (with_final([vec![json!({"type":"STATE_DELTA","delta":[{"op":"add","path":"/mood","value":1}]})], answer("x")].concat()), Code::StateKeyDropped),
        (answer("x"), Code::NoFinalFrame),
        (with_final(answer("")), Code::EmptyBubble),
        (vec![finished()], Code::EmptyBubble),
        (answer("x")[..2].iter().cloned().chain([finished()]).collect(), Code::FramesLeftOpen),
        ([with_final(answer("x")), answer("y")].concat(), Code::FrameAfterFinal),
        (with_final([answer("x"), vec![json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"late"})]].concat()), Code::Ordering),
        (with_final([answer("x"), vec![
            json!({"type":"TOOL_CALL_START","toolCallId":"t","toolCallName":"n"}),
            json!({"type":"TOOL_CALL_END","toolCallId":"t"}),
        ]].concat()), Code::Ordering),
        (with_final([vec![
            json!({"type":"STATE_SNAPSHOT","snapshot":{"artifacts":[{"url":"https://f.example.com/a.pdf"}]}}),
            json!({"type":"CUSTOM","name":"file","value":{"url":"https://f.example.com/a.pdf"}}),
        ], answer("x")].concat()), Code::DuplicateFileChannel),
    ];
    for (frames, expected) in cases {
        let got = codes(&frames);
        assert!(
            !got.is_empty() && got.iter().all(|c| *c == expected),
            "expected only {expected}, got {got:?} for {frames:?}"
        );
    }
}

#[test]
fn text_spanning_a_tool_call_is_ordering_and_open_frames() {
    let frames = vec![
        json!({"type":"TEXT_MESSAGE_START","messageId":"a1"}),
        json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"x"}),
        json!({"type":"TOOL_CALL_START","toolCallId":"t","toolCallName":"n"}),
        json!({"type":"TOOL_CALL_END","toolCallId":"t"}),
        json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"y"}),
        json!({"type":"TEXT_MESSAGE_END","messageId":"a1"}),
        finished(),
    ];
    let got = codes(&frames);
    assert!(got.contains(&Code::Ordering), "{got:?}");
}

#[test]
fn interrupts() {
    let mut e = engine();
    let ok = json!({"type":"RUN_FINISHED","outcome":{"type":"interrupt","interrupts":[{"kind":"approval","prompt":"Go?"}]}});
    let step = e.on_frame(ok.to_string().as_bytes());
    assert_eq!(step.disposition, Disposition::Final);
    assert!(step.findings.is_empty());

    let mut e = engine();
    let bad = json!({"type":"RUN_FINISHED","outcome":{"type":"interrupt","interrupts":[{"kind":"poll"}]}});
    let step = e.on_frame(bad.to_string().as_bytes());
    assert_eq!(
        step.disposition,
        Disposition::Fatal(Code::InterruptRejected)
    );
    assert!(e.finish(StreamEnd::Failed).is_empty());
}

#[test]
fn findings_are_capped_per_code() {
    let mut frames: Vec<Value> = (0..10).map(|_| json!({"type":"NOPE"})).collect();
    frames.extend(with_final(answer("x")));
    let got = codes(&frames);
    assert_eq!(got.len(), MAX_PER_CODE + 1);
}
