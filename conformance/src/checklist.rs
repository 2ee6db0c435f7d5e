//! The contract's onboarding checklist, run against a live agent.
//!
//! | line | how it is checked |
//! |---|---|
//! | Both endpoints work | the Test button: `/health` folds to available, and `POST /runs` with `Hello` on `validate-<16 hex>` yields a valid frame |
//! | Authentication is complete | with agreed headers: each header left out in turn, then each with a wrong value, with characters appended and with its last character removed, on both endpoints: 401 expected |
//! | First frame within the deadline | the time to the first frame or comment on every turn, and whether the path held it (`FIRST_FRAME_HELD`: late, or released only by a later write; proven on a busy turn, `--slow-prompt`) |
//! | Context stored by threadId | two turns on one fresh thread: turn 1 carries a unique token, the text of turn 2 must contain it |
//! | Every turn ends properly | final frame, everything closed, no empty bubble, nothing after the final frame, on every full turn |
//! | Frames follow the contract | every other frame rule and the stream headers, on every turn |
//! | Heartbeat during a slow turn | with `--slow-prompt`: no silence longer than the heartbeat interval |
//! | Idempotency on runId | turn 1 replayed byte for byte after turn 2: same text expected (an agent that ran it again would now see turn 2 in its context) |
//! | Branch isolation | a fresh thread `U` gets a token (first prompt), then the second prompt goes to `U:<branch>`: its text must not contain that token |
//! | runId reused with a different body | turn 1's runId with another input: answering turn 1's text again is a warning |
//!
//! Every error found in a turn fails the line the turn serves; every warning
//! goes to the line of its kind (ending, frames, heartbeat), and
//! `TTFB_TIMEOUT` and `FIRST_FRAME_HELD` to the first-frame line.

use std::time::SystemTime;

use crate::findings::{Code, Finding, Severity};
use crate::report::{CheckItem, CheckReport, ReportedFinding, Status, rfc3339};
use crate::run_body::{Caller, RunBody, fresh_id, fresh_token};
use crate::test_button::press_test;
use crate::transport::{
    Endpoint, HeaderSet, Settings, Transport, TransportFailure, classify_send_error,
};
use crate::turn::{ReadMode, TurnOutcome, TurnReport, run_turn, run_turn_bytes};
use url::Url;

/// The default first context prompt; `{token}` is replaced by a fresh token.
pub const DEFAULT_CONTEXT_FIRST: &str = "Please remember this token: {token}";
/// The default second context prompt, referring to the first.
pub const DEFAULT_CONTEXT_SECOND: &str =
    "Which token did I ask you to remember in my previous message?";

/// What to check, against which agent.
#[derive(Debug, Clone)]
pub struct CheckConfig {
    /// The agent's `base_url`.
    pub base_url: Url,
    /// The header set agreed at onboarding (empty: no authentication).
    pub headers: HeaderSet,
    /// Deadlines, limits, egress mode.
    pub settings: Settings,
    /// The two context prompts. `{token}` in the first is replaced by a
    /// fresh token (appended when absent); the second turn's text must
    /// contain that token.
    pub context_prompts: (String, String),
    /// A prompt that keeps the agent busy (e.g. `/slow 20` for runway's demo
    /// agent); the heartbeat line is skipped without it.
    pub slow_prompt: Option<String>,
    /// The agentId / workspaceId / userId sent.
    pub caller: Caller,
}

impl CheckConfig {
    /// Defaults for `base_url`: no headers, contract deadlines, egress rules
    /// off, default prompts, fresh caller ids.
    pub fn new(base_url: Url) -> Self {
        CheckConfig {
            base_url,
            headers: HeaderSet::default(),
            settings: Settings::default(),
            context_prompts: (DEFAULT_CONTEXT_FIRST.into(), DEFAULT_CONTEXT_SECOND.into()),
            slow_prompt: None,
            caller: Caller::fresh(),
        }
    }
}

