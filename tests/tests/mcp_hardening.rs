//! The model agent's MCP client under attack (issue 25), through the real `runway serve`: MCP
//! servers scripted in this test that echo the credential they were sent, page their tool list
//! slowly without end, flood a call's event stream with requests of their own, or never
//! acknowledge a cancellation; a workspace's `tools_allowed` over the tools of a real MCP
//! server (official Python SDK); and approval edits naming another tool than the pending call.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use runway_e2e::client::{AGENT_ID, WORKSPACE_ID, fresh_id, run_body};
use runway_e2e::mcp_servers::McpServerProcess;
use runway_e2e::scripted_mcp::{self, accepted_after, event_stream, method_of, tool};
use runway_e2e::scripted_server::{Piece, Reply, ScriptedServer, chunk};
use runway_e2e::{AgentProcess, Client, TurnStream, free_data_dir, runway_binary};
use serde_json::{Value, json};
use tokio::process::Command;

/// The MCP servers' credential (`Authorization: Bearer …`): no 8 characters of it may leave.
const MCP_TOKEN: &str = "mcp-secret-7f3a9c21d4e8b6aa";
/// An HTTP tool's credential.
const HTTP_TOKEN: &str = "http-secret-51c0e9d7a2b4";

struct Served {
    process: AgentProcess,
    client: Client,
    data_dir: PathBuf,
    log: PathBuf,
}

impl Served {
    /// Stops it; returns its log (`RUNWAY_LOG=info`).
    async fn stop(self) -> String {
        self.process.stop().await;
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let _ = std::fs::remove_dir_all(self.data_dir);
        log
    }
}

