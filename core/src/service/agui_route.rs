//! `POST …/agui[/{agentId}]` on [`Runway`]: an AG-UI 1.0 client's `RunAgentInput` in, the
//! run streamed out as AG-UI 1.0 events (Console's frame writer in its AG-UI dialect,
//! [`FrameWriter::agui`]).
//!
//! What AG-UI leaves open is decided here (README, "AG-UI clients"):
//! - the worker is the path's `{agentId}`; `POST /agui` is the deployment's one agent;
//! - the workspace limits and usage are counted in is `forwardedProps.workspaceId`
//!   (`default` when absent: [`crate::protocol::agui::DEFAULT_WORKSPACE`]), the user `forwardedProps.userId`;
//! - runway keeps the thread by `threadId`; the client sends its whole history, and only the
//!   messages after the agent's last word are this run's input
//!   ([`RunAgentInput::split_history`]); the earlier ones seed a thread runway does not know
//!   (a fork or an import) and are otherwise already in the thread;
//! - `runId` is idempotent as Console's: a replay sends the recorded events;
//! - `resume[0]` answers the question the previous run ended with
//!   ([`RunAgentInput::agent_resume`]);
//! - `tools` are the client's own ([`crate::Turn::client_tools`]): a call of one ends the run
//!   with it in `pendingToolCallIds`, and the next run's `tool` messages carry the results
//!   ([`crate::Turn::client_tool_results`], not in the input text; each must answer a call
//!   left pending, `TOOL_RESULT_UNMATCHED` otherwise). runway's own tool results, which the
//!   client holds as `tool` messages named `{toolCallId}-result`, are the agent's side;
//! - `context` reaches the agent as [`crate::Turn::client_context`] (bounded: a 400 over
//!   [`crate::protocol::MAX_CLIENT_CONTEXT_BYTES`]), for this run only, not stored;
//! - the final event carries `usage[]`: the tokens the model endpoint reported, per provider
//!   and model.

use bytes::Bytes;

use crate::agent::context::ThreadContext;
use crate::agent::{Agent, Protocol, Turn};
use crate::http_client::Http;
use crate::keys::{agui_run_key, agui_thread_key, workspace_key};
use crate::meter::TurnUsage;
use crate::platform::runtime::Runtime;
use crate::protocol::agui::{InputMessage, RunAgentInput};
use crate::protocol::{LogId, Resume};
use crate::service::config::MAX_BODY_BYTES;
use crate::service::intake::within_bound;
use crate::service::{Reply, Runway, json_error, method_not_allowed};
use crate::store::TurnStore;
use crate::turn::plan::TurnPlan;
use crate::turn::resume_link::ResumeLink;
use crate::wire::console::FrameWriter;

/// The `agentId` of `POST /agui` on a deployment whose one agent serves every `agentId`.
pub const SINGLE_AGENT_ID: &str = "default";

