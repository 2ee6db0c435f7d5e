//! The frame writer: what Console reads, for every kind of agent output, limit and ending.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::message_id::MessageId;
use super::{FrameWriter, TURN_STEP};
use crate::error::TurnErrorCode;
use crate::protocol::{ChoiceOption, Ending, Interrupt, ReviewItem, StreamLimits};

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

fn run(f: impl FnOnce(&mut FrameWriter)) -> (String, FrameWriter) {
    let mut w = FrameWriter::new("r1", StreamLimits::default());
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
    let (out, w) = run(|w| {
        w.text("Gold fell ");
        w.text("0.5% yesterday.");
        w.finish(Ending::Success);
    });
    assert_eq!(
        types(&out),
        [
            "STEP_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "STEP_FINISHED",
            "RUN_FINISHED"
        ]
    );
    let f = frames(&out);
    assert_eq!(f[6]["outcome"], json!({"type": "success"}));
    assert_eq!(w.answer(), "Gold fell 0.5% yesterday.");
    // The recording is everything after the first frame.
    assert_eq!(out.split_once("\n\n").unwrap().1, w.recording());
}

#[test]
fn message_ids_are_m_and_a_number() {
    for n in [0, 1, 9, 10, 4_294_967_295] {
        assert_eq!(MessageId::new(n).as_str(), format!("m{n}"));
    }
}

#[test]
fn the_recording_is_moved_out_whole_and_replays_byte_identically() {
    let (out, mut w) = run(|w| {
        w.text(&"long answer ".repeat(20_000));
        w.finish(Ending::Success);
    });
    assert_eq!(out.split_once("\n\n").unwrap().1, w.take_recording());
}

