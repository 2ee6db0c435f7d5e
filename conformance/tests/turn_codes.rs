//! Each broken agent triggers exactly one code on one turn; the correct agent
//! triggers none. All traffic goes to 127.0.0.1.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{Agent, AgentSpec, Step, answer, correct_turn, fast_settings, finished};
use runway_conformance::frame_rules::StreamEnd;
use runway_conformance::run_body::fresh_id;
use runway_conformance::turn::{ReadMode, TurnOutcome, run_turn};
use runway_conformance::{Caller, Code, HeaderSet, Settings, Transport, TurnReport};
use serde_json::{Value, json};
use url::Url;

async fn turn_on(base_url: &str, settings: Settings, input: &str) -> TurnReport {
    let transport = Transport::new(Url::parse(base_url).unwrap(), settings).unwrap();
    let body = Caller::fresh().turn(&fresh_id(), input);
    run_turn(
        &transport,
        &HeaderSet::default(),
        &body,
        ReadMode::WholeTurn,
    )
    .await
}

async fn turn(spec: AgentSpec, settings: Settings) -> TurnReport {
    let agent = Agent::start(spec).await;
    turn_on(&agent.base_url(), settings, "hi").await
}

fn codes(report: &TurnReport) -> BTreeSet<Code> {
    report.findings.iter().map(|f| f.code).collect()
}

/// Asserts the report carries `expected` and nothing else.
fn only(report: &TurnReport, expected: Code) {
    let got = codes(report);
    assert_eq!(
        got,
        BTreeSet::from([expected]),
        "findings: {:#?}",
        report.findings
    );
}

/// A scripted agent that sends the correct answer with `extra` frames
/// before it.
fn with_before(extra: Vec<Step>) -> AgentSpec {
    AgentSpec::scripted(move |_| {
        let mut steps = extra.clone();
        steps.extend(correct_turn("fine"));
        steps
    })
}

#[tokio::test]
async fn the_correct_agent_triggers_nothing() {
    let report = turn(AgentSpec::correct(), fast_settings()).await;
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert_eq!(report.outcome, TurnOutcome::Finished);
    assert_eq!(report.answer, "You said \"hi\".");
    assert!(report.ttfb_ms.is_some());
    assert_eq!(report.http_status, Some(200));
}

#[tokio::test]
async fn a_rich_correct_turn_with_matching_envelope_triggers_nothing() {
    let spec = AgentSpec::scripted(|req: &Value| {
        let env = |mut v: Value| {
            v["run_id"] = req["runId"].clone();
            v["threadId"] = req["threadId"].clone();
            v["event_id"] = json!(fresh_id());
            Step::Frame(v)
        };
        vec![
            Step::Comment,
            env(json!({"type":"STEP_STARTED","stepName":"plan"})),
            env(json!({"type":"REASONING_MESSAGE_START","messageId":"r1"})),
            env(json!({"type":"REASONING_MESSAGE_CONTENT","messageId":"r1","delta":"thinking"})),
            env(json!({"type":"REASONING_MESSAGE_END","messageId":"r1"})),
            env(json!({"type":"TEXT_MESSAGE_START","messageId":"a1","role":"assistant"})),
            env(json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"Let me look."})),
            env(json!({"type":"TEXT_MESSAGE_END","messageId":"a1"})),
            env(json!({"type":"TOOL_CALL_START","toolCallId":"t1","toolCallName":"lookup"})),
            env(json!({"type":"TOOL_CALL_ARGS","toolCallId":"t1","delta":"{\"q\":1}"})),
            env(json!({"type":"TOOL_CALL_END","toolCallId":"t1"})),
            env(json!({"type":"TOOL_CALL_RESULT","toolCallId":"t1","content":"found"})),
            env(
                json!({"type":"STATE_SNAPSHOT","snapshot":{"artifacts":[{"url":"https://files.example.com/r.pdf","name":"r.pdf"}],"todos":[]}}),
            ),
            env(
                json!({"type":"STATE_DELTA","delta":[{"op":"add","path":"/todos/0","value":{"title":"x"}}]}),
            ),
            env(
                json!({"type":"CUSTOM","name":"file","value":{"url":"https://files.example.com/other.csv"}}),
            ),
            env(
                json!({"type":"ACTIVITY_SNAPSHOT","messageId":"act","activityType":"progress","content":{}}),
            ),
            env(json!({"type":"ACTIVITY_DELTA","messageId":"act","patch":[]})),
            env(json!({"type":"TEXT_MESSAGE_START","messageId":"a2","role":"assistant"})),
            env(json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a2","delta":"Here it is."})),
            env(json!({"type":"TEXT_MESSAGE_END","messageId":"a2"})),
            env(json!({"type":"STEP_FINISHED","stepName":"plan"})),
            Step::Raw("event: ignored\nid: 3\nretry: 100\n\n".into()),
            env(json!({"type":"RUN_FINISHED","outcome":{"type":"success"}})),
        ]
    });
    let report = turn(spec, fast_settings()).await;
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert_eq!(report.answer, "Here it is.");
}

