//! [`ModelAgent`]: the turn loop. Call the model, stream what it says, run the tools it calls,
//! ask the user first where a tool wants approval, and go round again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::attachment_intake::{Images, load_images, take_in, user_content};
use super::call_meter::CallMeter;
use super::chat_stream::{ChatStreamEvent, ChatStreamParser};
use super::log_budget::LogBudget;
use super::mcp::McpServers;
use super::redaction::Redactor;
use super::settings::ModelSettings;
#[cfg(feature = "reqwest")]
use super::tool_runner::no_redirect_client;
use super::tool_runner::{is_failure, run_bounded};
use super::toolbox::Toolbox;
use super::transcript::{ChatMessage, ModelToolCall, Transcript, partial_answer, truncate};
use crate::attachments::{AttachmentStore, MemoryAttachmentStore};
use runway_core::Role;
use runway_core::adapter::Runtime;
use runway_core::http_client::{Http, HttpClient, HttpError, HttpResponse};
use runway_core::protocol::{Decision, EditedAction, Interrupt, LogId, ReviewItem};
use runway_core::{AccessToken, Connection, ConnectionError, Rejected};
use runway_core::{Agent, AgentError, AgentResult, Outcome, Turn, TurnUsage};
use runway_core::{Output, ToolCall};

/// Attempts at reaching the model before its first token (the first plus retries).
const MAX_ATTEMPTS: u32 = 5;
/// First backoff; doubled after each failed attempt.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait between attempts, even if `Retry-After` asks for more.
const MAX_BACKOFF: Duration = Duration::from_secs(20);
/// Time kept back before the turn's deadline: a retry that would start later is not made.
const DEADLINE_MARGIN: Duration = Duration::from_secs(5);
/// Longest stored text of one message.
const MAX_STORED_MESSAGE_BYTES: usize = 16 * 1024;
/// What the default in-memory attachment store holds at most, all threads together.
const MEMORY_ATTACHMENTS_BYTES: usize = 64 * 1024 * 1024;
/// Told to the model with the system prompt: Console names a file it could not attach in a
/// system notice line of the user's input, and that line is not the user's to hear back.
/// Calls of one reply kept in the transcript beyond those run: each is answered as refused;
/// past them, the model is told only how many more there were.
const REFUSED_CALLS_KEPT: usize = 8;
/// Longest call id kept as the model sent it (a longer or repeated one is replaced).
const MAX_CALL_ID_CHARS: usize = 128;
/// What a call another decision already settled is answered with.
const ALREADY_DECIDED: &str = "Not run by this turn: another decision on this conversation \
    already took this call (it may have run there); its result is not known here.";
const PLATFORM_NOTICE_RULE: &str = "A user message may contain a notice line from the chat \
    platform (for example about a file it could not attach). It is not the user's words: do \
    not repeat it back; if it matters, say briefly that a file could not be attached.";

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
    settings: Arc<ModelSettings>,
    rt: R,
    download_client: Option<Arc<dyn HttpClient>>,
    tool_client: Option<Arc<dyn HttpClient>>,
    files: Arc<dyn AttachmentStore>,
    redactor: Arc<Redactor>,
    /// The MCP servers' sessions and tool lists, kept by this instance between turns.
    mcp: Arc<McpServers>,
    /// What MCP requests go through: a client that follows no redirect.
    mcp_client: Option<Arc<dyn HttpClient>>,
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

