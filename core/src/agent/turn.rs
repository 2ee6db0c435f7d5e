//! [`Turn`]: one turn as the agent sees it.

use crate::agent::context::ThreadContext;
use crate::agent::turn_actions::TurnActions;
use crate::agent::turn_connections::{
    AccessToken, ConnectScope, Connection, ConnectionError, Rejected, TurnConnections,
};
use crate::error::StoreError;
use crate::http_client::Http;
use crate::meter::TurnUsage;
use crate::protocol::{Attachment, ClientTool, ClientToolResult, ContextEntry, Resume};

/// Which wire protocol the turn arrived on. The agent rarely needs to know: runway renders its
/// output for either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Console's `POST /runs` (SSE).
    Console,
    /// Lowkey's `POST /lowkey/turn` (NDJSON).
    Lowkey,
    /// AG-UI 1.0's `POST /agui` (SSE).
    Agui,
}

/// One turn, as the agent sees it.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The protocol the turn arrived on.
    pub protocol: Protocol,
    /// This turn's id (Console `runId`, Lowkey `turnId`).
    pub run_id: String,
    /// The conversation's id (Console `threadId`, Lowkey `sessionHandle.id`).
    pub thread_id: String,
    /// The Digital Worker being called.
    pub agent_id: String,
    /// The calling organization (Console `workspaceId`, Lowkey `pluginId`).
    pub workspace_id: String,
    /// The person chatting, when there is one.
    pub user_id: Option<String>,
    /// What the user typed (may be empty when [`Turn::resume`] carries a decision).
    pub input: String,
    /// Files attached to this turn.
    pub attachments: Vec<Attachment>,
    /// The answer to the question the previous turn asked.
    pub resume: Option<Resume>,
    /// The thread so far: earlier messages (this turn's input is not among them yet), the
    /// question asked last turn, and the agent's own [`ThreadContext::state`], which the agent
    /// may change and runway saves when the turn ends.
    pub context: ThreadContext,
    /// Absolute base URL this agent is reachable at (used for hosted-file links).
    pub public_base_url: String,
    /// This turn's HTTP client (see [`Turn::http`]).
    pub(crate) http: Http,
    /// Where [`Turn::claim_action`] claims.
    pub(crate) actions: TurnActions,
    /// What this turn used (see [`Turn::usage`]).
    pub(crate) usage: TurnUsage,
    /// Where [`Turn::connection`] looks.
    pub(crate) connections: TurnConnections,
    /// What [`Turn::client_tools`] lists.
    pub(crate) client_tools: Vec<ClientTool>,
    /// What [`Turn::client_tool_results`] lists.
    pub(crate) client_tool_results: Vec<ClientToolResult>,
    /// What [`Turn::client_context`] lists.
    pub(crate) client_context: Vec<ContextEntry>,
}

impl Turn {
    /// An HTTP client for calling models and APIs during this turn: requests end by the turn's
    /// deadline and when the turn ends, bodies stream as they arrive, and no URL or header
    /// value is logged. See [`Http`].
    pub fn http(&self) -> &Http {
        &self.http
    }

    /// Claims the one-time action named `action` on this turn's thread: `Ok(true)` for exactly
    /// one claimant, `Ok(false)` for every other turn (or delivery of this turn) that claims
    /// it, as long as the thread's context lives. Claim before a side effect that must happen
    /// at most once, such as running a tool call the user approved: two `approve` answers sent
    /// at the same time are two turns that load the same stored state, and only the claim
    /// (atomic in every store) tells them apart. Name the action uniquely within the thread
    /// (an id drawn when the question was asked, say).
    ///
    /// # Errors
    /// The store could not be reached; do not run the action then (the claim fails closed).
    ///
    /// # Example
    ///
    /// ```
    /// use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
    ///
    /// struct Refunds;
    ///
    /// impl Agent for Refunds {
    ///     async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
    ///         // The id the question was asked with, kept in the thread's state.
    ///         let Some(id) = turn.context.state["pendingRefund"].as_str().map(str::to_owned)
    ///         else {
    ///             return Ok(Outcome::Done);
    ///         };
    ///         match turn.claim_action(&id).await {
    ///             Ok(true) => out.text("Refunding now."), // the side effect goes here, once
    ///             Ok(false) => out.text("That refund was already decided."),
    ///             Err(_) => out.text("Nothing was refunded: please try again."),
    ///         }
    ///         turn.context.state["pendingRefund"] = serde_json::Value::Null;
    ///         Ok(Outcome::Done)
    ///     }
    /// }
    /// ```
    pub async fn claim_action(&self, action: &str) -> Result<bool, StoreError> {
        self.actions.claim(action).await
    }

