//! The SQL store's schema (SQLite on `runway serve`, a Durable Object's SQL on Workers): every
//! table in one place, created by the adapter before the store is used. The statements that
//! read and write them live with their concept (`sql_store.rs`, `action_claims.rs`,
//! `sql_tally.rs`).

/// The schema, one statement each.
pub const SCHEMA: [&str; 8] = [
    "CREATE TABLE IF NOT EXISTS turn_runs (
        run_key     TEXT PRIMARY KEY,
        fingerprint TEXT NOT NULL,
        done        INTEGER NOT NULL,
        token       TEXT NOT NULL,
        parts       INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL
    )",
    // `expires_at` is the row's lifetime (the context's expiry, or a running claim's lease if
    // later); `context_expires_at` is the context's own, exact on read. `workspace` owns the
    // thread until `expires_at` ('' : nobody, as in rows written before owners existed).
    "CREATE TABLE IF NOT EXISTS turn_threads (
        thread_key         TEXT PRIMARY KEY,
        version            INTEGER NOT NULL,
        arrivals           INTEGER NOT NULL,
        parts              INTEGER NOT NULL,
        context_expires_at INTEGER NOT NULL,
        expires_at         INTEGER NOT NULL,
        workspace          TEXT NOT NULL DEFAULT ''
    )",
    "CREATE TABLE IF NOT EXISTS turn_parts (
        owner TEXT NOT NULL,
        seq   INTEGER NOT NULL,
        data  TEXT NOT NULL,
        PRIMARY KEY (owner, seq)
    )",
    ACTIONS_TABLE,
    TALLY_TABLE,
    TALLY_WRITES_TABLE,
    CONNECTIONS_TABLE,
    CONNECT_STATES_TABLE,
];

/// Columns added to a table after it first shipped, as (table, column, definition): a
/// database from before gets each one, with its default, when the store opens it (the
/// `CREATE TABLE` statements above already hold them for a new database).
pub const ADDED_COLUMNS: [(&str, &str, &str); 2] = [
    (
        "turn_tallies",
        "estimated_tokens",
        "INTEGER NOT NULL DEFAULT 0",
    ),
    ("turn_threads", "workspace", "TEXT NOT NULL DEFAULT ''"),
];

/// The SQLite table of action claims (used by [`crate::store::action_claims`]).
const ACTIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS turn_actions (
        thread_key TEXT NOT NULL,
        action     TEXT NOT NULL,
        holder     TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (thread_key, action)
    )";

/// The tally table (used by `sql_tally.rs`): one row per key, a column per [`Tally::FIELDS`] entry.
const TALLY_TABLE: &str = "CREATE TABLE IF NOT EXISTS turn_tallies (
        part             TEXT NOT NULL,
        item             TEXT NOT NULL,
        turns            INTEGER NOT NULL DEFAULT 0,
        succeeded        INTEGER NOT NULL DEFAULT 0,
        interrupted      INTEGER NOT NULL DEFAULT 0,
        rate_limited     INTEGER NOT NULL DEFAULT 0,
        quota_exceeded   INTEGER NOT NULL DEFAULT 0,
        failed           INTEGER NOT NULL DEFAULT 0,
        model_calls      INTEGER NOT NULL DEFAULT 0,
        input_tokens     INTEGER NOT NULL DEFAULT 0,
        output_tokens    INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        tool_calls       INTEGER NOT NULL DEFAULT 0,
        tool_failures    INTEGER NOT NULL DEFAULT 0,
        attachment_bytes INTEGER NOT NULL DEFAULT 0,
        cost_micro_usd   INTEGER NOT NULL DEFAULT 0,
        first_frame_ms   INTEGER NOT NULL DEFAULT 0,
        duration_ms      INTEGER NOT NULL DEFAULT 0,
        estimated_tokens INTEGER NOT NULL DEFAULT 0,
        expires_at       INTEGER NOT NULL,
        PRIMARY KEY (part, item)
    )";

/// The write ids each tally row counts (used by `sql_tally.rs`: a write counts once), kept
/// until the write's expiry, which is never after its row's.
const TALLY_WRITES_TABLE: &str = "CREATE TABLE IF NOT EXISTS turn_tally_writes (
        part       TEXT NOT NULL,
        item       TEXT NOT NULL,
        write_id   TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (part, item, write_id)
    )";

/// The vault (used by `connections.rs`): one sealed entry per (workspace, user, provider),
/// encrypted before it reaches the store. Kept until replaced: a connection does not expire
/// with a thread.
const CONNECTIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS turn_connections (
        workspace TEXT NOT NULL,
        user_id   TEXT NOT NULL,
        provider  TEXT NOT NULL,
        sealed    TEXT NOT NULL,
        PRIMARY KEY (workspace, user_id, provider)
    )";

/// OAuth states of connections being made (used by `connections.rs`): claimed once, exact
/// expiry on read.
const CONNECT_STATES_TABLE: &str = "CREATE TABLE IF NOT EXISTS turn_connect_states (
        id         TEXT PRIMARY KEY,
        data       TEXT NOT NULL,
        expires_at INTEGER NOT NULL
    )";