#[tokio::test]
async fn a_valid_interrupt_and_a_run_error_are_proper_endings() {
    let spec = AgentSpec::scripted(|_| {
        vec![Step::Frame(
            json!({"type":"RUN_FINISHED","outcome":{"type":"interrupt",
            "interrupts":[{"kind":"authorization","provider":"google","authorizeUrl":"https://accounts.example.com/auth"}]}}),
        )]
    });
    let report = turn(spec, fast_settings()).await;
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert_eq!(report.outcome, TurnOutcome::Interrupted);

    let spec = AgentSpec::scripted(|_| {
        vec![Step::Frame(
            json!({"type":"RUN_ERROR","message":"model down"}),
        )]
    });
    let report = turn(spec, fast_settings()).await;
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert_eq!(
        report.outcome,
        TurnOutcome::RunError {
            message: "model down".into()
        }
    );
}

// ---- transport and status codes ----

#[tokio::test]
async fn upstream_rejected_on_4xx() {
    let report = turn(
        AgentSpec {
            runs_status: 401,
            ..AgentSpec::correct()
        },
        fast_settings(),
    )
    .await;
    only(&report, Code::UpstreamRejected);
}

#[tokio::test]
async fn upstream_rejected_on_redirect_which_is_not_followed() {
    let agent = Agent::start(AgentSpec {
        runs_status: 302,
        ..AgentSpec::correct()
    })
    .await;
    let report = turn_on(&agent.base_url(), fast_settings(), "hi").await;
    only(&report, Code::UpstreamRejected);
    assert_eq!(report.http_status, Some(302));
    // Only /runs was hit: the redirect target never was.
    assert_eq!(agent.requests(), 1);
}

#[tokio::test]
async fn upstream_unavailable_on_5xx() {
    let report = turn(
        AgentSpec {
            runs_status: 503,
            ..AgentSpec::correct()
        },
        fast_settings(),
    )
    .await;
    only(&report, Code::UpstreamUnavailable);
}

#[tokio::test]
async fn upstream_unavailable_when_the_connection_is_refused() {
    // Bind, note the port, close: nothing listens there any more.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let report = turn_on(&format!("http://{addr}"), fast_settings(), "hi").await;
    only(&report, Code::UpstreamUnavailable);
}

#[tokio::test]
async fn protocol_mismatch_when_runs_is_not_an_event_stream() {
    let report = turn(
        AgentSpec {
            content_type: "application/json",
            ..AgentSpec::correct()
        },
        fast_settings(),
    )
    .await;
    only(&report, Code::ProtocolMismatch);
}

#[tokio::test]
async fn egress_refused_in_strict_mode_without_sending_anything() {
    let agent = Agent::start(AgentSpec::correct()).await;
    let strict = Settings {
        egress_strict: true,
        ..fast_settings()
    };
    // http and a loopback literal: refused by the pure pre-check.
    let report = turn_on(&agent.base_url(), strict, "hi").await;
    only(&report, Code::EgressRefused);
    // https and a name resolving to loopback: refused by the resolver on
    // connection, before any byte is sent.
    let report = turn_on(
        &format!("https://localhost:{}", agent.addr.port()),
        strict,
        "hi",
    )
    .await;
    only(&report, Code::EgressRefused);
    assert_eq!(agent.requests(), 0);
}

