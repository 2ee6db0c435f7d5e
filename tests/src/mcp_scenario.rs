//! The model agent with MCP tools, the same on every runtime (`runway serve`, Lambda, Workers):
//! a scripted model calls every tool of the reference "everything" server and the tools of
//! `tests/mcp/orders_server.py` (official Python SDK, JSON answers), through approval
//! (approve, edit, reject), a server restart between turns, a call that outlives its timeout
//! (and is cancelled on the server), a server that is down and one that redirects elsewhere.
//!
//! [`McpBench::start`] starts the servers and the model; the runtime under test is started
//! with [`McpBench::settings`]; [`McpBench::check`] plays the turns.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{Client, TurnStream, fresh_id, run_body};
use crate::mcp_servers::{McpServerProcess, free_port};
use crate::process::free_data_dir;
use crate::scripted_server::{Reply, ScriptedServer, chunk};

/// The value of the `${RUNWAY_TEST_MCP_TOKEN}` header the orders server must receive.
pub const MCP_TOKEN: &str = "mcp-tok-5e1f09";

/// Every tool of server-everything 2026.8.31 the agent offers (all it lists to a client
/// without sampling, elicitation or roots, less `simulate-research-query`, which may only
/// run as a task: runway does not implement tasks), with the arguments the model uses.
pub const EVERYTHING_CALLS: [(&str, &str); 12] = [
    ("echo", r#"{"message":"hi from runway"}"#),
    ("get-sum", r#"{"a":2,"b":3}"#),
    ("get-tiny-image", "{}"),
    (
        "get-annotated-message",
        r#"{"messageType":"success","includeImage":true}"#,
    ),
    ("get-env", "{}"),
    ("get-resource-links", r#"{"count":2}"#),
    (
        "get-resource-reference",
        r#"{"resourceType":"Text","resourceId":1}"#,
    ),
    ("get-structured-content", r#"{"location":"Chicago"}"#),
    (
        "gzip-file-as-resource",
        r#"{"name":"hello.txt.gz","data":"data:text/plain;base64,aGVsbG8gcnVud2F5","outputType":"resource"}"#,
    ),
    ("toggle-simulated-logging", "{}"),
    ("toggle-subscriber-updates", "{}"),
    (
        "trigger-long-running-operation",
        r#"{"duration":1,"steps":2}"#,
    ),
];

/// The servers, the model, and where the orders server notes cancelled calls.
pub struct McpBench {
    /// The OpenAI-compatible endpoint, replaying the scenario's answers in order.
    pub model: ScriptedServer,
    everything: McpServerProcess,
    orders: McpServerProcess,
    /// Answers every request with a redirect to `elsewhere`.
    redirect: ScriptedServer,
    elsewhere: ScriptedServer,
    down_port: u16,
    cancel_log: PathBuf,
}

fn calls(calls: &[(&str, &str, &str)]) -> Reply {
    let mut chunks = vec![chunk::role()];
    for (i, (id, name, args)) in calls.iter().enumerate() {
        chunks.push(chunk::tool_start(i as u32, id, name, args));
    }
    chunks.push(chunk::finish("tool_calls"));
    Reply::sse(&chunks)
}

fn as_refs(r: &[(String, String, String)]) -> Vec<(&str, &str, &str)> {
    r.iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect()
}

fn answer(text: &str) -> Reply {
    Reply::sse(&[chunk::role(), chunk::text(text), chunk::finish("stop")])
}

impl McpBench {
    /// Starts everything the scenario needs, on loopback.
    pub async fn start() -> Self {
        Self::start_after(Vec::new()).await
    }

    /// [`McpBench::start`], with a model that answers with `first` before the scenario's own
    /// answers (and answers the approval checks' requests whenever they come): a runtime's
    /// other model checks share one start of it (and its build).
    pub async fn start_after(first: Vec<Reply>) -> Self {
        let every: Vec<(String, String, String)> = EVERYTHING_CALLS
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                (
                    format!("call_e{i}"),
                    format!("every_{name}"),
                    (*args).to_owned(),
                )
            })
            .collect();
        let delete = |id: &str, order: &str| {
            calls(&[(
                id,
                "orders_delete_order",
                &format!(r#"{{"order":"{order}"}}"#),
            )])
        };
        let mut script = first;
        script.extend(vec![
            // 1. Text and image results, an error result, a header, in parallel.
            calls(&[
                ("call_e0", "every_echo", EVERYTHING_CALLS[0].1),
                ("call_e1", "every_get-sum", EVERYTHING_CALLS[1].1),
                ("call_e2", "every_get-tiny-image", "{}"),
                ("call_broken", "orders_broken", "{}"),
                ("call_lookup", "orders_lookup_order", r#"{"order":"DH-1"}"#),
            ]),
            answer("Looked everything up."),
            // 2. Every other tool of the everything server, five at a time.
            calls(&as_refs(&every[3..8])),
            calls(&as_refs(&every[8..])),
            answer("Used every tool."),
            // 3. Approval: approve, edit, reject.
            delete("call_d2", "DH-2"),
            answer("Deleted DH-2."),
            delete("call_d3", "DH-3"),
            answer("Deleted DH-4 instead."),
            delete("call_d5", "DH-5"),
            answer("Kept DH-5."),
            // 4. After the orders server restarted.
            calls(&[("call_after", "orders_lookup_order", r#"{"order":"DH-6"}"#)]),
            answer("Found DH-6."),
            // 5. A call slower than the server's timeout.
            calls(&[("call_slow", "orders_slow", r#"{"seconds":30}"#)]),
            answer("It took too long."),
        ]);
        // The approval checks', the client tool check's and the playground's connect flow's
        // requests (`crate::approval_checks`, `crate::client_tool_checks`,
        // `crate::oauth_flow::a_person_connects_through_the_playground`, which a runtime's other
        // model checks may run first) are answered by their own model; the rest in order.
        let script = std::sync::Mutex::new(std::collections::VecDeque::from(script));
        let model = ScriptedServer::start(move |r| {
            let own = crate::approval_checks::approvals_model(r)
                .or_else(|| crate::client_tool_checks::client_tool_model(r))
                .or_else(|| crate::oauth_flow::playground_orders_model(r));
            own.unwrap_or_else(|| {
                script.lock().unwrap().pop_front().unwrap_or_else(|| {
                    Reply::status(500, &[], &json!({"error": {"message": "script exhausted"}}))
                })
            })
        })
        .await;
        let elsewhere = ScriptedServer::start(|_| {
            Reply::json(&json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
        })
        .await;
        let target = format!("{}/mcp", elsewhere.base_url);
        let redirect = ScriptedServer::start(move |_| Reply {
            status: 307,
            headers: vec![("location".into(), target.clone())],
            pieces: vec![],
        })
        .await;
        let cancel_log = free_data_dir("mcp-cancel").join("cancelled.log");
        Self {
            model,
            everything: McpServerProcess::everything().await,
            orders: McpServerProcess::orders(true, &cancel_log).await,
            redirect,
            elsewhere,
            down_port: free_port(),
            cancel_log,
        }
    }

    /// What the runtime under test is started with, besides `RUNWAY_AGENT=model` and a turn
    /// deadline of 30 s: the model, the tools file, and the header's setting.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        let tools = format!(
            r#"
[[mcp]]
name = "every"
url = "{every}"

[[mcp]]
name = "orders"
url = "{orders}"
headers = {{ X-Token = "Bearer ${{RUNWAY_TEST_MCP_TOKEN}}" }}
tools = ["lookup_order", "delete_order", "slow", "broken"]
approval = ["delete_order"]
timeout = 3

[[mcp]]
name = "down"
url = "http://127.0.0.1:{down}/mcp"

[[mcp]]
name = "hop"
url = "{hop}/mcp"
headers = {{ X-Token = "Bearer ${{RUNWAY_TEST_MCP_TOKEN}}" }}
"#,
            every = self.everything.url(),
            orders = self.orders.url(),
            down = self.down_port,
            hop = self.redirect.base_url,
        );
        vec![
            (
                "RUNWAY_MODEL_BASE_URL",
                format!("{}/v1", self.model.base_url),
            ),
            ("RUNWAY_MODEL", "test-model".into()),
            ("RUNWAY_TOOLS", tools),
            ("RUNWAY_TEST_MCP_TOKEN", MCP_TOKEN.into()),
            // The scenario's replies call five tools at once (the default runs four).
            ("RUNWAY_MAX_PARALLEL_TOOL_CALLS", "5".into()),
        ]
    }

    fn model_calls(&self) -> Vec<Value> {
        self.model.chat_completions()
    }

    /// The tool results the last model request carried, by call id.
    fn last_results(&self) -> HashMap<String, String> {
        let calls = self.model_calls();
        let last = calls.last().expect("the model was called");
        last["messages"]
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

    /// Plays the scenario against the agent behind `client`.
    pub async fn check(&mut self, client: &Client) {
        let earlier = self.model_calls().len();
        // 1. The tool list, text and image results, an error result, the configured header;
        //    the server that is down and the one that redirects are left out, with a note.
        let t = client
            .turn(&run_body(&fresh_id(), &fresh_id(), "Look up DH-1"))
            .await;
        assert_success(&t);
        assert_eq!(t.text(), "Looked everything up.");
        let first = &self.model_calls()[earlier];
        let names: Vec<&str> = first["tools"]
            .as_array()
            .expect("tools sent")
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        for (name, _) in EVERYTHING_CALLS {
            assert!(
                names.contains(&format!("every_{name}").as_str()),
                "{names:?}"
            );
        }
        for name in ["lookup_order", "delete_order", "slow", "broken"] {
            assert!(
                names.contains(&format!("orders_{name}").as_str()),
                "{names:?}"
            );
        }
        let mcp_names = names
            .iter()
            .filter(|n| n.starts_with("every_") || n.starts_with("orders_"))
            .count();
        // Nothing else of theirs, and no tool of the servers that are down or redirect.
        assert_eq!(mcp_names, EVERYTHING_CALLS.len() + 4, "{names:?}");
        assert!(
            !names
                .iter()
                .any(|n| n.starts_with("down_") || n.starts_with("hop_")),
            "{names:?}"
        );
        let system = first["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.contains("The tools of the MCP server \"down\" are unavailable"),
            "{system}"
        );
        assert!(
            system.contains("The tools of the MCP server \"hop\" are unavailable")
                && system.contains("redirect"),
            "{system}"
        );
        assert!(
            self.elsewhere.requests().is_empty(),
            "a redirect was followed: the header went to another origin"
        );
        let r = self.last_results();
        assert!(r["call_e0"].contains("Echo: hi from runway"), "{r:?}");
        assert!(r["call_e1"].contains('5'), "{r:?}");
        assert!(r["call_e2"].contains("[image: image/png"), "{r:?}");
        assert!(
            r["call_broken"].starts_with("Error: the tool reported a failure")
                && r["call_broken"].contains("warehouse database is offline"),
            "{r:?}"
        );
        // The server echoes the header it got; the agent redacts a configured header value
        // (whole) from every tool result, so the echo proves the exact value arrived.
        assert!(r["call_lookup"].contains("token=<redacted>"), "{r:?}");
        assert!(!r["call_lookup"].contains(MCP_TOKEN), "{r:?}");
        let shown: Vec<&Value> = t
            .frames
            .iter()
            .filter(|f| f["type"] == "TOOL_CALL_RESULT")
            .collect();
        assert_eq!(shown.len(), 5, "{:?}", t.frames);

        // 2. Every other tool of the everything server.
        let t = client
            .turn(&run_body(&fresh_id(), &fresh_id(), "Try every tool"))
            .await;
        assert_success(&t);
        assert_eq!(t.text(), "Used every tool.");
        let mut results = HashMap::new();
        for call in self.model_calls().iter().rev().take(2) {
            for m in call["messages"].as_array().unwrap() {
                if m["role"] == "tool" {
                    results.insert(
                        m["tool_call_id"].as_str().unwrap().to_owned(),
                        m["content"].as_str().unwrap().to_owned(),
                    );
                }
            }
        }
        for (i, (name, _)) in EVERYTHING_CALLS.iter().enumerate().skip(3) {
            let result = &results[&format!("call_e{i}")];
            assert!(
                !result.starts_with("Error"),
                "every_{name} failed: {result}"
            );
        }
        assert!(
            results["call_e5"].contains("[resource link:"),
            "{results:?}"
        );
        assert!(results["call_e6"].contains("[resource <"), "{results:?}");
        assert!(results["call_e7"].contains("temperature"), "{results:?}");
        assert!(
            results["call_e8"].contains("application/gzip"),
            "{results:?}"
        );

        // 3. An approval-gated tool: approve runs it, edit runs the edited call, reject runs
        //    nothing.
        for (order, resume, want_text, want_result) in [
            (
                "DH-2",
                json!({"decision": "approve"}),
                "Deleted DH-2.",
                "Order DH-2 deleted.",
            ),
            (
                "DH-3",
                json!({"decision": "edit", "editedAction": {"name": "orders_delete_order",
                       "arguments": {"order": "DH-4"}}}),
                "Deleted DH-4 instead.",
                "Order DH-4 deleted.",
            ),
            (
                "DH-5",
                json!({"decision": "reject"}),
                "Kept DH-5.",
                "The user rejected this call; it was not run.",
            ),
        ] {
            let thread = fresh_id();
            let t = client
                .turn(&run_body(&fresh_id(), &thread, &format!("Delete {order}")))
                .await;
            let last = t.last();
            assert_eq!(last["outcome"]["type"], "interrupt", "{:?}", t.frames);
            let item = &last["outcome"]["interrupts"][0];
            assert_eq!(item["kind"], "review");
            assert_eq!(item["items"][0]["name"], "orders_delete_order");
            assert_eq!(item["items"][0]["arguments"], json!({"order": order}));
            let mut body = run_body(&fresh_id(), &thread, "");
            body["resume"] = resume;
            let t = client.turn(&body).await;
            assert_success(&t);
            assert_eq!(t.text(), want_text);
            let results = self.last_results();
            let call_id = format!("call_d{}", &order[3..]);
            assert_eq!(results[&call_id], want_result, "{results:?}");
        }

        // 4. The orders server restarts: it forgets the session, the agent starts a new one.
        self.orders.restart().await;
        let t = client
            .turn(&run_body(&fresh_id(), &fresh_id(), "Look up DH-6"))
            .await;
        assert_success(&t);
        assert_eq!(t.text(), "Found DH-6.");
        let r = self.last_results();
        assert!(r["call_after"].contains("Order DH-6 left"), "{r:?}");

        // 5. A call slower than the server's 3 s timeout: the model hears so, the turn goes
        //    on, and the server is told to stop (notifications/cancelled).
        let t = client
            .turn(&run_body(&fresh_id(), &fresh_id(), "Something slow"))
            .await;
        assert_success(&t);
        assert_eq!(t.text(), "It took too long.");
        let r = self.last_results();
        assert_eq!(
            r["call_slow"],
            "Error: the tool did not answer within 3 s and was cancelled."
        );
        let mut cancelled = String::new();
        for _ in 0..50 {
            cancelled = std::fs::read_to_string(&self.cancel_log).unwrap_or_default();
            if !cancelled.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(cancelled, "cancelled slow(30.0)\n");
    }

    /// Stops the servers.
    pub async fn stop(self) {
        self.everything.stop().await;
        self.orders.stop().await;
        if let Some(dir) = self.cancel_log.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn assert_success(t: &TurnStream) {
    assert_eq!(
        t.last()["outcome"],
        json!({"type": "success"}),
        "{:?}",
        t.frames
    );
}
