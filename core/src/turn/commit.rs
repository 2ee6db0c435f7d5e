//! What a finished turn stores, in one store round trip: the thread's new messages (the
//! user's, then the answer as the user saw it), the agent's state, the pending question, and
//! the recording a repeated delivery replays.

use crate::agent::Turn;
use crate::error::TurnErrorCode;
use crate::protocol::{Ending, Message, Role};
use crate::store::TurnCommit;
use crate::turn::config::TurnConfig;
use crate::turn::plan::TurnPlan;
use crate::turn::timers::after;
use crate::wire::writer::{Encoding, Writer};

/// The commit of `turn`, which ended with `ending` (`writer` has finished it) on the thread
/// loaded at `base_version`, arrived as `arrival`. Its `token` is left for the caller.
#[allow(clippy::too_many_arguments, private_bounds)]
pub(crate) fn turn_commit<E: Encoding>(
    config: &TurnConfig,
    plan: &TurnPlan,
    turn: Turn,
    ending: &Ending,
    previous_state: &serde_json::Value,
    (base_version, arrival): (u64, u64),
    writer: &mut Writer<E>,
    now_ms: u64,
) -> TurnCommit {
    let validation = turn.is_validation();
    let mut context = turn.context;
    if ending.error_code() == Some(TurnErrorCode::StateTooLarge) {
        context.state = previous_state.clone();
    }
    // A run refused before its input reached the thread leaves the thread as it was: its open
    // question still waits for its answer, and nothing is added to the transcript.
    let unchanged = ending
        .error_code()
        .is_some_and(TurnErrorCode::leaves_thread_unchanged);
    let per_message = config.context_policy.max_transcript_bytes / 4;
    let mut user = Message::new(Role::User, truncate(&plan.user_message, per_message));
    user.run_id = Some(turn.run_id.clone());
    user.arrival = Some(arrival);
    let mut messages = vec![user];
    let mut answer = writer.answer().to_owned();
    if let Ending::Interrupt(i) = ending {
        if !answer.is_empty() {
            answer.push_str("\n\n");
        }
        answer.push_str(&i.as_text());
    }
    if !answer.is_empty() {
        let mut reply = Message::new(Role::Assistant, truncate(&answer, per_message));
        reply.run_id = Some(turn.run_id.clone());
        reply.interrupted = matches!(ending, Ending::Error { .. });
        reply.arrival = Some(arrival);
        messages.push(reply);
    }
    if unchanged {
        messages.clear();
    } else {
        context.messages.extend(messages.iter().cloned());
        context.pending_interrupt = match ending {
            Ending::Interrupt(i) => Some(i.clone()),
            _ => None,
        };
        // Only a run that finished leaves calls for the client: after an error or a question
        // its calls are void (the agent answers them itself on the next turn).
        context.pending_tool_calls = match ending {
            Ending::Success => writer.pending_client_calls().to_vec(),
            _ => Vec::new(),
        };
        context.turns += 1;
    }
    context.trim(&config.context_policy);
    let (context_ttl, recording_ttl) = if validation {
        (config.validation_ttl, config.validation_ttl)
    } else {
        (config.context_ttl, config.recording_ttl)
    };
    TurnCommit {
        run_key: plan.run_key.clone(),
        fingerprint: plan.fingerprint.clone(),
        token: String::new(),
        thread_key: plan.thread_key.clone(),
        base_version,
        arrival,
        context,
        messages,
        policy: config.context_policy,
        now_ms,
        context_expires_at_ms: after(now_ms, context_ttl),
        recording: writer.take_recording().into(),
        recording_expires_at_ms: after(now_ms, recording_ttl),
    }
}

/// Logs how a committed turn ended.
pub(crate) fn log_ending(ending: &Ending) {
    match ending {
        Ending::Success => tracing::info!("turn finished"),
        Ending::Interrupt(i) => tracing::info!(kind = i.kind(), "turn finished with a question"),
        Ending::Error { code, .. } => tracing::warn!(code = %code, "turn ended with RUN_ERROR"),
    }
}

/// `s` cut to at most `max` bytes at a character boundary, with `…` if it was cut.
fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
