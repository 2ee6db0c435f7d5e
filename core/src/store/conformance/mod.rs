//! The store conformance suite (feature `store-tests`): every [`TurnStore`] runs it —
//! [`crate::adapter::MemoryStore`], the server's SQLite store, DynamoDB on moto, the Durable Object's
//! SQL over rusqlite — so the semantics of [`crate::store::turn_state`] hold on every backend.
//!
//! Each check takes the store and a key prefix (so checks can share a table) and panics with
//! what went wrong. Times are explicit (`now_ms` arguments), never the wall clock, so expiry
//! is tested exactly.
//!
//! One file per primitive the suite checks: the run's claim (`claims.rs`), the thread a commit
//! writes (`threads.rs`), hosted files (`files.rs`), action claims (`actions.rs`), the meter's
//! counters (`tallies.rs`), limits as the engine checks them (`limits.rs`), and the vault
//! (`vault.rs`); what the checks build is in `fixtures.rs`.

use crate::store::TurnStore;

mod actions;
mod claims;
mod files;
mod fixtures;
mod limits;
mod tallies;
mod threads;
mod vault;

pub use actions::{action_claim, action_claims_have_one_winner_until_they_expire};
pub use claims::{
    a_commit_proves_it_holds_the_claim, a_lapsed_lease_nobody_took_over_still_commits,
    claim_replay_conflict_and_lease, concurrent_claims_of_one_run_have_one_winner,
    expiry_is_exact_on_read,
};
pub use files::hosted_files;
pub use fixtures::{WORKSPACE, claim, claim_from, commit};
pub use limits::{
    a_refused_turn_holds_no_slot_of_another_scope, a_turn_limit_holds_under_concurrency,
    limits_refuse_with_their_codes,
};
pub use tallies::{
    a_repeated_tally_write_counts_once, tallies_add_up_and_expire, tally_additions_saturate,
};
pub use threads::{
    a_burst_on_one_thread_keeps_every_message, a_stale_version_is_merged_not_overwritten,
    a_superseded_turn_is_kept_in_arrival_order, a_thread_belongs_to_the_workspace_that_started_it,
    concurrent_first_claims_from_two_workspaces_have_one_owner, large_values_round_trip,
};
pub use vault::{
    a_connect_state_expires_exactly, a_connect_state_is_claimed_once,
    connections_are_kept_per_workspace_user_and_provider,
    connections_are_listed_by_workspace_and_user, connections_are_listed_page_by_page,
    deleting_a_connection_leaves_the_others,
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
