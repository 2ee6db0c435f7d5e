//! After a turn: its [`TurnReport`], added to the usage report's row (workspace × worker ×
//! day) and to the day and month counters of every scope with a token or spend limit, then
//! handed to the deployment's [`TurnMetrics`](crate::meter::TurnMetrics).

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;

use crate::agent::{Protocol, Turn};
use crate::keys::{usage_item, usage_part};
use crate::meter::limits::Policy;
use crate::meter::report::TurnReport;
use crate::meter::tally::{Tally, TallyKey};
use crate::meter::turn_usage::TurnOutcome;
use crate::meter::window::Windows;
use crate::platform::runtime::Runtime;
use crate::store::TurnStore;
use crate::turn::timers::{Timer, USAGE_WRITE_TIMEOUT, after};
use crate::turn::wait::{TurnIo, Watch, Woke};
use crate::wire::writer::Encoding;

/// After a turn that was claimed (or refused): records its usage and hands its report to the
/// deployment's metrics. A replayed or never-started turn has no outcome and is skipped. The
/// writes are awaited in the turn's wait loop, bounded by [`Timer::UsageWrite`].
#[allow(private_bounds)]
pub(crate) async fn after_turn<A, S: TurnStore, R: Runtime, E: Encoding>(
    io: &mut TurnIo<A, S, R, E>,
    turn: &Turn,
) {
    let Some(outcome) = turn.usage.outcome() else {
        return;
    };
    let engine = Arc::clone(&io.engine);
    let now = io.now();
    let report = report_of(turn, &engine.policy, outcome, now);
    let write_id = turn.usage.write_id();
    let budget_writes = turn.usage.unshared_budget_writes();
    let write = store_report(
        &engine.store,
        &report,
        &budget_writes,
        engine.config.usage_ttl,
        &write_id,
    );
    io.timers
        .set(Timer::UsageWrite, after(now, USAGE_WRITE_TIMEOUT));
    let woke = io.wait(write, Watch::USAGE_WRITE).await;
    io.timers.stop(Timer::UsageWrite);
    if !matches!(woke, Woke::Done(())) {
        tracing::error!(code = "USAGE_NOT_RECORDED", "the usage writes timed out");
    }
    engine.metrics.turn_ended(&report);
}

/// The report of a turn that ended with `outcome` at `now_ms`.
pub(crate) fn report_of(
    turn: &Turn,
    policy: &Policy,
    outcome: TurnOutcome,
    now_ms: u64,
) -> TurnReport {
    let usage = &turn.usage;
    let started = usage.started_at_ms().min(now_ms);
    let mut tally = usage.totals();
    tally.turns = 1;
    match outcome {
        TurnOutcome::Success => tally.succeeded = 1,
        TurnOutcome::Interrupt => tally.interrupted = 1,
        TurnOutcome::Error(crate::error::TurnErrorCode::RateLimited) => tally.rate_limited = 1,
        TurnOutcome::Error(crate::error::TurnErrorCode::QuotaExceeded) => tally.quota_exceeded = 1,
        TurnOutcome::Error(_) => tally.failed = 1,
    }
    let first_frame_ms = usage.first_output_ms().map(|t| t.saturating_sub(started));
    tally.first_frame_ms = first_frame_ms.unwrap_or(0);
    tally.duration_ms = now_ms - started;
    TurnReport {
        protocol: match turn.protocol {
            Protocol::Console => "console",
            Protocol::Lowkey => "lowkey",
            Protocol::Agui => "agui",
        },
        run_id: turn.run_id.clone(),
        thread_id: turn.thread_id.clone(),
        worker: turn.agent_id.clone(),
        worker_name: policy.name(&turn.agent_id).map(str::to_owned),
        workspace: turn.workspace_id.clone(),
        outcome: outcome.as_str(),
        started_at_ms: started,
        first_frame_ms,
        duration_ms: tally.duration_ms,
        usage: tally,
    }
}

/// Writes `report` to the usage row as `write_id`, and `budget_writes` (the turn's spend the
/// budget counters do not count yet, each with its write id), concurrently; a failure is
/// logged, never fails the turn, which has ended.
pub(crate) async fn store_report<S: TurnStore>(
    store: &S,
    report: &TurnReport,
    budget_writes: &[(TallyKey, Tally, u64, String)],
    usage_ttl: Duration,
    write_id: &str,
) {
    let windows = Windows::at(report.started_at_ms);
    let day = windows.day.to_string();
    let mut writes: Vec<(TallyKey, Tally, u64, &str)> = vec![(
        TallyKey::new(
            usage_part(&day),
            usage_item(&report.workspace, &report.worker),
        ),
        report.usage,
        windows.day_end_ms() + usage_ttl.as_millis() as u64,
        write_id,
    )];
    writes.extend(
        budget_writes
            .iter()
            .map(|(key, tally, expires, id)| (key.clone(), *tally, *expires, id.as_str())),
    );
    let results = join_all(
        writes
            .iter()
            .map(|(key, tally, expires, id)| store.add_tally(key, tally, *expires, id)),
    )
    .await;
    for ((key, _, _, _), r) in writes.iter().zip(results) {
        if let Err(e) = r {
            tracing::error!(
                code = "USAGE_NOT_RECORDED",
                part = %key.part,
                error = %e,
                "could not record the turn's usage"
            );
        }
    }
}
