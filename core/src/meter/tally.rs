//! Counters kept in the store: [`Tally`] rows addressed by a [`TallyKey`], and [`TallyStore`],
//! what the meter needs of a store to keep them (every `TurnStore` is one).
//!
//! Two kinds of rows use them (see [`crate::meter`]):
//! - a limit's counters: `meter/{scope}` × `m/{minute}` (turns), `d/{day}` (tokens, spend),
//!   `mo/{month}` (spend), where a scope is a workspace, a worker, or one worker in one
//!   workspace;
//! - the usage report: `usage/{day}` × `{workspace}/{worker}`, every field.
//!
//! A backend supplies three atomic primitives ([`crate::adapter::TurnStore::take_turns`],
//! [`crate::adapter::TurnStore::add_tally`], [`crate::adapter::TurnStore::tallies`]); what they
//! mean is decided here and in [`crate::meter`], and checked by the conformance suite. A row's
//! key names its window, so a row is never reused once its window has passed: its expiry only
//! says when it may be deleted (and an expired row reads as absent).
//!
//! ## Each write counts once
//! Every write names itself with a write id: one per delivery of a turn (random, made when the
//! turn starts), so all of a turn's writes to one row share it. A row remembers the write ids
//! it counts for as long as it lives, and a write it already counts changes nothing. Without
//! this a store call that was applied but answered too late — an AWS SDK retry after an
//! attempt timeout, a 500 after the write — would count a turn twice: a pilot's usage and
//! spend over-stated, its limits refusing turns they should admit. Measured before the ids:
//! 100 turns against a slow DynamoDB recorded 194.

use std::future::Future;

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::platform::maybe_send::{MaybeSend, MaybeSync};

/// Where a tally row lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TallyKey {
    /// Rows read together: one scope's limit counters, or one day's usage. On Cloudflare it
    /// names the Durable Object holding them; on DynamoDB it is the partition key.
    pub part: String,
    /// The row within the part.
    pub item: String,
}

impl TallyKey {
    /// The row `item` of `part`.
    pub fn new(part: impl Into<String>, item: impl Into<String>) -> Self {
        Self {
            part: part.into(),
            item: item.into(),
        }
    }
}

/// One turns-per-minute counter a turn is counted in, with its limit (see
/// [`crate::adapter::TurnStore::take_turns`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnTake {
    /// The counter's row.
    pub key: TallyKey,
    /// The most turns the row may count.
    pub limit: u64,
}

/// Counts of turns and what they used. Every field only ever grows (by
/// [`crate::adapter::TurnStore::take_turns`] and [`crate::adapter::TurnStore::add_tally`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    /// Turns.
    pub turns: u64,
    /// Turns that answered (`RUN_FINISHED` success).
    pub succeeded: u64,
    /// Turns that ended with a question (`RUN_FINISHED` interrupt).
    pub interrupted: u64,
    /// Turns refused by a turns-per-minute limit (`RATE_LIMITED`).
    pub rate_limited: u64,
    /// Turns refused or stopped by a token or spend limit (`QUOTA_EXCEEDED`).
    pub quota_exceeded: u64,
    /// Turns that ended with any other `RUN_ERROR`.
    pub failed: u64,
    /// Calls to a model.
    pub model_calls: u64,
    /// Prompt tokens the model endpoints reported.
    pub input_tokens: u64,
    /// Completion tokens the model endpoints reported (reasoning included).
    pub output_tokens: u64,
    /// The completion tokens spent on reasoning.
    pub reasoning_tokens: u64,
    /// Tool calls run.
    pub tool_calls: u64,
    /// Tool calls that failed.
    pub tool_failures: u64,
    /// Bytes of user attachments taken in.
    pub attachment_bytes: u64,
    /// Estimated cost, in millionths of a US dollar.
    pub cost_micro_usd: u64,
    /// Sum over the turns of the time to the agent's first frame, in ms.
    pub first_frame_ms: u64,
    /// Sum over the turns of their duration, in ms.
    pub duration_ms: u64,
    /// The part of `input_tokens` and `output_tokens` runway estimated (about 4 bytes a token
    /// of the prompt sent and the answer received) because the endpoint reported none: a call
    /// cut before its `usage` chunk (the user stopped the turn, the stream broke).
    pub estimated_tokens: u64,
}

