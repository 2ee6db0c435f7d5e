//! What the Worker and a thread's Durable Object say to each other: one JSON request per
//! store call (`POST /start`, `POST /finish`), so a turn costs two Durable Object round trips.
//!
//! The thread context travels as the JSON text it is stored as: the Durable Object never
//! parses it, the Worker does (and reports [`StoreError::Corrupt`] if it cannot).

use runway_core::{StoreError, ThreadContext, TurnClaim, TurnCommit, TurnStart};
use serde::{Deserialize, Serialize};

/// Path of the claim call.
pub const START_PATH: &str = "/start";
/// Path of the commit call.
pub const FINISH_PATH: &str = "/finish";

/// `POST /start`: claim a run and load its thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartRequest {
    /// [`TurnClaim::run_key`].
    pub run_key: String,
    /// [`TurnClaim::thread_key`].
    pub thread_key: String,
    /// [`TurnClaim::fingerprint`].
    pub fingerprint: String,
    /// [`TurnClaim::now_ms`].
    pub now_ms: u64,
    /// [`TurnClaim::lease_until_ms`].
    pub lease_until_ms: u64,
}

impl From<&TurnClaim> for StartRequest {
    fn from(c: &TurnClaim) -> Self {
        Self {
            run_key: c.run_key.clone(),
            thread_key: c.thread_key.clone(),
            fingerprint: c.fingerprint.clone(),
            now_ms: c.now_ms,
            lease_until_ms: c.lease_until_ms,
        }
    }
}

/// The answer to `POST /start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum StartReply {
    /// [`TurnStart::Claimed`], with the stored thread as JSON text.
    Claimed {
        /// The thread context's JSON, `None` if the thread is new or expired.
        context: Option<String>,
    },
    /// [`TurnStart::Finished`].
    Finished {
        /// The recorded frames.
        recording: String,
    },
    /// [`TurnStart::Running`].
    Running,
    /// [`TurnStart::Conflict`].
    Conflict,
}

impl StartReply {
    /// The core's view of the reply.
    ///
    /// # Errors
    /// The stored context is not a [`ThreadContext`].
    pub fn into_turn_start(self) -> Result<TurnStart, StoreError> {
        Ok(match self {
            Self::Claimed { context } => TurnStart::Claimed {
                context: context
                    .map(|json| {
                        serde_json::from_str::<ThreadContext>(&json)
                            .map_err(|e| StoreError::Corrupt(format!("thread context: {e}")))
                    })
                    .transpose()?,
            },
            Self::Finished { recording } => TurnStart::Finished { recording },
            Self::Running => TurnStart::Running,
            Self::Conflict => TurnStart::Conflict,
        })
    }
}

/// `POST /finish`: save the thread and the run's recording in one write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FinishRequest {
    /// [`TurnCommit::run_key`].
    pub run_key: String,
    /// [`TurnCommit::fingerprint`].
    pub fingerprint: String,
    /// [`TurnCommit::thread_key`].
    pub thread_key: String,
    /// [`TurnCommit::context`] as JSON text.
    pub context: String,
    /// [`TurnCommit::context_expires_at_ms`].
    pub context_expires_at_ms: u64,
    /// [`TurnCommit::recording`].
    pub recording: String,
    /// [`TurnCommit::recording_expires_at_ms`].
    pub recording_expires_at_ms: u64,
}

impl FinishRequest {
    /// The request for `commit`.
    ///
    /// # Errors
    /// The context cannot be serialized.
    pub fn from_commit(commit: &TurnCommit) -> Result<Self, StoreError> {
        Ok(Self {
            run_key: commit.run_key.clone(),
            fingerprint: commit.fingerprint.clone(),
            thread_key: commit.thread_key.clone(),
            context: serde_json::to_string(&commit.context)
                .map_err(|e| StoreError::Corrupt(format!("thread context: {e}")))?,
            context_expires_at_ms: commit.context_expires_at_ms,
            recording: commit.recording.clone(),
            recording_expires_at_ms: commit.recording_expires_at_ms,
        })
    }
}

/// An error answer from the Durable Object (any status but 200).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReply {
    /// `corrupt`, `too_large` or `unavailable`.
    pub kind: String,
    /// What went wrong (no user data).
    pub message: String,
}

impl ErrorReply {
    /// The store error this reply stands for.
    pub fn into_store_error(self) -> StoreError {
        match self.kind.as_str() {
            "corrupt" => StoreError::Corrupt(self.message),
            "too_large" => StoreError::TooLarge(self.message),
            _ => StoreError::Unavailable(self.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_round_trip_and_convert() {
        let ctx = ThreadContext {
            turns: 3,
            ..ThreadContext::default()
        };
        let reply = StartReply::Claimed {
            context: Some(serde_json::to_string(&ctx).unwrap()),
        };
        let json = serde_json::to_string(&reply).unwrap();
        let back: StartReply = serde_json::from_str(&json).unwrap();
        assert_eq!(
            back.into_turn_start().unwrap(),
            TurnStart::Claimed { context: Some(ctx) }
        );
        for r in [StartReply::Running, StartReply::Conflict] {
            let j = serde_json::to_string(&r).unwrap();
            assert_eq!(serde_json::from_str::<StartReply>(&j).unwrap(), r);
        }
        let bad = StartReply::Claimed {
            context: Some("{not json".into()),
        };
        assert!(matches!(bad.into_turn_start(), Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn error_kinds_map_to_store_errors() {
        let e = |k: &str| {
            ErrorReply {
                kind: k.into(),
                message: "m".into(),
            }
            .into_store_error()
        };
        assert_eq!(e("corrupt"), StoreError::Corrupt("m".into()));
        assert_eq!(e("too_large"), StoreError::TooLarge("m".into()));
        assert_eq!(e("other"), StoreError::Unavailable("m".into()));
    }
}
