//! The model agent (`RUNWAY_AGENT=model`) on Workers, under `wrangler dev`: the Worker calls an
//! OpenAI-compatible endpoint in this test (loopback, replaying chunk sequences) with `fetch`,
//! streams the text as it arrives, runs parallel HTTP tools, pauses for approval and goes on
//! after `resume`, retries a 429 that came before the first token, and leaves an AG-UI client's
//! own tool for the client (issue 28); and it uses the tools
//! of real MCP servers; and a tool acting as the user who connected an account (with plain
//! HTTP, and through the playground's card in headless Chromium).
//!
//! Ignored by a plain `cargo test`: run by `scripts/test-cloudflare.sh` (see `cloudflare.rs`).

use std::time::Duration;

use runway_e2e::client::{fresh_id, run_body};
use runway_e2e::scripted_server::{PIXEL_PNG, Piece, Reply, ScriptedServer, chunk};
use runway_e2e::{AgentProcess, Client, TurnStream, start_local_worker, target_auth};
use runway_e2e::{approval_checks, client_tool_checks};
use serde_json::{Value, json};

const KEY: &str = "sk-worker-test-3b81";

/// The tools file as an operator writes it: double-quoted TOML strings and a `${NAME}` header
/// filled from the Worker's settings (`infra/cloudflare/local` hands settings to `wrangler dev`
/// unchanged: no quote escaped twice, no `${…}` expanded on the way).
const TOOLS: &str = r#"
[[tools]]
name = "get_weather"
description = "Current weather in a city"
parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }
method = "GET"
url = "TOOLS_BASE/now?city={city}"
headers = { X-Token = "Bearer ${RUNWAY_TEST_TOOL_TOKEN}" }

[[tools]]
name = "issue_refund"
description = "Refund an order"
parameters = { type = "object", properties = { order = { type = "string" }, amount = { type = "number" } }, required = ["order", "amount"] }
method = "POST"
url = "TOOLS_BASE/refunds"
approval = true
"#;

const TOOL_TOKEN: &str = "tooltok-cf-5d2e";
/// A prompt with what a dotenv file would mangle: quotes, a backslash, `$NAME` and `${NAME}`.
const SYSTEM: &str = r#"Be brief. Prices are in "$USD" \ say ${price} as written.
Second line."#;

async fn start_worker(model: &ScriptedServer, tools: &ScriptedServer) -> AgentProcess {
    start_local_worker([
        ("RUNWAY_TURN_DEADLINE_SECS", "30".to_owned()),
        ("RUNWAY_AGENT", "model".to_owned()),
        ("RUNWAY_MODEL_BASE_URL", format!("{}/v1", model.base_url)),
        ("RUNWAY_MODEL", "test-model".to_owned()),
        ("RUNWAY_MODEL_API_KEY", KEY.to_owned()),
        ("RUNWAY_SYSTEM_PROMPT", SYSTEM.to_owned()),
        ("RUNWAY_TEST_TOOL_TOKEN", TOOL_TOKEN.to_owned()),
        ("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK", "1".to_owned()),
        ("RUNWAY_TOOLS", TOOLS.replace("TOOLS_BASE", &tools.base_url)),
    ])
    .await
}

fn of_type<'a>(t: &'a TurnStream, ty: &str) -> Vec<&'a Value> {
    t.frames.iter().filter(|f| f["type"] == ty).collect()
}

fn data(c: Value) -> Piece {
    Piece::Data(format!("data: {c}\n\n"))
}