#[tokio::test]
async fn connect_timeout_against_a_listener_whose_backlog_is_full() {
    // A listener with the smallest backlog that never accepts: once its
    // queue is full the kernel drops further SYNs, so a connect hangs. This
    // is loopback only. Filling is bounded to 64 attempts.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    let mut full = false;
    for _ in 0..64 {
        match tokio::time::timeout(
            Duration::from_millis(200),
            tokio::net::TcpStream::connect(addr),
        )
        .await
        {
            Ok(Ok(s)) => fillers.push(s),
            _ => {
                full = true;
                break;
            }
        }
    }
    assert!(full, "could not fill the backlog of a loopback listener");
    let report = turn_on(&format!("http://{addr}"), fast_settings(), "hi").await;
    only(&report, Code::ConnectTimeout);
    drop(fillers);
    drop(listener);
}

// ---- deadlines and limits ----

#[tokio::test]
async fn ttfb_timeout_when_the_first_frame_is_late() {
    let spec = AgentSpec::scripted(|_| {
        let mut s = vec![Step::Sleep(2000)];
        s.extend(correct_turn("late"));
        s
    });
    let report = turn(spec, fast_settings()).await;
    only(&report, Code::TtfbTimeout);
}

#[tokio::test]
async fn idle_timeout_on_mid_stream_silence() {
    let spec = AgentSpec::scripted(|_| {
        let mut s = answer("x");
        s.push(Step::Sleep(2500));
        s.push(finished());
        s
    });
    let report = turn(spec, fast_settings()).await;
    only(&report, Code::IdleTimeout);
}

#[tokio::test]
async fn a_comment_resets_the_idle_clock() {
    let spec = AgentSpec::scripted(|_| {
        let mut s = answer("x");
        for _ in 0..10 {
            s.push(Step::Sleep(150));
            s.push(Step::Comment);
        }
        s.push(finished());
        s
    });
    // 1.5 s of work in total, idle 1200 ms, heartbeat 500 ms: no finding.
    let report = turn(spec, fast_settings()).await;
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
}

#[tokio::test]
async fn stream_truncated_when_the_connection_breaks() {
    let spec = AgentSpec::scripted(|_| {
        vec![
            Step::Frame(json!({"type":"TEXT_MESSAGE_START","messageId":"a1"})),
            Step::Frame(
                json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"half a sen"}),
            ),
            Step::Sleep(20),
            Step::Abort,
        ]
    });
    let report = turn(spec, fast_settings()).await;
    only(&report, Code::StreamTruncated);
    assert_eq!(report.answer, "half a sen");
}

#[tokio::test]
async fn limit_exceeded_frame_too_large() {
    let spec = AgentSpec::scripted(|_| correct_turn(&"x".repeat(300 * 1024)));
    let report = turn(spec, fast_settings()).await;
    only(&report, Code::LimitExceeded);
}

#[tokio::test]
async fn limit_exceeded_stream_too_large() {
    let mut settings = fast_settings();
    settings.limits.max_stream_bytes = 64 * 1024;
    let spec = AgentSpec::scripted(|_| {
        let mut s = vec![Step::Frame(
            json!({"type":"TEXT_MESSAGE_START","messageId":"a1"}),
        )];
        for _ in 0..40 {
            s.push(Step::Frame(
                json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"y".repeat(4096)}),
            ));
        }
        s.push(Step::Frame(
            json!({"type":"TEXT_MESSAGE_END","messageId":"a1"}),
        ));
        s.push(finished());
        s
    });
    let report = turn(spec, settings).await;
    only(&report, Code::LimitExceeded);
}

#[tokio::test]
async fn limit_exceeded_too_many_frames() {
    let mut settings = fast_settings();
    settings.limits.max_frames = 50;
    let spec = AgentSpec::scripted(|_| {
        let mut s = vec![Step::Frame(
            json!({"type":"TEXT_MESSAGE_START","messageId":"a1"}),
        )];
        for _ in 0..60 {
            s.push(Step::Frame(
                json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"z"}),
            ));
        }
        s.push(Step::Frame(
            json!({"type":"TEXT_MESSAGE_END","messageId":"a1"}),
        ));
        s.push(finished());
        s
    });
    let report = turn(spec, settings).await;
    only(&report, Code::LimitExceeded);
}

#[tokio::test]
async fn limit_exceeded_whole_turn_deadline() {
    let mut settings = fast_settings();
    settings.deadlines.turn = Duration::from_millis(700);
    let spec = AgentSpec::scripted(|_| {
        let mut s = answer("x");
        for _ in 0..40 {
            s.push(Step::Sleep(50));
            s.push(Step::Comment);
        }
        s.push(finished());
        s
    });
    let report = turn(spec, settings).await;
    only(&report, Code::LimitExceeded);
}

