//! The model agent (`RUNWAY_AGENT=model`) in the real `bootstrap` under cargo-lambda's emulator
//! with moto's DynamoDB (both started by `infra/aws/local`): text streamed from an
//! OpenAI-compatible endpoint in this test, the tools file with a `${NAME}` header, an approval
//! round trip, an AG-UI client's own tool (issue 28), attachments downloaded once and kept in
//! the table, a connected account (the real OAuth server of [`runway_e2e::oauth_flow`], its
//! tokens in the table's vault; connected with plain HTTP, and by a person through
//! `runway playground`'s card in headless Chromium); an MCP server with its own authorization (`auth = "oauth"`:
//! discovered, registered once in the table, tokens for that server alone); and MCP tools of
//! real MCP servers.
//!
//! Ignored by a plain `cargo test`: run by `scripts/test-aws.sh`.

use std::path::PathBuf;
use std::time::Duration;

use runway_e2e::client::{AGENT_ID, WORKSPACE_ID, fresh_id, run_body};
use runway_e2e::mcp_scenario::McpBench;
use runway_e2e::mcp_servers::McpServerProcess;
use runway_e2e::oauth_flow::{
    self, Browser, CLIENT_SECRET, CLIENT_SECRET_SETTING, Playground, VAULT_KEY, free_port,
    oauth_server, playground_proxy, registrations,
};
use runway_e2e::scripted_server::{PIXEL_PNG, Piece, Reply, ScriptedServer, chunk};
use runway_e2e::{AgentProcess, Client, TARGET_ENV, target_auth};
use runway_e2e::{approval_checks, client_tool_checks};
use serde_json::{Value, json};
use tokio::process::Command;

const KEY: &str = "sk-lambda-test-91c3";
/// The card's links and the provider's redirect name this (Console wants https and a domain);
/// the test maps it onto the emulator's address, as a reverse proxy would.
const PUBLIC: &str = "https://agent.runway.test";
const TOOL_TOKEN: &str = "tooltok-lambda-27";
const TOOLS: &str = r#"
[[tools]]
name = "issue_refund"
description = "Refund an order"
parameters = { type = "object", properties = { order = { type = "string" } }, required = ["order"] }
method = "POST"
url = "TOOLS_BASE/refunds"
headers = { X-Token = "Bearer ${RUNWAY_TEST_TOOL_TOKEN}" }
approval = true
"#;

fn data(c: Value) -> Piece {
    Piece::Data(format!("data: {c}\n\n"))
}

fn answer(text: &str) -> Reply {
    Reply::sse(&[chunk::role(), chunk::text(text), chunk::finish("stop")])
}

