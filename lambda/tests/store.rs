//! The DynamoDB store against moto's DynamoDB server (started by `infra/aws/local
//! --dynamodb-only`): the exact semantics of the reference stores, request budgets, parts for
//! large values, expiry on read, and an unreachable endpoint.

mod support;

use std::time::{Duration, Instant};

use runway_core::{
    HostedFile, Message, Role, StoreError, ThreadContext, TurnClaim, TurnCommit, TurnStart,
    TurnStore,
};
use support::{moto, store};

fn claim(run: &str, thread: &str, fp: &str, now: u64) -> TurnClaim {
    TurnClaim {
        run_key: run.into(),
        thread_key: thread.into(),
        fingerprint: fp.into(),
        now_ms: now,
        lease_until_ms: now + 1000,
    }
}

fn commit(run: &str, thread: &str, fp: &str, now: u64, context: ThreadContext) -> TurnCommit {
    TurnCommit {
        run_key: run.into(),
        fingerprint: fp.into(),
        thread_key: thread.into(),
        context,
        context_expires_at_ms: now + 10_000,
        recording: format!("data: {{\"run\":\"{run}\"}}\n\n"),
        recording_expires_at_ms: now + 20_000,
    }
}

fn random_text(n: usize) -> String {
    (0..n).map(|_| fastrand::alphanumeric()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto (installed on first use by infra/aws/local): run by scripts/test-aws.sh"]
async fn semantics_match_the_reference_stores() {
    let db = moto("semantics").await;
    let (s, _) = store(&db.endpoint, "semantics").await;
    let t = "agent/thread-1";
    assert_eq!(
        s.start_turn(&claim("r", t, "f", 0)).await.unwrap(),
        TurnStart::Claimed { context: None }
    );
    assert_eq!(
        s.start_turn(&claim("r", t, "f", 10)).await.unwrap(),
        TurnStart::Running
    );
    assert_eq!(
        s.start_turn(&claim("r", t, "g", 10)).await.unwrap(),
        TurnStart::Conflict
    );
    // The lease lapsed (a crashed delivery): the run can be claimed again.
    assert!(matches!(
        s.start_turn(&claim("r", t, "f", 5000)).await.unwrap(),
        TurnStart::Claimed { .. }
    ));
    let ctx = ThreadContext {
        turns: 1,
        messages: vec![Message::new(Role::User, "hello")],
        ..ThreadContext::default()
    };
    s.finish_turn(&commit("r", t, "f", 5000, ctx.clone()))
        .await
        .unwrap();
    assert_eq!(
        s.start_turn(&claim("r", t, "f", 5001)).await.unwrap(),
        TurnStart::Finished {
            recording: "data: {\"run\":\"r\"}\n\n".into()
        }
    );
    assert_eq!(
        s.start_turn(&claim("r", t, "g", 5001)).await.unwrap(),
        TurnStart::Conflict
    );
    let TurnStart::Claimed { context } = s.start_turn(&claim("r2", t, "f", 5002)).await.unwrap()
    else {
        panic!("r2 must be claimable")
    };
    assert_eq!(context, Some(ctx));
    // Other threads and branches are other keys.
    assert_eq!(
        s.start_turn(&claim("r3", "agent/thread-1:2", "f", 5003))
            .await
            .unwrap(),
        TurnStart::Claimed { context: None }
    );
    // Expired items are absent on read, exactly (moto never deletes them).
    let TurnStart::Claimed { context } = s.start_turn(&claim("r4", t, "f", 15_000)).await.unwrap()
    else {
        panic!("r4 must be claimable")
    };
    assert!(context.is_none(), "context expired at 15000");
    assert!(
        matches!(
            s.start_turn(&claim("r", t, "f", 25_000)).await.unwrap(),
            TurnStart::Claimed { .. }
        ),
        "the recording expired at 25000: the run key is free again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto (installed on first use by infra/aws/local): run by scripts/test-aws.sh"]
async fn concurrent_claims_elect_one() {
    let db = moto("race").await;
    let (s, _) = store(&db.endpoint, "race").await;
    for round in 0..5 {
        let c = claim(&format!("run-{round}"), "a/t", "f", 100);
        let (a, b, d) = tokio::join!(s.start_turn(&c), s.start_turn(&c), s.start_turn(&c));
        let results = [a.unwrap(), b.unwrap(), d.unwrap()];
        let claimed = results
            .iter()
            .filter(|r| matches!(r, TurnStart::Claimed { .. }))
            .count();
        assert_eq!(claimed, 1, "round {round}: {results:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto (installed on first use by infra/aws/local): run by scripts/test-aws.sh"]
async fn an_ordinary_turn_costs_three_requests_whatever_the_thread_length() {
    let db = moto("budget").await;
    let (s, rec) = store(&db.endpoint, "budget").await;
    let thread = "a/long-thread";
    let mut ctx = ThreadContext::default();
    // A long thread: 60 turns of history.
    for i in 0..60u64 {
        let now = 1_000_000 + i * 10;
        let run = format!("run-{i}");
        rec.take();
        let TurnStart::Claimed { context } =
            s.start_turn(&claim(&run, thread, "f", now)).await.unwrap()
        else {
            panic!("claim {i}")
        };
        let before_agent = rec.take();
        assert_eq!(context.unwrap_or_default().turns, ctx.turns);
        ctx.turns += 1;
        ctx.messages.push(Message::new(
            Role::User,
            format!("question {i} {}", "x".repeat(500)),
        ));
        ctx.messages.push(Message::new(
            Role::Assistant,
            format!("answer {i} {}", "y".repeat(1500)),
        ));
        ctx.trim(&runway_core::ContextPolicy::default());
        let mut c = commit(&run, thread, "f", now, ctx.clone());
        c.recording = "data: {\"type\":\"TEXT_MESSAGE_CONTENT\"}\n\n".repeat(200);
        s.finish_turn(&c).await.unwrap();
        let after_agent = rec.take();
        let mut ops: Vec<&str> = before_agent.iter().map(|r| r.target.as_str()).collect();
        ops.sort_unstable();
        assert_eq!(
            ops,
            ["PutItem", "Query"],
            "turn {i}: requests before the agent"
        );
        // (That the two are sent together, one round trip, is measured end to end with a
        // delaying proxy in tests/tests/lambda.rs.)
        let ops: Vec<&str> = after_agent.iter().map(|r| r.target.as_str()).collect();
        assert_eq!(
            ops,
            ["TransactWriteItems"],
            "turn {i}: requests after the agent"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto (installed on first use by infra/aws/local): run by scripts/test-aws.sh"]
async fn large_recordings_contexts_and_files_are_split_into_parts() {
    let db = moto("parts").await;
    let (s, rec) = store(&db.endpoint, "parts").await;
    let now = 1_000;

    // A recording that compresses well stays inline, whatever its raw size (the stream cap).
    // One that does not is split: 1 MB fits in the commit's transaction, 6 MB does not.
    for (label, recording, max_requests) in [
        (
            "8 MiB compressible",
            "data: {\"delta\":\"runway streams long answers in pieces. \"}\n\n"
                .repeat(8 * 1024 * 1024 / 60),
            1,
        ),
        ("1 MB random", random_text(1_000_000), 1),
        ("6 MB random", random_text(6_000_000), 3),
    ] {
        let run = format!("run-{label}");
        assert!(matches!(
            s.start_turn(&claim(&run, "a/t", "f", now)).await.unwrap(),
            TurnStart::Claimed { .. }
        ));
        rec.take();
        let mut c = commit(&run, "a/t", "f", now, ThreadContext::default());
        c.recording = recording.clone();
        s.finish_turn(&c)
            .await
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let writes = rec.take();
        assert!(
            writes.len() <= max_requests,
            "{label}: {} write requests: {:?}",
            writes.len(),
            writes.iter().map(|w| &w.target).collect::<Vec<_>>()
        );
        match s
            .start_turn(&claim(&run, "a/t", "f", now + 1))
            .await
            .unwrap()
        {
            TurnStart::Finished { recording: got } => {
                assert!(
                    got == recording,
                    "{label}: replay differs ({} vs {} bytes)",
                    got.len(),
                    recording.len()
                );
            }
            other => panic!("{label}: {other:?}"),
        }
    }

    // A context larger than one item (incompressible agent state).
    let big = ThreadContext {
        state: serde_json::json!({ "blob": random_text(600_000) }),
        turns: 7,
        ..ThreadContext::default()
    };
    s.finish_turn(&commit("ctx-1", "a/big", "f", now, big.clone()))
        .await
        .unwrap();
    let TurnStart::Claimed { context } = s
        .start_turn(&claim("ctx-2", "a/big", "f", now))
        .await
        .unwrap()
    else {
        panic!("ctx-2")
    };
    assert_eq!(context.as_ref(), Some(&big));
    // Smaller again: inline, and the parts left from the larger one are ignored.
    let small = ThreadContext {
        turns: 8,
        ..ThreadContext::default()
    };
    s.finish_turn(&commit("ctx-2", "a/big", "f", now, small.clone()))
        .await
        .unwrap();
    let TurnStart::Claimed { context } = s
        .start_turn(&claim("ctx-3", "a/big", "f", now))
        .await
        .unwrap()
    else {
        panic!("ctx-3")
    };
    assert_eq!(context, Some(small));

    // Hosted files: small inline, large in parts, expiry exact, unknown absent, too large refused.
    for size in [10, runway_lambda::store::MAX_FILE_BYTES] {
        let bytes: Vec<u8> = (0..size).map(|_| fastrand::u8(..)).collect();
        let token = format!("{:064x}", size);
        let f = HostedFile {
            token: token.clone(),
            name: "report.csv".into(),
            mime: "text/csv".into(),
            bytes: bytes.clone(),
            expires_at_ms: now + 5_000,
        };
        s.put_file(&f).await.unwrap();
        assert_eq!(
            s.get_file(&token, now).await.unwrap(),
            Some(f.clone()),
            "{size} bytes"
        );
        assert_eq!(
            s.get_file(&token, now + 5_000).await.unwrap(),
            None,
            "expired"
        );
    }
    assert_eq!(s.get_file(&"f".repeat(64), now).await.unwrap(), None);
    let huge = HostedFile {
        token: "e".repeat(64),
        name: "x".into(),
        mime: "application/octet-stream".into(),
        bytes: vec![0; runway_lambda::store::MAX_FILE_BYTES + 1],
        expires_at_ms: now + 1,
    };
    assert!(matches!(
        s.put_file(&huge).await,
        Err(StoreError::TooLarge(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto (installed on first use by infra/aws/local): run by scripts/test-aws.sh"]
async fn an_unreachable_dynamodb_is_a_store_error_in_bounded_time() {
    // A port nothing listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (s, rec) = store(&format!("http://127.0.0.1:{port}"), "none").await;
    let started = Instant::now();
    let r = s.start_turn(&claim("r", "a/t", "f", 0)).await;
    assert!(matches!(r, Err(StoreError::Unavailable(_))), "{r:?}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?}",
        started.elapsed()
    );
    let attempts = rec.take().iter().filter(|r| r.target == "PutItem").count();
    assert!(
        attempts >= 2,
        "the SDK retried a failed connection ({attempts} attempts)"
    );
    let r = s
        .finish_turn(&commit("r", "a/t", "f", 0, ThreadContext::default()))
        .await;
    assert!(matches!(r, Err(StoreError::Unavailable(_))), "{r:?}");
}
