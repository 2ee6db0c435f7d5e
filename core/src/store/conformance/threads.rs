//! The thread a commit writes (`finish_turn`): turns kept in arrival order, a stale version
//! merged rather than overwritten, every message of a burst kept, large values intact, and the
//! thread owned by the workspace that started it.

use futures::future::join_all;
use serde_json::json;

use super::fixtures::{claim, claim_from, commit, finish, start, texts, thread_at};
use crate::protocol::{Message, Role};
use crate::store::{CommitOutcome, TurnStart, TurnStore};

/// A (the slow turn) is superseded by B, which commits first: A's commit keeps its user
/// message and interrupted answer before B's, and leaves B's state.
pub async fn a_superseded_turn_is_kept_in_arrival_order<S: TurnStore>(s: &S, p: &str) {
    let t = format!("{p}/t");
    let ca = claim(&format!("{p}/a"), &t, "f", 0, "a");
    let a = start(s, &ca).await;
    let cb = claim(&format!("{p}/b"), &t, "f", 10, "b");
    let b = start(s, &cb).await;
    assert_eq!(s.latest_arrival(&t).await.unwrap(), 2);
    assert_eq!(
        finish(s, &commit(&cb, &b, "second", "answer two")).await,
        CommitOutcome::Applied
    );
    assert_eq!(
        finish(s, &commit(&ca, &a, "first", "partial one")).await,
        CommitOutcome::Superseded
    );
    let ctx = thread_at(s, &t, 20).await.expect("thread");
    assert_eq!(
        texts(&ctx),
        ["first", "partial one", "second", "answer two"]
    );
    let interrupted: Vec<_> = ctx.messages.iter().map(|m| m.interrupted).collect();
    assert_eq!(interrupted, [false, true, false, false]);
    assert_eq!(ctx.state, json!({"last": "second"}));
    assert_eq!(ctx.turns, 2);
}

/// A superseded turn that commits first bumps the version; the live turn's commit, loaded
/// before that, is merged, not written over it.
pub async fn a_stale_version_is_merged_not_overwritten<S: TurnStore>(s: &S, p: &str) {
    let t = format!("{p}/t");
    let c0 = claim(&format!("{p}/0"), &t, "f", 0, "0");
    let s0 = start(s, &c0).await;
    finish(s, &commit(&c0, &s0, "zero", "answer zero")).await;
    let ca = claim(&format!("{p}/a"), &t, "f", 10, "a");
    let a = start(s, &ca).await;
    let cb = claim(&format!("{p}/b"), &t, "f", 20, "b");
    let b = start(s, &cb).await;
    assert_eq!(
        finish(s, &commit(&ca, &a, "first", "partial one")).await,
        CommitOutcome::Superseded
    );
    // Merged where the superseded turn wrote into the context; a backend that keeps a
    // superseded turn's messages beside it (DynamoDB) applies, and folds them in on read.
    let outcome = finish(s, &commit(&cb, &b, "second", "answer two")).await;
    assert!(
        matches!(outcome, CommitOutcome::Merged | CommitOutcome::Applied),
        "{outcome:?}"
    );
    let ctx = thread_at(s, &t, 30).await.expect("thread");
    assert_eq!(
        texts(&ctx),
        [
            "zero",
            "answer zero",
            "first",
            "partial one",
            "second",
            "answer two"
        ]
    );
    assert_eq!(ctx.state, json!({"last": "second"}));
    assert_eq!(ctx.turns, 3);
}

/// `n` turns claimed and committed concurrently on one thread keep all `n` user messages, in
/// arrival order, and exactly one of them (the latest arrival) is not superseded.
pub async fn a_burst_on_one_thread_keeps_every_message<S: TurnStore>(s: &S, p: &str, n: usize) {
    let t = format!("{p}/t");
    let claims: Vec<_> = (0..n)
        .map(|i| claim(&format!("{p}/r{i}"), &t, "f", 0, &format!("k{i}")))
        .collect();
    let starts = join_all(claims.iter().map(|c| start(s, c))).await;
    let mut arrivals: Vec<u64> = starts
        .iter()
        .map(|st| match st {
            TurnStart::Claimed { arrival, .. } => *arrival,
            other => panic!("burst claim: {other:?}"),
        })
        .collect();
    arrivals.sort_unstable();
    assert_eq!(arrivals, (1..=n as u64).collect::<Vec<_>>());
    let commits: Vec<_> = claims
        .iter()
        .zip(&starts)
        .enumerate()
        .map(|(i, (c, st))| commit(c, st, &format!("msg {i}"), &format!("ans {i}")))
        .collect();
    let outcomes = join_all(commits.iter().map(|c| finish(s, c))).await;
    let live = outcomes
        .iter()
        .filter(|o| matches!(o, CommitOutcome::Applied | CommitOutcome::Merged))
        .count();
    assert_eq!(live, 1, "{outcomes:?}");
    let ctx = thread_at(s, &t, 1).await.expect("thread");
    let users: Vec<&Message> = ctx
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .collect();
    assert_eq!(users.len(), n, "user messages kept: {:?}", texts(&ctx));
    let order: Vec<u64> = ctx.messages.iter().filter_map(|m| m.arrival).collect();
    assert!(order.is_sorted(), "not in arrival order: {order:?}");
    assert_eq!(ctx.turns, n as u64);
}

