//! The run/thread state machine, once, as pure decisions every [`crate::adapter::TurnStore`] calls.
//!
//! Overlap semantics are LangGraph's `multitask_strategy = "interrupt"`: **one live turn per
//! thread; a newer turn supersedes an older one still running.** Each successful claim is an
//! *arrival* on its thread, numbered by the store (1, 2, 3…); the live turn is the latest
//! arrival. A superseded turn is stopped (at once where the runtime sees a disconnect,
//! otherwise at its next heartbeat, which reads [`crate::adapter::TurnStore::latest_arrival`]) and is
//! recorded as interrupted: its user message and partial answer are kept, in arrival order,
//! and never overwrite what came after.
//!
//! Three decisions, plain data in and out:
//! - [`decide_claim`]: the run's stored record and a claim → replay | wait | conflict | take.
//! - [`decide_owner`]: once a claim may take its run, the thread's owner → claim | refuse.
//!   **A thread belongs to the workspace that started it**: a turn from another workspace is
//!   refused before anything is written, counted or loaded.
//! - [`decide_commit`]: the thread's stored head and a commit → apply | merge | superseded,
//!   after [`holds_claim`] (the fencing token) said the commit may be written at all.
//!
//! [`thread_after`] computes what is written. A backend supplies only its atomic primitives:
//! a transaction (SQLite, the Durable Object, memory) or conditional writes retried on a
//! changed version (DynamoDB).

use crate::agent::context::ThreadContext;
use crate::protocol::Message;
use crate::store::{CommitOutcome, TurnClaim, TurnCommit};

/// Where a stored run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPhase {
    /// A delivery holds the claim until the lease ends.
    Running,
    /// Finished: the recording can be replayed until it expires.
    Done,
}

/// A run's stored record, as much of it as the decisions need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRecord<'a> {
    /// The request body's digest.
    pub fingerprint: &'a str,
    /// Running or done.
    pub phase: RunPhase,
    /// The lease's end (running) or the recording's expiry (done), ms since the epoch.
    pub until_ms: u64,
    /// The fencing token of the claim that holds (or held) the run.
    pub token: &'a str,
}

/// What to do with a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimDecision {
    /// The run finished: send its recording.
    Replay,
    /// Another delivery holds a live claim: wait and ask again.
    Wait,
    /// The run key was used with another request body.
    Conflict,
    /// The run is free (new, lease lapsed, or recording expired): claim it.
    Take,
}

/// The decision for `claim` given the run's stored record (`None`: no record).
pub fn decide_claim(record: Option<RunRecord<'_>>, claim: &TurnClaim) -> ClaimDecision {
    match record {
        Some(r) if r.until_ms > claim.now_ms => {
            if r.fingerprint != claim.fingerprint {
                ClaimDecision::Conflict
            } else if r.phase == RunPhase::Done {
                ClaimDecision::Replay
            } else {
                ClaimDecision::Wait
            }
        }
        _ => ClaimDecision::Take,
    }
}

/// Whether a claim may go on, given the workspace owning its thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerDecision {
    /// The thread is the claiming workspace's, or nobody's: claim it, recording the claiming
    /// workspace as its owner.
    Claim,
    /// Another workspace owns the thread: refuse, writing nothing.
    Refuse,
}

/// The decision for a claim from `workspace` on a thread owned by `owner`: `None` (or empty)
/// when nobody owns it — a new thread, one expired at the claim's time, or one stored before
/// owners were recorded, which the first turn after the upgrade claims. A backend reads the
/// owner and writes `workspace` as the owner in the same atomic step as the run's claim.
pub fn decide_owner(owner: Option<&str>, workspace: &str) -> OwnerDecision {
    match owner {
        Some(o) if !o.is_empty() && o != workspace => OwnerDecision::Refuse,
        _ => OwnerDecision::Claim,
    }
}

/// Whether a commit with `token` may be written: the run's record must still be the running
/// claim that token made. A lapsed lease nobody took over still holds; a claim taken over by
/// another delivery, or a run already recorded, does not.
pub fn holds_claim(record: Option<RunRecord<'_>>, token: &str) -> bool {
    matches!(record, Some(r) if r.phase == RunPhase::Running && r.token == token)
}