#[test]
fn a_recording_beyond_the_pool_is_dropped_and_replays_as_replay_unavailable() {
    let pool = Box::leak(Box::new(crate::wire::recorder::RecordPool::new(0)));
    let mut w = FrameWriter::new("r1", StreamLimits::default()).with_record_pool(pool);
    w.start();
    let answer = "x".repeat(3 * crate::wire::recorder::RECORDED_FLOOR_BYTES);
    w.text(&answer);
    w.finish(Ending::Success);
    let mut out = w.take_output();
    out.push_str(&w.take_final().unwrap());
    // The client still gets every frame of the answer.
    let streamed: String = frames(&out)
        .iter()
        .filter_map(|f| f["delta"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(streamed, answer);
    assert_eq!(types(&out).last().unwrap(), "RUN_FINISHED");
    // A replay ends the turn step and says why it cannot repeat the answer.
    let replay = w.take_recording();
    assert_eq!(types(&replay), ["STEP_FINISHED", "RUN_ERROR"]);
    assert_eq!(frames(&replay)[1]["code"], "REPLAY_UNAVAILABLE");
    assert_eq!(pool.used(), 0, "the dropped recording's bytes went back");
}

#[test]
fn text_stretches_around_tool_calls_are_separate_messages() {
    let (out, w) = run(|w| {
        w.text("Let me check.");
        w.tool_call_start("t1", "lookup");
        w.tool_call_args("t1", "{\"q\":1}");
        w.tool_call_result("t1", "found");
        w.text("It is there.");
        w.finish(Ending::Success);
    });
    assert_eq!(
        types(&out),
        [
            "STEP_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "STEP_FINISHED",
            "RUN_FINISHED"
        ]
    );
    let f = frames(&out);
    assert_ne!(f[1]["messageId"], f[8]["messageId"]);
    assert_eq!(f[5]["delta"], "{\"q\":1}");
    assert_eq!(w.answer(), "Let me check.\n\nIt is there.");
}

#[test]
fn everything_open_is_closed_before_the_final_frame() {
    let (out, _) = run(|w| {
        w.step_started("search");
        w.reasoning("thinking");
        w.tool_call_start("t1", "x");
        w.text("partial");
        w.finish(Ending::error(TurnErrorCode::AgentError, "failed"));
    });
    let t = types(&out);
    assert_eq!(t.last().unwrap(), "RUN_ERROR");
    let mut open = HashSet::new();
    for f in frames(&out) {
        let ty = f["type"].as_str().unwrap();
        let key = ["messageId", "toolCallId", "stepName"]
            .iter()
            .find_map(|k| f.get(*k).and_then(Value::as_str))
            .unwrap_or("")
            .to_owned();
        if ty.ends_with("_START") || ty == "STEP_STARTED" {
            assert!(open.insert(key), "opened twice");
        } else if ty.ends_with("_END") || ty == "STEP_FINISHED" {
            assert!(open.remove(&key), "closed {key} never opened");
        }
    }
    assert!(open.is_empty(), "left open: {open:?}");
}

#[test]
fn exactly_one_final_and_nothing_after() {
    let (out, _) = run(|w| {
        w.text("a");
        w.finish(Ending::Success);
        w.text("late");
        w.tool_call_start("t", "late");
        w.finish(Ending::error(TurnErrorCode::AgentError, "twice"));
    });
    let t = types(&out);
    assert_eq!(t.iter().filter(|t| t.starts_with("RUN_")).count(), 1);
    assert_eq!(t.last().unwrap(), "RUN_FINISHED");
    assert!(!out.contains("late"));
}

#[test]
fn no_answer_is_an_error_not_an_empty_bubble() {
    let (out, w) = run(|w| {
        w.text("");
        w.tool_call_start("t1", "x");
        w.finish(Ending::Success);
    });
    let t = types(&out);
    assert!(!t.contains(&"TEXT_MESSAGE_START".to_owned()));
    assert_eq!(t.last().unwrap(), "RUN_ERROR");
    assert_eq!(frames(&out).last().unwrap()["code"], "EMPTY_ANSWER");
    assert!(matches!(
        *w.ending().unwrap(),
        Ending::Error {
            code: TurnErrorCode::EmptyAnswer,
            ..
        }
    ));
}

#[test]
fn never_run_started_or_reasoning_end() {
    let (out, _) = run(|w| {
        w.reasoning("hmm");
        w.end_reasoning();
        w.text("ok");
        w.finish(Ending::Success);
    });
    for t in types(&out) {
        assert!(t != "RUN_STARTED" && t != "REASONING_END", "{t}");
    }
}

#[test]
fn large_text_is_split_under_the_frame_limit() {
    let big = "é\"".repeat(300_000);
    let (out, w) = run(|w| {
        w.text(&big);
        w.finish(Ending::Success);
    });
    let mut rebuilt = String::new();
    for chunk in out.split("\n\n").filter(|c| !c.is_empty()) {
        assert!(
            chunk.len() + 2 <= 256 * 1024,
            "frame of {} bytes",
            chunk.len()
        );
        let f: Value = serde_json::from_str(&chunk[6..]).unwrap();
        if f["type"] == "TEXT_MESSAGE_CONTENT" {
            rebuilt.push_str(f["delta"].as_str().unwrap());
        }
    }
    assert_eq!(rebuilt, big);
    assert_eq!(w.answer(), big);
    assert_eq!(types(&out).last().unwrap(), "RUN_FINISHED");
}

#[test]
fn stream_limit_ends_with_run_error_before_crossing() {
    let limits = StreamLimits {
        max_stream_bytes: 64 * 1024,
        ..StreamLimits::default()
    };
    let mut w = FrameWriter::new("r1", limits);
    w.start();
    w.step_started("deep");
    w.tool_call_start("t", "x");
    let mut out = w.take_output();
    for _ in 0..1000 {
        w.text(&"x".repeat(1000));
        out.push_str(&w.take_output());
        if w.is_finished() {
            break;
        }
    }
    out.push_str(&w.take_final().unwrap());
    assert!(out.len() <= 64 * 1024, "{} bytes", out.len());
    let f = frames(&out);
    assert_eq!(f.last().unwrap()["type"], "RUN_ERROR");
    assert_eq!(f.last().unwrap()["code"], "LIMIT_EXCEEDED");
    let t = types(&out);
    assert!(t.contains(&"TEXT_MESSAGE_END".to_owned()));
    assert_eq!(t.iter().filter(|t| *t == "STEP_FINISHED").count(), 2);
}

#[test]
fn frame_count_limit_ends_with_run_error_before_crossing() {
    let limits = StreamLimits {
        max_frames: 50,
        ..StreamLimits::default()
    };
    let mut w = FrameWriter::new("r1", limits);
    w.start();
    let mut out = w.take_output();
    for i in 0..100 {
        w.tool_call_start(&format!("t{i}"), "x");
        out.push_str(&w.take_output());
    }
    w.finish(Ending::Success);
    out.push_str(&w.take_final().unwrap());
    let f = frames(&out);
    assert!(f.len() <= 50, "{} frames", f.len());
    assert_eq!(f.last().unwrap()["code"], "LIMIT_EXCEEDED");
}

#[test]
fn oversized_tool_result_is_truncated() {
    let (out, _) = run(|w| {
        w.tool_call_start("t1", "x");
        w.tool_call_result("t1", &"y".repeat(400_000));
        w.text("done");
        w.finish(Ending::Success);
    });
    let f = frames(&out);
    let result = f.iter().find(|f| f["type"] == "TOOL_CALL_RESULT").unwrap();
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .ends_with("…[truncated]")
    );
    assert_eq!(f.last().unwrap()["type"], "RUN_FINISHED");
}

#[test]
fn oversized_unsplittable_frame_fails_the_turn() {
    let (out, _) = run(|w| {
        w.text("a");
        w.custom("blob", json!("z".repeat(300_000)));
        w.finish(Ending::Success);
    });
    assert_eq!(frames(&out).last().unwrap()["code"], "LIMIT_EXCEEDED");
}

#[test]
fn state_keys_are_limited() {
    let (out, _) = run(|w| {
        w.state_snapshot(json!({"todos": [1], "secret": 2, "files": []}));
        w.state_snapshot(json!({"other": 1}));
        w.state_delta(json!([
            {"op": "add", "path": "/artifacts/0", "value": 1},
            {"op": "add", "path": "/mood", "value": 2}
        ]));
        w.text("a");
        w.finish(Ending::Success);
    });
    let f = frames(&out);
    let snaps: Vec<_> = f.iter().filter(|f| f["type"] == "STATE_SNAPSHOT").collect();
    assert_eq!(snaps.len(), 1);
    assert_eq!(snaps[0]["snapshot"], json!({"todos": [1], "files": []}));
    let delta = f.iter().find(|f| f["type"] == "STATE_DELTA").unwrap();
    assert_eq!(delta["delta"].as_array().unwrap().len(), 1);
}

#[test]
fn one_file_one_channel() {
    let (out, _) = run(|w| {
        w.artifact(json!({"name": "a.csv", "url": "https://x.example/f/1"}));
        w.custom(
            "file",
            json!({"name": "a.csv", "url": "https://x.example/f/1"}),
        );
        w.artifact(json!({"name": "a.csv", "url": "https://x.example/f/1"}));
        w.custom(
            "file",
            json!({"name": "b.csv", "url": "https://x.example/f/2"}),
        );
        w.artifact(json!({"name": "b.csv", "url": "https://x.example/f/2"}));
        w.text("files");
        w.finish(Ending::Success);
    });
    let t = types(&out);
    assert_eq!(t.iter().filter(|t| *t == "STATE_SNAPSHOT").count(), 1);
    assert_eq!(t.iter().filter(|t| *t == "CUSTOM").count(), 1);
}

#[test]
fn interrupts_are_validated_before_leaving() {
    let (out, _) = run(|w| {
        w.finish(Ending::Interrupt(Interrupt::Review {
            prompt: "ok?".into(),
            items: vec![ReviewItem {
                id: None,
                name: String::new(),
                arguments: json!({}),
            }],
        }))
    });
    let last = frames(&out).pop().unwrap();
    assert_eq!(last["type"], "RUN_ERROR");
    assert_eq!(last["code"], "INTERRUPT_INVALID");

    let (out, _) = run(|w| {
        w.finish(Ending::Interrupt(Interrupt::Choice {
            prompt: "Which?".into(),
            options: vec![ChoiceOption {
                id: "a".into(),
                label: "A".into(),
            }],
        }))
    });
    let last = frames(&out).pop().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED");
    assert_eq!(last["outcome"]["type"], "interrupt");
    assert_eq!(last["outcome"]["interrupts"].as_array().unwrap().len(), 1);
    assert_eq!(last["outcome"]["interrupts"][0]["kind"], "choice");
}

#[test]
fn agent_cannot_close_runways_step_early() {
    let (out, _) = run(|w| {
        w.step_finished(TURN_STEP);
        w.text("a");
        w.finish(Ending::Success);
    });
    let t = types(&out);
    assert_eq!(t.iter().filter(|t| *t == "STEP_FINISHED").count(), 1);
    assert_eq!(t[t.len() - 2], "STEP_FINISHED");
}

#[test]
fn whitespace_alone_opens_no_message() {
    let mut w = FrameWriter::new("r1", StreamLimits::default());
    w.start();
    w.text("  \n");
    w.end_text();
    w.text("\t");
    w.finish(Ending::Success);
    let mut all = w.take_output();
    all.push_str(&w.take_final().unwrap());
    assert!(!all.contains("TEXT_MESSAGE"), "{all}");
    assert!(all.contains("EMPTY_ANSWER"), "{all}");

    let mut w = FrameWriter::new("r2", StreamLimits::default());
    w.start();
    w.text("Hello");
    w.text(" ");
    w.text("world");
    w.finish(Ending::Success);
    assert_eq!(w.answer(), "Hello world");
}

#[test]
fn abort_tail_closes_what_is_open_and_leaves_the_writer_unchanged() {
    let mut w = FrameWriter::new("r1", StreamLimits::default()).with_event_id_prefix("r1.ab");
    w.start();
    w.tool_call_start("c1", "search");
    w.reasoning("hmm");
    let sent = w.take_output();
    let tail = w.abort_tail(TurnErrorCode::AgentPanic);
    assert_eq!(tail, w.abort_tail(TurnErrorCode::AgentPanic));
    let frames: Vec<Value> = format!("{sent}{tail}")
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let types: Vec<&str> = frames.iter().map(|f| f["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "STEP_STARTED",
            "TOOL_CALL_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "TOOL_CALL_END",
            "STEP_FINISHED",
            "RUN_ERROR"
        ]
    );
    for (n, f) in frames.iter().enumerate() {
        assert_eq!(f["event_id"], format!("r1.ab.{n}"));
    }
    assert_eq!(frames.last().unwrap()["code"], "AGENT_PANIC");
    // Once the final frame is taken, nothing may follow it.
    w.finish(Ending::error(TurnErrorCode::AgentError, "x"));
    assert!(
        w.abort_tail(TurnErrorCode::AgentPanic)
            .contains("RUN_ERROR")
    );
    let _ = w.take_output();
    let _ = w.take_final();
    assert_eq!(w.abort_tail(TurnErrorCode::AgentPanic), "");
}

#[test]
fn event_ids_are_unique_and_stable() {
    let (out, _) = run(|w| {
        w.text("a");
        w.finish(Ending::Success);
    });
    let ids: Vec<_> = frames(&out)
        .iter()
        .map(|f| f["event_id"].as_str().unwrap().to_owned())
        .collect();
    let unique: HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len());
    assert_eq!(ids[0], "r1.0");
    let (out, _) = run(|w| {
        w.tool_call_start("t", "x");
        w.tool_call_result("t", "r");
        w.text("a");
        w.finish(Ending::Success);
    });
    let seqs: Vec<u64> = frames(&out)
        .iter()
        .map(|f| f["event_id"].as_str().unwrap()[3..].parse().unwrap())
        .collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>(), "no gaps");
}