impl<A: Agent, S: TurnStore, R: Runtime> Runway<A, S, R> {
    /// Answers `POST …/agui[/{agentId}]` once auth has passed: checks the method, the worker
    /// and the body, then streams the run. Bad input is a 4xx `{"error"}` before any stream
    /// starts.
    pub(crate) fn agui_route(&self, req: &http::Request<Bytes>, agent_id: Option<&str>) -> Reply {
        if req.method() != http::Method::POST {
            return Reply::Full(method_not_allowed("POST"));
        }
        let agent_id = match agent_id {
            Some(id) => id.to_owned(),
            None => match self.single_agent_id() {
                Some(id) => id,
                None => {
                    return Reply::Full(json_error(
                        404,
                        "this deployment serves several Digital Workers: use POST /agui/{agentId}",
                    ));
                }
            },
        };
        if let Some(refused) = self.unknown_agent(&agent_id) {
            return refused;
        }
        if let Err(refused) = within_bound(req.body().len(), MAX_BODY_BYTES) {
            return Reply::Full(refused.into_response());
        }
        let input = match RunAgentInput::from_json(req.body()) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "bad POST /agui body");
                return Reply::Full(json_error(400, e.message()));
            }
        };
        let resume = match input.agent_resume() {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "bad POST /agui resume");
                return Reply::Full(json_error(400, e.message()));
            }
        };
        let base = self.public_base_url(req);
        self.agui_run(input, resume, agent_id, base)
    }

    /// The worker `POST /agui` names: the one listed worker, or [`SINGLE_AGENT_ID`] when one
    /// agent serves every `agentId`; `None` when several workers are listed.
    fn single_agent_id(&self) -> Option<String> {
        let policy = &self.engine.policy;
        let mut listed = policy.listed_workers();
        match (listed.next(), listed.next()) {
            (Some(only), None) => Some(only.to_owned()),
            (None, _) if policy.serves(SINGLE_AGENT_ID) => Some(SINGLE_AGENT_ID.to_owned()),
            _ => None,
        }
    }

    /// Starts an AG-UI run of worker `agent_id`: the reply streams at once, `RUN_STARTED`
    /// already written.
    pub fn agui_run(
        &self,
        input: RunAgentInput,
        resume: Option<Resume>,
        agent_id: String,
        public_base_url: String,
    ) -> Reply {
        let span = tracing::error_span!(
            "agui_run",
            runId = %LogId(&input.run_id),
            threadId = %LogId(&input.thread_id),
            agentId = %LogId(&agent_id),
            workspaceId = %LogId(&input.workspace_id),
        );
        let (earlier, new) = input.split_history();
        // A resume continues the run that asked: its messages were that run's input (AG-UI sends
        // no new input while an interrupt is open), so none is new.
        let new = if resume.is_some() { &[][..] } else { new };
        // The client tools' results reach the agent apart from the text (checked against the
        // calls the thread left pending: `ResumeLink`).
        let tool_results: Vec<_> = new
            .iter()
            .filter_map(InputMessage::client_tool_result)
            .collect();
        let resume_link = ResumeLink {
            answers: input.resume_ids(),
            tool_results: tool_results
                .iter()
                .map(|r| r.tool_call_id.clone())
                .collect(),
        };
        let seed = earlier
            .iter()
            .filter_map(InputMessage::transcript_message)
            .collect();
        let joined = |client_results: bool| {
            new.iter()
                .filter(|m| client_results || m.client_tool_result().is_none())
                .map(InputMessage::text)
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        let input_text = joined(false);
        // As Console's route does: the decision enters the transcript with the input; so do
        // the client tools' results (the thread records each once, labelled with its call).
        let user_message = match &resume {
            Some(r) if input_text.is_empty() => format!("[{}]", r.decision.as_str()),
            Some(r) => format!("[{}] {input_text}", r.decision.as_str()),
            None if tool_results.is_empty() => input_text.clone(),
            None => joined(true),
        };
        // Namespaced apart from Console's and Lowkey's keys (see `keys.rs`): an AG-UI thread
        // is never a Console thread of the same id.
        let thread_key = agui_thread_key(&agent_id, &input.thread_id);
        let run_key = agui_run_key(&agent_id, &input.run_id);
        let writer = FrameWriter::agui(
            input.run_id.clone(),
            input.thread_id.clone(),
            input.parent_run_id.clone(),
            self.config().limits,
        )
        .with_client_view(input.sent_messages, input.state);
        let plan = TurnPlan {
            run_key,
            thread_key,
            fingerprint: input.fingerprint,
            workspace: workspace_key(&input.workspace_id),
            seed,
            user_message,
            resume_link: Some(resume_link),
            turn: Turn {
                protocol: Protocol::Agui,
                run_id: input.run_id,
                thread_id: input.thread_id,
                agent_id,
                workspace_id: input.workspace_id,
                user_id: input.user_id,
                input: input_text,
                attachments: Vec::new(),
                resume,
                context: ThreadContext::default(),
                public_base_url,
                http: Http::default(),
                actions: Default::default(),
                connections: Default::default(),
                usage: TurnUsage::keeping_model_rows(),
                client_tools: input.tools,
                client_tool_results: tool_results,
                client_context: input.context,
            },
        };
        self.stream(writer, plan, span)
    }
}