async fn checks(
    worker: &AgentProcess,
    model: &ScriptedServer,
    tools: &ScriptedServer,
    files: &ScriptedServer,
) {
    let client = Client::new(worker.base_url(), target_auth());

    // 1. Text streams as the model sends it (after a 429 with Retry-After, retried).
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
        at[1] - at[0] >= Duration::from_millis(1300),
        "not streamed: {at:?}"
    );
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2, "the 429 was retried once");
    assert!(reqs[1].at - reqs[0].at >= Duration::from_millis(950));
    assert_eq!(
        reqs[1].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    // The prompt arrived byte for byte: quotes, backslash, `$` and newline untouched.
    let system = reqs[1].json()["messages"][0]["content"].clone();
    assert!(
        system
            .as_str()
            .unwrap()
            .starts_with(&format!("{SYSTEM}\n\n")),
        "{system}"
    );

    // 2. Parallel tool calls: one runs, one waits for approval; approve goes on.
    let thread = fresh_id();
    let t = client
        .turn(&run_body(&fresh_id(), &thread, "Weather, and refund DH-1"))
        .await;
    let last = t.last();
    assert_eq!(last["outcome"]["type"], "interrupt", "{:?}", t.frames);
    assert_eq!(last["outcome"]["interrupts"][0]["kind"], "review");
    assert_eq!(
        last["outcome"]["interrupts"][0]["items"][0]["arguments"],
        json!({"order": "DH-1", "amount": 20})
    );
    assert_eq!(of_type(&t, "TOOL_CALL_START").len(), 2);
    assert_eq!(of_type(&t, "TOOL_CALL_RESULT").len(), 1);
    let calls = tools.requests();
    assert_eq!(calls.len(), 1, "only the weather ran");
    assert_eq!(calls[0].target, "/now?city=Hu%E1%BA%BF");
    let token = format!("Bearer {TOOL_TOKEN}");
    assert_eq!(calls[0].header("x-token"), Some(token.as_str()));

    let mut resume = run_body(&fresh_id(), &thread, "");
    resume["resume"] = json!({"decision": "approve"});
    let t = client.turn(&resume).await;
    assert_eq!(
        t.last()["outcome"],
        json!({"type": "success"}),
        "{:?}",
        t.frames
    );
    assert_eq!(t.text(), "Refunded.");
    let calls = tools.requests();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].json(), json!({"order": "DH-1", "amount": 20}));
    let last_request = model.requests().last().unwrap().json();
    let roles: Vec<&str> = last_request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "tool"]);

    // 3. Attachments: a text file and an image reach the model (typed from their bytes); a
    //    redirect to a private address and a private-address link are refused, and said so.
    let base = &files.base_url;
    let mut body = run_body(&fresh_id(), &fresh_id(), "What are these?");
    body["attachments"] = json!([
        {"id": "t", "url": format!("{base}/notes.txt?sig=1"), "name": "x.png", "mime": "image/png", "sizeBytes": 1},
        {"id": "p", "url": format!("{base}/pixel.png?sig=2"), "name": "x.txt", "mime": "text/plain", "sizeBytes": 1},
        {"id": "h", "url": format!("{base}/hop?sig=3"), "name": "h", "mime": "text/plain", "sizeBytes": 1},
        {"id": "x", "url": "https://10.0.0.7/x?sig=4", "name": "x", "mime": "text/plain", "sizeBytes": 1},
    ]);
    let t = client.turn(&body).await;
    assert_eq!(t.last()["type"], "RUN_FINISHED", "{:?}", t.frames);
    let shown = t.text();
    assert_eq!(
        shown
            .matches("could not be used: the link points to a private or reserved address")
            .count(),
        2,
        "{shown}"
    );
    assert!(shown.ends_with("Got the files."), "{shown}");
    let request = model.requests().last().unwrap().json();
    let parts = request["messages"][1]["content"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(parts[0]["text"], "What are these?");
    assert!(
        parts[1]["text"]
            .as_str()
            .unwrap()
            .ends_with("Order DH-1: paid.\n"),
        "{parts:?}"
    );
    assert!(
        parts[2]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{parts:?}"
    );
    let hop_and_private: Vec<&str> = parts[3..]
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(hop_and_private.len(), 2, "{parts:?}");

    // 4. Issue 20: an edit lands on the call it names; ten approvals at once run a call once
    //    (claimed in the thread's Durable Object).
    approval_checks::an_edit_lands_on_the_call_it_names(&client, tools).await;
    approval_checks::concurrent_approvals_run_the_call_once(&client, tools).await;

    // 5. Issue 28: an AG-UI client's own tool, called by the model and run by the client.
    client_tool_checks::a_client_tool_round_trip(worker.base_url(), model).await;
}