    /// The user's connection to the provider `provider` (its key, `[providers.KEY]`): a
    /// token valid now ([`Connection::Token`], refreshed first if it was about to expire), or
    /// the `authorization` interrupt to end the turn with ([`Connection::Authorize`]) when the
    /// user has not connected, the entry does not decrypt, or refreshing failed. Ask again on
    /// the turn that answers the card: `decision: "authorized"` is no proof, the vault is.
    /// One user's connection is never another's, nor the same user's in another workspace.
    ///
    /// # Errors
    /// No such provider; a turn without `userId` ([`ConnectionError::NoUser`]: tell the
    /// user, there is nobody to connect); no vault on this deployment; the store failed.
    ///
    /// # Example
    ///
    /// ```
    /// use runway_core::{Agent, AgentResult, Connection, Outcome, Output, Turn};
    ///
    /// struct MyOrders;
    ///
    /// impl Agent for MyOrders {
    ///     async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
    ///         match turn.connection("acme").await {
    ///             Ok(Connection::Token(token)) => {
    ///                 let orders = turn
    ///                     .http()
    ///                     .get("https://api.acme.example/orders")
    ///                     .bearer_auth(token.expose())
    ///                     .send()
    ///                     .await;
    ///                 out.text(if orders.is_ok() { "Here are your orders." } else { "Acme is down." });
    ///                 Ok(Outcome::Done)
    ///             }
    ///             Ok(Connection::Authorize(card)) => Ok(card.into()),
    ///             Err(e) => {
    ///                 out.text(e.to_string());
    ///                 Ok(Outcome::Done)
    ///             }
    ///         }
    ///     }
    /// }
    /// ```
    pub async fn connection(&self, provider: &str) -> Result<Connection, ConnectionError> {
        self.connections.get(&self.connect_scope(), provider).await
    }

    /// The user's token at `provider` if they are connected (refreshed first if it was about
    /// to expire), else `Ok(None)`. Unlike [`Turn::connection`] it makes no card, so it
    /// writes nothing: ask it where a token is merely useful (to list what a server offers
    /// the user, say), and [`Turn::connection`] where the turn must end with the card
    /// without one.
    ///
    /// # Errors
    /// As [`Turn::connection`].
    pub async fn token(&self, provider: &str) -> Result<Option<AccessToken>, ConnectionError> {
        self.connections
            .token(&self.connect_scope(), provider)
            .await
    }

    /// The provider's API answered 401 to `token` (from [`Turn::connection`]): a token to
    /// send the call again with (a newer one in the vault, or, with [`Rejected::Refresh`],
    /// `token` refreshed once), or the `authorization` interrupt to end the turn with, the
    /// call pending ([`Connection::Authorize`]). Giving up marks the vault's entry unusable:
    /// no turn sends the refused token again; the user connects anew.
    ///
    /// # Errors
    /// As [`Turn::connection`].
    pub async fn connection_rejected(
        &self,
        provider: &str,
        token: &AccessToken,
        retry: Rejected,
    ) -> Result<Connection, ConnectionError> {
        self.connections
            .rejected(&self.connect_scope(), provider, token, retry)
            .await
    }

    fn connect_scope(&self) -> ConnectScope {
        ConnectScope {
            worker: self.agent_id.clone(),
            workspace: self.workspace_id.clone(),
            user: self.user_id.clone(),
            thread: self.thread_id.clone(),
            public_base_url: self.public_base_url.clone(),
        }
    }

    /// What this turn used so far, and whether its token and spend limits let it call its
    /// model again: report model calls, tool calls and attachments here (see [`TurnUsage`]).
    pub fn usage(&self) -> &TurnUsage {
        &self.usage
    }

    /// The tools the client offers and runs itself (AG-UI's `RunAgentInput.tools`; Console
    /// and Lowkey turns have none). Offer them to the model beside the agent's own; when the
    /// model calls one, stream the call with [`Output::start_client_tool_call`](crate::Output::start_client_tool_call)
    /// and end the turn ([`Outcome::Done`](crate::Outcome::Done)): runway ends the run with
    /// the call pending for the client (AG-UI's `pendingToolCallIds`), and the client sends
    /// its result with the next run ([`Turn::client_tool_results`]). Never run one here.
    pub fn client_tools(&self) -> &[ClientTool] {
        &self.client_tools
    }

    /// The results of client tool calls the previous run left pending, sent with this turn
    /// (AG-UI `tool` messages), in the order the client sent them. runway has checked that
    /// each answers a call the previous run left pending (`TOOL_RESULT_UNMATCHED`
    /// otherwise, before the agent runs); a pending call may be left unanswered (the user
    /// wrote instead). The results are not in [`Turn::input`].
    pub fn client_tool_results(&self) -> &[ClientToolResult] {
        &self.client_tool_results
    }

    /// What the client tells the agent about itself for this run (AG-UI's
    /// `RunAgentInput.context`, CopilotKit's readables: the page the user is on, the record
    /// open, as description/value pairs), in the order sent; at most
    /// [`MAX_CLIENT_CONTEXT_BYTES`](crate::protocol::MAX_CLIENT_CONTEXT_BYTES) together.
    /// Console and Lowkey turns have none. Not stored: a client sends its context with every
    /// run. The model agent gives it to the model as one system message after its system
    /// prompt.
    pub fn client_context(&self) -> &[ContextEntry] {
        &self.client_context
    }

    /// True for Console's Test-button threads (`validate-<16 hex>`), kept only briefly.
    pub fn is_validation(&self) -> bool {
        crate::protocol::is_validation_thread(&self.thread_id)
    }
}