/// A model call that failed.
enum RoundError {
    /// Nothing reached the user yet: worth another attempt.
    Retryable {
        detail: String,
        retry_after: Option<Duration>,
    },
    /// Give up: the user gets `user_message`.
    Fatal { user: &'static str, detail: String },
}

const UNAVAILABLE: &str = "The model is not available right now. Please try again in a moment.";
const CUT_OFF: &str = "The model's answer was cut off. Please try again.";
const REFUSED: &str = "The agent could not get an answer from its model.";
const TOO_LONG: &str = "The model's answer was too long, so it was stopped.";

/// A tool call being assembled from the stream.
#[derive(Default)]
struct Building {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
    shown: Option<ToolCall>,
    /// Why it is not run, decided as it arrived (over the reply's call cap, arguments too long).
    refused: Option<String>,
}

/// What one model call is asked: the conversation so far, its images and the tools offered.
struct RoundPrompt<'a, 't> {
    transcript: &'a Transcript,
    images: &'a Images,
    tools: &'a Toolbox<'t>,
}

/// What one model call produced.
struct Round {
    text: String,
    /// Each call, as shown to the user, and why it is refused (`None`: it may run).
    calls: Vec<(ModelToolCall, ToolCall, Option<String>)>,
}

/// What became of the calls waiting for a decision.
enum Settled {
    /// Every pending call is answered: go on (the input was used up when true).
    Continue { input_used: bool },
    /// Calls are still waiting (the decision named others, or could not be matched): ask
    /// about them again.
    AskAgain,
    /// An approved call needs an account the user has not connected: end with this card.
    Connect(Interrupt),
}

/// What a decision does with one pending call.
enum Verdict {
    /// Run it, with the user's edited arguments (JSON text) when edited.
    Run(Option<String>),
    /// Do not run it; the model is told this.
    Decline(String),
}

impl<R: Runtime> Agent for ModelAgent<R> {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        let mut t = Transcript::from_state(&turn.context.state);
        // The previous turn may have been cut while the agent ran (the user left, the
        // deadline passed): keep what the user saw of it, and answer calls it never finished.
        t.recover(MAX_STORED_MESSAGE_BYTES);
        if t.messages.is_empty() && t.pending.is_empty() {
            // A fork Console seeded from `history`: carry the plain messages over.
            t.messages = seed_from_context(turn);
        }
        let log = LogBudget::new();
        let mcp_http = self
            .mcp_client
            .as_ref()
            .and_then(|c| turn.http().with_client(c.clone()));
        let tools = Toolbox::for_turn(
            &self.settings,
            &self.mcp,
            &self.redactor,
            mcp_http,
            self.rt.now_ms(),
        )
        .await;
        let mut input_used = false;
        if !t.pending.is_empty() {
            match self.settle_pending(turn, out, &mut t, &tools, &log).await {
                Settled::Continue { input_used: used } => input_used = used,
                Settled::AskAgain => {
                    let interrupt = review_of(&t.pending);
                    self.save(turn, &mut t);
                    return Ok(interrupt.into());
                }
                Settled::Connect(card) => {
                    self.save(turn, &mut t);
                    return Ok(card.into());
                }
            }
        } else if !t.connecting.is_empty() {
            // The answer to the card is no proof: the vault is (`run_calls` asks it again).
            let calls = std::mem::take(&mut t.connecting);
            let authorized = turn
                .resume
                .as_ref()
                .is_some_and(|r| r.decision == Decision::Authorized);
            let mut to_run = Vec::new();
            for call in calls {
                let args: Value = serde_json::from_str(&call.function.arguments)
                    .unwrap_or_else(|_| Value::String(call.function.arguments.clone()));
                let shown = out.tool_call(call.function.name.clone(), &args);
                if authorized {
                    to_run.push((call, shown));
                } else {
                    let reason =
                        "Not run: the user did not connect the account this tool needs.".to_owned();
                    out.tool_result(&shown, reason.clone());
                    t.messages.push(ChatMessage::Tool {
                        tool_call_id: call.id,
                        content: reason,
                    });
                }
            }
            if let Some(card) = self
                .run_calls(turn, out, &mut t, to_run, &tools, &log)
                .await
            {
                self.save(turn, &mut t);
                return Ok(card.into());
            }
            input_used = authorized;
        } else if turn.resume.is_some() && turn.input.trim().is_empty() {
            out.text(
                "There is nothing waiting for your decision any more, so nothing was run. \
                 What would you like me to do?",
            );
            return Ok(Outcome::Done);
        }
        let (files, note) = take_in(
            turn,
            &self.settings.attachments,
            self.download_client.as_ref(),
            &*self.files,
            &mut t,
        )
        .await;
        if let Some(note) = note {
            out.text(note);
            out.end_message();
        }
        if (!input_used && !turn.input.trim().is_empty()) || !files.is_empty() {
            let content = if input_used {
                String::new()
            } else {
                truncate(&turn.input, MAX_STORED_MESSAGE_BYTES)
            };
            t.messages.push(ChatMessage::User { content, files });
        }
        self.save(turn, &mut t);
        let images = load_images(turn, &self.settings.attachments, &*self.files, &t).await;

