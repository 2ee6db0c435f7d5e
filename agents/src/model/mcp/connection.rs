//! [`McpConnection`]: what an agent instance keeps about one MCP server between turns (the
//! session, the tool list and its age, cancellations still owed), and the protocol's steps on
//! top of [`transport::send`]: `initialize` + `notifications/initialized`, `tools/list` page
//! by page, `tools/call`, `notifications/cancelled`, and a new session when the server forgot
//! the old one.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientCapabilities, ClientJsonRpcMessage, ClientNotification,
    ClientRequest, ClientResult, EmptyResult, ErrorCode, ErrorData, Implementation,
    InitializeRequest, InitializeRequestParams, InitializeResult, InitializedNotification,
    JsonObject, ListToolsRequest, NumberOrString, PaginatedRequestParams, ProtocolVersion,
    RequestId,
};
use runway_core::http_client::{Http, HttpError};
use serde_json::Value;

use super::server_config::McpServer;
use super::transport::{self, Answer, SessionHeaders, TransportError};

/// How long a tool list is used before it is asked for again.
pub(crate) const TOOLS_TTL: Duration = Duration::from_secs(300);
/// Pages of `tools/list` read at most.
const MAX_PAGES: usize = 20;
/// Tools of one server kept at most.
pub(crate) const MAX_TOOLS: usize = 256;
/// Longest wait for a notification the server merely acknowledges.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// them): sent first the next time this server is used, if the session is the same.
    owed_cancels: Vec<(SessionHeaders, RequestId)>,
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

    fn next_id(&self) -> RequestId {
        let mut c = self.cache();
        c.next_id += 1;
        NumberOrString::Number(c.next_id)
    }

    /// The tool list: the one kept, while younger than [`TOOLS_TTL`] and not stale, else
    /// asked for again (every page).
    pub(crate) async fn tools(
        &self,
        http: &Http,
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
        let mut tools = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let result = self
                .request(
                    http,
                    timeout,
                    |_| {
                        ClientRequest::ListToolsRequest(ListToolsRequest::with_param(
                            params.clone(),
                        ))
                    },
                    None,
                )
                .await?;
            if let Some(Value::Array(page)) = result.get("tools") {
                tools.extend(
                    page.iter()
                        .filter_map(|t| t.as_object().cloned())
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
        let listed = Arc::new(ListedTools {
            tools,
            at_ms: now_ms,
        });
        let mut c = self.cache();
        c.tools = Some(listed.clone());
        c.stale = false;
        Ok(listed)
    }

    /// Calls the server's tool `name` with `arguments`. A call abandoned by its own timeout
    /// is cancelled at once (`notifications/cancelled`); one abandoned because the turn ended
    /// is cancelled the next time this server is used.
    pub(crate) async fn call(
        &self,
        http: &Http,
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
        let result = self
            .request(
                http,
                timeout,
                |_| ClientRequest::CallToolRequest(CallToolRequest::new(params.clone())),
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
                    && !self.cancel(http, &session, id.clone(), "timed out").await
                {
                    self.cache().owed_cancels.push((session, id));
                }
                Err(e)
            }
        }
    }

    /// Sends one request in the current session (set up first if there is none), once more
    /// in a new session if the server forgot the old one. `abandoned`, if given, learns the
    /// request's id and session before it is sent.
    async fn request(
        &self,
        http: &Http,
        timeout: Duration,
        make: impl Fn(&RequestId) -> ClientRequest,
        mut abandoned: Option<&mut AbandonedCall<'_>>,
    ) -> Result<JsonObject, McpError> {
        for attempt in 0..2 {
            let session = self.session(http, timeout).await?;
            self.pay_owed_cancels(http, &session).await;
            let id = self.next_id();
            let message = ClientJsonRpcMessage::request(make(&id), id.clone());
            if let Some(a) = abandoned.as_deref_mut() {
                a.call = Some((session.clone(), id.clone()));
            }
            let sent = transport::send(
                http,
                &self.server,
                Some(&session),
                &message,
                Some(&id),
                timeout,
            )
            .await;
            match sent {
                Ok(Some(answer)) => return self.settle(http, &session, answer).await,
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

    /// What an answer means: notes a changed tool list, answers the server's own requests.
    async fn settle(
        &self,
        http: &Http,
        session: &SessionHeaders,
        answer: Answer,
    ) -> Result<JsonObject, McpError> {
        if answer.tools_changed {
            self.cache().stale = true;
        }
        for (id, method) in answer.server_requests {
            // Only `ping` is answered with a result: no other capability was declared.
            let reply = if method == "ping" {
                ClientJsonRpcMessage::response(ClientResult::EmptyResult(EmptyResult {}), id)
            } else {
                ClientJsonRpcMessage::error(
                    ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method, None),
                    Some(id),
                )
            };
            let _ = transport::send(
                http,
                &self.server,
                Some(session),
                &reply,
                None,
                NOTIFY_TIMEOUT,
            )
            .await;
        }
        answer.result.map_err(McpError::Refused)
    }

    /// The current session, set up (`initialize`, then `notifications/initialized`) if there
    /// is none.
    async fn session(&self, http: &Http, timeout: Duration) -> Result<SessionHeaders, McpError> {
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
        let message = ClientJsonRpcMessage::request(
            ClientRequest::InitializeRequest(InitializeRequest::new(params)),
            id.clone(),
        );
        let answer = transport::send(http, &self.server, None, &message, Some(&id), timeout)
            .await?
            .ok_or_else(|| TransportError::Protocol("initialize got no answer".into()))?;
        let session_id = answer.session_id.clone();
        let result = answer.result.map_err(McpError::Refused)?;
        let init: InitializeResult = serde_json::from_value(Value::Object(result))
            .map_err(|e| TransportError::Protocol(format!("not an initialize result ({e})")))?;
        let version = init.protocol_version;
        if !ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE)
            .contains(&version)
        {
            return Err(McpError::Version(version.to_string()));
        }
        let session = SessionHeaders {
            id: session_id,
            protocol_version: version.to_string(),
        };
        let initialized = ClientJsonRpcMessage::notification(
            ClientNotification::InitializedNotification(InitializedNotification::default()),
        );
        transport::send(
            http,
            &self.server,
            Some(&session),
            &initialized,
            None,
            timeout,
        )
        .await?;
        tracing::info!(
            server = %self.server.name,
            protocol = %session.protocol_version,
            "MCP session started"
        );
        let mut c = self.cache();
        c.session = Some(session.clone());
        // A new session may have other tools.
        c.stale = true;
        Ok(session)
    }

    /// Sends `notifications/cancelled` for request `id`; true if the server took it.
    async fn cancel(&self, http: &Http, session: &SessionHeaders, id: RequestId, why: &str) -> bool {
        let message = ClientJsonRpcMessage::notification(ClientNotification::CancelledNotification(
            CancelledNotification::new(CancelledNotificationParam::new(
                Some(id),
                Some(why.to_owned()),
            )),
        ));
        let left = http.time_left().unwrap_or_default();
        let sent = transport::send(
            http,
            &self.server,
            Some(session),
            &message,
            None,
            NOTIFY_TIMEOUT.min(left),
        )
        .await;
        sent.is_ok()
    }

    /// Sends the cancellations owed in `session`; those of older sessions are dropped (the
    /// server forgot their requests with them).
    async fn pay_owed_cancels(&self, http: &Http, session: &SessionHeaders) {
        let owed: Vec<RequestId> = {
            let mut c = self.cache();
            std::mem::take(&mut c.owed_cancels)
                .into_iter()
                .filter(|(s, _)| s == session)
                .map(|(_, id)| id)
                .collect()
        };
        for id in owed {
            self.cancel(http, session, id, "the turn ended").await;
        }
    }
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
            self.connection.cache().owed_cancels.push(call);
        }
    }
}
