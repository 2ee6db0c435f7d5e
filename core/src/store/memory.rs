//! An in-process [`TurnStore`], for tests, examples and single-process experiments. Nothing
//! survives a restart. Its decisions are [`crate::store::turn_state`]'s; one lock makes each call
//! atomic.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::agent::context::ThreadContext;
use crate::error::StoreError;
use crate::meter::tally::{Tally, TallyKey, TurnTake};
use crate::store::action_claims::{ActionClaim, claim_wins};
use crate::store::turn_state::{
    ClaimDecision, OwnerDecision, RunPhase, RunRecord, ThreadHead, decide_claim, decide_commit,
    decide_owner, holds_claim, thread_after,
};
use crate::store::{
    CommitOutcome, ConnectState, ConnectionFilter, ConnectionKey, HostedFile, StoredConnection,
    TurnClaim, TurnCommit, TurnStart, TurnStore,
};
use crate::wire::recording::Recording;

#[derive(Debug, Clone)]
struct Run {
    fingerprint: String,
    phase: RunPhase,
    until_ms: u64,
    token: String,
    recording: Recording,
}

impl Run {
    fn record(&self) -> RunRecord<'_> {
        RunRecord {
            fingerprint: &self.fingerprint,
            phase: self.phase,
            until_ms: self.until_ms,
            token: &self.token,
        }
    }
}

#[derive(Debug, Default)]
struct Thread {
    head: ThreadHead,
    /// The context and when it expires.
    context: Option<(ThreadContext, u64)>,
    /// The workspace that owns the thread (empty: nobody yet) and until when: the later of
    /// the context's expiry and the last claim's lease.
    owner: String,
    owner_until_ms: u64,
}

#[derive(Debug, Default)]
struct Tables {
    runs: HashMap<String, Run>,
    threads: HashMap<String, Thread>,
    files: HashMap<String, HostedFile>,
    /// Action claims by (thread, action): holder and expiry.
    actions: HashMap<(String, String), (String, u64)>,
    /// Sealed vault entries.
    connections: HashMap<ConnectionKey, String>,
    /// States of connections being made, by id.
    connect_states: HashMap<String, ConnectState>,
    /// Tally rows.
    tallies: std::collections::BTreeMap<TallyKey, TallyRow>,
}

/// A tally row, the writes it counts and when it expires.
#[derive(Debug, Default)]
struct TallyRow {
    tally: Tally,
    writes: std::collections::HashSet<String>,
    expires_at_ms: u64,
}

