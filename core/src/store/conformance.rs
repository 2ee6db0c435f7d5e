//! The store conformance suite (feature `store-tests`): every [`TurnStore`] runs it —
//! [`crate::adapter::MemoryStore`], the server's SQLite store, DynamoDB on moto, the Durable Object's
//! SQL over rusqlite — so the semantics of [`crate::store::turn_state`] hold on every backend.
//!
//! Each check takes the store and a key prefix (so checks can share a table) and panics with
//! what went wrong. Times are explicit (`now_ms` arguments), never the wall clock, so expiry
//! is tested exactly.

use futures::future::join_all;
use serde_json::json;

use crate::agent::context::{ContextPolicy, ThreadContext};
use crate::error::TurnErrorCode;
use crate::meter::admission::check_turn_limits;
use crate::meter::tally::{Tally, TallyKey, TurnTake};
use crate::meter::turn_usage::TurnUsage;
use crate::meter::{Policy, UsageLimits};
use crate::protocol::{Ending, Message, Role};
use crate::store::{
    ActionClaim, CommitOutcome, ConnectStage, ConnectState, ConnectionFilter, ConnectionKey,
    HostedFile, StoredConnection, TurnClaim, TurnCommit, TurnStart, TurnStore,
};

/// Runs every check, each on keys under `prefix`.
pub async fn run_all<S: TurnStore>(store: &S, prefix: &str) {
    claim_replay_conflict_and_lease(store, &format!("{prefix}-claims")).await;
    expiry_is_exact_on_read(store, &format!("{prefix}-expiry")).await;
    concurrent_claims_of_one_run_have_one_winner(store, &format!("{prefix}-race")).await;
    a_commit_proves_it_holds_the_claim(store, &format!("{prefix}-fence")).await;
    a_lapsed_lease_nobody_took_over_still_commits(store, &format!("{prefix}-lapsed")).await;
    a_superseded_turn_is_kept_in_arrival_order(store, &format!("{prefix}-supersede")).await;
    a_stale_version_is_merged_not_overwritten(store, &format!("{prefix}-merge")).await;
    a_burst_on_one_thread_keeps_every_message(store, &format!("{prefix}-burst"), 50).await;
    large_values_round_trip(store, &format!("{prefix}-large")).await;
    hosted_files(store, &format!("{prefix}-files")).await;
    action_claims_have_one_winner_until_they_expire(store, &format!("{prefix}-actions")).await;
    tallies_add_up_and_expire(store, &format!("{prefix}-tally")).await;
    a_repeated_tally_write_counts_once(store, &format!("{prefix}-once")).await;
    a_turn_limit_holds_under_concurrency(store, &format!("{prefix}-limit")).await;
    a_refused_turn_holds_no_slot_of_another_scope(store, &format!("{prefix}-noslot")).await;
    limits_refuse_with_their_codes(store, &format!("{prefix}-quota")).await;
    tally_additions_saturate(store, &format!("{prefix}-saturate")).await;
    a_thread_belongs_to_the_workspace_that_started_it(store, &format!("{prefix}-owner")).await;
    concurrent_first_claims_from_two_workspaces_have_one_owner(
        store,
        &format!("{prefix}-owner-race"),
    )
    .await;
}

/// Runs every check of the vault and the connect states (see
/// [`crate::store::connections`]), each on keys under `prefix`: a store that keeps connected
/// accounts runs these beside [`run_all`].
pub async fn run_vault<S: TurnStore>(store: &S, prefix: &str) {
    a_connect_state_is_claimed_once(store, &format!("{prefix}-state")).await;
    a_connect_state_expires_exactly(store, &format!("{prefix}-state-exp")).await;
    connections_are_kept_per_workspace_user_and_provider(store, &format!("{prefix}-vault")).await;
    connections_are_listed_by_workspace_and_user(store, &format!("{prefix}-list")).await;
    connections_are_listed_page_by_page(store, &format!("{prefix}-pages")).await;
    deleting_a_connection_leaves_the_others(store, &format!("{prefix}-delete")).await;
}

fn connect_state(id: &str, key: &ConnectionKey, expires_at_ms: u64) -> ConnectState {
    ConnectState {
        id: id.into(),
        stage: ConnectStage::Link,
        worker: "agent-1".into(),
        thread: "thread-1".into(),
        key: key.clone(),
        verifier: format!("verifier-of-{id}"),
        redirect_uri: "https://agent.example/callback".into(),
        expires_at_ms,
    }
}