/// `runway serve` with the model agent at `model`, `settings` on top (`RUNWAY_TOOLS`…), its
/// log captured.
async fn serve(model: &ScriptedServer, settings: &[(&str, String)]) -> Served {
    let data_dir = free_data_dir("mcp-hardening");
    std::fs::create_dir_all(&data_dir).unwrap();
    let log = data_dir.join("stderr.log");
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(r#"exec "$0" serve --listen 127.0.0.1:0 --data-dir "$1" 2>"$2""#)
        .arg(runway_binary())
        .arg(&data_dir)
        .arg(&log)
        .env("RUNWAY_AGENT", "model")
        .env("RUNWAY_MODEL_BASE_URL", format!("{}/v1", model.base_url))
        .env("RUNWAY_MODEL", "test-model")
        .env("RUNWAY_TURN_DEADLINE_SECS", "30")
        .env("RUNWAY_HEARTBEAT_SECS", "1")
        .env("RUNWAY_LOG", "info")
        .env("MCP_TOKEN", MCP_TOKEN)
        .env("HTTP_TOKEN", HTTP_TOKEN)
        .env_remove("RUNWAY_TOOLS_FILE")
        .env_remove("RUNWAY_TOOLS")
        .env_remove("RUNWAY_WORKERS")
        .env_remove("RUNWAY_WORKERS_FILE")
        .env_remove("RUNWAY_AUTH_HEADERS")
        .env_remove("RUNWAY_MODEL_API_KEY")
        .env_remove("RUNWAY_SYSTEM_PROMPT");
    for (k, v) in settings {
        cmd.env(k, v);
    }
    let process = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let client = Client::new(process.base_url(), vec![]);
    Served {
        process,
        client,
        data_dir,
        log,
    }
}

/// A tool call the model makes: id, tool, arguments.
type Call = (&'static str, &'static str, &'static str);

/// A model that, for a user message saying `input`, calls `calls` (id, tool, arguments); after
/// tool results it says "Done."; to anything else "Hello.".
async fn model_calling(script: Vec<(&'static str, Vec<Call>)>) -> ScriptedServer {
    ScriptedServer::start(move |r| {
        let body = r.json();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or(Value::Null);
        let say =
            |text: &str| Reply::sse(&[chunk::role(), chunk::text(text), chunk::finish("stop")]);
        if last["role"] == "tool" {
            return say("Done.");
        }
        let input = last["content"].as_str().unwrap_or_default();
        match script.iter().find(|(said, _)| *said == input) {
            Some((_, calls)) => {
                let mut chunks = vec![chunk::role()];
                for (i, (id, name, args)) in calls.iter().enumerate() {
                    chunks.push(chunk::tool_start(i as u32, id, name, args));
                }
                chunks.push(chunk::finish("tool_calls"));
                Reply::sse(&chunks)
            }
            None => say("Hello."),
        }
    })
    .await
}

fn outcome(t: &TurnStream) -> Value {
    let last = t.last();
    assert_eq!(last["type"], "RUN_FINISHED", "{:?}", t.frames);
    last["outcome"].clone()
}

/// The tool results of a model request, by call id.
fn tool_results(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn result_of(request: &Value, id: &str) -> String {
    tool_results(request)
        .into_iter()
        .find(|(i, _)| i == id)
        .map(|(_, c)| c)
        .unwrap_or_else(|| panic!("no result for {id}: {request}"))
}

/// Every 8-character piece of `secret` found in `text`.
fn pieces_of(secret: &str, text: &str) -> Vec<String> {
    (0..=secret.len() - 8)
        .map(|i| &secret[i..i + 8])
        .filter(|p| text.contains(p))
        .map(str::to_owned)
        .collect()
}

/// Finding 1: a server's 401 body echoing the bare token, one with the token where the old
/// 300-byte cut fell, a JSON-RPC error message carrying it, a tool list and a result with it
/// (where the 8 KiB result cut falls), and an HTTP tool's result the same: no 8 characters of
/// either token reach the model provider's requests (the system prompt's "unavailable" notes,
/// the tools offered, the tool results), the frames, or the log.
#[tokio::test]
async fn no_piece_of_a_servers_token_leaves_by_any_path() {
    let deny = scripted_mcp::start(|_, _| {
        Some(Reply {
            status: 401,
            headers: vec![("content-type".into(), "text/plain".into())],
            pieces: vec![Piece::Data(format!("invalid token {MCP_TOKEN}"))],
        })
    })
    .await;
    let cut = scripted_mcp::start(|_, _| {
        Some(Reply {
            status: 401,
            headers: vec![("content-type".into(), "text/plain".into())],
            pieces: vec![Piece::Data(format!("{}{MCP_TOKEN}", "x".repeat(290)))],
        })
    })
    .await;
    let rpc = scripted_mcp::start(|method, m| {
        let id = &m["id"];
        match method {
            // The list echoes the token too, in a description and a schema.
            "tools/list" => Some(scripted_mcp::result(
                id,
                json!({"tools": [
                    {"name": "lookup", "description": format!("Uses {MCP_TOKEN}"),
                     "inputSchema": {"type": "object", "properties": {
                         "key": {"type": "string", "default": MCP_TOKEN}}}},
                    tool("big"),
                ]}),
            )),
            "tools/call" if m["params"]["name"] == "lookup" => Some(scripted_mcp::error(
                id,
                -32602,
                &format!("bad credentials {MCP_TOKEN} for lookup"),
            )),
            "tools/call" => Some(scripted_mcp::result(
                id,
                json!({"content": [{"type": "text",
                                    "text": format!("{}{MCP_TOKEN}", "y".repeat(8180))}]}),
            )),
            _ => None,
        }
    })
    .await;
    let api = ScriptedServer::start(|_| Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/plain".into())],
        pieces: vec![Piece::Data(format!("{}{HTTP_TOKEN}", "z".repeat(8180)))],
    })
    .await;
    let model = model_calling(vec![(
        "go",
        vec![
            ("call_lookup", "rpc_lookup", "{}"),
            ("call_big", "rpc_big", "{}"),
            ("call_http", "echo_http", "{}"),
        ],
    )])
    .await;
    let header = r#"headers = { Authorization = "Bearer ${MCP_TOKEN}" }"#;
    let tools = format!(
        r#"
[[tools]]
name = "echo_http"
method = "GET"
url = "{api}/echo"
headers = {{ X-Token = "Bearer ${{HTTP_TOKEN}}" }}

[[mcp]]
name = "deny"
url = "{deny}/mcp"
{header}

[[mcp]]
name = "cut"
url = "{cut}/mcp"
{header}

[[mcp]]
name = "rpc"
url = "{rpc}/mcp"
{header}
"#,
        api = api.base_url,
        deny = deny.base_url,
        cut = cut.base_url,
        rpc = rpc.base_url,
    );
    let s = serve(&model, &[("RUNWAY_TOOLS", tools)]).await;
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "go"))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert_eq!(t.text(), "Done.");
    let log = s.stop().await;

    // The servers did get the token, and echoed it.
    let sent = rpc.requests();
    assert_eq!(
        sent[0].header("authorization"),
        Some(format!("Bearer {MCP_TOKEN}").as_str())
    );
    let requests = model.chat_completions();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("MCP server \"deny\" are unavailable")
            && system.contains("MCP server \"cut\" are unavailable")
            && system.contains("HTTP 401"),
        "{system}"
    );
    let offered = requests[0]["tools"].to_string();
    assert!(
        offered.contains("Uses <redacted>") && offered.contains("rpc_big"),
        "{offered}"
    );
    let lookup = result_of(&requests[1], "call_lookup");
    assert!(
        lookup.starts_with("Error: the tool could not be called (the server refused the request: bad credentials <redacted>"),
        "{lookup}"
    );
    assert!(result_of(&requests[1], "call_big").starts_with("yyyy"));
    assert!(result_of(&requests[1], "call_http").starts_with("zzzz"));
    assert!(log.contains("MCP server unavailable"), "{log}");
    assert!(log.contains("MCP tool call failed"), "{log}");

    let to_model: String = requests.iter().map(Value::to_string).collect();
    let frames: String = t.frames.iter().map(Value::to_string).collect();
    for (what, text) in [
        ("the model", &to_model),
        ("the frames", &frames),
        ("the log", &log),
    ] {
        for secret in [MCP_TOKEN, HTTP_TOKEN] {
            let found = pieces_of(secret, text);
            assert!(found.is_empty(), "{what} carry {found:?} of {secret}");
        }
    }
}