impl Tally {
    /// The field names, in [`Tally::values`] order: the column names of the SQL table and the
    /// attribute names on DynamoDB.
    pub const FIELDS: [&'static str; 17] = [
        "turns",
        "succeeded",
        "interrupted",
        "rate_limited",
        "quota_exceeded",
        "failed",
        "model_calls",
        "input_tokens",
        "output_tokens",
        "reasoning_tokens",
        "tool_calls",
        "tool_failures",
        "attachment_bytes",
        "cost_micro_usd",
        "first_frame_ms",
        "duration_ms",
        "estimated_tokens",
    ];

    /// The values, in [`Tally::FIELDS`] order.
    pub fn values(&self) -> [u64; 17] {
        [
            self.turns,
            self.succeeded,
            self.interrupted,
            self.rate_limited,
            self.quota_exceeded,
            self.failed,
            self.model_calls,
            self.input_tokens,
            self.output_tokens,
            self.reasoning_tokens,
            self.tool_calls,
            self.tool_failures,
            self.attachment_bytes,
            self.cost_micro_usd,
            self.first_frame_ms,
            self.duration_ms,
            self.estimated_tokens,
        ]
    }

    /// A tally from values in [`Tally::FIELDS`] order.
    pub fn from_values(v: [u64; 17]) -> Self {
        Self {
            turns: v[0],
            succeeded: v[1],
            interrupted: v[2],
            rate_limited: v[3],
            quota_exceeded: v[4],
            failed: v[5],
            model_calls: v[6],
            input_tokens: v[7],
            output_tokens: v[8],
            reasoning_tokens: v[9],
            tool_calls: v[10],
            tool_failures: v[11],
            attachment_bytes: v[12],
            cost_micro_usd: v[13],
            first_frame_ms: v[14],
            duration_ms: v[15],
            estimated_tokens: v[16],
        }
    }

    /// Adds `other` field by field (saturating).
    pub fn add(&mut self, other: &Tally) {
        let mut v = self.values();
        for (a, b) in v.iter_mut().zip(other.values()) {
            *a = a.saturating_add(b);
        }
        *self = Self::from_values(v);
    }

    /// True if every field is zero.
    pub fn is_zero(&self) -> bool {
        self.values().iter().all(|v| *v == 0)
    }

    /// Model tokens, input and output.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// The store's three tally primitives, as the meter uses them (admission, the usage report,
/// the usage written after a turn). Every [`crate::adapter::TurnStore`] is one: the store
/// implements this for it, so the meter, a layer below the store, names no store type.
pub trait TallyStore: MaybeSend + MaybeSync {
    /// [`crate::adapter::TurnStore::take_turns`].
    fn take_turns(
        &self,
        takes: &[TurnTake],
        expires_at_ms: u64,
        write_id: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + MaybeSend;

    /// [`crate::adapter::TurnStore::add_tally`].
    fn add_tally(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
        write_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + MaybeSend;

    /// [`crate::adapter::TurnStore::tallies`].
    fn tallies(
        &self,
        part: &str,
        now_ms: u64,
    ) -> impl Future<Output = Result<Vec<(String, Tally)>, StoreError>> + MaybeSend;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_add() {
        let mut a = Tally {
            turns: 1,
            cost_micro_usd: 7,
            duration_ms: 9,
            ..Tally::default()
        };
        assert_eq!(Tally::from_values(a.values()), a);
        a.add(&a.clone());
        assert_eq!((a.turns, a.cost_micro_usd, a.duration_ms), (2, 14, 18));
        assert!(!a.is_zero() && Tally::default().is_zero());
    }
}
