//! `GET /health` and Console's fold of its answer into available /
//! unavailable.
//!
//! | answer | fold | code |
//! |---|---|---|
//! | 2xx, JSON, `status` `ok`, `protocolVersions` contains `"1"` | available | - |
//! | same with `status` `degraded` | available | `HEALTH_DEGRADED` (warning) |
//! | `protocolVersions` missing or without `"1"` | unavailable | `PROTOCOL_MISMATCH` |
//! | `status` `down`, missing or unknown | unavailable | `ENDPOINT_UNAVAILABLE` |
//! | 401 / 403, any other non-2xx, a 3xx (not followed) | unavailable | `ENDPOINT_UNAVAILABLE` |
//! | body not JSON | unavailable | `ENDPOINT_UNAVAILABLE` |
//! | connection failure | unavailable | `ENDPOINT_UNAVAILABLE` (`CONNECT_TIMEOUT` / `EGRESS_REFUSED` when that is the cause) |

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::findings::{Code, Finding};
use crate::transport::{Endpoint, HeaderSet, Transport, TransportFailure, classify_send_error};

/// What the agent declared in `status`, when it folds to available.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Availability {
    /// `ok`.
    Ok,
    /// `degraded`: chat turns still go through.
    Degraded,
}

impl Availability {
    /// `"ok"` or `"degraded"`, as the agent wrote it.
    pub fn as_str(self) -> &'static str {
        match self {
            Availability::Ok => "ok",
            Availability::Degraded => "degraded",
        }
    }
}

/// Console's fold of one `/health` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum HealthVerdict {
    /// Chat turns go through.
    Available {
        /// `ok` or `degraded`.
        status: Availability,
        /// The optional display `name`.
        name: Option<String>,
        /// The optional `version`.
        version: Option<String>,
    },
    /// Every chat turn would be refused.
    Unavailable {
        /// `ENDPOINT_UNAVAILABLE`, `PROTOCOL_MISMATCH`, `CONNECT_TIMEOUT` or
        /// `EGRESS_REFUSED`.
        code: Code,
        /// Why.
        reason: String,
    },
}

impl HealthVerdict {
    /// Whether Console lets chat turns through.
    pub fn is_available(&self) -> bool {
        matches!(self, HealthVerdict::Available { .. })
    }

    /// The findings this verdict produces (none for `ok`).
    pub fn findings(&self) -> Vec<Finding> {
        match self {
            HealthVerdict::Available {
                status: Availability::Ok,
                ..
            } => vec![],
            HealthVerdict::Available {
                status: Availability::Degraded,
                ..
            } => vec![Finding::new(
                Code::HealthDegraded,
                "/health declares status \"degraded\": chat still goes through",
            )],
            HealthVerdict::Unavailable { code, reason } => {
                vec![Finding::new(*code, format!("/health: {reason}"))]
            }
        }
    }
}

fn unavailable(code: Code, reason: impl Into<String>) -> HealthVerdict {
    HealthVerdict::Unavailable {
        code,
        reason: reason.into(),
    }
}

/// Folds an HTTP answer to `GET /health`. Pure.
pub fn fold_health(status: u16, body: &[u8]) -> HealthVerdict {
    match status {
        200..=299 => {}
        300..=399 => {
            return unavailable(
                Code::EndpointUnavailable,
                format!("HTTP {status}: /health must not redirect, redirects are not followed"),
            );
        }
        401 | 403 => {
            return unavailable(
                Code::EndpointUnavailable,
                format!("HTTP {status}: the agreed headers were refused"),
            );
        }
        _ => return unavailable(Code::EndpointUnavailable, format!("HTTP {status}")),
    }
    let json: Value = match serde_json::from_slice(body) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return unavailable(
                Code::EndpointUnavailable,
                "the body is JSON but not an object",
            );
        }
        Err(_) => return unavailable(Code::EndpointUnavailable, "the body is not JSON"),
    };
    let status = match json.get("status").and_then(Value::as_str) {
        Some("ok") => Availability::Ok,
        Some("degraded") => Availability::Degraded,
        Some("down") => {
            return unavailable(
                Code::EndpointUnavailable,
                "the agent declares status \"down\"",
            );
        }
        Some(other) => {
            return unavailable(
                Code::EndpointUnavailable,
                format!("status {other:?} is not ok, degraded or down"),
            );
        }
        None => return unavailable(Code::EndpointUnavailable, "`status` is missing"),
    };
    let speaks_1 = json
        .get("protocolVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|p| p.as_str() == Some("1")));
    if !speaks_1 {
        return unavailable(
            Code::ProtocolMismatch,
            format!(
                "protocolVersions {} does not contain \"1\"",
                json.get("protocolVersions")
                    .map(Value::to_string)
                    .unwrap_or_else(|| "(missing)".into())
            ),
        );
    }
    let text = |k: &str| json.get(k).and_then(Value::as_str).map(str::to_owned);
    HealthVerdict::Available {
        status,
        name: text("name"),
        version: text("version"),
    }
}