/// `/notes.txt`, `/pixel.png`, and `/hop` (a redirect to a private address).
async fn file_server() -> ScriptedServer {
    ScriptedServer::start(|r| {
        let file = |piece: Piece| Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/octet-stream".into())],
            pieces: vec![piece],
        };
        match r.target.split('?').next().unwrap_or_default() {
            "/notes.txt" => file(Piece::Data("Order DH-1: paid.\n".into())),
            "/pixel.png" => file(Piece::Bytes(PIXEL_PNG.to_vec())),
            "/hop" => Reply {
                status: 302,
                headers: vec![("location".into(), "https://169.254.169.254/latest".into())],
                pieces: vec![],
            },
            _ => Reply::status(404, &[], &json!({"error": "no such file"})),
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs wrangler and the Workers toolchain: run scripts/test-cloudflare.sh"]
async fn the_model_agent_on_workers_streams_runs_tools_and_asks_for_approval() {
    let script = std::sync::Mutex::new(std::collections::VecDeque::from(vec![
        Reply::status(
            429,
            &[("retry-after", "1")],
            &json!({"error": {"message": "slow down"}}),
        ),
        Reply::stream(vec![
            data(chunk::role()),
            data(chunk::text("It left ")),
            Piece::Pause(Duration::from_millis(1500)),
            data(chunk::text("Hà Nội today.")),
            data(chunk::finish("stop")),
            data(chunk::usage()),
            Piece::Data("data: [DONE]\n\n".into()),
        ]),
        Reply::sse(&[
            chunk::role(),
            chunk::tool_start(0, "call_w", "get_weather", "{\"city\":"),
            chunk::tool_start(1, "call_r", "issue_refund", "{\"order\":\"DH-1\","),
            chunk::tool_args(0, "\"Huế\"}"),
            chunk::tool_args(1, "\"amount\":20}"),
            chunk::finish("tool_calls"),
        ]),
        Reply::sse(&[
            chunk::role(),
            chunk::text("Refunded."),
            chunk::finish("stop"),
        ]),
        Reply::sse(&[
            chunk::role(),
            chunk::text("Got the files."),
            chunk::finish("stop"),
        ]),
    ]));
    // The approval checks' and the client tool check's requests are answered by their own
    // model; the rest from the script.
    let model = ScriptedServer::start(move |r| {
        let own = approval_checks::approvals_model(r)
            .or_else(|| client_tool_checks::client_tool_model(r));
        own.unwrap_or_else(|| {
            script.lock().unwrap().pop_front().unwrap_or_else(|| {
                Reply::status(500, &[], &json!({"error": {"message": "script exhausted"}}))
            })
        })
    })
    .await;
    let tools = ScriptedServer::start(|r| {
        if r.target.starts_with("/now") {
            Reply::json(&json!({"summary": "sunny"}))
        } else {
            Reply::json(&json!({"refunded": true}))
        }
    })
    .await;
    let files = file_server().await;
    let worker = start_worker(&model, &tools).await;
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(checks(
        &worker, &model, &tools, &files,
    )))
    .await;
    worker.stop().await;
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}

/// MCP tools in the Worker under `wrangler dev`, through `fetch`: every tool of the reference
/// everything server and the Python SDK server's approval, restart, timeout and cancellation
/// cases, with a server down and one redirecting (`redirect: "manual"`: the header stays home).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs wrangler, the Workers toolchain and scripts/setup-mcp.sh: run scripts/test-cloudflare.sh"]
async fn the_model_agent_on_workers_uses_mcp_servers() {
    let mut bench = runway_e2e::mcp_scenario::McpBench::start().await;
    let worker = start_local_worker(
        [
            ("RUNWAY_TURN_DEADLINE_SECS", "30".to_owned()),
            ("RUNWAY_AGENT", "model".to_owned()),
        ]
        .into_iter()
        .chain(bench.settings()),
    )
    .await;
    let client = Client::new(worker.base_url(), target_auth());
    let result =
        futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(bench.check(&client))).await;
    worker.stop().await;
    bench.stop().await;
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}

/// A workers file of model workers on Workers (`RUNWAY_WORKERS`, key from the Worker's
/// settings): each worker its prompt and HTTP tools, a workspace's model override, a token
/// budget crossed mid-turn, and `/usage` equal to what the model reported
/// (tests/src/model_workers.rs, the scenario `runway serve` runs too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs wrangler and the Workers toolchain: run scripts/test-cloudflare.sh"]
async fn a_workers_file_of_model_workers_on_workers() {
    use runway_e2e::model_workers::ModelWorkers;
    let bench = ModelWorkers::start().await;
    let worker = start_local_worker([
        ("RUNWAY_TURN_DEADLINE_SECS", "30".to_owned()),
        ("RUNWAY_WORKERS", bench.workers_file()),
        ("RUNWAY_MODEL_API_KEY", ModelWorkers::KEY.to_owned()),
    ])
    .await;
    let client = Client::new(worker.base_url(), target_auth());
    let result =
        futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(bench.check(&client))).await;
    worker.stop().await;
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}