fn connection_key(workspace: &str, user: &str, provider: &str) -> ConnectionKey {
    ConnectionKey {
        workspace: workspace.into(),
        user: user.into(),
        provider: provider.into(),
    }
}

/// Of ten concurrent claims of one state, exactly one gets it, whole; a claim after that gets
/// nothing; an unknown id gets nothing.
pub async fn a_connect_state_is_claimed_once<S: TurnStore>(s: &S, p: &str) {
    let key = connection_key(&format!("{p}-ws"), "u1", "acme");
    let state = connect_state(&format!("{p}-id"), &key, 10_000);
    s.put_connect_state(&state)
        .await
        .expect("put_connect_state");
    let claims = (0..10).map(|_| s.claim_connect_state(&state.id, 5));
    let got: Vec<_> = join_all(claims)
        .await
        .into_iter()
        .map(|r| r.expect("claim_connect_state"))
        .collect();
    let won: Vec<_> = got.iter().flatten().collect();
    assert_eq!(won.len(), 1, "{got:?}");
    assert_eq!(won[0], &state);
    assert_eq!(won[0].verifier, state.verifier);
    assert_eq!(s.claim_connect_state(&state.id, 6).await.unwrap(), None);
    assert_eq!(
        s.claim_connect_state(&format!("{p}-forged"), 6)
            .await
            .unwrap(),
        None
    );
}

/// A state expired at the claim's `now` is not given out (even if the backend still holds
/// it), and one just before its expiry is.
pub async fn a_connect_state_expires_exactly<S: TurnStore>(s: &S, p: &str) {
    let key = connection_key(&format!("{p}-ws"), "u1", "acme");
    let late = connect_state(&format!("{p}-late"), &key, 600_000);
    s.put_connect_state(&late).await.unwrap();
    assert_eq!(
        s.claim_connect_state(&late.id, 600_000).await.unwrap(),
        None
    );
    let on_time = connect_state(&format!("{p}-on-time"), &key, 600_000);
    s.put_connect_state(&on_time).await.unwrap();
    assert_eq!(
        s.claim_connect_state(&on_time.id, 599_999).await.unwrap(),
        Some(on_time)
    );
}

/// A sealed entry is found under its own (workspace, user, provider) only, and a new one
/// replaces the old.
pub async fn connections_are_kept_per_workspace_user_and_provider<S: TurnStore>(s: &S, p: &str) {
    let ws = format!("{p}-ws");
    let mine = connection_key(&ws, "u1", "acme");
    assert_eq!(s.get_connection(&mine).await.unwrap(), None);
    s.put_connection(&mine, "sealed-1").await.unwrap();
    assert_eq!(
        s.get_connection(&mine).await.unwrap().as_deref(),
        Some("sealed-1")
    );
    for other in [
        connection_key(&ws, "u2", "acme"),
        connection_key(&format!("{p}-other-ws"), "u1", "acme"),
        connection_key(&ws, "u1", "globex"),
    ] {
        assert_eq!(s.get_connection(&other).await.unwrap(), None, "{other:?}");
    }
    s.put_connection(&mine, "sealed-2").await.unwrap();
    assert_eq!(
        s.get_connection(&mine).await.unwrap().as_deref(),
        Some("sealed-2")
    );
}

/// Every entry `filter` names, page after page of `page` entries (each page starting after the
/// last entry of the one before), checking no page is longer than asked and only the last is
/// shorter.
async fn list_all<S: TurnStore>(
    s: &S,
    filter: &ConnectionFilter,
    page: usize,
) -> Vec<StoredConnection> {
    let mut all: Vec<StoredConnection> = Vec::new();
    loop {
        let after = all.last().map(|c| c.key.clone());
        let got = s
            .list_connections(filter, after.as_ref(), page)
            .await
            .expect("list_connections");
        assert!(got.len() <= page, "{got:?}");
        let done = got.len() < page;
        all.extend(got);
        if done {
            return all;
        }
        assert!(all.len() < 10_000, "listing does not end");
    }
}

fn keys_of(listed: &[StoredConnection]) -> Vec<ConnectionKey> {
    let mut keys: Vec<ConnectionKey> = listed.iter().map(|c| c.key.clone()).collect();
    keys.sort();
    keys
}

