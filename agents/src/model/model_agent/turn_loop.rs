//! The turn loop of [`ModelAgent`]: settle what waited for the user, take in the new message
//! and its files, then call the model, stream what it says, run the tools it calls, ask the
//! user first where a tool wants approval, and go round again.

use serde_json::Value;

use super::agent::{MAX_STORED_MESSAGE_BYTES, ModelAgent};
use super::approvals::{Settled, review_of};
use crate::model::attachment_intake::{load_images, take_in};
use crate::model::log_budget::LogBudget;
use crate::model::toolbox::Toolbox;
use crate::model::transcript::{ChatMessage, Transcript, truncate};
use runway_core::Role;
use runway_core::adapter::Runtime;
use runway_core::protocol::Decision;
use runway_core::{Agent, AgentError, AgentResult, Outcome, Output, Turn};
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
            turn,
            &self.settings,
            &self.mcp,
            &self.redactor,
            mcp_http,
            self.rt.now_ms(),
        )
        .await
        .with_client_tools(turn.client_tools());
        if !t.awaiting_client.is_empty() {
            self.take_client_results(turn, &mut t);
        }
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
                .run_calls(turn, out, &mut t, to_run, &tools, &log, true)
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
            let mut to_client = Vec::new();
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
                    Some(tool) if tool.is_client() => to_client.push(call),
                    Some(tool) if tool.needs_approval() => to_ask.push(call),
                    _ => to_run.push((call, shown)),
                }
            }
            if let Some(card) = self
                .run_calls(turn, out, &mut t, to_run, &tools, &log, false)
                .await
            {
                // Calls that wait for approval, or for the client, are not left behind the
                // card: a run ending with a question leaves nothing for the client.
                for call in to_ask.into_iter().chain(to_client) {
                    t.messages.push(ChatMessage::Tool {
                        tool_call_id: call.id,
                        content: "Not run: an account had to be connected first; ask again.".into(),
                    });
                }
                self.save(turn, &mut t);
                return Ok(card.into());
            }
            if !to_ask.is_empty() {
                for call in to_client {
                    t.messages.push(ChatMessage::Tool {
                        tool_call_id: call.id,
                        content: NOT_LEFT_FOR_THE_CLIENT.into(),
                    });
                }
                let interrupt = review_of(&to_ask);
                t.pending = to_ask;
                t.review = Some(self.new_review_id());
                self.save(turn, &mut t);
                return Ok(interrupt.into());
            }
            if !to_client.is_empty() {
                // The client runs these: the run ends with them pending, and the next run's
                // results continue the loop (`take_client_results`).
                t.awaiting_client = to_client;
                self.save(turn, &mut t);
                return Ok(Outcome::Done);
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

/// What a client tool call made in the same reply as a call needing approval is answered with:
/// a run that ends with a question leaves nothing for the client.
const NOT_LEFT_FOR_THE_CLIENT: &str = "Not run: the same reply asked for the user's approval \
    first; call it again if it is still needed.";

/// What a client tool call the client sent no result for is answered with.
const NO_CLIENT_RESULT: &str = "Not run: the client sent no result for this call (the user \
    wrote instead).";

impl<R: Runtime> ModelAgent<R> {
    /// Answers the calls the previous turn left for the client with the results it sent
    /// (`Turn::client_tool_results`, by call id), each cut to the settings' result size; a
    /// call it sent none for is answered as not run.
    fn take_client_results(&self, turn: &Turn, t: &mut Transcript) {
        let results = turn.client_tool_results();
        for call in std::mem::take(&mut t.awaiting_client) {
            let content = match results.iter().find(|r| r.tool_call_id == call.id) {
                Some(r) => truncate(&r.content, self.settings.max_tool_result_bytes),
                None => NO_CLIENT_RESULT.to_owned(),
            };
            t.messages.push(ChatMessage::Tool {
                tool_call_id: call.id,
                content,
            });
        }
    }

    /// A fresh id for a question about tool calls (128 random bits, hex).
    fn new_review_id(&self) -> String {
        let mut raw = [0u8; 16];
        self.rt.fill_random(&mut raw);
        hex::encode(raw)
    }
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
