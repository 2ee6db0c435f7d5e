//! What a protocol's route hands the engine to run a turn.

use crate::agent::Turn;
use crate::protocol::Message;
use crate::turn::resume_link::ResumeLink;

/// Everything protocol-specific the engine needs to run a turn.
pub(crate) struct TurnPlan {
    pub turn: Turn,
    pub run_key: String,
    pub thread_key: String,
    pub fingerprint: String,
    /// The workspace the turn comes from, in its storage form (bounded): a new thread becomes
    /// its, and a thread another workspace owns refuses the turn
    /// ([`crate::store::TurnClaim::workspace`]).
    pub workspace: String,
    /// Messages to seed a thread the store does not know (Console `history` on a fork,
    /// Lowkey `transcriptWindow`).
    pub seed: Vec<Message>,
    /// This turn's input as it enters the transcript.
    pub user_message: String,
    /// AG-UI's interrupt rules, checked on the thread before anything runs; `None` on
    /// protocols that leave an open question to the agent.
    pub resume_link: Option<ResumeLink>,
}
