//! One JSON-RPC message to an MCP server over Streamable HTTP, and the answer to it: a `POST`
//! whose reply is a JSON body, an event stream (`text/event-stream`, read until the answer
//! arrives) or `202 Accepted` for a notification; and the `DELETE` that ends a session.
//!
//! Requests go through the turn's [`Http`], so they end by the turn's deadline and when the
//! turn ends. The client behind it must not follow redirects: a redirect is refused here, so
//! the configured headers, and the user's token of a server with `auth`, reach the configured
//! origin only.

use std::time::Duration;

use bytes::Bytes;
use futures::future::Either;
use futures::stream::FuturesUnordered;
use futures::{Stream, StreamExt};
use rmcp::model::{ErrorCode, ErrorData, JsonObject, RequestId};
use runway_core::AccessToken;
use runway_core::http_client::{Http, HttpError, HttpResponse};
use serde_json::{Value, json};

use super::server_config::McpServer;

/// Largest JSON body, or event stream, read from an MCP server for one request (an image
/// result is base64 inside JSON; progress notifications share a stream with the answer).
pub(crate) const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;
/// Requests from the server answered per reply at most (the rest go unanswered).
const MAX_SERVER_REQUESTS: usize = 8;
/// Most of an error body kept. It is quoted back (redacted first, then cut shorter) by the
/// caller, which knows every secret.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

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
}