/// A listing names a workspace's entries, a user's in a workspace, or a user's in every
/// workspace (on a store that lists every workspace at once; another refuses that filter),
/// each with its sealed entry as stored, and nothing else.
pub async fn connections_are_listed_by_workspace_and_user<S: TurnStore>(s: &S, p: &str) {
    let (ws, other_ws) = (format!("{p}-ws"), format!("{p}-other-ws"));
    let (u1, u2) = (format!("{p}-u1"), format!("{p}-u2"));
    let entries = [
        connection_key(&ws, &u1, "acme"),
        connection_key(&ws, &u1, "globex"),
        connection_key(&ws, &u2, "acme"),
        connection_key(&other_ws, &u1, "acme"),
    ];
    for (i, key) in entries.iter().enumerate() {
        s.put_connection(key, &format!("sealed-{i}")).await.unwrap();
    }
    let filter = |w: Option<&str>, u: Option<&str>| ConnectionFilter {
        workspace: w.map(str::to_owned),
        user: u.map(str::to_owned),
    };
    let in_ws = list_all(s, &filter(Some(&ws), None), 100).await;
    assert_eq!(keys_of(&in_ws), entries[..3].to_vec());
    for c in &in_ws {
        let i = entries.iter().position(|k| *k == c.key).unwrap();
        assert_eq!(c.sealed, format!("sealed-{i}"), "{:?}", c.key);
    }
    let mine = list_all(s, &filter(Some(&ws), Some(&u1)), 100).await;
    assert_eq!(keys_of(&mine), entries[..2].to_vec());
    let theirs = list_all(s, &filter(Some(&ws), Some(&u2)), 100).await;
    assert_eq!(keys_of(&theirs), vec![entries[2].clone()]);
    let nobody = list_all(s, &filter(Some(&format!("{p}-empty-ws")), None), 100).await;
    assert!(nobody.is_empty(), "{nobody:?}");
    if s.lists_every_workspace() {
        let everywhere = list_all(s, &filter(None, Some(&u1)), 100).await;
        let mut expected = vec![entries[0].clone(), entries[1].clone(), entries[3].clone()];
        expected.sort();
        assert_eq!(keys_of(&everywhere), expected);
        // Other checks' entries may share the store: ours are all there.
        let all = list_all(s, &ConnectionFilter::default(), 1000).await;
        let all = keys_of(&all);
        assert!(entries.iter().all(|k| all.contains(k)), "{all:?}");
    } else {
        assert!(
            s.list_connections(&filter(None, Some(&u1)), None, 10)
                .await
                .is_err(),
            "a store that lists one workspace at a time refuses a filter without one"
        );
    }
}

/// Pages of any size list every entry exactly once, and a page can start after an entry
/// deleted since.
pub async fn connections_are_listed_page_by_page<S: TurnStore>(s: &S, p: &str) {
    let ws = format!("{p}-ws");
    let mut entries: Vec<ConnectionKey> = (0..7)
        .map(|i| connection_key(&ws, &format!("{p}-u{}", i % 3), &format!("provider-{i}")))
        .collect();
    entries.sort();
    for key in &entries {
        s.put_connection(key, "sealed").await.unwrap();
    }
    let filter = ConnectionFilter {
        workspace: Some(ws.clone()),
        user: None,
    };
    for page in [1, 2, 3, 7, 8] {
        let listed = list_all(s, &filter, page).await;
        assert_eq!(listed.len(), entries.len(), "pages of {page}: {listed:?}");
        assert_eq!(keys_of(&listed), entries, "pages of {page}");
    }
    let first = s.list_connections(&filter, None, 3).await.unwrap();
    let last = first.last().unwrap().key.clone();
    assert!(s.delete_connection(&last).await.unwrap());
    let rest = s.list_connections(&filter, Some(&last), 100).await.unwrap();
    assert_eq!(rest.len(), entries.len() - 3, "{rest:?}");
    assert!(rest.iter().all(|c| first.iter().all(|f| f.key != c.key)));
}