/// Connected accounts on Workers (issue 27): the model agent's tool with `auth = "acme"`, the
/// real OAuth server of [`runway_e2e::oauth_flow`], the `RUNWAY_VAULT_KEY` secret, connect
/// states and the vault in Durable Objects; forged and replayed callbacks refused; and a person
/// connecting through `runway playground`'s card in headless Chromium.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs wrangler, the Workers toolchain, scripts/setup-oauth.sh and scripts/setup-playground.sh: run scripts/test-cloudflare.sh"]
async fn a_tool_on_workers_acts_as_the_user_who_connected() {
    use runway_e2e::oauth_flow::{
        self, Browser, CLIENT_SECRET, CLIENT_SECRET_SETTING, Playground, VAULT_KEY, free_port,
        playground_proxy,
    };
    // The card's links and the redirect URI name this; the test maps it onto `wrangler dev`.
    const PUBLIC: &str = "https://agent.runway.test";
    let oauth_port = free_port();
    let oauth = format!("http://127.0.0.1:{oauth_port}");
    let _oauth_server = oauth_flow::oauth_server(oauth_port, &format!("{PUBLIC}/callback")).await;
    let model = ScriptedServer::start(oauth_flow::orders_model).await;
    let api = ScriptedServer::start(oauth_flow::orders_api).await;
    let worker = start_local_worker([
        ("RUNWAY_TURN_DEADLINE_SECS", "30".to_owned()),
        ("RUNWAY_AGENT", "model".to_owned()),
        ("RUNWAY_MODEL_BASE_URL", format!("{}/v1", model.base_url)),
        ("RUNWAY_MODEL", "test-model".to_owned()),
        ("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK", "1".to_owned()),
        ("RUNWAY_TOOLS", oauth_flow::tools(&api.base_url, &oauth)),
        (CLIENT_SECRET_SETTING, CLIENT_SECRET.to_owned()),
        ("RUNWAY_VAULT_KEY", VAULT_KEY.to_owned()),
        ("RUNWAY_PUBLIC_URL", PUBLIC.to_owned()),
    ])
    .await;
    let client = Client::new(worker.base_url(), target_auth());
    let mut browser = Browser::new(PUBLIC, worker.base_url());
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(async {
        oauth_flow::a_user_connects_and_the_call_runs_as_them(&client, &mut browser, &api, &oauth)
            .await;
        // The same through the playground (`runway playground` in front of the Worker), in
        // Chromium: the popup at the Worker's public URL, the card's Continue.
        let (_playground, page) = playground_proxy(worker.base_url(), &target_auth()).await;
        let at = Playground {
            page: &page,
            headers: &[],
            public: (PUBLIC, worker.base_url()),
            resumed_by: "continue",
        };
        oauth_flow::a_person_connects_through_the_playground(&at, &client, &api, &oauth).await;
    }))
    .await;
    worker.stop().await;
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}

/// `[[mcp]] auth = "oauth"` on Workers (issue 27): an MCP server with its own authorization
/// (the Python SDK's, tokens checked by introspection at the real OAuth server, only those
/// whose audience is the server taken). The Worker finds the OAuth server from the server's
/// metadata, registers itself once (kept in the vault's Durable Object, the store's action
/// claim as the lease), and the pending call runs as each user who connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs wrangler, the Workers toolchain, scripts/setup-oauth.sh and scripts/setup-mcp.sh: run scripts/test-cloudflare.sh"]
async fn an_mcp_server_with_its_own_authorization_on_workers() {
    use runway_e2e::mcp_oauth::{PUBLIC, body, card, connects, orders_model};
    use runway_e2e::mcp_servers::McpServerProcess;
    use runway_e2e::oauth_flow::{
        CLIENT_SECRET, VAULT_KEY, free_port, oauth_server, registrations,
    };
    let oauth_port = free_port();
    let oauth = format!("http://127.0.0.1:{oauth_port}");
    let _oauth_server = oauth_server(oauth_port, &format!("{PUBLIC}/callback")).await;
    let work = runway_e2e::free_data_dir("cf-mcp-oauth");
    std::fs::create_dir_all(&work).unwrap();
    let log = work.join("tokens.log");
    let mcp = McpServerProcess::oauth(&oauth, CLIENT_SECRET, &log).await;
    let model = ScriptedServer::start(orders_model).await;
    let worker = start_local_worker([
        ("RUNWAY_TURN_DEADLINE_SECS", "30".to_owned()),
        ("RUNWAY_AGENT", "model".to_owned()),
        ("RUNWAY_MODEL_BASE_URL", format!("{}/v1", model.base_url)),
        ("RUNWAY_MODEL", "test-model".to_owned()),
        (
            "RUNWAY_TOOLS",
            format!(
                "[[mcp]]\nname = \"orders\"\nurl = \"{}\"\nauth = \"oauth\"\n",
                mcp.url()
            ),
        ),
        ("RUNWAY_VAULT_KEY", VAULT_KEY.to_owned()),
        ("RUNWAY_PUBLIC_URL", PUBLIC.to_owned()),
    ])
    .await;
    let client = Client::new(worker.base_url(), target_auth());
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(async {
        let t = client.turn(&body(&fresh_id(), None, None)).await;
        assert!(card(&t).is_none(), "{:?}", t.frames);
        assert!(t.text().contains("needs a signed-in user"), "{}", t.text());
        connects(&client, "alice").await;
        connects(&client, "bob").await;
        assert_eq!(registrations(&oauth).await, 1, "one registration");
        let seen = std::fs::read_to_string(&log).unwrap_or_default();
        let resource = mcp.url();
        assert!(
            seen.lines().any(|l| l == format!("alice {resource}"))
                && seen.lines().any(|l| l == format!("bob {resource}"))
                && seen
                    .lines()
                    .all(|l| l == format!("alice {resource}") || l == format!("bob {resource}")),
            "{seen}"
        );
    }))
    .await;
    worker.stop().await;
    mcp.stop().await;
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}