/// What reading an event stream found in one message.
enum Taken {
    /// The awaited answer: reading stops.
    Answer,
    /// A request of the server's (sampling, elicitation, roots, ping…), to be answered now.
    ServerRequest(RequestId, String),
    /// Anything else.
    Other,
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
        /// `: ` and the body, if any (up to 64 KiB, not redacted: what quotes it redacts it
        /// before cutting it shorter).
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
///
/// A request the server sends in the reply's event stream (sampling, elicitation, roots: no
/// such capability was declared; `ping`) is answered at once, all of them concurrently and
/// while the stream is read: a server that waits for the answers before sending its result
/// gets them, and one that never acknowledges them costs at most `timeout` in all.
///
/// `bearer`, the user's token (a server with `auth`), goes as `Authorization: Bearer …` on
/// every request of the exchange, in place of a configured `Authorization` header.
pub(crate) async fn send(
    http: &Http,
    server: &McpServer,
    bearer: Option<&AccessToken>,
    session: Option<&SessionHeaders>,
    message: &Value,
    awaited: Option<&RequestId>,
    timeout: Duration,
) -> Result<Option<Answer>, TransportError> {
    let started_left = http.time_left();
    let response = post(http, server, bearer, session, message, timeout).await?;
    let status = response.status();
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
    };
    if content_type.starts_with("text/event-stream") {
        // What is left of `timeout`, for an answer to the server sent now.
        let left = || {
            let spent = match (started_left, http.time_left()) {
                (Some(a), Some(b)) => a.saturating_sub(b),
                _ => Duration::ZERO,
            };
            timeout.saturating_sub(spent)
        };
        let bounded = bounded(response.into_body(), MAX_ANSWER_BYTES);
        let mut events = Box::pin(sse_stream::SseStream::from_bytes_stream(bounded));
        let mut replies = FuturesUnordered::new();
        let mut answered = 0usize;
        let read = loop {
            let next = if replies.is_empty() {
                events.next().await
            } else {
                match futures::future::select(events.next(), replies.next()).await {
                    Either::Left((event, _)) => event,
                    Either::Right(_) => continue, // one answer to the server went out
                }
            };
            let Some(event) = next else {
                break Err(TransportError::Protocol(
                    "the event stream ended before the answer".into(),
                ));
            };
            let event = match event {
                Ok(e) => e,
                Err(sse_stream::Error::Body(b)) => match b.downcast::<HttpError>() {
                    Ok(h) => break Err(TransportError::Http(*h)),
                    Err(b) => break Err(TransportError::Protocol(b.to_string())),
                },
                Err(other) => {
                    break Err(TransportError::Protocol(format!(
                        "bad event stream: {other}"
                    )));
                }
            };
            let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                continue; // a priming event, a comment, a keep-alive
            };
            let parsed = match parse(data.as_bytes()) {
                Ok(m) => m,
                Err(e) => break Err(e),
            };
            match take(&mut answer, parsed, awaited) {
                Taken::Answer => break Ok(()),
                Taken::ServerRequest(id, method) if answered < MAX_SERVER_REQUESTS => {
                    answered += 1;
                    replies.push(refuse(http, server, bearer, session, id, method, left()));
                }
                Taken::ServerRequest(..) | Taken::Other => {}
            }
        };
        // The answers to the server still on their way, each within the call's time.
        while replies.next().await.is_some() {}
        read.map(|()| Some(answer))
    } else if content_type.starts_with("application/json") {
        let body = response
            .bytes_limited(MAX_ANSWER_BYTES)
            .await
            .map_err(TransportError::Http)?;
        if matches!(take(&mut answer, parse(&body)?, awaited), Taken::Answer) {
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

/// POSTs `message` with the session's and the configured headers; an error status, a
/// redirect or a forgotten session is an error.
async fn post(
    http: &Http,
    server: &McpServer,
    bearer: Option<&AccessToken>,
    session: Option<&SessionHeaders>,
    message: &Value,
    timeout: Duration,
) -> Result<HttpResponse, TransportError> {
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
        if bearer.is_none() || name != http::header::AUTHORIZATION {
            request = request.header(name.clone(), value.expose());
        }
    }
    if let Some(token) = bearer {
        request = request.bearer_auth(token.expose());
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
        let body = response
            .bytes_limited(MAX_ERROR_BODY_BYTES)
            .await
            .unwrap_or_default();
        return Err(TransportError::Status {
            status: status.as_u16(),
            detail: error_detail(&body),
        });
    }
    Ok(response)
}

/// Ends `session` (Streamable HTTP: a client that no longer needs a session SHOULD send
/// `DELETE` to the MCP endpoint with its `Mcp-Session-Id`), with the session's, the
/// configured and `bearer`'s headers as every request of the session, within `timeout`. The
/// answer's status: `405` means the server does not let clients end sessions, `404` that it
/// had already forgotten this one. The body is not read.
pub(crate) async fn terminate(
    http: &Http,
    server: &McpServer,
    bearer: Option<&AccessToken>,
    session: &SessionHeaders,
    timeout: Duration,
) -> Result<u16, TransportError> {
    let Some(id) = &session.id else {
        // A server that gave no session id keeps no session to end.
        return Ok(200);
    };
    let mut request = http
        .delete(server.url.as_str())
        .timeout(timeout)
        .header("mcp-session-id", id.as_str())
        .header("mcp-protocol-version", session.protocol_version.as_str());
    for (name, value) in &server.headers {
        if bearer.is_none() || name != http::header::AUTHORIZATION {
            request = request.header(name.clone(), value.expose());
        }
    }
    if let Some(token) = bearer {
        request = request.bearer_auth(token.expose());
    }
    let status = request.send().await?.status();
    if status.is_redirection() {
        return Err(TransportError::Redirect(status.as_u16()));
    }
    Ok(status.as_u16())
}

/// Answers the server's request `id`: `ping` with an empty result, anything else (sampling,
/// elicitation, roots: capabilities this client did not declare) with "method not found".
async fn refuse(
    http: &Http,
    server: &McpServer,
    bearer: Option<&AccessToken>,
    session: Option<&SessionHeaders>,
    id: RequestId,
    method: String,
    timeout: Duration,
) {
    let reply = if method == "ping" {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    } else {
        let error = ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method, None);
        json!({"jsonrpc": "2.0", "id": id, "error": error})
    };
    // The error is not logged: its text may quote the server, which may echo a secret.
    if post(http, server, bearer, session, &reply, timeout)
        .await
        .is_err()
    {
        tracing::debug!(server = %server.name, "an answer to the MCP server's request was not taken");
    }
}

/// Notes `message` in `answer`, and says what it was.
fn take(answer: &mut Answer, message: ServerMessage, awaited: &RequestId) -> Taken {
    match message {
        ServerMessage {
            method: Some(method),
            id: Some(id),
            ..
        } => Taken::ServerRequest(id, method),
        ServerMessage {
            method: Some(method),
            ..
        } => {
            if method == "notifications/tools/list_changed" {
                answer.tools_changed = true;
            }
            Taken::Other
        }
        ServerMessage {
            id: Some(id),
            error: Some(error),
            ..
        } if &id == awaited => {
            answer.result = Err(error);
            Taken::Answer
        }
        ServerMessage {
            id: Some(id),
            result: Some(result),
            ..
        } if &id == awaited => {
            answer.result = Ok(result);
            Taken::Answer
        }
        _ => Taken::Other,
    }
}

fn parse(bytes: &[u8]) -> Result<ServerMessage, TransportError> {
    serde_json::from_slice(bytes)
        .map_err(|e| TransportError::Protocol(format!("not a JSON-RPC message ({e})")))
}

/// `: ` and the error body, trimmed (empty without one). Neither redacted nor cut here: the
/// caller redacts every secret first, then cuts (a cut made first could leave a secret's
/// start, which no longer matches it).
fn error_detail(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        String::new()
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
