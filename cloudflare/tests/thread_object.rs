//! The Durable Object's storage logic, natively: one rusqlite database per thread (as one
//! Durable Object per thread), driven through the same JSON calls the Worker sends
//! ([`runway_cloudflare::wire::answer`]), against the store conformance suite.

#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;
use std::sync::Mutex;

use runway_cloudflare::wire::{
    ADD_TALLY_PATH, AddTally, CLAIM_ACTION_PATH, CLAIM_CONNECT_STATE_PATH, CONNECT_STATES_OBJECT,
    ClaimConnectState, DELETE_CONNECTION_PATH, FINISH_PATH, GET_CONNECTION_PATH, LATEST_PATH,
    LIST_CONNECTIONS_PATH, LatestRequest, ListConnections, ListTallies, PUT_CONNECT_STATE_PATH,
    PUT_CONNECTION_PATH, PutConnection, START_PATH, TAKE_TURNS_PATH, TALLIES_PATH,
    TURN_COUNTS_OBJECT, TakeTurns, answer, merge_rows, tally_object, tally_objects, vault_object,
};
use runway_core::adapter::{
    ActionClaim, CommitOutcome, HostedFile, MemoryStore, StoreError, TurnClaim, TurnCommit,
    TurnStart, TurnStore,
};
use runway_core::store::sql_store::SqlStore;
use runway_core::store::tally::{Tally, TallyKey, TurnTake};
use runway_core::store::{
    ConnectStage, ConnectState, ConnectionFilter, ConnectionKey, StoredConnection,
};

/// Thread objects, each a SQLite database; hosted files (KV on Workers) in memory.
#[derive(Default)]
struct NativeThreadObjects {
    objects: Mutex<HashMap<String, SqlStore<rusqlite::Connection>>>,
    files: MemoryStore,
}

impl NativeThreadObjects {
    /// One call to the thread's object, serialized like a Durable Object's input gate.
    fn call(&self, thread_key: &str, path: &str, body: String) -> Result<String, StoreError> {
        let mut objects = self.objects.lock().unwrap();
        let db = objects.entry(thread_key.to_owned()).or_insert_with(|| {
            SqlStore::open(rusqlite::Connection::open_in_memory().unwrap()).unwrap()
        });
        answer(db, path, &body)
            .map(|(json, _alarm)| json)
            .map_err(|e| e.reply().1.into_store_error())
    }
}

impl TurnStore for NativeThreadObjects {
    async fn start_turn(&self, claim: &TurnClaim) -> Result<TurnStart, StoreError> {
        let text = self.call(
            &claim.thread_key,
            START_PATH,
            serde_json::to_string(claim).unwrap(),
        )?;
        Ok(serde_json::from_str(&text).unwrap())
    }

    async fn finish_turn(&self, commit: &TurnCommit) -> Result<CommitOutcome, StoreError> {
        let text = self.call(
            &commit.thread_key,
            FINISH_PATH,
            serde_json::to_string(commit).unwrap(),
        )?;
        Ok(serde_json::from_str(&text).unwrap())
    }

    async fn latest_arrival(&self, thread_key: &str) -> Result<u64, StoreError> {
        let body = serde_json::to_string(&LatestRequest {
            thread_key: thread_key.into(),
        })
        .unwrap();
        Ok(self.call(thread_key, LATEST_PATH, body)?.parse().unwrap())
    }

    async fn claim_action(&self, claim: &ActionClaim) -> Result<bool, StoreError> {
        let text = self.call(
            &claim.thread_key,
            CLAIM_ACTION_PATH,
            serde_json::to_string(claim).unwrap(),
        )?;
        Ok(serde_json::from_str(&text).unwrap())
    }

    async fn put_file(&self, file: &HostedFile) -> Result<(), StoreError> {
        self.files.put_file(file).await
    }

