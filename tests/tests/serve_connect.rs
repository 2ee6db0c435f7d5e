//! Connected accounts end to end on `runway serve` (issue 27): the model agent's tool with
//! `auth = "acme"` (from the tools file, and from a workers file's worker), a real OAuth server
//! from npm ([`runway_e2e::oauth_flow`]) whose login and consent pages are driven with plain
//! HTTP and, through the playground's card, in headless Chromium (scripts/setup-playground.sh),
//! a protected API on loopback, and the scripted OpenAI-compatible model; and the
//! operators' `runway connections` (list, revoke) against it; and an `[[mcp]]` server with
//! `auth = "acme"` (the Python MCP SDK's bearer-token middleware, checking each token at the
//! OAuth server). One OAuth server for the file: one test runs the scenarios in turn.

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::{Arc, Mutex};

use runway_e2e::client::{AGENT_ID, WORKSPACE_ID, fresh_id, run_body};
use runway_e2e::mcp_servers::McpServerProcess;
use runway_e2e::oauth_flow::{
    Browser, CLIENT_SECRET as SECRET, CLIENT_SECRET_SETTING, Playground, VAULT_KEY,
    a_person_connects_through_the_playground, a_user_connects_and_the_call_runs_as_them,
    bearer_tokens, card, checked_orders_api, free_port, grants, honoured, oauth_server, orders_api,
    orders_model, revoke, subject, tools,
};
use runway_e2e::scripted_server::{Recorded, Reply, ScriptedServer, chunk};
use runway_e2e::{AgentProcess, Client, free_data_dir, runway_binary};
use serde_json::{Value, json};
use tokio::process::Command;

/// What the card's links and the provider's redirect name: https and a domain, as Console
/// checks; the test maps it onto the loopback server (as a reverse proxy would).
const PUBLIC: &str = "https://agent.runway.test";
const AUTH: (&str, &str) = ("x-api-key", "console-key-1");

async fn serve(data_dir: &Path, model: &str, tools_toml: &str) -> (AgentProcess, Client) {
    serve_with(data_dir, model, &[("RUNWAY_TOOLS", tools_toml)]).await
}

/// `runway serve` of the model agent at `model`, with `settings` (its tools, or a workers file).
async fn serve_with(
    data_dir: &Path,
    model: &str,
    settings: &[(&str, &str)],
) -> (AgentProcess, Client) {
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env("RUNWAY_AGENT", "model")
        .env("RUNWAY_MODEL_BASE_URL", format!("{model}/v1"))
        .env("RUNWAY_MODEL", "test-model")
        .envs(settings.iter().copied())
        .env(CLIENT_SECRET_SETTING, SECRET)
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

fn body(thread: &str, workspace: &str, user: Option<&str>, resume: Option<&str>) -> Value {
    let mut b = json!({
        "protocolVersion": "1",
        "runId": fresh_id(),
        "threadId": thread,
        "agentId": AGENT_ID,
        "workspaceId": workspace,
        "input": if resume.is_some() { "" } else { "What are my orders?" },
    });
    if let Some(u) = user {
        b["userId"] = json!(u);
    }
    if let Some(d) = resume {
        b["resume"] = json!({"interruptId": "x", "decision": d});
    }
    b
}

#[tokio::test]
async fn connected_accounts_on_serve() {
    let port = free_port();
    let oauth = format!("http://127.0.0.1:{port}");
    let _oauth_server = oauth_server(port, &format!("{PUBLIC}/callback")).await;
    an_mcp_server_acts_as_the_user_in_a_session_of_their_own(&oauth).await;
    past_64_people_the_least_recent_persons_mcp_session_is_ended(&oauth).await;
    a_tool_acts_as_the_user_who_connected_and_the_attacks_change_nothing(&oauth).await;
    a_workers_file_worker_acts_as_the_user(&oauth).await;
    a_refused_token_is_refreshed_once_then_the_card(&oauth).await;
    concurrent_turns_of_one_user_refresh_once(&oauth).await;
    a_provider_declared_by_its_issuer(&oauth).await;
    operators_list_and_revoke_connections(&oauth).await;
}

/// The model for the MCP server `acme` with `auth = "acme"`: for a new request, a call of
/// its tool `acme_my_orders` if offered, else of its stand-in `acme_connect_account`; after the
/// stand-in's result, the tool if it is offered now; after any other result, a sentence
/// quoting it.
fn mcp_orders_model(r: &Recorded) -> Reply {
    let body = r.json();
    let offered = |name: &str| {
        body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == name))
    };
    let call = |name: &str| {
        Reply::sse(&[
            chunk::role(),
            chunk::tool_start(0, &format!("call_{}", fresh_id()), name, "{}"),
            chunk::finish("tool_calls"),
        ])
    };
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    if last["role"] == "tool" {
        let result = last["content"].as_str().unwrap_or_default();
        if result.contains("is connected") && offered("acme_my_orders") {
            return call("acme_my_orders");
        }
        return Reply::sse(&[
            chunk::role(),
            chunk::text(&format!("Tool said: {result}")),
            chunk::finish("stop"),
        ]);
    }
    if offered("acme_my_orders") {
        call("acme_my_orders")
    } else {
        call("acme_connect_account")
    }
}

