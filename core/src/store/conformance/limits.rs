//! Limits as the engine checks them (`take_turns`, and the budgets read through `tallies`):
//! a turns-per-minute limit holds under concurrency, a refused turn holds no slot of another
//! scope, and each limit refuses with its code.

use futures::future::join_all;

use crate::error::TurnErrorCode;
use crate::meter::admission::check_turn_limits;
use crate::meter::tally::{Tally, TallyKey, TurnTake};
use crate::meter::turn_usage::TurnUsage;
use crate::meter::{Policy, UsageLimits};
use crate::protocol::Ending;
use crate::store::TurnStore;

pub(super) fn policy_with(
    workspace: &str,
    worker: &str,
    ws: UsageLimits,
    wk: UsageLimits,
) -> Policy {
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
