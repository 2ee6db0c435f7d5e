//! `runway check --protocol agui URL`: the same checklist idea for any AG-UI 1.0 endpoint
//! (`URL` is the endpoint itself, the URL an `HttpAgent` is given).
//!
//! | line | how it is checked |
//! |---|---|
//! | A run answers with AG-UI events | `RunAgentInput` with one user message `Hello`: HTTP 200, `text/event-stream`, the stream read to its end under the deadlines and limits |
//! | Every event is AG-UI 1.0 | each event of every run against 1.0's event schema ([`super::event_schema`]) |
//! | Runs follow AG-UI's lifecycle | `RUN_STARTED` first with the request's ids, everything opened closed, exactly one final event, nothing after it ([`super::run_rules`]) |
//! | First event within the deadline | the time to the first event or comment on every run |
//! | A second run with the whole history | the same thread again, the first run's answer and a new question in `messages`: judged like the first |
//! | Heartbeat during a slow run | with `--slow-prompt`: no silence longer than the heartbeat interval |
//! | Authentication is complete | with headers: each left out in turn and each with a wrong value: 401 expected |
//! | Invalid input is refused | a body that is not a `RunAgentInput`: a 4xx before any stream |

use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use url::Url;

use super::event_schema::event_problems;
use super::run_rules::RunRules;
use crate::findings::{Code, Finding};
use crate::report::{CheckItem, CheckReport, ReportedFinding, Status, rfc3339};
use crate::run_body::{fresh_id, fresh_token};
use crate::sse_reader::{SseLine, SseReader};
use crate::transport::{HeaderSet, Settings};

/// What to check.
#[derive(Debug, Clone)]
pub struct AguiCheckConfig {
    /// The AG-UI endpoint (`POST` here).
    pub url: Url,
    /// Headers sent on every request (empty: no authentication).
    pub headers: HeaderSet,
    /// Deadlines and limits (Console's defaults: a first event within 10 s).
    pub settings: Settings,
    /// A prompt that keeps the agent busy; the heartbeat line is skipped without it.
    pub slow_prompt: Option<String>,
    /// `forwardedProps` sent with every run (e.g. `{"workspaceId": …}` for runway).
    pub forwarded_props: Option<Value>,
}

/// One run as it went.
#[derive(Debug, Default)]
struct Run {
    thread_id: String,
    run_id: String,
    started_at: Option<SystemTime>,
    /// What stopped the run before its stream could be judged to the end.
    failure: Option<(Code, String)>,
    events: Vec<Value>,
    schema: Vec<String>,
    rules: Vec<String>,
    ttfb: Option<Duration>,
    longest_silence: Duration,
    /// The text of the run's text messages.
    text: String,
}

impl Run {
    fn finding(&self, code: Code, message: String, source: &str) -> ReportedFinding {
        ReportedFinding {
            finding: Finding::new(code, message),
            source: source.to_owned(),
            run_id: Some(self.run_id.clone()),
            thread_id: Some(self.thread_id.clone()),
            at: rfc3339(self.started_at.unwrap_or_else(SystemTime::now)),
        }
    }
}

fn input(thread_id: &str, run_id: &str, messages: Value, config: &AguiCheckConfig) -> Value {
    let mut body = json!({
        "threadId": thread_id,
        "runId": run_id,
        "messages": messages,
        "state": {},
        "tools": [],
        "context": [],
    });
    if let Some(props) = &config.forwarded_props {
        body["forwardedProps"] = props.clone();
    }
    body
}

fn user(text: &str) -> Value {
    json!({"id": fresh_token("u"), "role": "user", "content": text})
}