/// Fills `{token}` into the first context prompt (appending it when absent).
pub fn with_token(prompt: &str, token: &str) -> String {
    if prompt.contains("{token}") {
        prompt.replace("{token}", token)
    } else {
        format!("{prompt} {token}")
    }
}

/// The lines, by index in the report.
const ENDPOINTS: usize = 0;
const AUTH: usize = 1;
const FIRST_FRAME: usize = 2;
const CONTEXT: usize = 3;
const ENDING: usize = 4;
const FRAMES: usize = 5;
const HEARTBEAT: usize = 6;
const IDEMPOTENCY: usize = 7;
const BRANCH: usize = 8;
const REUSE: usize = 9;

struct Checklist {
    items: Vec<CheckItem>,
    turns: Vec<(String, TurnReport)>,
}

impl Checklist {
    fn new(settings: &Settings) -> Self {
        let d = &settings.deadlines;
        let items = vec![
            CheckItem::new("endpoints", "Both endpoints work"),
            CheckItem::new("auth", "Authentication is complete"),
            CheckItem::new(
                "first_frame",
                format!(
                    "First frame within {}",
                    human(d.first_frame.as_millis() as u64)
                ),
            ),
            CheckItem::new("context", "Context stored by threadId"),
            CheckItem::new("ending", "Every turn ends properly"),
            CheckItem::new("frames", "Frames follow the contract"),
            CheckItem::new("heartbeat", "Heartbeat during a slow turn"),
            CheckItem::new("idempotency", "Idempotency on runId"),
            CheckItem::new("branch", "Branch isolation"),
            CheckItem::new("run_id_reuse", "runId reused with a different body"),
        ];
        Checklist {
            items,
            turns: Vec::new(),
        }
    }

    /// Places a turn's findings; errors go to `owner` (except TTFB_TIMEOUT),
    /// warnings to their kind's line. `ignore` lists codes expected here.
    fn file_turn(&mut self, owner: usize, label: &str, turn: &TurnReport, ignore: &[Code]) {
        for f in &turn.findings {
            if ignore.contains(&f.code) {
                continue;
            }
            let line = route(owner, f);
            if line != owner && f.severity == Severity::Error {
                self.items[owner].add_code(f.code);
            }
            self.items[line].add(reported(f, label, Some(turn), turn.started_at));
        }
        self.turns.push((label.to_owned(), turn.clone()));
    }
}

fn route(owner: usize, f: &Finding) -> usize {
    match f.code {
        Code::TtfbTimeout | Code::FirstFrameHeld => FIRST_FRAME,
        Code::NoFinalFrame | Code::FramesLeftOpen | Code::EmptyBubble | Code::FrameAfterFinal => {
            ENDING
        }
        Code::HeartbeatGap => HEARTBEAT,
        _ if f.severity == Severity::Error => owner,
        _ => FRAMES,
    }
}

fn reported(
    f: &Finding,
    source: &str,
    turn: Option<&TurnReport>,
    at: SystemTime,
) -> ReportedFinding {
    ReportedFinding {
        finding: f.clone(),
        source: source.to_owned(),
        run_id: turn.map(|t| t.run_id.clone()),
        thread_id: turn.map(|t| t.thread_id.clone()),
        at: rfc3339(at),
    }
}

fn human(ms: u64) -> String {
    if ms >= 1000 && ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

fn describe(turn: &TurnReport) -> String {
    match &turn.outcome {
        TurnOutcome::Finished => "finished".into(),
        TurnOutcome::Interrupted => "ended with a question (interrupt)".into(),
        TurnOutcome::RunError { message } => format!("ended with RUN_ERROR: {message}"),
        TurnOutcome::ClosedWithoutFinal => "closed without a final frame".into(),
        TurnOutcome::StoppedAtFirstValidFrame => "stopped at the first valid frame".into(),
        TurnOutcome::StoppedByClient => "stopped by the client".into(),
        TurnOutcome::Failed { code } => format!("failed with {code}"),
    }
}

fn excerpt(text: &str) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() > 120 {
        format!("{}...", one_line.chars().take(120).collect::<String>())
    } else {
        one_line
    }
}