/// Finding 2: a workspace limited to `["get_weather", "orders_lookup_order"]` is offered
/// those two of a real MCP server's tools and the HTTP tools, and a call of another MCP tool is
/// refused before it reaches the server. (Naming an MCP tool there no longer refuses start-up:
/// the workers file below is accepted.)
#[tokio::test]
async fn a_workspaces_tools_allowed_covers_mcp_tools() {
    let cancel_log = free_data_dir("mcp-hardening-orders").join("cancelled.log");
    let orders = McpServerProcess::orders(true, &cancel_log).await;
    let weather = ScriptedServer::start(|_| Reply::json(&json!({"summary": "sunny"}))).await;
    let model = model_calling(vec![(
        "go",
        vec![
            ("call_lookup", "orders_lookup_order", r#"{"order":"DH-1"}"#),
            ("call_delete", "orders_delete_order", r#"{"order":"DH-1"}"#),
        ],
    )])
    .await;
    let workers = format!(
        r#"
[defaults]
agent = "model"
base_url = "{model}/v1"
model = "test-model"

[workers."{AGENT_ID}"]
name = "Order desk"
tools = '''
[[tools]]
name = "get_weather"
method = "GET"
url = "{weather}/now"

[[tools]]
name = "create_note"
method = "POST"
url = "{weather}/notes"

[[mcp]]
name = "orders"
url = "{orders}"
'''

[workspaces."{WORKSPACE_ID}"]
tools_allowed = ["get_weather", "orders_lookup_order"]
"#,
        model = model.base_url,
        weather = weather.base_url,
        orders = orders.url(),
    );
    let s = serve(&model, &[("RUNWAY_WORKERS", workers)]).await;
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "go"))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    s.stop().await;
    orders.stop().await;
    let _ = std::fs::remove_dir_all(cancel_log.parent().unwrap());

    let requests = model.chat_completions();
    let mut offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .expect("tools offered")
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    offered.sort_unstable();
    assert_eq!(offered, ["get_weather", "orders_lookup_order"]);
    assert!(result_of(&requests[1], "call_lookup").contains("Order DH-1 left the warehouse"));
    assert_eq!(
        result_of(&requests[1], "call_delete"),
        "Error: there is no tool named \"orders_delete_order\"."
    );
}

