//! A build without runway-core's default features (issue 26: a Worker serving Console only
//! leaves Lowkey, AG-UI and connected accounts out of its upload): each left-out route answers
//! 404 with a JSON error naming the feature, a configured OAuth provider is refused at
//! start-up, and Console's `POST /runs` works as before.
//!
//! Runs only in such a build:
//! `cargo test -p runway-core --no-default-features --features testing --test parts_left_out`
//! (in the default build every route is served: `lowkey_turns.rs`, `agui_runs.rs`,
//! `connections_route.rs`).
#![cfg(all(
    feature = "testing",
    not(feature = "lowkey"),
    not(feature = "agui"),
    not(feature = "connect")
))]

use bytes::Bytes;
use runway_core::adapter::{Access, AuthHeaders, Config};
use runway_core::connect::ConnectionsError;
use runway_core::connect::provider::{Endpoints, Provider, ProviderEndpoints, Providers};
use runway_core::connect::vault::VaultKey;
use runway_core::testing::{ScriptedHttp, TestRunway, TestTurn, VirtualRuntime};
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
use serde_json::Value;

struct Quiet;

impl Agent for Quiet {
    async fn run(&self, _turn: &mut Turn, out: &Output) -> AgentResult {
        out.text("ok");
        Ok(Outcome::Done)
    }
}

const AUTH: (&str, &str) = ("x-api-key", "k-1");

fn config() -> Config {
    Config {
        access: Access::Headers(AuthHeaders::parse(&format!("{}: {}", AUTH.0, AUTH.1)).unwrap()),
        ..Config::default()
    }
}

fn request(method: &str, path: &str, body: &str) -> http::Request<Bytes> {
    http::Request::builder()
        .method(method)
        .uri(path)
        .header(AUTH.0, AUTH.1)
        .header("content-type", "application/json")
        .body(Bytes::from(body.to_owned()))
        .unwrap()
}

#[tokio::test]
async fn each_left_out_route_answers_404_naming_its_feature() {
    let app = TestRunway::with(Quiet, VirtualRuntime::starting_at(0), config());
    for (method, path, feature) in [
        ("POST", "/lowkey/turn", "`lowkey`"),
        ("POST", "/agui", "`agui`"),
        ("POST", "/agui/w-1", "`agui`"),
        ("GET", "/connections", "`connect`"),
        ("DELETE", "/connections?workspace=w&user=u", "`connect`"),
        ("GET", "/connect/abc", "`connect`"),
        ("GET", "/callback?state=s&code=c", "`connect`"),
    ] {
        let r = app.request(request(method, path, "{}")).await;
        assert_eq!(r.status, 404, "{method} {path}: {}", r.body());
        assert_eq!(r.content_type(), "application/json", "{method} {path}");
        let body: Value = serde_json::from_str(&r.body()).unwrap();
        let error = body["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("built without") && error.contains(feature),
            "{method} {path}: {error}"
        );
    }
    // Console's route is served as in every build.
    let open = TestRunway::new(Quiet);
    let frames = open.send(TestTurn::new("hi")).await;
    assert_eq!(frames.text(), "ok");
}

#[test]
fn a_configured_provider_is_refused_at_start_up() {
    let mut providers = Providers::new();
    providers.add(Provider {
        key: "acme".into(),
        name: "Acme".into(),
        endpoints: Endpoints::Given(ProviderEndpoints {
            authorize_url: "https://acme.example/auth".parse().unwrap(),
            token_url: "https://acme.example/token".parse().unwrap(),
        }),
        client_id: "runway".into(),
        client_secret: None,
        scopes: Vec::new(),
        revocation_url: None,
    });
    let config = Config {
        vault_key: Some(
            VaultKey::from_base64("q7Zk0m5l2YpQ3rJ8wX1vN6bT4cH9dF0aS2eG7uK5iLo=").unwrap(),
        ),
        ..config()
    };
    let rt = VirtualRuntime::starting_at(0);
    let refused = TestRunway::with(Quiet, rt.clone(), config)
        .with_http_client(ScriptedHttp::new().on_clock(&rt))
        .with_providers(providers)
        .map(|_| ())
        .expect_err("a provider in a build without connected accounts");
    assert!(
        matches!(refused, ConnectionsError::NotBuilt(ref key) if key == "acme"),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("`connect` feature"),
        "{refused}"
    );
    // No provider: nothing to refuse.
    assert!(
        TestRunway::with(Quiet, VirtualRuntime::starting_at(0), Config::default())
            .with_providers(Providers::new())
            .is_ok()
    );
}