/// Runs the checklist and returns the report. Never panics on agent
/// behaviour; a transport that cannot be built is reported on the first
/// line.
pub async fn run_checklist(config: &CheckConfig) -> CheckReport {
    let mut c = Checklist::new(&config.settings);
    let mut notes = Vec::new();
    if !config.settings.egress_strict
        && let Err(refusal) = crate::egress::check_base_url(&config.base_url)
    {
        notes.push(format!(
            "egress rules not applied (use --egress-strict): Console would refuse this base_url: {refusal}"
        ));
    }
    let transport = match Transport::new(config.base_url.clone(), config.settings) {
        Ok(t) => t,
        Err(e) => {
            c.items[ENDPOINTS].raise(Status::Fail);
            c.items[ENDPOINTS].detail = e.to_string();
            for item in c.items.iter_mut().skip(1) {
                item.skip("not run: no HTTP client");
            }
            return finish(config, c, notes);
        }
    };
    let headers = &config.headers;
    let caller = &config.caller;

    // 1. Both endpoints: the Test button.
    let test = press_test(&transport, headers, caller).await;
    let now = SystemTime::now();
    for f in test.health.verdict.findings() {
        c.items[ENDPOINTS].add(reported(&f, "/health", None, now));
    }
    c.file_turn(ENDPOINTS, "Test turn", &test.turn, &[]);
    let health_text = match &test.health.verdict {
        crate::health::HealthVerdict::Available {
            status,
            name,
            version,
        } => format!(
            "/health {}{}{}",
            serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            name.as_ref()
                .map(|n| format!(" \"{n}\""))
                .unwrap_or_default(),
            version
                .as_ref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default(),
        ),
        crate::health::HealthVerdict::Unavailable { reason, .. } => {
            format!("/health unavailable: {reason}")
        }
    };
    let test_text = match test.turn.first_valid_frame_ms {
        Some(ms) if test.turn.error_code().is_none() => {
            format!("Test turn: first valid frame in {ms} ms")
        }
        _ => {
            c.items[ENDPOINTS].raise(Status::Fail);
            format!("Test turn: no valid frame ({})", describe(&test.turn))
        }
    };
    c.items[ENDPOINTS].detail = format!("{health_text}; {test_text}");
    let reachable = test.health.http_status.is_some() || test.turn.http_status.is_some();
    let turns_ok = test.turn.first_valid_frame_ms.is_some() && test.turn.error_code().is_none();

    // 2. Authentication.
    if headers.is_empty() {
        c.items[AUTH].skip("no headers agreed: Console sends none (only acceptable behind an IP allowlist, mTLS or a private network)");
    } else if !reachable {
        c.items[AUTH].skip("not run: the agent is unreachable");
    } else {
        check_auth(&transport, config, &mut c.items[AUTH]).await;
    }

    if !turns_ok {
        let why = "not run: the Test turn produced no valid frame";
        for i in [CONTEXT, IDEMPOTENCY, BRANCH, REUSE, HEARTBEAT] {
            c.items[i].skip(why);
        }
    } else {
        turn_checks(&transport, config, &mut c).await;
    }
    summarize_turn_lines(&mut c, config.slow_prompt.is_some());
    finish(config, c, notes)
}