/// The MCP session id the protected server's `my_orders` answered in, as the model quoted it.
fn session_in(text: &str) -> String {
    let at = text.find("(session ").expect("the orders") + 9;
    text[at..at + text[at..].find(')').unwrap()].to_owned()
}

/// Issue 27, `[[mcp]] auth = "acme"`: an MCP server that needs the user's token (the Python
/// SDK's bearer middleware, each token checked at the OAuth server). Without a connection the
/// server is not contacted: the model is offered the stand-in, whose call waits behind the
/// card; once the user connects, the resumed turn lists the server's tools as them and runs
/// the call as them. Another user, the user in another workspace and a turn without a user get
/// nothing through the first user's session; each person has a session of their own, kept
/// between turns. A server that refuses the user's token: one refresh, then the card, the call
/// pending until the user connects again.
async fn an_mcp_server_acts_as_the_user_in_a_session_of_their_own(oauth: &str) {
    let work: PathBuf = free_data_dir("connect-mcp");
    let data_dir = work.join("data");
    std::fs::create_dir_all(&data_dir).unwrap();
    let (log, deny) = (work.join("tokens.log"), work.join("deny"));
    let mcp = McpServerProcess::protected(oauth, &log, &deny).await;
    let model = ScriptedServer::start(mcp_orders_model).await;
    let toml = format!(
        "{}\n[[mcp]]\nname = \"acme\"\nurl = \"{}\"\nauth = \"acme\"\n",
        tools("http://127.0.0.1:9", oauth),
        mcp.url()
    );
    let (process, client) = serve(&data_dir, &model.base_url, &toml).await;
    let checked = || -> Vec<String> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let mut browser = Browser::new(PUBLIC, client.base());

    // 1. Alice has no connection: the stand-in's call waits behind the card; the server got
    // nothing.
    let thread = fresh_id();
    let t = client
        .turn(&body(&thread, WORKSPACE_ID, Some("alice"), None))
        .await;
    let link = card(&t).unwrap_or_else(|| panic!("the card: {:?}", t.frames));
    assert!(checked().is_empty(), "{:?}", checked());
    let back = browser.authorize(&link, "alice", false).await;
    assert_eq!(browser.callback(&back).await.0, 200);
    // Connected: the resumed turn lists the tools as alice and runs her request as her.
    let t = client
        .turn(&body(
            &thread,
            WORKSPACE_ID,
            Some("alice"),
            Some("authorized"),
        ))
        .await;
    assert_eq!(t.last()["outcome"]["type"], "success", "{:?}", t.frames);
    assert!(t.text().contains("Orders of alice"), "{}", t.text());
    let alice_session = session_in(&t.text());
    let seen = checked();
    assert!(
        !seen.is_empty() && seen.iter().all(|s| s == "alice"),
        "{seen:?}"
    );

    // 2. Bob, and alice in another workspace: the card; nothing reaches the server, so
    // nothing as alice. 3. No user: a tool error the model relays.
    for (ws, user) in [(WORKSPACE_ID, "bob"), ("918273600000000002", "alice")] {
        let t = client.turn(&body(&fresh_id(), ws, Some(user), None)).await;
        assert!(card(&t).is_some(), "{ws}/{user}: {:?}", t.frames);
    }
    let t = client
        .turn(&body(&fresh_id(), WORKSPACE_ID, None, None))
        .await;
    assert!(card(&t).is_none(), "{:?}", t.frames);
    assert!(t.text().contains("needs a signed-in user"), "{}", t.text());
    assert_eq!(checked(), seen, "a request while nobody connected");

    // 4. Bob connects: his orders, in a session of his own.
    let bob_thread = fresh_id();
    let t = client
        .turn(&body(&bob_thread, WORKSPACE_ID, Some("bob"), None))
        .await;
    let bob_link = card(&t).expect("bob's card");
    let mut bobs_browser = Browser::new(PUBLIC, client.base());
    let back = bobs_browser.authorize(&bob_link, "bob", false).await;
    assert_eq!(bobs_browser.callback(&back).await.0, 200);
    let t = client
        .turn(&body(
            &bob_thread,
            WORKSPACE_ID,
            Some("bob"),
            Some("authorized"),
        ))
        .await;
    assert!(t.text().contains("Orders of bob"), "{}", t.text());
    assert_ne!(session_in(&t.text()), alice_session);
    // 5. Alice again, in a new thread: her own session, kept between turns.
    let t = client
        .turn(&body(&fresh_id(), WORKSPACE_ID, Some("alice"), None))
        .await;
    assert!(t.text().contains("Orders of alice"), "{}", t.text());
    assert_eq!(session_in(&t.text()), alice_session);

    // 6. The server refuses alice's tokens: refreshed once, refused again, the card; the call
    // waits. Connected again (and taken again): the pending call runs as her.
    std::fs::write(&deny, "alice\n").unwrap();
    let before = checked().len();
    let thread = fresh_id();
    let t = client
        .turn(&body(&thread, WORKSPACE_ID, Some("alice"), None))
        .await;
    let link = card(&t).unwrap_or_else(|| panic!("the card, not a tool error: {:?}", t.frames));
    assert_eq!(
        checked()[before..],
        ["refused", "refused"],
        "{:?}",
        checked()
    );
    std::fs::remove_file(&deny).unwrap();
    let back = browser.authorize(&link, "alice", false).await;
    assert_eq!(browser.callback(&back).await.0, 200);
    let t = client
        .turn(&body(
            &thread,
            WORKSPACE_ID,
            Some("alice"),
            Some("authorized"),
        ))
        .await;
    assert_eq!(t.last()["outcome"]["type"], "success", "{:?}", t.frames);
    assert!(t.text().contains("Orders of alice"), "{}", t.text());
    let frames = serde_json::to_string(&t.frames).unwrap();
    assert!(!frames.contains("Bearer"), "a token in the frames");

    process.stop().await;
    mcp.stop().await;
    let _ = std::fs::remove_dir_all(&work);
}

