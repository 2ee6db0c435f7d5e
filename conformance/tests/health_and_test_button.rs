//! `/health` fold and the Test button against live loopback agents.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::routing::post;
use common::{Agent, AgentSpec, fast_settings};
use futures::StreamExt as _;
use runway_conformance::health::{Availability, HealthVerdict};
use runway_conformance::turn::TurnOutcome;
use runway_conformance::{Caller, Code, HeaderSet, Settings, Transport, press_test, probe_health};
use serde_json::{Value, json};
use url::Url;

fn transport(base: &str, settings: Settings) -> Transport {
    Transport::new(Url::parse(base).unwrap(), settings).unwrap()
}

async fn health_of(spec: AgentSpec) -> HealthVerdict {
    let agent = Agent::start(spec).await;
    probe_health(
        &transport(&agent.base_url(), fast_settings()),
        &HeaderSet::default(),
    )
    .await
    .verdict
}

fn codes(v: &HealthVerdict) -> BTreeSet<Code> {
    v.findings().iter().map(|f| f.code).collect()
}

#[tokio::test]
async fn ok_health_is_available_without_findings() {
    let v = health_of(AgentSpec::correct()).await;
    assert!(
        matches!(
            v,
            HealthVerdict::Available {
                status: Availability::Ok,
                ..
            }
        ),
        "{v:?}"
    );
    assert!(codes(&v).is_empty());
}

#[tokio::test]
async fn degraded_is_available_with_a_warning() {
    let v = health_of(AgentSpec {
        health_body: json!({"status":"degraded","protocolVersions":["1"]}).to_string(),
        ..AgentSpec::correct()
    })
    .await;
    assert!(v.is_available());
    assert_eq!(codes(&v), BTreeSet::from([Code::HealthDegraded]));
}

#[tokio::test]
async fn endpoint_unavailable_cases() {
    let cases = [
        AgentSpec {
            health_body: json!({"status":"down","protocolVersions":["1"]}).to_string(),
            ..AgentSpec::correct()
        },
        AgentSpec {
            health_body: "OK".into(),
            ..AgentSpec::correct()
        },
        AgentSpec {
            health_status: 403,
            ..AgentSpec::correct()
        },
        AgentSpec {
            health_status: 301,
            ..AgentSpec::correct()
        },
        AgentSpec::correct().with_auth(&[("X-API-Key", "k")]),
    ];
    for spec in cases {
        let v = health_of(spec).await;
        assert!(!v.is_available());
        assert_eq!(
            codes(&v),
            BTreeSet::from([Code::EndpointUnavailable]),
            "{v:?}"
        );
    }
    // Connection refused.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let v = probe_health(
        &transport(&format!("http://{addr}"), fast_settings()),
        &HeaderSet::default(),
    )
    .await
    .verdict;
    assert_eq!(
        codes(&v),
        BTreeSet::from([Code::EndpointUnavailable]),
        "{v:?}"
    );
}

#[tokio::test]
async fn protocol_mismatch_without_version_1() {
    let v = health_of(AgentSpec {
        health_body: json!({"status":"ok","protocolVersions":["2"]}).to_string(),
        ..AgentSpec::correct()
    })
    .await;
    assert!(!v.is_available());
    assert_eq!(codes(&v), BTreeSet::from([Code::ProtocolMismatch]));
}

#[tokio::test]
async fn egress_refused_on_health_in_strict_mode() {
    let agent = Agent::start(AgentSpec::correct()).await;
    let strict = Settings {
        egress_strict: true,
        ..fast_settings()
    };
    let v = probe_health(&transport(&agent.base_url(), strict), &HeaderSet::default())
        .await
        .verdict;
    assert_eq!(codes(&v), BTreeSet::from([Code::EgressRefused]));
    assert_eq!(agent.requests(), 0);
}

/// The Test button sends `Hello` on `validate-<16 hex>` and stops at the
/// first valid frame, even when the agent would go on for long.
#[tokio::test]
async fn the_test_button() {
    let seen: Arc<std::sync::Mutex<Option<Value>>> = Arc::default();
    let seen2 = seen.clone();
    let app = Router::new()
        .route(
            "/health",
            axum::routing::get(|| async {
                axum::Json(json!({"status":"ok","protocolVersions":["1"]}))
            }),
        )
        .route(
            "/runs",
            post(move |body: Bytes| {
                let seen = seen2.clone();
                async move {
                    *seen.lock().unwrap() = serde_json::from_slice(&body).ok();
                    // A first frame, then 30 s of silence: the Test button
                    // must not wait for it.
                    let stream = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from(
                        "data: {\"type\":\"STEP_STARTED\",\"stepName\":\"hello\"}\n\n",
                    ))])
                    .chain(futures::stream::once(async {
                        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                        Ok(Bytes::new())
                    }));
                    axum::response::Response::builder()
                        .header("content-type", "text/event-stream")
                        .header("cache-control", "no-cache")
                        .header("x-accel-buffering", "no")
                        .body(axum::body::Body::from_stream(stream))
                        .unwrap()
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let started = std::time::Instant::now();
    let report = press_test(
        &transport(&format!("http://{addr}"), fast_settings()),
        &HeaderSet::default(),
        &Caller::fresh(),
    )
    .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert!(report.passed(), "{report:#?}");
    assert_eq!(report.turn.outcome, TurnOutcome::StoppedAtFirstValidFrame);
    assert!(
        report.turn.findings.is_empty(),
        "{:#?}",
        report.turn.findings
    );
    let body = seen.lock().unwrap().clone().unwrap();
    assert_eq!(body["input"], "Hello");
    assert_eq!(body["protocolVersion"], "1");
    let thread = body["threadId"].as_str().unwrap();
    let hex = thread.strip_prefix("validate-").unwrap();
    assert_eq!(hex.len(), 16);
    assert!(hex.chars().all(|c| c.is_ascii_hexdigit()));
    server.abort();
}