/// A thread's stored head: what [`decide_commit`] needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadHead {
    /// Bumped by every commit (0: no thread stored).
    pub version: u64,
    /// The latest arrival (0: none yet).
    pub latest_arrival: u64,
}

/// How a commit (whose claim still holds) meets the stored thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitDecision {
    /// Nothing else was committed since the turn loaded the thread: write its context.
    Apply,
    /// Another turn committed in between: merge this turn's messages into the stored thread.
    Merge,
    /// A newer turn arrived: keep this turn's messages (answer interrupted), nothing else.
    Superseded,
}

impl CommitDecision {
    /// The outcome reported to the engine.
    pub fn outcome(self) -> CommitOutcome {
        match self {
            Self::Apply => CommitOutcome::Applied,
            Self::Merge => CommitOutcome::Merged,
            Self::Superseded => CommitOutcome::Superseded,
        }
    }
}

/// The decision for `commit` given the thread's stored head.
pub fn decide_commit(stored: ThreadHead, commit: &TurnCommit) -> CommitDecision {
    if stored.latest_arrival > commit.arrival {
        CommitDecision::Superseded
    } else if stored.version == commit.base_version {
        CommitDecision::Apply
    } else {
        CommitDecision::Merge
    }
}

/// The thread to write for `decision`: for [`CommitDecision::Apply`] the commit's own
/// context; otherwise `stored` (`None`: expired or absent) with the commit's messages inserted
/// after every message of an earlier or equal arrival, trimmed by the commit's policy. A merge
/// takes this turn's state and question (it is the live turn); a superseded turn leaves them.
pub fn thread_after(
    decision: CommitDecision,
    stored: Option<ThreadContext>,
    commit: &TurnCommit,
) -> ThreadContext {
    if decision == CommitDecision::Apply {
        return commit.context.clone();
    }
    let mut thread = stored.unwrap_or_default();
    let at = thread
        .messages
        .iter()
        .position(|m| m.arrival.unwrap_or(0) > commit.arrival)
        .unwrap_or(thread.messages.len());
    let superseded = decision == CommitDecision::Superseded;
    let mine = commit.messages.iter().cloned().map(|mut m: Message| {
        if superseded && m.role != crate::protocol::Role::User {
            m.interrupted = true;
        }
        m
    });
    thread.messages.splice(at..at, mine);
    if !superseded {
        thread.state = commit.context.state.clone();
        thread.pending_interrupt = commit.context.pending_interrupt.clone();
        thread
            .pending_tool_calls
            .clone_from(&commit.context.pending_tool_calls);
    }
    thread.turns += 1;
    thread.trim(&commit.policy);
    thread
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::context::ContextPolicy;
    use crate::protocol::Role;

    fn claim(fp: &str, now: u64) -> TurnClaim {
        TurnClaim {
            run_key: "r".into(),
            thread_key: "t".into(),
            fingerprint: fp.into(),
            now_ms: now,
            lease_until_ms: now + 100,
            token: "k".into(),
            workspace: "w1".into(),
        }
    }

    fn msg(role: Role, text: &str, arrival: u64) -> Message {
        let mut m = Message::new(role, text);
        m.arrival = Some(arrival);
        m
    }

    fn commit(arrival: u64, base_version: u64) -> TurnCommit {
        TurnCommit {
            run_key: "r".into(),
            fingerprint: "f".into(),
            token: "k".into(),
            thread_key: "t".into(),
            base_version,
            arrival,
            context: ThreadContext {
                state: serde_json::json!({"mine": arrival}),
                ..ThreadContext::default()
            },
            messages: vec![
                msg(Role::User, &format!("u{arrival}"), arrival),
                msg(Role::Assistant, &format!("a{arrival}"), arrival),
            ],
            policy: ContextPolicy::default(),
            now_ms: 0,
            context_expires_at_ms: 0,
            recording: Default::default(),
            recording_expires_at_ms: 0,
        }
    }

    #[test]
    fn claims() {
        let rec = |fp, phase, until| RunRecord {
            fingerprint: fp,
            phase,
            until_ms: until,
            token: "x",
        };
        let c = claim("f", 50);
        assert_eq!(decide_claim(None, &c), ClaimDecision::Take);
        let running = rec("f", RunPhase::Running, 60);
        assert_eq!(decide_claim(Some(running), &c), ClaimDecision::Wait);
        assert_eq!(
            decide_claim(Some(rec("g", RunPhase::Running, 60)), &c),
            ClaimDecision::Conflict
        );
        assert_eq!(
            decide_claim(Some(rec("f", RunPhase::Done, 60)), &c),
            ClaimDecision::Replay
        );
        // A lapsed lease or an expired recording is free again.
        assert_eq!(
            decide_claim(Some(rec("f", RunPhase::Running, 50)), &c),
            ClaimDecision::Take
        );
        assert_eq!(
            decide_claim(Some(rec("g", RunPhase::Done, 10)), &c),
            ClaimDecision::Take
        );
        assert!(holds_claim(Some(running), "x"));
        assert!(holds_claim(Some(rec("f", RunPhase::Running, 0)), "x"));
        assert!(!holds_claim(Some(running), "y"));
        assert!(!holds_claim(Some(rec("f", RunPhase::Done, 60)), "x"));
        assert!(!holds_claim(None, "x"));
    }

    #[test]
    fn a_thread_refuses_only_another_workspace() {
        assert_eq!(decide_owner(None, "w1"), OwnerDecision::Claim);
        assert_eq!(decide_owner(Some(""), "w1"), OwnerDecision::Claim);
        assert_eq!(decide_owner(Some("w1"), "w1"), OwnerDecision::Claim);
        assert_eq!(decide_owner(Some("w2"), "w1"), OwnerDecision::Refuse);
        // A claim naming no workspace never takes an owned thread.
        assert_eq!(decide_owner(Some("w2"), ""), OwnerDecision::Refuse);
    }

    #[test]
    fn commits() {
        let head = |version, latest_arrival| ThreadHead {
            version,
            latest_arrival,
        };
        assert_eq!(
            decide_commit(head(3, 2), &commit(2, 3)),
            CommitDecision::Apply
        );
        assert_eq!(
            decide_commit(head(4, 2), &commit(2, 3)),
            CommitDecision::Merge
        );
        assert_eq!(
            decide_commit(head(3, 5), &commit(2, 3)),
            CommitDecision::Superseded
        );
    }

    #[test]
    fn a_late_superseded_turn_is_inserted_in_arrival_order_and_keeps_the_state() {
        // Arrival 1 ran long; arrival 2 finished first.
        let stored = ThreadContext {
            messages: vec![
                msg(Role::User, "old", 0),
                msg(Role::User, "u2", 2),
                msg(Role::Assistant, "a2", 2),
            ],
            state: serde_json::json!({"mine": 2}),
            turns: 5,
            ..ThreadContext::default()
        };
        let t = thread_after(CommitDecision::Superseded, Some(stored), &commit(1, 4));
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["old", "u1", "a1", "u2", "a2"]);
        assert!(t.messages[2].interrupted && !t.messages[1].interrupted);
        assert!(!t.messages[4].interrupted);
        assert_eq!(t.state, serde_json::json!({"mine": 2}));
        assert_eq!(t.turns, 6);
    }

    #[test]
    fn a_merge_takes_the_live_turns_state() {
        let stored = ThreadContext {
            messages: vec![msg(Role::User, "u1", 1)],
            state: serde_json::json!({"mine": 1}),
            ..ThreadContext::default()
        };
        let t = thread_after(CommitDecision::Merge, Some(stored), &commit(2, 0));
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["u1", "u2", "a2"]);
        assert_eq!(t.state, serde_json::json!({"mine": 2}));
        assert!(!t.messages[2].interrupted);
    }
}
