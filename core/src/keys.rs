//! Every key the core stores under, built in one place and documented here. A key is a
//! storage format: stored threads, runs, counters and usage rows are found again by these
//! exact strings, so no format may change (each is pinned by a test below).
//!
//! | what | key | built by |
//! |---|---|---|
//! | an id inside a key | the id, or `~` and its SHA-256 in hex | [`storage_id`] |
//! | Console thread | `{agentId}/{threadId}` | [`thread_key`] |
//! | Lowkey thread | `lowkey/{storage_id(agentId)}/{storage_id(sessionHandle.id)}` | [`lowkey_thread_key`] |
//! | AG-UI thread | `agui/{storage_id(agentId)}/{storage_id(threadId)}` | [`agui_thread_key`] |
//! | Console run | `console/{runId}` | [`console_run_key`] |
//! | Lowkey run | `lowkey/{storage_id(sessionHandle.id)}/{storage_id(turnId)}` | [`lowkey_run_key`] |
//! | AG-UI run | `agui/{storage_id(agentId)}/{storage_id(runId)}` | [`agui_run_key`] |
//! | a turn's workspace | `{storage_id(workspaceId)}` | [`workspace_key`] |
//! | limit scopes | `workspace/{s}`, `worker/{w}`, `workspace/{s}/worker/{w}` (`s`, `w`: storage ids) | [`workspace_scope`], [`worker_scope`], [`pair_scope`] |
//! | a scope's counters (part) | `meter/{scope}` | [`meter_part`] |
//! | a counter of a window (item) | `m/{minutes since the epoch}`, `d/{YYYY-MM-DD}`, `mo/{YYYY-MM}` (UTC) | [`minute_item`], [`day_item`], [`month_item`] |
//! | a day's usage rows (part) | `usage/{YYYY-MM-DD}` | [`usage_part`] |
//! | one usage row (item) | `{storage_id(workspace)}/{storage_id(worker)}` | [`usage_item`] |
//!
//! The namespaces keep the protocols apart: a Console thread key has one `/` (its ids cannot
//! contain one), a Lowkey or AG-UI key has two and starts with its protocol, so no input of
//! one protocol can name another's thread.

use sha2::{Digest, Sha256};
use time::Date;

/// Longest id used verbatim in a storage key; longer ids are hashed (see [`storage_id`]).
const MAX_VERBATIM_ID: usize = 128;

/// The form of an id used inside storage keys: the id itself when it is short and made of
/// `A-Z a-z 0-9 . _ : - @ + =`, otherwise `~` and the SHA-256 of the id in hex. Ids are never
/// refused for their alphabet or length (Lowkey and AG-UI do not restrict them), and two
/// different ids never share a key (a verbatim id never starts with `~`).
pub fn storage_id(id: &str) -> String {
    let verbatim = !id.is_empty()
        && id.len() <= MAX_VERBATIM_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".:_-@+=".contains(&b));
    if verbatim {
        id.to_owned()
    } else {
        format!("~{}", hex::encode(Sha256::digest(id.as_bytes())))
    }
}

/// The store key of a conversation: the Digital Worker and the thread, so one `base_url`
/// serving several Digital Workers never mixes their threads. Ids cannot contain `/`.
pub fn thread_key(agent_id: &str, thread_id: &str) -> String {
    format!("{agent_id}/{thread_id}")
}

/// The thread of a Lowkey session of `agent_id`.
#[cfg_attr(not(feature = "lowkey"), allow(dead_code))]
pub(crate) fn lowkey_thread_key(agent_id: &str, session_id: &str) -> String {
    format!(
        "lowkey/{}",
        thread_key(&storage_id(agent_id), &storage_id(session_id))
    )
}

/// The thread `thread_id` of `agent_id` over AG-UI.
#[cfg_attr(not(feature = "agui"), allow(dead_code))]
pub(crate) fn agui_thread_key(agent_id: &str, thread_id: &str) -> String {
    format!("agui/{}/{}", storage_id(agent_id), storage_id(thread_id))
}

/// The Console run `run_id` (a ULID: used as it is).
pub(crate) fn console_run_key(run_id: &str) -> String {
    format!("console/{run_id}")
}

/// The turn `turn_id` of the Lowkey session `session_id`.
#[cfg_attr(not(feature = "lowkey"), allow(dead_code))]
pub(crate) fn lowkey_run_key(session_id: &str, turn_id: &str) -> String {
    format!("lowkey/{}/{}", storage_id(session_id), storage_id(turn_id))
}

/// The run `run_id` of `agent_id` over AG-UI.
#[cfg_attr(not(feature = "agui"), allow(dead_code))]
pub(crate) fn agui_run_key(agent_id: &str, run_id: &str) -> String {
    format!("agui/{}/{}", storage_id(agent_id), storage_id(run_id))
}

/// The workspace a turn's limits and usage are counted under.
pub(crate) fn workspace_key(workspace_id: &str) -> String {
    storage_id(workspace_id)
}

/// The limit scope of the workspace `workspace_id`.
pub(crate) fn workspace_scope(workspace_id: &str) -> String {
    format!("workspace/{}", storage_id(workspace_id))
}

/// The limit scope of the Digital Worker `agent_id`.
pub(crate) fn worker_scope(agent_id: &str) -> String {
    format!("worker/{}", storage_id(agent_id))
}