async fn checks(
    function: &AgentProcess,
    model: &ScriptedServer,
    tools: &ScriptedServer,
    files: &ScriptedServer,
) {
    let client = Client::new(function.base_url(), target_auth());

    // 1. Text streams as the model sends it.
    let t = client
        .turn(&run_body(&fresh_id(), &fresh_id(), "Where is my order?"))
        .await;
    assert_eq!(t.last()["type"], "RUN_FINISHED", "{:?}", t.frames);
    assert_eq!(t.text(), "It left Hà Nội today.");
    let at: Vec<Duration> = t
        .frames
        .iter()
        .zip(&t.frame_arrivals)
        .filter(|(f, _)| f["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|(_, a)| *a)
        .collect();
    assert!(
        at[1] - at[0] >= Duration::from_millis(1200),
        "not streamed: {at:?}"
    );
    let first = &model.requests()[0];
    assert_eq!(
        first.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );

    // 2. Approval: the refund waits; approve runs it with the header from the settings.
    let thread = fresh_id();
    let t = client
        .turn(&run_body(&fresh_id(), &thread, "Refund DH-1"))
        .await;
    assert_eq!(t.last()["outcome"]["type"], "interrupt", "{:?}", t.frames);
    assert!(tools.requests().is_empty());
    let mut resume = run_body(&fresh_id(), &thread, "");
    resume["resume"] = json!({"decision": "approve"});
    let t = client.turn(&resume).await;
    assert_eq!(t.text(), "Refunded.", "{:?}", t.frames);
    let calls = tools.requests();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].json(), json!({"order": "DH-1"}));
    let token = format!("Bearer {TOOL_TOKEN}");
    assert_eq!(calls[0].header("x-token"), Some(token.as_str()));

    // 3. Attachments: typed from their bytes, downloaded once, kept in the table.
    let thread = fresh_id();
    let base = &files.base_url;
    let attachments = json!([
        {"id": "t", "url": format!("{base}/notes.txt?sig=1"), "name": "a.png", "mime": "image/png", "sizeBytes": 1},
        {"id": "p", "url": format!("{base}/pixel.png?sig=2"), "name": "a.txt", "mime": "text/plain", "sizeBytes": 1},
    ]);
    let mut body = run_body(&fresh_id(), &thread, "What are these?");
    body["attachments"] = attachments.clone();
    let t = client.turn(&body).await;
    assert_eq!(t.text(), "A note and a pixel.", "{:?}", t.frames);
    let mut body = run_body(&fresh_id(), &thread, "Again?");
    body["attachments"] = attachments;
    let t = client.turn(&body).await;
    assert_eq!(t.text(), "Still.", "{:?}", t.frames);
    assert_eq!(files.requests().len(), 2, "each file downloaded once");
    let reqs = model.requests();
    let last = reqs.last().unwrap().json();
    let parts = &last["messages"][1]["content"];
    assert!(
        parts[1]["text"]
            .as_str()
            .unwrap()
            .ends_with("Order DH-1: paid.\n"),
        "{parts}"
    );
    let url = parts[2]["image_url"]["url"].as_str().unwrap_or_default();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{}",
        serde_json::to_string(
            &reqs
                .iter()
                .map(|r| r.json()["messages"].clone())
                .collect::<Vec<_>>()
        )
        .unwrap()
    );

    // 4. Issue 20: an edit lands on the call it names; ten approvals at once run a call once
    //    (claimed with DynamoDB's conditional write).
    approval_checks::an_edit_lands_on_the_call_it_names(&client, tools).await;
    approval_checks::concurrent_approvals_run_the_call_once(&client, tools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto and cargo-lambda: run by scripts/test-aws.sh"]
async fn the_model_agent_on_lambda_streams_asks_for_approval_keeps_attachments_connects_and_uses_mcp()
 {
    // One function start for every check (each start of the emulator costs a build): the MCP
    // scenario's model answers follow these.
    let mut bench = McpBench::start_after(vec![
        Reply::stream(vec![
            data(chunk::role()),
            data(chunk::text("It left ")),
            Piece::Pause(Duration::from_millis(1500)),
            data(chunk::text("Hà Nội today.")),
            data(chunk::finish("stop")),
            Piece::Data("data: [DONE]\n\n".into()),
        ]),
        Reply::sse(&[
            chunk::role(),
            chunk::tool_start(0, "call_r", "issue_refund", "{\"order\":"),
            chunk::tool_args(0, "\"DH-1\"}"),
            chunk::finish("tool_calls"),
        ]),
        answer("Refunded."),
        answer("A note and a pixel."),
        answer("Still."),
        // The connected account: the call that needs it, then the answer once it ran.
        Reply::sse(&[
            chunk::role(),
            chunk::tool_start(0, "call_o", "my_orders", "{}"),
            chunk::finish("tool_calls"),
        ]),
        answer("Your orders: DH-1, DH-2."),
        // `auth = "oauth"`: the stand-in (the card), then, connected, the server's tool.
        Reply::sse(&[
            chunk::role(),
            chunk::tool_start(0, "call_d", "desk_connect_account", "{}"),
            chunk::finish("tool_calls"),
        ]),
        Reply::sse(&[
            chunk::role(),
            chunk::tool_start(0, "call_m", "desk_my_orders", "{}"),
            chunk::finish("tool_calls"),
        ]),
        answer("Your desk orders."),
    ])
    .await;
    let oauth_port = free_port();
    let oauth = format!("http://127.0.0.1:{oauth_port}");
    let _oauth_server = oauth_server(oauth_port, &format!("{PUBLIC}/callback")).await;
    let api = ScriptedServer::start(oauth_flow::orders_api).await;
    let work = runway_e2e::free_data_dir("lambda-mcp-oauth");
    std::fs::create_dir_all(&work).unwrap();
    let desk_log = work.join("tokens.log");
    let desk = McpServerProcess::oauth(&oauth, CLIENT_SECRET, &desk_log).await;
    let tools = ScriptedServer::start(|_| Reply::json(&json!({"refunded": true}))).await;
    let files = ScriptedServer::start(|r| {
        let file = |piece: Piece| Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/octet-stream".into())],
            pieces: vec![piece],
        };
        match r.target.split('?').next().unwrap_or_default() {
            "/notes.txt" => file(Piece::Data("Order DH-1: paid.\n".into())),
            "/pixel.png" => file(Piece::Bytes(PIXEL_PNG.to_vec())),
            _ => Reply::status(404, &[], &json!({"error": "no such file"})),
        }
    })
    .await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/aws/local");
    let mut cmd = Command::new(script);
    cmd.args(["--table", "model", "--concurrency", "2"])
        .envs(TARGET_ENV)
        .env("RUNWAY_TURN_DEADLINE_SECS", "30")
        .env("RUNWAY_AGENT", "model")
        .env("RUNWAY_MODEL_API_KEY", KEY)
        .env("RUNWAY_SYSTEM_PROMPT", "Be brief.")
        .env("RUNWAY_TEST_TOOL_TOKEN", TOOL_TOKEN)
        .env("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK", "1")
        .env("RUNWAY_VAULT_KEY", VAULT_KEY)
        .env("RUNWAY_PUBLIC_URL", PUBLIC)
        .env(CLIENT_SECRET_SETTING, CLIENT_SECRET)
        .env("RUNWAY_LOG", "warn");
    for (k, v) in bench.settings() {
        // The HTTP tools, the provider and the MCP servers, in one tools file.
        match k {
            "RUNWAY_TOOLS" => cmd.env(
                k,
                TOOLS.replace("TOOLS_BASE", &tools.base_url)
                    + &oauth_flow::tools(&api.base_url, &oauth)
                    + &format!(
                        "\n[[mcp]]\nname = \"desk\"\nurl = \"{}\"\nauth = \"oauth\"\n",
                        desk.url()
                    )
                    + &v,
            ),
            _ => cmd.env(k, v),
        };
    }
    let function = AgentProcess::start(cmd, Duration::from_secs(900)).await;
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(async {
        checks(&function, &bench.model, &tools, &files).await;
        // Issue 28: an AG-UI client's own tool, called by the model and run by the client.
        client_tool_checks::a_client_tool_round_trip(function.base_url(), &bench.model).await;
        let client = Client::new(function.base_url(), target_auth());
        // Issue 27: the card, the popup at the real provider, the pending call run as the
        // user with the token from the DynamoDB vault; forged and replayed callbacks refused.
        let mut browser = Browser::new(PUBLIC, function.base_url());
        oauth_flow::a_user_connects_and_the_call_runs_as_them(&client, &mut browser, &api, &oauth)
            .await;
        // The same through the playground (`runway playground` in front of the function), in
        // Chromium: the popup at the function's public URL, the card's Continue.
        let (_playground, page) = playground_proxy(function.base_url(), &target_auth()).await;
        let at = Playground {
            page: &page,
            headers: &[],
            public: (PUBLIC, function.base_url()),
            resumed_by: "continue",
        };
        oauth_flow::a_person_connects_through_the_playground(&at, &client, &api, &oauth).await;
        an_mcp_server_with_its_own_authorization(&client, &oauth, &desk, &desk_log, &bench.model)
            .await;
        bench.check(&client).await;
    }))
    .await;
    function.stop().await;
    bench.stop().await;
    desk.stop().await;
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}

