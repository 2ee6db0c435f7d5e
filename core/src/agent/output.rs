//! The typed handle an agent writes its answer through.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use futures::Stream;
use futures::channel::mpsc;
use serde_json::Value;

use crate::agent::pending;

/// Everything an agent can say during a turn, in the order it said it. Each wire protocol
/// renders these its own way (Console's SSE frames, Lowkey's NDJSON events).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AgentEvent {
    /// Text for the current message.
    Text(String),
    /// Close the current message: the next text starts a new one.
    EndMessage,
    /// Reasoning text.
    Reasoning(String),
    /// Close the current reasoning message.
    EndReasoning,
    /// A named step begins.
    StepStarted(String),
    /// A named step ends.
    StepFinished(String),
    /// A tool call begins.
    ToolCallStart {
        /// Unique within the turn.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A call of a tool the client runs ([`crate::Turn::client_tools`]) begins: the run ends
    /// with it pending for the client unless a result follows.
    ClientToolCallStart {
        /// Chosen by the agent, unique within the thread (the client answers with it).
        id: String,
        /// Tool name.
        name: String,
    },
    /// Part of a tool call's arguments.
    ToolCallArgs {
        /// The call.
        id: String,
        /// Argument text.
        delta: String,
    },
    /// A tool call's arguments are complete.
    ToolCallEnd {
        /// The call.
        id: String,
    },
    /// A tool call's result.
    ToolCallResult {
        /// The call.
        id: String,
        /// Result text.
        content: String,
    },
    /// `ACTIVITY_SNAPSHOT`.
    ActivitySnapshot {
        /// Activity id.
        message_id: String,
        /// Activity type.
        activity_type: String,
        /// Content.
        content: Value,
    },
    /// `ACTIVITY_DELTA`.
    ActivityDelta {
        /// Activity id.
        message_id: String,
        /// JSON Patch.
        patch: Value,
    },
    /// `STATE_SNAPSHOT` (keys other than todos/artifacts/files are dropped).
    StateSnapshot(Value),
    /// `STATE_DELTA` (operations outside todos/artifacts/files are dropped).
    StateDelta(Value),
    /// A file hosted elsewhere, announced as an artifact.
    Artifact(Artifact),
    /// A file runway hosts for the agent, announced as an artifact once stored.
    File(OutputFile),
    /// `CUSTOM`.
    Custom {
        /// Event name.
        name: String,
        /// Payload.
        value: Value,
    },
}

/// A file the agent produced and runway hosts behind an unguessable, expiring link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFile {
    /// File name shown to the user.
    pub name: String,
    /// Content type.
    pub mime: String,
    /// Content.
    pub bytes: Vec<u8>,
}

impl OutputFile {
    /// A file.
    pub fn new(
        name: impl Into<String>,
        mime: impl Into<String>,
        bytes: impl Into<Vec<u8>>,
    ) -> Self {
        Self {
            name: name.into(),
            mime: mime.into(),
            bytes: bytes.into(),
        }
    }
}

/// A file the agent hosts itself, announced in the state's `artifacts`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Stable id.
    pub id: String,
    /// File name.
    pub name: String,
    /// Absolute URL reachable from the user's browser.
    pub url: String,
    /// Content type.
    pub mime: String,
    /// Size in bytes.
    pub size_bytes: u64,
}

/// A tool call started with [`Output::tool_call`] or [`Output::start_tool_call`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    id: String,
}

impl ToolCall {
    /// The call's id, unique within the turn.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// Where an agent writes its answer. Cheap to clone; every method returns at once (runway
/// streams what was written while the agent goes on).
///
/// Text is grouped into messages automatically: consecutive [`Output::text`] calls form one
/// message, and a tool call closes it, so text after the call becomes a new message.
#[derive(Debug, Clone)]
pub struct Output {
    tx: mpsc::UnboundedSender<(AgentEvent, usize)>,
    next_id: Arc<AtomicU32>,
    /// Appended to tool call ids (`call-{n}.{tag}`) where they must be unique in the thread,
    /// not only in the turn (AG-UI: see [`Output::tag_call_ids`]).
    call_id_tag: Option<Arc<str>>,
    queued: Arc<AtomicUsize>,
    max_queued: usize,
    pending: Arc<AtomicUsize>,
}

impl Output {
    /// An output and the receiving end the engine drains. Events beyond `max_queued` bytes of
    /// text are dropped (the stream would have ended on its limit long before).
    pub(crate) fn channel(max_queued: usize) -> (Self, OutputEvents) {
        let (tx, rx) = mpsc::unbounded();
        let pending = Arc::new(AtomicUsize::new(0));
        (
            Self {
                tx,
                next_id: Arc::new(AtomicU32::new(0)),
                call_id_tag: None,
                queued: Arc::new(AtomicUsize::new(0)),
                max_queued,
                pending: Arc::clone(&pending),
            },
            OutputEvents { rx, pending },
        )
    }