        for round_index in 0..self.settings.max_rounds.max(1) {
            // A token or spend limit reached by an earlier round: no more model calls.
            // Re-read with every concurrent turn's calls (see `TurnUsage::budget_spent`).
            if round_index > 0 && turn.usage().budget_spent().await {
                tracing::warn!(
                    code = "QUOTA_EXCEEDED",
                    "the turn's token or spend limit is reached: the model is not called again"
                );
                self.save(turn, &mut t);
                return Err(turn.usage().quota_error());
            }
            let round = self
                .round_with_retries(turn, out, &mut t, &images, &tools, &log)
                .await?;
            let text =
                (!round.text.is_empty()).then(|| truncate(&round.text, MAX_STORED_MESSAGE_BYTES));
            if round.calls.is_empty() {
                if let Some(content) = text {
                    t.messages.push(ChatMessage::Assistant {
                        content: Some(content),
                        tool_calls: Vec::new(),
                    });
                }
                self.save(turn, &mut t);
                return Ok(Outcome::Done);
            }
            t.messages.push(ChatMessage::Assistant {
                content: text,
                tool_calls: round.calls.iter().map(|(c, _, _)| c.clone()).collect(),
            });
            // Saved before the tools run: a turn cut while they run keeps the calls (answered
            // as unfinished by the next turn's `recover`).
            self.save(turn, &mut t);
            let mut to_run = Vec::new();
            let mut to_ask = Vec::new();
            for (call, shown, refused) in round.calls {
                if let Some(reason) = refused {
                    out.tool_result(&shown, reason.clone());
                    t.messages.push(ChatMessage::Tool {
                        tool_call_id: call.id,
                        content: reason,
                    });
                    continue;
                }
                match tools.find(&call.function.name) {
                    Some(tool) if tool.needs_approval() => to_ask.push(call),
                    _ => to_run.push((call, shown)),
                }
            }
            if let Some(card) = self
                .run_calls(turn, out, &mut t, to_run, &tools, &log)
                .await
            {
                // Calls that wait for approval are not asked about behind the card.
                for call in to_ask {
                    t.messages.push(ChatMessage::Tool {
                        tool_call_id: call.id,
                        content: "Not run: an account had to be connected first; ask again.".into(),
                    });
                }
                self.save(turn, &mut t);
                return Ok(card.into());
            }
            if !to_ask.is_empty() {
                let interrupt = review_of(&to_ask);
                t.pending = to_ask;
                t.review = Some(self.new_review_id());
                self.save(turn, &mut t);
                return Ok(interrupt.into());
            }
            self.save(turn, &mut t);
        }
        Err(AgentError::with_user_message(
            "The agent needed too many steps for this request and stopped.",
            format!(
                "the model was still calling tools after {} rounds",
                self.settings.max_rounds
            ),
        ))
    }
}

impl<R: Runtime> ModelAgent<R> {
    fn save(&self, turn: &mut Turn, t: &mut Transcript) {
        t.trim(self.settings.window_bytes);
        t.save(&mut turn.context.state);
    }

    /// A fresh id for a question about tool calls (128 random bits, hex).
    fn new_review_id(&self) -> String {
        let mut raw = [0u8; 16];
        self.rt.fill_random(&mut raw);
        hex::encode(raw)
    }

