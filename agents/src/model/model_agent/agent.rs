//! [`ModelAgent`]: what it holds (settings, clients, the attachment store, MCP sessions) and
//! how it is built. What it does each turn is in the sibling files: the turn loop, approvals,
//! tool calls, model calls and the streamed answer.

use std::sync::Arc;

use crate::attachments::{AttachmentStore, MemoryAttachmentStore};
use crate::model::mcp::McpServers;
use crate::model::redaction::Redactor;
use crate::model::settings::ModelSettings;
#[cfg(feature = "reqwest")]
use crate::model::tool_runner::no_redirect_client;
use crate::model::transcript::Transcript;
use runway_core::Turn;
use runway_core::adapter::Runtime;
use runway_core::http_client::HttpClient;

/// Longest stored text of one message.
pub(super) const MAX_STORED_MESSAGE_BYTES: usize = 16 * 1024;
/// What the default in-memory attachment store holds at most, all threads together.
const MEMORY_ATTACHMENTS_BYTES: usize = 64 * 1024 * 1024;

/// A Digital Worker backed by any OpenAI-compatible chat-completions endpoint (OpenAI, Azure
/// OpenAI, Ollama, vLLM, llama.cpp, LiteLLM…), configured rather than coded.
///
/// Each turn it sends the system prompt, the thread's transcript and the declared tools with
/// `stream: true`, and streams the answer to the user as it arrives: text as text, reasoning
/// (`reasoning_content` / `reasoning`) as reasoning, tool calls as tool calls. It runs the
/// HTTP and MCP tools the model calls, sends their results back and loops (at most
/// [`ModelSettings::max_rounds`] model calls per turn). A tool declared with
/// `approval = true` ends the turn with a `review` question; the next turn's `resume` runs it
/// (`approve`, or `edit` with the edited arguments), or tells the model the user rejected it
/// or what they said instead (`respond`).
///
/// The transcript (tool calls and results included) lives in the thread's state under
/// `"model"`, trimmed oldest-first to [`ModelSettings::window_bytes`]; the system prompt is
/// configuration and never stored.
///
/// # Example
///
/// ```
/// use runway_agents::{ModelAgent, ModelSettings};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut settings = ModelSettings::new("http://127.0.0.1:11434/v1", "llama3.1")?;
/// settings.system_prompt = Some("You answer questions about orders. Be brief.".into());
/// # #[cfg(feature = "tokio")]
/// let agent = ModelAgent::new(settings, runway_core::adapter::TokioRuntime);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ModelAgent<R> {
    pub(super) settings: Arc<ModelSettings>,
    pub(super) rt: R,
    pub(super) download_client: Option<Arc<dyn HttpClient>>,
    pub(super) tool_client: Option<Arc<dyn HttpClient>>,
    pub(super) files: Arc<dyn AttachmentStore>,
    pub(super) redactor: Arc<Redactor>,
    /// The MCP servers' sessions and tool lists, kept by this instance between turns.
    pub(super) mcp: Arc<McpServers>,
    /// What MCP requests go through: a client that follows no redirect.
    pub(super) mcp_client: Option<Arc<dyn HttpClient>>,
}