/// Finding 3: a server whose every `tools/list` page takes 1 s and names a next one, under
/// `timeout = 2`: the list (session set-up and every page) gets 2 s in all, and the model is
/// called at once after, told the server is unavailable (it was called after 20 s).
#[tokio::test]
async fn a_slow_endless_tool_list_gets_the_servers_timeout_in_all() {
    let pages =
        scripted_mcp::start(|method, m| {
            (method == "tools/list").then(|| {
            let page: u64 = m["params"]["cursor"]
                .as_str()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            let mut reply = scripted_mcp::result(
                &m["id"],
                json!({"tools": [tool(&format!("t{page}"))], "nextCursor": (page + 1).to_string()}),
            );
            reply.pieces.insert(0, Piece::HeadPause(Duration::from_secs(1)));
            reply
        })
        })
        .await;
    let model = model_calling(vec![]).await;
    let tools = format!(
        "[[mcp]]\nname = \"pages\"\nurl = \"{}/mcp\"\ntimeout = 2\n",
        pages.base_url
    );
    let s = serve(&model, &[("RUNWAY_TOOLS", tools)]).await;
    let started = Instant::now();
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "hi"))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    s.stop().await;
    let first_model_call = model.requests()[0].at.duration_since(started);
    assert!(
        first_model_call < Duration::from_secs(4),
        "the model was first called {first_model_call:?} in"
    );
    let listed = pages
        .requests()
        .iter()
        .filter(|r| method_of(r).as_deref() == Some("tools/list"))
        .count();
    assert!(listed <= 3, "{listed} pages asked for");
    let system = model.chat_completions()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains("MCP server \"pages\" are unavailable"),
        "{system}"
    );
}

/// Finding 4: a call whose event stream carries 8 requests of the server's (sampling,
/// elicitation, roots…) before its result, and whose answers the server never acknowledges,
/// under `timeout = 3`: all 8 are refused at once ("method not found"), together, and the call
/// ends within its timeout (it took 40 s).
#[tokio::test]
async fn a_servers_own_requests_are_refused_at_once_together_within_the_timeout() {
    let methods = [
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
        "sampling/createMessage",
        "elicitation/create",
    ];
    let asks = scripted_mcp::start(move |method, m| match method {
        "tools/list" => Some(scripted_mcp::result(
            &m["id"],
            json!({"tools": [tool("ask")]}),
        )),
        "tools/call" => {
            let mut messages: Vec<Value> = methods
                .iter()
                .enumerate()
                .map(|(i, method)| {
                    json!({"jsonrpc": "2.0", "id": format!("srv-{i}"), "method": method,
                           "params": {}})
                })
                .collect();
            messages.push(json!({"jsonrpc": "2.0", "id": m["id"], "result": {
                "content": [{"type": "text", "text": "asked"}]}}));
            Some(event_stream(&messages, Duration::ZERO))
        }
        // Answers to its requests: never acknowledged in time.
        "" => Some(accepted_after(Duration::from_secs(30))),
        _ => None,
    })
    .await;
    let model = model_calling(vec![("go", vec![("call_ask", "asks_ask", "{}")])]).await;
    let tools = format!(
        "[[mcp]]\nname = \"asks\"\nurl = \"{}/mcp\"\ntimeout = 3\n",
        asks.base_url
    );
    let s = serve(&model, &[("RUNWAY_TOOLS", tools)]).await;
    let started = Instant::now();
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "go"))
        .await;
    let took = started.elapsed();
    assert_eq!(outcome(&t), json!({"type": "success"}));
    s.stop().await;
    assert!(took < Duration::from_secs(8), "the turn took {took:?}");
    assert_eq!(result_of(&model.chat_completions()[1], "call_ask"), "asked");
    let seen = asks.requests();
    let call_at = seen
        .iter()
        .find(|r| method_of(r).as_deref() == Some("tools/call"))
        .expect("called")
        .at;
    let answers: Vec<_> = seen.iter().filter(|r| method_of(r).is_none()).collect();
    assert_eq!(answers.len(), 8, "{answers:?}");
    for a in &answers {
        let body = a.json();
        assert_eq!(body["error"]["code"], -32601, "{body}");
        assert!(
            a.at.duration_since(call_at) < Duration::from_secs(1),
            "an answer went out {:?} after the call",
            a.at.duration_since(call_at)
        );
    }
}

