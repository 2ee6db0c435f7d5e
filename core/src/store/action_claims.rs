//! Action claims: the store's put-if-absent, so a one-time action of a thread (running a tool
//! call the user approved) happens at most once, however many turns try it at the same time.
//!
//! Two `approve` resumes sent together on one thread are two turns that load the same stored
//! state, the same pending call in it: whatever the agent decides from that state, both would
//! run the call. The thread's version cannot stop it (both commit, the later one merged), and
//! supersede is noticed only at the next heartbeat, after the side effect. So the agent claims
//! the call first ([`crate::Turn::claim_action`]), and runs it only if the claim is its own:
//! of any number of concurrent claims of one action, exactly one wins, on every backend (a
//! transaction on SQLite and in the Durable Object, a conditional `PutItem` on DynamoDB, one
//! lock in memory), checked by the store conformance suite.
//!
//! A claim lives until `expires_at_ms` (the thread context's lifetime: as long as the state
//! that names the action can come back), then the key is free again.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::store::sql::{DbError, Sql, SqlValue};
use crate::store::sql_store::SqlStore;

/// A claim on one action of a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionClaim {
    /// The thread the action belongs to (a Durable Object store routes the claim by it).
    pub thread_key: String,
    /// The action, named by the agent (unique within the thread).
    pub action: String,
    /// Who claims: the fencing token of the turn's claim (unique per delivery). A second claim
    /// by the same holder wins again; any other holder loses.
    pub holder: String,
    /// Now, in ms since the epoch (a claim expired by then is free).
    pub now_ms: u64,
    /// Until when the claim holds, in ms since the epoch.
    pub expires_at_ms: u64,
}

impl ActionClaim {
    /// A fixed-length key for the action within its thread (hex SHA-256 of both, with a
    /// separator neither contains), for stores whose keys are short.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.thread_key.as_bytes());
        h.update([0]);
        h.update(self.action.as_bytes());
        hex::encode(h.finalize())
    }
}

/// Whether `claim` wins against what the store holds for its action (`None`: nothing, or
/// `(holder, expires_at_ms)`): nothing held, a claim expired at `claim.now_ms`, or the
/// claimant's own claim.
pub fn claim_wins(held: Option<(&str, u64)>, claim: &ActionClaim) -> bool {
    match held {
        None => true,
        Some((holder, expires_at_ms)) => expires_at_ms <= claim.now_ms || holder == claim.holder,
    }
}

impl<S: Sql> SqlStore<S> {
    /// [`crate::adapter::TurnStore::claim_action`]: reads the action's row and, as
    /// [`claim_wins`] says, writes the claim; true if it is the claimant's. Atomic as every
    /// call of this store (one transaction; one input gate in a Durable Object).
    ///
    /// # Errors
    /// SQLite failed or the stored row is corrupt.
    pub fn claim_action(&self, claim: &ActionClaim) -> Result<bool, DbError> {
        let rows = self.sql().exec(
            "SELECT holder, expires_at FROM turn_actions WHERE thread_key = ? AND action = ?",
            &[
                claim.thread_key.as_str().into(),
                claim.action.as_str().into(),
            ],
        )?;
        let held = match rows.into_iter().next() {
            None => None,
            Some(row) => {
                let mut row = row.into_iter();
                let (Some(holder), Some(exp)) = (row.next(), row.next()) else {
                    return Err(DbError::Corrupt("turn_actions row".into()));
                };
                Some((holder.text()?, u64::try_from(exp.int()?).unwrap_or(0)))
            }
        };
        if !claim_wins(held.as_ref().map(|(h, e)| (h.as_str(), *e)), claim) {
            return Ok(false);
        }
        self.sql().exec(
            "INSERT OR REPLACE INTO turn_actions (thread_key, action, holder, expires_at)
             VALUES (?, ?, ?, ?)",
            &[
                claim.thread_key.as_str().into(),
                claim.action.as_str().into(),
                claim.holder.as_str().into(),
                SqlValue::from(claim.expires_at_ms),
            ],
        )?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(holder: &str, now: u64) -> ActionClaim {
        ActionClaim {
            thread_key: "a/t".into(),
            action: "review-1/call_a".into(),
            holder: holder.into(),
            now_ms: now,
            expires_at_ms: now + 100,
        }
    }

    #[test]
    fn the_first_claim_wins_until_it_expires() {
        assert!(claim_wins(None, &claim("x", 0)));
        assert!(!claim_wins(Some(("x", 100)), &claim("y", 50)));
        assert!(claim_wins(Some(("x", 100)), &claim("x", 50)));
        assert!(claim_wins(Some(("x", 100)), &claim("y", 100)));
        assert_ne!(claim("x", 0).digest(), {
            let mut c = claim("x", 0);
            c.action.push('b');
            c.digest()
        });
    }
}