    // Tally rows: one object per part, as the Worker routes them.
    async fn take_turns(
        &self,
        takes: &[TurnTake],
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<bool, StoreError> {
        let body = serde_json::to_string(&TakeTurns {
            takes: takes.to_vec(),
            expires_at_ms,
            write_id: write_id.to_owned(),
        })
        .unwrap();
        let text = self.call(TURN_COUNTS_OBJECT, TAKE_TURNS_PATH, body)?;
        Ok(serde_json::from_str(&text).unwrap())
    }

    async fn add_tally(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<(), StoreError> {
        let body = serde_json::to_string(&AddTally {
            key: key.clone(),
            tally: *tally,
            expires_at_ms,
            write_id: write_id.to_owned(),
        })
        .unwrap();
        self.call(&tally_object(&key.part), ADD_TALLY_PATH, body)
            .map(drop)
    }

    async fn tallies(&self, part: &str, now_ms: u64) -> Result<Vec<(String, Tally)>, StoreError> {
        let body = serde_json::to_string(&ListTallies {
            part: part.to_owned(),
            now_ms,
        })
        .unwrap();
        let mut lists = Vec::new();
        for object in tally_objects(part) {
            let text = self.call(&object, TALLIES_PATH, body.clone())?;
            lists.push(serde_json::from_str(&text).unwrap());
        }
        Ok(merge_rows(lists))
    }

    async fn get_file(&self, token: &str, now_ms: u64) -> Result<Option<HostedFile>, StoreError> {
        self.files.get_file(token, now_ms).await
    }

    // Connected accounts: states in one object, vault entries in their workspace's.
    async fn put_connect_state(&self, state: &ConnectState) -> Result<(), StoreError> {
        let body = serde_json::to_string(state).unwrap();
        self.call(CONNECT_STATES_OBJECT, PUT_CONNECT_STATE_PATH, body)
            .map(drop)
    }

    async fn claim_connect_state(
        &self,
        id: &str,
        now_ms: u64,
    ) -> Result<Option<ConnectState>, StoreError> {
        let body = serde_json::to_string(&ClaimConnectState {
            id: id.to_owned(),
            now_ms,
        })
        .unwrap();
        let text = self.call(CONNECT_STATES_OBJECT, CLAIM_CONNECT_STATE_PATH, body)?;
        Ok(serde_json::from_str(&text).unwrap())
    }

    async fn put_connection(&self, key: &ConnectionKey, sealed: &str) -> Result<(), StoreError> {
        let body = serde_json::to_string(&PutConnection {
            key: key.clone(),
            sealed: sealed.to_owned(),
        })
        .unwrap();
        self.call(&vault_object(&key.workspace), PUT_CONNECTION_PATH, body)
            .map(drop)
    }

    async fn get_connection(&self, key: &ConnectionKey) -> Result<Option<String>, StoreError> {
        let body = serde_json::to_string(key).unwrap();
        let text = self.call(&vault_object(&key.workspace), GET_CONNECTION_PATH, body)?;
        Ok(serde_json::from_str(&text).unwrap())
    }

    /// As the Worker's store: one workspace's object at a time.
    async fn list_connections(
        &self,
        filter: &ConnectionFilter,
        after: Option<&ConnectionKey>,
        limit: usize,
    ) -> Result<Vec<StoredConnection>, StoreError> {
        let Some(workspace) = &filter.workspace else {
            return Err(StoreError::Unavailable("one workspace at a time".into()));
        };
        let body = serde_json::to_string(&ListConnections {
            filter: filter.clone(),
            after: after.cloned(),
            limit,
        })
        .unwrap();
        let text = self.call(&vault_object(workspace), LIST_CONNECTIONS_PATH, body)?;
        Ok(serde_json::from_str(&text).unwrap())
    }

    fn lists_every_workspace(&self) -> bool {
        false
    }

    async fn delete_connection(&self, key: &ConnectionKey) -> Result<bool, StoreError> {
        let body = serde_json::to_string(key).unwrap();
        let text = self.call(&vault_object(&key.workspace), DELETE_CONNECTION_PATH, body)?;
        Ok(serde_json::from_str(&text).unwrap())
    }
}

#[test]
fn the_durable_objects_storage_passes_the_store_conformance_suite() {
    let store = NativeThreadObjects::default();
    futures::executor::block_on(runway_core::store::conformance::run_all(&store, "do"));
}

#[test]
fn the_durable_objects_storage_passes_the_vault_conformance_suite() {
    let store = NativeThreadObjects::default();
    futures::executor::block_on(runway_core::store::conformance::run_vault(&store, "do"));
}

#[test]
fn the_connect_states_alarm_purges_expired_states_and_keeps_live_ones() {
    let db = SqlStore::open(rusqlite::Connection::open_in_memory().unwrap()).unwrap();
    let key = ConnectionKey {
        workspace: "w".into(),
        user: "u".into(),
        provider: "acme".into(),
    };
    let state = |id: &str, expires_at_ms| ConnectState {
        id: id.into(),
        stage: ConnectStage::Link,
        worker: "a".into(),
        thread: "t".into(),
        key: key.clone(),
        verifier: "v".into(),
        redirect_uri: "https://agent.example/callback".into(),
        expires_at_ms,
    };
    let put = |s: &ConnectState| {
        answer(
            &db,
            PUT_CONNECT_STATE_PATH,
            &serde_json::to_string(s).unwrap(),
        )
        .unwrap()
        .1
    };
    assert_eq!(put(&state("early", 1_000)), Some(Some(1_000)));
    assert_eq!(put(&state("late", 5_000)), Some(Some(1_000)));
    // The alarm at the first expiry keeps the later state (not "nothing left").
    assert_eq!(db.purge(1_000).unwrap(), Some(5_000));
    let claim = |id: &str, now_ms| {
        let body = serde_json::to_string(&ClaimConnectState {
            id: id.into(),
            now_ms,
        })
        .unwrap();
        answer(&db, CLAIM_CONNECT_STATE_PATH, &body).unwrap().0
    };
    assert_eq!(claim("early", 0), "null");
    assert!(claim("late", 4_999).contains("\"late\""));
    assert_eq!(db.purge(5_000).unwrap(), None);

    // A vault object never asks for an alarm: its entries do not expire.
    let vault = SqlStore::open(rusqlite::Connection::open_in_memory().unwrap()).unwrap();
    let body = serde_json::to_string(&PutConnection {
        key,
        sealed: "v1.sealed".into(),
    })
    .unwrap();
    assert_eq!(answer(&vault, PUT_CONNECTION_PATH, &body).unwrap().1, None);
}

#[test]
fn alarm_planning_and_purge_empty_an_idle_thread() {
    let db = SqlStore::open(rusqlite::Connection::open_in_memory().unwrap()).unwrap();
    assert_eq!(db.next_expiry().unwrap(), None);
    let claim = runway_core::store::conformance::claim("r", "a/t", "f", 0, "k");
    let (started, alarm) =
        answer(&db, START_PATH, &serde_json::to_string(&claim).unwrap()).unwrap();
    assert_eq!(alarm, Some(Some(1000)));
    let started: TurnStart = serde_json::from_str(&started).unwrap();
    let commit = runway_core::store::conformance::commit(&claim, &started, "q", "a");
    let (_, alarm) = answer(&db, FINISH_PATH, &serde_json::to_string(&commit).unwrap()).unwrap();
    // Context at 10 000, recording at 20 000 (the thread row keeps the lease's 1000 or later).
    assert_eq!(alarm, Some(Some(10_000)));
    assert_eq!(db.purge(9_999).unwrap(), Some(10_000));
    assert_eq!(db.purge(10_000).unwrap(), Some(20_000));
    assert_eq!(db.purge(20_000).unwrap(), None);
    let left = rusqlite::Connection::query_row(
        db.sql(),
        "SELECT (SELECT COUNT(*) FROM turn_runs) + (SELECT COUNT(*) FROM turn_threads)
              + (SELECT COUNT(*) FROM turn_parts)",
        [],
        |r| r.get::<_, i64>(0),
    )
    .unwrap();
    assert_eq!(left, 0);
}

#[test]
fn a_bad_call_is_an_error_reply_not_a_crash() {
    let db = SqlStore::open(rusqlite::Connection::open_in_memory().unwrap()).unwrap();
    let e = answer(&db, START_PATH, "{not json").unwrap_err();
    assert_eq!(e.reply().0, 400);
    assert_eq!(answer(&db, "/nope", "{}").unwrap_err().reply().0, 404);
    // Storage written by the previous release (other tables) is never read.
    db.sql()
        .execute_batch(
            "CREATE TABLE runs (run_key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL,
                 done INTEGER NOT NULL, parts INTEGER NOT NULL, expires_at INTEGER NOT NULL);
             INSERT INTO runs VALUES ('r', 'f', 1, 3, 99999999999999);",
        )
        .unwrap();
    let claim = runway_core::store::conformance::claim("r", "a/t", "f", 0, "k");
    let (reply, _) = answer(&db, START_PATH, &serde_json::to_string(&claim).unwrap()).unwrap();
    assert!(reply.contains("\"claimed\""), "{reply}");
}

#[test]
fn recordings_larger_than_a_row_are_stored_in_parts() {
    use runway_core::store::text_parts::PART_BYTES;
    let db = SqlStore::open(rusqlite::Connection::open_in_memory().unwrap()).unwrap();
    let claim = runway_core::store::conformance::claim("r", "a/t", "f", 0, "k");
    let started = db.start(&claim).unwrap();
    let mut commit = runway_core::store::conformance::commit(&claim, &started, "q", "a");
    commit.recording = "é".repeat(3 * PART_BYTES / 2 + 17).into();
    db.finish(&commit).unwrap();
    let (parts, largest): (i64, i64) = db
        .sql()
        .query_row(
            "SELECT COUNT(*), MAX(length(CAST(data AS BLOB))) FROM turn_parts WHERE owner = 'r/r'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(parts, 4);
    assert!(largest <= PART_BYTES as i64);
    let replay = runway_core::store::conformance::claim("r", "a/t", "f", 1, "k2");
    assert_eq!(
        db.start(&replay).unwrap(),
        TurnStart::Finished {
            recording: commit.recording.to_string()
        }
    );
}
