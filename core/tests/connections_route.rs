//! `GET` and `DELETE /connections` (issue 27, the operators' side of connected accounts):
//! behind the header set like `/usage`, listing the vault's entries with their metadata and
//! never a token, and revoking one user's connections: each token handed back to its
//! provider's revocation endpoint (RFC 7009, scripted here), then deleted, whatever the
//! provider answered.
// Served only in a build with runway-core's `connect` feature (on by default).
#![cfg(feature = "connect")]

use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use runway_core::adapter::{Access, AuthHeaders, Config, TurnStore};
use runway_core::connect::provider::{Endpoints, Provider, ProviderEndpoints, Providers};
use runway_core::connect::vault::{Tokens, VaultKey};
use runway_core::store::ConnectionKey;
use runway_core::testing::{ScriptedHttp, ScriptedResponse, TestRunway, VirtualRuntime};
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
use serde_json::{Value, json};

struct Quiet;

impl Agent for Quiet {
    async fn run(&self, _turn: &mut Turn, out: &Output) -> AgentResult {
        out.text("ok");
        Ok(Outcome::Done)
    }
}

const VAULT_KEY: &str = "q7Zk0m5l2YpQ3rJ8wX1vN6bT4cH9dF0aS2eG7uK5iLo=";
const AUTH: (&str, &str) = ("x-api-key", "k-1");
const ACME_REVOKE: &str = "https://acme.example/oauth/revoke";
const INITECH_REVOKE: &str = "http://127.0.0.1:9/revoke";
/// Now on the test's clock: 2026-12-03.
const NOW: u64 = 1_796_256_000_000;

fn vault() -> VaultKey {
    VaultKey::from_base64(VAULT_KEY).unwrap()
}

fn provider(key: &str, name: &str, secret: Option<&str>, revoke: Option<&str>) -> Provider {
    Provider {
        key: key.into(),
        name: name.into(),
        endpoints: Endpoints::Given(ProviderEndpoints {
            authorize_url: format!("https://{key}.example/auth").parse().unwrap(),
            token_url: format!("https://{key}.example/token").parse().unwrap(),
        }),
        client_id: "runway".into(),
        client_secret: secret.map(str::to_owned),
        scopes: vec!["openid".into()],
        revocation_url: revoke.map(|u| u.parse().unwrap()),
    }
}

fn providers() -> Providers {
    let mut p = Providers::new();
    p.add(provider(
        "acme",
        "Acme CRM",
        Some("s3cret"),
        Some(ACME_REVOKE),
    ));
    p.add(provider("globex", "Globex", Some("g"), None));
    p.add(provider("initech", "Initech", None, Some(INITECH_REVOKE)));
    p
}

fn key(w: &str, u: &str, p: &str) -> ConnectionKey {
    ConnectionKey {
        workspace: w.into(),
        user: u.into(),
        provider: p.into(),
    }
}

/// The tokens of `key`, named after it: `at-w-u-p`, `rt-w-u-p`.
fn tokens(k: &ConnectionKey, refresh: bool, expires_at_ms: u64) -> Tokens {
    let name = format!("{}-{}-{}", k.workspace, k.user, k.provider);
    Tokens {
        access_token: format!("at-{name}"),
        refresh_token: refresh.then(|| format!("rt-{name}")),
        expires_at_ms: Some(expires_at_ms),
        scope: Some("openid orders:read".into()),
        connected_at_ms: Some(NOW - 86_400_000),
    }
}

type App = TestRunway<Quiet>;

fn app(http: &ScriptedHttp) -> App {
    app_with(http, providers())
}

fn app_with(http: &ScriptedHttp, providers: Providers) -> App {
    let rt = VirtualRuntime::starting_at(NOW);
    let config = Config {
        access: Access::Headers(AuthHeaders::parse(&format!("{}: {}", AUTH.0, AUTH.1)).unwrap()),
        vault_key: Some(vault()),
        ..Config::default()
    };
    TestRunway::with(Quiet, rt.clone(), config)
        .with_http_client(http.clone().on_clock(&rt))
        .with_providers(providers)
        .unwrap()
}