fn client(config: &AguiCheckConfig) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(config.settings.deadlines.connect)
        .no_proxy()
        .user_agent(concat!("runway-conformance/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("a client without TLS options builds")
}

/// Sends `body` and reads the stream to its end under the deadlines and limits.
async fn play(
    http: &reqwest::Client,
    config: &AguiCheckConfig,
    thread_id: &str,
    run_id: &str,
    body: &Value,
) -> Run {
    let mut run = Run {
        thread_id: thread_id.to_owned(),
        run_id: run_id.to_owned(),
        started_at: Some(SystemTime::now()),
        ..Run::default()
    };
    let d = config.settings.deadlines;
    let limits = config.settings.limits;
    let start = Instant::now();
    let sent = http
        .post(config.url.clone())
        .headers(config.headers.to_map())
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .json(body)
        .send();
    let mut response = match tokio::time::timeout(d.connect + d.first_frame, sent).await {
        Err(_) => {
            run.failure = Some((Code::TtfbTimeout, "no response headers in time".into()));
            return run;
        }
        Ok(Err(e)) => {
            run.failure = Some((
                Code::UpstreamUnavailable,
                format!("the request failed: {e}"),
            ));
            return run;
        }
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    if !status.is_success() {
        let code = if status.is_server_error() {
            Code::UpstreamUnavailable
        } else {
            Code::UpstreamRejected
        };
        run.failure = Some((code, format!("answered HTTP {status}")));
        return run;
    }
    let media = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if media.split(';').next().map(str::trim) != Some("text/event-stream") {
        run.failure = Some((
            Code::ProtocolMismatch,
            format!("answered {media:?}, not text/event-stream"),
        ));
        return run;
    }
    let mut reader = SseReader::new(limits.max_frame_bytes);
    let mut rules = RunRules::new(thread_id, run_id);
    let (mut bytes, mut last) = (0usize, Instant::now());
    loop {
        let wait = if run.ttfb.is_none() {
            d.first_frame
        } else {
            d.idle
        };
        let left = d.turn.saturating_sub(start.elapsed());
        let chunk = match tokio::time::timeout(wait.min(left), response.chunk()).await {
            Err(_) if left <= wait => {
                run.failure = Some((
                    Code::LimitExceeded,
                    "the run outlasted the turn deadline".into(),
                ));
                break;
            }
            Err(_) if run.ttfb.is_none() => {
                run.failure = Some((Code::TtfbTimeout, format!("no event within {wait:?}")));
                break;
            }
            Err(_) => {
                run.failure = Some((Code::IdleTimeout, format!("silent for {wait:?}")));
                break;
            }
            Ok(Err(e)) => {
                run.failure = Some((Code::StreamTruncated, format!("the stream broke: {e}")));
                break;
            }
            Ok(Ok(None)) => break,
            Ok(Ok(Some(chunk))) => chunk,
        };
        if rules.final_event().is_none() {
            run.longest_silence = run.longest_silence.max(last.elapsed());
        }
        last = Instant::now();
        bytes += chunk.len();
        if bytes > limits.max_stream_bytes {
            run.failure = Some((
                Code::LimitExceeded,
                format!("over {} bytes", limits.max_stream_bytes),
            ));
            break;
        }
        let lines = match reader.feed(&chunk) {
            Ok(lines) => lines,
            Err(e) => {
                run.failure = Some((Code::LimitExceeded, e.to_string()));
                break;
            }
        };
        for line in lines {
            let data = match line {
                SseLine::Data(data) => data,
                SseLine::Comment(_) => {
                    run.ttfb.get_or_insert(start.elapsed());
                    continue;
                }
                SseLine::Ignored(_) | SseLine::Blank => continue,
            };
            run.ttfb.get_or_insert(start.elapsed());
            let n = run.events.len() + 1;
            let event: Value = match serde_json::from_slice(&data) {
                Ok(v) => v,
                Err(e) => {
                    run.schema.push(format!("event {n}: not JSON ({e})"));
                    continue;
                }
            };
            let ty = event.get("type").and_then(Value::as_str).unwrap_or("?");
            for p in event_problems(&event) {
                if run.schema.len() < 20 {
                    run.schema.push(format!("event {n} ({ty}) {p}"));
                }
            }
            if ty == "TEXT_MESSAGE_CONTENT"
                && let Some(delta) = event.get("delta").and_then(Value::as_str)
            {
                run.text.push_str(delta);
            }
            rules.event(&event);
            if run.events.len() < limits.max_frames {
                run.events.push(event);
            }
        }
    }
    if run.failure.is_none() {
        rules.end();
    }
    run.rules = rules.problems().to_vec();
    run
}

/// Places a run's findings on the lines they concern (the second run's all on its own line).
/// Returns whether the run was read to its end.
fn judge(run: &Run, source: &str, items: &mut Items, history: bool) -> bool {
    if let Some((code, message)) = &run.failure {
        let found = run.finding(*code, message.clone(), source);
        if *code == Code::TtfbTimeout {
            items.first_frame.add(found);
        } else if history {
            items.history.add(found);
        } else {
            items.run.add(found);
        }
    }
    if !run.schema.is_empty() {
        let message = format!(
            "{} invalid: {}",
            plural(run.schema.len(), "event"),
            run.schema.join("; ")
        );
        let found = run.finding(Code::AguiInvalidEvent, message, source);
        if history {
            items.history.add(found);
        } else {
            items.events.add(found);
        }
    }
    if !run.rules.is_empty() {
        let found = run.finding(Code::AguiLifecycle, run.rules.join("; "), source);
        if history {
            items.history.add(found);
        } else {
            items.lifecycle.add(found);
        }
    }
    run.failure.is_none()
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

struct Items {
    run: CheckItem,
    events: CheckItem,
    lifecycle: CheckItem,
    first_frame: CheckItem,
    history: CheckItem,
    heartbeat: CheckItem,
    auth: CheckItem,
    bad_input: CheckItem,
}

/// Runs the AG-UI checklist against `config.url`.
pub async fn run_agui_checklist(config: &AguiCheckConfig) -> CheckReport {
    let http = client(config);
    let mut items = Items {
        run: CheckItem::new("agui_run", "A run answers with AG-UI events"),
        events: CheckItem::new("agui_events", "Every event is AG-UI 1.0"),
        lifecycle: CheckItem::new("agui_lifecycle", "Runs follow AG-UI's lifecycle"),
        first_frame: CheckItem::new("first_frame", "First event within the deadline"),
        history: CheckItem::new("agui_history", "A second run with the whole history"),
        heartbeat: CheckItem::new("heartbeat", "Heartbeat during a slow run"),
        auth: CheckItem::new("auth", "Authentication is complete"),
        bad_input: CheckItem::new("agui_bad_input", "Invalid input is refused"),
    };
    let mut runs = 0usize;
    let mut events = 0usize;
    let mut worst_ttfb = Duration::ZERO;

    let thread = fresh_id();
    let first_id = fresh_id();
    let hello = user("Hello");
    let first = play(
        &http,
        config,
        &thread,
        &first_id,
        &input(&thread, &first_id, json!([hello]), config),
    )
    .await;
    runs += 1;
    events += first.events.len();
    worst_ttfb = worst_ttfb.max(first.ttfb.unwrap_or_default());
    let judged = judge(&first, "run 1 (Hello)", &mut items, false);

    if judged {
        let second_id = fresh_id();
        let answer = json!({"id": fresh_token("a"), "role": "assistant", "content": first.text});
        let messages = json!([hello, answer, user("Please say that again.")]);
        let second = play(
            &http,
            config,
            &thread,
            &second_id,
            &input(&thread, &second_id, messages, config),
        )
        .await;
        runs += 1;
        events += second.events.len();
        worst_ttfb = worst_ttfb.max(second.ttfb.unwrap_or_default());
        judge(&second, "run 2 (whole history)", &mut items, true);
        items.history.figure = Some(plural(second.events.len(), "event"));
    } else {
        items.history.skip("the first run failed");
        if first.events.is_empty() {
            for line in [&mut items.events, &mut items.lifecycle] {
                line.skip("no events: the first run failed");
            }
        }
        if first.ttfb.is_none() {
            items.first_frame.skip("no events: the first run failed");
        }
    }

    match &config.slow_prompt {
        Some(prompt) => {
            let (t, r) = (fresh_id(), fresh_id());
            let slow = play(
                &http,
                config,
                &t,
                &r,
                &input(&t, &r, json!([user(prompt)]), config),
            )
            .await;
            runs += 1;
            events += slow.events.len();
            worst_ttfb = worst_ttfb.max(slow.ttfb.unwrap_or_default());
            judge(&slow, "slow run", &mut items, false);
            let gap = config.settings.deadlines.heartbeat;
            items.heartbeat.figure = Some(format!(
                "longest silence {} ms",
                slow.longest_silence.as_millis()
            ));
            if slow.longest_silence > gap {
                let message = format!(
                    "{} ms without a byte (heartbeat interval {} ms)",
                    slow.longest_silence.as_millis(),
                    gap.as_millis()
                );
                items
                    .heartbeat
                    .add(slow.finding(Code::HeartbeatGap, message, "slow run"));
            }
        }
        None => items.heartbeat.skip("no --slow-prompt given"),
    }

    check_auth(&http, config, &mut items.auth).await;
    check_bad_input(&http, config, &mut items.bad_input).await;

    items.run.figure = Some(format!(
        "{} in {}",
        plural(events, "event"),
        plural(runs, "run")
    ));
    if items.first_frame.status != Status::Skip {
        items.first_frame.figure = Some(format!("slowest {} ms", worst_ttfb.as_millis()));
    }
    for (line, what) in [
        (&mut items.run, "every run answered with a stream of events"),
        (
            &mut items.events,
            "every event passes AG-UI 1.0's event schema",
        ),
        (
            &mut items.lifecycle,
            "RUN_STARTED first, everything closed, one final event",
        ),
        (
            &mut items.first_frame,
            "every run's first event arrived in time",
        ),
        (
            &mut items.history,
            "the second run was judged like the first",
        ),
        (
            &mut items.heartbeat,
            "no silence longer than the heartbeat interval",
        ),
    ] {
        if line.status == Status::Pass && line.detail.is_empty() {
            line.detail = what.into();
        }
    }
    CheckReport {
        base_url: config.url.to_string(),
        settings: config.settings,
        items: vec![
            items.run,
            items.events,
            items.lifecycle,
            items.first_frame,
            items.history,
            items.heartbeat,
            items.auth,
            items.bad_input,
        ],
        notes: vec!["AG-UI 1.0 endpoint: URL is the endpoint a client POSTs to".into()],
    }
}

/// Each header left out, then each with a wrong value: 401 expected, never a stream.
async fn check_auth(http: &reqwest::Client, config: &AguiCheckConfig, line: &mut CheckItem) {
    if config.headers.is_empty() {
        line.skip("no headers given");
        return;
    }
    let mut tries = Vec::new();
    for i in 0..config.headers.0.len() {
        let name = config.headers.0[i].0.to_string();
        tries.push((format!("without {name}"), config.headers.without(i)));
        tries.push((format!("{name} wrong"), config.headers.with_wrong_value(i)));
    }
    for (what, headers) in tries {
        let (t, r) = (fresh_id(), fresh_id());
        let at = SystemTime::now();
        let sent = http
            .post(config.url.clone())
            .headers(headers.to_map())
            .json(&input(&t, &r, json!([user("Hello")]), config))
            .send();
        let status = match tokio::time::timeout(config.settings.deadlines.connect * 2, sent).await {
            Ok(Ok(resp)) => resp.status().as_u16(),
            _ => continue,
        };
        let found = |code, message: String| ReportedFinding {
            finding: Finding::new(code, message),
            source: what.clone(),
            run_id: Some(r.clone()),
            thread_id: Some(t.clone()),
            at: rfc3339(at),
        };
        match status {
            401 => {}
            200..=299 => line.add(found(
                Code::AuthNotEnforced,
                format!("{what}: HTTP {status}, not 401"),
            )),
            _ => line.add(found(
                Code::AuthNot401,
                format!("{what}: HTTP {status}, not 401"),
            )),
        }
    }
    if line.status == Status::Pass {
        line.detail = "every request missing or mangling a header got 401".into();
    }
}

/// A body that is not a `RunAgentInput`: a 4xx expected, not a run.
async fn check_bad_input(http: &reqwest::Client, config: &AguiCheckConfig, line: &mut CheckItem) {
    let at = SystemTime::now();
    let sent = http
        .post(config.url.clone())
        .headers(config.headers.to_map())
        .json(&json!({"threadId": 7, "messages": "hello"}))
        .send();
    let status = match tokio::time::timeout(config.settings.deadlines.connect * 2, sent).await {
        Ok(Ok(resp)) => resp.status().as_u16(),
        _ => {
            line.skip("no answer to the invalid input");
            return;
        }
    };
    line.figure = Some(format!("HTTP {status}"));
    if (400..500).contains(&status) {
        line.detail = "a body that is not a RunAgentInput got a 4xx".into();
    } else {
        line.add(ReportedFinding {
            finding: Finding::new(
                Code::AguiInputAccepted,
                format!(
                    "a body with a numeric threadId and no messages got HTTP {status}, not a 4xx"
                ),
            ),
            source: "invalid input".into(),
            run_id: None,
            thread_id: None,
            at: rfc3339(at),
        });
    }
}