/// The limit scope of the Digital Worker `agent_id` in the workspace `workspace_id`.
pub(crate) fn pair_scope(workspace_id: &str, agent_id: &str) -> String {
    format!(
        "workspace/{}/worker/{}",
        storage_id(workspace_id),
        storage_id(agent_id)
    )
}

/// The part holding `scope`'s counters.
pub(crate) fn meter_part(scope: &str) -> String {
    format!("meter/{scope}")
}

/// The item of the turns-per-minute counter of `minute` (minutes since the epoch).
pub(crate) fn minute_item(minute: u64) -> String {
    format!("m/{minute}")
}

/// The item of the day's counter of `day` (UTC): `d/2026-12-01`.
pub(crate) fn day_item(day: Date) -> String {
    format!("d/{day}")
}

/// The item of the month's counter of the month `day` falls in (UTC): `mo/2026-12`.
pub(crate) fn month_item(day: Date) -> String {
    format!("mo/{:04}-{:02}", day.year(), u8::from(day.month()))
}

/// The part holding the usage rows of the day `day` (`YYYY-MM-DD`).
pub fn usage_part(day: &str) -> String {
    format!("usage/{day}")
}

/// The usage row's item: `{workspace}/{worker}` (ids in their storage form, which never
/// contains `/`).
pub fn usage_item(workspace: &str, worker: &str) -> String {
    format!("{}/{}", storage_id(workspace), storage_id(worker))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `~` and the SHA-256 of `id` in hex, spelled out here so the test does not share code
    /// with what it checks.
    const HASHED_A_SLASH_B: &str =
        "~c14cddc033f64b9dea80ea675cf280a015e672516090a5626781153dc68fea11";

    #[test]
    fn ids_are_kept_when_safe_and_hashed_otherwise() {
        assert_eq!(
            storage_id("sess-1:agent@x+y=z.w_v"),
            "sess-1:agent@x+y=z.w_v"
        );
        assert_eq!(storage_id("a/b"), HASHED_A_SLASH_B);
        assert_eq!(
            storage_id(""),
            format!("~{}", hex::encode(Sha256::digest(b"")))
        );
        let long = "a".repeat(MAX_VERBATIM_ID);
        assert_eq!(storage_id(&long), long);
        assert!(storage_id(&"a".repeat(MAX_VERBATIM_ID + 1)).starts_with('~'));
    }

    #[test]
    fn thread_keys_keep_their_formats() {
        assert_eq!(thread_key("918", "t1"), "918/t1");
        assert_eq!(lowkey_thread_key("agent", "sess"), "lowkey/agent/sess");
        assert_eq!(
            lowkey_thread_key("a/b", "sess"),
            format!("lowkey/{HASHED_A_SLASH_B}/sess")
        );
        assert_eq!(agui_thread_key("agent", "t1"), "agui/agent/t1");
        assert_eq!(
            agui_thread_key("agent", "a/b"),
            format!("agui/agent/{HASHED_A_SLASH_B}")
        );
    }

    #[test]
    fn branch_is_a_different_key() {
        assert_ne!(thread_key("a", "918"), thread_key("a", "918:1"));
        assert_ne!(thread_key("a", "918"), thread_key("b", "918"));
    }

    #[test]
    fn run_keys_keep_their_formats() {
        assert_eq!(
            console_run_key("01K5BH5PSX926W6RZ6YR1P8WWV"),
            "console/01K5BH5PSX926W6RZ6YR1P8WWV"
        );
        assert_eq!(lowkey_run_key("sess", "turn-1"), "lowkey/sess/turn-1");
        assert_eq!(
            lowkey_run_key("sess", "a/b"),
            format!("lowkey/sess/{HASHED_A_SLASH_B}")
        );
        assert_eq!(agui_run_key("agent", "r1"), "agui/agent/r1");
        assert_eq!(
            agui_run_key("a/b", "r1"),
            format!("agui/{HASHED_A_SLASH_B}/r1")
        );
    }

    #[test]
    fn meter_and_usage_keys_keep_their_formats() {
        assert_eq!(workspace_key("ws1"), "ws1");
        assert_eq!(workspace_key("a/b"), HASHED_A_SLASH_B);
        assert_eq!(workspace_scope("ws1"), "workspace/ws1");
        assert_eq!(worker_scope("918"), "worker/918");
        assert_eq!(pair_scope("ws1", "918"), "workspace/ws1/worker/918");
        assert_eq!(
            pair_scope("a/b", "918"),
            format!("workspace/{HASHED_A_SLASH_B}/worker/918")
        );
        assert_eq!(meter_part("worker/918"), "meter/worker/918");
        let day = Date::from_calendar_date(2026, time::Month::March, 7).expect("a date");
        assert_eq!(minute_item(29_452_800), "m/29452800");
        assert_eq!(day_item(day), "d/2026-03-07");
        assert_eq!(month_item(day), "mo/2026-03");
        assert_eq!(usage_part("2026-12-01"), "usage/2026-12-01");
        assert_eq!(usage_item("ws1", "918"), "ws1/918");
        assert_eq!(usage_item("a/b", "918"), format!("{HASHED_A_SLASH_B}/918"));
    }
}