async fn seal(app: &App, k: &ConnectionKey, t: &Tokens) {
    let sealed = vault().seal(k, t, [3; 12]);
    app.store().put_connection(k, &sealed).await.unwrap();
}

/// The entries every test starts with: user u1 in w1 at acme (refreshable), globex (expired,
/// no refresh token) and initech; u2 in w1 at acme; u1 in w2 at acme; and u3's entry in w1,
/// which does not open.
async fn seeded(http: &ScriptedHttp) -> App {
    let app = app(http);
    let day = 86_400_000;
    seal(
        &app,
        &key("w1", "u1", "acme"),
        &tokens(&key("w1", "u1", "acme"), true, NOW + day),
    )
    .await;
    seal(
        &app,
        &key("w1", "u1", "globex"),
        &tokens(&key("w1", "u1", "globex"), false, NOW - day),
    )
    .await;
    seal(
        &app,
        &key("w1", "u1", "initech"),
        &tokens(&key("w1", "u1", "initech"), false, NOW + day),
    )
    .await;
    seal(
        &app,
        &key("w1", "u2", "acme"),
        &tokens(&key("w1", "u2", "acme"), true, NOW + day),
    )
    .await;
    seal(
        &app,
        &key("w2", "u1", "acme"),
        &tokens(&key("w2", "u1", "acme"), true, NOW + day),
    )
    .await;
    app.store()
        .put_connection(&key("w1", "u3", "acme"), "v1.not-a-sealed-entry")
        .await
        .unwrap();
    app
}

fn request(method: &str, path_and_query: &str, authed: bool) -> http::Request<Bytes> {
    let mut b = http::Request::builder().method(method).uri(path_and_query);
    if authed {
        b = b.header(AUTH.0, AUTH.1);
    }
    b.body(Bytes::new()).unwrap()
}

async fn send(app: &App, method: &str, path_and_query: &str) -> (u16, Value) {
    let r = app.request(request(method, path_and_query, true)).await;
    let body = r.body();
    let json = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (r.status, json)
}

async fn stored(app: &App, k: &ConnectionKey) -> bool {
    app.store().get_connection(k).await.unwrap().is_some()
}

