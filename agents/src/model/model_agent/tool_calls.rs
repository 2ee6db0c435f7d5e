//! Tool calls: running the calls of one reply (bounded, at once), as the user where a tool
//! acts with the user's connected account, and answering each in the transcript.

use std::collections::HashMap;

use super::agent::ModelAgent;
use crate::model::log_budget::LogBudget;
use crate::model::tool_runner::{is_failure, run_bounded};
use crate::model::toolbox::Toolbox;
use crate::model::transcript::{ChatMessage, ModelToolCall, Transcript};
use runway_core::adapter::Runtime;
use runway_core::http_client::Http;
use runway_core::protocol::{Interrupt, LogId};
use runway_core::{AccessToken, Connection, ConnectionError, Rejected};
use runway_core::{Output, ToolCall, Turn};

impl<R: Runtime> ModelAgent<R> {
    /// Runs `calls` (at most [`ModelSettings::max_tool_calls_per_reply`] at once), shows each
    /// result and adds it to the transcript. A call whose tool acts as the user (`auth`) runs
    /// with the user's token; without one it is not sent: it waits in
    /// [`Transcript::connecting`] and the `authorization` card to end the turn with is
    /// returned. `pending`: the calls waited behind the card (see
    /// [`Toolbox::provider_of_pending`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_calls(
        &self,
        turn: &Turn,
        out: &Output,
        t: &mut Transcript,
        calls: Vec<(ModelToolCall, ToolCall)>,
        tools: &Toolbox<'_>,
        log: &LogBudget,
        pending: bool,
    ) -> Option<Interrupt> {
        if calls.is_empty() {
            return None;
        }
        // One lookup per provider per reply: one card, one state.
        let mut found: HashMap<String, Result<Connection, ConnectionError>> = HashMap::new();
        let mut card = None;
        let mut ready = Vec::with_capacity(calls.len());
        for (call, shown) in calls {
            let key = if pending {
                tools.provider_of_pending(&call.function.name)
            } else {
                tools
                    .find(&call.function.name)
                    .and_then(|tool| tool.auth().map(str::to_owned))
            };
            let Some(key) = key else {
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
            if log.take_line() {
                tracing::warn!(run_id = %LogId(&turn.run_id), error = %e, "a connected account could not be used");
            }
            format!(
                "Error: the account this tool acts with could not be used ({e}); the tool \
                 was not called."
            )
        }
    }
}
