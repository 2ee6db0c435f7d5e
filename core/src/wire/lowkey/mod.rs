//! Lowkey's external turn protocol v1: the same [`crate::Agent`] served to Lowkey.
//!
//! Lowkey POSTs an [`ExternalAgentTurnRequest`](crate::protocol::lowkey::ExternalAgentTurnRequest) to `{base_url}/lowkey/turn` (the endpoint in
//! the `external:<pluginId>` agent block of a Lowkey package) and reads
//! `application/x-ndjson`: one `ExternalAgentTurnEvent` per line, each echoing
//! `protocolVersion: 1`. Routing, auth and the engine are shared with Console's `POST /runs`;
//! only the request model ([`ExternalAgentTurnRequest`](crate::protocol::lowkey::ExternalAgentTurnRequest)) and the writer ([`NdjsonWriter`])
//! are Lowkey's. The JSON Schema of both, written from the protocol's text, is kept in
//! `infra/lowkey/schema/external-turn-protocol.schema.json`.
//!
//! # The turn
//!
//! - **Context** is keyed by `sessionHandle.id` (Lowkey's resume key) and
//!   `sessionHandle.agentId`: `lowkey/` + [`crate::adapter::thread_key`]`(agentId, sessionHandle.id)`
//!   (two `/` where a Console key has one, and ids cannot contain `/`: no Console input can
//!   name a Lowkey session; sessions stored under the old `lowkey:` prefix are not migrated), through
//!   [`storage_id`](crate::protocol::lowkey::storage_id) so any id Lowkey sends makes a safe key.
//! - **`transcriptWindow`** seeds a conversation the store does not know (first turn, or after
//!   the context TTL), so the agent never answers as if it were the first message
//!   ([`ExternalAgentTurnRequest::seed_messages`](crate::protocol::lowkey::ExternalAgentTurnRequest::seed_messages)). A known conversation uses runway's own,
//!   richer context (agent state, pending question) and ignores the window.
//! - **Idempotency** on `turnId`, like Console's `runId`: the run key is
//!   `lowkey/<sessionHandle.id>/<turnId>`. A repeated delivery replays the recorded events
//!   after a fresh `status: started`; a delivery arriving while the first is running waits for
//!   it; the same `turnId` with another message is refused with an `error` event
//!   ([`ExternalAgentTurnRequest::fingerprint`](crate::protocol::lowkey::ExternalAgentTurnRequest::fingerprint) covers `pluginId`, `sessionHandle` and `turn`).
//! - **Cancel**: when Lowkey closes the stream, the agent is stopped; what it had said is kept
//!   in the transcript, marked interrupted.
//! - **Auth**: the same optional header set as Console's routes
//!   ([`crate::adapter::Config::auth`]). Lowkey v1 sends no headers to an external runtime, so a
//!   deployment that serves Lowkey runs without one and relies on network restriction
//!   (see `infra/lowkey/README.md`).
//! - The [`crate::Turn`] the agent sees: `protocol` [`crate::Protocol::Lowkey`], `run_id`
//!   = `turnId`, `thread_id` = `sessionHandle.id`, `agent_id` = `sessionHandle.agentId`,
//!   `workspace_id` = `pluginId`, `user_id` = `userName` (`None` when `headless`), `input` =
//!   `message`, no attachments, no `resume`.
//!
//! # How the agent's output is shown
//!
//! Lowkey shows three kinds of event (`status`, `text`, `error`); the agent's richer output
//! maps onto them like this ([`NdjsonWriter`]):
//!
//! | Agent output (an [`Output`](crate::Output) call / ending) | Lowkey events |
//! |---|---|
//! | (before anything else) | `{"type":"status","status":"started"}`, flushed at once |
//! | `Text` | `text` with the delta, as produced (split only past the line limit) |
//! | `EndMessage`, then more text | the next `text` starts with a blank line (`"\n\n…"`) |
//! | `ToolCallStart { name }` | `status: working`, content `Running <name>…` |
//! | `ToolCallArgs`, `ToolCallEnd`, `ToolCallResult` | nothing (the agent's text tells the result); text after a call starts a new paragraph |
//! | `Reasoning` | `status: working`, content `Thinking…`, once per reasoning stretch; the reasoning text is not sent |
//! | `StepStarted(name)` | `status: working`, content `<name>` |
//! | `StepFinished` | nothing |
//! | `Artifact`, `File` (hosted by runway), `CUSTOM file`, `artifacts` in a state snapshot or patch | a `text` paragraph `File: [name](url)`, once per URL |
//! | other state (`todos`…), `ActivitySnapshot`/`Delta`, other `Custom` | nothing |
//! | silence for `config.heartbeat` | `status: working` without content (keep-alive; not recorded) |
//! | `Outcome::Done` | `status: complete` |
//! | `Outcome::Interrupt(question)` | the question as `text` ([`crate::Interrupt::as_text`], after a blank line), then `status: complete`; the user's reply arrives as the next turn's message, and [`crate::ThreadContext::pending_interrupt`] holds the question |
//! | an error, panic, deadline, limit, store failure, `turnId` reused, or a turn that wrote no text | `error` with a user-safe message (terminal) |
//! | after a terminal event | nothing, ever |
//!
//! Every line carries `"protocolVersion": 1`.

mod writer;

pub use writer::{Lowkey, NdjsonWriter, error_event, has_terminal_event};

#[cfg(test)]
mod tests;