/// Deleting one entry leaves the same user's other providers, other users and other
/// workspaces as they were; deleting it again finds nothing.
pub async fn deleting_a_connection_leaves_the_others<S: TurnStore>(s: &S, p: &str) {
    let ws = format!("{p}-ws");
    let gone = connection_key(&ws, "u1", "acme");
    let kept = [
        connection_key(&ws, "u1", "globex"),
        connection_key(&ws, "u2", "acme"),
        connection_key(&format!("{p}-other-ws"), "u1", "acme"),
    ];
    s.put_connection(&gone, "sealed-gone").await.unwrap();
    for key in &kept {
        s.put_connection(key, "sealed-kept").await.unwrap();
    }
    assert!(s.delete_connection(&gone).await.unwrap());
    assert_eq!(s.get_connection(&gone).await.unwrap(), None);
    assert!(!s.delete_connection(&gone).await.unwrap(), "already gone");
    for key in &kept {
        assert_eq!(
            s.get_connection(key).await.unwrap().as_deref(),
            Some("sealed-kept"),
            "{key:?}"
        );
    }
    let left = list_all(
        s,
        &ConnectionFilter {
            workspace: Some(ws),
            user: None,
        },
        100,
    )
    .await;
    assert_eq!(keys_of(&left), kept[..2].to_vec());
}

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

async fn start<S: TurnStore>(s: &S, c: &TurnClaim) -> TurnStart {
    s.start_turn(c)
        .await
        .unwrap_or_else(|e| panic!("start_turn({}): {e}", c.run_key))
}

async fn finish<S: TurnStore>(s: &S, c: &TurnCommit) -> CommitOutcome {
    s.finish_turn(c)
        .await
        .unwrap_or_else(|e| panic!("finish_turn({}): {e}", c.run_key))
}

