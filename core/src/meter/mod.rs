//! Running a pilot: limits, usage and cost.
//!
//! - [`limits`]: [`UsageLimits`] of workspaces and workers, model [`Price`]s, and the [`Policy`]
//!   saying which apply to a turn.
//! - [`window`]: the UTC minute, day and month they are counted in.
//! - `admission`: before the agent runs, the turn is checked and counted (`RATE_LIMITED`,
//!   `QUOTA_EXCEEDED`).
//! - `budget`: what the token and spend limits leave a turn, which one is reached; `ledger`:
//!   how a running turn reaches the shared counters before each model call.
//! - [`turn_usage`]: [`TurnUsage`], what the turn used, reported by the agent, and its budget.
//! - [`report`]: a turn's [`TurnReport`] and the deployment's [`TurnMetrics`] (the engine
//!   writes the report after the turn: `crate::turn::usage_record`).
//! - [`usage_report`]: `GET /usage`.
//! - [`tally`]: the counters, [`tally::Tally`] rows in the turn store, reached through
//!   [`tally::TallyStore`] (every turn store is one): the meter is a layer below the store and
//!   the agent, so that [`crate::Turn`] can carry its [`TurnUsage`].

pub(crate) mod admission;
pub(crate) mod budget;
pub(crate) mod ledger;
pub mod limits;
pub mod report;
pub mod tally;
pub mod turn_usage;
pub mod usage_report;
pub mod window;

pub use crate::keys::{usage_item, usage_part};
pub use limits::{ANY_WORKSPACE, InvalidAmount, Policy, Price, UsageLimits};
pub use report::{LogLine, TurnMetrics, TurnReport};
pub use turn_usage::{ModelTokens, TurnUsage};
pub use usage_report::{UsageReport, UsageRow};