// ---- frame rules ----

#[tokio::test]
async fn interrupt_rejected() {
    for bad in [
        json!({"type":"interrupt","interrupts":[{"kind":"poll","prompt":"?"}]}),
        json!({"type":"interrupt","interrupts":[{"kind":"review","items":[{"args":{}}]}]}),
        json!({"type":"interrupt","interrupts":[{"kind":"authorization","provider":"g","authorizeUrl":"https://10.0.0.1/x"}]}),
        json!({"type":"interrupt","interrupts":[{"kind":"approval","prompt":"a"},{"kind":"approval","prompt":"b"}]}),
    ] {
        let spec = AgentSpec::scripted(move |_| {
            vec![Step::Frame(
                json!({"type":"RUN_FINISHED","outcome":bad.clone()}),
            )]
        });
        let report = turn(spec, fast_settings()).await;
        only(&report, Code::InterruptRejected);
        assert_eq!(
            report.outcome,
            TurnOutcome::Failed {
                code: Code::InterruptRejected
            }
        );
    }
}

#[tokio::test]
async fn a_last_message_of_only_whitespace_is_an_empty_bubble() {
    let spec = AgentSpec::scripted(|_| {
        let mut steps = answer("Here you go.");
        steps.extend([
            Step::Frame(json!({"type":"TEXT_MESSAGE_START","messageId":"a2","role":"assistant"})),
            Step::Frame(json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a2","delta":" \n\t "})),
            Step::Frame(json!({"type":"TEXT_MESSAGE_END","messageId":"a2"})),
            finished(),
        ]);
        steps
    });
    let report = turn(spec, fast_settings()).await;
    only(&report, Code::EmptyBubble);
}

#[tokio::test]
async fn an_answer_of_only_whitespace_is_an_empty_bubble() {
    let report = turn(
        AgentSpec::scripted(|_| correct_turn("  \n ")),
        fast_settings(),
    )
    .await;
    only(&report, Code::EmptyBubble);
}

#[tokio::test]
async fn no_final_frame() {
    let report = turn(AgentSpec::scripted(|_| answer("cut")), fast_settings()).await;
    only(&report, Code::NoFinalFrame);
    assert_eq!(report.outcome, TurnOutcome::ClosedWithoutFinal);
}

#[tokio::test]
async fn frames_left_open() {
    let spec = AgentSpec::scripted(|_| {
        vec![
            Step::Frame(json!({"type":"STEP_STARTED","stepName":"s"})),
            Step::Frame(json!({"type":"TEXT_MESSAGE_START","messageId":"a1"})),
            Step::Frame(json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"x"})),
            finished(),
        ]
    });
    only(&turn(spec, fast_settings()).await, Code::FramesLeftOpen);
}

#[tokio::test]
async fn empty_bubble() {
    let spec = AgentSpec::scripted(|_| {
        vec![
            Step::Frame(json!({"type":"TEXT_MESSAGE_START","messageId":"a1"})),
            Step::Frame(json!({"type":"TEXT_MESSAGE_END","messageId":"a1"})),
            finished(),
        ]
    });
    only(&turn(spec, fast_settings()).await, Code::EmptyBubble);
}

#[tokio::test]
async fn frame_after_final() {
    let spec = AgentSpec::scripted(|_| {
        let mut s = correct_turn("x");
        s.push(Step::Frame(json!({"type":"CUSTOM","name":"late"})));
        s
    });
    only(&turn(spec, fast_settings()).await, Code::FrameAfterFinal);
}

#[tokio::test]
async fn duplicate_file_channel() {
    let url = "https://files.example.com/report.pdf";
    let spec = with_before(vec![
        Step::Frame(
            json!({"type":"STATE_SNAPSHOT","snapshot":{"artifacts":[{"url":url,"name":"report.pdf"}]}}),
        ),
        Step::Frame(json!({"type":"CUSTOM","name":"file","value":{"url":url,"name":"report.pdf"}})),
    ]);
    only(
        &turn(spec, fast_settings()).await,
        Code::DuplicateFileChannel,
    );
}

#[tokio::test]
async fn missing_stream_headers() {
    let report = turn(
        AgentSpec {
            stream_headers: false,
            ..AgentSpec::correct()
        },
        fast_settings(),
    )
    .await;
    only(&report, Code::MissingStreamHeaders);
}