/// Who the rows of a listing are, as `w/u/p`.
fn who(rows: &Value) -> Vec<String> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}/{}/{}",
                r["workspaceId"].as_str().unwrap(),
                r["userId"].as_str().unwrap(),
                r["provider"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn the_routes_need_the_header_set_and_fail_closed_without_one() {
    let http = ScriptedHttp::new().post(ACME_REVOKE, ScriptedResponse::new(200));
    let app = seeded(&http).await;
    for (method, path) in [
        ("GET", "/connections"),
        ("DELETE", "/connections?workspace=w1&user=u1"),
    ] {
        let r = app.request(request(method, path, false)).await;
        assert_eq!(r.status, 401, "{method} {path}: {}", r.body());
        assert!(!r.body().contains("at-"), "{}", r.body());
        let wrong = http::Request::builder()
            .method(method)
            .uri(path)
            .header(AUTH.0, "k-2")
            .body(Bytes::new())
            .unwrap();
        assert_eq!(app.request(wrong).await.status, 401, "{method} {path}");
    }
    assert!(
        stored(&app, &key("w1", "u1", "acme")).await,
        "nothing revoked"
    );
    assert!(http.requests().is_empty(), "no provider called");

    // No header set configured at all: refused too (500, naming the missing setting).
    let unconfigured = TestRunway::with(Quiet, VirtualRuntime::starting_at(NOW), Config::default());
    let r = unconfigured
        .request(request("GET", "/connections", true))
        .await;
    assert_eq!(r.status, 500, "{}", r.body());
    let r = unconfigured
        .request(request("DELETE", "/connections?workspace=w1&user=u1", true))
        .await;
    assert_eq!(r.status, 500, "{}", r.body());
}

#[tokio::test]
async fn a_listing_shows_metadata_by_workspace_and_user_and_never_a_token() {
    let app = seeded(&ScriptedHttp::new()).await;
    let (status, all) = send(&app, "GET", "/connections").await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(all["connections"].as_array().unwrap().len(), 6, "{all}");
    assert!(all.get("nextCursor").is_none(), "{all}");
    let text = all.to_string();
    assert!(
        !text.contains("at-") && !text.contains("rt-"),
        "a token in {text}"
    );
    assert!(!text.contains("v1."), "a sealed entry in {text}");

    let (_, w1) = send(&app, "GET", "/connections?workspace=w1").await;
    assert_eq!(
        who(&w1["connections"]),
        [
            "w1/u1/acme",
            "w1/u1/globex",
            "w1/u1/initech",
            "w1/u2/acme",
            "w1/u3/acme"
        ]
    );
    let rows = w1["connections"].as_array().unwrap();
    assert_eq!(
        rows[0],
        json!({"workspaceId": "w1", "userId": "u1", "provider": "acme", "providerName": "Acme CRM",
               "status": "connected", "scopes": ["openid", "orders:read"],
               "expiresAtMs": NOW + 86_400_000, "refreshable": true,
               "connectedAtMs": NOW - 86_400_000})
    );
    assert_eq!(rows[1]["status"], "expired", "{}", rows[1]);
    assert_eq!(rows[1]["refreshable"], false);
    assert_eq!(rows[4]["status"], "unreadable", "{}", rows[4]);
    assert_eq!(rows[4]["scopes"], json!([]));
    assert!(rows[4].get("expiresAtMs").is_none());

    let (_, mine) = send(&app, "GET", "/connections?workspace=w1&user=u1").await;
    assert_eq!(
        who(&mine["connections"]),
        ["w1/u1/acme", "w1/u1/globex", "w1/u1/initech"]
    );
    let (_, everywhere) = send(&app, "GET", "/connections?user=u1").await;
    assert_eq!(
        who(&everywhere["connections"]),
        ["w1/u1/acme", "w1/u1/globex", "w1/u1/initech", "w2/u1/acme"]
    );
    let (_, none) = send(&app, "GET", "/connections?workspace=w9").await;
    assert_eq!(none, json!({"connections": []}));

    for bad in [
        "/connections?from=2026-12-01",
        "/connections?workspace=w1&workspace=w2",
        "/connections?cursor=nothex",
        "/connections?provider=acme",
    ] {
        let (status, body) = send(&app, "GET", bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body["error"].is_string(), "{body}");
    }
    let (status, _) = send(&app, "POST", "/connections").await;
    assert_eq!(status, 405);
}

#[tokio::test]
async fn a_long_listing_comes_in_pages() {
    let app = app(&ScriptedHttp::new());
    let t = tokens(&key("w", "u", "p"), true, NOW);
    for i in 0..501 {
        let k = key("w", &format!("user-{i:03}"), "acme");
        seal(&app, &k, &t).await;
    }
    seal(&app, &key("other", "user-000", "acme"), &t).await;
    let (status, first) = send(&app, "GET", "/connections?workspace=w").await;
    assert_eq!(status, 200);
    assert_eq!(first["connections"].as_array().unwrap().len(), 500);
    let cursor = first["nextCursor"].as_str().unwrap().to_owned();
    let (_, second) = send(
        &app,
        "GET",
        &format!("/connections?workspace=w&cursor={cursor}"),
    )
    .await;
    assert_eq!(who(&second["connections"]), ["w/user-500/acme"]);
    assert!(second.get("nextCursor").is_none(), "{second}");
    let (status, body) = send(
        &app,
        "GET",
        &format!("/connections?workspace=other&cursor={cursor}"),
    )
    .await;
    assert_eq!(status, 400, "a cursor of another workspace: {body}");
}

#[tokio::test]
async fn revoking_revokes_at_the_provider_and_deletes_only_the_named_users_connections() {
    let http = ScriptedHttp::new()
        .post(ACME_REVOKE, ScriptedResponse::new(200))
        .post(INITECH_REVOKE, ScriptedResponse::new(200));
    let app = seeded(&http).await;
    let (status, report) = send(&app, "DELETE", "/connections?workspace=w1&user=u1").await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        report,
        json!({"revoked": [
            {"workspaceId": "w1", "userId": "u1", "provider": "acme", "deleted": true,
             "revocation": {"outcome": "revoked", "token": "refresh_token"}},
            {"workspaceId": "w1", "userId": "u1", "provider": "globex", "deleted": true,
             "revocation": {"outcome": "notDeclared"}},
            {"workspaceId": "w1", "userId": "u1", "provider": "initech", "deleted": true,
             "revocation": {"outcome": "revoked", "token": "access_token"}}],
         "more": false})
    );
    for gone in ["acme", "globex", "initech"] {
        assert!(!stored(&app, &key("w1", "u1", gone)).await, "{gone}");
    }
    for kept in [
        key("w1", "u2", "acme"),
        key("w2", "u1", "acme"),
        key("w1", "u3", "acme"),
    ] {
        assert!(stored(&app, &kept).await, "{kept:?}");
    }

    // RFC 7009: the refresh token (with its hint), as runway's confidential client (HTTP
    // Basic); a public client sends its client_id and, without a refresh token, the access
    // token.
    let sent = http.requests();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0].url.as_str(), ACME_REVOKE);
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&sent[0].body)
        .into_owned()
        .collect();
    assert_eq!(
        form,
        [
            ("token".to_owned(), "rt-w1-u1-acme".to_owned()),
            ("token_type_hint".to_owned(), "refresh_token".to_owned())
        ]
    );
    let basic = base64::engine::general_purpose::STANDARD.encode("runway:s3cret");
    assert_eq!(
        sent[0].headers["authorization"].to_str().unwrap(),
        format!("Basic {basic}")
    );
    assert_eq!(sent[1].url.as_str(), INITECH_REVOKE);
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&sent[1].body)
        .into_owned()
        .collect();
    assert_eq!(
        form,
        [
            ("token".to_owned(), "at-w1-u1-initech".to_owned()),
            ("token_type_hint".to_owned(), "access_token".to_owned()),
            ("client_id".to_owned(), "runway".to_owned())
        ]
    );
    assert!(sent[1].headers.get("authorization").is_none());

    // Again: nothing left to revoke, nobody called.
    let (_, again) = send(&app, "DELETE", "/connections?workspace=w1&user=u1").await;
    assert_eq!(again, json!({"revoked": [], "more": false}));
    assert_eq!(http.requests().len(), 2);
    let (_, left) = send(&app, "GET", "/connections").await;
    assert_eq!(
        who(&left["connections"]),
        ["w1/u2/acme", "w1/u3/acme", "w2/u1/acme"]
    );
}