async fn turn_checks(transport: &Transport, config: &CheckConfig, c: &mut Checklist) {
    let headers = &config.headers;
    let caller = &config.caller;
    // 4. Context.
    let thread = fresh_id();
    let token = fresh_token("ctx");
    let first = caller.turn(&thread, &with_token(&config.context_prompts.0, &token));
    let first_bytes = first.to_bytes();
    let t1 = run_turn_bytes(
        transport,
        headers,
        &first,
        first_bytes.clone(),
        ReadMode::WholeTurn,
    )
    .await;
    c.file_turn(CONTEXT, "context turn 1", &t1, &[]);
    let second = caller.turn(&thread, &config.context_prompts.1);
    let t2 = run_turn(transport, headers, &second, ReadMode::WholeTurn).await;
    c.file_turn(CONTEXT, "context turn 2", &t2, &[]);
    let item = &mut c.items[CONTEXT];
    if !t1.finished() || !t2.finished() {
        item.raise(Status::Fail);
        item.detail = format!("turn 1 {}, turn 2 {}", describe(&t1), describe(&t2));
    } else if t2.all_text.contains(&token) {
        item.detail = format!("turn 2 named the token {token} given in turn 1");
    } else {
        let f = Finding::new(
            Code::ContextLost,
            format!(
                "turn 2 on threadId {thread} does not contain the token {token} given in turn 1; it said: {:?}",
                excerpt(&t2.all_text)
            ),
        );
        item.add(reported(&f, "context turn 2", Some(&t2), t2.started_at));
        item.detail = "the agent answered turn 2 as if turn 1 never happened: store context keyed by threadId".into();
    }

    // 8. Idempotency: replay turn 1 byte for byte, after turn 2.
    if t1.finished() {
        let replay =
            run_turn_bytes(transport, headers, &first, first_bytes, ReadMode::WholeTurn).await;
        c.file_turn(IDEMPOTENCY, "replay of context turn 1", &replay, &[]);
        let item = &mut c.items[IDEMPOTENCY];
        if replay.error_code().is_some() || !replay.finished() {
            let f = Finding::new(
                Code::NotIdempotent,
                format!("replaying runId {} {}", first.run_id, describe(&replay)),
            );
            item.add(reported(
                &f,
                "replay of context turn 1",
                Some(&replay),
                replay.started_at,
            ));
            item.detail = "a completed runId must return the earlier result".into();
        } else if replay.all_text == t1.all_text {
            item.detail = "the replay returned the earlier answer".into();
        } else {
            let f = Finding::new(
                Code::NotIdempotent,
                format!(
                    "replaying runId {} answered {:?} instead of the earlier {:?}: the agent ran the turn again",
                    first.run_id,
                    excerpt(&replay.all_text),
                    excerpt(&t1.all_text)
                ),
            );
            item.add(reported(
                &f,
                "replay of context turn 1",
                Some(&replay),
                replay.started_at,
            ));
            item.detail =
                "a completed runId must return the earlier result instead of running again".into();
        }
    } else {
        c.items[IDEMPOTENCY].skip("not run: context turn 1 did not finish");
    }

    // 9. Branch isolation: a fresh thread U gets a token, then the second
    // prompt goes to U:<branch>. It is a thread of its own so that an agent
    // naming only the previous input still reveals a leak, and so that a
    // leaking agent's writes cannot disturb the other checks.
    let base_thread = fresh_id();
    let branch_token = fresh_token("branch");
    let seed_body = caller.turn(
        &base_thread,
        &with_token(&config.context_prompts.0, &branch_token),
    );
    let seed = run_turn(transport, headers, &seed_body, ReadMode::WholeTurn).await;
    c.file_turn(BRANCH, "branch base turn", &seed, &[]);
    let branch_thread = format!("{base_thread}:{}", fresh_id());
    let branch_body = caller.turn(&branch_thread, &config.context_prompts.1);
    let branch = run_turn(transport, headers, &branch_body, ReadMode::WholeTurn).await;
    c.file_turn(BRANCH, "branch turn", &branch, &[]);
    let item = &mut c.items[BRANCH];
    if branch.all_text.contains(&branch_token) {
        let f = Finding::new(
            Code::BranchLeak,
            format!(
                "threadId {branch_thread} answered with the token {branch_token} given on threadId {base_thread}: one branch must not see another's context"
            ),
        );
        item.add(reported(
            &f,
            "branch turn",
            Some(&branch),
            branch.started_at,
        ));
    } else if !seed.finished() {
        item.raise(Status::Fail);
        item.detail = format!("the turn on {base_thread} {}", describe(&seed));
    } else if branch.error_code().is_some() || branch.outcome == TurnOutcome::ClosedWithoutFinal {
        item.raise(Status::Fail);
        item.detail = format!("the branch turn {}", describe(&branch));
    } else {
        item.detail = format!("{branch_thread} did not see {base_thread}'s context");
    }

    // 10. runId reused with a different body.
    if t1.finished() {
        let mut reused: RunBody = first.clone();
        reused.input = format!("A different message, {}", fresh_token("reuse"));
        let r = run_turn(transport, headers, &reused, ReadMode::WholeTurn).await;
        c.file_turn(REUSE, "runId reuse", &r, &[Code::UpstreamRejected]);
        let item = &mut c.items[REUSE];
        if r.error_code() == Some(Code::UpstreamRejected) {
            item.detail = format!("rejected with HTTP {}", r.http_status.unwrap_or(0));
        } else if r.finished() && r.all_text == t1.all_text {
            let f = Finding::new(
                Code::RunIdReuseReplayed,
                format!(
                    "runId {} sent again with a different input was answered with the earlier turn's text: key idempotency on the runId and the body",
                    first.run_id
                ),
            );
            item.add(reported(&f, "runId reuse", Some(&r), r.started_at));
        } else {
            item.detail = format!("not replayed (the turn {})", describe(&r));
        }
    } else {
        c.items[REUSE].skip("not run: context turn 1 did not finish");
    }

    // 7. Heartbeat during a slow turn.
    match &config.slow_prompt {
        None => c.items[HEARTBEAT].skip("no --slow-prompt given"),
        Some(prompt) => {
            let body = caller.turn(&fresh_id(), prompt);
            let slow = run_turn(transport, headers, &body, ReadMode::WholeTurn).await;
            c.file_turn(HEARTBEAT, "slow turn", &slow, &[]);
            let limit = transport.deadlines().heartbeat.as_millis() as u64;
            let item = &mut c.items[HEARTBEAT];
            item.figure = Some(format!("longest silence {} ms", slow.longest_silence_ms));
            if slow.longest_silence_ms > limit {
                item.raise(Status::Fail);
                item.detail = format!("the slow turn went silent longer than {limit} ms");
            } else if slow.error_code().is_none() {
                item.detail = format!("slow turn {} in {} ms", describe(&slow), slow.total_ms);
            } else {
                item.detail = format!("the slow turn {}", describe(&slow));
            }
        }
    }
}

