//! [`TestTurn`]: one Console turn to send to an agent under test.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::agent::context::ThreadContext;
use crate::http_client::HttpClient;
use crate::protocol::{Attachment, Interrupt, Message, Resume, Role};
use crate::testing::clock::VirtualRuntime;
use crate::testing::held_http::HeldHttp;
use crate::testing::scripted_http::ScriptedHttp;

/// One chat turn, built like Console sends it, to run through the real engine: the agent's
/// unit test.
///
/// [`TestTurn::run`] serves the agent with a fresh [`TestRunway`](crate::testing::TestRunway) (the real
/// [`Runway`](crate::adapter::Runway), a memory store and a virtual clock), sends the turn,
/// reads the whole stream and returns it parsed ([`Frames`](crate::testing::Frames)). Several turns on one thread, or
/// a failing store: send them through one [`TestRunway`](crate::testing::TestRunway). Lowkey, `/health`, hosted files:
/// [`TestRunway::request`](crate::testing::TestRunway::request).
///
/// Defaults: thread `thread-1` of Digital Worker `agent-1` in workspace `workspace-1`, a new
/// `runId` per turn, no history, no HTTP client (requests fail with `HttpError::Unavailable`).
///
/// # Example
///
/// ```
/// use runway_core::testing::TestTurn;
/// use runway_core::{Agent, AgentResult, Interrupt, Outcome, Output, Turn};
///
/// struct Refunds;
///
/// impl Agent for Refunds {
///     async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
///         if turn.resume.is_some() {
///             out.text("Refunded.");
///             return Ok(Outcome::Done);
///         }
///         let call = out.tool_call("find_order", &serde_json::json!({"id": "A-1"}));
///         out.tool_result(&call, "A-1: 20 EUR");
///         turn.context.state = serde_json::json!({"order": "A-1"});
///         Ok(Interrupt::Approval { prompt: "Refund 20 EUR?".into() }.into())
///     }
/// }
///
/// # runway_core::testing::VirtualRuntime::new().block_on(async {
/// let frames = TestTurn::new("refund A-1").run(&Refunds).await;
/// assert_eq!(frames.tool_calls()[0].name, "find_order");
/// assert_eq!(frames.tool_calls()[0].result.as_deref(), Some("A-1: 20 EUR"));
/// assert_eq!(
///     frames.interrupt(),
///     Some(Interrupt::Approval { prompt: "Refund 20 EUR?".into() })
/// );
/// assert_eq!(frames.state()["order"], "A-1");
/// # });
/// ```
#[derive(Clone)]
pub struct TestTurn {
    pub(crate) input: String,
    pub(crate) run_id: Option<String>,
    pub(crate) thread_id: String,
    pub(crate) agent_id: String,
    pub(crate) workspace_id: String,
    pub(crate) user_id: Option<String>,
    pub(crate) history: Vec<Message>,
    pub(crate) stored: Option<ThreadContext>,
    pub(crate) resume: Option<Resume>,
    pub(crate) attachments: Vec<Attachment>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) http: Option<TurnClient>,
}

/// Where the turn's [`Turn::http`](crate::Turn::http) sends.
#[derive(Clone)]
pub(crate) enum TurnClient {
    /// In memory, waits on the virtual clock.
    Scripted(ScriptedHttp),
    /// Real I/O: the clock holds while a request is in flight.
    Real(Arc<dyn HttpClient>),
}

impl TurnClient {
    pub(crate) fn of<C: HttpClient>(client: C) -> Self {
        match (&client as &dyn std::any::Any).downcast_ref::<ScriptedHttp>() {
            Some(script) => Self::Scripted(script.clone()),
            None => Self::Real(Arc::new(client)),
        }
    }

    /// The client a turn on `clock` sends through.
    // On wasm32 nothing is `Send` and there is one thread; `Arc` keeps one type for both.
    #[cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]
    pub(crate) fn on(self, clock: &VirtualRuntime) -> Arc<dyn HttpClient> {
        match self {
            Self::Scripted(script) => Arc::new(script.on_clock(clock)),
            Self::Real(inner) => Arc::new(HeldHttp {
                inner,
                clock: clock.clone(),
            }),
        }
    }
}

impl std::fmt::Debug for TestTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestTurn")
            .field("input", &self.input)
            .field("run_id", &self.run_id)
            .field("thread_id", &self.thread_id)
            .finish_non_exhaustive()
    }
}

impl TestTurn {
    /// A turn in which the user says `input`.
    pub fn new(input: impl Into<String>) -> Self {
        Self {
            input: input.into(),
            run_id: None,
            thread_id: "thread-1".into(),
            agent_id: "agent-1".into(),
            workspace_id: "workspace-1".into(),
            user_id: None,
            history: Vec::new(),
            stored: None,
            resume: None,
            attachments: Vec::new(),
            headers: Vec::new(),
            http: None,
        }
    }