/// A [`TurnStore`] in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    tables: Mutex<Tables>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The thread stored under `thread_key`, unless absent or expired at `now_ms`: what a
    /// test asserts on after a turn.
    pub fn thread(&self, thread_key: &str, now_ms: u64) -> Option<ThreadContext> {
        self.lock()
            .threads
            .get(thread_key)
            .and_then(|t| t.context.as_ref())
            .filter(|(_, exp)| *exp > now_ms)
            .map(|(c, _)| c.clone())
    }

    /// Stores `context` as thread `thread_key` until `expires_at_ms`, as if a turn had
    /// committed it: a test's thread history before its turn.
    pub fn put_thread(&self, thread_key: &str, context: ThreadContext, expires_at_ms: u64) {
        let mut t = self.lock();
        let thread = t.threads.entry(thread_key.to_owned()).or_default();
        thread.context = Some((context, expires_at_ms));
        thread.head.version += 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tables> {
        // A panic while holding the lock cannot leave the maps half-updated (each update is
        // one insert), so a poisoned lock is safe to keep using.
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl TurnStore for MemoryStore {
    async fn start_turn(&self, claim: &TurnClaim) -> Result<TurnStart, StoreError> {
        let mut t = self.lock();
        let existing = t.runs.get(&claim.run_key);
        match decide_claim(existing.map(Run::record), claim) {
            ClaimDecision::Replay => {
                return Ok(TurnStart::Finished {
                    recording: existing
                        .map(|r| r.recording.to_string())
                        .unwrap_or_default(),
                });
            }
            ClaimDecision::Wait => return Ok(TurnStart::Running),
            ClaimDecision::Conflict => return Ok(TurnStart::Conflict),
            ClaimDecision::Take => {}
        }
        let owner = t
            .threads
            .get(&claim.thread_key)
            .filter(|th| th.owner_until_ms > claim.now_ms)
            .map(|th| th.owner.as_str());
        if decide_owner(owner, &claim.workspace) == OwnerDecision::Refuse {
            return Ok(TurnStart::OtherWorkspace);
        }
        t.runs.insert(
            claim.run_key.clone(),
            Run {
                fingerprint: claim.fingerprint.clone(),
                phase: RunPhase::Running,
                until_ms: claim.lease_until_ms,
                token: claim.token.clone(),
                recording: Recording::default(),
            },
        );
        let thread = t.threads.entry(claim.thread_key.clone()).or_default();
        thread.head.latest_arrival += 1;
        thread.owner.clone_from(&claim.workspace);
        thread.owner_until_ms = thread.owner_until_ms.max(claim.lease_until_ms);
        let context = thread
            .context
            .as_ref()
            .filter(|(_, exp)| *exp > claim.now_ms)
            .map(|(c, _)| c.clone());
        Ok(TurnStart::Claimed {
            context,
            version: thread.head.version,
            arrival: thread.head.latest_arrival,
        })
    }

    async fn finish_turn(&self, commit: &TurnCommit) -> Result<CommitOutcome, StoreError> {
        let mut t = self.lock();
        if !holds_claim(t.runs.get(&commit.run_key).map(Run::record), &commit.token) {
            return Ok(CommitOutcome::ClaimLost);
        }
        let thread = t.threads.entry(commit.thread_key.clone()).or_default();
        let decision = decide_commit(thread.head, commit);
        // Expiry is exact: an expired context merges as absent.
        let stored = thread
            .context
            .take()
            .filter(|(_, exp)| *exp > commit.now_ms)
            .map(|(c, _)| c);
        let context = thread_after(decision, stored, commit);
        thread.context = Some((context, commit.context_expires_at_ms));
        thread.head.version += 1;
        thread.owner_until_ms = thread.owner_until_ms.max(commit.context_expires_at_ms);
        t.runs.insert(
            commit.run_key.clone(),
            Run {
                fingerprint: commit.fingerprint.clone(),
                phase: RunPhase::Done,
                until_ms: commit.recording_expires_at_ms,
                token: commit.token.clone(),
                recording: commit.recording.clone(),
            },
        );
        Ok(decision.outcome())
    }

    async fn latest_arrival(&self, thread_key: &str) -> Result<u64, StoreError> {
        Ok(self
            .lock()
            .threads
            .get(thread_key)
            .map_or(0, |t| t.head.latest_arrival))
    }

    async fn put_connect_state(&self, state: &ConnectState) -> Result<(), StoreError> {
        self.lock()
            .connect_states
            .insert(state.id.clone(), state.clone());
        Ok(())
    }

    async fn claim_connect_state(
        &self,
        id: &str,
        now_ms: u64,
    ) -> Result<Option<ConnectState>, StoreError> {
        Ok(self
            .lock()
            .connect_states
            .remove(id)
            .filter(|s| s.expires_at_ms > now_ms))
    }

    async fn put_connection(&self, key: &ConnectionKey, sealed: &str) -> Result<(), StoreError> {
        self.lock()
            .connections
            .insert(key.clone(), sealed.to_owned());
        Ok(())
    }

    async fn get_connection(&self, key: &ConnectionKey) -> Result<Option<String>, StoreError> {
        Ok(self.lock().connections.get(key).cloned())
    }

    async fn list_connections(
        &self,
        filter: &ConnectionFilter,
        after: Option<&ConnectionKey>,
        limit: usize,
    ) -> Result<Vec<StoredConnection>, StoreError> {
        let t = self.lock();
        let mut found: Vec<StoredConnection> = t
            .connections
            .iter()
            .filter(|(k, _)| filter.matches(k) && after.is_none_or(|a| *k > a))
            .map(|(k, sealed)| StoredConnection {
                key: k.clone(),
                sealed: sealed.clone(),
            })
            .collect();
        found.sort_by(|a, b| a.key.cmp(&b.key));
        found.truncate(limit);
        Ok(found)
    }

    async fn delete_connection(&self, key: &ConnectionKey) -> Result<bool, StoreError> {
        Ok(self.lock().connections.remove(key).is_some())
    }

    async fn claim_action(&self, claim: &ActionClaim) -> Result<bool, StoreError> {
        let mut t = self.lock();
        let key = (claim.thread_key.clone(), claim.action.clone());
        let held = t.actions.get(&key).map(|(h, e)| (h.as_str(), *e));
        if !claim_wins(held, claim) {
            return Ok(false);
        }
        t.actions
            .insert(key, (claim.holder.clone(), claim.expires_at_ms));
        Ok(true)
    }

    async fn put_file(&self, file: &HostedFile) -> Result<(), StoreError> {
        self.lock().files.insert(file.token.clone(), file.clone());
        Ok(())
    }

    async fn get_file(&self, token: &str, now_ms: u64) -> Result<Option<HostedFile>, StoreError> {
        Ok(self
            .lock()
            .files
            .get(token)
            .filter(|f| f.expires_at_ms > now_ms)
            .cloned())
    }

    async fn take_turns(
        &self,
        takes: &[TurnTake],
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<bool, StoreError> {
        let mut t = self.lock();
        let counts = |t: &Tables, take: &TurnTake| {
            t.tallies
                .get(&take.key)
                .is_some_and(|row| row.writes.contains(write_id))
        };
        // All or nothing: a write is counted in every row or in none.
        if takes.first().is_some_and(|take| counts(&t, take)) {
            return Ok(true);
        }
        let full = |take: &TurnTake| {
            t.tallies
                .get(&take.key)
                .is_some_and(|row| row.tally.turns >= take.limit)
        };
        if takes.iter().any(full) {
            return Ok(false);
        }
        for take in takes {
            let row = t.tallies.entry(take.key.clone()).or_default();
            row.tally.turns += 1;
            row.writes.insert(write_id.to_owned());
            row.expires_at_ms = row.expires_at_ms.max(expires_at_ms);
        }
        Ok(true)
    }

    async fn add_tally(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<(), StoreError> {
        let mut t = self.lock();
        let row = t.tallies.entry(key.clone()).or_default();
        if row.writes.insert(write_id.to_owned()) {
            row.tally.add(tally);
        }
        row.expires_at_ms = row.expires_at_ms.max(expires_at_ms);
        Ok(())
    }

    async fn tallies(&self, part: &str, now_ms: u64) -> Result<Vec<(String, Tally)>, StoreError> {
        Ok(self
            .lock()
            .tallies
            .iter()
            .filter(|(k, row)| k.part == part && row.expires_at_ms > now_ms)
            .map(|(k, row)| (k.item.clone(), row.tally))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passes_the_store_conformance_suite() {
        let store = super::MemoryStore::new();
        futures::executor::block_on(crate::store::conformance::run_all(&store, "memory"));
        futures::executor::block_on(crate::store::conformance::run_vault(&store, "memory"));
    }
}
