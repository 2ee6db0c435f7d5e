//! Action claims (`claim_action`): put-if-absent with an expiry, one winner at a time.

use futures::future::join_all;

use crate::store::{ActionClaim, TurnStore};

/// A claim of `action` on `thread` by `holder` at `now`, held for one second.
pub fn action_claim(thread: &str, action: &str, holder: &str, now: u64) -> ActionClaim {
    ActionClaim {
        thread_key: thread.into(),
        action: action.into(),
        holder: holder.into(),
        now_ms: now,
        expires_at_ms: now + 1000,
    }
}

/// Of ten concurrent claims of one action by different holders, exactly one wins; every later
/// claim by another holder loses (its holder's again wins) until the claim expires; actions
/// and threads are independent.
pub async fn action_claims_have_one_winner_until_they_expire<S: TurnStore>(s: &S, p: &str) {
    let t = format!("{p}/t");
    let claim_of = |c: ActionClaim| async move {
        s.claim_action(&c)
            .await
            .unwrap_or_else(|e| panic!("claim_action({}): {e}", c.action))
    };
    let claims: Vec<_> = (0..10)
        .map(|i| action_claim(&t, "review-1/call_a", &format!("turn{i}"), 0))
        .collect();
    let won = join_all(claims.iter().cloned().map(claim_of)).await;
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    let winner = claims[won.iter().position(|w| *w).unwrap_or(0)]
        .holder
        .clone();
    let loser = if winner == "turn0" { "turn1" } else { "turn0" };
    assert!(!claim_of(action_claim(&t, "review-1/call_a", loser, 999)).await);
    assert!(claim_of(action_claim(&t, "review-1/call_a", &winner, 999)).await);
    // Another action, and the same action on another thread, are free.
    assert!(claim_of(action_claim(&t, "review-1/call_b", loser, 10)).await);
    assert!(
        claim_of(action_claim(
            &format!("{p}/u"),
            "review-1/call_a",
            loser,
            10
        ))
        .await
    );
    // The holder's claim at 999 holds until 1999; then the action is free again, for the
    // first claimant only.
    assert!(!claim_of(action_claim(&t, "review-1/call_a", loser, 1998)).await);
    assert!(claim_of(action_claim(&t, "review-1/call_a", loser, 1999)).await);
    assert!(!claim_of(action_claim(&t, "review-1/call_a", &winner, 2000)).await);
}
