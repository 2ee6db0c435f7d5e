//! [`McpConnection`]: what an agent instance keeps about one MCP server between turns (the
//! session, the tool list and its age, cancellations still owed), and the protocol's steps on
//! top of [`transport::send`]: `initialize` + `notifications/initialized`, `tools/list` page
//! by page, `tools/call`, `notifications/cancelled`, and a new session when the server forgot
//! the old one.
//!
//! Every step is bounded by the server's timeout as a whole ([`Deadline`]): a session's set-up
//! and every page of a tool list share one budget, as a session's set-up and the call do.
//! Cancellations never delay a user's call: those owed are sent alongside the next call and
//! dropped (with a log line) if they fail or are still unsent when it is answered.
//!
//! A live session runway stops using is ended (`DELETE` with its `Mcp-Session-Id`, as the
//! Streamable HTTP transport asks of clients; `405`: the server does not allow it): one
//! `initialize` opened but not used (an unknown protocol revision, `notifications/initialized`
//! not taken), and a person's connection forgotten ([`ending_alongside`]). A session the
//! server forgot (`404`) is not. Sessions are not tied to tokens: a refreshed or reconnected
//! user's token goes on in the same session (servers bind a session to its user, not to one
//! token; one that refuses the new token's user answers `404`, and a new session starts).

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientCapabilities,
    ErrorCode, ErrorData, Implementation, InitializeRequestParams, JsonObject, NumberOrString,
    PaginatedRequestParams, ProtocolVersion, RequestId,
};
use runway_core::AccessToken;
use runway_core::http_client::{Http, HttpError};
use serde::Serialize;
use serde_json::{Value, json};

use super::deadline::Deadline;
use super::server_config::McpServer;
use super::transport::{self, Answer, SessionHeaders, TransportError};
use crate::model::redaction::Redactor;

/// How long a tool list is used before it is asked for again.
pub(crate) const TOOLS_TTL: Duration = Duration::from_secs(300);
/// Pages of `tools/list` read at most (all within the server's timeout).
const MAX_PAGES: usize = 20;
/// Tools of one server kept at most.
pub(crate) const MAX_TOOLS: usize = 256;
/// Largest entry of a tool list kept, as JSON (its schema may take 16 KiB, its description
/// is cut to 1 KiB when offered).
const MAX_TOOL_ENTRY_BYTES: usize = 64 * 1024;
/// Longest wait for a cancellation the server merely acknowledges.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(2);
/// Cancellations owed at most per server; past it the oldest is dropped.
const MAX_OWED_CANCELS: usize = 16;
/// Longest wait for the server to take the end of a session (`DELETE`): also the most the
/// request that pushed a person out can be delayed by it ([`ending_alongside`]).
const END_SESSION_TIMEOUT: Duration = Duration::from_secs(1);

/// Something that stopped an MCP request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum McpError {
    /// The exchange failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The server answered with a JSON-RPC error.
    #[error("the server refused the request: {}", .0.message)]
    Refused(ErrorData),
    /// The server does not speak a protocol revision this client knows.
    #[error("the server speaks MCP {0}, which this client does not support")]
    Version(String),
}

impl McpError {
    /// The turn ended, or its deadline passed: nothing more can be sent in this turn.
    pub(crate) fn turn_over(&self) -> bool {
        matches!(
            self,
            Self::Transport(TransportError::Http(
                HttpError::Cancelled | HttpError::TurnDeadline
            ))
        )
    }

    /// The server answered 401: the credential it was sent is refused.
    pub(crate) fn unauthorized(&self) -> bool {
        matches!(
            self,
            Self::Transport(TransportError::Status { status: 401, .. })
        )
    }

    /// The call's own time ran out.
    pub(crate) fn timed_out(&self) -> bool {
        matches!(
            self,
            Self::Transport(TransportError::Http(
                HttpError::Timeout(_) | HttpError::TurnDeadline
            ))
        )
    }
}

/// The tools a server listed, with the raw entries (fields this client's types drop, such as
/// `execution`, stay readable).
#[derive(Debug, Clone)]
pub(crate) struct ListedTools {
    /// Each tool's entry, as sent.
    pub tools: Vec<JsonObject>,
    /// When they were listed (the runtime's clock, ms).
    pub at_ms: u64,
}

#[derive(Debug, Default)]
struct Cache {
    session: Option<SessionHeaders>,
    tools: Option<Arc<ListedTools>>,
    /// The tool list must be asked for again (`notifications/tools/list_changed`, or a call
    /// to a tool the server no longer has).
    stale: bool,
    /// Calls abandoned without a cancellation reaching the server (the turn ended under
    /// them): sent alongside the next request to this server, if the session is the same.
    /// At most [`MAX_OWED_CANCELS`].
    owed_cancels: VecDeque<(SessionHeaders, RequestId)>,
    /// The user's token the session was last sent with (a server with `auth`): what ending
    /// the session goes with, when the connection is forgotten. Its `Debug` shows no token.
    bearer: Option<AccessToken>,
    next_id: i64,
}

/// One MCP server, as seen by one agent instance across turns.
#[derive(Debug)]
pub(crate) struct McpConnection {
    server: McpServer,
    /// Held while a session is being set up, so parallel calls share one `initialize`.
    setup: futures::lock::Mutex<()>,
    cache: Mutex<Cache>,
}