    /// The turn's `runId` (default: `run-<n>`, new for every turn a [`TestRunway`](crate::testing::TestRunway) sends).
    /// Sending one `runId` twice is a retry: the second is replayed from the recording.
    #[must_use]
    pub fn run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = Some(id.into());
        self
    }

    /// The conversation (`threadId`).
    #[must_use]
    pub fn thread(mut self, id: impl Into<String>) -> Self {
        self.thread_id = id.into();
        self
    }

    /// The Digital Worker called (`agentId`).
    #[must_use]
    pub fn agent_id(mut self, id: impl Into<String>) -> Self {
        self.agent_id = id.into();
        self
    }

    /// The calling organization (`workspaceId`).
    #[must_use]
    pub fn workspace(mut self, id: impl Into<String>) -> Self {
        self.workspace_id = id.into();
        self
    }

    /// The person chatting (`userId`).
    #[must_use]
    pub fn user(mut self, id: impl Into<String>) -> Self {
        self.user_id = Some(id.into());
        self
    }

    /// Console's `history` (sent on a fork): seeds the thread when the store has none.
    #[must_use]
    pub fn history(mut self, messages: impl IntoIterator<Item = Message>) -> Self {
        self.history.extend(messages);
        self
    }

    /// The thread as stored before this turn (earlier messages, state, a pending question),
    /// put in the store as if earlier turns had saved it.
    #[must_use]
    pub fn context(mut self, context: ThreadContext) -> Self {
        self.stored = Some(context);
        self
    }

    /// Earlier messages of the thread, stored before this turn (alternating user and
    /// assistant, starting with the user).
    #[must_use]
    pub fn earlier(mut self, said: &[&str]) -> Self {
        let stored = self.stored.get_or_insert_with(ThreadContext::default);
        for (i, text) in said.iter().enumerate() {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            stored.messages.push(Message::new(role, *text));
        }
        self
    }

    /// The agent's state as stored before this turn.
    #[must_use]
    pub fn state(mut self, state: Value) -> Self {
        self.stored.get_or_insert_with(ThreadContext::default).state = state;
        self
    }

    /// The question the previous turn asked, as stored before this turn (see
    /// [`TestTurn::resume`]).
    #[must_use]
    pub fn asked(mut self, question: Interrupt) -> Self {
        self.stored
            .get_or_insert_with(ThreadContext::default)
            .pending_interrupt = Some(question);
        self
    }

    /// The user's answer to the previous turn's question (`resume`).
    #[must_use]
    pub fn resume(mut self, resume: impl Into<Resume>) -> Self {
        self.resume = Some(resume.into());
        self
    }

    /// A file attached to the turn.
    #[must_use]
    pub fn attachment(mut self, attachment: Attachment) -> Self {
        self.attachments.push(attachment);
        self
    }

    /// A request header (the auth headers of a [`TestRunway`](crate::testing::TestRunway) whose config requires them).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// [`Turn::http`](crate::Turn::http) sends through `client`: a [`ScriptedHttp`], whose
    /// waits run on the turn's virtual clock, or a real client (a local server's, say), for
    /// which the clock stands still while a request is in flight, since the other side answers
    /// in real time.
    #[must_use]
    pub fn http_client(mut self, client: impl HttpClient) -> Self {
        self.http = Some(TurnClient::of(client));
        self
    }

    /// The store key of the turn's thread ([`crate::adapter::thread_key`]).
    pub fn thread_key(&self) -> String {
        crate::keys::thread_key(&self.agent_id, &self.thread_id)
    }

    /// The `POST /runs` request this turn is, with its `runId` or `run-1`: for a test that
    /// calls [`Runway::handle`](crate::adapter::Runway::handle) itself.
    pub fn request(&self) -> http::Request<bytes::Bytes> {
        self.request_under("", self.run_id.as_deref().unwrap_or("run-1"))
    }

    /// The request, under `base_path`, with `run_id`.
    pub(crate) fn request_under(
        &self,
        base_path: &str,
        run_id: &str,
    ) -> http::Request<bytes::Bytes> {
        let mut request = http::Request::post(format!("{base_path}/runs"))
            .header(http::header::CONTENT_TYPE, "application/json");
        for (name, value) in &self.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        request
            .body(bytes::Bytes::from(self.body(run_id).to_string()))
            .expect("a test turn's request is well-formed")
    }

    /// The `POST /runs` body.
    fn body(&self, run_id: &str) -> Value {
        let mut body = json!({
            "protocolVersion": crate::protocol::PROTOCOL_VERSION,
            "runId": run_id,
            "threadId": self.thread_id,
            "agentId": self.agent_id,
            "workspaceId": self.workspace_id,
            "input": self.input,
        });
        if let Some(u) = &self.user_id {
            body["userId"] = json!(u);
        }
        if !self.history.is_empty() {
            body["history"] = json!(self.history);
        }
        if let Some(r) = &self.resume {
            body["resume"] = json!(r);
        }
        if !self.attachments.is_empty() {
            body["attachments"] = json!(self.attachments);
        }
        body
    }
}