impl<R: std::fmt::Debug> std::fmt::Debug for ModelAgent<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelAgent")
            .field("settings", &self.settings)
            .field("rt", &self.rt)
            .field("downloads_files", &self.download_client.is_some())
            .field("calls_tools", &self.tool_client.is_some())
            .field("mcp_client", &self.mcp_client.is_some())
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> ModelAgent<R> {
    /// An agent with `settings`; `rt` provides the timer for backoff between retries.
    ///
    /// Attachments are kept in memory ([`MemoryAttachmentStore`], 64 MiB for all threads;
    /// see [`ModelAgent::with_attachment_store`]). With the core's `reqwest` feature they are
    /// downloaded through a `PublicOnlyClient` (`runway_agents::attachments`, feature `reqwest`) under
    /// `settings.attachments.policy`; without it, only once
    /// [`ModelAgent::with_download_client`] gave a client (until then each file is reported to
    /// the model and the user as not usable).
    ///
    /// Tools are called through a client that follows no redirect itself (the agent follows
    /// them as each tool's `redirects` setting says, and never takes a tool's headers to
    /// another origin): with the core's `reqwest` feature, one is made here; without it, tools
    /// run only once [`ModelAgent::with_tool_client`] gave one (until then, each call is
    /// answered with an error: a client that follows redirects itself could carry a tool's
    /// credentials to another origin).
    pub fn new(settings: ModelSettings, rt: R) -> Self {
        // The one place this is said: every adapter builds its model agent once, after its
        // logging is installed.
        if settings.attachments.policy.allow_loopback {
            tracing::warn!(
                "{}=1: attachment links to this machine's loopback addresses (plain http too) \
                 are downloaded. For tests only: never set it in production",
                crate::settings::ALLOW_LOOPBACK
            );
        }
        #[cfg(feature = "reqwest")]
        let download_client: Option<Arc<dyn HttpClient>> = Some(Arc::new(
            crate::attachments::PublicOnlyClient::new(settings.attachments.policy),
        ));
        #[cfg(not(feature = "reqwest"))]
        let download_client: Option<Arc<dyn HttpClient>> = None;
        #[cfg(feature = "reqwest")]
        let tool_client: Option<Arc<dyn HttpClient>> = Some(Arc::new(no_redirect_client()));
        #[cfg(not(feature = "reqwest"))]
        let tool_client: Option<Arc<dyn HttpClient>> = None;
        // MCP requests go through a client that follows no redirect too.
        let mcp_client = tool_client.clone();
        Self {
            redactor: Arc::new(Redactor::of(&settings)),
            mcp_client,
            mcp: Arc::new(McpServers::new(&settings.mcp)),
            settings: Arc::new(settings),
            rt,
            download_client,
            tool_client,
            files: Arc::new(MemoryAttachmentStore::new(MEMORY_ATTACHMENTS_BYTES)),
        }
    }

    /// Calls tools with `client`, which must not follow redirects itself (on Workers, `fetch`
    /// with `redirect: "manual"`): the agent follows them hop by hop.
    pub fn with_tool_client(mut self, client: Arc<dyn HttpClient>) -> Self {
        self.tool_client = Some(client);
        self
    }

    /// Sends MCP requests with `client`, which must not follow redirects (a server's redirect
    /// is then refused, so the `[[mcp]]` headers reach the configured origin only). Native
    /// builds (feature `reqwest`) have one; elsewhere, until one is given, MCP servers are
    /// unavailable (with a note to the model) rather than called through a client that follows
    /// redirects.
    pub fn with_mcp_client(mut self, client: Arc<dyn HttpClient>) -> Self {
        self.mcp_client = Some(client);
        self
    }

    /// Downloads attachments with `client`. It must reach public addresses only (checking
    /// the addresses it connects to against `settings.attachments.policy`), and must not
    /// follow redirects itself: each hop is checked and followed by the agent.
    pub fn with_download_client(mut self, client: Arc<dyn HttpClient>) -> Self {
        self.download_client = Some(client);
        self
    }

    /// Keeps downloaded attachments in `store` (instead of the process's memory).
    pub fn with_attachment_store(mut self, store: Arc<dyn AttachmentStore>) -> Self {
        self.files = store;
        self
    }

    /// The agent's settings.
    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }
}

impl<R: Runtime + Clone> ModelAgent<R> {
    /// The same agent (its attachment store and clients shared) with other settings: a
    /// variant for one workspace (another model, prompt or tool set).
    pub fn with_settings(&self, settings: ModelSettings) -> Self {
        // The MCP servers' sessions and tool lists are per settings: a variant with the same
        // servers shares them.
        let mcp = if settings.mcp == self.settings.mcp {
            Arc::clone(&self.mcp)
        } else {
            Arc::new(McpServers::new(&settings.mcp))
        };
        Self {
            redactor: Arc::new(Redactor::of(&settings)),
            settings: Arc::new(settings),
            rt: self.rt.clone(),
            download_client: self.download_client.clone(),
            tool_client: self.tool_client.clone(),
            files: Arc::clone(&self.files),
            mcp,
            mcp_client: self.mcp_client.clone(),
        }
    }
}

impl<R: Runtime> ModelAgent<R> {
    /// Keeps the transcript in the thread's state, trimmed oldest-first to the window.
    pub(super) fn save(&self, turn: &mut Turn, t: &mut Transcript) {
        t.trim(self.settings.window_bytes);
        t.save(&mut turn.context.state);
    }
}
