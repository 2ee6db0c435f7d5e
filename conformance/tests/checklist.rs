//! The onboarding checklist and `runway check` against loopback agents: the
//! correct agent passes every line; each broken agent trips exactly one
//! code.

mod common;

use std::collections::BTreeSet;
use std::ffi::OsString;

use common::{Agent, AgentSpec, AuthMatch, fast_settings};
use runway_conformance::{
    CheckConfig, CheckReport, Code, HeaderSet, Status, cli_main, cli_main_with_output,
    run_checklist,
};
use serde_json::{Value, json};
use url::Url;

const KEY: (&str, &str) = ("X-API-Key", "key-123");
const TENANT: (&str, &str) = ("X-Tenant", "tenant-9");

fn config(agent: &Agent, with_auth: bool, slow: Option<&str>) -> CheckConfig {
    let mut c = CheckConfig::new(Url::parse(&agent.base_url()).unwrap());
    c.settings = fast_settings();
    if with_auth {
        c.headers = HeaderSet::parse(&[
            format!("{}: {}", KEY.0, KEY.1),
            format!("{}: {}", TENANT.0, TENANT.1),
        ])
        .unwrap();
    }
    c.slow_prompt = slow.map(str::to_owned);
    c
}

async fn check(spec: AgentSpec, with_auth: bool, slow: Option<&str>) -> (CheckReport, Agent) {
    let agent = Agent::start(spec).await;
    let report = run_checklist(&config(&agent, with_auth, slow)).await;
    (report, agent)
}

fn status_of(report: &CheckReport, key: &str) -> Status {
    report.items.iter().find(|i| i.key == key).unwrap().status
}

fn only(report: &CheckReport, code: Code) {
    assert_eq!(
        report.codes(),
        BTreeSet::from([code]),
        "{}",
        report.render_text()
    );
}

#[tokio::test]
async fn the_correct_agent_passes_every_line() {
    let spec = AgentSpec::correct().with_auth(&[KEY, TENANT]);
    let (report, agent) = check(spec, true, Some("/slow 700ms")).await;
    let text = report.render_text();
    assert!(report.codes().is_empty(), "{text}");
    for item in &report.items {
        assert_eq!(item.status, Status::Pass, "{text}");
    }
    assert_eq!(report.exit_code(true), 0);
    assert!(text.contains("[PASS] Both endpoints work"), "{text}");
    // The replay did not run the agent again: Test, context 1 and 2, branch
    // base and branch, runId reuse (a new turn for this agent), slow.
    assert_eq!(agent.agent_runs(), 7, "{text}");
}

#[tokio::test]
async fn without_headers_auth_is_skipped_and_nothing_else_changes() {
    let (report, _agent) = check(AgentSpec::correct(), false, None).await;
    assert!(report.codes().is_empty(), "{}", report.render_text());
    assert_eq!(status_of(&report, "auth"), Status::Skip);
    assert_eq!(status_of(&report, "heartbeat"), Status::Skip);
    assert_eq!(report.exit_code(true), 0);
}

#[tokio::test]
async fn auth_not_enforced_when_only_one_header_is_checked() {
    let spec = AgentSpec {
        auth_first_only: true,
        ..AgentSpec::correct().with_auth(&[KEY, TENANT])
    };
    let (report, _agent) = check(spec, true, None).await;
    only(&report, Code::AuthNotEnforced);
    assert_eq!(status_of(&report, "auth"), Status::Fail);
    assert_eq!(report.exit_code(false), 1);
}

#[tokio::test]
async fn auth_not_enforced_when_a_value_with_extra_characters_is_accepted() {
    let spec = AgentSpec {
        auth_match: AuthMatch::ReceivedStartsWithAgreed,
        ..AgentSpec::correct().with_auth(&[KEY, TENANT])
    };
    let (report, _agent) = check(spec, true, None).await;
    only(&report, Code::AuthNotEnforced);
    assert_eq!(status_of(&report, "auth"), Status::Fail);
    assert!(
        report
            .render_text()
            .contains("followed by extra characters"),
        "{}",
        report.render_text()
    );
    assert_eq!(report.exit_code(false), 1);
}

#[tokio::test]
async fn auth_not_enforced_when_a_value_cut_short_is_accepted() {
    let spec = AgentSpec {
        auth_match: AuthMatch::AgreedStartsWithReceived,
        ..AgentSpec::correct().with_auth(&[KEY, TENANT])
    };
    let (report, _agent) = check(spec, true, None).await;
    only(&report, Code::AuthNotEnforced);
    assert_eq!(status_of(&report, "auth"), Status::Fail);
    assert!(
        report.render_text().contains("missing its last character"),
        "{}",
        report.render_text()
    );
    assert_eq!(report.exit_code(false), 1);
}

