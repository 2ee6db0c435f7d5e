//! `POST …/runs` on [`Runway`]: Console's request in, its turn streamed out.

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::agent::context::ThreadContext;
use crate::agent::{Agent, Protocol, Turn};
use crate::http_client::Http;
use crate::keys::{console_run_key, thread_key, workspace_key};
use crate::platform::runtime::Runtime;
use crate::protocol::{LogId, RunRequest};
use crate::service::config::MAX_BODY_BYTES;
use crate::service::intake::within_bound;
use crate::service::{Reply, Runway, json_error, method_not_allowed};
use crate::store::TurnStore;
use crate::turn::plan::TurnPlan;

use crate::wire::console::FrameWriter;

impl<A: Agent, S: TurnStore, R: Runtime> Runway<A, S, R> {
    /// Answers `POST …/runs` once auth has passed: checks the method and body, then streams
    /// the turn. Bad input is a 4xx `{"error"}` before any stream starts.
    pub(crate) fn console_route(&self, req: &http::Request<Bytes>) -> Reply {
        if req.method() != http::Method::POST {
            return Reply::Full(method_not_allowed("POST"));
        }
        if let Err(refused) = within_bound(req.body().len(), MAX_BODY_BYTES) {
            return Reply::Full(refused.into_response());
        }
        let run = match RunRequest::from_json(req.body()) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "bad POST /runs body");
                return Reply::Full(json_error(400, e.message()));
            }
        };
        let base = self.public_base_url(req);
        self.console_turn(run, base)
    }

    /// Starts a Console turn: the reply streams at once, its first frame already written.
    pub fn console_turn(&self, run: RunRequest, public_base_url: String) -> Reply {
        if let Some(refused) = self.unknown_agent(&run.agent_id) {
            return refused;
        }
        let fingerprint = fingerprint(&run);
        // At the error level so the span is enabled whatever `RUNWAY_LOG` says: a filter of
        // `warn` would otherwise drop an info span, and its warnings would lose the ids.
        let span = tracing::error_span!(
            "turn",
            runId = %LogId(&run.run_id),
            threadId = %LogId(&run.thread_id),
            agentId = %LogId(&run.agent_id),
            workspaceId = %LogId(&run.workspace_id),
        );
        let mut user_message = run.input.clone();
        if let Some(resume) = &run.resume {
            let mut note = format!("[{}]", resume.decision.as_str());
            if let Some(m) = &resume.message {
                note = format!("{note} {m}");
            }
            user_message = if user_message.is_empty() {
                note
            } else {
                format!("{note} {user_message}")
            };
        }
        for a in &run.attachments {
            user_message.push_str(&format!("\n[attached: {}]", a.name));
        }
        let plan = TurnPlan {
            run_key: console_run_key(&run.run_id),
            thread_key: thread_key(&run.agent_id, &run.thread_id),
            fingerprint,
            workspace: workspace_key(&run.workspace_id),
            seed: run.history.clone(),
            user_message,
            resume_link: None,
            turn: Turn {
                protocol: Protocol::Console,
                run_id: run.run_id,
                thread_id: run.thread_id,
                agent_id: run.agent_id,
                workspace_id: run.workspace_id,
                user_id: run.user_id,
                input: run.input,
                attachments: run.attachments,
                resume: run.resume,
                context: ThreadContext::default(),
                public_base_url,
                http: Http::default(),
                actions: Default::default(),
                connections: Default::default(),
                usage: Default::default(),
                client_tools: Vec::new(),
                client_tool_results: Vec::new(),
                client_context: Vec::new(),
            },
        };
        // The fingerprint in every event_id: a RUN_ID_REUSED answer never repeats an id of
        // the original run, and a replay (same body) repeats them exactly.
        let event_prefix = format!("{}.{}", plan.turn.run_id, &plan.fingerprint[..8]);
        let writer = FrameWriter::new(plan.turn.run_id.clone(), self.config().limits)
            .with_event_id_prefix(event_prefix)
            .with_thread_id(plan.turn.thread_id.clone());
        self.stream(writer, plan, span)
    }
}

impl<A: Agent, S: TurnStore, R: Runtime> Runway<A, S, R> {
    /// The refusal of a turn for an `agentId` no worker here serves (404, naming it), if so.
    pub(crate) fn unknown_agent(&self, agent_id: &str) -> Option<Reply> {
        if self.engine.policy.serves(agent_id) {
            return None;
        }
        tracing::warn!(code = "UNKNOWN_AGENT", agentId = %LogId(agent_id), "turn refused: no worker serves this agentId");
        let shown: String = agent_id.chars().take(64).collect();
        Some(Reply::Full(json_error(
            404,
            &format!("no Digital Worker with agentId {shown:?} is served here"),
        )))
    }
}

/// A digest of the request: the same `runId` with another body is a different turn.
fn fingerprint<T: serde::Serialize>(req: &T) -> String {
    let bytes = serde_json::to_vec(req).unwrap_or_default();
    hex::encode(Sha256::digest(&bytes))
}