/// The thread as a fresh claim at `now` loads it.
async fn thread_at<S: TurnStore>(s: &S, thread: &str, now: u64) -> Option<ThreadContext> {
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

fn texts(c: &ThreadContext) -> Vec<&str> {
    c.messages.iter().map(|m| m.content.as_str()).collect()
}

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

/// Files are found by token until they expire.
pub async fn hosted_files<S: TurnStore>(s: &S, p: &str) {
    let token = format!("{p}-0123456789abcdef");
    let file = HostedFile {
        token: token.clone(),
        name: "a.csv".into(),
        mime: "text/csv".into(),
        bytes: b"a,b\n1,2\n".to_vec(),
        expires_at_ms: 1000,
    };
    s.put_file(&file).await.expect("put_file");
    assert_eq!(s.get_file(&token, 999).await.expect("get_file"), Some(file));
    assert_eq!(s.get_file(&token, 1000).await.expect("get_file"), None);
    assert_eq!(s.get_file("nope", 0).await.expect("get_file"), None);
}

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

/// Tally rows add up field by field, per key, and read as absent once expired.
pub async fn tallies_add_up_and_expire<S: TurnStore>(s: &S, p: &str) {
    let part = format!("{p}/part");
    let a = TallyKey::new(&part, "a");
    let one = Tally {
        turns: 1,
        input_tokens: 7,
        cost_micro_usd: 3,
        ..Tally::default()
    };
    s.add_tally(&a, &one, 1000, "w1").await.expect("add_tally");
    s.add_tally(&a, &one, 2000, "w2").await.expect("add_tally");
    s.add_tally(&TallyKey::new(&part, "b"), &one, 500, "w1")
        .await
        .expect("add_tally");
    s.add_tally(&TallyKey::new(format!("{p}/other"), "a"), &one, 5000, "w1")
        .await
        .expect("add_tally");
    let rows = s.tallies(&part, 0).await.expect("tallies");
    let mut two = one;
    two.add(&one);
    assert_eq!(rows, vec![("a".to_owned(), two), ("b".to_owned(), one)]);
    // `b` expired at 500; `a`'s expiry moved to the later 2000.
    let rows = s.tallies(&part, 1500).await.expect("tallies");
    assert_eq!(rows, vec![("a".to_owned(), two)]);
    assert!(s.tallies(&part, 2000).await.expect("tallies").is_empty());
    assert!(
        s.tallies(&format!("{p}/none"), 0)
            .await
            .expect("tallies")
            .is_empty()
    );
}

/// A tally write sent again with its write id (an SDK retry after an answer that came too late,
/// a request resent) counts once: a turn taken twice is one turn (and still admitted), in
/// every row it was taken from, a usage addition repeated adds once. Other write ids still
/// count.
pub async fn a_repeated_tally_write_counts_once<S: TurnStore>(s: &S, p: &str) {
    let part = format!("{p}/part");
    let minute = TallyKey::new(&part, "m/1");
    let turns = |rows: Vec<(String, Tally)>, item: &str| {
        rows.into_iter()
            .find(|(i, _)| i == item)
            .map(|(_, t)| t.turns)
            .unwrap_or(0)
    };
    let take = |key: &TallyKey, limit: u64| TurnTake {
        key: key.clone(),
        limit,
    };
    // A limit of 2: the same turn taken three times leaves room for a second turn.
    for _ in 0..3 {
        assert!(
            s.take_turns(&[take(&minute, 2)], 9000, "w-a")
                .await
                .expect("take_turns")
        );
    }
    assert_eq!(turns(s.tallies(&part, 0).await.expect("tallies"), "m/1"), 1);
    assert!(
        s.take_turns(&[take(&minute, 2)], 9000, "w-b")
            .await
            .expect("take_turns")
    );
    assert!(
        !s.take_turns(&[take(&minute, 2)], 9000, "w-c")
            .await
            .expect("take_turns")
    );
    assert_eq!(turns(s.tallies(&part, 0).await.expect("tallies"), "m/1"), 2);
    // Two rows at once: a retry of a write both count is admitted and counts nothing more,
    // even once a row is full.
    let (wide, narrow) = (TallyKey::new(&part, "m/2"), TallyKey::new(&part, "m/3"));
    let both = [take(&wide, 5), take(&narrow, 1)];
    for _ in 0..2 {
        assert!(s.take_turns(&both, 9000, "w-e").await.expect("take_turns"));
    }
    let rows = s.tallies(&part, 0).await.expect("tallies");
    assert_eq!((turns(rows.clone(), "m/2"), turns(rows, "m/3")), (1, 1));

    let usage = TallyKey::new(&part, "u");
    let one = Tally {
        turns: 1,
        input_tokens: 7,
        cost_micro_usd: 3,
        ..Tally::default()
    };
    let writes = join_all((0..4).map(|_| s.add_tally(&usage, &one, 9000, "w-a"))).await;
    for w in writes {
        w.expect("add_tally");
    }
    s.add_tally(&usage, &one, 9000, "w-a")
        .await
        .expect("add_tally");
    s.add_tally(&usage, &one, 9000, "w-b")
        .await
        .expect("add_tally");
    let rows = s.tallies(&part, 0).await.expect("tallies");
    let mut two = one;
    two.add(&one);
    assert_eq!(
        rows.into_iter().find(|(i, _)| i == "u").map(|(_, t)| t),
        Some(two),
        "a usage addition repeated with its write id counted more than once"
    );
    // A write id is per row: the same id adds to another row.
    let other = TallyKey::new(&part, "v");
    s.add_tally(&other, &one, 9000, "w-a")
        .await
        .expect("add_tally");
    let rows = s.tallies(&part, 0).await.expect("tallies");
    assert_eq!(
        rows.iter().find(|(i, _)| i == "v").map(|(_, t)| *t),
        Some(one)
    );
}

fn policy_with(workspace: &str, worker: &str, ws: UsageLimits, wk: UsageLimits) -> Policy {
    let mut p = Policy::serve_any();
    p.workspace_limits.insert(workspace.to_owned(), ws);
    p.worker_limits.insert(worker.to_owned(), wk);
    p
}

/// 100 turns admitted concurrently against a limit of 10 turns per minute: exactly 10 run,
/// the others are refused with `RATE_LIMITED`; a turn a second limit (the worker's, 4 per
/// minute) refuses is not counted by its workspace.
pub async fn a_turn_limit_holds_under_concurrency<S: TurnStore>(s: &S, p: &str) {
    let ten = UsageLimits {
        turns_per_minute: Some(10),
        ..UsageLimits::default()
    };
    let (ws, worker) = (format!("{p}-ws"), format!("{p}-worker"));
    let policy = policy_with(&ws, &worker, ten, UsageLimits::default());
    // 30 s into a minute, so every call falls in the same window.
    let now = 1_800_000_030_000;
    let usages: Vec<TurnUsage> = (0..100).map(|_| TurnUsage::default()).collect();
    let ids: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
    let results = join_all(
        usages
            .iter()
            .zip(&ids)
            .map(|(u, id)| check_turn_limits(s, &policy, u, id, &worker, &ws, now)),
    )
    .await;
    let admitted = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(
        admitted, 10,
        "admitted {admitted} of 100 against a limit of 10"
    );
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(
            matches!(r, Ending::Error { code: TurnErrorCode::RateLimited, message } if message.contains("in 30 seconds")),
            "{r:?}"
        );
    }
    // The next minute is a new window.
    let u = TurnUsage::default();
    assert!(
        check_turn_limits(s, &policy, &u, "w-next", &worker, &ws, now + 60_000)
            .await
            .is_ok()
    );

    // Workspace 10 per minute, worker 4: of 20 concurrent turns 4 run, and the workspace
    // counted only those 4 (the 16 refused by the worker took nothing).
    let (ws, worker) = (format!("{p}-ws2"), format!("{p}-worker2"));
    let four = UsageLimits {
        turns_per_minute: Some(4),
        ..UsageLimits::default()
    };
    let policy = policy_with(&ws, &worker, ten, four);
    let usages: Vec<TurnUsage> = (0..20).map(|_| TurnUsage::default()).collect();
    let results = join_all(
        usages
            .iter()
            .zip(&ids)
            .map(|(u, id)| check_turn_limits(s, &policy, u, id, &worker, &ws, now)),
    )
    .await;
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 4);
    let counted = s
        .tallies(&format!("meter/workspace/{ws}"), now)
        .await
        .expect("tallies");
    assert_eq!(counted.len(), 1, "{counted:?}");
    assert_eq!(counted[0].1.turns, 4, "{counted:?}");
}

