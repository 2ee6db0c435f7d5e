//! The MCP server with its own authorization (`[[mcp]] auth = "oauth"`, issue 27) as the
//! end-to-end tests of every runtime drive it: the server `orders`
//! ([`McpServerProcess::oauth`](crate::mcp_servers::McpServerProcess::oauth)), a model that
//! calls its tool or its stand-in, and a user who connects in the popup at the OAuth server of
//! [`crate::oauth_flow`].

use serde_json::{Value, json};

use crate::client::{AGENT_ID, WORKSPACE_ID, fresh_id};
use crate::oauth_flow::Browser;
use crate::scripted_server::{Recorded, Reply, chunk};
use crate::{Client, TurnStream};

/// The card's links and the OAuth server's redirect name this (Console wants https and a
/// domain); the tests map it onto the agent's local address, as a reverse proxy would.
pub const PUBLIC: &str = "https://agent.runway.test";

/// A turn's body: "What are my orders?" in a new thread, or the answer to the card.
pub fn body(thread: &str, user: Option<&str>, resume: Option<&str>) -> Value {
    let mut b = json!({
        "protocolVersion": "1",
        "runId": fresh_id(),
        "threadId": thread,
        "agentId": AGENT_ID,
        "workspaceId": WORKSPACE_ID,
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

/// The card's link, if the turn ended with the `authorization` card (for the MCP server
/// `orders`: its name is the card's provider).
pub fn card(t: &TurnStream) -> Option<String> {
    let last = t.last();
    let i = &last["outcome"]["interrupts"][0];
    (i["kind"] == "authorization").then(|| {
        assert_eq!(i["provider"], "orders");
        let link = i["authorizeUrl"].as_str().unwrap().to_owned();
        assert!(link.starts_with(&format!("{PUBLIC}/connect/")), "{link}");
        link
    })
}

/// The model: for a new request, a call of `orders_my_orders` if offered, else of the stand-in
/// `orders_connect_account`; after the stand-in's result, the tool if offered now; after any
/// other result, a sentence quoting it.
pub fn orders_model(r: &Recorded) -> Reply {
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
        if result.contains("is connected") && offered("orders_my_orders") {
            return call("orders_my_orders");
        }
        return Reply::sse(&[
            chunk::role(),
            chunk::text(&format!("Tool said: {result}")),
            chunk::finish("stop"),
        ]);
    }
    if offered("orders_my_orders") {
        call("orders_my_orders")
    } else {
        call("orders_connect_account")
    }
}

/// `user` gets the card, connects in the popup, and the pending call runs as them.
pub async fn connects(client: &Client, user: &str) {
    let thread = fresh_id();
    let t = client.turn(&body(&thread, Some(user), None)).await;
    let link = card(&t).unwrap_or_else(|| panic!("{user}'s card: {:?}", t.frames));
    let mut browser = Browser::new(PUBLIC, client.base());
    let back = browser.authorize(&link, user, false).await;
    let (status, page) = browser.callback(&back).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("orders is connected"), "{page}");
    let t = client
        .turn(&body(&thread, Some(user), Some("authorized")))
        .await;
    assert_eq!(t.last()["outcome"]["type"], "success", "{:?}", t.frames);
    assert!(
        t.text().contains(&format!("Orders of {user}")),
        "{}",
        t.text()
    );
}

/// Whether the OAuth server still says the last token the MCP server at `mcp_url` took for
/// `subject` is active (RFC 7662; the server asks, as the resource server holding it).
pub async fn still_active(mcp_url: &str, subject: &str) -> bool {
    let base = mcp_url
        .strip_suffix("/mcp")
        .expect("an MCP endpoint at /mcp");
    let answer: Value = reqwest::get(format!("{base}/test/active/{subject}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["active"].as_bool().expect("{\"active\": bool}")
}