    /// Answers the calls the previous turn asked about, from this turn's `resume` (or its new
    /// message, when the user typed instead of deciding). A decision settles exactly the calls
    /// it names: `approve` and `reject` the whole question, `edit` each call it edits (matched
    /// by id, or by name when that names one call), a reply or a new message every call. Each
    /// call is claimed in the store before anything is done with it, so of two decisions sent
    /// at once only one settles it (and only one runs it).
    async fn settle_pending(
        &self,
        turn: &Turn,
        out: &Output,
        t: &mut Transcript,
        tools: &Toolbox<'_>,
        log: &LogBudget,
    ) -> Settled {
        let said = turn
            .resume
            .as_ref()
            .and_then(|r| r.message.clone())
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| turn.input.clone());
        let all = |v: &dyn Fn() -> Verdict| t.pending.iter().map(|_| Some(v())).collect();
        let mut input_used = false;
        let verdicts: Vec<Option<Verdict>> = match turn.resume.as_ref().map(|r| &r.decision) {
            Some(Decision::Edit) => {
                let edits = turn
                    .resume
                    .as_ref()
                    .map_or(&[][..], |r| &r.edited_actions[..]);
                match match_edits(&t.pending, edits) {
                    Ok(edited) => edited
                        .into_iter()
                        .map(|e| e.map(|args| Verdict::Run(Some(args))))
                        .collect(),
                    Err(reason) => {
                        if log.admit() {
                            tracing::info!(run_id = %LogId(&turn.run_id), thread_id = %LogId(&turn.thread_id),
                                reason = %reason, "an edit was refused: asking again");
                        }
                        out.text(format!("Nothing was run: {reason} Please decide again."));
                        out.end_message();
                        return Settled::AskAgain;
                    }
                }
            }
            Some(Decision::Approve) => all(&|| Verdict::Run(None)),
            Some(Decision::Reject) => {
                all(&|| Verdict::Decline("The user rejected this call; it was not run.".into()))
            }
            Some(_) => {
                input_used = true;
                all(&|| {
                    Verdict::Decline(format!(
                        "The user did not run this call and replied instead: {said}"
                    ))
                })
            }
            None => {
                input_used = true;
                all(&|| {
                    Verdict::Decline(format!(
                        "Not run: the user sent a new message instead of deciding: {said}"
                    ))
                })
            }
        };
        // A transcript saved before questions had ids: its calls' ids name them.
        let review = t.review.clone().unwrap_or_else(|| "unnamed".into());
        let mut to_run = Vec::new();
        let mut waiting = Vec::new();
        for (mut call, verdict) in std::mem::take(&mut t.pending).into_iter().zip(verdicts) {
            let Some(verdict) = verdict else {
                waiting.push(call);
                continue;
            };
            let verdict = match turn.claim_action(&format!("{review}/{}", call.id)).await {
                Ok(true) => verdict,
                Ok(false) => Verdict::Decline(ALREADY_DECIDED.into()),
                Err(e) => {
                    // Not claimed, so not settled: it is asked about again.
                    if log.admit() {
                        tracing::warn!(run_id = %LogId(&turn.run_id), thread_id = %LogId(&turn.thread_id),
                            error = %e, "a decision could not be recorded: asking again");
                    }
                    waiting.push(call);
                    continue;
                }
            };
            if let Verdict::Run(Some(args)) = &verdict {
                call.function.arguments.clone_from(args);
            }
            let args: Value = serde_json::from_str(&call.function.arguments)
                .unwrap_or_else(|_| Value::String(call.function.arguments.clone()));
            let shown = out.tool_call(call.function.name.clone(), &args);
            match verdict {
                Verdict::Run(_) => to_run.push((call, shown)),
                Verdict::Decline(reason) => {
                    out.tool_result(&shown, reason.clone());
                    t.messages.push(ChatMessage::Tool {
                        tool_call_id: call.id,
                        content: reason,
                    });
                }
            }
        }
        if let Some(card) = self.run_calls(turn, out, t, to_run, tools, log).await {
            // The calls still waiting for a decision are not asked about behind the card.
            for call in waiting {
                t.messages.push(ChatMessage::Tool {
                    tool_call_id: call.id,
                    content: "Not run: an account had to be connected first; ask again.".into(),
                });
            }
            t.review = None;
            return Settled::Connect(card);
        }
        if waiting.is_empty() {
            t.review = None;
            Settled::Continue { input_used }
        } else {
            t.pending = waiting;
            t.review = Some(review);
            Settled::AskAgain
        }
    }

    /// Runs `calls` (at most [`ModelSettings::max_tool_calls_per_reply`] at once), shows each
    /// result and adds it to the transcript. A call whose tool acts as the user (`auth`) runs
    /// with the user's token; without one it is not sent: it waits in
    /// [`Transcript::connecting`] and the `authorization` card to end the turn with is
    /// returned.
    async fn run_calls(
        &self,
        turn: &Turn,
        out: &Output,
        t: &mut Transcript,
        calls: Vec<(ModelToolCall, ToolCall)>,
        tools: &Toolbox<'_>,
        log: &LogBudget,
    ) -> Option<Interrupt> {
        if calls.is_empty() {
            return None;
        }
        // One lookup per provider per reply: one card, one state.
        let mut found: HashMap<String, Result<Connection, ConnectionError>> = HashMap::new();
        let mut card = None;
        let mut ready = Vec::with_capacity(calls.len());
        for (call, shown) in calls {
            let Some(key) = tools
                .find(&call.function.name)
                .and_then(|tool| tool.auth().map(str::to_owned))
            else {
                ready.push((call, shown, None));
                continue;
            };
            if !found.contains_key(&key) {
                let c = turn.connection(&key).await;
                found.insert(key.clone(), c);
            }
            match &found[&key] {
                Ok(Connection::Token(token)) => {
                    let token = token.clone();
                    ready.push((call, shown, Some(Ok((key, token)))));
                }
                Ok(Connection::Authorize(interrupt)) => {
                    card.get_or_insert_with(|| interrupt.clone());
                    t.connecting.push(call);
                }
                Err(e) => {
                    let refusal = connection_refusal(turn, e, log);
                    ready.push((call, shown, Some(Err(refusal))));
                }
            }
        }
        let tool_http = self
            .tool_client
            .as_ref()
            .and_then(|c| turn.http().with_client(c.clone()));
        let tool_http = tool_http.as_ref();
        let mut runs = Vec::with_capacity(ready.len());
        for (call, _, auth) in &ready {
            runs.push(async move {
                let result = match auth {
                    None => Ok(tools
                        .run(tool_http, call, None, log)
                        .await
                        .unwrap_or_default()),
                    Some(Ok((key, token))) => {
                        run_as_user(turn, tools, tool_http, call, key, token, log).await
                    }
                    Some(Err(refusal)) => Ok(refusal.clone()),
                };
                result.map(|r| self.redactor.redact(&r))
            });
        }
        let results = run_bounded(runs, self.settings.max_tool_calls_per_reply).await;
        let calls: Vec<_> = ready.into_iter().map(|(c, s, _)| (c, s)).collect();
        for ((call, shown), content) in calls.into_iter().zip(results) {
            let content = match content {
                Ok(content) => content,
                // The API refused the user's token and it could not be renewed: the call
                // waits for the user to connect again, as one sent without a token would.
                Err(interrupt) => {
                    card.get_or_insert(interrupt);
                    t.connecting.push(call);
                    continue;
                }
            };
            turn.usage().tool_call(is_failure(&content));
            out.tool_result(&shown, content.clone());
            t.messages.push(ChatMessage::Tool {
                tool_call_id: call.id,
                content,
            });
        }
        card
    }

    /// One model call, attempted again (with backoff, honouring `Retry-After`, within the turn's
    /// deadline) while nothing has reached the user.
    async fn round_with_retries(
        &self,
        turn: &mut Turn,
        out: &Output,
        t: &mut Transcript,
        images: &Images,
        tools: &Toolbox<'_>,
        log: &LogBudget,
    ) -> Result<Round, AgentError> {
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 1;
        loop {
            // Saved with an empty partial answer that the stream then extends in place: if the
            // turn is cut mid-answer, the next turn finds what the user saw.
            t.partial = Some(String::new());
            self.save(turn, t);
            t.partial = None;
            let http = turn.http().clone();
            let usage = turn.usage().clone();
            let prompt = RoundPrompt {
                transcript: t,
                images,
                tools,
            };
            match self
                .round(&http, &usage, out, prompt, &mut turn.context.state, log)
                .await
            {
                Ok(round) => return Ok(round),
                Err((RoundError::Fatal { user, detail }, partial)) => {
                    // Whatever the endpoint said may echo the key: never logged as it came.
                    let detail = self.redactor.redact(&detail);
                    if !partial.is_empty() {
                        // What the user saw stays in the transcript.
                        t.messages.push(ChatMessage::Assistant {
                            content: Some(truncate(&partial, MAX_STORED_MESSAGE_BYTES)),
                            tool_calls: Vec::new(),
                        });
                        self.save(turn, t);
                    }
                    return Err(AgentError::with_user_message(user, detail));
                }
                Err((
                    RoundError::Retryable {
                        detail,
                        retry_after,
                    },
                    _,
                )) => {
                    let detail = self.redactor.redact(&detail);
                    let wait = retry_after.unwrap_or(backoff).min(MAX_BACKOFF);
                    let left = turn.http().time_left().unwrap_or_default();
                    if attempt >= MAX_ATTEMPTS || left < wait + DEADLINE_MARGIN {
                        return Err(AgentError::with_user_message(
                            UNAVAILABLE,
                            format!("model call failed after {attempt} attempts: {detail}"),
                        ));
                    }
                    if log.admit() {
                        tracing::warn!(
                            attempt,
                            wait_ms = wait.as_millis() as u64,
                            error = %detail,
                            "model call failed before its first token: retrying"
                        );
                    }
                    self.rt.sleep(wait).await;
                    // A retry is another model call: a budget spent meanwhile stops it.
                    if turn.usage().budget_spent().await {
                        return Err(turn.usage().quota_error());
                    }
                    backoff *= 2;
                    attempt += 1;
                }
            }
        }
    }

    fn request_body(&self, t: &Transcript, images: &Images, tools: &Toolbox<'_>) -> Value {
        let s = &self.settings;
        let mut messages = Vec::with_capacity(t.messages.len() + 1);
        let mut system = match &s.system_prompt {
            Some(p) => format!("{p}\n\n{PLATFORM_NOTICE_RULE}"),
            None => PLATFORM_NOTICE_RULE.to_owned(),
        };
        for note in tools.notes() {
            system.push_str("\n\n");
            system.push_str(note);
        }
        messages.push(json!({"role": "system", "content": system}));
        messages.extend(t.messages.iter().map(|m| match m {
            ChatMessage::User { content, files } if !files.is_empty() => {
                json!({"role": "user", "content": user_content(content, files, images)})
            }
            m => serde_json::to_value(m).unwrap_or(Value::Null),
        }));
        let mut body = json!({
            "model": s.model,
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": messages,
        });
        let declarations = tools.declarations();
        if !declarations.is_empty() {
            body["tools"] = Value::Array(declarations);
        }
        body
    }

    /// Sends the request `body`; `meter` learns whether the endpoint took it (a refusal is
    /// not billed).
    async fn send(
        &self,
        http: &Http,
        body: Vec<u8>,
        meter: &mut CallMeter,
    ) -> Result<HttpResponse, RoundError> {
        let s = &self.settings;
        let mut request = http
            .post(&s.completions_url())
            .header("accept", "text/event-stream")
            .header("content-type", "application/json")
            .body(body);
        if let Some(key) = &s.api_key {
            request = request.bearer_auth(key.expose());
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) if e.is_transient() => {
                meter.not_billed();
                return Err(RoundError::Retryable {
                    detail: e.to_string(),
                    retry_after: None,
                });
            }
            Err(HttpError::TurnDeadline | HttpError::Cancelled) => {
                return Err(RoundError::Fatal {
                    user: UNAVAILABLE,
                    detail: "the turn ended while waiting for the model".into(),
                });
            }
            Err(e) => {
                meter.not_billed();
                return Err(RoundError::Fatal {
                    user: REFUSED,
                    detail: format!("model request failed: {e}"),
                });
            }
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        meter.not_billed();
        let retry_after = response
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        let body = response.bytes_limited(4096).await.unwrap_or_default();
        let detail = self.redactor.redact(&format!(
            "model endpoint answered HTTP {}: {}",
            status.as_u16(),
            String::from_utf8_lossy(&body)
        ));
        if status.as_u16() == 429 || status.is_server_error() {
            Err(RoundError::Retryable {
                detail,
                retry_after,
            })
        } else {
            Err(RoundError::Fatal {
                user: REFUSED,
                detail,
            })
        }
    }

    /// One model call, streamed to `out`. On error, also returns the text already shown.
    async fn round(
        &self,
        http: &Http,
        usage: &TurnUsage,
        out: &Output,
        prompt: RoundPrompt<'_, '_>,
        state: &mut Value,
        log: &LogBudget,
    ) -> Result<Round, (RoundError, String)> {
        let s = &self.settings;
        let RoundPrompt {
            transcript: t,
            images,
            tools,
        } = prompt;
        // Serialized here: its size is the estimate's prompt if the call is cut unreported.
        let body = serde_json::to_vec(&self.request_body(t, images, tools)).unwrap_or_default();
        // Counts the call once however this returns or is dropped (the user stopped the turn).
        let mut meter = CallMeter::new(usage.clone(), &s.model, body.len());
        let mut response = self
            .send(http, body, &mut meter)
            .await
            .map_err(|e| (e, String::new()))?;
        let mut parser = ChatStreamParser::new();
        let mut text = String::new();
        let mut shown_anything = false;
        let mut reasoning_open = false;
        let mut building: BTreeMap<u32, Building> = BTreeMap::new();
        // Calls past the reply's cap and the kept refusals: only counted.
        let mut uncounted_calls: BTreeSet<u32> = BTreeSet::new();
        let mut received = 0usize;
        let mut finished = false;
        let broken = |detail: String, shown: bool, text: &str| {
            let e = if shown {
                RoundError::Fatal {
                    user: CUT_OFF,
                    detail,
                }
            } else {
                RoundError::Retryable {
                    detail,
                    retry_after: None,
                }
            };
            (e, text.to_owned())
        };
        // The partial answer kept in `state`, found once rather than per token.
        let mut partial = partial_answer(state);
        let mut events = Vec::new();
        loop {
            let (parsed, body_ended) = match response.chunk().await {
                Ok(Some(bytes)) => {
                    received += bytes.len();
                    if received > s.max_response_bytes {
                        return Err((
                            RoundError::Fatal {
                                user: TOO_LONG,
                                detail: format!(
                                    "the model's response passed {} bytes: stopped",
                                    s.max_response_bytes
                                ),
                            },
                            text,
                        ));
                    }
                    (parser.push(&bytes, &mut events), false)
                }
                Ok(None) => (parser.finish(&mut events), true),
                Err(HttpError::TurnDeadline | HttpError::Cancelled) => {
                    return Err((
                        RoundError::Fatal {
                            user: CUT_OFF,
                            detail: "the turn ended while the model was answering".into(),
                        },
                        text,
                    ));
                }
                Err(e) => {
                    return Err(broken(
                        format!("the model's stream broke: {e}"),
                        shown_anything,
                        &text,
                    ));
                }
            };
            if let Err(e) = parsed {
                // An error inside a stream is the endpoint's; before any output it may pass
                // (overload), after it the answer is cut.
                return Err(broken(e.to_string(), shown_anything, &text));
            }
            for ev in events.drain(..) {
                match ev {
                    ChatStreamEvent::Role(_) => {}
                    ChatStreamEvent::Reasoning(r) => {
                        meter.streamed(r.len());
                        out.reasoning(r);
                        reasoning_open = true;
                        shown_anything = true;
                    }
                    ChatStreamEvent::Text(delta) => {
                        meter.streamed(delta.len());
                        if reasoning_open {
                            out.end_reasoning();
                            reasoning_open = false;
                        }
                        if let Some(p) = &mut partial {
                            p.push_str(&delta);
                        }
                        text.push_str(&delta);
                        out.text(delta);
                        shown_anything = true;
                    }
                    ChatStreamEvent::ToolCall {
                        index,
                        id,
                        name,
                        arguments,
                    } => {
                        meter.streamed(arguments.len() + name.as_ref().map_or(0, String::len));
                        if reasoning_open {
                            out.end_reasoning();
                            reasoning_open = false;
                        }
                        let kept = s.max_tool_calls_per_reply + REFUSED_CALLS_KEPT;
                        if !building.contains_key(&index) && building.len() >= kept {
                            // Counted (bounded: a set of numbers the size of the response
                            // cap at worst), never kept.
                            uncounted_calls.insert(index);
                            continue;
                        }
                        let accepted = building.len() < s.max_tool_calls_per_reply;
                        let b = building.entry(index).or_insert_with(|| Building {
                            refused: (!accepted).then(|| {
                                format!(
                                    "Error: not run: at most {} tool calls of one reply are \
                                     run. Call it again in a later reply if it is still \
                                     needed.",
                                    s.max_tool_calls_per_reply
                                )
                            }),
                            ..Building::default()
                        });
                        if b.id.is_none() {
                            b.id = id;
                        }
                        if b.name.is_none() {
                            b.name = name;
                        }
                        if b.refused.is_some() {
                            // Its arguments are never used: not kept, not shown.
                            if b.shown.is_none()
                                && let Some(n) = &b.name
                            {
                                b.shown = Some(out.start_tool_call(n.clone()));
                                shown_anything = true;
                            }
                            continue;
                        }
                        if b.arguments.len() + arguments.len() > s.max_tool_argument_bytes {
                            b.arguments.clear();
                            b.refused = Some(format!(
                                "Error: not run: the call's arguments were longer than {} \
                                 bytes.",
                                s.max_tool_argument_bytes
                            ));
                            continue;
                        }
                        b.arguments.push_str(&arguments);
                        match (&b.shown, &b.name) {
                            (Some(call), _) => {
                                if !arguments.is_empty() {
                                    out.tool_args(call, arguments);
                                }
                            }
                            (None, Some(n)) => {
                                let call = out.start_tool_call(n.clone());
                                if !b.arguments.is_empty() {
                                    out.tool_args(&call, b.arguments.clone());
                                }
                                b.shown = Some(call);
                                shown_anything = true;
                            }
                            (None, None) => {}
                        }
                    }
                    ChatStreamEvent::Finish(reason) => {
                        finished = true;
                        tracing::debug!(finish_reason = %reason, "model answer finished");
                    }
                    // Logged once, after the answer: an endpoint may send it with every chunk.
                    ChatStreamEvent::Usage(u) => {
                        if let Err(detail) = meter.reported(&u) {
                            // The call fails as the endpoint's error; it counts an estimate.
                            return Err((
                                RoundError::Fatal {
                                    user: REFUSED,
                                    detail,
                                },
                                text,
                            ));
                        }
                    }
                    ChatStreamEvent::Done => {}
                }
            }
            if parser.is_done() {
                break; // [DONE]: whatever follows is not read
            }
            if body_ended {
                if !finished {
                    return Err(broken(
                        "the model's stream ended before the answer was complete".into(),
                        shown_anything,
                        &text,
                    ));
                }
                break;
            }
        }
        if reasoning_open {
            out.end_reasoning();
        }
        if !text.is_empty() {
            out.end_message();
        }
        // Counted once per model call; an endpoint that ignores `stream_options.include_usage`
        // still made a call (its tokens estimated).
        let reported = meter.has_report();
        let tokens = meter.finish();
        if reported && log.admit() {
            tracing::info!(
                prompt_tokens = tokens.input,
                completion_tokens = tokens.output,
                reasoning_tokens = tokens.reasoning,
                "model usage"
            );
        }
        let mut calls = Vec::new();
        let mut ids: BTreeSet<String> = BTreeSet::new();
        let last = building.keys().next_back().copied();
        for (index, b) in building {
            let name = b.name.unwrap_or_default();
            // A call id names the call in the transcript and in decisions: unique in the reply,
            // and short.
            let id =
                b.id.filter(|i| i.chars().count() <= MAX_CALL_ID_CHARS && !ids.contains(i))
                    .unwrap_or_else(|| {
                        let mut n = index;
                        while ids.contains(&format!("call_{n}")) {
                            n = n.wrapping_add(1000);
                        }
                        format!("call_{n}")
                    });
            ids.insert(id.clone());
            let shown = match b.shown {
                Some(call) => call,
                None => out.start_tool_call(if name.is_empty() { "unknown" } else { &name }),
            };
            out.end_tool_call(&shown);
            let mut refused = b.refused;
            let arguments = if refused.is_some() {
                "{}".to_owned()
            } else {
                b.arguments
            };
            if Some(index) == last
                && !uncounted_calls.is_empty()
                && let Some(r) = &mut refused
            {
                r.push_str(&format!(
                    " {} more tool calls of this reply were refused as well.",
                    uncounted_calls.len()
                ));
            }
            calls.push((ModelToolCall::new(id, name, arguments), shown, refused));
        }
        Ok(Round { text, calls })
    }
}