impl McpConnection {
    pub(crate) fn new(server: McpServer) -> Self {
        Self {
            server,
            setup: futures::lock::Mutex::new(()),
            cache: Mutex::new(Cache::default()),
        }
    }

    /// The server's configuration.
    pub(crate) fn server(&self) -> &McpServer {
        &self.server
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes a cancellation owed for `call`; past [`MAX_OWED_CANCELS`], the oldest is dropped.
    fn owe_cancel(&self, call: (SessionHeaders, RequestId)) {
        let mut c = self.cache();
        if c.owed_cancels.len() >= MAX_OWED_CANCELS
            && let Some((_, id)) = c.owed_cancels.pop_front()
        {
            tracing::info!(server = %self.server.name, request = %id,
                "too many MCP cancellations owed: the oldest is dropped");
        }
        c.owed_cancels.push_back(call);
    }

    fn next_id(&self) -> RequestId {
        let mut c = self.cache();
        c.next_id += 1;
        NumberOrString::Number(c.next_id)
    }

    /// The tool list: the one kept, while younger than [`TOOLS_TTL`] and not stale, else
    /// asked for again: every page (at most [`MAX_PAGES`]) and the session's set-up within
    /// `timeout` in all. Each entry is kept with every secret `redactor` knows taken out (a
    /// server may echo its credential in a name, a description or a schema, which go to the
    /// model). `bearer`: the user's token, for a server with `auth`.
    pub(crate) async fn tools(
        &self,
        http: &Http,
        bearer: Option<&AccessToken>,
        redactor: &Redactor,
        now_ms: u64,
        timeout: Duration,
    ) -> Result<Arc<ListedTools>, McpError> {
        {
            let c = self.cache();
            if let Some(t) = &c.tools
                && !c.stale
                && now_ms.saturating_sub(t.at_ms) < TOOLS_TTL.as_millis() as u64
            {
                return Ok(t.clone());
            }
        }
        let deadline = Deadline::start(http, timeout);
        let mut tools = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let result = self
                .request(http, bearer, &deadline, "tools/list", &params, None)
                .await?;
            if let Some(Value::Array(page)) = result.get("tools") {
                tools.extend(
                    page.iter()
                        .filter_map(|t| redacted_entry(t, redactor))
                        .take(MAX_TOOLS.saturating_sub(tools.len())),
                );
            }
            cursor = result
                .get("nextCursor")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_owned);
            if cursor.is_none() || tools.len() >= MAX_TOOLS {
                break;
            }
        }
        if cursor.is_some() {
            tracing::info!(server = %self.server.name, tools = tools.len(),
                "MCP tool list cut: more than {MAX_PAGES} pages or {MAX_TOOLS} tools");
        }
        let listed = Arc::new(ListedTools {
            tools,
            at_ms: now_ms,
        });
        let mut c = self.cache();
        c.tools = Some(listed.clone());
        c.stale = false;
        Ok(listed)
    }

    /// Calls the server's tool `name` with `arguments`, the session's set-up included within
    /// `timeout`. A call abandoned by its own timeout is cancelled at once
    /// (`notifications/cancelled`, waited for at most 2 s, dropped if it fails); one abandoned
    /// because the turn ended is cancelled alongside the next request to this server.
    /// `bearer`: the user's token, for a server with `auth`.
    pub(crate) async fn call(
        &self,
        http: &Http,
        bearer: Option<&AccessToken>,
        name: &str,
        arguments: JsonObject,
        timeout: Duration,
    ) -> Result<CallToolResult, McpError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = Some(arguments);
        let mut abandoned = AbandonedCall {
            connection: self,
            call: None,
        };
        let deadline = Deadline::start(http, timeout);
        let result = self
            .request(
                http,
                bearer,
                &deadline,
                "tools/call",
                &params,
                Some(&mut abandoned),
            )
            .await;
        match result {
            Ok(object) => {
                abandoned.call = None;
                serde_json::from_value(Value::Object(object)).map_err(|e| {
                    McpError::Transport(TransportError::Protocol(format!(
                        "not a tool result ({e})"
                    )))
                })
            }
            Err(e) => {
                if let McpError::Refused(data) = &e
                    && data.code == ErrorCode::INVALID_PARAMS
                    && data.message.to_ascii_lowercase().contains("tool")
                {
                    // Most likely a tool the server no longer has: list again next time.
                    self.cache().stale = true;
                }
                // Cut by the end of the turn: the drop of `abandoned` leaves the cancellation
                // owed. Cut by its own timeout: cancelled now. Otherwise the server answered,
                // or never got the request.
                if !e.turn_over()
                    && let Some((session, id)) = abandoned.call.take()
                    && e.timed_out()
                {
                    self.cancel(http, bearer, &session, id, "timed out").await;
                }
                Err(e)
            }
        }
    }

    /// Sends one request in the current session (set up first if there is none), once more
    /// in a new session if the server forgot the old one, all within `deadline`. The
    /// cancellations owed in the session go alongside, never ahead of it. `abandoned`, if
    /// given, learns the request's id and session before it is sent.
    async fn request(
        &self,
        http: &Http,
        bearer: Option<&AccessToken>,
        deadline: &Deadline,
        method: &str,
        params: &impl Serialize,
        mut abandoned: Option<&mut AbandonedCall<'_>>,
    ) -> Result<JsonObject, McpError> {
        for attempt in 0..2 {
            let session = self.session(http, bearer, deadline).await?;
            self.note_bearer(bearer);
            let id = self.next_id();
            let message = request_message(&id, method, params);
            if let Some(a) = abandoned.as_deref_mut() {
                a.call = Some((session.clone(), id.clone()));
            }
            let timeout = deadline.next_request(http)?;
            let sent = transport::send(
                http,
                &self.server,
                bearer,
                Some(&session),
                &message,
                Some(&id),
                timeout,
            );
            let sent = self
                .alongside_owed_cancels(http, bearer, &session, sent)
                .await;
            match sent {
                Ok(Some(answer)) => return self.settle(answer),
                Ok(None) => unreachable!("an awaited request is answered or fails"),
                Err(TransportError::SessionGone) if attempt == 0 => {
                    if let Some(a) = abandoned.as_deref_mut() {
                        a.call = None;
                    }
                    tracing::info!(
                        server = %self.server.name,
                        "MCP server forgot the session: starting a new one"
                    );
                    let mut c = self.cache();
                    if c.session.as_ref() == Some(&session) {
                        c.session = None;
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(TransportError::SessionGone.into())
    }

    /// What an answer means: notes a changed tool list. (The server's own requests were
    /// answered while its reply was read.)
    fn settle(&self, answer: Answer) -> Result<JsonObject, McpError> {
        if answer.tools_changed {
            self.cache().stale = true;
        }
        answer.result.map_err(McpError::Refused)
    }

    /// `request`, with the cancellations owed in `session` sent alongside it: they start with
    /// it and end with it. One that fails, or is still unsent when `request` is answered, is
    /// dropped with a log line, never owed again (a cancellation is a courtesy to the server;
    /// the user's call must not wait for it). Those owed in older sessions are dropped: the
    /// server forgot their requests with them.
    async fn alongside_owed_cancels<T>(
        &self,
        http: &Http,
        bearer: Option<&AccessToken>,
        session: &SessionHeaders,
        request: impl Future<Output = T>,
    ) -> T {
        let owed: Vec<RequestId> = {
            let mut c = self.cache();
            std::mem::take(&mut c.owed_cancels)
                .into_iter()
                .filter(|(s, _)| s == session)
                .map(|(_, id)| id)
                .collect()
        };
        if owed.is_empty() {
            return request.await;
        }
        let count = owed.len();
        let cancels = futures::future::join_all(
            owed.into_iter()
                .map(|id| self.cancel(http, bearer, session, id, "the turn ended")),
        );
        // The cancellations first, so they are on their way before the request.
        match futures::future::select(pin!(cancels), pin!(request)).await {
            futures::future::Either::Left((_, request)) => request.await,
            futures::future::Either::Right((answer, _)) => {
                tracing::info!(server = %self.server.name, owed = count,
                    "MCP cancellations still unsent when the call was answered: dropped");
                answer
            }
        }
    }

    /// Notes `bearer` as the token the session goes with now (a refreshed one replaces the
    /// old).
    fn note_bearer(&self, bearer: Option<&AccessToken>) {
        let Some(token) = bearer else {
            return;
        };
        let mut c = self.cache();
        if c.bearer.as_ref() != Some(token) {
            c.bearer = Some(token.clone());
        }
    }

    /// Ends the session this connection keeps, if any (`DELETE` with its `Mcp-Session-Id`,
    /// see [`transport::terminate`]), as the connection is forgotten: with the token it was
    /// last used with, within [`END_SESSION_TIMEOUT`] and the turn's time left. Whatever the
    /// server answers (`405`: it does not let clients end sessions), the session is not used
    /// again by this connection.
    pub(crate) async fn end_session(&self, http: &Http) {
        let (session, bearer) = {
            let mut c = self.cache();
            (c.session.take(), c.bearer.take())
        };
        if let Some(session) = session {
            let timeout = END_SESSION_TIMEOUT.min(http.time_left().unwrap_or(END_SESSION_TIMEOUT));
            self.terminate(http, bearer.as_ref(), &session, timeout)
                .await;
        }
    }

    /// Sends the end of `session` within `timeout`, logging how the server took it (never the
    /// token, never what the server said).
    async fn terminate(
        &self,
        http: &Http,
        bearer: Option<&AccessToken>,
        session: &SessionHeaders,
        timeout: Duration,
    ) {
        if session.id.is_none() || timeout.is_zero() {
            return;
        }
        match transport::terminate(http, &self.server, bearer, session, timeout).await {
            Ok(405) => tracing::debug!(server = %self.server.name,
                "the MCP server does not let clients end sessions (HTTP 405)"),
            Ok(status) if (200..300).contains(&status) || status == 404 => {
                tracing::debug!(server = %self.server.name, status, "MCP session ended");
            }
            Ok(status) => tracing::info!(server = %self.server.name, status,
                "the MCP server did not take the end of a session"),
            Err(_) => tracing::info!(server = %self.server.name,
                "the end of an MCP session was not sent"),
        }
    }

    /// The current session, set up (`initialize`, then `notifications/initialized`) within
    /// `deadline` if there is none.
    async fn session(
        &self,
        http: &Http,
        bearer: Option<&AccessToken>,
        deadline: &Deadline,
    ) -> Result<SessionHeaders, McpError> {
        if let Some(s) = self.cache().session.clone() {
            return Ok(s);
        }
        let _setting_up = self.setup.lock().await;
        if let Some(s) = self.cache().session.clone() {
            return Ok(s);
        }
        let params = InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("runway", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
        let id = self.next_id();
        let message = request_message(&id, "initialize", &params);
        let timeout = deadline.next_request(http)?;
        let answer = transport::send(
            http,
            &self.server,
            bearer,
            None,
            &message,
            Some(&id),
            timeout,
        )
        .await?
        .ok_or_else(|| TransportError::Protocol("initialize got no answer".into()))?;
        let session_id = answer.session_id.clone();
        let result = answer.result.map_err(McpError::Refused)?;
        // Only the agreed revision is needed (the server's capabilities and instructions are
        // not used): read as a string, not as rmcp's whole `InitializeResult`.
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let session = SessionHeaders {
            id: session_id,
            protocol_version: version.to_owned(),
        };
        // A session the server opened but that is not used is ended, within what is left of
        // the step's time.
        let discard = |session: SessionHeaders| async move {
            let timeout = END_SESSION_TIMEOUT.min(deadline.left(http));
            self.terminate(http, bearer, &session, timeout).await;
        };
        if version.is_empty() {
            discard(session).await;
            return Err(
                TransportError::Protocol("initialize named no protocolVersion".into()).into(),
            );
        }
        if !ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE)
            .iter()
            .any(|known| known.as_str() == version)
        {
            let version = version.to_owned();
            discard(session).await;
            return Err(McpError::Version(version));
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let sent = match deadline.next_request(http) {
            Ok(timeout) => {
                transport::send(
                    http,
                    &self.server,
                    bearer,
                    Some(&session),
                    &initialized,
                    None,
                    timeout,
                )
                .await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = sent {
            if !McpError::from(e.clone()).turn_over() {
                discard(session).await;
            }
            return Err(e.into());
        }
        tracing::info!(
            server = %self.server.name,
            protocol = %session.protocol_version,
            "MCP session started"
        );
        let mut c = self.cache();
        c.session = Some(session.clone());
        c.bearer = bearer.cloned();
        // A new session may have other tools.
        c.stale = true;
        Ok(session)
    }

    /// Sends `notifications/cancelled` for request `id`, waiting at most [`CANCEL_TIMEOUT`];
    /// if the server does not take it, it is dropped with a log line (never owed again).
    async fn cancel(
        &self,
        http: &Http,
        bearer: Option<&AccessToken>,
        session: &SessionHeaders,
        id: RequestId,
        why: &str,
    ) {
        let params = CancelledNotificationParam::new(Some(id.clone()), Some(why.to_owned()));
        let message =
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params});
        let left = http.time_left().unwrap_or_default();
        let sent = transport::send(
            http,
            &self.server,
            bearer,
            Some(session),
            &message,
            None,
            CANCEL_TIMEOUT.min(left),
        )
        .await;
        // The error is not logged: its text may quote the server, which may echo a secret.
        if sent.is_err() {
            tracing::info!(server = %self.server.name, request = %id,
                "MCP cancellation not taken: dropped");
        }
    }
}

/// `work`, with the session of `forgotten` (a person's connection just pushed out, see
/// [`PersonSessions::of`](super::person_sessions::PersonSessions::of)) ended alongside it: the
/// end starts first and runs with it, and `work`'s answer waits for it, at most
/// [`END_SESSION_TIMEOUT`] from its start (its request's own timeout). Waiting, rather than
/// dropping an end still in flight when `work` is done, is what makes it reach the server: a
/// `DELETE` can take the server longer than the few requests `work` sends, and the forgotten
/// connection has no other request to go with. It delays only the request that pushes a
/// person out (past [`MAX_PEOPLE_PER_SERVER`](super::person_sessions::MAX_PEOPLE_PER_SERVER)),
/// by one round trip, or by the timeout at most for a server that never answers it.
pub(crate) async fn ending_alongside<T>(
    http: &Http,
    forgotten: Option<Arc<McpConnection>>,
    work: impl Future<Output = T>,
) -> T {
    let Some(old) = forgotten else {
        return work.await;
    };
    let ((), done) = futures::future::join(old.end_session(http), work).await;
    done
}

/// `entry` (one tool of a list) with every secret taken out; `None` if it is not an object, is
/// larger than [`MAX_TOOL_ENTRY_BYTES`], or is no longer JSON once redacted.
fn redacted_entry(entry: &Value, redactor: &Redactor) -> Option<JsonObject> {
    let text = entry.to_string();
    if text.len() > MAX_TOOL_ENTRY_BYTES {
        return None;
    }
    let clean = redactor.redact(&text);
    if clean == text {
        return entry.as_object().cloned();
    }
    match serde_json::from_str(&clean) {
        Ok(Value::Object(o)) => Some(o),
        _ => None,
    }
}

/// A JSON-RPC request. (Built from rmcp's parameter types rather than its `ClientRequest`
/// union, whose every variant's serializer would be compiled into the Worker.)
fn request_message(id: &RequestId, method: &str, params: &impl Serialize) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A `tools/call` in flight: dropped before it was answered (the turn ended under it), it
/// leaves its cancellation owed.
struct AbandonedCall<'a> {
    connection: &'a McpConnection,
    call: Option<(SessionHeaders, RequestId)>,
}

impl Drop for AbandonedCall<'_> {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            self.connection.owe_cancel(call);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use bytes::Bytes;
    use futures::StreamExt;
    use runway_core::adapter::BoxFuture;
    use runway_core::http_client::{HttpBody, HttpClient, HttpRequest, HttpResponse};
    use runway_core::testing::{TurnHttpGuard, VirtualRuntime, turn_http};
    use serde_json::json;

    use super::*;
    use crate::model::mcp::server_config::McpApproval;
    use crate::model::secret::Secret;

    /// A Streamable HTTP server in miniature: sessions `s1`, `s2`… (`forget` makes it answer
    /// 404 to the current one), `tools/list` in two pages (JSON), `tools/call` answered as an
    /// event stream carrying a ping request and `tools/list_changed` first; the tool `stall`
    /// never answers. Records every message with its session header.
    #[derive(Default)]
    struct Server {
        session: AtomicU32,
        forgotten: std::sync::atomic::AtomicBool,
        /// `notifications/cancelled` is never answered.
        stall_cancels: std::sync::atomic::AtomicBool,
        seen: std::sync::Mutex<Vec<(Option<String>, Value)>>,
        /// The `Authorization` header of every request, in order.
        authorizations: std::sync::Mutex<Vec<String>>,
        /// `initialize` answers a protocol revision no client knows.
        unknown_version: std::sync::atomic::AtomicBool,
        /// What a `DELETE` is answered with (0: 200, ending the current session); 1: never.
        delete_status: AtomicU32,
        /// Every `DELETE`: its session id, protocol version and `Authorization` headers.
        deleted: std::sync::Mutex<Vec<(String, String, String)>>,
    }

    #[derive(Clone)]
    struct Client(Arc<Server>);

    fn reply(status: u16, head: &[(&str, &str)], body: HttpBody) -> HttpResponse {
        let mut h = http::HeaderMap::new();
        for (k, v) in head {
            h.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        HttpResponse::new(http::StatusCode::from_u16(status).unwrap(), h, body)
    }

    fn body(text: String) -> HttpBody {
        HttpBody::from_stream(futures::stream::once(async move { Ok(Bytes::from(text)) }))
    }

    impl HttpClient for Client {
        fn send(&self, r: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
            let s = &self.0;
            if r.method == http::Method::DELETE {
                assert_eq!(r.headers["x-key"], "k-1", "configured headers on a DELETE");
                let header = |name: &str| {
                    r.headers
                        .get(name)
                        .map(|v| v.to_str().unwrap().to_owned())
                        .unwrap_or_default()
                };
                s.deleted.lock().unwrap().push((
                    header("mcp-session-id"),
                    header("mcp-protocol-version"),
                    header("authorization"),
                ));
                let response = match s.delete_status.load(Ordering::SeqCst) {
                    0 => {
                        if header("mcp-session-id")
                            == format!("s{}", s.session.load(Ordering::SeqCst))
                        {
                            s.forgotten.store(true, Ordering::SeqCst);
                        }
                        reply(200, &[], HttpBody::empty())
                    }
                    1 => return Box::pin(futures::future::pending()),
                    status => reply(status as u16, &[], HttpBody::empty()),
                };
                return Box::pin(async move { Ok(response) });
            }
            let message: Value = serde_json::from_slice(&r.body).unwrap();
            let session = r
                .headers
                .get("mcp-session-id")
                .map(|v| v.to_str().unwrap().to_owned());
            assert_eq!(
                r.headers["x-key"], "k-1",
                "configured headers on every request"
            );
            s.seen
                .lock()
                .unwrap()
                .push((session.clone(), message.clone()));
            let authorization = r.headers.get_all("authorization").iter();
            s.authorizations
                .lock()
                .unwrap()
                .extend(authorization.map(|v| v.to_str().unwrap().to_owned()));
            let current = format!("s{}", s.session.load(Ordering::SeqCst));
            let method = message["method"].as_str().unwrap_or_default();
            let id = message["id"].clone();
            if method == "notifications/cancelled" && s.stall_cancels.load(Ordering::SeqCst) {
                return Box::pin(futures::future::pending());
            }
            let response = if method == "initialize" {
                let n = s.session.fetch_add(1, Ordering::SeqCst) + 1;
                s.forgotten.store(false, Ordering::SeqCst);
                let sid = format!("s{n}");
                let version = if s.unknown_version.load(Ordering::SeqCst) {
                    "1999-01-01"
                } else {
                    "2025-06-18"
                };
                let result = json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": version, "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "mini", "version": "1"}}});
                reply(
                    200,
                    &[
                        ("content-type", "application/json"),
                        ("mcp-session-id", &sid),
                    ],
                    body(result.to_string()),
                )
            } else if session.as_deref() != Some(current.as_str())
                || s.forgotten.load(Ordering::SeqCst)
            {
                reply(404, &[], HttpBody::empty())
            } else if id.is_null() || message.get("result").is_some() {
                assert_eq!(r.headers["mcp-protocol-version"], "2025-06-18");
                reply(202, &[], HttpBody::empty())
            } else if method == "tools/list" {
                let page = match message["params"]["cursor"].as_str() {
                    None => json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}],
                                   "nextCursor": "page-2"}),
                    Some("page-2") => {
                        json!({"tools": [{"name": "b", "inputSchema": {"type": "object"}}]})
                    }
                    Some(other) => panic!("cursor {other}"),
                };
                let m = json!({"jsonrpc": "2.0", "id": id, "result": page});
                reply(
                    200,
                    &[("content-type", "application/json")],
                    body(m.to_string()),
                )
            } else if message["params"]["name"] == "stall" {
                let events = futures::stream::once(async { Ok(Bytes::from_static(b": hi\n\n")) })
                    .chain(futures::stream::pending());
                reply(
                    200,
                    &[("content-type", "text/event-stream")],
                    HttpBody::from_stream(events),
                )
            } else {
                let ping = json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"});
                let changed =
                    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                let done = json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": "did a"}]}});
                let stream = format!(
                    "id: 1\ndata: \n\ndata: {ping}\n\nevent: message\ndata: {changed}\n\ndata: {done}\n\n"
                );
                // Split mid-event: the parser keeps partial lines.
                let (x, y) = stream.split_at(stream.len() / 2);
                let (x, y) = (Bytes::from(x.to_owned()), Bytes::from(y.to_owned()));
                let pieces = futures::stream::iter([Ok(x), Ok(y)]);
                reply(
                    200,
                    &[("content-type", "text/event-stream; charset=utf-8")],
                    HttpBody::from_stream(pieces),
                )
            };
            Box::pin(async move { Ok(response) })
        }
    }

    fn connection() -> McpConnection {
        McpConnection::new(McpServer {
            name: "mini".into(),
            url: "http://127.0.0.1:1/mcp".parse().unwrap(),
            headers: vec![(http::HeaderName::from_static("x-key"), Secret::new("k-1"))],
            allow: None,
            approval: McpApproval::Never,
            timeout: None,
            auth: None,
        })
    }

    fn turn(rt: &VirtualRuntime, server: &Arc<Server>) -> (Http, TurnHttpGuard) {
        turn_http(
            Arc::new(Client(server.clone())),
            rt.clone(),
            Duration::from_secs(60),
        )
    }

    fn methods(server: &Server) -> Vec<String> {
        let seen = std::mem::take(&mut *server.seen.lock().unwrap());
        seen.iter()
            .map(|(session, m)| {
                let what = m["method"].as_str().unwrap_or("(response)");
                format!("{what}@{}", session.as_deref().unwrap_or("-"))
            })
            .collect()
    }

    const T: Duration = Duration::from_secs(10);

    #[test]
    fn sessions_pages_the_cache_list_changes_restarts_and_cancellation() {
        let rt = VirtualRuntime::new();
        rt.block_on(async {
            let server = Arc::new(Server::default());
            let (http, _guard) = turn(&rt, &server);
            let c = connection();

            // Set up once, then every page of the list.
            let tools = c
                .tools(&http, None, &Redactor::default(), 1_000, T)
                .await
                .unwrap();
            let names: Vec<&str> = tools
                .tools
                .iter()
                .map(|t| t["name"].as_str().unwrap())
                .collect();
            assert_eq!(names, ["a", "b"]);
            assert_eq!(
                methods(&server),
                [
                    "initialize@-",
                    "notifications/initialized@s1",
                    "tools/list@s1",
                    "tools/list@s1"
                ]
            );
            // Kept while fresh.
            c.tools(&http, None, &Redactor::default(), 2_000, T)
                .await
                .unwrap();
            assert!(methods(&server).is_empty());

            // A call answered as an event stream: the server's ping is answered, and its
            // tools/list_changed makes the next listing ask again.
            let r = c
                .call(&http, None, "a", JsonObject::new(), T)
                .await
                .unwrap();
            assert_eq!(r.content[0].as_text().unwrap().text, "did a");
            assert_eq!(methods(&server), ["tools/call@s1", "(response)@s1"]);
            c.tools(&http, None, &Redactor::default(), 3_000, T)
                .await
                .unwrap();
            assert_eq!(methods(&server), ["tools/list@s1", "tools/list@s1"]);
            // Old lists are asked for again.
            c.tools(
                &http,
                None,
                &Redactor::default(),
                3_000 + TOOLS_TTL.as_millis() as u64,
                T,
            )
            .await
            .unwrap();
            assert_eq!(methods(&server).len(), 2);

            // The server forgets the session: a new one, and the call goes through.
            server.forgotten.store(true, Ordering::SeqCst);
            c.call(&http, None, "a", JsonObject::new(), T)
                .await
                .unwrap();
            assert_eq!(
                methods(&server),
                [
                    "tools/call@s1",
                    "initialize@-",
                    "notifications/initialized@s2",
                    "tools/call@s2",
                    "(response)@s2"
                ]
            );

            // A call past its timeout is cancelled at once, naming its request id.
            let e = c
                .call(
                    &http,
                    None,
                    "stall",
                    JsonObject::new(),
                    Duration::from_secs(2),
                )
                .await
                .unwrap_err();
            assert!(e.timed_out(), "{e}");
            let seen = std::mem::take(&mut *server.seen.lock().unwrap());
            assert_eq!(seen.len(), 2, "{seen:?}");
            assert_eq!(seen[1].1["method"], "notifications/cancelled");
            assert_eq!(seen[1].1["params"]["requestId"], seen[0].1["id"]);
        });
    }

    #[test]
    fn a_call_cut_by_the_end_of_the_turn_is_cancelled_the_next_time() {
        let rt = VirtualRuntime::new();
        rt.block_on(async {
            let server = Arc::new(Server::default());
            let c = connection();
            let (http, guard) = turn(&rt, &server);
            c.tools(&http, None, &Redactor::default(), 0, T)
                .await
                .unwrap();
            methods(&server);
            let call = c.call(&http, None, "stall", JsonObject::new(), T);
            let cut = async {
                rt.sleep(Duration::from_secs(1)).await;
                drop(guard);
            };
            let (r, ()) = futures::join!(call, cut);
            assert!(r.unwrap_err().turn_over());
            let stalled_id = server.seen.lock().unwrap()[0].1["id"].clone();
            methods(&server);

            let (http, _guard) = turn(&rt, &server);
            c.call(&http, None, "a", JsonObject::new(), T)
                .await
                .unwrap();
            let seen = std::mem::take(&mut *server.seen.lock().unwrap());
            assert_eq!(seen[0].1["method"], "notifications/cancelled");
            assert_eq!(seen[0].1["params"]["requestId"], stalled_id);
            assert_eq!(seen[1].1["method"], "tools/call");
        });
    }

    /// Issue 25, finding 5: cancellations owed go alongside the next call, never ahead of
    /// it: a server that never takes them does not delay the call, and they are dropped, never
    /// sent again. Past 16 owed, the oldest are dropped.
    #[test]
    fn owed_cancellations_never_delay_a_call_and_are_not_owed_again() {
        let rt = VirtualRuntime::new();
        rt.block_on(async {
            let server = Arc::new(Server::default());
            let c = connection();
            let (http, guard) = turn(&rt, &server);
            c.tools(&http, None, &Redactor::default(), 0, T)
                .await
                .unwrap();
            let calls = futures::future::join_all(
                (0..20).map(|_| c.call(&http, None, "stall", JsonObject::new(), T)),
            );
            let cut = async {
                rt.sleep(Duration::from_secs(1)).await;
                drop(guard);
            };
            let (results, ()) = futures::join!(calls, cut);
            assert!(results.iter().all(|r| r.as_ref().unwrap_err().turn_over()));
            methods(&server);
            server.stall_cancels.store(true, Ordering::SeqCst);

            let (http, _guard) = turn(&rt, &server);
            let before = rt.now_ms();
            c.call(&http, None, "a", JsonObject::new(), T)
                .await
                .unwrap();
            assert_eq!(rt.now_ms(), before, "the call waited for the cancellations");
            let sent = methods(&server);
            let cancels = sent
                .iter()
                .filter(|m| m.starts_with("notifications/cancelled"))
                .count();
            assert_eq!(cancels, 16, "{sent:?}");
            assert!(sent.contains(&"tools/call@s1".to_owned()), "{sent:?}");
            // Dropped, not owed again.
            c.call(&http, None, "a", JsonObject::new(), T)
                .await
                .unwrap();
            assert_eq!(methods(&server), ["tools/call@s1", "(response)@s1"]);
        });
    }

    /// Issue 27: with the user's token, every request of the exchange (the session's set-up,
    /// each page, the call) carries it, in place of a configured `Authorization` header;
    /// without one, the configured header goes as before.
    #[test]
    fn the_users_token_replaces_a_configured_authorization_header() {
        let rt = VirtualRuntime::new();
        rt.block_on(async {
            let server = Arc::new(Server::default());
            let (http, _guard) = turn(&rt, &server);
            let mut config = connection().server().clone();
            config.headers.push((
                http::header::AUTHORIZATION,
                Secret::new("Bearer configured"),
            ));
            config.auth = Some("acme".into());
            let c = McpConnection::new(config.clone());
            let token = AccessToken::new("user-token-1");
            c.tools(&http, Some(&token), &Redactor::default(), 0, T)
                .await
                .unwrap();
            c.call(&http, Some(&token), "a", JsonObject::new(), T)
                .await
                .unwrap();
            let sent = std::mem::take(&mut *server.authorizations.lock().unwrap());
            // initialize, initialized, two pages, the call, the answer to the server's ping.
            assert_eq!(sent.len(), 6, "{sent:?}");
            assert!(sent.iter().all(|a| a == "Bearer user-token-1"), "{sent:?}");

            config.auth = None;
            let shared = McpConnection::new(config);
            shared
                .tools(&http, None, &Redactor::default(), 0, T)
                .await
                .unwrap();
            let sent = std::mem::take(&mut *server.authorizations.lock().unwrap());
            assert!(!sent.is_empty());
            assert!(sent.iter().all(|a| a == "Bearer configured"), "{sent:?}");
        });
    }

    /// Issue 25, finding 3: a session's set-up and every page of a tool list share the one
    /// timeout.
    #[test]
    fn a_tool_list_and_its_session_share_one_timeout() {
        let rt = VirtualRuntime::new();
        rt.block_on(async {
            let server = Arc::new(Server::default());
            let c = connection();
            let (http, _guard) = turn(&rt, &server);
            // Each request of the mini server answers at once, so a budget spent before the
            // second page is the clock moving between them: spend it all on the first.
            let deadline = Deadline::start(&http, Duration::from_millis(500));
            rt.sleep(Duration::from_millis(500)).await;
            let e = deadline.next_request(&http).unwrap_err();
            assert_eq!(
                e,
                TransportError::Http(HttpError::Timeout(Duration::from_millis(500)))
            );
            let listed = c
                .tools(
                    &http,
                    None,
                    &Redactor::default(),
                    0,
                    Duration::from_millis(500),
                )
                .await
                .unwrap();
            assert_eq!(listed.tools.len(), 2);
        });
    }

    /// The Streamable HTTP transport: a client that no longer needs a session sends `DELETE`
    /// with its `Mcp-Session-Id`. A person's connection forgotten ends its session alongside
    /// the request that pushed it out, with the token it was last used with (a refreshed one)
    /// and the configured headers; the server forgets it. A server that never answers the
    /// `DELETE` delays that request by `END_SESSION_TIMEOUT` at most; one that answers 405 (it
    /// does not allow it) changes nothing.
    #[test]
    fn a_forgotten_connection_ends_its_session_alongside_the_request_that_pushed_it_out() {
        let rt = VirtualRuntime::new();
        rt.block_on(async {
            let server = Arc::new(Server::default());
            let (http, _guard) = turn(&rt, &server);
            let mut config = connection().server().clone();
            config.auth = Some("acme".into());
            let forgotten = Arc::new(McpConnection::new(config.clone()));
            forgotten
                .tools(
                    &http,
                    Some(&AccessToken::new("token-1")),
                    &Redactor::default(),
                    0,
                    T,
                )
                .await
                .unwrap();
            // Refreshed since: the session goes on with the new token.
            forgotten
                .call(
                    &http,
                    Some(&AccessToken::new("token-2")),
                    "a",
                    JsonObject::new(),
                    T,
                )
                .await
                .unwrap();
            assert!(server.deleted.lock().unwrap().is_empty());
            let other = McpConnection::new(config.clone());
            let listed = ending_alongside(
                &http,
                Some(forgotten.clone()),
                other.tools(
                    &http,
                    Some(&AccessToken::new("bob-1")),
                    &Redactor::default(),
                    0,
                    T,
                ),
            )
            .await;
            assert_eq!(listed.unwrap().tools.len(), 2);
            assert_eq!(
                *server.deleted.lock().unwrap(),
                [(
                    "s1".to_owned(),
                    "2025-06-18".to_owned(),
                    "Bearer token-2".to_owned()
                )]
            );
            assert!(forgotten.cache().session.is_none(), "not used again");
            // Once ended, nothing more to end.
            forgotten.end_session(&http).await;
            assert_eq!(server.deleted.lock().unwrap().len(), 1);
            // Without a forgotten connection: the request alone, nothing ended.
            ending_alongside(&http, None, async {}).await;
            assert_eq!(server.deleted.lock().unwrap().len(), 1);

            // A server that never answers the DELETE: the request waits for it, within its
            // timeout.
            server.delete_status.store(1, Ordering::SeqCst);
            let stalled = Arc::new(McpConnection::new(config.clone()));
            stalled
                .tools(
                    &http,
                    Some(&AccessToken::new("t")),
                    &Redactor::default(),
                    0,
                    T,
                )
                .await
                .unwrap();
            let before = rt.now_ms();
            let fresh = McpConnection::new(config.clone());
            ending_alongside(
                &http,
                Some(stalled),
                fresh.tools(
                    &http,
                    Some(&AccessToken::new("u")),
                    &Redactor::default(),
                    0,
                    T,
                ),
            )
            .await
            .unwrap();
            assert_eq!(
                rt.now_ms() - before,
                END_SESSION_TIMEOUT.as_millis() as u64,
                "the listing waits for the DELETE, END_SESSION_TIMEOUT at most"
            );
            assert_eq!(server.deleted.lock().unwrap().len(), 2, "it was sent");
            // Alone, it waits at most END_SESSION_TIMEOUT; a 405 is taken as it is.
            let alone = Arc::new(McpConnection::new(config.clone()));
            alone
                .tools(
                    &http,
                    Some(&AccessToken::new("t")),
                    &Redactor::default(),
                    0,
                    T,
                )
                .await
                .unwrap();
            let before = rt.now_ms();
            alone.end_session(&http).await;
            assert_eq!(rt.now_ms() - before, END_SESSION_TIMEOUT.as_millis() as u64);
            server.delete_status.store(405, Ordering::SeqCst);
            let refused = Arc::new(McpConnection::new(config));
            refused
                .tools(
                    &http,
                    Some(&AccessToken::new("t")),
                    &Redactor::default(),
                    0,
                    T,
                )
                .await
                .unwrap();
            refused.end_session(&http).await;
            assert_eq!(server.deleted.lock().unwrap().len(), 4);
        });
    }

    /// A session the server opened in `initialize` but that is not used (it speaks a protocol
    /// revision this client does not know) is ended at once.
    #[test]
    fn a_session_opened_but_not_used_is_ended() {
        let rt = VirtualRuntime::new();
        rt.block_on(async {
            let server = Arc::new(Server::default());
            server.unknown_version.store(true, Ordering::SeqCst);
            let (http, _guard) = turn(&rt, &server);
            let c = connection();
            let e = c
                .tools(&http, None, &Redactor::default(), 0, T)
                .await
                .unwrap_err();
            assert_eq!(e, McpError::Version("1999-01-01".into()));
            assert_eq!(
                *server.deleted.lock().unwrap(),
                [("s1".to_owned(), "1999-01-01".to_owned(), String::new())]
            );
            assert_eq!(methods(&server), ["initialize@-"]);
        });
    }
}