    /// Makes every tool call id `call-{n}.{tag}`: unique in the thread when `tag` is the run's
    /// (an AG-UI client keeps the whole conversation and merges a call into an earlier one of
    /// the same id).
    pub(crate) fn tag_call_ids(&mut self, tag: &str) {
        self.call_id_tag = Some(Arc::from(tag));
    }

    fn send(&self, event: AgentEvent, bytes: usize) {
        let before = self.queued.fetch_add(bytes, Ordering::Relaxed);
        if before + bytes > self.max_queued {
            return;
        }
        // Counted before it is queued, so the receiver never releases more than was added.
        self.pending.fetch_add(bytes, Ordering::AcqRel);
        pending::add_total(bytes);
        if self.tx.unbounded_send((event, bytes)).is_err() {
            // The turn is over; what the agent says now goes nowhere.
            self.pending.fetch_sub(bytes, Ordering::AcqRel);
            pending::release_total(bytes);
        }
    }

    /// Lets runway send what this turn wrote so far before the agent goes on. Returns at
    /// once when nothing is waiting; otherwise the agent resumes once what it wrote is within
    /// the in-flight bound (64 KiB per turn, 32 MiB per process), that is, once the client
    /// has read enough. An agent that awaits anything else (a model's stream, a tool call)
    /// gets the same backpressure at those awaits; call this when writing a lot in one go.
    pub fn ready(&self) -> impl Future<Output = ()> + Send + '_ {
        Ready {
            pending: &self.pending,
            yielded: false,
        }
    }

    /// Appends text to the answer.
    pub fn text(&self, delta: impl Into<String>) {
        let delta = delta.into();
        let n = delta.len();
        self.send(AgentEvent::Text(delta), n);
    }

    /// Ends the current message; the next text starts a new bubble.
    pub fn end_message(&self) {
        self.send(AgentEvent::EndMessage, 0);
    }

    /// Appends reasoning (shown apart from the answer).
    pub fn reasoning(&self, delta: impl Into<String>) {
        let delta = delta.into();
        let n = delta.len();
        self.send(AgentEvent::Reasoning(delta), n);
    }

    /// Ends the current reasoning message.
    pub fn end_reasoning(&self) {
        self.send(AgentEvent::EndReasoning, 0);
    }

    /// Opens a named step (closed by [`Output::step_finished`], or at the end of the turn).
    pub fn step_started(&self, name: impl Into<String>) {
        self.send(AgentEvent::StepStarted(name.into()), 0);
    }

    /// Closes a named step.
    pub fn step_finished(&self, name: impl Into<String>) {
        self.send(AgentEvent::StepFinished(name.into()), 0);
    }

    /// A complete tool call: start, its arguments as JSON, end. Send the result with
    /// [`Output::tool_result`].
    pub fn tool_call(&self, name: impl Into<String>, arguments: &Value) -> ToolCall {
        let call = self.start_tool_call(name);
        self.tool_args(&call, arguments.to_string());
        self.end_tool_call(&call);
        call
    }

    /// Starts a tool call whose arguments are streamed with [`Output::tool_args`]. Its id is
    /// `call-{n}` (on AG-UI runs `call-{n}.{12 hex digits of the run}`).
    pub fn start_tool_call(&self, name: impl Into<String>) -> ToolCall {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let call = ToolCall {
            id: match &self.call_id_tag {
                Some(tag) => format!("call-{n}.{tag}"),
                None => format!("call-{n}"),
            },
        };
        self.send(
            AgentEvent::ToolCallStart {
                id: call.id.clone(),
                name: name.into(),
            },
            0,
        );
        call
    }

    /// Starts a call of one of the client's tools ([`crate::Turn::client_tools`]), with the id
    /// `id`: unique within the thread, since the client sends the call's result back with it
    /// on the next run ([`crate::Turn::client_tool_results`]), and not of the form `call-N`
    /// (the ids [`Output::start_tool_call`] gives). Stream its arguments with
    /// [`Output::tool_args`], end it with [`Output::end_tool_call`], and end the turn: the run
    /// finishes with the call pending for the client (AG-UI's `pendingToolCallIds`), unless
    /// the agent sent a result for it itself ([`Output::tool_result`]: a call it refused).
    pub fn start_client_tool_call(
        &self,
        id: impl Into<String>,
        name: impl Into<String>,
    ) -> ToolCall {
        let call = ToolCall { id: id.into() };
        self.send(
            AgentEvent::ClientToolCallStart {
                id: call.id.clone(),
                name: name.into(),
            },
            0,
        );
        call
    }

