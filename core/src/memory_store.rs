//! An in-process [`TurnStore`], for tests, examples and single-process experiments. Nothing
//! survives a restart.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::context::ThreadContext;
use crate::error::StoreError;
use crate::store::{HostedFile, TurnClaim, TurnCommit, TurnStart, TurnStore};

#[derive(Debug, Clone)]
enum Run {
    Claimed {
        fingerprint: String,
        lease_until_ms: u64,
    },
    Done {
        fingerprint: String,
        recording: String,
        expires_at_ms: u64,
    },
}

#[derive(Debug, Default)]
struct Tables {
    runs: HashMap<String, Run>,
    threads: HashMap<String, (ThreadContext, u64)>,
    files: HashMap<String, HostedFile>,
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

    fn lock(&self) -> std::sync::MutexGuard<'_, Tables> {
        // A panic while holding the lock cannot leave the maps half-updated (each update is
        // one insert), so a poisoned lock is safe to keep using.
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl TurnStore for MemoryStore {
    async fn start_turn(&self, claim: &TurnClaim) -> Result<TurnStart, StoreError> {
        let mut t = self.lock();
        match t.runs.get(&claim.run_key) {
            Some(Run::Done {
                fingerprint,
                recording,
                expires_at_ms,
            }) if *expires_at_ms > claim.now_ms => {
                return Ok(if *fingerprint == claim.fingerprint {
                    TurnStart::Finished {
                        recording: recording.clone(),
                    }
                } else {
                    TurnStart::Conflict
                });
            }
            Some(Run::Claimed {
                fingerprint,
                lease_until_ms,
            }) if *lease_until_ms > claim.now_ms => {
                return Ok(if *fingerprint == claim.fingerprint {
                    TurnStart::Running
                } else {
                    TurnStart::Conflict
                });
            }
            _ => {}
        }
        t.runs.insert(
            claim.run_key.clone(),
            Run::Claimed {
                fingerprint: claim.fingerprint.clone(),
                lease_until_ms: claim.lease_until_ms,
            },
        );
        let context = t
            .threads
            .get(&claim.thread_key)
            .filter(|(_, exp)| *exp > claim.now_ms)
            .map(|(c, _)| c.clone());
        Ok(TurnStart::Claimed { context })
    }

    async fn finish_turn(&self, commit: &TurnCommit) -> Result<(), StoreError> {
        let mut t = self.lock();
        t.threads.insert(
            commit.thread_key.clone(),
            (commit.context.clone(), commit.context_expires_at_ms),
        );
        t.runs.insert(
            commit.run_key.clone(),
            Run::Done {
                fingerprint: commit.fingerprint.clone(),
                recording: commit.recording.clone(),
                expires_at_ms: commit.recording_expires_at_ms,
            },
        );
        Ok(())
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
}
