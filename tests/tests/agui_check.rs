//! `runway check --protocol agui` (issue 28): its event schema agrees with `@ag-ui/core`
//! 1.0.0's `EventSchema` event by event, and the checklist passes runway's own AG-UI endpoint
//! and fails an endpoint that is not one.

use std::collections::BTreeSet;
use std::time::Duration;

use runway_conformance::agui::event_schema::{event_problems, event_types};
use runway_e2e::{AgentProcess, TARGET_ENV, agui, free_data_dir, runway_binary, target_auth};
use serde_json::{Value, json};
use tokio::process::Command;

/// A valid example of every event type AG-UI 1.0 defines, with every optional field filled.
fn samples() -> Vec<Value> {
    let base = |ty: &str, fields: Value| {
        let mut v =
            json!({"type": ty, "timestamp": 1_700_000_000_000_i64, "metadata": {"k": null}});
        for (k, x) in fields.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let messages = json!([
        {"id": "d", "role": "developer", "content": "be brief", "name": "n", "encryptedValue": "e"},
        {"id": "s", "role": "system", "content": "sys"},
        {"id": "a", "role": "assistant", "content": "hi", "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}, "metadata": {}}]},
        {"id": "u", "role": "user", "content": [{"type": "text", "text": "t"}, {"type": "image", "source": {"type": "data", "value": "AA", "mimeType": "image/png"}}, {"type": "document", "source": {"type": "file", "value": "f1", "provider": "p"}}]},
        {"id": "t", "role": "tool", "toolCallId": "c", "content": "ok", "error": "e"},
        {"id": "ac", "role": "activity", "activityType": "plan", "content": {"x": 1}},
        {"id": "r", "role": "reasoning", "content": "why"}
    ]);
    let sub = json!("sub1");
    vec![
        base(
            "TEXT_MESSAGE_START",
            json!({"messageId": "m", "role": "assistant", "name": "n", "subagentRunId": sub}),
        ),
        base(
            "TEXT_MESSAGE_CONTENT",
            json!({"messageId": "m", "delta": "hi"}),
        ),
        base("TEXT_MESSAGE_END", json!({"messageId": "m"})),
        base(
            "TEXT_MESSAGE_CHUNK",
            json!({"messageId": "m", "role": "user", "delta": "x", "name": "n"}),
        ),
        base(
            "TOOL_CALL_START",
            json!({"toolCallId": "c", "toolCallName": "f", "parentMessageId": "m"}),
        ),
        base("TOOL_CALL_ARGS", json!({"toolCallId": "c", "delta": "{}"})),
        base("TOOL_CALL_END", json!({"toolCallId": "c"})),
        base(
            "TOOL_CALL_CHUNK",
            json!({"toolCallId": "c", "toolCallName": "f", "parentMessageId": "m", "delta": "{"}),
        ),
        base(
            "TOOL_CALL_RESULT",
            json!({"messageId": "r", "toolCallId": "c", "content": [{"type": "text", "text": "ok"}], "role": "tool"}),
        ),
        base("STATE_SNAPSHOT", json!({"snapshot": {"todos": []}})),
        base(
            "STATE_DELTA",
            json!({"delta": [{"op": "add", "path": "/a", "value": 1}, {"op": "remove", "path": "/b"}, {"op": "copy", "from": "/a", "path": "/c"}, {"op": "test", "path": "", "value": null}]}),
        ),
        base("MESSAGES_SNAPSHOT", json!({"messages": messages})),
        base(
            "ACTIVITY_SNAPSHOT",
            json!({"messageId": "a1", "activityType": "plan", "content": {"steps": []}, "replace": false}),
        ),
        base(
            "ACTIVITY_DELTA",
            json!({"messageId": "a1", "activityType": "plan", "patch": [{"op": "replace", "path": "/steps", "value": [1]}]}),
        ),
        base("RAW", json!({"event": {"x": 1}, "source": "s"})),
        base("CUSTOM", json!({"name": "file", "value": null})),
        base(
            "RUN_STARTED",
            json!({"threadId": "t", "runId": "r", "protocolVersion": "1.0", "parentRunId": "p", "input": {
            "threadId": "t", "runId": "r", "messages": messages, "state": null, "tools": [{"name": "f", "description": "d", "parameters": {}}],
            "context": [{"description": "d", "value": "v"}], "forwardedProps": {}, "resume": [{"interruptId": "i", "status": "resolved", "payload": {}}]}}),
        ),
        base(
            "RUN_FINISHED",
            json!({"threadId": "t", "runId": "r", "result": 1, "outcome": {"type": "interrupt", "interrupts": [{"id": "i", "reason": "confirmation", "message": "m", "toolCallId": "c", "responseSchema": {}, "expiresAt": "2026-01-01T00:00:00Z", "metadata": {}}]}, "usage": [{"provider": "p", "model": "m", "inputTokens": 1, "outputTokens": 2, "totalTokens": 3, "reasoningTokens": 0, "cachedInputTokens": 0, "cacheWriteInputTokens": 0}]}),
        ),
        base(
            "RUN_FINISHED",
            json!({"threadId": "t", "runId": "r", "outcome": {"type": "success", "pendingToolCallIds": ["c"]}}),
        ),
        base(
            "RUN_FINISHED",
            json!({"threadId": "t", "runId": "r", "outcome": {"type": "cancelled"}}),
        ),
        base(
            "RUN_ERROR",
            json!({"message": "m", "code": "C", "usage": []}),
        ),
        base("STEP_STARTED", json!({"stepName": "s"})),
        base("STEP_FINISHED", json!({"stepName": "s"})),
        base("REASONING_START", json!({"messageId": "m"})),
        base(
            "REASONING_MESSAGE_START",
            json!({"messageId": "m", "role": "reasoning"}),
        ),
        base(
            "REASONING_MESSAGE_CONTENT",
            json!({"messageId": "m", "delta": "d"}),
        ),
        base("REASONING_MESSAGE_END", json!({"messageId": "m"})),
        base(
            "REASONING_MESSAGE_CHUNK",
            json!({"messageId": "m", "delta": "d"}),
        ),
        base("REASONING_END", json!({"messageId": "m"})),
        base(
            "REASONING_ENCRYPTED_VALUE",
            json!({"subtype": "tool-call", "entityId": "c", "encryptedValue": "x"}),
        ),
        base(
            "SUBAGENT_STARTED",
            json!({"subagentRunId": "s1", "name": "n", "description": "d", "parentSubagentRunId": "s0", "parentToolCallId": "c", "parentMessageId": "m"}),
        ),
        base(
            "SUBAGENT_FINISHED",
            json!({"subagentRunId": "s1", "result": {}, "outcome": {"type": "suspended", "interruptIds": ["i"]}}),
        ),
        base(
            "SUBAGENT_ERROR",
            json!({"subagentRunId": "s1", "message": "m", "code": "c"}),
        ),
    ]
}

/// Every value a field of `v` (at any depth) could be broken into: removed, null, a number, a
/// fraction, a negative number, a string, an array, an object, or any word one of 1.0's enums
/// or discriminators uses (so a value allowed in the wrong place is caught too).
fn mutations(v: &Value) -> Vec<Value> {
    let mut replacements = vec![
        None,
        Some(Value::Null),
        Some(json!(7)),
        Some(json!(1.5)),
        Some(json!(-1)),
        Some(json!("x")),
        Some(json!([])),
        Some(json!({})),
    ];
    for word in [
        "developer",
        "system",
        "assistant",
        "user",
        "tool",
        "activity",
        "reasoning",
        "function",
        "text",
        "image",
        "audio",
        "video",
        "document",
        "data",
        "url",
        "file",
        "add",
        "remove",
        "replace",
        "move",
        "copy",
        "test",
        "success",
        "interrupt",
        "cancelled",
        "suspended",
        "resolved",
        "tool-call",
        "message",
        "/a",
        "",
    ] {
        replacements.push(Some(json!(word)));
    }
    let mut out = Vec::new();
    fn walk(v: &Value, path: &mut Vec<String>, paths: &mut Vec<Vec<String>>) {
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    path.push(k.clone());
                    paths.push(path.clone());
                    walk(x, path, paths);
                    path.pop();
                }
            }
            Value::Array(items) => {
                for (i, x) in items.iter().enumerate() {
                    path.push(i.to_string());
                    paths.push(path.clone());
                    walk(x, path, paths);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut paths = Vec::new();
    walk(v, &mut Vec::new(), &mut paths);
    for path in paths {
        if path == ["type"] {
            continue;
        }
        for r in &replacements {
            let mut m = v.clone();
            let (last, parent) = path.split_last().unwrap();
            let mut at = &mut m;
            for p in parent {
                at = match at {
                    Value::Object(o) => o.get_mut(p).unwrap(),
                    Value::Array(a) => &mut a[p.parse::<usize>().unwrap()],
                    _ => unreachable!(),
                };
            }
            match (at, r) {
                (Value::Object(o), None) => {
                    o.remove(last);
                }
                (Value::Object(o), Some(x)) => {
                    o.insert(last.clone(), x.clone());
                }
                (Value::Array(a), None) => {
                    a.remove(last.parse::<usize>().unwrap());
                }
                (Value::Array(a), Some(x)) => a[last.parse::<usize>().unwrap()] = x.clone(),
                _ => unreachable!(),
            }
            out.push(m);
        }
    }
    out
}

/// runway's event schema says "invalid" for exactly the events `@ag-ui/core` 1.0.0's
/// `EventSchema` refuses: every event type, and every field of each broken every way.
#[tokio::test]
async fn the_event_schema_agrees_with_ag_ui_core() {
    let samples = samples();
    let covered: BTreeSet<&str> = samples.iter().filter_map(|s| s["type"].as_str()).collect();
    let defined: BTreeSet<&str> = event_types().collect();
    assert_eq!(covered, defined, "a sample of every event type");
    let mut corpus: Vec<Value> = samples.clone();
    for s in &samples {
        corpus.extend(mutations(s));
    }
    corpus.push(json!({"type": "NOT_AN_EVENT"}));
    corpus.push(json!({"no": "type"}));
    let labelled: Vec<(String, Value)> = corpus
        .iter()
        .enumerate()
        .map(|(i, v)| (i.to_string(), v.clone()))
        .collect();
    let theirs: BTreeSet<usize> = agui::ag_ui_core_verdicts(&labelled)
        .await
        .unwrap()
        .iter()
        .map(|v| v["label"].as_str().unwrap().parse().unwrap())
        .collect();
    let ours: BTreeSet<usize> = corpus
        .iter()
        .enumerate()
        .filter(|(_, v)| !event_problems(v).is_empty())
        .map(|(i, _)| i)
        .collect();
    let disagree: Vec<String> = ours
        .symmetric_difference(&theirs)
        .take(10)
        .map(|i| {
            format!(
                "{} (@ag-ui/core: {}, runway: {:?})",
                corpus[*i],
                if theirs.contains(i) {
                    "invalid"
                } else {
                    "valid"
                },
                event_problems(&corpus[*i])
            )
        })
        .collect();
    println!(
        "{} events ({} invalid by both)",
        corpus.len(),
        ours.intersection(&theirs).count()
    );
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
    assert!(
        theirs.len() > corpus.len() / 2,
        "the mutations break most events"
    );
}

async fn serve() -> AgentProcess {
    let data_dir = free_data_dir("agui-check");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .envs(TARGET_ENV)
        .env("RUNWAY_LOG", "warn")
        .env_remove("RUNWAY_WORKERS");
    AgentProcess::start(cmd, Duration::from_secs(30)).await
}

async fn check(url: &str, extra: &[&str]) -> (i32, Value) {
    let mut cmd = Command::new(runway_binary());
    cmd.args(["check", url, "--protocol", "agui", "--json"]);
    for (name, value) in target_auth() {
        cmd.arg("-H").arg(format!("{name}: {value}"));
    }
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.args(extra).output())
        .await
        .expect("runway check finished")
        .expect("runway check ran");
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().unwrap_or(-1), report)
}

fn lines(report: &Value) -> Vec<(String, String)> {
    report["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["key"].as_str().unwrap().to_owned(),
                i["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// runway's own endpoint passes every line (`--strict`), heartbeats included; Console's
/// `/runs`, which is not an AG-UI endpoint, fails.
#[tokio::test]
async fn runway_check_protocol_agui_passes_runways_endpoint_and_fails_another() {
    let process = serve().await;
    let url = format!("{}/agui", process.base_url());
    let (code, report) = check(
        &url,
        &[
            "--strict",
            "--slow-prompt",
            "/slow 2",
            "--heartbeat-interval",
            "3s",
        ],
    )
    .await;
    assert_eq!(code, 0, "{report:#}");
    assert!(
        lines(&report).iter().all(|(_, s)| s == "pass"),
        "{:?}",
        lines(&report)
    );

    let (code, report) = check(&format!("{}/runs", process.base_url()), &[]).await;
    assert_eq!(code, 1, "{report:#}");
    let run = lines(&report);
    assert!(run.contains(&("agui_run".into(), "fail".into())), "{run:?}");
    assert!(
        run.contains(&("agui_events".into(), "skip".into())),
        "{run:?}"
    );
}

/// An endpoint that streams Console's frames (no `RUN_STARTED`, no ids on `RUN_FINISHED`):
/// the schema and lifecycle lines fail with their codes.
#[tokio::test]
async fn a_stream_that_is_not_ag_ui_fails_the_schema_and_lifecycle_lines() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/agui", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        // Every request gets the same Console-style stream (bounded: the check sends a few).
        for _ in 0..16 {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut buf = vec![0u8; 64 * 1024];
            let _ = tokio::time::timeout(Duration::from_secs(2), socket.read(&mut buf)).await;
            let body = "data: {\"type\":\"STEP_STARTED\",\"stepName\":\"turn\"}\n\n\
                        data: {\"type\":\"STEP_FINISHED\",\"stepName\":\"turn\"}\n\n\
                        data: {\"type\":\"RUN_FINISHED\",\"outcome\":{\"type\":\"success\"}}\n\n";
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(format!("{head}{body}").as_bytes()).await;
        }
    });
    let (code, report) = check(&url, &[]).await;
    server.abort();
    assert_eq!(code, 1, "{report:#}");
    let got = lines(&report);
    for key in ["agui_events", "agui_lifecycle"] {
        assert!(got.contains(&(key.into(), "fail".into())), "{key}: {got:?}");
    }
    let codes = report["items"].to_string();
    assert!(
        codes.contains("AGUI_INVALID_EVENT") && codes.contains("AGUI_LIFECYCLE"),
        "{codes}"
    );
    assert!(
        codes.contains("the first event must be RUN_STARTED"),
        "{codes}"
    );
}
