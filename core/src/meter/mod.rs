//! Running a pilot: limits, usage and cost.
//!
//! - [`limits`]: [`Limits`] of workspaces and workers, model [`Price`]s, and the [`Policy`]
//!   saying which apply to a turn.
//! - [`window`]: the UTC minute, day and month they are counted in.
//! - `admission`: before the agent runs, the turn is checked and counted (`RATE_LIMITED`,
//!   `QUOTA_EXCEEDED`).
//! - `budget`: what the token and spend limits leave a turn, which one is reached; `ledger`:
//!   how a running turn reaches the shared counters before each model call.
//! - [`turn_usage`]: [`TurnUsage`], what the turn used, reported by the agent, and its budget.
//! - `record`: after the turn, its [`TurnReport`] goes to the usage rows, the budget counters
//!   and the deployment's [`TurnMetrics`].
//! - [`usage_report`]: `GET /usage`.
//!
//! The counters are [`crate::store::tally`] rows in the turn store.

pub(crate) mod admission;
pub(crate) mod budget;
pub(crate) mod ledger;
pub mod limits;
pub(crate) mod record;
pub mod report;
pub mod turn_usage;
pub mod usage_report;
pub mod window;

pub use limits::{ANY_WORKSPACE, InvalidAmount, Limits, Policy, Price};
pub use record::{usage_item, usage_part};
pub use report::{LogLine, TurnMetrics, TurnReport};
pub use turn_usage::{ModelTokens, TurnUsage};
pub use usage_report::{UsageReport, UsageRow};