/// Finding 5: a cancellation the server never acknowledges (a call past its 1 s timeout is
/// cancelled) is waited for at most 2 s, and dropped: never sent again, and never ahead of
/// the next call (which waited 5 s behind it).
#[tokio::test]
async fn an_unacknowledged_cancellation_is_dropped_and_never_delays_a_call() {
    let slow = scripted_mcp::start(|method, m| match method {
        "tools/list" => Some(scripted_mcp::result(
            &m["id"],
            json!({"tools": [tool("hang"), tool("ok")]}),
        )),
        "tools/call" if m["params"]["name"] == "hang" => Some(Reply::stream(vec![
            Piece::Data(": working\n\n".into()),
            Piece::Pause(Duration::from_secs(30)),
        ])),
        "tools/call" => Some(scripted_mcp::result(
            &m["id"],
            json!({"content": [{"type": "text", "text": "fine"}]}),
        )),
        "notifications/cancelled" => Some(accepted_after(Duration::from_secs(30))),
        _ => None,
    })
    .await;
    let model = model_calling(vec![
        ("hang", vec![("call_hang", "slow_hang", "{}")]),
        ("ok", vec![("call_ok", "slow_ok", "{}")]),
    ])
    .await;
    let tools = format!(
        "[[mcp]]\nname = \"slow\"\nurl = \"{}/mcp\"\ntimeout = 1\n",
        slow.base_url
    );
    let s = serve(&model, &[("RUNWAY_TOOLS", tools)]).await;
    let started = Instant::now();
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "hang"))
        .await;
    let took = started.elapsed();
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert!(
        took < Duration::from_secs(5),
        "the first turn took {took:?}"
    );
    assert_eq!(
        result_of(&model.chat_completions()[1], "call_hang"),
        "Error: the tool did not answer within 1 s and was cancelled."
    );

    let started = Instant::now();
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "ok"))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    let ok_at = slow
        .requests()
        .iter()
        .find(|r| r.json()["params"]["name"] == "ok")
        .expect("ok called")
        .at
        .duration_since(started);
    assert!(
        ok_at < Duration::from_secs(1),
        "the call went out {ok_at:?} in"
    );
    s.stop().await;
    let cancels = slow
        .requests()
        .iter()
        .filter(|r| method_of(r).as_deref() == Some("notifications/cancelled"))
        .count();
    assert_eq!(cancels, 1, "the cancellation was sent again");
}

/// Finding 6 (MCP tools): an edit naming `ops_restart` while `ops_wipe` waits, by the call's
/// id or without one, is refused: the question is asked again and nothing runs.
#[tokio::test]
async fn an_edit_naming_another_mcp_tool_than_the_pending_call_runs_nothing() {
    let ops = scripted_mcp::start(|method, m| match method {
        "tools/list" => Some(scripted_mcp::result(
            &m["id"],
            json!({"tools": [tool("wipe"), tool("restart")]}),
        )),
        _ => None,
    })
    .await;
    let model = model_calling(vec![(
        "wipe it",
        vec![("call_wipe", "ops_wipe", r#"{"disk":"a"}"#)],
    )])
    .await;
    let tools = format!(
        "[[mcp]]\nname = \"ops\"\nurl = \"{}/mcp\"\napproval = true\n",
        ops.base_url
    );
    let s = serve(&model, &[("RUNWAY_TOOLS", tools)]).await;
    let thread = fresh_id();
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &thread, "wipe it"))
        .await;
    let o = outcome(&t);
    assert_eq!(o["interrupts"][0]["items"][0]["name"], "ops_wipe", "{o}");
    for edit in [
        json!({"id": "call_wipe", "name": "ops_restart", "arguments": {"disk": "b"}}),
        json!({"name": "ops_restart", "arguments": {"disk": "b"}}),
    ] {
        let mut body = run_body(&fresh_id(), &thread, "");
        body["resume"] = json!({"decision": "edit", "editedAction": edit});
        let t = s.client.turn(&body).await;
        let o = outcome(&t);
        assert_eq!(o["type"], "interrupt", "{edit}: {o}");
        assert_eq!(o["interrupts"][0]["items"][0]["name"], "ops_wipe");
        assert_eq!(
            o["interrupts"][0]["items"][0]["arguments"],
            json!({"disk": "a"})
        );
        assert!(t.text().starts_with("Nothing was run"), "{}", t.text());
    }
    s.stop().await;
    let called = ops
        .requests()
        .iter()
        .filter(|r| method_of(r).as_deref() == Some("tools/call"))
        .count();
    assert_eq!(called, 0, "a tool ran");
}