/// The `review` question for calls that need the user's approval.
fn review_of(calls: &[ModelToolCall]) -> Interrupt {
    let items = calls
        .iter()
        .map(|c| ReviewItem {
            id: Some(c.id.clone()),
            name: c.function.name.clone(),
            arguments: serde_json::from_str(&c.function.arguments)
                .unwrap_or_else(|_| Value::String(c.function.arguments.clone())),
        })
        .collect();
    let prompt = if calls.len() == 1 {
        format!("Run {}?", calls[0].function.name)
    } else {
        "Run these actions?".to_owned()
    };
    Interrupt::Review { prompt, items }
}

/// The pending call each edit is for (by index), with its edited arguments as JSON text;
/// `None` for a call no edit names. An edit names its call by id, or, without one, by name
/// (narrowed by `originalArguments` when sent) when that leaves exactly one call; either way
/// its tool name must be the call's. Anything else is refused with the reason, never guessed:
/// an edit of `ops_restart` must not run the pending `ops_wipe` with its arguments.
fn match_edits(
    pending: &[ModelToolCall],
    edits: &[EditedAction],
) -> Result<Vec<Option<String>>, String> {
    if edits.is_empty() {
        return Err("the edit did not say which call it changes.".into());
    }
    let mut out: Vec<Option<String>> = vec![None; pending.len()];
    for e in edits {
        let at = match &e.id {
            Some(id) => {
                let at = pending.iter().position(|c| &c.id == id).ok_or_else(|| {
                    format!("the edit names call {id}, which is not waiting for a decision.")
                })?;
                let waiting = &pending[at].function.name;
                if *waiting != e.name {
                    return Err(format!(
                        "the edit is for {}, but call {id} is a call of {waiting}.",
                        e.name
                    ));
                }
                at
            }
            None => {
                let original =
                    |c: &ModelToolCall| serde_json::from_str::<Value>(&c.function.arguments).ok();
                let candidates: Vec<usize> = pending
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.function.name == e.name)
                    .filter(|(_, c)| {
                        e.original_arguments
                            .as_ref()
                            .is_none_or(|o| original(c).as_ref() == Some(o))
                    })
                    .map(|(i, _)| i)
                    .collect();
                match candidates[..] {
                    [only] => only,
                    [] => {
                        return Err(format!(
                            "the edit of {} does not match any call waiting for a decision.",
                            e.name
                        ));
                    }
                    _ => {
                        return Err(format!(
                            "{} calls of {} are waiting and the edit does not say which one it \
                             changes (send the call's id, shown on the card, with the edit).",
                            candidates.len(),
                            e.name
                        ));
                    }
                }
            }
        };
        if out[at].is_some() {
            return Err(format!(
                "two edits change the same call ({}).",
                pending[at].id
            ));
        }
        out[at] = Some(match &e.arguments {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        });
    }
    Ok(out)
}

