//! `[[mcp]] auth = "oauth"` end to end on `runway serve` (issue 27): an MCP server with its own
//! authorization, as the MCP authorization spec has it — the Python MCP SDK's `AuthSettings`
//! (protected resource metadata, RFC 9728; a 401 challenge naming it), checking each token by
//! introspection at a real OAuth server (oidc-provider from npm, [`runway_e2e::oauth_flow`])
//! and taking only tokens whose audience is itself. runway is given nothing but the server's
//! URL: it finds the OAuth server, registers itself there (RFC 7591) once for the deployment,
//! and asks for tokens with the server as `resource` (RFC 8707). Operators revoke a person's
//! connection at the OAuth server's revocation endpoint, as that registration.

use std::path::{Path, PathBuf};
use std::time::Duration;

use runway_e2e::client::{WORKSPACE_ID, fresh_id};
use runway_e2e::mcp_oauth::{PUBLIC, body, card, connects, orders_model, still_active};
use runway_e2e::mcp_servers::McpServerProcess;
use runway_e2e::oauth_flow::{CLIENT_SECRET, VAULT_KEY, free_port, oauth_server, registrations};
use runway_e2e::scripted_server::{Recorded, Reply, ScriptedServer, chunk};
use runway_e2e::{AgentProcess, Client, free_data_dir, runway_binary};
use serde_json::{Value, json};
use tokio::process::Command;

const AUTH: (&str, &str) = ("x-api-key", "console-key-1");

async fn serve(data_dir: &Path, model: &str, mcp_url: &str) -> (AgentProcess, Client) {
    let tools = format!("[[mcp]]\nname = \"orders\"\nurl = \"{mcp_url}\"\nauth = \"oauth\"\n");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env("RUNWAY_AGENT", "model")
        .env("RUNWAY_MODEL_BASE_URL", format!("{model}/v1"))
        .env("RUNWAY_MODEL", "test-model")
        .env("RUNWAY_TOOLS", tools)
        .env("RUNWAY_VAULT_KEY", VAULT_KEY)
        .env("RUNWAY_PUBLIC_URL", PUBLIC)
        .env("RUNWAY_AUTH_HEADERS", format!("{}: {}", AUTH.0, AUTH.1))
        .env("RUNWAY_LOG", "warn")
        .env_remove("RUNWAY_TOOLS_FILE")
        .env_remove("RUNWAY_WORKERS_FILE");
    let process = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let client = Client::new(
        process.base_url(),
        vec![(AUTH.0.to_owned(), AUTH.1.to_owned())],
    );
    (process, client)
}

