//! `Turn::token` (issue 27): the user's token when they are connected, `None` when they are
//! not, and, unlike `Turn::connection`, no card: a user who is not connected costs one vault
//! read and writes nothing (the model agent asks it on every turn that lists an MCP server
//! with `auth`).
// Served only in a build with runway-core's `connect` feature (on by default).
#![cfg(feature = "connect")]

use runway_core::adapter::{Config, TurnStore};
use runway_core::connect::provider::{Endpoints, Provider, ProviderEndpoints, Providers};
use runway_core::connect::vault::{Tokens, VaultKey};
use runway_core::store::ConnectionKey;
use runway_core::testing::{ScriptedHttp, StoreCall, TestRunway, TestTurn, VirtualRuntime};
use runway_core::{Agent, AgentResult, Connection, Outcome, Output, Turn};

/// Says what `turn.token("acme")` found, then, for input "card", what `turn.connection` did.
struct Peek;

impl Agent for Peek {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        match turn.token("acme").await {
            Ok(Some(token)) => out.text(format!("token {}", token.expose())),
            Ok(None) => out.text("none"),
            Err(e) => out.text(format!("error {e}")),
        }
        if turn.input == "card" {
            match turn.connection("acme").await {
                Ok(Connection::Authorize(card)) => return Ok(card.into()),
                other => out.text(format!(" then {}", other.is_ok())),
            }
        }
        Ok(Outcome::Done)
    }
}

const VAULT_KEY: &str = "q7Zk0m5l2YpQ3rJ8wX1vN6bT4cH9dF0aS2eG7uK5iLo=";
/// Now on the test's clock: 2026-12-03.
const NOW: u64 = 1_796_256_000_000;

fn vault() -> VaultKey {
    VaultKey::from_base64(VAULT_KEY).unwrap()
}

fn providers() -> Providers {
    let mut p = Providers::new();
    p.add(Provider {
        key: "acme".into(),
        name: "Acme CRM".into(),
        endpoints: Endpoints::Given(ProviderEndpoints {
            authorize_url: "https://acme.example/auth".parse().unwrap(),
            token_url: "https://acme.example/token".parse().unwrap(),
        }),
        client_id: "runway".into(),
        client_secret: None,
        scopes: vec!["openid".into()],
        revocation_url: None,
    });
    p
}

fn key(user: &str) -> ConnectionKey {
    ConnectionKey {
        workspace: "workspace-1".into(),
        user: user.into(),
        provider: "acme".into(),
    }
}

#[tokio::test]
async fn a_token_when_connected_and_no_card_written_when_not() {
    let rt = VirtualRuntime::starting_at(NOW);
    {
        let config = Config {
            vault_key: Some(vault()),
            ..Config::unauthenticated()
        };
        let app = TestRunway::with(Peek, rt.clone(), config)
            .with_http_client(ScriptedHttp::new().on_clock(&rt))
            .with_providers(providers())
            .unwrap();
        let tokens = Tokens {
            access_token: "at-alice".into(),
            refresh_token: None,
            expires_at_ms: Some(NOW + 3_600_000),
            scope: None,
            connected_at_ms: Some(NOW),
        };
        let sealed = vault().seal(&key("alice"), &tokens, [3; 12]);
        app.store()
            .put_connection(&key("alice"), &sealed)
            .await
            .unwrap();

        let frames = app.send(TestTurn::new("hi").user("alice")).await;
        assert_eq!(
            frames.text(),
            "token at-alice",
            "{:?} {:?}",
            frames.status(),
            frames.all()
        );

        let before = app.store().calls(StoreCall::Vault);
        let frames = app.send(TestTurn::new("hi").user("bob")).await;
        assert_eq!(frames.text(), "none");
        assert_eq!(
            app.store().calls(StoreCall::Vault) - before,
            1,
            "one read, no connect state written"
        );
        // `connection` writes the card's state: one read and one write more.
        let before = app.store().calls(StoreCall::Vault);
        let frames = app.send(TestTurn::new("card").user("bob")).await;
        assert_eq!(
            app.store().calls(StoreCall::Vault) - before,
            3,
            "{frames:?}"
        );

        let frames = app.send(TestTurn::new("hi")).await;
        assert_eq!(
            frames.text(),
            "error connecting Acme CRM needs a signed-in user"
        );
    }
}
