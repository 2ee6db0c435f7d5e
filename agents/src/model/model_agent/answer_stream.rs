//! The streamed answer of one model call: text and reasoning shown as they arrive, tool calls
//! assembled from their pieces (capped per reply, arguments bounded), usage metered.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::agent::ModelAgent;
use super::call_error::{CUT_OFF, REFUSED, RoundError, TOO_LONG};
use crate::model::call_meter::CallMeter;
use crate::model::chat_stream::{ChatStreamEvent, ChatStreamParser};
use crate::model::log_budget::LogBudget;
use crate::model::toolbox::Toolbox;
use crate::model::transcript::{ModelToolCall, Transcript, partial_answer};
use runway_core::adapter::Runtime;
use runway_core::http_client::{HttpError, HttpResponse};
use runway_core::{Output, ToolCall};

/// Calls of one reply kept in the transcript beyond those run: each is answered as refused;
/// past them, the model is told only how many more there were.
const REFUSED_CALLS_KEPT: usize = 8;
/// Longest call id kept as the model sent it (a longer or repeated one is replaced).
const MAX_CALL_ID_CHARS: usize = 128;

/// What one model call produced.
pub(super) struct Round {
    pub(super) text: String,
    /// Each call, as shown to the user, and why it is refused (`None`: it may run).
    pub(super) calls: Vec<(ModelToolCall, ToolCall, Option<String>)>,
}

/// A tool call being assembled from the stream.
#[derive(Default)]
struct Building {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
    shown: Option<ToolCall>,
    /// Why it is not run, decided as it arrived (over the reply's call cap, arguments too long).
    refused: Option<String>,
    /// For a call of a client tool: the id it was shown with, unique in the thread (the client
    /// answers with it on the next run).
    client_id: Option<String>,
}

/// Which calls of a reply the client runs, and the ids they are shown with: the model's own id
/// when the thread has not used it, else a fresh one.
struct ClientCalls<'a, 't> {
    tools: &'a Toolbox<'t>,
    transcript: &'a Transcript,
    /// The ids given to this reply's client calls so far.
    given: BTreeSet<String>,
}

impl ClientCalls<'_, '_> {
    /// Shows the call `b` (of tool `name`) to the user: as a client tool call when the client
    /// runs `name`, with an id unique in the thread.
    fn start<R: Runtime>(
        &mut self,
        agent: &ModelAgent<R>,
        out: &Output,
        b: &mut Building,
        name: &str,
    ) -> ToolCall {
        if !self.tools.find(name).is_some_and(|t| t.is_client()) {
            return out.start_tool_call(name.to_owned());
        }
        let id = match &b.id {
            Some(id)
                if id.chars().count() <= MAX_CALL_ID_CHARS
                    && !id.starts_with("call-")
                    && !self.given.contains(id)
                    && !self.transcript.has_call(id) =>
            {
                id.clone()
            }
            _ => agent.new_call_id(),
        };
        self.given.insert(id.clone());
        b.client_id = Some(id.clone());
        out.start_client_tool_call(id, name.to_owned())
    }
}

impl<R: Runtime> ModelAgent<R> {
    /// Reads the answer of the model call `response` is for, streamed to `out` (the partial
    /// answer kept in `state` grows with it); `meter` counts the call. On error, also returns
    /// the text already shown.
    pub(super) async fn read_answer(
        &self,
        mut response: HttpResponse,
        mut meter: CallMeter,
        out: &Output,
        state: &mut Value,
        (tools, transcript): (&Toolbox<'_>, &Transcript),
        log: &LogBudget,
    ) -> Result<Round, (RoundError, String)> {
        let s = &self.settings;
        let mut client = ClientCalls {
            tools,
            transcript,
            given: BTreeSet::new(),
        };
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
                                && let Some(n) = b.name.clone()
                            {
                                b.shown = Some(client.start(self, out, b, &n));
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
                        if let Some(call) = &b.shown {
                            if !arguments.is_empty() {
                                out.tool_args(call, arguments);
                            }
                        } else if let Some(n) = b.name.clone() {
                            // Once per call (its name is needed beside `b`), not per chunk.
                            let call = client.start(self, out, b, &n);
                            if !b.arguments.is_empty() {
                                out.tool_args(&call, b.arguments.clone());
                            }
                            b.shown = Some(call);
                            shown_anything = true;
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
        if reported && log.take_line() {
            tracing::info!(
                prompt_tokens = tokens.input,
                completion_tokens = tokens.output,
                reasoning_tokens = tokens.reasoning,
                "model usage"
            );
        }
        let mut calls = Vec::new();
        // The client calls' ids were given as they were shown: the others keep clear of them.
        let mut ids: BTreeSet<String> = client.given;
        let last = building.keys().next_back().copied();
        for (index, b) in building {
            let name = b.name.unwrap_or_default();
            // A call id names the call in the transcript and in decisions: unique in the reply,
            // and short.
            let id = match b.client_id {
                Some(given) => given,
                None => {
                    b.id.filter(|i| i.chars().count() <= MAX_CALL_ID_CHARS && !ids.contains(i))
                        .unwrap_or_else(|| {
                            let mut n = index;
                            while ids.contains(&format!("call_{n}")) {
                                n = n.wrapping_add(1000);
                            }
                            format!("call_{n}")
                        })
                }
            };
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

    /// A fresh id for a client tool call, unique in the thread (96 random bits, hex).
    pub(super) fn new_call_id(&self) -> String {
        let mut raw = [0u8; 12];
        self.rt.fill_random(&mut raw);
        format!("call_{}", hex::encode(raw))
    }
}