/// How many people's MCP sessions one server keeps (the README's "at most 64 people per
/// server").
const MAX_PEOPLE_PER_SERVER: usize = 64;

/// `user` connects (card, popup, the resumed turn runs the pending call as them): the MCP
/// session the call ran in.
async fn connects_to_mcp(client: &Client, user: &str) -> String {
    let thread = fresh_id();
    let t = client
        .turn(&body(&thread, WORKSPACE_ID, Some(user), None))
        .await;
    let link = card(&t).unwrap_or_else(|| panic!("{user}'s card: {:?}", t.frames));
    let mut browser = Browser::new(PUBLIC, client.base());
    let back = browser.authorize(&link, user, false).await;
    assert_eq!(browser.callback(&back).await.0, 200);
    let t = client
        .turn(&body(&thread, WORKSPACE_ID, Some(user), Some("authorized")))
        .await;
    assert!(
        t.text().contains(&format!("Orders of {user}")),
        "{user}: {}",
        t.text()
    );
    session_in(&t.text())
}

/// The Streamable HTTP transport has clients end the sessions they no longer need (`DELETE`
/// with the `Mcp-Session-Id`): the instance keeps the sessions of 64 people per server, and
/// the turn that pushes out the least recently used person ends that person's session at the
/// server (the Python SDK answers 200 once it has terminated it), as that person; their next
/// turn runs in a new session.
async fn past_64_people_the_least_recent_persons_mcp_session_is_ended(oauth: &str) {
    let work: PathBuf = free_data_dir("connect-mcp-sessions");
    let data_dir = work.join("data");
    std::fs::create_dir_all(&data_dir).unwrap();
    let (log, deny) = (work.join("tokens.log"), work.join("deny"));
    let mcp = McpServerProcess::protected(oauth, &log, &deny).await;
    let model = ScriptedServer::start(mcp_orders_model).await;
    let toml = format!(
        "{}\n[[mcp]]\nname = \"acme\"\nurl = \"{}\"\nauth = \"acme\"\n",
        tools("http://127.0.0.1:9", oauth),
        mcp.url()
    );
    let (process, client) = serve(&data_dir, &model.base_url, &toml).await;
    let ended = || -> Vec<String> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("ended "))
            .map(str::to_owned)
            .collect()
    };

    // The first person, then 63 more (16 at a time): 64 sessions kept, none ended.
    let first = connects_to_mcp(&client, "p0").await;
    let people: Vec<String> = (1..MAX_PEOPLE_PER_SERVER)
        .map(|i| format!("p{i}"))
        .collect();
    for batch in people.chunks(16) {
        let sessions =
            futures::future::join_all(batch.iter().map(|u| connects_to_mcp(&client, u))).await;
        assert!(!sessions.contains(&first), "{sessions:?}");
    }
    assert!(ended().is_empty(), "{:?}", ended());

    // One more: the first person, least recently used, is pushed out and their session ended.
    connects_to_mcp(&client, "one-more").await;
    assert_eq!(ended(), [format!("ended {first} 200")]);
    // The first person again (still connected): their orders, in a new session.
    let t = client
        .turn(&body(&fresh_id(), WORKSPACE_ID, Some("p0"), None))
        .await;
    assert!(t.text().contains("Orders of p0"), "{}", t.text());
    assert_ne!(session_in(&t.text()), first);
    process.stop().await;
    mcp.stop().await;
    let _ = std::fs::remove_dir_all(&work);
}