#[tokio::test]
async fn revoking_one_provider_leaves_the_users_others() {
    let http = ScriptedHttp::new().post(ACME_REVOKE, ScriptedResponse::new(200));
    let app = seeded(&http).await;
    let (status, report) = send(
        &app,
        "DELETE",
        "/connections?workspace=w1&user=u1&provider=acme",
    )
    .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["revoked"].as_array().unwrap().len(), 1, "{report}");
    assert!(!stored(&app, &key("w1", "u1", "acme")).await);
    assert!(stored(&app, &key("w1", "u1", "globex")).await);
    assert!(stored(&app, &key("w1", "u2", "acme")).await);
    assert!(stored(&app, &key("w2", "u1", "acme")).await);
}

#[tokio::test]
async fn revoking_needs_a_workspace_and_a_user() {
    let http = ScriptedHttp::new().post(ACME_REVOKE, ScriptedResponse::new(200));
    let app = seeded(&http).await;
    for bad in [
        "/connections",
        "/connections?workspace=w1",
        "/connections?user=u1",
        "/connections?workspace=w1&provider=acme",
        "/connections?workspace=w1&user=u1&cursor=00",
    ] {
        let (status, body) = send(&app, "DELETE", bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let (_, all) = send(&app, "GET", "/connections").await;
    assert_eq!(
        all["connections"].as_array().unwrap().len(),
        6,
        "nothing deleted"
    );
    assert!(http.requests().is_empty());
}

#[tokio::test]
async fn the_entry_is_deleted_whatever_the_provider_answers() {
    // acme refuses; initech never answers (the virtual clock runs past the timeout).
    let http = ScriptedHttp::new()
        .post(
            ACME_REVOKE,
            ScriptedResponse::new(400)
                .header("content-type", "application/json")
                .chunk(r#"{"error": "invalid_client", "error_description": "rt-w1-u1-acme"}"#),
        )
        .post(
            INITECH_REVOKE,
            ScriptedResponse::new(200).delay(Duration::from_secs(600)),
        );
    let app = seeded(&http).await;
    let (status, report) = send(&app, "DELETE", "/connections?workspace=w1&user=u1").await;
    assert_eq!(status, 200, "{report}");
    let rows = report["revoked"].as_array().unwrap();
    assert_eq!(
        rows[0]["revocation"],
        json!({"outcome": "refused", "reason": "invalid_client"})
    );
    assert_eq!(rows[2]["revocation"]["outcome"], "unreachable", "{report}");
    assert!(rows.iter().all(|r| r["deleted"] == true), "{report}");
    assert!(!report.to_string().contains("rt-"), "{report}");
    for p in ["acme", "globex", "initech"] {
        assert!(!stored(&app, &key("w1", "u1", p)).await, "{p}");
    }
    // u3's entry does not open: nothing to send, deleted all the same.
    let (_, report) = send(&app, "DELETE", "/connections?workspace=w1&user=u3").await;
    assert_eq!(
        report["revoked"][0]["revocation"],
        json!({"outcome": "noToken"})
    );
    assert!(!stored(&app, &key("w1", "u3", "acme")).await);
}

/// A provider declared by its `issuer` alone, `w1/u1`'s connection to it sealed.
async fn by_issuer(http: &ScriptedHttp, issuer: &str) -> App {
    let mut p = provider("hooli", "Hooli", Some("h"), None);
    p.endpoints = Endpoints::Issuer(issuer.parse().unwrap());
    let mut providers = Providers::new();
    providers.add(p);
    let app = app_with(http, providers);
    let k = key("w1", "u1", "hooli");
    seal(&app, &k, &tokens(&k, true, NOW + 86_400_000)).await;
    app
}

/// The RFC 8414 metadata of `issuer`, naming `revocation` as its revocation endpoint.
fn metadata(issuer: &str, revocation: Option<&str>) -> ScriptedResponse {
    let mut m = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/auth"),
        "token_endpoint": format!("{issuer}/token"),
    });
    if let Some(r) = revocation {
        m["revocation_endpoint"] = json!(r);
    }
    ScriptedResponse::json(&m)
}

/// Issue 27: a provider declared by its `issuer`, without `revocation_url`, is revoked at the
/// `revocation_endpoint` of its metadata (as runway's client there, like at the token
/// endpoint); metadata without one: nothing to revoke at; one that is not https (http only on
/// loopback), or metadata that cannot be read: reported, and the entry deleted all the same.
#[tokio::test]
async fn a_provider_declared_by_its_issuer_is_revoked_where_its_metadata_says() {
    let issuer = "https://hooli.example";
    let well_known = format!("{issuer}/.well-known/oauth-authorization-server");
    let revoke_at = format!("{issuer}/oauth/revoke");
    let http = ScriptedHttp::new()
        .get(&well_known, metadata(issuer, Some(&revoke_at)))
        .post(&revoke_at, ScriptedResponse::new(200));
    let app = by_issuer(&http, issuer).await;
    let (status, report) = send(&app, "DELETE", "/connections?workspace=w1&user=u1").await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        report["revoked"][0],
        json!({"workspaceId": "w1", "userId": "u1", "provider": "hooli", "deleted": true,
               "revocation": {"outcome": "revoked", "token": "refresh_token"}})
    );
    let sent = http.requests();
    let revoked: Vec<_> = sent
        .iter()
        .filter(|r| r.url.as_str() == revoke_at)
        .collect();
    assert_eq!(revoked.len(), 1, "{sent:?}");
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&revoked[0].body)
        .into_owned()
        .collect();
    assert_eq!(form[0], ("token".to_owned(), "rt-w1-u1-hooli".to_owned()));
    let basic = base64::engine::general_purpose::STANDARD.encode("runway:h");
    assert_eq!(
        revoked[0].headers["authorization"].to_str().unwrap(),
        format!("Basic {basic}")
    );
    assert!(!stored(&app, &key("w1", "u1", "hooli")).await);

    for (revocation, outcome, reason) in [
        (None, "notDeclared", None),
        (
            Some("http://hooli.example/oauth/revoke"),
            "unreachable",
            Some("no usable revocation_endpoint"),
        ),
    ] {
        let http = ScriptedHttp::new().get(&well_known, metadata(issuer, revocation));
        let app = by_issuer(&http, issuer).await;
        let (_, report) = send(&app, "DELETE", "/connections?workspace=w1&user=u1").await;
        let row = &report["revoked"][0];
        assert_eq!(row["revocation"]["outcome"], outcome, "{report}");
        if let Some(why) = reason {
            let said = row["revocation"]["reason"].as_str().unwrap();
            assert!(said.contains(why), "{said}");
        }
        assert_eq!(row["deleted"], true, "{report}");
        assert!(
            http.requests()
                .iter()
                .all(|r| r.method == http::Method::GET)
        );
    }
    // No metadata at all: unreachable, deleted all the same.
    let http = ScriptedHttp::new();
    let app = by_issuer(&http, issuer).await;
    let (_, report) = send(&app, "DELETE", "/connections?workspace=w1&user=u1").await;
    assert_eq!(
        report["revoked"][0]["revocation"]["outcome"], "unreachable",
        "{report}"
    );
    assert!(!stored(&app, &key("w1", "u1", "hooli")).await);
}

