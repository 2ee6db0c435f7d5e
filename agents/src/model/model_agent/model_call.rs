//! Model calls: the request (system prompt, the client's context, transcript, images, tools),
//! sending it, and
//! attempting it again with backoff while nothing has reached the user.

use std::time::Duration;

use serde_json::{Value, json};

use super::agent::{MAX_STORED_MESSAGE_BYTES, ModelAgent};
use super::answer_stream::Round;
use super::call_error::{REFUSED, RoundError, UNAVAILABLE};
use crate::model::attachment_intake::{Images, user_content};
use crate::model::call_meter::CallMeter;
use crate::model::log_budget::LogBudget;
use crate::model::toolbox::Toolbox;
use crate::model::transcript::{ChatMessage, Transcript, truncate};
use runway_core::adapter::Runtime;
use runway_core::http_client::{Http, HttpError, HttpResponse};
use runway_core::protocol::ContextEntry;
use runway_core::{AgentError, Output, Turn, TurnUsage};

/// Attempts at reaching the model before its first token (the first plus retries).
const MAX_ATTEMPTS: u32 = 5;
/// First backoff; doubled after each failed attempt.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait between attempts, even if `Retry-After` asks for more.
const MAX_BACKOFF: Duration = Duration::from_secs(20);
/// Time kept back before the turn's deadline: a retry that would start later is not made.
const DEADLINE_MARGIN: Duration = Duration::from_secs(5);
/// Told to the model with the system prompt: Console names a file it could not attach in a
/// system notice line of the user's input, and that line is not the user's to hear back.
const PLATFORM_NOTICE_RULE: &str = "A user message may contain a notice line from the chat \
    platform (for example about a file it could not attach). It is not the user's words: do \
    not repeat it back; if it matters, say briefly that a file could not be attached.";

/// What one model call is asked: the client's context, the conversation so far, its images and
/// the tools offered.
#[derive(Clone, Copy)]
struct RoundPrompt<'a, 't> {
    /// The client's context as one system message's text ([`context_message`]), if any.
    context: Option<&'a str>,
    transcript: &'a Transcript,
    images: &'a Images,
    tools: &'a Toolbox<'t>,
}

impl<R: Runtime> ModelAgent<R> {
    /// One model call, attempted again (with backoff, honouring `Retry-After`, within the turn's
    /// deadline) while nothing has reached the user.
    pub(super) async fn round_with_retries(
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
        let context = context_message(turn.client_context());
        loop {
            // Saved with an empty partial answer that the stream then extends in place: if the
            // turn is cut mid-answer, the next turn finds what the user saw.
            t.partial = Some(String::new());
            self.save(turn, t);
            t.partial = None;
            let http = turn.http().clone();
            let usage = turn.usage().clone();
            let prompt = RoundPrompt {
                context: context.as_deref(),
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
                    if log.take_line() {
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

    fn request_body(&self, prompt: &RoundPrompt<'_, '_>) -> Value {
        let RoundPrompt {
            context,
            transcript: t,
            images,
            tools,
        } = *prompt;
        let s = &self.settings;
        let mut messages = Vec::with_capacity(t.messages.len() + 2);
        let mut system = match &s.system_prompt {
            Some(p) => format!("{p}\n\n{PLATFORM_NOTICE_RULE}"),
            None => PLATFORM_NOTICE_RULE.to_owned(),
        };
        for note in tools.notes() {
            system.push_str("\n\n");
            system.push_str(note);
        }
        messages.push(json!({"role": "system", "content": system}));
        if let Some(context) = context {
            messages.push(json!({"role": "system", "content": context}));
        }
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
        // Serialized here: its size is the estimate's prompt if the call is cut unreported.
        let body = serde_json::to_vec(&self.request_body(&prompt)).unwrap_or_default();
        let RoundPrompt {
            transcript: t,
            images: _,
            tools,
            context: _,
        } = prompt;
        // Counts the call once however this returns or is dropped (the user stopped the turn).
        let mut meter = CallMeter::new(usage.clone(), s.provider(), &s.model, body.len());
        let response = self
            .send(http, body, &mut meter)
            .await
            .map_err(|e| (e, String::new()))?;
        self.read_answer(response, meter, out, state, (tools, t), log)
            .await
    }
}

/// The client's context (AG-UI's `RunAgentInput.context`, [`Turn::client_context`]) as the
/// text of one system message, sent after the system prompt: each entry's description, then
/// its value. `None` when the client sent none (Console and Lowkey turns never do).
fn context_message(entries: &[ContextEntry]) -> Option<String> {
    if entries.is_empty() {
        return None;
    }
    let mut text = String::from(
        "Context from the user's application (each entry: what it is, then its value):",
    );
    for e in entries {
        text.push_str("\n\n");
        text.push_str(&e.description);
        text.push_str(":\n");
        text.push_str(&e.value);
    }
    Some(text)
}