/// A context and a recording of several hundred KiB round-trip intact.
pub async fn large_values_round_trip<S: TurnStore>(s: &S, p: &str) {
    let (r, t) = (format!("{p}/r"), format!("{p}/t"));
    let c = claim(&r, &t, "f", 0, "a");
    let st = start(s, &c).await;
    // Incompressible-ish text, so compressing backends still need parts.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: String = (0..600_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect();
    let mut cm = commit(&c, &st, "big", &noise[..30_000]);
    cm.recording = noise.clone().into();
    assert_eq!(finish(s, &cm).await, CommitOutcome::Applied);
    assert_eq!(
        start(s, &claim(&r, &t, "f", 1, "b")).await,
        TurnStart::Finished { recording: noise }
    );
    let ctx = thread_at(s, &t, 2).await.expect("thread");
    assert_eq!(ctx.messages[1].content.len(), 30_000);
}

/// A thread belongs to the workspace that started it (issue 25): a claim from another
/// workspace is refused, while the first turn still runs and after it committed, and writes
/// nothing (no arrival counted, the run id not taken); the owner goes on with its context.
/// Once the thread expired it is nobody's, and a new thread of that id is whoever's starts it.
pub async fn a_thread_belongs_to_the_workspace_that_started_it<S: TurnStore>(s: &S, p: &str) {
    let t = format!("{p}/t");
    let from = |ws: &str, run: &str, now: u64| {
        claim_from(
            ws,
            &format!("{p}/{run}"),
            &t,
            run,
            now,
            &format!("k-{run}-{now}"),
        )
    };
    let first = from("w1", "r1", 0);
    let started = start(s, &first).await;
    assert!(
        matches!(started, TurnStart::Claimed { arrival: 1, .. }),
        "{started:?}"
    );
    assert_eq!(
        start(s, &from("w2", "x1", 10)).await,
        TurnStart::OtherWorkspace,
        "a claim from another workspace while the first turn runs"
    );
    assert_eq!(
        finish(s, &commit(&first, &started, "q1", "a1")).await,
        CommitOutcome::Applied
    );
    for now in [20, 30] {
        // The same run twice: a refused claim leaves its run id free (not running, not done).
        assert_eq!(
            start(s, &from("w2", "x2", now)).await,
            TurnStart::OtherWorkspace,
            "a resume from another workspace at {now}"
        );
    }
    assert_eq!(
        s.latest_arrival(&t).await.expect("latest_arrival"),
        1,
        "a refused claim counted an arrival"
    );
    let second = from("w1", "r2", 40);
    let started = start(s, &second).await;
    let TurnStart::Claimed {
        context: Some(context),
        version: 1,
        arrival: 2,
    } = &started
    else {
        panic!("the owner's next turn: {started:?}");
    };
    assert_eq!(texts(context), ["q1", "a1"]);
    assert_eq!(
        finish(s, &commit(&second, &started, "q2", "a2")).await,
        CommitOutcome::Applied
    );
    // The context expires 10 s after the last commit (at 10 040), and with it the owner.
    assert_eq!(
        start(s, &from("w2", "x3", 10_039)).await,
        TurnStart::OtherWorkspace
    );
    let fresh = start(s, &from("w2", "x4", 10_040)).await;
    assert!(
        matches!(fresh, TurnStart::Claimed { context: None, .. }),
        "an expired thread is a new one: {fresh:?}"
    );
    assert_eq!(
        start(s, &from("w1", "r3", 10_050)).await,
        TurnStart::OtherWorkspace,
        "the new thread is the workspace's that started it"
    );
}

/// First claims on a new thread from two workspaces at once: exactly one workspace owns it;
/// every claim from the other is refused.
pub async fn concurrent_first_claims_from_two_workspaces_have_one_owner<S: TurnStore>(
    s: &S,
    p: &str,
) {
    let t = format!("{p}/t");
    let claims: Vec<_> = (0..6)
        .map(|i| {
            let ws = if i % 2 == 0 { "w1" } else { "w2" };
            claim_from(ws, &format!("{p}/r{i}"), &t, "f", 0, &format!("k{i}"))
        })
        .collect();
    let starts = join_all(claims.iter().map(|c| start(s, c))).await;
    let owners: std::collections::BTreeSet<&str> = claims
        .iter()
        .zip(&starts)
        .filter(|(_, st)| matches!(st, TurnStart::Claimed { .. }))
        .map(|(c, _)| c.workspace.as_str())
        .collect();
    assert_eq!(owners.len(), 1, "{starts:?}");
    for (c, st) in claims.iter().zip(&starts) {
        let expected_claimed = owners.contains(c.workspace.as_str());
        assert_eq!(
            matches!(st, TurnStart::Claimed { .. }),
            expected_claimed,
            "{}: {st:?}",
            c.workspace
        );
        if !expected_claimed {
            assert_eq!(*st, TurnStart::OtherWorkspace);
        }
    }
}
