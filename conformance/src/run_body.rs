//! The `POST /runs` body and the ids Console puts in it.
//!
//! Every id is a string holding a 63-bit integer, as Console sends them;
//! fresh random ids are drawn for every check so that repeated checks against
//! the same agent never collide.

use serde::Serialize;
use serde_json::Value;

/// A fresh 63-bit id as a decimal string (e.g. `"918273645500123456"`).
pub fn fresh_id() -> String {
    // Keep 19 digits most of the time, like Console's ids, while staying
    // within 63 bits.
    let n = fastrand::u64(1_000_000_000_000_000_000..=i64::MAX as u64);
    n.to_string()
}

/// The single-use threadId of the Test button: `validate-<16 hex>`.
pub fn validate_thread_id() -> String {
    format!("validate-{:016x}", fastrand::u64(..))
}

/// A short random token, used to recognise one turn's text in another.
pub fn fresh_token(prefix: &str) -> String {
    format!("{prefix}-{:012x}", fastrand::u64(..) & 0xffff_ffff_ffff)
}

/// The body of one `POST /runs` request.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunBody {
    /// Always `"1"`.
    pub protocol_version: String,
    /// The turn id, new on every turn.
    pub run_id: String,
    /// The conversation id (`T`, or `T:<branch>` after a fork).
    pub thread_id: String,
    /// The Digital Worker being called.
    pub agent_id: String,
    /// The calling organization.
    pub workspace_id: String,
    /// The person chatting, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// What the user typed (may be empty).
    pub input: String,
    /// Files attached to this turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attachments: Option<Vec<Value>>,
    /// The answer to a question the agent asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume: Option<Value>,
}

/// The ids that stay the same across the turns of one check: which Digital
/// Worker, which organization, which person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Caller {
    /// `agentId`.
    pub agent_id: String,
    /// `workspaceId`.
    pub workspace_id: String,
    /// `userId`.
    pub user_id: Option<String>,
}

impl Caller {
    /// Fresh random ids.
    pub fn fresh() -> Self {
        Caller {
            agent_id: fresh_id(),
            workspace_id: fresh_id(),
            user_id: Some(fresh_id()),
        }
    }

    /// An ordinary chat turn on `thread_id` with a fresh runId.
    pub fn turn(&self, thread_id: &str, input: &str) -> RunBody {
        RunBody {
            protocol_version: "1".into(),
            run_id: fresh_id(),
            thread_id: thread_id.into(),
            agent_id: self.agent_id.clone(),
            workspace_id: self.workspace_id.clone(),
            user_id: self.user_id.clone(),
            input: input.into(),
            attachments: None,
            resume: None,
        }
    }
}

impl RunBody {
    /// The JSON bytes sent on the wire.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a RunBody always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_63_bit_decimal_strings() {
        for _ in 0..100 {
            let id = fresh_id();
            let n: u64 = id.parse().unwrap();
            assert!(n <= i64::MAX as u64);
            assert_eq!(id.len(), 19);
        }
        let v = validate_thread_id();
        assert!(v.starts_with("validate-"));
        assert_eq!(v.len(), "validate-".len() + 16);
        assert!(
            v["validate-".len()..]
                .chars()
                .all(|c| c.is_ascii_hexdigit())
        );
    }

    #[test]
    fn body_shape() {
        let c = Caller::fresh();
        let body = c.turn("918273645500123456", "Hello");
        let v: Value = serde_json::from_slice(&body.to_bytes()).unwrap();
        assert_eq!(v["protocolVersion"], "1");
        assert_eq!(v["threadId"], "918273645500123456");
        assert!(v["runId"].is_string());
        assert!(v["agentId"].is_string());
        assert!(v["workspaceId"].is_string());
        assert!(v["userId"].is_string());
        assert_eq!(v["input"], "Hello");
        assert!(v.get("history").is_none());
    }
}