#[tokio::test]
async fn heartbeat_gap() {
    let mut settings = fast_settings();
    settings.deadlines.heartbeat = Duration::from_millis(200);
    let spec = AgentSpec::scripted(|_| {
        let mut s = answer("x");
        s.push(Step::Sleep(400));
        s.push(finished());
        s
    });
    let report = turn(spec, settings).await;
    only(&report, Code::HeartbeatGap);
    assert!(
        report.longest_silence_ms >= 380,
        "{}",
        report.longest_silence_ms
    );
}

#[tokio::test]
async fn run_started_sent() {
    let spec = with_before(vec![Step::Frame(json!({"type":"RUN_STARTED"}))]);
    only(&turn(spec, fast_settings()).await, Code::RunStartedSent);
}

#[tokio::test]
async fn reasoning_end_sent() {
    let spec = with_before(vec![Step::Frame(
        json!({"type":"REASONING_END","messageId":"r"}),
    )]);
    only(&turn(spec, fast_settings()).await, Code::ReasoningEndSent);
}

#[tokio::test]
async fn envelope_mismatch() {
    let spec = with_before(vec![Step::Frame(
        json!({"type":"CUSTOM","name":"note","run_id":"someone-elses-run"}),
    )]);
    only(&turn(spec, fast_settings()).await, Code::EnvelopeMismatch);
    let spec = with_before(vec![Step::Frame(
        json!({"type":"CUSTOM","name":"note","threadId":"42"}),
    )]);
    only(&turn(spec, fast_settings()).await, Code::EnvelopeMismatch);
}

#[tokio::test]
async fn unknown_frame_type() {
    let spec = with_before(vec![Step::Frame(
        json!({"type":"TEXT_MESSAGE_CHUNK","messageId":"a0","delta":"x"}),
    )]);
    only(&turn(spec, fast_settings()).await, Code::UnknownFrameType);
}

#[tokio::test]
async fn malformed_frame() {
    for bad in [
        "data: not json\n\n",
        "data: {\"no\":\"type\"}\n\n",
        "data: {\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":\"t\",\"delta\":{\"a\":1}}\n\n",
    ] {
        let spec = with_before(vec![Step::Raw(bad.into())]);
        only(&turn(spec, fast_settings()).await, Code::MalformedFrame);
    }
}

#[tokio::test]
async fn state_key_dropped() {
    let spec = with_before(vec![Step::Frame(
        json!({"type":"STATE_SNAPSHOT","snapshot":{"todos":[],"cart":{}}}),
    )]);
    only(&turn(spec, fast_settings()).await, Code::StateKeyDropped);
}

#[tokio::test]
async fn ordering_text_across_a_tool_call() {
    let spec = AgentSpec::scripted(|_| {
        vec![
            Step::Frame(json!({"type":"TEXT_MESSAGE_START","messageId":"a1"})),
            Step::Frame(
                json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"Checking, "}),
            ),
            Step::Frame(
                json!({"type":"TOOL_CALL_START","toolCallId":"t1","toolCallName":"lookup"}),
            ),
            Step::Frame(json!({"type":"TOOL_CALL_END","toolCallId":"t1"})),
            Step::Frame(
                json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"found it."}),
            ),
            Step::Frame(json!({"type":"TEXT_MESSAGE_END","messageId":"a1"})),
            finished(),
        ]
    });
    only(&turn(spec, fast_settings()).await, Code::Ordering);
}

#[tokio::test]
async fn ordering_tool_call_after_the_answer() {
    let spec = AgentSpec::scripted(|_| {
        let mut s = answer("The price is 3.");
        s.push(Step::Frame(
            json!({"type":"TOOL_CALL_START","toolCallId":"t1","toolCallName":"price"}),
        ));
        s.push(Step::Frame(
            json!({"type":"TOOL_CALL_END","toolCallId":"t1"}),
        ));
        s.push(finished());
        s
    });
    only(&turn(spec, fast_settings()).await, Code::Ordering);
}

#[test]
fn stream_end_is_exported() {
    // The rule engine's end-of-stream kinds are part of the public API.
    assert_ne!(StreamEnd::Closed, StreamEnd::Failed);
}