#[test]
fn replacement_error_is_a_run_error() {
    let (_, mut w) = run(|w| {
        w.text("a");
        w.finish(Ending::Success);
    });
    let f = w.replacement_error(TurnErrorCode::StoreUnavailable);
    let v: Value = serde_json::from_str(f.trim_start_matches("data: ").trim()).unwrap();
    assert_eq!(v["type"], "RUN_ERROR");
    assert_eq!(v["code"], "STORE_UNAVAILABLE");
}

#[test]
fn padding_is_one_comment_of_the_size_asked_counted_and_never_recorded() {
    let mut w = FrameWriter::new("r1", StreamLimits::default());
    w.start();
    let first = w.take_output();
    w.pad(100 * 1024);
    let padding = w.take_output();
    assert_eq!(padding.len(), 100 * 1024);
    assert!(padding.starts_with(": first-flush padding"));
    assert!(padding.ends_with("\n\n"));
    assert_eq!(
        padding.lines().count(),
        2,
        "one comment line, one blank line"
    );
    assert_eq!(w.stream_bytes(), first.len() + padding.len());
    assert_eq!(w.frame_count(), 1, "a comment is no frame");
    w.text("Hi");
    w.finish(Ending::Success);
    assert!(!w.recording().contains("padding"));
    // Tiny sizes still make a comment: `:` and the blank line.
    for bytes in [1, 3, 10] {
        let mut w = FrameWriter::new("r1", StreamLimits::default());
        w.start();
        let _ = w.take_output();
        w.pad(bytes);
        let padding = w.take_output();
        assert_eq!(padding.len(), bytes.max(3), "{padding:?}");
        assert!(padding.starts_with(':') && padding.ends_with("\n\n"));
    }
}

#[test]
fn padding_counts_against_the_stream_limit() {
    let limits = StreamLimits {
        max_stream_bytes: 8 * 1024,
        ..StreamLimits::default()
    };
    // Padding that would leave no room to close the turn is not written.
    let mut w = FrameWriter::new("r1", limits);
    w.start();
    w.pad(8 * 1024);
    let first = w.take_output();
    assert!(!first.contains("padding"));
    // Padding that fits leaves less room for the answer: the turn ends sooner.
    let answer = |pad: usize| {
        let mut w = FrameWriter::new("r1", limits);
        w.start();
        w.pad(pad);
        for _ in 0..100 {
            w.text(&"x".repeat(100));
        }
        w.finish(Ending::Success);
        assert_eq!(
            w.ending().and_then(Ending::error_code),
            Some(TurnErrorCode::LimitExceeded)
        );
        assert!(w.stream_bytes() <= limits.max_stream_bytes);
        w.answer().len()
    };
    let (padded, plain) = (answer(4 * 1024), answer(0));
    assert!(
        padded * 2 < plain,
        "{padded} bytes of answer after padding, {plain} without"
    );
}
