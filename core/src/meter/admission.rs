//! Admission: before the agent runs, the turn is checked against every limit that applies to
//! it (its workspace, its worker, the worker in that workspace), and counted.
//!
//! Order, and why:
//! 1. Token and spend budgets are read first (one read per scope with a budget): a turn
//!    refused for its budget takes nothing from a rate limit.
//! 2. Turns per minute are counted in every scope at once, all or nothing, with the store's
//!    atomic [`TurnStore::take_turns`](crate::store::TurnStore::take_turns). So a limit is never passed, whatever runs
//!    concurrently on any instance, and a turn refused by one scope never holds a slot of
//!    another, not even for a moment: one worker refused by its own limit cannot crowd the
//!    other workers out of their workspace's turns. (Taking scope by scope and giving back
//!    on a refusal did: with a workspace at 10 per minute and one worker at 2 within it, 80
//!    turns of that worker left another worker 3 to 7 of its 8 turns.)
//!
//! A store that cannot answer refuses the turn (`STORE_UNAVAILABLE`): limits fail closed.

use futures::future::join_all;

use crate::error::{StoreError, TurnErrorCode};
use crate::keys::meter_part;
use crate::meter::budget::{Budget, assess};
use crate::meter::limits::{Policy, Scope};
use crate::meter::tally::{TallyKey, TallyStore, TurnTake};
use crate::meter::turn_usage::TurnUsage;
use crate::meter::window::{Windows, wait_phrase};
use crate::protocol::Ending;

/// How long a minute counter is kept after its minute (then deleted).
const MINUTE_KEPT_MS: u64 = 120_000;

/// Checks and counts a turn of `agent_id` in `workspace_id` starting at `now_ms`, its counts
/// written as `write_id`. `Ok`: it may run (its budget is set on `usage`); `Err`: the ending
/// that refuses it.
pub(crate) async fn check_turn_limits<S: TallyStore>(
    store: &S,
    policy: &Policy,
    usage: &TurnUsage,
    write_id: &str,
    agent_id: &str,
    workspace_id: &str,
    now_ms: u64,
) -> Result<(), Ending> {
    let scopes = policy.scopes(agent_id, workspace_id);
    if scopes.is_empty() {
        return Ok(());
    }
    let windows = Windows::at(now_ms);
    let (budgeted, budget) = check_budgets(store, &scopes, &windows, now_ms)
        .await
        .map_err(|e| store_failed(&e))??;
    usage.set_budget(budgeted, budget);
    take_turns(store, &scopes, &windows, now_ms, write_id).await
}

fn store_failed(e: &StoreError) -> Ending {
    tracing::error!(code = "STORE_UNAVAILABLE", error = %e, "could not check the turn's limits");
    Ending::failed(TurnErrorCode::StoreUnavailable)
}

/// Reads each budgeted scope's day and month counters: refuses, naming the limit reached and
/// its reset, if one is spent, else what every limit leaves.
async fn check_budgets<S: TallyStore>(
    store: &S,
    scopes: &[Scope],
    windows: &Windows,
    now_ms: u64,
) -> Result<Result<(Vec<Scope>, Budget), Ending>, StoreError> {
    let budgeted: Vec<Scope> = scopes
        .iter()
        .filter(|s| s.limits.has_budget())
        .cloned()
        .collect();
    let reads = join_all(budgeted.iter().map(|s| {
        let part = meter_part(&s.key);
        async move { store.tallies(&part, now_ms).await }
    }))
    .await;
    let rows = reads.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(match assess(&budgeted, &rows, windows) {
        Ok(budget) => Ok((budgeted, budget)),
        Err(reached) => Err(reached.refusal(now_ms)),
    })
}

/// Counts the turn in every scope with a turns-per-minute limit, or in none.
async fn take_turns<S: TallyStore>(
    store: &S,
    scopes: &[Scope],
    windows: &Windows,
    now_ms: u64,
    write_id: &str,
) -> Result<(), Ending> {
    let item = windows.minute_item();
    let takes: Vec<TurnTake> = scopes
        .iter()
        .filter_map(|scope| {
            Some(TurnTake {
                key: TallyKey::new(meter_part(&scope.key), item.clone()),
                limit: scope.limits.turns_per_minute?,
            })
        })
        .collect();
    if takes.is_empty() {
        return Ok(());
    }
    let expires = windows.minute_end_ms() + MINUTE_KEPT_MS;
    match store.take_turns(&takes, expires, write_id).await {
        Ok(true) => Ok(()),
        Ok(false) => {
            let scopes: Vec<&str> = takes.iter().map(|t| t.key.part.as_str()).collect();
            tracing::warn!(
                code = "RATE_LIMITED",
                scopes = ?scopes,
                "turn refused: turns per minute"
            );
            Err(Ending::error(
                TurnErrorCode::RateLimited,
                format!(
                    "Too many messages right now. Please try again {}.",
                    wait_phrase(now_ms, windows.minute_end_ms())
                ),
            ))
        }
        Err(e) => Err(store_failed(&e)),
    }
}