#[tokio::test]
async fn auth_not_401_when_refused_with_403() {
    let spec = AgentSpec {
        auth_status: 403,
        ..AgentSpec::correct().with_auth(&[KEY, TENANT])
    };
    let (report, _agent) = check(spec, true, None).await;
    only(&report, Code::AuthNot401);
    assert_eq!(status_of(&report, "auth"), Status::Warn);
    assert_eq!(report.exit_code(false), 0);
    assert_eq!(report.exit_code(true), 1);
}

#[tokio::test]
async fn context_lost() {
    let (report, _agent) = check(
        AgentSpec {
            context: false,
            ..AgentSpec::correct()
        },
        false,
        None,
    )
    .await;
    only(&report, Code::ContextLost);
    assert_eq!(status_of(&report, "context"), Status::Fail);
}

#[tokio::test]
async fn not_idempotent() {
    let (report, agent) = check(
        AgentSpec {
            idempotent: false,
            ..AgentSpec::correct()
        },
        false,
        None,
    )
    .await;
    only(&report, Code::NotIdempotent);
    assert_eq!(status_of(&report, "idempotency"), Status::Fail);
    // Test, context 1, 2, the replay ran again, branch base, branch, reuse.
    assert_eq!(agent.agent_runs(), 7);
}

#[tokio::test]
async fn branch_leak() {
    let (report, _agent) = check(
        AgentSpec {
            branch_leak: true,
            ..AgentSpec::correct()
        },
        false,
        None,
    )
    .await;
    only(&report, Code::BranchLeak);
    assert_eq!(status_of(&report, "branch"), Status::Fail);
}

#[tokio::test]
async fn run_id_reuse_replayed() {
    let (report, _agent) = check(
        AgentSpec {
            replay_on_run_id_only: true,
            ..AgentSpec::correct()
        },
        false,
        None,
    )
    .await;
    only(&report, Code::RunIdReuseReplayed);
    assert_eq!(status_of(&report, "run_id_reuse"), Status::Warn);
}

#[tokio::test]
async fn heartbeat_gap_fails_the_heartbeat_line() {
    let (report, _agent) = check(
        AgentSpec {
            heartbeat_ms: 0,
            ..AgentSpec::correct()
        },
        false,
        Some("/slow 800ms"),
    )
    .await;
    only(&report, Code::HeartbeatGap);
    assert_eq!(status_of(&report, "heartbeat"), Status::Fail);
}

#[tokio::test]
async fn health_down_fails_the_first_line_only() {
    let spec = AgentSpec {
        health_body: json!({"status":"down","protocolVersions":["1"]}).to_string(),
        ..AgentSpec::correct()
    };
    let (report, _agent) = check(spec, false, None).await;
    only(&report, Code::EndpointUnavailable);
    assert_eq!(status_of(&report, "endpoints"), Status::Fail);
}

#[tokio::test]
async fn an_unreachable_agent_fails_fast_and_skips_the_rest() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut c = CheckConfig::new(Url::parse(&format!("http://{addr}")).unwrap());
    c.settings = fast_settings();
    let report = run_checklist(&c).await;
    assert_eq!(
        report.codes(),
        BTreeSet::from([Code::EndpointUnavailable, Code::UpstreamUnavailable]),
        "{}",
        report.render_text()
    );
    assert_eq!(status_of(&report, "endpoints"), Status::Fail);
    assert_eq!(status_of(&report, "context"), Status::Skip);
}

// ---- the command line ----

fn args(base: &str, extra: &[&str]) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec![base.into()];
    for a in [
        "--connect-timeout",
        "800ms",
        "--first-frame-timeout",
        "800ms",
        "--idle-timeout",
        "1200ms",
        "--turn-timeout",
        "5s",
        "--heartbeat-interval",
        "500ms",
        "--after-final",
        "150ms",
    ]
    .iter()
    .chain(extra)
    {
        v.push(a.into());
    }
    v
}