/// Figures and details of the lines fed by every turn (`slow`: a slow turn was played, which
/// proves whether a busy turn's first frame is held on the way).
fn summarize_turn_lines(c: &mut Checklist, slow: bool) {
    let ttfbs: Vec<u64> = c.turns.iter().filter_map(|(_, t)| t.ttfb_ms).collect();
    let item = &mut c.items[FIRST_FRAME];
    if let Some(max) = ttfbs.iter().max() {
        item.figure = Some(format!("TTFB max {max} ms over {} turn(s)", ttfbs.len()));
    }
    if item.status == Status::Pass {
        item.detail = if ttfbs.is_empty() {
            "no frame received".into()
        } else if slow {
            "every turn opened its stream in time, its first frame never held on the way (the slow turn's included)".into()
        } else {
            "every turn opened its stream in time; a quick answer releases a first frame the path holds, so give --slow-prompt to prove a busy turn's first frame leaves at once".into()
        };
        if ttfbs.is_empty() {
            item.raise(Status::Fail);
        }
    }
    let full: Vec<&(String, TurnReport)> =
        c.turns.iter().filter(|(l, _)| l != "Test turn").collect();
    let item = &mut c.items[ENDING];
    if full.is_empty() {
        if item.status == Status::Pass {
            item.skip("no full turn was read");
        }
    } else if item.status == Status::Pass {
        item.detail = format!(
            "{} full turn(s): final frame sent, everything closed",
            full.len()
        );
    }
    let item = &mut c.items[FRAMES];
    if item.status == Status::Pass {
        item.detail = format!("{} turn(s) read, no frame rule broken", c.turns.len());
    }
    let longest = c.turns.iter().map(|(_, t)| t.longest_silence_ms).max();
    let item = &mut c.items[HEARTBEAT];
    if item.figure.is_none()
        && let Some(l) = longest
    {
        item.figure = Some(format!("longest silence {l} ms"));
    }
}

