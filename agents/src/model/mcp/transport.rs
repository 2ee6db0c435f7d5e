//! One JSON-RPC message to an MCP server over Streamable HTTP, and the answer to it: a `POST`
//! whose reply is a JSON body, an event stream (`text/event-stream`, read until the answer
//! arrives) or `202 Accepted` for a notification.
//!
//! Requests go through the turn's [`Http`], so they end by the turn's deadline and when the
//! turn ends. The client behind it must not follow redirects: a redirect is refused here, so
//! the configured headers reach the configured origin only.

use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use rmcp::model::{ErrorData, JsonObject, RequestId};
use runway_core::http_client::{Http, HttpError};
use serde_json::Value;

use super::server_config::McpServer;

/// Largest JSON body, or event stream, read from an MCP server for one request (an image
/// result is base64 inside JSON; progress notifications share a stream with the answer).
pub(crate) const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;
/// Requests from the server answered per reply at most (the rest go unanswered).
const MAX_SERVER_REQUESTS: usize = 8;
/// Longest error body quoted back.
const MAX_ERROR_DETAIL_BYTES: usize = 300;

/// A message as the server sends it, any of the four JSON-RPC shapes: results stay JSON
/// objects until the caller, who knows what it asked, reads them as the type it expects;
/// requests and notifications are told by method name. (Reading them as rmcp's
/// `ServerJsonRpcMessage` would compile the deserializer of every request, notification and
/// result of the protocol into the Worker.)
#[derive(Debug, serde::Deserialize)]
struct ServerMessage {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    result: Option<JsonObject>,
    #[serde(default)]
    error: Option<ErrorData>,
}

/// The session a message belongs to (none before `initialize` has been answered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionHeaders {
    /// `Mcp-Session-Id`, if the server gave one.
    pub id: Option<String>,
    /// The protocol revision agreed in `initialize` (`MCP-Protocol-Version`).
    pub protocol_version: String,
}

/// The server's answer to a request.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The result object, or the JSON-RPC error.
    pub result: Result<JsonObject, ErrorData>,
    /// `Mcp-Session-Id` of the reply, if any.
    pub session_id: Option<String>,
    /// The server said its tool list changed (`notifications/tools/list_changed`) on the way.
    pub tools_changed: bool,
    /// Requests the server sent us on the way (id, method): they get an answer afterwards.
    pub server_requests: Vec<(RequestId, String)>,
}

/// Why a message got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TransportError {
    /// `404` to a request with a session id: the server forgot the session (it restarted, or
    /// it expired).
    #[error("the server no longer knows the session (HTTP 404)")]
    SessionGone,
    /// The request failed (connection, timeout, the turn ended).
    #[error("{0}")]
    Http(HttpError),
    /// An error status.
    #[error("the server answered HTTP {status}{detail}")]
    Status {
        /// The status code.
        status: u16,
        /// `: ` and the start of the body, if any.
        detail: String,
    },
    /// A redirect: not followed.
    #[error(
        "the server answered with a redirect (HTTP {0}), which is not followed: configured \
         headers go to the configured origin only"
    )]
    Redirect(u16),
    /// Not an MCP answer.
    #[error("the server's answer is not valid MCP: {0}")]
    Protocol(String),
}

impl From<HttpError> for TransportError {
    fn from(e: HttpError) -> Self {
        Self::Http(e)
    }
}

