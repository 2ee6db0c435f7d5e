//! The `GET /health` body.

use serde::{Deserialize, Serialize};

/// Liveness as Console folds it: `ok` and `degraded` let turns through, `down` does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    /// Serving normally.
    Ok,
    /// Serving, but something is wrong (recent store errors).
    Degraded,
    /// Not serving.
    Down,
}

/// `{"status", "protocolVersions", "name", "version"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthBody {
    /// Current status.
    pub status: HealthStatus,
    /// Always contains `"1"`.
    pub protocol_versions: Vec<String>,
    /// Display name of the agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The agent's own version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}
