//! `POST …/lowkey/turn` on [`Runway`].

use bytes::Bytes;

use crate::agent::context::ThreadContext;
use crate::agent::{Agent, Protocol, Turn};
use crate::http_client::Http;
use crate::keys::{lowkey_run_key, lowkey_thread_key, workspace_key};
use crate::platform::runtime::Runtime;
use crate::service::config::MAX_BODY_BYTES;
use crate::service::intake::within_bound;
use crate::service::{Reply, Runway, json_error};
use crate::store::TurnStore;
use crate::turn::plan::TurnPlan;

use crate::protocol::LogId;
use crate::protocol::lowkey::ExternalAgentTurnRequest;
use crate::wire::lowkey::NdjsonWriter;

impl<A: Agent, S: TurnStore, R: Runtime> Runway<A, S, R> {
    /// Answers `POST …/lowkey/turn` once auth has passed: checks the method and body, then
    /// streams the turn. Bad input is a 4xx `{"error"}` before any stream starts.
    pub(crate) fn lowkey_route(&self, req: &http::Request<Bytes>) -> Reply {
        if req.method() != http::Method::POST {
            let mut r = json_error(405, "method not allowed: use POST");
            r.headers_mut()
                .insert(http::header::ALLOW, http::HeaderValue::from_static("POST"));
            return Reply::Full(r);
        }
        if let Err(refused) = within_bound(req.body().len(), MAX_BODY_BYTES) {
            return Reply::Full(refused.into_response());
        }
        let turn = match ExternalAgentTurnRequest::from_json(req.body()) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = %e, "bad POST /lowkey/turn body");
                return Reply::Full(json_error(400, e.message()));
            }
        };
        let base = self.public_base_url(req);
        self.lowkey_turn(turn, base)
    }

    /// Starts a Lowkey turn: the reply streams at once, `status: started` already written.
    pub fn lowkey_turn(&self, req: ExternalAgentTurnRequest, public_base_url: String) -> Reply {
        if let Some(refused) = self.unknown_agent(&req.session_handle.agent_id) {
            return refused;
        }
        let fingerprint = req.fingerprint();
        let seed = req.seed_messages();
        let run_key = lowkey_run_key(&req.session_handle.id, &req.turn.turn_id);
        // Namespaced so no Console input can name a Lowkey session (see `keys.rs`).
        let thread_key = lowkey_thread_key(&req.session_handle.agent_id, &req.session_handle.id);
        // Ids are any string here: escaped and bounded (`LogId`) so none can forge a line.
        // At the error level, like Console's `turn` span: enabled at every `RUNWAY_LOG` level.
        let span = tracing::error_span!(
            "lowkey_turn",
            turnId = %LogId(&req.turn.turn_id),
            sessionHandleId = %LogId(&req.session_handle.id),
            agentId = %LogId(&req.session_handle.agent_id),
            workspaceId = %LogId(&req.plugin_id),
        );
        let user_id = if req.turn.headless {
            None
        } else {
            req.turn.user_name.clone()
        };
        let plan = TurnPlan {
            run_key,
            thread_key,
            fingerprint,
            // A Lowkey session belongs to the plugin that started it: the plugin is the
            // workspace its limits and usage are counted under.
            workspace: workspace_key(&req.plugin_id),
            seed,
            user_message: req.turn.message.clone(),
            resume_link: None,
            turn: Turn {
                protocol: Protocol::Lowkey,
                run_id: req.turn.turn_id,
                thread_id: req.session_handle.id,
                agent_id: req.session_handle.agent_id,
                workspace_id: req.plugin_id,
                user_id,
                input: req.turn.message,
                attachments: Vec::new(),
                resume: None,
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
        let writer = NdjsonWriter::new(self.config().limits);
        self.stream(writer, plan, span)
    }
}