/// A turn refused by one limit holds no slot of another, not even for a moment (issue 25):
/// a workspace at 10 turns per minute, worker A at 2 within it; 80 turns of A and 8 of
/// worker B admitted concurrently, B's among A's: A runs 2, B all 8, and the workspace counts
/// exactly those 10. Then the primitive itself: a take refused by one row counts in none.
pub async fn a_refused_turn_holds_no_slot_of_another_scope<S: TurnStore>(s: &S, p: &str) {
    let (ws, a, b) = (format!("{p}-ws"), format!("{p}-a"), format!("{p}-b"));
    let mut policy = Policy::serve_any();
    let per_minute = |n| UsageLimits {
        turns_per_minute: Some(n),
        ..UsageLimits::default()
    };
    policy.workspace_limits.insert(ws.clone(), per_minute(10));
    policy
        .pair_limits
        .insert((ws.clone(), a.clone()), per_minute(2));
    let now = 1_800_000_030_000;
    // 88 turns; every eleventh (from the sixth) is B's.
    let is_b = |i: usize| i % 11 == 5;
    let usages: Vec<TurnUsage> = (0..88).map(|_| TurnUsage::default()).collect();
    let ids: Vec<String> = (0..88).map(|i| format!("w{i}")).collect();
    let results = join_all(usages.iter().zip(&ids).enumerate().map(|(i, (u, id))| {
        let worker = if is_b(i) { &b } else { &a };
        check_turn_limits(s, &policy, u, id, worker, &ws, now)
    }))
    .await;
    let admitted = |want_b: bool| {
        results
            .iter()
            .enumerate()
            .filter(|(i, r)| is_b(*i) == want_b && r.is_ok())
            .count()
    };
    assert_eq!(
        (admitted(false), admitted(true)),
        (2, 8),
        "(A, B) admitted: a turn of A refused by its own limit held a slot of the workspace"
    );
    let counted = s
        .tallies(&format!("meter/workspace/{ws}"), now)
        .await
        .expect("tallies");
    assert_eq!(
        counted.iter().map(|(_, t)| t.turns).sum::<u64>(),
        10,
        "{counted:?}"
    );

    let part = format!("{p}/rows");
    let (free, full) = (TallyKey::new(&part, "free"), TallyKey::new(&part, "full"));
    let take = |key: &TallyKey, limit: u64| TurnTake {
        key: key.clone(),
        limit,
    };
    assert!(
        s.take_turns(&[take(&full, 1)], 9000, "x-1")
            .await
            .expect("take_turns")
    );
    for (n, takes) in [
        [take(&free, 5), take(&full, 1)],
        [take(&full, 1), take(&free, 5)],
    ]
    .iter()
    .enumerate()
    {
        assert!(
            !s.take_turns(takes, 9000, &format!("x-refused-{n}"))
                .await
                .expect("take_turns"),
            "a take with a full row was admitted"
        );
    }
    let rows = s.tallies(&part, 0).await.expect("tallies");
    assert_eq!(
        rows.iter()
            .find(|(i, _)| i == "free")
            .map_or(0, |(_, t)| t.turns),
        0,
        "a refused take counted in a row with room: {rows:?}"
    );
}

