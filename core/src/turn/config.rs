//! [`TurnConfig`]: what the engine reads of the deployment's settings
//! ([`Config`](crate::adapter::Config), which the service owns and hands the engine as this):
//! a turn's timings and limits, and how long what it stores is kept. Each field means what
//! `Config`'s field of the same name says.

use std::time::Duration;

use crate::agent::context::ContextPolicy;
use crate::protocol::StreamLimits;

/// The settings every turn of a process runs with.
#[derive(Debug, Clone)]
pub(crate) struct TurnConfig {
    /// A heartbeat after this much silence.
    pub(crate) heartbeat: Duration,
    /// The first heartbeat this soon after the first frame.
    pub(crate) first_heartbeat: Duration,
    /// Padding written right after the first frame.
    pub(crate) first_flush_bytes: usize,
    /// A turn still running after this long ends with `RUN_ERROR`.
    pub(crate) turn_deadline: Duration,
    /// How soon a duplicate delivery first checks whether the original finished.
    pub(crate) duplicate_poll: Duration,
    /// The protocols' frame and stream limits.
    pub(crate) limits: StreamLimits,
    /// Largest file an agent may host.
    pub(crate) max_file_bytes: usize,
    /// How long a hosted-file link works.
    pub(crate) file_ttl: Duration,
    /// How much of a thread is kept.
    pub(crate) context_policy: ContextPolicy,
    /// How long an idle thread is remembered.
    pub(crate) context_ttl: Duration,
    /// How long Console's `validate-…` test threads are kept.
    pub(crate) validation_ttl: Duration,
    /// How long a finished run can be replayed by its id.
    pub(crate) recording_ttl: Duration,
    /// How long a day's usage rows are kept after the day.
    pub(crate) usage_ttl: Duration,
}