fn finish(config: &CheckConfig, c: Checklist, notes: Vec<String>) -> CheckReport {
    CheckReport {
        base_url: config.base_url.to_string(),
        settings: config.settings,
        items: c.items,
        notes,
    }
}

/// The answer of one auth probe.
enum ProbeAnswer {
    Status(u16),
    Failed(TransportFailure),
}

async fn probe_status(
    transport: &Transport,
    endpoint: Endpoint,
    headers: &HeaderSet,
    caller: &Caller,
) -> ProbeAnswer {
    if let Err(f) = transport.precheck() {
        return ProbeAnswer::Failed(f);
    }
    let d = transport.deadlines();
    let request = match endpoint {
        Endpoint::Health => transport.health_request(headers),
        Endpoint::Runs => transport.runs_request(headers, caller.turn(&fresh_id(), "").to_bytes()),
    };
    // Only the status matters: the response (and any stream) is dropped.
    match tokio::time::timeout(d.connect + d.first_frame, request.send()).await {
        Err(_) => ProbeAnswer::Failed(TransportFailure::Other(
            "no response headers in time".into(),
        )),
        Ok(Err(e)) => ProbeAnswer::Failed(classify_send_error(&e)),
        Ok(Ok(r)) => ProbeAnswer::Status(r.status().as_u16()),
    }
}

async fn check_auth(transport: &Transport, config: &CheckConfig, item: &mut CheckItem) {
    let headers = &config.headers;
    let mut variants = Vec::new();
    for (i, (name, _)) in headers.0.iter().enumerate() {
        variants.push((format!("without {name}"), headers.without(i)));
        variants.push((format!("with a wrong {name}"), headers.with_wrong_value(i)));
        variants.push((
            format!("with {name} followed by extra characters"),
            headers.with_extended_value(i),
        ));
        variants.push((
            format!("with {name} missing its last character"),
            headers.with_shortened_value(i),
        ));
    }
    let mut probes = 0;
    for (what, set) in &variants {
        for endpoint in [Endpoint::Health, Endpoint::Runs] {
            let path = match endpoint {
                Endpoint::Health => "GET /health",
                Endpoint::Runs => "POST /runs",
            };
            let at = SystemTime::now();
            probes += 1;
            let source = format!("{path} {what}");
            let finding = match probe_status(transport, endpoint, set, &config.caller).await {
                ProbeAnswer::Status(401) => None,
                ProbeAnswer::Status(s @ 200..=299) => Some(Finding::new(
                    Code::AuthNotEnforced,
                    format!(
                        "{path} {what} was accepted (HTTP {s}): check every header in the agreed set"
                    ),
                )),
                ProbeAnswer::Status(s) => Some(Finding::new(
                    Code::AuthNot401,
                    format!(
                        "{path} {what} was refused with HTTP {s}: wrong or missing credentials return 401"
                    ),
                )),
                ProbeAnswer::Failed(f) => {
                    item.raise(Status::Fail);
                    item.detail = format!("{path} {what}: {}", f.describe());
                    None
                }
            };
            if let Some(f) = finding {
                item.add(reported(&f, &source, None, at));
            }
        }
    }
    if item.status == Status::Pass {
        item.detail = format!(
            "{probes} requests with a header missing, wrong, extended or cut short: all refused with 401 (constant-time comparison cannot be observed from outside)"
        );
    }
}