/// The plain messages of a thread the store seeded from the caller's history.
fn seed_from_context(turn: &Turn) -> Vec<ChatMessage> {
    turn.context
        .messages
        .iter()
        .filter_map(|m| match m.role {
            Role::User => Some(ChatMessage::User {
                content: truncate(&m.content, MAX_STORED_MESSAGE_BYTES),
                files: Vec::new(),
            }),
            Role::Assistant => Some(ChatMessage::Assistant {
                content: Some(truncate(&m.content, MAX_STORED_MESSAGE_BYTES)),
                tool_calls: Vec::new(),
            }),
            Role::System => None,
        })
        .collect()
}

/// The most times one call is sent with the user's token: the first, once with a refreshed
/// token, and once with a newer token another turn stored meanwhile.
const MAX_SENDS_AS_USER: usize = 3;

/// Runs `call` as the user with `token` at provider `key`. An API answering 401 gets the
/// call once more with a renewed token ([`Turn::connection_rejected`]: refreshed once, or a
/// newer one from the vault); when none comes, the card to end the turn with (the call
/// waits for the user to connect again).
async fn run_as_user(
    turn: &Turn,
    tools: &Toolbox<'_>,
    tool_http: Option<&Http>,
    call: &ModelToolCall,
    key: &str,
    token: &AccessToken,
    log: &LogBudget,
) -> Result<String, Interrupt> {
    let mut token = token.clone();
    let mut retry = Rejected::Refresh;
    for _ in 0..MAX_SENDS_AS_USER {
        if let Ok(result) = tools.run(tool_http, call, Some(&token), log).await {
            // An API that echoes the token does not get it to the model.
            return Ok(result.replace(token.expose(), "[redacted]"));
        }
        match turn.connection_rejected(key, &token, retry).await {
            Ok(Connection::Token(renewed)) => {
                token = renewed;
                retry = Rejected::GiveUp;
            }
            Ok(Connection::Authorize(interrupt)) => return Err(interrupt),
            Err(e) => return Ok(connection_refusal(turn, &e, log)),
        }
    }
    Ok("Error: the tool's API refused the user's token again; the tool was not called.".into())
}

/// What the model is told when the user's connection cannot be looked up.
fn connection_refusal(turn: &Turn, e: &ConnectionError, log: &LogBudget) -> String {
    match e {
        ConnectionError::NoUser(name) => format!(
            "Error: connecting {name} needs a signed-in user, and this conversation has none; \
             the tool was not called."
        ),
        e => {
            if log.admit() {
                tracing::warn!(run_id = %LogId(&turn.run_id), error = %e, "a connected account could not be used");
            }
            format!(
                "Error: the account this tool acts with could not be used ({e}); the tool \
                 was not called."
            )
        }
    }
}
