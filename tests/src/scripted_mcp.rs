//! A scripted MCP server (Streamable HTTP) on loopback, for what the real SDK servers never
//! do: echo a credential, page a tool list slowly without end, flood a call's event stream
//! with requests of their own, never acknowledge a cancellation.
//!
//! [`start`] answers `initialize` (one session), acknowledges notifications and responses
//! with `202`, lists no tools and refuses other methods, unless the test's handler answers
//! first.

use serde_json::{Value, json};

use crate::scripted_server::{Piece, Recorded, Reply, ScriptedServer};

/// The session id the server gives.
pub const SESSION: &str = "scripted-session-1";

/// The JSON-RPC method of a recorded request (`None`: a response of the client's).
pub fn method_of(r: &Recorded) -> Option<String> {
    r.json()["method"].as_str().map(str::to_owned)
}

/// A `200` JSON body answering request `id` with `result`.
pub fn result(id: &Value, result: Value) -> Reply {
    Reply::json(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// A `200` JSON body answering request `id` with a JSON-RPC error.
pub fn error(id: &Value, code: i64, message: &str) -> Reply {
    Reply::json(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

/// `202 Accepted`, sent only after `pause`.
pub fn accepted_after(pause: std::time::Duration) -> Reply {
    Reply {
        status: 202,
        headers: vec![],
        pieces: vec![Piece::HeadPause(pause)],
    }
}

/// A `tools/list` entry taking any object.
pub fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("The {name} tool"),
           "inputSchema": {"type": "object"}})
}

/// An event stream of `messages`, each as one `data:` event, with `pause` before each.
pub fn event_stream(messages: &[Value], pause: std::time::Duration) -> Reply {
    let mut pieces = Vec::new();
    for m in messages {
        if !pause.is_zero() {
            pieces.push(Piece::Pause(pause));
        }
        pieces.push(Piece::Data(format!("event: message\ndata: {m}\n\n")));
    }
    Reply::stream(pieces)
}

/// Starts the server. `handler` sees each request's JSON-RPC method (`""` for a response of
/// the client's) and body first; `None` leaves it to the defaults.
pub async fn start(
    handler: impl Fn(&str, &Value) -> Option<Reply> + Send + Sync + 'static,
) -> ScriptedServer {
    ScriptedServer::start(move |r| {
        let message = r.json();
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        if let Some(reply) = handler(&method, &message) {
            return reply;
        }
        let id = &message["id"];
        match method.as_str() {
            "initialize" => {
                let mut reply = result(
                    id,
                    json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "scripted", "version": "1"}}),
                );
                reply
                    .headers
                    .push(("mcp-session-id".into(), SESSION.into()));
                reply
            }
            _ if id.is_null() || method.is_empty() => accepted_after(Default::default()),
            "tools/list" => result(id, json!({"tools": []})),
            other => error(id, -32601, &format!("no method {other}")),
        }
    })
    .await
}