/// Issue 27: an MCP server's own authorization (`auth = "oauth"`, provider `mcp:NAME`) is
/// revoked at its authorization server's `revocation_endpoint`, as the client registration
/// runway keeps there. None kept (for this deployment's callback URL): reported as
/// `noClient`, nothing registered to revoke with, and the entry deleted all the same; an
/// authorization server without a revocation endpoint: `notDeclared`.
#[cfg(feature = "mcp-authorization")]
#[tokio::test]
async fn an_mcp_servers_connection_without_a_kept_registration_is_only_deleted() {
    let (server, prm, issuer) = (
        "https://mcp.example/mcp",
        "https://mcp.example/.well-known/oauth-protected-resource/mcp",
        "https://as.example",
    );
    for (revocation, outcome) in [
        (Some("https://as.example/revoke"), "noClient"),
        (None, "notDeclared"),
    ] {
        let mut as_metadata = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/auth"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "code_challenge_methods_supported": ["S256"],
        });
        if let Some(r) = revocation {
            as_metadata["revocation_endpoint"] = json!(r);
        }
        let http = ScriptedHttp::new()
            .get(
                server,
                ScriptedResponse::new(401).header(
                    "www-authenticate",
                    &format!("Bearer resource_metadata=\"{prm}\""),
                ),
            )
            .get(
                prm,
                ScriptedResponse::json(
                    &json!({"resource": server, "authorization_servers": [issuer]}),
                ),
            )
            .get(
                &format!("{issuer}/.well-known/oauth-authorization-server"),
                ScriptedResponse::json(&as_metadata),
            );
        let mut p = provider("orders", "orders", None, None);
        p.key = "mcp:orders".into();
        p.endpoints = Endpoints::McpServer(server.parse().unwrap());
        let mut providers = Providers::new();
        providers.add(p);
        let app = app_with(&http, providers);
        let k = key("w1", "u1", "mcp:orders");
        seal(&app, &k, &tokens(&k, true, NOW + 86_400_000)).await;
        let (status, report) = send(&app, "DELETE", "/connections?workspace=w1&user=u1").await;
        assert_eq!(status, 200, "{report}");
        assert_eq!(
            report["revoked"][0],
            json!({"workspaceId": "w1", "userId": "u1", "provider": "mcp:orders",
                   "deleted": true, "revocation": {"outcome": outcome}}),
            "{report}"
        );
        assert!(!stored(&app, &k).await);
        // Only metadata read: nothing registered, nothing sent a token.
        assert!(
            http.requests()
                .iter()
                .all(|r| r.method == http::Method::GET),
            "{:?}",
            http.requests()
        );
    }
}
