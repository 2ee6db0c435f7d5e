//! AG-UI 1.0 (`POST {base}/agui`, issue 28), checked on every adapter with the official client:
//! `@ag-ui/client` 1.0.0's `HttpAgent.runAgent` (parse, verify, apply) over the demo agent's
//! turns, every frame checked against `@ag-ui/core` 1.0.0's `EventSchema` (tests/agui/run.mjs,
//! installed by scripts/setup-agui.sh) and every run's stream by the conformance validator
//! `ag-ui-validate` ([`conformance_failures`]: tests/agui/conformance.py, one process for all).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::Command;

use crate::Target;
use crate::client::{Client, fresh_id, run_body};

/// Runs `cases` through tests/agui/run.mjs against `url` with `headers`; one report per case.
pub async fn official_client(
    url: &str,
    headers: &[(String, String)],
    cases: &[Value],
) -> Result<Vec<Value>, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("agui");
    if !dir.join("node_modules/@ag-ui/client").exists() {
        return Err("the AG-UI client is not installed: run scripts/setup-agui.sh first".into());
    }
    let headers: serde_json::Map<String, Value> = headers
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let arg = json!({"url": url, "headers": headers, "cases": cases}).to_string();
    let out = tokio::time::timeout(
        Duration::from_secs(180),
        Command::new("node")
            .arg("run.mjs")
            .arg(arg)
            .current_dir(&dir)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .map_err(|_| "the AG-UI client did not finish within 180 s".to_owned())?
    .map_err(|e| format!("cannot run node: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "run.mjs failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "run.mjs printed no report ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn case(name: &str, thread: &str, input: &str, workspace: &str) -> Value {
    json!({
        "name": name,
        "threadId": thread,
        "runId": fresh_id(),
        "input": input,
        "forwardedProps": {"workspaceId": workspace},
    })
}

/// The text of the client's resulting messages of `role`.
pub fn text_of(report: &Value, role: &str) -> Vec<String> {
    report["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == role)
                .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// How many runs (`RUN_STARTED` events) a report holds.
pub fn runs_of(report: &Value) -> usize {
    report["events"]
        .as_array()
        .map(|events| events.iter().filter(|e| *e == "RUN_STARTED").count())
        .unwrap_or_default()
}

/// The cases every adapter answers: a plain answer and a second run with the whole history,
/// a tool, reasoning, a file, a long answer, heartbeats, an error, an interrupt with each way
/// of answering it, a fork with history, a user in the workspace, and a replayed `runId`.
/// Every case but `workspace`'s own runs in `workspace` (`forwardedProps.workspaceId`) when
/// given, else in the deployment's `default` one.
pub fn cases(workspace: Option<&str>) -> Vec<Value> {
    let ws = workspace.unwrap_or("default");
    let plain_workspace = |name: &str, thread: &str, input: &str| {
        let mut c = case(name, thread, input, ws);
        if workspace.is_none() {
            c.as_object_mut().unwrap().remove("forwardedProps");
        }
        c
    };
    let thread = fresh_id();
    let mut second = plain_workspace("second run, whole history", &thread, "/transcript");
    second["history"] = json!([
        {"id": "c1", "role": "user", "content": "hello there"},
        {"id": "c2", "role": "assistant", "content": "You said \"hello there\"."}
    ]);
    let mut fork = plain_workspace("fork with history", &fresh_id(), "/transcript");
    fork["history"] = json!([
        {"id": "h1", "role": "user", "content": "I like apples"},
        {"id": "h2", "role": "assistant", "content": "Noted: apples."}
    ]);
    let mut approved = plain_workspace("interrupt, then resume", &fresh_id(), "/input");
    approved["resume"] =
        json!({"status": "resolved", "payload": {"decision": "respond", "message": "Ada"}});
    let mut cancelled = plain_workspace("interrupt, then cancel", &fresh_id(), "/approve");
    cancelled["resume"] = json!({"status": "cancelled"});
    // Every other interrupt kind of the demo agent, each answered as its `responseSchema` says.
    let kinds: Vec<Value> = RESUMED_KINDS
        .iter()
        .map(|(name, input, payload, _)| {
            let mut c = plain_workspace(name, &fresh_id(), input);
            let payload: Value = serde_json::from_str(payload).expect("a payload is JSON");
            c["resume"] = json!({"status": "resolved", "payload": payload});
            c
        })
        .collect();
    // AG-UI's interrupt rules: a thread with an open question takes only its answer, by id.
    let asked = plain_workspace("interrupt", &fresh_id(), "/approve");
    let asked_thread = asked["threadId"].as_str().unwrap().to_owned();
    let answer = json!([{
        "interruptId": format!("{}.interrupt", asked["runId"].as_str().unwrap()),
        "status": "resolved",
        "payload": {"decision": "approve"},
    }]);
    let pending = plain_workspace("input while a question is open", &asked_thread, "hello");
    let mut late = plain_workspace("the open question answered later", &asked_thread, "");
    late.as_object_mut().unwrap().remove("input");
    late["resumeEntries"] = answer.clone();
    let mut again = late.clone();
    again["name"] = json!("the same answer again, in a new run");
    again["runId"] = json!(fresh_id());
    let mut user = case("in a workspace", &fresh_id(), "hi", "ws-agui");
    user["forwardedProps"]["userId"] = json!("ada");
    vec![
        plain_workspace("plain", &thread, "hello there"),
        second,
        plain_workspace("tool", &fresh_id(), "/tool"),
        plain_workspace("reasoning", &fresh_id(), "/reason"),
        plain_workspace("file", &fresh_id(), "/file"),
        plain_workspace("long answer", &fresh_id(), "/long 300000"),
        plain_workspace("heartbeats", &fresh_id(), "/slow 2"),
        plain_workspace("error", &fresh_id(), "/fail"),
        asked,
        pending,
        late,
        again,
        approved,
        cancelled,
        fork,
        user,
        json!({"name": "replay of plain", "replayOf": "plain"}),
    ]
    .into_iter()
    .chain(kinds)
    .collect()
}

/// The demo agent's interrupt kinds not covered by the cases above, each with its resume:
/// (case name, the input that asks, the `resume[].payload`, what the answer after it says of
/// the decision).
const RESUMED_KINDS: [(&str, &str, &str, &str); 4] = [
    (
        "approval, approved",
        "/approve",
        r#"{"decision": "approve"}"#,
        "you approved.",
    ),
    (
        "choice, answered",
        "/choice",
        r#"{"decision": "respond", "answers": ["green"]}"#,
        "you answered \"green\".",
    ),
    (
        "review, edited",
        "/review",
        r#"{"decision": "edit", "editedAction": {"name": "send_email", "arguments": {"to": "ops@example.com", "subject": "Demo 2"}}}"#,
        "you edited the call to send_email with",
    ),
    (
        "authorization, connected",
        "/authorize",
        r#"{"decision": "authorized"}"#,
        "you connected the account",
    ),
];

/// Whether `value` is valid against `schema`, in the part of JSON Schema runway's
/// `responseSchema`s use (`type`, `enum`, `required`, `properties`); `Err` says where not.
pub fn schema_valid(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let allowed: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let k = kind(value);
    if !allowed.is_empty()
        && !allowed
            .iter()
            .any(|t| *t == k || (*t == "number" && k == "integer"))
    {
        return Err(format!("{at}: {k}, not {allowed:?}"));
    }
    if let Some(options) = schema["enum"].as_array()
        && !options.contains(value)
    {
        return Err(format!("{at}: {value} not in {options:?}"));
    }
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or_default();
        if value.get(name).is_none() {
            return Err(format!("{at}.{name}: required"));
        }
    }
    if let (Some(props), Some(obj)) = (schema["properties"].as_object(), value.as_object()) {
        for (name, v) in obj {
            if let Some(s) = props.get(name) {
                schema_valid(s, v, &format!("{at}.{name}"))?;
            }
        }
    }
    Ok(())
}

/// A case that asked a question and answered it with `payload` in a second run: the question
/// came after its snapshots, `payload` is valid against its `responseSchema`, the resumed run
/// succeeded, and the client's messages end with the one answer, which `says` the decision.
fn resumed(r: &Value, payload: &Value, says: &str) -> Result<(), String> {
    snapshots_before_the_question(r)?;
    let asked = &r["interrupts"][0];
    schema_valid(&asked["responseSchema"], payload, "payload")
        .map_err(|e| format!("the payload does not fit the interrupt {asked}: {e}"))?;
    let answer = text_of(r, "assistant");
    let ok = runs_of(r) == 2
        && r["outcome"] == "success"
        && answer.len() == 1
        && answer[0].starts_with("To \"")
        && answer[0].contains(says);
    let inputs = text_of(r, "user");
    ok.then_some(()).ok_or(format!(
        "{} runs, outcome {}, runError {}, answer {answer:?} (not saying {says:?}), user messages {inputs:?}",
        runs_of(r),
        r["outcome"],
        r["runError"]
    ))
}

/// AG-UI's interrupt rule, as the client saw it: the run that asked sent `STATE_SNAPSHOT` and
/// `MESSAGES_SNAPSHOT` just before its `RUN_FINISHED`, and the client's messages once it
/// applied them are the snapshot's (nothing lost, nothing added), its own input among them.
fn snapshots_before_the_question(r: &Value) -> Result<(), String> {
    let events: Vec<&str> = r["events"]
        .as_array()
        .map(|e| e.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let first_finish = events.iter().position(|e| *e == "RUN_FINISHED");
    let before = first_finish
        .filter(|at| *at >= 2)
        .map(|at| &events[at - 2..at]);
    if before != Some(&["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT"][..]) {
        return Err(format!(
            "the events before the question's RUN_FINISHED: {events:?}"
        ));
    }
    let snapshot = &r["messagesSnapshots"][0];
    let at_finish = &r["messagesAtFinish"][0];
    let ids = |v: &Value| -> Vec<Value> {
        v.as_array()
            .map(|m| m.iter().map(|m| m["id"].clone()).collect())
            .unwrap_or_default()
    };
    let own_input = format!("{}-user", r["runId"].as_str().unwrap_or_default());
    if snapshot != at_finish || !ids(snapshot).contains(&json!(own_input)) {
        return Err(format!(
            "the client's messages at the question {at_finish} are not the snapshot {snapshot} with its input {own_input}"
        ));
    }
    Ok(())
}

/// What one case's report must show: `Err` says what it showed instead.
type CaseCheck = Box<dyn Fn(&Value) -> Result<(), String>>;

macro_rules! ensure {
    ($failures:expr, $cond:expr, $($fmt:tt)+) => {
        if !$cond {
            $failures.push(format!($($fmt)+));
        }
    };
}

/// Checks the reports of [`cases`]: every run accepted by the client with nothing repaired,
/// every frame schema-valid, `RUN_STARTED` first and one final event per run, and what each
/// case must show. Returns the failures.
pub fn check_reports(reports: &[Value]) -> Vec<String> {
    let mut failures = Vec::new();
    for r in reports {
        let name = &r["name"];
        ensure!(
            failures,
            r["accepted"] == true,
            "agui {name}: the client refused the run: {r:#}"
        );
        ensure!(
            failures,
            r["valid"] == r["frames"],
            "agui {name}: frames not schema-valid: {}",
            r["invalid"]
        );
        ensure!(
            failures,
            r["warnings"] == json!([]),
            "agui {name}: the client repaired frames: {}",
            r["warnings"]
        );
        let events: Vec<&str> = r["events"]
            .as_array()
            .map(|e| e.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        ensure!(
            failures,
            events.first() == Some(&"RUN_STARTED"),
            "agui {name}: first event {:?}",
            events.first()
        );
        let finals = events
            .iter()
            .filter(|e| matches!(**e, "RUN_FINISHED" | "RUN_ERROR"))
            .count();
        ensure!(
            failures,
            finals == runs_of(r),
            "agui {name}: {finals} final events for {} runs",
            runs_of(r)
        );
    }
    let find = |n: &str| reports.iter().find(|r| r["name"] == n);
    let mut case_checks: Vec<(&str, CaseCheck)> = Vec::new();
    case_checks.push((
        "plain",
        Box::new(|r| {
            let answer = text_of(r, "assistant");
            (r["outcome"] == "success"
                && answer.len() == 1
                && answer[0].starts_with("You said \"hello there\"."))
            .then_some(())
            .ok_or(format!("outcome {} answer {answer:?}", r["outcome"]))
        }),
    ));
    // The thread is runway's: the client's whole history is not appended again.
    case_checks.push((
        "second run, whole history",
        Box::new(|r| {
            let transcript = text_of(r, "assistant").pop().unwrap_or_default();
            (transcript.starts_with("2 messages:")
                && transcript.matches("hello there").count() == 2)
                .then_some(())
                .ok_or(format!(
                    "the first input once and the answer quoting it once: {transcript}"
                ))
        }),
    ));
    case_checks.push((
        "tool",
        Box::new(|r| {
            let events = r["events"].to_string();
            let missing: Vec<&str> = [
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_END",
                "TOOL_CALL_RESULT",
            ]
            .into_iter()
            .filter(|t| !events.contains(t))
            .collect();
            let result = r["messages"].as_array().is_some_and(|m| {
                m.iter()
                    .any(|m| m["role"] == "tool" && m["content"] == "12:00 UTC")
            });
            (missing.is_empty() && result).then_some(()).ok_or(format!(
                "missing {missing:?}, tool result in messages: {result}"
            ))
        }),
    ));
    case_checks.push((
        "reasoning",
        Box::new(|r| {
            let events = r["events"].to_string();
            let missing: Vec<&str> = [
                "REASONING_START",
                "REASONING_MESSAGE_START",
                "REASONING_MESSAGE_CONTENT",
                "REASONING_MESSAGE_END",
                "REASONING_END",
            ]
            .into_iter()
            .filter(|t| !events.contains(t))
            .collect();
            (missing.is_empty() && !text_of(r, "reasoning").is_empty())
                .then_some(())
                .ok_or(format!("missing {missing:?} or no reasoning message"))
        }),
    ));
    case_checks.push((
        "file",
        Box::new(|r| {
            r["events"]
                .to_string()
                .contains("STATE_SNAPSHOT")
                .then_some(())
                .ok_or("no STATE_SNAPSHOT".into())
        }),
    ));
    case_checks.push((
        "long answer",
        Box::new(|r| {
            let long: usize = text_of(r, "assistant").iter().map(String::len).sum();
            (long == 300_000)
                .then_some(())
                .ok_or(format!("{long} characters, not 300000"))
        }),
    ));
    case_checks.push((
        "heartbeats",
        Box::new(|r| {
            // A silence of 2 s with a 1 s heartbeat (TARGET_ENV) is kept alive with SSE comments.
            (r["outcome"] == "success" && r["comments"].as_u64().unwrap_or(0) >= 1)
                .then_some(())
                .ok_or(format!(
                    "outcome {}, {} comments",
                    r["outcome"], r["comments"]
                ))
        }),
    ));
    case_checks.push((
        "error",
        Box::new(|r| {
            (r["runError"]["code"] == "AGENT_ERROR")
                .then_some(())
                .ok_or(format!("runError {}", r["runError"]))
        }),
    ));
    case_checks.push((
        "interrupt",
        Box::new(|r| {
            snapshots_before_the_question(r)?;
            let asked = &r["interrupts"][0];
            (r["outcome"] == "interrupt"
                && asked["reason"] == "confirmation"
                && asked["metadata"]["kind"] == "approval"
                && asked["message"] == "Approve the demo action?"
                && asked["id"]
                    .as_str()
                    .is_some_and(|id| id.ends_with(".interrupt"))
                && asked["responseSchema"].is_object())
            .then_some(())
            .ok_or(format!("outcome {}, interrupt {asked}", r["outcome"]))
        }),
    ));
    case_checks.push((
        "input while a question is open",
        Box::new(|r| {
            (r["runError"]["code"] == "INTERRUPT_PENDING")
                .then_some(())
                .ok_or(format!("runError {}", r["runError"]))
        }),
    ));
    // The refused input left the question open: its answer, sent later, still runs it.
    case_checks.push((
        "the open question answered later",
        Box::new(|r| {
            let answer = text_of(r, "assistant");
            (r["outcome"] == "success"
                && answer == ["To \"Approve the demo action?\", you approved."])
            .then_some(())
            .ok_or(format!(
                "outcome {}, runError {}, answer {answer:?}",
                r["outcome"], r["runError"]
            ))
        }),
    ));
    // Replaying an answer is safe: the question is no longer open, nothing runs twice.
    case_checks.push((
        "the same answer again, in a new run",
        Box::new(|r| {
            (r["runError"]["code"] == "RESUME_UNMATCHED")
                .then_some(())
                .ok_or(format!("runError {}", r["runError"]))
        }),
    ));
    // resume[] maps back onto the agent's Resume, and the question is not asked again.
    case_checks.push((
        "interrupt, then resume",
        Box::new(|r| {
            let payload = json!({"decision": "respond", "message": "Ada"});
            resumed(r, &payload, "you answered \"Ada\".")?;
            let answer = text_of(r, "assistant");
            (answer == ["To \"What is your name?\", you answered \"Ada\"."])
                .then_some(())
                .ok_or(format!("answer {answer:?}"))
        }),
    ));
    case_checks.push((
        "interrupt, then cancel",
        Box::new(|r| {
            snapshots_before_the_question(r)?;
            let answer = text_of(r, "assistant");
            (answer == ["To \"Approve the demo action?\", you rejected."])
                .then_some(())
                .ok_or(format!("answer {answer:?}"))
        }),
    ));
    for (name, _, payload, says) in RESUMED_KINDS {
        case_checks.push((
            name,
            Box::new(move |r| {
                let payload: Value = serde_json::from_str(payload).expect("a payload is JSON");
                resumed(r, &payload, says)
            }),
        ));
    }
    case_checks.push((
        "fork with history",
        Box::new(|r| {
            let transcript = text_of(r, "assistant").pop().unwrap_or_default();
            transcript
                .contains("user: I like apples")
                .then_some(())
                .ok_or(format!("transcript {transcript}"))
        }),
    ));
    case_checks.push((
        "in a workspace",
        Box::new(|r| {
            (r["outcome"] == "success")
                .then_some(())
                .ok_or(format!("outcome {}", r["outcome"]))
        }),
    ));
    for (name, check) in &case_checks {
        match find(name) {
            None => failures.push(format!("agui {name}: no report")),
            Some(r) => {
                if let Err(e) = check(r) {
                    failures.push(format!("agui {name}: {e}"));
                }
            }
        }
    }
    // A replayed runId answers the recorded events, not a new run.
    if let (Some(plain), Some(replay)) = (find("plain"), find("replay of plain")) {
        ensure!(
            failures,
            replay["events"] == plain["events"]
                && text_of(replay, "assistant") == text_of(plain, "assistant"),
            "agui replay of plain: not the recorded run: {:#} vs {:#}",
            replay["events"],
            plain["events"]
        );
    }
    failures
}

/// The AG-UI venv's Python, with the conformance validator (`scripts/setup-agui.sh`).
fn agui_venv_python() -> std::path::PathBuf {
    let cache = std::env::var_os("RUNWAY_CACHE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/runway")
        });
    cache.join("agui-venv/bin/python")
}

/// Severities of an `ag-ui-validate` finding that fail the suite: its errors and warnings
/// (its `info` findings are advice, such as "events carry no timestamps").
const FAILING_SEVERITIES: [&str; 2] = ["error", "warning"];

/// Runs the AG-UI conformance validator `ag-ui-validate` (PyPI, pinned in
/// tests/agui/requirements.txt) over every response body of `reports` (one run each), in one
/// process (tests/agui/conformance.py): its report (`checked` streams, `events`, `findings`).
pub async fn ag_ui_validate(reports: &[Value]) -> Result<Value, String> {
    let python = agui_venv_python();
    if !python.exists() {
        return Err(format!(
            "{} is missing: run scripts/setup-agui.sh first",
            python.display()
        ));
    }
    let streams: Vec<(String, &str)> = reports
        .iter()
        .flat_map(|r| {
            let name = r["name"].as_str().unwrap_or_default().to_owned();
            r["bodies"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .map(move |(n, b)| (format!("{name} #{}", n + 1), b.as_str().unwrap_or_default()))
        })
        .collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("agui");
    let mut child = Command::new(&python)
        .arg("conformance.py")
        .current_dir(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let input = serde_json::to_vec(&streams).map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    tokio::io::AsyncWriteExt::write_all(&mut stdin, &input)
        .await
        .map_err(|e| format!("conformance.py: {e}"))?;
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .map_err(|_| "conformance.py did not finish within 120 s".to_owned())?
        .map_err(|e| format!("conformance.py: {e}"))?;
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "conformance.py printed no report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    if report["checked"].as_u64() != Some(streams.len() as u64) {
        return Err(format!("conformance.py: unexpected report {report}"));
    }
    Ok(report)
}

/// `ag-ui-validate` over every run of `reports`: each error or warning it reports is a failure.
pub async fn conformance_failures(reports: &[Value]) -> Vec<String> {
    let report = match ag_ui_validate(reports).await {
        Ok(r) => r,
        Err(e) => return vec![format!("ag-ui-validate: {e}")],
    };
    let failures: Vec<String> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| {
            FAILING_SEVERITIES
                .iter()
                .any(|s| f["severity"].as_str() == Some(s))
        })
        .map(|f| {
            format!(
                "ag-ui-validate {}: {} {} at event {} ({}): {}",
                f["label"], f["severity"], f["rule"], f["eventIndex"], f["eventType"], f["message"]
            )
        })
        .collect();
    let mut advice: Vec<String> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["severity"] == "info")
        .filter_map(|f| f["rule"].as_str().map(str::to_owned))
        .collect();
    advice.sort();
    advice.dedup();
    println!(
        "ag-ui-validate {}: {} runs, {} events, {} findings failing the suite (of {}; advice only: {advice:?})",
        report["version"],
        report["checked"],
        report["events"],
        failures.len(),
        report["findings"].as_array().map_or(0, Vec::len)
    );
    failures
}

/// The turns `/usage` counts for `workspace` (every worker), read until it reaches `want`
/// (usage may be recorded just after the stream ends) or 10 s pass.
pub async fn usage_turns(client: &Client, workspace: &str, want: u64) -> Result<u64, String> {
    let started = Instant::now();
    loop {
        let (status, _, body) = client.get_with_auth("/usage").await;
        if status != 200 {
            return Err(format!("GET /usage answered {status}: {body}"));
        }
        let usage: Value = serde_json::from_str(&body).map_err(|e| format!("/usage: {e}"))?;
        let turns = usage["rows"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .filter(|r| r["workspaceId"] == workspace)
                    .filter_map(|r| r["turns"].as_u64())
                    .sum::<u64>()
            })
            .unwrap_or_default();
        if turns >= want || started.elapsed() > Duration::from_secs(10) {
            return Ok(turns);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Judges `frames` (each with a label saying where it came from) with `@ag-ui/core`'s
/// EventSchema one by one (tests/agui/validate.mjs): the invalid ones, with their problems.
pub async fn ag_ui_core_verdicts(frames: &[(String, Value)]) -> Result<Vec<Value>, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("agui");
    if !dir.join("node_modules/@ag-ui/core").exists() {
        return Err("the AG-UI client is not installed: run scripts/setup-agui.sh first".into());
    }
    let mut child = Command::new("node")
        .arg("validate.mjs")
        .current_dir(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run node: {e}"))?;
    let input = serde_json::to_vec(frames).expect("frames as JSON");
    let mut stdin = child.stdin.take().expect("piped stdin");
    tokio::io::AsyncWriteExt::write_all(&mut stdin, &input)
        .await
        .map_err(|e| format!("validate.mjs: {e}"))?;
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .map_err(|_| "validate.mjs did not finish within 60 s".to_owned())?
        .map_err(|e| format!("validate.mjs: {e}"))?;
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "validate.mjs printed no report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    match (report["invalid"].as_array(), report["checked"].as_u64()) {
        (Some(invalid), Some(checked)) if checked as usize == frames.len() => Ok(invalid.clone()),
        _ => Err(format!("validate.mjs: unexpected report {report}")),
    }
}

/// Checks `frames` against `@ag-ui/core`'s EventSchema one by one: how many were checked, or
/// the invalid ones.
pub async fn schema_check(frames: &[(String, Value)]) -> Result<usize, String> {
    let invalid = ag_ui_core_verdicts(frames).await?;
    if invalid.is_empty() {
        return Ok(frames.len());
    }
    Err(format!(
        "{} of {} frames are not valid AG-UI 1.0: {}",
        invalid.len(),
        frames.len(),
        Value::Array(invalid.into_iter().take(8).collect())
    ))
}

/// The demo agent's turns that between them send every kind of frame it makes and every
/// interrupt kind.
const CONSOLE_INPUTS: [&str; 11] = [
    "hello there",
    "/tool",
    "/reason",
    "/file",
    "/approve",
    "/choice",
    "/input",
    "/review",
    "/authorize",
    "/fail",
    "/slow 1",
];

/// Console's own stream is AG-UI 1.0 frame by frame (issue 28): every frame of Console turns
/// covering each frame and interrupt kind passes `@ag-ui/core`'s EventSchema, and
/// `RUN_FINISHED` names the request's `threadId` and `runId` (Console allows `threadId` when
/// it is the request's; `runId` is a field Console does not read).
pub async fn console_frames_are_agui(client: &Client) -> Vec<String> {
    let mut failures = Vec::new();
    let mut frames = Vec::new();
    for input in CONSOLE_INPUTS {
        let (run, thread) = (fresh_id(), fresh_id());
        let turn = client.turn(&run_body(&run, &thread, input)).await;
        if turn.status != 200 || turn.frames.is_empty() {
            failures.push(format!(
                "console {input:?}: HTTP {} {}",
                turn.status, turn.body
            ));
            continue;
        }
        for f in &turn.frames {
            if f["type"] == "RUN_FINISHED"
                && (f["threadId"] != thread.as_str() || f["runId"] != run.as_str())
            {
                failures.push(format!(
                    "console {input:?}: RUN_FINISHED without the run's ids: {f}"
                ));
            }
            frames.push((format!("console {input:?}"), f.clone()));
        }
    }
    if let Err(e) = schema_check(&frames).await {
        failures.push(format!("console: {e}"));
    }
    failures
}

/// The AG-UI checks of the shared suite: [`cases`] in a workspace of their own, through the
/// official client, [`check_reports`], usage counted in that workspace as for Console turns,
/// and Console's own stream valid AG-UI frame by frame ([`console_frames_are_agui`]). Returns
/// the failures.
pub async fn run_all<T: Target>(target: &mut T) -> Vec<String> {
    let workspace = format!("agui-{}", fresh_id());
    let cases = cases(Some(&workspace));
    // The worker named in the path, as a deployment serving several Digital Workers needs
    // (one agent serving every id answers it too).
    let url = format!("{}/agui/{}", target.base_url(), crate::client::AGENT_ID);
    let reports = match official_client(&url, &target.auth_headers(), &cases).await {
        Ok(r) => r,
        Err(e) => return vec![format!("agui: {e}")],
    };
    let mut failures = check_reports(&reports);
    failures.extend(conformance_failures(&reports).await);
    // Every run of the cases but the replay and the one in ws-agui.
    let runs = reports.iter().map(runs_of).sum::<usize>() as u64;
    let want = runs.saturating_sub(2);
    let client = Client::new(&target.base_url(), target.auth_headers());
    failures.extend(console_frames_are_agui(&client).await);
    match usage_turns(&client, &workspace, want).await {
        Ok(turns) => ensure!(
            failures,
            turns == want,
            "agui: /usage counts {turns} turns in the cases' workspace, not {want}"
        ),
        Err(e) => failures.push(format!("agui: {e}")),
    }
    failures
}