    /// Streams part of a tool call's arguments.
    pub fn tool_args(&self, call: &ToolCall, delta: impl Into<String>) {
        let delta = delta.into();
        let n = delta.len();
        self.send(
            AgentEvent::ToolCallArgs {
                id: call.id.clone(),
                delta,
            },
            n,
        );
    }

    /// Ends a tool call's arguments.
    pub fn end_tool_call(&self, call: &ToolCall) {
        self.send(
            AgentEvent::ToolCallEnd {
                id: call.id.clone(),
            },
            0,
        );
    }

    /// Sends a tool call's result (ends the call first if needed).
    pub fn tool_result(&self, call: &ToolCall, content: impl Into<String>) {
        let content = content.into();
        let n = content.len();
        self.send(
            AgentEvent::ToolCallResult {
                id: call.id.clone(),
                content,
            },
            n,
        );
    }

    /// `ACTIVITY_SNAPSHOT`.
    pub fn activity_snapshot(
        &self,
        message_id: impl Into<String>,
        activity_type: impl Into<String>,
        content: Value,
    ) {
        self.send(
            AgentEvent::ActivitySnapshot {
                message_id: message_id.into(),
                activity_type: activity_type.into(),
                content,
            },
            0,
        );
    }

    /// `ACTIVITY_DELTA`.
    pub fn activity_delta(&self, message_id: impl Into<String>, patch: Value) {
        self.send(
            AgentEvent::ActivityDelta {
                message_id: message_id.into(),
                patch,
            },
            0,
        );
    }

    /// `STATE_SNAPSHOT`; only `todos`, `artifacts` and `files` reach Console.
    pub fn state_snapshot(&self, snapshot: Value) {
        self.send(AgentEvent::StateSnapshot(snapshot), 0);
    }

    /// `STATE_DELTA` (a JSON Patch); only operations on `todos`, `artifacts` and `files` reach
    /// Console.
    pub fn state_delta(&self, patch: Value) {
        self.send(AgentEvent::StateDelta(patch), 0);
    }

    /// Hosts `file` behind an unguessable link that expires, and shows it to the user as a
    /// file card. Do not also link it in your text: that would show it twice.
    pub fn file(&self, file: OutputFile) {
        let n = file.bytes.len();
        self.send(AgentEvent::File(file), n);
    }

    /// Shows a file you host yourself as a file card.
    pub fn artifact(&self, artifact: Artifact) {
        self.send(AgentEvent::Artifact(artifact), 0);
    }

    /// `CUSTOM`.
    pub fn custom(&self, name: impl Into<String>, value: Value) {
        self.send(
            AgentEvent::Custom {
                name: name.into(),
                value,
            },
            0,
        );
    }
}

/// The engine's end of an [`Output`]: the events in the order the agent wrote them. Taking
/// an event releases its bytes from the in-flight count; dropping this discards (and
/// releases) whatever is still queued.
#[derive(Debug)]
pub(crate) struct OutputEvents {
    rx: mpsc::UnboundedReceiver<(AgentEvent, usize)>,
    pending: Arc<AtomicUsize>,
}

impl OutputEvents {
    /// The next event if one is queued.
    pub(crate) fn try_recv(&mut self) -> Option<AgentEvent> {
        let (event, bytes) = self.rx.try_recv().ok()?;
        self.release(bytes);
        Some(event)
    }

    /// The count of bytes written and not yet taken.
    pub(crate) fn pending_counter(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.pending)
    }

    fn release(&self, bytes: usize) {
        self.pending.fetch_sub(bytes, Ordering::AcqRel);
        pending::release_total(bytes);
    }
}

impl Stream for OutputEvents {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        match Pin::new(&mut self.rx).poll_next(cx) {
            Poll::Ready(Some((event, bytes))) => {
                self.release(bytes);
                Poll::Ready(Some(event))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl futures::stream::FusedStream for OutputEvents {
    fn is_terminated(&self) -> bool {
        self.rx.is_terminated()
    }
}

impl Drop for OutputEvents {
    fn drop(&mut self) {
        // After close() no send succeeds (a late sender undoes its own count), so draining
        // releases exactly what is still queued.
        self.rx.close();
        while let Ok((_, bytes)) = self.rx.try_recv() {
            self.release(bytes);
        }
    }
}

/// [`Output::ready`]: yields once to the engine when something is pending. The engine polls
/// the agent again only when the turn and the process are under their bounds.
struct Ready<'a> {
    pending: &'a AtomicUsize,
    yielded: bool,
}

impl Future for Ready<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded || self.pending.load(Ordering::Acquire) == 0 {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