#[tokio::test]
async fn missing_frame_separator() {
    let spec = AgentSpec::scripted(|_| {
        vec![
            Step::Raw("data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"a1\"}\n".into()),
            Step::Raw("data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"a1\",\"delta\":\"x\"}\n\n".into()),
            Step::Frame(json!({"type":"TEXT_MESSAGE_END","messageId":"a1"})),
            finished(),
        ]
    });
    let report = turn(spec, fast_settings()).await;
    only(&report, Code::MissingFrameSeparator);
    assert_eq!(report.answer, "x");
}

#[tokio::test]
async fn a_final_frame_without_line_end_is_dropped_and_said_so() {
    let spec = AgentSpec::scripted(|_| {
        let mut s = answer("x");
        s.push(Step::Raw(
            "data: {\"type\":\"RUN_FINISHED\",\"outcome\":{\"type\":\"success\"}}".into(),
        ));
        s
    });
    let report = turn(spec, fast_settings()).await;
    only(&report, Code::NoFinalFrame);
    assert!(
        report.findings[0].message.contains("ended inside a line"),
        "{:?}",
        report.findings
    );
}

/// A busy turn as runway writes it: the first frame at once (with `padding` bytes of comment
/// in the same write), the first heartbeat 400 ms later, more heartbeats, then the answer.
fn busy_turn(padding: usize) -> AgentSpec {
    AgentSpec::scripted(move |_| {
        let mut first = format!(
            "data: {}\n\n",
            json!({"type":"STEP_STARTED","stepName":"turn"})
        );
        if padding > 0 {
            first.push_str(&format!(":{}\n\n", " ".repeat(padding)));
        }
        let mut steps = vec![
            Step::Raw(first),
            Step::Sleep(400),
            Step::Comment,
            Step::Sleep(150),
            Step::Comment,
            Step::Sleep(150),
            Step::Frame(json!({"type":"STEP_FINISHED","stepName":"turn"})),
        ];
        steps.extend(correct_turn("done"));
        steps
    })
}

/// Through a real proxy that holds small chunks until 4 KiB or the next write, a busy turn's
/// first frame arrives only with the first heartbeat: FIRST_FRAME_HELD, naming the setting,
/// and the arrivals that show it.
#[tokio::test]
async fn a_path_that_holds_small_chunks_is_caught_holding_the_first_frame() {
    let agent = Agent::start(busy_turn(0)).await;
    let proxy = common::holding_proxy::HoldingProxy::start(agent.addr, 4096).await;
    let r = turn_on(&proxy.base_url(), fast_settings(), "hi").await;
    only(&r, Code::FirstFrameHeld);
    let message = &r.findings[0].message;
    assert!(
        message.contains("RUNWAY_FIRST_FLUSH_BYTES") && message.contains("RUNWAY_HEARTBEAT_SECS"),
        "{message}"
    );
    assert!(r.finished(), "{:?}", r.outcome);
    assert!(r.ttfb_ms.is_some_and(|t| t >= 350), "{:?}", r.ttfb_ms);
    assert!(
        !r.arrivals.is_empty() && r.arrivals[0].at_ms >= 350,
        "{:?}",
        r.arrivals
    );
}

/// The same agent straight, through a proxy that forwards at once, or with its first write
/// padded past the proxy's threshold: the first frame leaves at once and is not reported held
/// (through the holding proxy, the small heartbeats are still held: HEARTBEAT_GAP's business).
#[tokio::test]
async fn a_first_frame_that_leaves_at_once_is_not_reported_held() {
    let plain = Agent::start(busy_turn(0)).await;
    let r = turn_on(&plain.base_url(), fast_settings(), "hi").await;
    assert!(codes(&r).is_empty(), "direct: {:#?}", r.findings);
    assert!(r.ttfb_ms.is_some_and(|t| t < 250), "{:?}", r.ttfb_ms);

    let forwarding = common::holding_proxy::HoldingProxy::start(plain.addr, 0).await;
    let r = turn_on(&forwarding.base_url(), fast_settings(), "hi").await;
    assert!(codes(&r).is_empty(), "forwarding proxy: {:#?}", r.findings);

    let padded = Agent::start(busy_turn(4096)).await;
    let holding = common::holding_proxy::HoldingProxy::start(padded.addr, 4096).await;
    let r = turn_on(&holding.base_url(), fast_settings(), "hi").await;
    assert!(
        !codes(&r).contains(&Code::FirstFrameHeld),
        "padded past the threshold: {:#?}",
        r.findings
    );
    assert!(r.ttfb_ms.is_some_and(|t| t < 250), "{:?}", r.ttfb_ms);
}