/// Console's fold of a request that got no HTTP answer.
pub fn fold_failure(failure: &TransportFailure) -> HealthVerdict {
    unavailable(failure.code(Endpoint::Health), failure.describe())
}

/// One `/health` probe.
#[derive(Debug, Clone, Serialize)]
pub struct HealthReport {
    /// The fold.
    pub verdict: HealthVerdict,
    /// The HTTP status, when one arrived.
    pub http_status: Option<u16>,
    /// How long it took, in milliseconds.
    pub elapsed_ms: u64,
}

/// Calls `GET /health` with `headers` and folds the answer. The whole probe
/// is bounded by the connect and first-frame deadlines together.
pub async fn probe_health(transport: &Transport, headers: &HeaderSet) -> HealthReport {
    let start = Instant::now();
    let (verdict, http_status) = probe(transport, headers).await;
    HealthReport {
        verdict,
        http_status,
        elapsed_ms: start.elapsed().as_millis() as u64,
    }
}

async fn probe(transport: &Transport, headers: &HeaderSet) -> (HealthVerdict, Option<u16>) {
    if let Err(failure) = transport.precheck() {
        return (fold_failure(&failure), None);
    }
    let d = transport.deadlines();
    let budget: Duration = d.connect + d.first_frame;
    let call = async {
        let response = transport.health_request(headers).send().await;
        match response {
            Err(e) => Err(classify_send_error(&e)),
            Ok(r) => {
                let status = r.status().as_u16();
                let body = r
                    .bytes()
                    .await
                    .map_err(|e| TransportFailure::Other(e.to_string()))?;
                Ok((status, body))
            }
        }
    };
    match tokio::time::timeout(budget, call).await {
        Err(_) => (
            unavailable(
                Code::EndpointUnavailable,
                format!("no answer within {} ms", budget.as_millis()),
            ),
            None,
        ),
        Ok(Err(failure)) => (fold_failure(&failure), None),
        Ok(Ok((status, body))) => {
            tracing::debug!(status, len = body.len(), "health answered");
            (fold_health(status, &body), Some(status))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(v: &HealthVerdict) -> Option<Code> {
        match v {
            HealthVerdict::Available { .. } => None,
            HealthVerdict::Unavailable { code, .. } => Some(*code),
        }
    }

    #[test]
    fn the_fold() {
        let ok = br#"{"status":"ok","protocolVersions":["1"],"name":"Flight Assistant","version":"2.3.1"}"#;
        assert_eq!(
            fold_health(200, ok),
            HealthVerdict::Available {
                status: Availability::Ok,
                name: Some("Flight Assistant".into()),
                version: Some("2.3.1".into())
            }
        );
        let degraded = br#"{"status":"degraded","protocolVersions":["1","2"]}"#;
        assert!(fold_health(200, degraded).is_available());
        assert_eq!(
            fold_health(200, degraded).findings()[0].code,
            Code::HealthDegraded
        );
        assert_eq!(code(&fold_health(401, ok)), Some(Code::EndpointUnavailable));
        assert_eq!(code(&fold_health(403, ok)), Some(Code::EndpointUnavailable));
        assert_eq!(code(&fold_health(301, ok)), Some(Code::EndpointUnavailable));
        assert_eq!(code(&fold_health(500, ok)), Some(Code::EndpointUnavailable));
        assert_eq!(
            code(&fold_health(200, b"OK")),
            Some(Code::EndpointUnavailable)
        );
        assert_eq!(
            code(&fold_health(
                200,
                br#"{"status":"down","protocolVersions":["1"]}"#
            )),
            Some(Code::EndpointUnavailable)
        );
        assert_eq!(
            code(&fold_health(
                200,
                br#"{"status":"ok","protocolVersions":["2"]}"#
            )),
            Some(Code::ProtocolMismatch)
        );
        assert_eq!(
            code(&fold_health(
                200,
                br#"{"status":"ok","protocolVersions":[1]}"#
            )),
            Some(Code::ProtocolMismatch)
        );
        assert_eq!(
            code(&fold_health(200, br#"{"status":"ok"}"#)),
            Some(Code::ProtocolMismatch)
        );
    }
}