/// Sends `message`; with `awaited`, reads the reply until the answer to that request id.
/// `Ok(None)`: the server accepted a notification or response (`202`).
pub(crate) async fn send(
    http: &Http,
    server: &McpServer,
    session: Option<&SessionHeaders>,
    message: &Value,
    awaited: Option<&RequestId>,
    timeout: Duration,
) -> Result<Option<Answer>, TransportError> {
    let mut request = http
        .post(server.url.as_str())
        .timeout(timeout)
        .header("accept", "application/json, text/event-stream")
        .json(message);
    if let Some(s) = session {
        request = request.header("mcp-protocol-version", s.protocol_version.as_str());
        if let Some(id) = &s.id {
            request = request.header("mcp-session-id", id.as_str());
        }
    }
    for (name, value) in &server.headers {
        request = request.header(name.clone(), value.expose());
    }
    let response = request.send().await?;
    let status = response.status();
    if status.is_redirection() {
        return Err(TransportError::Redirect(status.as_u16()));
    }
    if status.as_u16() == 404 && session.is_some_and(|s| s.id.is_some()) {
        return Err(TransportError::SessionGone);
    }
    if !status.is_success() {
        let body = response.bytes_limited(64 * 1024).await.unwrap_or_default();
        return Err(TransportError::Status {
            status: status.as_u16(),
            detail: error_detail(&body, server),
        });
    }
    let session_id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(awaited) = awaited else {
        return Ok(None);
    };
    if status.as_u16() == 202 {
        return Err(TransportError::Protocol(
            "a request was answered 202 Accepted, with no result".into(),
        ));
    }
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut answer = Answer {
        result: Err(ErrorData::internal_error("no answer", None)),
        session_id,
        tools_changed: false,
        server_requests: Vec::new(),
    };
    if content_type.starts_with("text/event-stream") {
        let bounded = bounded(response.into_body(), MAX_ANSWER_BYTES);
        let mut events = Box::pin(sse_stream::SseStream::from_bytes_stream(bounded));
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| match e {
                sse_stream::Error::Body(b) => match b.downcast::<HttpError>() {
                    Ok(h) => TransportError::Http(*h),
                    Err(b) => TransportError::Protocol(b.to_string()),
                },
                other => TransportError::Protocol(format!("bad event stream: {other}")),
            })?;
            let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                continue; // a priming event, a comment, a keep-alive
            };
            if take(&mut answer, parse(data.as_bytes())?, awaited) {
                return Ok(Some(answer));
            }
        }
        Err(TransportError::Protocol(
            "the event stream ended before the answer".into(),
        ))
    } else if content_type.starts_with("application/json") {
        let body = response
            .bytes_limited(MAX_ANSWER_BYTES)
            .await
            .map_err(TransportError::Http)?;
        if take(&mut answer, parse(&body)?, awaited) {
            Ok(Some(answer))
        } else {
            Err(TransportError::Protocol(
                "the JSON body is not the answer to the request".into(),
            ))
        }
    } else {
        Err(TransportError::Protocol(format!(
            "unexpected content type {content_type:?}"
        )))
    }
}

/// Notes `message` in `answer`; true if it is the awaited answer.
fn take(answer: &mut Answer, message: ServerMessage, awaited: &RequestId) -> bool {
    match message {
        ServerMessage {
            method: Some(method),
            id: Some(id),
            ..
        } => {
            if answer.server_requests.len() < MAX_SERVER_REQUESTS {
                answer.server_requests.push((id, method));
            }
            false
        }
        ServerMessage {
            method: Some(method),
            ..
        } => {
            if method == "notifications/tools/list_changed" {
                answer.tools_changed = true;
            }
            false
        }
        ServerMessage {
            id: Some(id),
            error: Some(error),
            ..
        } if &id == awaited => {
            answer.result = Err(error);
            true
        }
        ServerMessage {
            id: Some(id),
            result: Some(result),
            ..
        } if &id == awaited => {
            answer.result = Ok(result);
            true
        }
        _ => false,
    }
}

fn parse(bytes: &[u8]) -> Result<ServerMessage, TransportError> {
    serde_json::from_slice(bytes)
        .map_err(|e| TransportError::Protocol(format!("not a JSON-RPC message ({e})")))
}

/// The start of an error body, without the values of the configured headers (a server may
/// echo what it was sent).
fn error_detail(body: &[u8], server: &McpServer) -> String {
    let text = String::from_utf8_lossy(body);
    let mut text = crate::model::transcript::truncate(text.trim(), MAX_ERROR_DETAIL_BYTES);
    for (_, value) in &server.headers {
        if !value.expose().is_empty() {
            text = text.replace(value.expose(), "<redacted>");
        }
    }
    if text.is_empty() {
        text
    } else {
        format!(": {text}")
    }
}

/// `body`, ending with [`HttpError::BodyTooLarge`] once more than `limit` bytes came.
fn bounded(
    body: impl Stream<Item = Result<Bytes, HttpError>> + 'static,
    limit: usize,
) -> impl Stream<Item = Result<Bytes, HttpError>> + 'static {
    body.scan((0usize, false), move |(read, ended), chunk| {
        if *ended {
            return futures::future::ready(None);
        }
        let item = match chunk {
            Ok(c) if *read + c.len() > limit => Err(HttpError::BodyTooLarge { limit }),
            Ok(c) => {
                *read += c.len();
                Ok(c)
            }
            Err(e) => Err(e),
        };
        // An error is the stream's last item.
        *ended = item.is_err();
        futures::future::ready(Some(item))
    })
}