/// `runway connections BASE ARGS…` (the real binary): whether it exited 0, its stdout and
/// its stderr.
async fn connections_cli(base: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(runway_binary())
        .arg("connections")
        .arg(base)
        .args(args)
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `runway connections` against `runway serve`: the operator lists the vault (provider, user,
/// workspace, scopes, expiry: never a token), only with the header set; revoking needs a
/// workspace and a user, hands the user's refresh token to the provider's `revocation_url`
/// (a recorder here, so the test can prove it was the live refresh token of the user's grant
/// at the real OAuth server) and deletes the connection: the next turn shows the card again.
async fn operators_list_and_revoke_connections(oauth: &str) {
    let model = ScriptedServer::start(orders_model).await;
    let api = ScriptedServer::start(orders_api).await;
    let revocations = ScriptedServer::start(|_| Reply::json(&json!({}))).await;
    let data_dir: PathBuf = free_data_dir("connect-operators");
    std::fs::create_dir_all(&data_dir).unwrap();
    let token_url = format!("token_url = \"{oauth}/token\"");
    let toml = tools(&api.base_url, oauth).replace(
        &token_url,
        &format!(
            "{token_url}\nrevocation_url = \"{}/revoke\"",
            revocations.base_url
        ),
    );
    assert!(toml.contains("revocation_url"));
    let (process, client) = serve(&data_dir, &model.base_url, &toml).await;
    let mut browser = Browser::new(PUBLIC, client.base());
    a_user_connects_and_the_call_runs_as_them(&client, &mut browser, &api, oauth).await;
    let user = run_body("x", "x", "")["userId"]
        .as_str()
        .unwrap()
        .to_owned();
    let access_token = bearer_tokens(&api).last().unwrap().clone();
    let header = format!("{}: {}", AUTH.0, AUTH.1);

    let (ok, table, err) = connections_cli(client.base(), &["--header", &header]).await;
    assert!(ok, "{err}");
    for shown in [
        WORKSPACE_ID,
        user.as_str(),
        "Acme CRM (acme)",
        "connected (refreshable)",
        "openid",
    ] {
        assert!(table.contains(shown), "{shown} in {table}");
    }
    assert!(!table.contains(&access_token), "a token in {table}");
    let (ok, json_out, err) = connections_cli(
        client.base(),
        &[
            "-H",
            &header,
            "--workspace",
            WORKSPACE_ID,
            "--user",
            &user,
            "--json",
        ],
    )
    .await;
    assert!(ok, "{err}");
    assert!(!json_out.contains(&access_token), "a token in {json_out}");
    let listed: Value = serde_json::from_str(&json_out).unwrap();
    let rows = listed["connections"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{listed}");
    assert_eq!(rows[0]["provider"], "acme");
    assert_eq!(rows[0]["userId"], user.as_str());
    assert_eq!(rows[0]["status"], "connected");
    assert!(
        rows[0]["scopes"]
            .as_array()
            .unwrap()
            .contains(&json!("openid")),
        "{listed}"
    );
    assert!(rows[0]["expiresAtMs"].as_u64().is_some(), "{listed}");
    assert!(rows[0]["connectedAtMs"].as_u64().is_some(), "{listed}");
    let (ok, none, _) = connections_cli(client.base(), &["-H", &header, "--workspace", "1"]).await;
    assert!(ok);
    assert_eq!(none.trim(), "no connected accounts");

    // Without the header set: refused, nothing listed or revoked.
    let (ok, out, err) = connections_cli(client.base(), &[]).await;
    assert!(!ok && out.is_empty(), "{out}");
    assert!(err.contains("HTTP 401"), "{err}");
    let (ok, _, err) = connections_cli(
        client.base(),
        &["--revoke", "--workspace", WORKSPACE_ID, "--user", &user],
    )
    .await;
    assert!(!ok && err.contains("HTTP 401"), "{err}");
    // Revoking without naming a user is refused before anything is sent.
    let (ok, _, err) = connections_cli(
        client.base(),
        &["-H", &header, "--revoke", "--workspace", WORKSPACE_ID],
    )
    .await;
    assert!(!ok, "{err}");
    assert!(revocations.requests().is_empty());

    let (ok, report, err) = connections_cli(
        client.base(),
        &[
            "-H",
            &header,
            "--revoke",
            "--workspace",
            WORKSPACE_ID,
            "--user",
            &user,
        ],
    )
    .await;
    assert!(ok, "{err}");
    assert!(report.contains("revoked (refresh_token)"), "{report}");
    let sent = revocations.requests();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&sent[0].body)
        .into_owned()
        .collect();
    assert_eq!(
        form[1],
        ("token_type_hint".to_owned(), "refresh_token".to_owned())
    );
    let basic = reqwest::Client::new()
        .post("http://unused.invalid/")
        .basic_auth("runway", Some(SECRET))
        .build()
        .unwrap();
    assert_eq!(
        sent[0].header("authorization"),
        basic.headers()["authorization"].to_str().ok()
    );
    // What was sent is the user's live refresh token at the real provider.
    let refreshed: Value = reqwest::Client::new()
        .post(format!("{oauth}/token"))
        .basic_auth("runway", Some(SECRET))
        .form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &form[0].1),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let renewed = refreshed["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("{refreshed}"));
    assert_eq!(subject(oauth, renewed).await, user);

    let (ok, after, _) = connections_cli(client.base(), &["-H", &header]).await;
    assert!(ok);
    assert_eq!(after.trim(), "no connected accounts");
    let t = client
        .turn(&run_body(&fresh_id(), &fresh_id(), "What are my orders?"))
        .await;
    assert!(card(&t).is_some(), "the card again: {:?}", t.frames);
    process.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// `issuer = "…"` instead of the URLs: the endpoints come from the provider's metadata
/// (RFC 8414's well-known URL first, then OpenID's), and the flow runs; `--revoke` revokes at
/// the metadata's revocation endpoint. Metadata naming another issuer: no card whose link could only fail, a tool
/// error the model relays.
async fn a_provider_declared_by_its_issuer(oauth: &str) {
    let by_issuer = |issuer: &str| {
        tools("API", oauth).replace(
            &format!("authorize_url = \"{oauth}/auth\"\ntoken_url = \"{oauth}/token\""),
            &format!("issuer = \"{issuer}\""),
        )
    };
    assert!(by_issuer(oauth).contains("issuer ="));
    let model = ScriptedServer::start(orders_model).await;
    let api = ScriptedServer::start(orders_api).await;
    let data_dir: PathBuf = free_data_dir("connect-issuer");
    std::fs::create_dir_all(&data_dir).unwrap();
    let toml = by_issuer(oauth).replace("API", &api.base_url);
    let (process, client) = serve(&data_dir, &model.base_url, &toml).await;
    let mut browser = Browser::new(PUBLIC, client.base());
    a_user_connects_and_the_call_runs_as_them(&client, &mut browser, &api, oauth).await;
    // No `revocation_url`: `--revoke` revokes at the metadata's revocation_endpoint, as
    // runway's client, and the user's token no longer works at the provider.
    let user = run_body("x", "x", "")["userId"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = bearer_tokens(&api).last().unwrap().clone();
    assert!(honoured(oauth, &token).await);
    let header = format!("{}: {}", AUTH.0, AUTH.1);
    let (ok, report, err) = connections_cli(
        client.base(),
        &[
            "-H",
            &header,
            "--revoke",
            "--workspace",
            WORKSPACE_ID,
            "--user",
            &user,
        ],
    )
    .await;
    assert!(ok, "{err}");
    assert!(report.contains("revoked (refresh_token)"), "{report}");
    assert!(
        !honoured(oauth, &token).await,
        "the token works after --revoke"
    );
    process.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);

    // The same server reached as localhost: its metadata names 127.0.0.1, another issuer.
    let data_dir: PathBuf = free_data_dir("connect-issuer-mismatch");
    std::fs::create_dir_all(&data_dir).unwrap();
    let port = oauth.rsplit(':').next().unwrap();
    let toml = by_issuer(&format!("http://localhost:{port}")).replace("API", &api.base_url);
    let (process, client) = serve(&data_dir, &model.base_url, &toml).await;
    let t = client
        .turn(&run_body(&fresh_id(), &fresh_id(), "What are my orders?"))
        .await;
    assert!(card(&t).is_none(), "{:?}", t.frames);
    assert!(t.text().contains("names another issuer"), "{}", t.text());
    process.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// The API answers 401 to a token it no longer takes: refreshed once, the call sent again,
/// no card. The grant revoked at the provider (the refresh fails too): the card, the call
/// pending, the refused token never sent again; after reconnecting, the pending call runs.
async fn a_refused_token_is_refreshed_once_then_the_card(oauth: &str) {
    let denied = Arc::new(Mutex::new(Vec::new()));
    let model = ScriptedServer::start(orders_model).await;
    let api = ScriptedServer::start(checked_orders_api(oauth, denied.clone())).await;
    let data_dir: PathBuf = free_data_dir("connect-refused");
    std::fs::create_dir_all(&data_dir).unwrap();
    let (process, client) = serve(&data_dir, &model.base_url, &tools(&api.base_url, oauth)).await;
    let mut browser = Browser::new(PUBLIC, client.base());
    a_user_connects_and_the_call_runs_as_them(&client, &mut browser, &api, oauth).await;
    let user = run_body("x", "x", "")["userId"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = bearer_tokens(&api).last().unwrap().clone();
    let (refreshed, refused) = grants(oauth, "refresh_token").await;

    // The API refuses the token: one refresh, the call again with the new one, its result.
    denied.lock().unwrap().push(first.clone());
    let t = client
        .turn(&run_body(&fresh_id(), &fresh_id(), "What are my orders?"))
        .await;
    assert!(card(&t).is_none(), "{:?}", t.frames);
    assert!(t.text().contains("DH-1"), "{}", t.text());
    let sent = bearer_tokens(&api);
    let renewed = sent.last().unwrap().clone();
    assert_eq!(
        sent[sent.len() - 2],
        first,
        "sent with the refused token first"
    );
    assert_ne!(renewed, first);
    assert_eq!(subject(oauth, &renewed).await, user);
    assert_eq!(
        grants(oauth, "refresh_token").await,
        (refreshed + 1, refused)
    );

    // Revoked at the provider, refresh token and all: one refresh attempt, then the card.
    revoke(oauth, &renewed).await;
    let thread = fresh_id();
    let t = client
        .turn(&run_body(&fresh_id(), &thread, "What are my orders?"))
        .await;
    let link = card(&t).unwrap_or_else(|| panic!("the card, not a tool error: {:?}", t.frames));
    assert!(!t.text().contains("401"), "{}", t.text());
    assert_eq!(
        grants(oauth, "refresh_token").await,
        (refreshed + 1, refused + 1)
    );
    // The refused token is not sent again: another turn gets the card at once.
    let sent_before = bearer_tokens(&api).len();
    let t = client
        .turn(&run_body(&fresh_id(), &fresh_id(), "What are my orders?"))
        .await;
    assert!(card(&t).is_some(), "{:?}", t.frames);
    assert_eq!(bearer_tokens(&api).len(), sent_before);

    // Reconnected: the pending call runs, as the user.
    let back = browser.authorize(&link, &user, false).await;
    let (status, html) = browser.callback(&back).await;
    assert_eq!(status, 200, "{html}");
    let mut resume = run_body(&fresh_id(), &thread, "");
    resume["resume"] = json!({"interruptId": "x", "decision": "authorized"});
    let t = client.turn(&resume).await;
    assert_eq!(t.last()["outcome"]["type"], "success", "{:?}", t.frames);
    assert!(t.text().contains("DH-1"), "{}", t.text());
    let last = bearer_tokens(&api).last().unwrap().clone();
    assert_eq!(subject(oauth, &last).await, user);
    process.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// Several turns of one user at once, their access token about to expire, the provider
/// rotating refresh tokens (a second use of one revokes the grant): one refresh reaches the
/// provider, and every call runs.
async fn concurrent_turns_of_one_user_refresh_once(oauth: &str) {
    const TURNS: usize = 5;
    let model = ScriptedServer::start(orders_model).await;
    let api = ScriptedServer::start(orders_api).await;
    let data_dir: PathBuf = free_data_dir("connect-concurrent");
    std::fs::create_dir_all(&data_dir).unwrap();
    let (process, client) = serve(&data_dir, &model.base_url, &tools(&api.base_url, oauth)).await;
    let mut browser = Browser::new(PUBLIC, client.base());
    // Its tokens live 30 s, within runway's refresh margin: every use refreshes first.
    let user = format!("expiring-{}", fresh_id());
    let body = |thread: &str| {
        let mut b = run_body(&fresh_id(), thread, "What are my orders?");
        b["userId"] = json!(user);
        b
    };
    let thread = fresh_id();
    let link = card(&client.turn(&body(&thread)).await).expect("the card");
    let back = browser.authorize(&link, &user, false).await;
    assert_eq!(browser.callback(&back).await.0, 200);
    let (refreshed, refused) = grants(oauth, "refresh_token").await;

    let turns = (0..TURNS).map(|_| {
        let client = client.clone();
        let body = body(&fresh_id());
        async move { client.turn(&body).await }
    });
    let done = futures::future::join_all(turns).await;
    for t in &done {
        assert!(card(t).is_none(), "a needless card: {:?}", t.frames);
        assert!(t.text().contains("DH-1"), "{}", t.text());
    }
    // The provider rotates refresh tokens and refuses a spent one: no refusal means no refresh
    // token was spent twice, however the turns overlapped. Turns that overlap share one
    // refresh; on a loaded machine some run after the first refresh has been stored, find its
    // token (30 s: within the margin too) and refresh it in turn, one after another.
    let (now_refreshed, now_refused) = grants(oauth, "refresh_token").await;
    assert_eq!(now_refused, refused, "a refresh token was spent twice");
    assert!(
        (refreshed + 1..=refreshed + TURNS as u64).contains(&now_refreshed),
        "{} refreshes for {TURNS} turns",
        now_refreshed - refreshed
    );
    let tokens = bearer_tokens(&api);
    assert_eq!(tokens.len(), TURNS);
    let distinct: std::collections::BTreeSet<&String> = tokens.iter().collect();
    assert_eq!(
        distinct.len() as u64,
        now_refreshed - refreshed,
        "every call with a refreshed token, each refresh's token used"
    );
    for token in distinct {
        assert_eq!(subject(oauth, token).await, user);
    }
    process.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// A workers file's model worker with `auth = "acme"` in its own tools: the card, the
/// connection, the pending call run as the user. Another worker of the file has no providers.
async fn a_workers_file_worker_acts_as_the_user(oauth: &str) {
    let model = ScriptedServer::start(orders_model).await;
    let api = ScriptedServer::start(orders_api).await;
    let data_dir: PathBuf = free_data_dir("connect-workers");
    std::fs::create_dir_all(&data_dir).unwrap();
    let workers = format!(
        r#"
[defaults]
agent = "model"
base_url = "{}/v1"
model = "test-model"

[workers."{AGENT_ID}"]
name = "Order desk"
tools = '''{}'''

[workers."918273688800000300"]
name = "HR helper"
"#,
        model.base_url,
        tools(&api.base_url, oauth)
    );
    let (process, client) =
        serve_with(&data_dir, &model.base_url, &[("RUNWAY_WORKERS", &workers)]).await;
    let mut browser = Browser::new(PUBLIC, client.base());
    a_user_connects_and_the_call_runs_as_them(&client, &mut browser, &api, oauth).await;
    process.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

async fn a_tool_acts_as_the_user_who_connected_and_the_attacks_change_nothing(oauth: &str) {
    let oauth = oauth.to_owned();
    let model = ScriptedServer::start(orders_model).await;
    let api = ScriptedServer::start(orders_api).await;
    let data_dir: PathBuf = free_data_dir("connect");
    std::fs::create_dir_all(&data_dir).unwrap();
    let toml = tools(&api.base_url, &oauth);
    let (process, client) = serve(&data_dir, &model.base_url, &toml).await;
    let mut browser = Browser::new(PUBLIC, client.base());
    let thread = fresh_id();

    // 1. No connection: the call is not sent, the turn ends with the card.
    let t = client
        .turn(&body(&thread, WORKSPACE_ID, Some("alice"), None))
        .await;
    let link = card(&t).expect("the authorization card");
    assert!(link.starts_with(&format!("{PUBLIC}/connect/")), "{link}");
    assert!(api.requests().is_empty(), "the call waited");

    // A forged state, and the link opened without the header set but with a made-up id.
    let (status, html) = browser
        .callback(&format!(
            "{PUBLIC}/callback?state=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&code=x"
        ))
        .await;
    assert_eq!(status, 400, "{html}");
    let (status, _, _) = client
        .get_plain(&format!("{}/connect/nope", client.base()))
        .await;
    assert_eq!(status, 404);

    // 2. The user connects in the "popup": login and consent at the real provider.
    let back = browser.authorize(&link, "alice", false).await;
    let (status, html) = browser.callback(&back).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains("Acme CRM is connected. You can close this window."),
        "{html}"
    );
    // Replayed: refused, nothing changes.
    let (status, _) = browser.callback(&back).await;
    assert_eq!(status, 400);
    // The card's link is single use too.
    let (status, _, _) = client.get_plain(&browser.local(&link)).await;
    assert_eq!(status, 404);

    // 3. The resumed turn runs the pending call as alice; the token is nowhere in the frames.
    let t = client
        .turn(&body(
            &thread,
            WORKSPACE_ID,
            Some("alice"),
            Some("authorized"),
        ))
        .await;
    assert_eq!(t.last()["outcome"]["type"], "success", "{:?}", t.frames);
    assert!(t.text().contains("DH-1"), "{}", t.text());
    let tokens = bearer_tokens(&api);
    assert_eq!(tokens.len(), 1);
    assert_eq!(subject(&oauth, &tokens[0]).await, "alice");
    let frames = serde_json::to_string(&t.frames).unwrap();
    assert!(!frames.contains(&tokens[0]), "a token in the frames");
    let sent_to_model = serde_json::to_string(&model.chat_completions()).unwrap();
    assert!(
        !sent_to_model.contains(&tokens[0]),
        "a token sent to the model"
    );

    // 4. Another user, and alice in another workspace, get the card: never alice's token.
    for (ws, user) in [(WORKSPACE_ID, "bob"), ("918273600000000002", "alice")] {
        let t = client.turn(&body(&fresh_id(), ws, Some(user), None)).await;
        assert!(card(&t).is_some(), "{ws}/{user}: {:?}", t.frames);
    }
    // 5. Bob answers "authorized" without connecting: the vault says no, the card again.
    let bob_thread = fresh_id();
    let t = client
        .turn(&body(&bob_thread, WORKSPACE_ID, Some("bob"), None))
        .await;
    let bob_link = card(&t).unwrap();
    let t = client
        .turn(&body(
            &bob_thread,
            WORKSPACE_ID,
            Some("bob"),
            Some("authorized"),
        ))
        .await;
    assert!(card(&t).is_some(), "{:?}", t.frames);
    assert_eq!(bearer_tokens(&api).len(), 1);
    // Bob, in a browser of his own, says no at the provider: access_denied, on the page.
    let mut browser = Browser::new(PUBLIC, client.base());
    let back = browser.authorize(&bob_link, "bob", true).await;
    assert!(back.contains("error=access_denied"), "{back}");
    let (status, html) = browser.callback(&back).await;
    assert_eq!(status, 403);
    assert!(html.contains("access_denied"), "{html}");

    // 6. No userId: no card, a tool error the model relays.
    let t = client
        .turn(&body(&fresh_id(), WORKSPACE_ID, None, None))
        .await;
    assert!(card(&t).is_none());
    assert!(t.text().contains("needs a signed-in user"), "{}", t.text());

    // 7. The token survives a restart: alice's next call runs straight away.
    process.stop().await;
    let (process, client) = serve(&data_dir, &model.base_url, &toml).await;
    let t = client
        .turn(&body(&fresh_id(), WORKSPACE_ID, Some("alice"), None))
        .await;
    assert!(card(&t).is_none(), "{:?}", t.frames);
    assert!(t.text().contains("DH-2"), "{}", t.text());
    let tokens = bearer_tokens(&api);
    assert_eq!(tokens.len(), 2);
    assert_eq!(subject(&oauth, &tokens[1]).await, "alice");

    // 8. A person in the deployment's own playground, opened at its public URL, in Chromium:
    // the card, the popup at the provider's pages (refused once, then connected), and the
    // thread resumed by the callback page (same origin); the call runs as them alone.
    let page_headers = [(AUTH.0.to_owned(), AUTH.1.to_owned())];
    let at = Playground {
        page: &format!("{PUBLIC}/"),
        headers: &page_headers,
        public: (PUBLIC, client.base()),
        resumed_by: "page",
    };
    a_person_connects_through_the_playground(&at, &client, &api, &oauth).await;

    // Nothing in the database is a token in plain text.
    let tokens = bearer_tokens(&api);
    process.stop().await;
    let db = std::fs::read_dir(&data_dir)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read(e.path()).unwrap_or_default())
        .collect::<Vec<_>>();
    for bytes in db {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!tokens.iter().any(|t| text.contains(t.as_str())));
    }
    let _ = std::fs::remove_dir_all(&data_dir);
}

#[tokio::test]
async fn a_provider_without_the_vault_key_refuses_to_start() {
    let out = std::process::Command::new(runway_binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(free_data_dir("connect-nokey"))
        .env("RUNWAY_AGENT", "model")
        .env("RUNWAY_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
        .env("RUNWAY_MODEL", "m")
        .env(
            "RUNWAY_TOOLS",
            tools("http://127.0.0.1:9", "http://127.0.0.1:9"),
        )
        .env(CLIENT_SECRET_SETTING, SECRET)
        .env_remove("RUNWAY_VAULT_KEY")
        .env_remove("RUNWAY_TOOLS_FILE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("RUNWAY_VAULT_KEY") && err.contains("acme"),
        "{err}"
    );
}

#[tokio::test]
async fn two_workers_declaring_one_provider_key_differently_refuse_to_start() {
    let acme = tools("http://127.0.0.1:9", "http://127.0.0.1:9");
    let other = acme.replace("client_id = \"runway\"", "client_id = \"another\"");
    let workers = format!(
        r#"
[defaults]
agent = "model"
base_url = "http://127.0.0.1:9/v1"
model = "m"

[workers."{AGENT_ID}"]
tools = '''{acme}'''

[workers."918273688800000300"]
tools = '''{other}'''
"#
    );
    let out = std::process::Command::new(runway_binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(free_data_dir("connect-clash"))
        .env("RUNWAY_WORKERS", workers)
        .env(CLIENT_SECRET_SETTING, SECRET)
        .env("RUNWAY_VAULT_KEY", VAULT_KEY)
        .env_remove("RUNWAY_WORKERS_FILE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[providers.acme]") && err.contains("918273688800000300"),
        "{err}"
    );
}