/// Token and spend limits: a turn is admitted while the day's counters are under them, with
/// the budget left; refused with `QUOTA_EXCEEDED` once they are reached.
pub async fn limits_refuse_with_their_codes<S: TurnStore>(s: &S, p: &str) {
    let (ws, worker) = (format!("{p}-ws"), format!("{p}-worker"));
    let policy = policy_with(
        &ws,
        &worker,
        UsageLimits {
            spend_per_day: Some(0.01),
            ..UsageLimits::default()
        },
        UsageLimits {
            tokens_per_day: Some(100),
            ..UsageLimits::default()
        },
    );
    let now = 1_800_000_030_000;
    let windows = crate::meter::window::Windows::at(now);
    let u = TurnUsage::default();
    check_turn_limits(s, &policy, &u, "w1", &worker, &ws, now)
        .await
        .expect("admitted under its limits");
    assert!(!u.budget_spent().await);
    let used = Tally {
        input_tokens: 60,
        output_tokens: 30,
        ..Tally::default()
    };
    let day = TallyKey::new(format!("meter/worker/{worker}"), windows.day_item());
    s.add_tally(&day, &used, now + 86_400_000, "w1")
        .await
        .expect("add_tally");
    let u = TurnUsage::default();
    check_turn_limits(s, &policy, &u, "w2", &worker, &ws, now)
        .await
        .expect("still under");
    // 10 tokens left: a model call of 12 spends the turn's budget.
    u.model_call(
        "m",
        crate::meter::ModelTokens {
            input: 6,
            output: 6,
            reasoning: 0,
        },
    );
    assert!(u.budget_spent().await);
    s.add_tally(&day, &used, now + 86_400_000, "w2")
        .await
        .expect("add_tally");
    let refused = check_turn_limits(s, &policy, &TurnUsage::default(), "w3", &worker, &ws, now)
        .await
        .expect_err("over the token limit");
    assert!(
        matches!(&refused, Ending::Error { code: TurnErrorCode::QuotaExceeded, message } if message.starts_with("The daily token limit has been reached. Please try again in about")),
        "{refused:?}"
    );
    // Spend: 10 000 micro-USD is the workspace's day.
    let spent = Tally {
        cost_micro_usd: 10_000,
        ..Tally::default()
    };
    let other_worker = format!("{p}-other");
    s.add_tally(
        &TallyKey::new(format!("meter/workspace/{ws}"), windows.day_item()),
        &spent,
        now + 86_400_000,
        "w3",
    )
    .await
    .expect("add_tally");
    let refused = check_turn_limits(
        s,
        &policy,
        &TurnUsage::default(),
        "w4",
        &other_worker,
        &ws,
        now,
    )
    .await
    .expect_err("over the spend limit");
    assert!(
        matches!(
            &refused,
            Ending::Error {
                code: TurnErrorCode::QuotaExceeded,
                ..
            }
        ),
        "{refused:?}"
    );
}

/// A count near the top of its range plus more stays at the top, never wraps to a small one
/// (issue 25: 2^64−10 tokens then 20 read as 10, and a spend limit never refused again). A
/// SQL store's integers stop at 2^63−1; every store reads at least that.
pub async fn tally_additions_saturate<S: TurnStore>(s: &S, p: &str) {
    let key = TallyKey::new(format!("{p}/meter"), "d/2026-12-03");
    let huge = Tally {
        input_tokens: u64::MAX - 10,
        cost_micro_usd: u64::MAX - 10,
        ..Tally::default()
    };
    let more = Tally {
        input_tokens: 20,
        cost_micro_usd: 20,
        model_calls: 1,
        ..Tally::default()
    };
    s.add_tally(&key, &huge, 9000, "w1")
        .await
        .expect("add_tally");
    s.add_tally(&key, &more, 9000, "w2")
        .await
        .expect("add_tally");
    let rows = s.tallies(&key.part, 1000).await.expect("tallies");
    let t = rows[0].1;
    let top = i64::MAX as u64;
    assert!(
        t.input_tokens >= top && t.cost_micro_usd >= top && t.tokens() >= top,
        "a sum wrapped: {t:?}"
    );
    assert_eq!(t.model_calls, 1);
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