/// Issue 27, `[[mcp]] auth = "oauth"` on Lambda: the stand-in's call ends with the card
/// (provider `desk`); runway found the OAuth server from the MCP server's metadata and
/// registered itself once (kept in the DynamoDB table); after the popup the pending call runs
/// and the server's tool runs as the user, with a token whose audience is that server.
async fn an_mcp_server_with_its_own_authorization(
    client: &Client,
    oauth: &str,
    desk: &McpServerProcess,
    log: &std::path::Path,
    model: &ScriptedServer,
) {
    let thread = fresh_id();
    let body = |resume: Option<&str>| {
        let mut b = json!({
            "protocolVersion": "1",
            "runId": fresh_id(),
            "threadId": thread,
            "agentId": AGENT_ID,
            "workspaceId": WORKSPACE_ID,
            "userId": "dana",
            "input": if resume.is_some() { "" } else { "My desk orders?" },
        });
        if let Some(d) = resume {
            b["resume"] = json!({"interruptId": "x", "decision": d});
        }
        b
    };
    let t = client.turn(&body(None)).await;
    let last = t.last();
    let card = &last["outcome"]["interrupts"][0];
    assert_eq!(card["kind"], "authorization", "{:?}", t.frames);
    assert_eq!(card["provider"], "desk");
    assert_eq!(registrations(oauth).await, 1, "registered once");
    let mut browser = Browser::new(PUBLIC, client.base());
    let back = browser
        .authorize(card["authorizeUrl"].as_str().unwrap(), "dana", false)
        .await;
    let (status, page) = browser.callback(&back).await;
    assert_eq!(status, 200, "{page}");
    let t = client.turn(&body(Some("authorized"))).await;
    assert_eq!(t.text(), "Your desk orders.", "{:?}", t.frames);
    let calls = model.chat_completions();
    let result = &calls.last().unwrap()["messages"];
    assert!(
        result.to_string().contains("Orders of dana"),
        "the tool ran as dana: {result}"
    );
    let seen = std::fs::read_to_string(log).unwrap_or_default();
    let resource = desk.url();
    assert!(
        !seen.is_empty() && seen.lines().all(|l| l == format!("dana {resource}")),
        "{seen}"
    );
    assert_eq!(registrations(oauth).await, 1, "still one registration");
}
