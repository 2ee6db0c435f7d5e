//! Approvals: the `review` question for calls that need the user's approval, and what the
//! next turn's decision (approve, edit, reject, a reply or a new message) does with them.

use serde_json::Value;

use super::agent::ModelAgent;
use crate::model::log_budget::LogBudget;
use crate::model::toolbox::Toolbox;
use crate::model::transcript::{ChatMessage, ModelToolCall, Transcript};
use runway_core::adapter::Runtime;
use runway_core::protocol::{Decision, EditedAction, Interrupt, LogId, ReviewItem};
use runway_core::{Output, Turn};

/// What a call another decision already settled is answered with.
const ALREADY_DECIDED: &str = "Not run by this turn: another decision on this conversation \
    already took this call (it may have run there); its result is not known here.";

/// What became of the calls waiting for a decision.
pub(super) enum Settled {
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

impl<R: Runtime> ModelAgent<R> {
    /// Answers the calls the previous turn asked about, from this turn's `resume` (or its new
    /// message, when the user typed instead of deciding). A decision settles exactly the calls
    /// it names: `approve` and `reject` the whole question, `edit` each call it edits (matched
    /// by id, or by name when that names one call), a reply or a new message every call. Each
    /// call is claimed in the store before anything is done with it, so of two decisions sent
    /// at once only one settles it (and only one runs it).
    pub(super) async fn settle_pending(
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
                        if log.take_line() {
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
                    if log.take_line() {
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
        if let Some(card) = self
            .run_calls(turn, out, t, to_run, tools, log, false)
            .await
        {
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
}

/// The `review` question for calls that need the user's approval.
pub(super) fn review_of(calls: &[ModelToolCall]) -> Interrupt {
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