/// `DELETE /connections` of `user`'s connections (workspace [`WORKSPACE_ID`]): the report.
async fn revoke(client: &Client, user: &str) -> Value {
    let r = reqwest::Client::new()
        .delete(format!(
            "{}/connections?workspace={WORKSPACE_ID}&user={user}",
            client.base()
        ))
        .header(AUTH.0, AUTH.1)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

#[tokio::test]
async fn an_mcp_server_with_its_own_authorization_on_serve() {
    let port = free_port();
    let oauth = format!("http://127.0.0.1:{port}");
    let _oauth_server = oauth_server(port, &format!("{PUBLIC}/callback")).await;
    let work: PathBuf = free_data_dir("mcp-oauth");
    let data_dir = work.join("data");
    std::fs::create_dir_all(&data_dir).unwrap();
    let log = work.join("tokens.log");
    let mcp = McpServerProcess::oauth(&oauth, CLIENT_SECRET, &log).await;
    let checked = || -> Vec<String> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let scripted = ScriptedServer::start(orders_model).await;
    let (process, client) = serve(&data_dir, &scripted.base_url, &mcp.url()).await;

    // An MCP server has `auth = "oauth"`: the deployment serves its Client ID Metadata
    // Document (publicly), naming its own URL and the callback.
    let doc: Value = reqwest::get(format!("{}/oauth-client.json", client.base()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["client_id"], format!("{PUBLIC}/oauth-client.json"));
    assert_eq!(doc["redirect_uris"][0], format!("{PUBLIC}/callback"));

    // 1. No connection: the card; no token reached the server. No user: a tool error.
    let t = client.turn(&body(&fresh_id(), None, None)).await;
    assert!(card(&t).is_none(), "{:?}", t.frames);
    assert!(t.text().contains("needs a signed-in user"), "{}", t.text());
    assert_eq!(registrations(&oauth).await, 0);
    // Two users' first turns at the same moment: each gets the card, made after one
    // registration (the turn that wins the store's lease registers, the other waits for it).
    let (dave, erin) = (
        body(&fresh_id(), Some("dave"), None),
        body(&fresh_id(), Some("erin"), None),
    );
    let (dave, erin) = tokio::join!(client.turn(&dave), client.turn(&erin));
    assert!(card(&dave).is_some(), "{:?}", dave.frames);
    assert!(card(&erin).is_some(), "{:?}", erin.frames);
    assert_eq!(registrations(&oauth).await, 1, "one registration for both");
    assert!(checked().is_empty(), "no token was sent: {:?}", checked());
    // 2. Alice connects in the popup: runway registered itself once, and her pending call
    // runs as her, with a token whose audience is the MCP server (the server checks it).
    connects(&client, "alice").await;
    assert_eq!(registrations(&oauth).await, 1, "still one registration");
    let seen = checked();
    let resource = mcp.url();
    assert!(
        !seen.is_empty() && seen.iter().all(|s| *s == format!("alice {resource}")),
        "{seen:?}"
    );
    // 3. Bob gets the card (not alice's token), connects: the same registration.
    connects(&client, "bob").await;
    assert_eq!(registrations(&oauth).await, 1, "reused by a second connect");
    assert!(
        checked()
            .iter()
            .all(|s| s == &format!("alice {resource}") || s == &format!("bob {resource}")),
        "{:?}",
        checked()
    );

    // 4. After a restart of `runway serve`: alice's connection still works, and carol's
    // connect reuses the registration kept in the store.
    process.stop().await;
    let (process, client) = serve(&data_dir, &scripted.base_url, &mcp.url()).await;
    // Revoking bob's connection (nothing discovered yet in this process) revokes his token at
    // the OAuth server's revocation_endpoint, read from its metadata, as the registration his
    // tokens were issued to; nothing registers again.
    assert!(still_active(&mcp.url(), "bob").await);
    let report = revoke(&client, "bob").await;
    assert_eq!(
        report["revoked"],
        json!([{"workspaceId": WORKSPACE_ID, "userId": "bob", "provider": "mcp:orders",
                "deleted": true,
                "revocation": {"outcome": "revoked", "token": "refresh_token"}}]),
        "{report}"
    );
    assert!(
        !still_active(&mcp.url(), "bob").await,
        "bob's token still works"
    );
    assert_eq!(
        registrations(&oauth).await,
        1,
        "revoking registered nothing"
    );
    let t = client.turn(&body(&fresh_id(), Some("alice"), None)).await;
    assert!(t.text().contains("Orders of alice"), "{}", t.text());
    connects(&client, "carol").await;
    assert_eq!(registrations(&oauth).await, 1, "reused after a restart");
    // Operators see people's connections, not runway's registration.
    let listed: Value = reqwest::Client::new()
        .get(format!("{}/connections", client.base()))
        .header(AUTH.0, AUTH.1)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let rows = listed["connections"].as_array().unwrap();
    let mut users: Vec<&str> = rows.iter().map(|r| r["userId"].as_str().unwrap()).collect();
    users.sort_unstable();
    assert_eq!(users, ["alice", "carol"], "{listed}");
    assert!(
        rows.iter().all(|r| r["provider"] == "mcp:orders"),
        "{listed}"
    );
    // Alice's too, now that this process has discovered the server: her token is revoked.
    assert!(still_active(&mcp.url(), "alice").await);
    let report = revoke(&client, "alice").await;
    assert_eq!(
        report["revoked"][0]["revocation"],
        json!({"outcome": "revoked", "token": "refresh_token"}),
        "{report}"
    );
    assert!(
        !still_active(&mcp.url(), "alice").await,
        "alice's token still works"
    );
    let t = client.turn(&body(&fresh_id(), Some("alice"), None)).await;
    assert!(card(&t).is_some(), "the card again: {:?}", t.frames);
    process.stop().await;
    mcp.stop().await;
}

/// A scripted MCP server on loopback that is its own authorization server: `/mcp` answers 401
/// naming its resource metadata, which names `resource` and itself as the authorization
/// server; its RFC 8414 metadata says `S256`, and `client_id_metadata_document_supported` if
/// `cimd`; it has no registration endpoint.
async fn scripted_authorization(resource: Option<&'static str>, cimd: bool) -> ScriptedServer {
    let base = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let at = base.clone();
    let server = ScriptedServer::start(move |r| {
        let base = at.get().cloned().unwrap_or_default();
        match r.target.as_str() {
            "/mcp" => Reply::status(
                401,
                &[(
                    "www-authenticate",
                    &format!("Bearer error=\"invalid_token\", resource_metadata=\"{base}/prm\""),
                )],
                &json!({"error": "invalid_token"}),
            ),
            "/prm" => Reply::json(&json!({
                "resource": resource.map_or(format!("{base}/mcp"), str::to_owned),
                "authorization_servers": [base],
                "scopes_supported": ["files:read"],
            })),
            "/.well-known/oauth-authorization-server" => Reply::json(&json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "code_challenge_methods_supported": ["S256"],
                "client_id_metadata_document_supported": cimd,
            })),
            _ => Reply::status(404, &[], &json!({"error": "not found"})),
        }
    })
    .await;
    base.set(server.base_url.clone()).unwrap();
    server
}

