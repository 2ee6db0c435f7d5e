//! The run's claim (`start_turn`): one winner, a replay of a finished run, a conflict on
//! another body, a lease that lapses, a commit fenced by the claim's token, and expiry exact on
//! read.

use futures::future::join_all;
use serde_json::json;

use super::fixtures::{claim, commit, finish, start, texts, thread_at};
use crate::store::{CommitOutcome, TurnStart, TurnStore};

/// Claim, wait, conflict, lease lapse, replay.
pub async fn claim_replay_conflict_and_lease<S: TurnStore>(s: &S, p: &str) {
    let (r, t) = (format!("{p}/r"), format!("{p}/t"));
    let first = start(s, &claim(&r, &t, "f", 0, "a")).await;
    assert!(
        matches!(
            first,
            TurnStart::Claimed {
                context: None,
                version: 0,
                arrival: 1
            }
        ),
        "first claim: {first:?}"
    );
    assert_eq!(
        start(s, &claim(&r, &t, "f", 10, "b")).await,
        TurnStart::Running
    );
    assert_eq!(
        start(s, &claim(&r, &t, "g", 10, "b")).await,
        TurnStart::Conflict
    );
    // The lease lapsed (a crashed delivery): the run can be claimed again.
    let c = claim(&r, &t, "f", 5000, "c");
    let again = start(s, &c).await;
    assert!(
        matches!(again, TurnStart::Claimed { arrival: 2, .. }),
        "{again:?}"
    );
    assert_eq!(
        finish(s, &commit(&c, &again, "hello", "hi")).await,
        CommitOutcome::Applied
    );
    assert_eq!(
        start(s, &claim(&r, &t, "f", 5001, "d")).await,
        TurnStart::Finished {
            recording: format!("data: {{\"run\":\"{r}\"}}\n\n")
        }
    );
    assert_eq!(
        start(s, &claim(&r, &t, "g", 5001, "d")).await,
        TurnStart::Conflict
    );
    let next = start(s, &claim(&format!("{p}/r2"), &t, "f", 5002, "e")).await;
    let TurnStart::Claimed {
        context: Some(ctx),
        version: 1,
        arrival: 3,
    } = next
    else {
        panic!("second run: {next:?}")
    };
    assert_eq!(texts(&ctx), ["hello", "hi"]);
    assert_eq!(ctx.state, json!({"last": "hello"}));
    assert_eq!(s.latest_arrival(&t).await.unwrap(), 3);
    assert_eq!(s.latest_arrival(&format!("{p}/none")).await.unwrap(), 0);
}

/// An item past its expiry is absent on read, whether or not it was deleted.
pub async fn expiry_is_exact_on_read<S: TurnStore>(s: &S, p: &str) {
    let (r, t) = (format!("{p}/r"), format!("{p}/t"));
    let c = claim(&r, &t, "f", 0, "a");
    let st = start(s, &c).await;
    finish(s, &commit(&c, &st, "x", "y")).await;
    // The recording expired at 20 000 (context at 10 000): the run is new again.
    let again = start(s, &claim(&r, &t, "f", 20_000, "b")).await;
    assert!(
        matches!(again, TurnStart::Claimed { context: None, .. }),
        "{again:?}"
    );
    assert!(thread_at(s, &t, 9_999).await.is_some());
    assert!(thread_at(s, &t, 10_000).await.is_none());
}

/// Of concurrent claims of one run, exactly one is `Claimed`.
pub async fn concurrent_claims_of_one_run_have_one_winner<S: TurnStore>(s: &S, p: &str) {
    let (r, t) = (format!("{p}/r"), format!("{p}/t"));
    let claims: Vec<_> = (0..8)
        .map(|i| claim(&r, &t, "f", 0, &format!("k{i}")))
        .collect();
    let starts = join_all(claims.iter().map(|c| start(s, c))).await;
    let won = starts
        .iter()
        .filter(|r| matches!(r, TurnStart::Claimed { .. }))
        .count();
    assert_eq!(won, 1, "{starts:?}");
    assert!(
        starts
            .iter()
            .all(|r| matches!(r, TurnStart::Claimed { .. } | TurnStart::Running)),
        "{starts:?}"
    );
}

/// A delivery whose lease lapsed and was taken over cannot overwrite the retry's recording.
pub async fn a_commit_proves_it_holds_the_claim<S: TurnStore>(s: &S, p: &str) {
    let (r, t) = (format!("{p}/r"), format!("{p}/t"));
    let original = claim(&r, &t, "f", 0, "original");
    let o = start(s, &original).await;
    // The original stalls past its lease; a retry takes the run over and finishes.
    let retry = claim(&r, &t, "f", 5000, "retry");
    let rt = start(s, &retry).await;
    assert!(matches!(rt, TurnStart::Claimed { .. }), "{rt:?}");
    let mut retry_commit = commit(&retry, &rt, "question", "retry answer");
    retry_commit.recording = "retry recording".into();
    // The stalled original tries first, then after the retry: both refused.
    let mut late = commit(&original, &o, "question", "stale answer");
    late.now_ms = 5001;
    late.recording = "stale recording".into();
    assert_eq!(finish(s, &late).await, CommitOutcome::ClaimLost);
    assert_eq!(finish(s, &retry_commit).await, CommitOutcome::Applied);
    assert_eq!(finish(s, &late).await, CommitOutcome::ClaimLost);
    assert_eq!(
        start(s, &claim(&r, &t, "f", 5002, "x")).await,
        TurnStart::Finished {
            recording: "retry recording".into()
        }
    );
    let ctx = thread_at(s, &t, 5003).await.expect("thread");
    assert_eq!(texts(&ctx), ["question", "retry answer"]);
}

/// A lapsed lease that no other delivery took over still holds: the commit is accepted.
pub async fn a_lapsed_lease_nobody_took_over_still_commits<S: TurnStore>(s: &S, p: &str) {
    let (r, t) = (format!("{p}/r"), format!("{p}/t"));
    let c = claim(&r, &t, "f", 0, "a");
    let st = start(s, &c).await;
    let mut late = commit(&c, &st, "q", "a");
    late.now_ms = 3000;
    late.context_expires_at_ms = 13_000;
    late.recording_expires_at_ms = 23_000;
    assert_eq!(finish(s, &late).await, CommitOutcome::Applied);
}