async fn cli(args: Vec<OsString>) -> (i32, String) {
    let mut out = Vec::new();
    let code = cli_main_with_output(args, &mut out).await;
    (code, String::from_utf8(out).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_passes_a_correct_agent_with_headers_and_slow_prompt() {
    let agent = Agent::start(AgentSpec::correct().with_auth(&[KEY, TENANT])).await;
    let (code, out) = cli(args(
        &agent.base_url(),
        &[
            "--header",
            "X-API-Key: key-123",
            "-H",
            "X-Tenant: tenant-9",
            "--slow-prompt",
            "/slow 500ms",
            "--strict",
        ],
    ))
    .await;
    assert_eq!(code, 0, "{out}");
    for title in [
        "Both endpoints work",
        "Authentication is complete",
        "First frame within 800 ms",
        "Context stored by threadId",
        "Every turn ends properly",
        "Heartbeat during a slow turn",
        "Idempotency on runId",
        "Branch isolation",
    ] {
        assert!(
            out.contains(&format!("[PASS] {title}")),
            "{title} in\n{out}"
        );
    }
    assert!(
        out.contains("10 passed, 0 failed, 0 warned, 0 skipped"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_json_report() {
    let agent = Agent::start(AgentSpec {
        context: false,
        ..AgentSpec::correct()
    })
    .await;
    let (code, out) = cli(args(&agent.base_url(), &["--json"])).await;
    assert_eq!(code, 1, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["exit_code"], 1);
    assert_eq!(v["items"].as_array().unwrap().len(), 10);
    let context = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["key"] == "context")
        .unwrap();
    assert_eq!(context["status"], "fail");
    assert_eq!(context["codes"], json!(["CONTEXT_LOST"]));
    let f = &context["findings"][0];
    for field in ["run_id", "thread_id", "at", "code", "message", "severity"] {
        assert!(f.get(field).is_some(), "{field} in {f}");
    }
    let first_frame = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["key"] == "first_frame")
        .unwrap();
    assert!(
        first_frame["figure"]
            .as_str()
            .unwrap()
            .starts_with("TTFB max ")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_strict_fails_on_warnings() {
    let agent = Agent::start(AgentSpec {
        stream_headers: false,
        ..AgentSpec::correct()
    })
    .await;
    let (code, out) = cli(args(&agent.base_url(), &[])).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("MISSING_STREAM_HEADERS"), "{out}");
    assert!(out.contains("[WARN] Frames follow the contract"), "{out}");
    let (code, _) = cli(args(&agent.base_url(), &["--strict"])).await;
    assert_eq!(code, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_egress_strict_refuses_a_local_agent() {
    let agent = Agent::start(AgentSpec::correct()).await;
    let (code, out) = cli(args(&agent.base_url(), &["--egress-strict"])).await;
    assert_eq!(code, 1);
    assert!(out.contains("EGRESS_REFUSED"), "{out}");
    assert_eq!(agent.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_context_prompts_are_configurable() {
    let agent = Agent::start(AgentSpec::correct()).await;
    let (code, out) = cli(args(
        &agent.base_url(),
        &[
            "--context-prompts",
            "My code word is {token}, keep it.",
            "And the code word was?",
        ],
    ))
    .await;
    assert_eq!(code, 0, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_main_usage_errors_exit_2() {
    assert_eq!(cli_main(vec![]).await, 2);
    assert_eq!(cli_main(vec!["not a url".into()]).await, 2);
    assert_eq!(
        cli_main(vec![
            "http://127.0.0.1:9".into(),
            "--first-frame-timeout".into(),
            "soon".into()
        ])
        .await,
        2
    );
}

/// `cli_main` can be spawned on a multi-thread runtime.
#[test]
fn cli_main_is_send() {
    fn assert_send<T: Send + 'static>(_: &T) {}
    let fut = cli_main(vec!["--help".into()]);
    assert_send(&fut);
}

/// `runway check` against an agent behind a real proxy that holds small chunks until 4 KiB or
/// the next write: the slow turn's first frame arrives only with its first heartbeat, and the
/// first-frame line warns naming the setting to change. Padding the first write past the
/// threshold (what `RUNWAY_FIRST_FLUSH_BYTES` does) makes the same path pass.
#[tokio::test]
async fn runway_check_flags_a_path_that_holds_the_first_frame() {
    let run = |padding: usize| async move {
        let spec = AgentSpec {
            heartbeat_ms: 200,
            first_write_padding: padding,
            ..AgentSpec::correct()
        };
        let agent = Agent::start(spec).await;
        let proxy = common::holding_proxy::HoldingProxy::start(agent.addr, 4096).await;
        let mut c = CheckConfig::new(Url::parse(&proxy.base_url()).unwrap());
        c.settings = fast_settings();
        c.slow_prompt = Some("/slow 700ms".into());
        run_checklist(&c).await
    };
    let held = run(0).await;
    let text = held.render_text();
    only(&held, Code::FirstFrameHeld);
    assert_eq!(status_of(&held, "first_frame"), Status::Warn, "{text}");
    assert!(text.contains("RUNWAY_FIRST_FLUSH_BYTES"), "{text}");
    assert_eq!(held.exit_code(false), 0, "{text}");
    assert_eq!(held.exit_code(true), 1, "{text}");

    let padded = run(4096).await;
    let text = padded.render_text();
    assert!(padded.codes().is_empty(), "{text}");
    assert_eq!(status_of(&padded, "first_frame"), Status::Pass, "{text}");
    assert!(text.contains("never held"), "{text}");
}
