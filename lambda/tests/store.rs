//! The DynamoDB store against moto's DynamoDB server (started by `infra/aws/local
//! --dynamodb-only`): the exact semantics of the reference stores, request budgets, parts for
//! large values, expiry on read, and an unreachable endpoint.

mod support;

use std::time::{Duration, Instant};

use runway_core::adapter::{HostedFile, StoreError, TurnClaim, TurnCommit, TurnStart, TurnStore};
use runway_core::{Message, Role, ThreadContext};
use support::{moto, store};

fn claim(run: &str, thread: &str, fp: &str, now: u64) -> TurnClaim {
    runway_core::store::conformance::claim(run, thread, fp, now, &format!("token-{run}-{now}"))
}

/// The commit of a turn claimed with `c` (whose start was `started`), with `context`.
fn commit(c: &TurnClaim, started: &TurnStart, context: ThreadContext) -> TurnCommit {
    let mut commit = runway_core::store::conformance::commit(c, started, "q", "a");
    commit.context = context;
    commit
}

fn random_text(n: usize) -> String {
    (0..n).map(|_| fastrand::alphanumeric()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto (installed on first use by infra/aws/local): run by scripts/test-aws.sh"]
async fn passes_the_store_conformance_suite() {
    let db = moto("conformance").await;
    let (s, _) = store(&db.endpoint, "conformance").await;
    runway_core::store::conformance::run_all(&s, "dynamo").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto (installed on first use by infra/aws/local): run by scripts/test-aws.sh"]
async fn passes_the_vault_conformance_suite() {
    let db = moto("vault").await;
    let (s, _) = store(&db.endpoint, "vault").await;
    runway_core::store::conformance::run_vault(&s, "dynamo").await;
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
async fn an_ordinary_turn_costs_four_requests_whatever_the_thread_length() {
    let db = moto("budget").await;
    let (s, rec) = store(&db.endpoint, "budget").await;
    let thread = "a/long-thread";
    let mut ctx = ThreadContext::default();
    // A long thread: 60 turns of history.
    for i in 0..60u64 {
        let now = 1_000_000 + i * 10;
        let run = format!("run-{i}");
        rec.take();
        let c = claim(&run, thread, "f", now);
        let started = s.start_turn(&c).await.unwrap();
        let TurnStart::Claimed { context, .. } = &started else {
            panic!("claim {i}")
        };
        let before_agent = rec.take();
        assert_eq!(context.clone().unwrap_or_default().turns, ctx.turns);
        ctx.turns += 1;
        ctx.messages.push(Message::new(
            Role::User,
            format!("question {i} {}", "x".repeat(500)),
        ));
        ctx.messages.push(Message::new(
            Role::Assistant,
            format!("answer {i} {}", "y".repeat(1500)),
        ));
        ctx.trim(&runway_core::adapter::ContextPolicy::default());
        let mut cm = commit(&c, &started, ctx.clone());
        cm.recording = "data: {\"type\":\"TEXT_MESSAGE_CONTENT\"}\n\n"
            .repeat(200)
            .into();
        assert_eq!(
            s.finish_turn(&cm).await.unwrap(),
            runway_core::adapter::CommitOutcome::Applied
        );
        let after_agent = rec.take();
        let mut ops: Vec<&str> = before_agent.iter().map(|r| r.target.as_str()).collect();
        ops.sort_unstable();
        // The claim first; only once it is won, the arrival and the thread read, together.
        assert_eq!(before_agent[0].target, "PutItem", "turn {i}");
        assert_eq!(
            ops,
            ["PutItem", "Query", "UpdateItem"],
            "turn {i}: requests before the agent"
        );
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
        let cl = claim(&run, "a/t", "f", now);
        let started = s.start_turn(&cl).await.unwrap();
        assert!(matches!(started, TurnStart::Claimed { .. }));
        rec.take();
        let mut c = commit(&cl, &started, ThreadContext::default());
        c.recording = recording.clone().into();
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
    let c1 = claim("ctx-1", "a/big", "f", now);
    let st1 = s.start_turn(&c1).await.unwrap();
    s.finish_turn(&commit(&c1, &st1, big.clone()))
        .await
        .unwrap();
    let c2 = claim("ctx-2", "a/big", "f", now);
    let st2 = s.start_turn(&c2).await.unwrap();
    let TurnStart::Claimed { context, .. } = &st2 else {
        panic!("ctx-2")
    };
    assert_eq!(context.as_ref(), Some(&big));
    // Smaller again: inline, and the parts left from the larger one are ignored.
    let small = ThreadContext {
        turns: 8,
        ..ThreadContext::default()
    };
    s.finish_turn(&commit(&c2, &st2, small.clone()))
        .await
        .unwrap();
    let TurnStart::Claimed { context, .. } = s
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
    let c = claim("r", "a/t", "f", 0);
    let started = TurnStart::Claimed {
        context: None,
        version: 0,
        arrival: 1,
    };
    let r = s
        .finish_turn(&commit(&c, &started, ThreadContext::default()))
        .await;
    assert!(matches!(r, Err(StoreError::Unavailable(_))), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto (installed on first use by infra/aws/local): run by scripts/test-aws.sh"]
async fn a_duplicate_poll_is_one_conditional_write_and_reads_nothing() {
    // Item 13 of issue 11: the thread was queried beside every claim, so each poll of a
    // waiting duplicate paid for a thread read too.
    let db = moto("poll").await;
    let (s, rec) = store(&db.endpoint, "poll").await;
    let original = claim("r", "a/t", "f", 100);
    assert!(matches!(
        s.start_turn(&original).await.unwrap(),
        TurnStart::Claimed { .. }
    ));
    rec.take();
    assert_eq!(
        s.start_turn(&claim("r", "a/t", "f", 200)).await.unwrap(),
        TurnStart::Running
    );
    let ops: Vec<String> = rec.take().into_iter().map(|r| r.target).collect();
    assert_eq!(ops, ["PutItem"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto (installed on first use by infra/aws/local): run by scripts/test-aws.sh"]
async fn kept_attachments_small_and_in_parts_first_write_wins() {
    use bytes::Bytes;
    use runway_agents::attachments::AttachmentStore;
    let db = moto("attachments").await;
    let (s, _) = store(&db.endpoint, "attachments").await;
    let small = Bytes::from_static(b"\x89PNG small");
    s.put_if_absent("a/t", "f1", small.clone()).await.unwrap();
    s.put_if_absent("a/t", "f1", Bytes::from_static(b"other"))
        .await
        .unwrap();
    assert_eq!(s.get("a/t", "f1").await.unwrap(), Some(small));
    assert_eq!(s.get("a/u", "f1").await.unwrap(), None, "another thread");
    assert_eq!(s.get("a/t", "f2").await.unwrap(), None);
    // 4 MiB of incompressible bytes: twelve parts, each in its own partition.
    let big = Bytes::from(
        (0..4 * 1024 * 1024)
            .map(|_| fastrand::u8(..))
            .collect::<Vec<u8>>(),
    );
    s.put_if_absent("a/t", "big", big.clone()).await.unwrap();
    assert_eq!(s.get("a/t", "big").await.unwrap(), Some(big));
}

/// The AWS SDK retries a request whose answer came after its attempt timeout, though DynamoDB
/// applied it. A turn's count and its usage must still count once (they counted twice before
/// tally writes carried write ids: 194 turns recorded for 100 against an overloaded moto).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto (installed on first use by infra/aws/local): run by scripts/test-aws.sh"]
async fn a_tally_write_retried_after_a_late_answer_counts_once() {
    use runway_core::store::tally::{Tally, TallyKey, TurnTake};
    let db = moto("late").await;
    let proxy = support::LateAnswers::start(&db.endpoint, Duration::from_millis(1500)).await;
    let s =
        support::store_with_attempt_timeout(&proxy.endpoint, "late", Duration::from_millis(500))
            .await;
    let (direct, _) = store(&db.endpoint, "late").await;

    let minute = TurnTake {
        key: TallyKey::new("meter/workspace/w", "m/1"),
        limit: 10,
    };
    assert!(
        s.take_turns(std::slice::from_ref(&minute), u64::MAX / 2, "turn-1")
            .await
            .unwrap()
    );
    let usage = TallyKey::new("usage/2026-12-02", "w/a");
    let one = Tally {
        turns: 1,
        input_tokens: 120,
        output_tokens: 30,
        cost_micro_usd: 36,
        ..Tally::default()
    };
    s.add_tally(&usage, &one, u64::MAX / 2, "turn-1")
        .await
        .unwrap();
    let pair = TurnTake {
        key: TallyKey::new("meter/workspace/w/worker/a", "m/1"),
        limit: 2,
    };
    assert!(
        s.take_turns(&[minute, pair], u64::MAX / 2, "turn-2")
            .await
            .unwrap()
    );

    // The SDK did send each write twice...
    let repeated = proxy.repeated.lock().unwrap().clone();
    assert_eq!(
        repeated, ["TransactWriteItems"; 3],
        "the SDK did not retry each late write once"
    );
    // ...and each counted once: turn-1 and turn-2 taken, turn-2 in two rows; one usage
    // addition.
    let rows = direct.tallies("meter/workspace/w", 0).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].1.turns, 2, "{rows:?}");
    let rows = direct
        .tallies("meter/workspace/w/worker/a", 0)
        .await
        .unwrap();
    assert_eq!(rows[0].1.turns, 1, "{rows:?}");
    let rows = direct.tallies("usage/2026-12-02", 0).await.unwrap();
    assert_eq!(rows, vec![("w/a".to_owned(), one)]);
}

/// Issue 25: a minute's turn counter is one small item however many turns it counts. It kept
/// the write id of every turn in a set of its own: past about 11,000 turns in a minute it
/// passed DynamoDB's 400 KB item limit and every further turn failed. 500 turns (write ids
/// as the engine makes them, 32 hex digits) against a limit of 100,000: the item stays
/// under 1 KB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto (installed on first use by infra/aws/local): run by scripts/test-aws.sh"]
async fn a_turn_counter_item_does_not_grow_with_its_turns() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use runway_core::store::tally::{TallyKey, TurnTake};
    let db = moto("counter").await;
    let (s, _) = store(&db.endpoint, "counter").await;
    let take = TurnTake {
        key: TallyKey::new("meter/workspace/w", "m/1"),
        limit: 100_000,
    };
    for i in 0..500u128 {
        let write_id = format!(
            "{:032x}",
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)
        );
        assert!(
            s.take_turns(std::slice::from_ref(&take), u64::MAX / 2, &write_id)
                .await
                .unwrap()
        );
    }
    let rows = s.tallies("meter/workspace/w", 0).await.unwrap();
    assert_eq!(rows[0].1.turns, 500, "{rows:?}");
    let item = support::raw_client(&db.endpoint)
        .await
        .get_item()
        .table_name("counter")
        .key("pk", AttributeValue::S("tally#meter/workspace/w".into()))
        .key("sk", AttributeValue::S("m/1".into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .expect("the counter item");
    // DynamoDB's item size: attribute names plus values (numbers counted as their digits).
    let value_bytes = |v: &AttributeValue| match v {
        AttributeValue::S(t) | AttributeValue::N(t) => t.len(),
        AttributeValue::Ss(set) | AttributeValue::Ns(set) => set.iter().map(String::len).sum(),
        other => panic!("unexpected attribute {other:?}"),
    };
    let size: usize = item.iter().map(|(k, v)| k.len() + value_bytes(v)).sum();
    assert!(
        size < 1024,
        "the counter item grew to {size} bytes with 500 turns"
    );
}
