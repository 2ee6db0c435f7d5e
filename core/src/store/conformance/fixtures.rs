//! What the checks build and call: claims and commits as the engine would make them
//! ([`claim`], [`claim_from`], [`commit`]), and the store calls a check expects to succeed.

use serde_json::json;

use crate::agent::context::{ContextPolicy, ThreadContext};
use crate::protocol::{Message, Role};
use crate::store::{CommitOutcome, TurnClaim, TurnCommit, TurnStart, TurnStore};

/// The workspace every claim made by [`claim`] comes from.
pub const WORKSPACE: &str = "workspace-1";

/// A claim of `run` on `thread` at `now` with a one-second lease and token `token`.
pub fn claim(run: &str, thread: &str, fp: &str, now: u64, token: &str) -> TurnClaim {
    TurnClaim {
        run_key: run.into(),
        thread_key: thread.into(),
        fingerprint: fp.into(),
        now_ms: now,
        lease_until_ms: now + 1000,
        token: token.into(),
        workspace: WORKSPACE.into(),
    }
}

/// [`claim`] from `workspace`.
pub fn claim_from(
    workspace: &str,
    run: &str,
    thread: &str,
    fp: &str,
    now: u64,
    token: &str,
) -> TurnClaim {
    TurnClaim {
        workspace: workspace.into(),
        ..claim(run, thread, fp, now, token)
    }
}

/// What the engine would commit for a claimed turn that said `answer` to `input`, setting the
/// agent's state to `{"last": input}`; the context lives 10 s and the recording 20 s.
pub fn commit(claim: &TurnClaim, started: &TurnStart, input: &str, answer: &str) -> TurnCommit {
    let TurnStart::Claimed {
        context,
        version,
        arrival,
    } = started
    else {
        panic!("commit of an unclaimed turn: {started:?}");
    };
    let mut messages = Vec::new();
    for (role, text) in [(Role::User, input), (Role::Assistant, answer)] {
        let mut m = Message::new(role, text);
        m.run_id = Some(claim.run_key.clone());
        m.arrival = Some(*arrival);
        messages.push(m);
    }
    let mut thread = context.clone().unwrap_or_default();
    thread.messages.extend(messages.iter().cloned());
    thread.state = json!({ "last": input });
    thread.turns += 1;
    TurnCommit {
        run_key: claim.run_key.clone(),
        fingerprint: claim.fingerprint.clone(),
        token: claim.token.clone(),
        thread_key: claim.thread_key.clone(),
        base_version: *version,
        arrival: *arrival,
        context: thread,
        messages,
        policy: ContextPolicy::default(),
        now_ms: claim.now_ms,
        context_expires_at_ms: claim.now_ms + 10_000,
        recording: format!("data: {{\"run\":\"{}\"}}\n\n", claim.run_key).into(),
        recording_expires_at_ms: claim.now_ms + 20_000,
    }
}

pub(super) async fn start<S: TurnStore>(s: &S, c: &TurnClaim) -> TurnStart {
    s.start_turn(c)
        .await
        .unwrap_or_else(|e| panic!("start_turn({}): {e}", c.run_key))
}

pub(super) async fn finish<S: TurnStore>(s: &S, c: &TurnCommit) -> CommitOutcome {
    s.finish_turn(c)
        .await
        .unwrap_or_else(|e| panic!("finish_turn({}): {e}", c.run_key))
}

/// The thread as a fresh claim at `now` loads it.
pub(super) async fn thread_at<S: TurnStore>(
    s: &S,
    thread: &str,
    now: u64,
) -> Option<ThreadContext> {
    let probe = claim(
        &format!("{thread}-probe-{now}"),
        thread,
        "probe",
        now,
        "probe",
    );
    match start(s, &probe).await {
        TurnStart::Claimed { context, .. } => context,
        other => panic!("probe claim: {other:?}"),
    }
}

pub(super) fn texts(c: &ThreadContext) -> Vec<&str> {
    c.messages.iter().map(|m| m.content.as_str()).collect()
}