/// Calls the stand-in of the server the user's message names (`connect NAME`), then quotes
/// its result.
fn connect_model(r: &Recorded) -> Reply {
    let body = r.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or_default();
    if last["role"] == "tool" {
        let result = last["content"].as_str().unwrap_or_default();
        return Reply::sse(&[
            chunk::role(),
            chunk::text(&format!("Tool said: {result}")),
            chunk::finish("stop"),
        ]);
    }
    let asked = last["content"].as_str().unwrap_or_default();
    let name = asked.trim_start_matches("connect ").trim();
    Reply::sse(&[
        chunk::role(),
        chunk::tool_start(
            0,
            &format!("call_{}", fresh_id()),
            &format!("{name}_connect_account"),
            "{}",
        ),
        chunk::finish("tool_calls"),
    ])
}

/// The client runway is where the authorization server takes a Client ID Metadata Document
/// (the deployment's public URL is https): the popup goes to the authorization endpoint with
/// `client_id` = `{public}/oauth-client.json`, the `resource` indicator and the metadata's
/// scopes, and nothing registers. An authorization server offering no way in, and resource
/// metadata naming another resource, get no card but a tool error the model relays.
#[tokio::test]
async fn an_mcp_servers_authorization_by_client_document_or_refused() {
    let files = scripted_authorization(None, true).await;
    let closed = scripted_authorization(None, false).await;
    let elsewhere = scripted_authorization(Some("https://elsewhere.example/mcp"), true).await;
    let tools: String = [
        ("files", &files),
        ("closed", &closed),
        ("elsewhere", &elsewhere),
    ]
    .iter()
    .map(|(name, s)| {
        format!(
            "[[mcp]]\nname = \"{name}\"\nurl = \"{}/mcp\"\nauth = \"oauth\"\n",
            s.base_url
        )
    })
    .collect();
    let data_dir = free_data_dir("mcp-oauth-cimd");
    let scripted = ScriptedServer::start(connect_model).await;
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .env("RUNWAY_AGENT", "model")
        .env("RUNWAY_MODEL_BASE_URL", format!("{}/v1", scripted.base_url))
        .env("RUNWAY_MODEL", "test-model")
        .env("RUNWAY_TOOLS", tools)
        .env("RUNWAY_VAULT_KEY", VAULT_KEY)
        .env("RUNWAY_PUBLIC_URL", PUBLIC)
        .env("RUNWAY_AUTH_HEADERS", format!("{}: {}", AUTH.0, AUTH.1))
        .env("RUNWAY_LOG", "warn")
        .env_remove("RUNWAY_TOOLS_FILE")
        .env_remove("RUNWAY_WORKERS_FILE");
    let process = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let client = Client::new(
        process.base_url(),
        vec![(AUTH.0.to_owned(), AUTH.1.to_owned())],
    );
    let ask = |name: &str| {
        let mut b = body(&fresh_id(), Some("alice"), None);
        b["input"] = json!(format!("connect {name}"));
        b
    };

    let t = client.turn(&ask("files")).await;
    let last = t.last();
    let i = &last["outcome"]["interrupts"][0];
    assert_eq!(i["kind"], "authorization", "{:?}", t.frames);
    assert_eq!(i["provider"], "files");
    let link = i["authorizeUrl"]
        .as_str()
        .unwrap()
        .replacen(PUBLIC, client.base(), 1);
    let r = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(link)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 302);
    let to = url::Url::parse(r.headers()["location"].to_str().unwrap()).unwrap();
    assert_eq!(
        to.as_str().split('?').next(),
        Some(&*format!("{}/authorize", files.base_url))
    );
    let q: std::collections::HashMap<String, String> = to.query_pairs().into_owned().collect();
    assert_eq!(q["client_id"], format!("{PUBLIC}/oauth-client.json"));
    assert_eq!(q["resource"], format!("{}/mcp", files.base_url));
    assert_eq!(q["scope"], "files:read");
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["redirect_uri"], format!("{PUBLIC}/callback"));
    // The client document the authorization server would fetch at that client_id.
    let doc: Value = reqwest::get(format!("{}/oauth-client.json", client.base()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["client_id"], q["client_id"]);
    assert_eq!(doc["redirect_uris"][0], q["redirect_uri"]);
    assert_eq!(doc["token_endpoint_auth_method"], "none");

    for (name, why) in [
        (
            "closed",
            "supports neither dynamic client registration nor client ID metadata documents",
        ),
        ("elsewhere", "names another resource than the MCP server"),
    ] {
        let t = client.turn(&ask(name)).await;
        assert_ne!(
            t.last()["outcome"]["interrupts"][0]["kind"],
            "authorization",
            "{name}"
        );
        assert!(
            t.text()
                .contains(&format!("{name} cannot be reached to connect to"))
                && t.text().contains(why),
            "{name}: {}",
            t.text()
        );
    }
    // Nothing was ever sent to any of them with a token, and nothing tried to register.
    for s in [&files, &closed, &elsewhere] {
        assert!(
            s.requests()
                .iter()
                .all(|r| r.header("authorization").is_none() && r.method == "GET"),
            "{:?}",
            s.requests()
        );
    }
    process.stop().await;
}
