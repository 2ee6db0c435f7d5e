//! The end-to-end suite every runway adapter must pass, over real HTTP on loopback.
//!
//! An adapter's test implements [`Target`] (start the real binary under its local runtime,
//! restart it keeping its storage) and calls [`run_suite`]. Targets are started with
//! [`TARGET_ENV`]: two auth headers, a 1-second heartbeat and an 8-second turn deadline, so
//! the slow checks stay short.

pub mod agui;
pub mod approval_checks;
mod checks;
pub mod client;
pub mod client_tool_checks;
pub mod fail_closed;
pub mod generated_crate;
pub mod http_probe;
pub mod iam_policy;
mod local_worker;
mod lowkey;
pub mod mcp_oauth;
pub mod mcp_scenario;
pub mod mcp_servers;
pub mod model_workers;
pub mod oauth_flow;
mod overlap;
pub mod paced_server;
pub mod pilot;
mod process;
pub mod raw_http;
pub mod scripted_mcp;
pub mod scripted_server;
mod stalled_reader;

pub use client::{Client, TurnStream};
pub use local_worker::start_local_worker;
pub use pilot::PILOT_WORKERS;
pub use process::{AgentProcess, free_data_dir, runway_binary, runway_check};

use std::future::Future;

/// Environment every target is started with.
pub const TARGET_ENV: [(&str, &str); 4] = [
    ("RUNWAY_AUTH_HEADERS", "X-API-Key: test-key\nX-Tenant: acme"),
    ("RUNWAY_HEARTBEAT_SECS", "1"),
    ("RUNWAY_TURN_DEADLINE_SECS", "8"),
    ("RUNWAY_AGENT", "demo"),
];

/// The auth header set of [`TARGET_ENV`].
pub fn target_auth() -> Vec<(String, String)> {
    vec![
        ("X-API-Key".into(), "test-key".into()),
        ("X-Tenant".into(), "acme".into()),
    ]
}

/// A running agent under test.
pub trait Target {
    /// Base URL without a trailing slash (`http://127.0.0.1:PORT[/prefix]`).
    fn base_url(&self) -> String;
    /// The auth headers the target requires.
    fn auth_headers(&self) -> Vec<(String, String)>;
    /// Whether the platform tells the agent when the client disconnects.
    fn supports_disconnect(&self) -> bool;
    /// Stops the agent and starts it again with the same storage.
    fn restart(&mut self) -> impl Future<Output = ()>;
    /// How many concurrent turns the pilot's burst sends against a limit of 10 per minute.
    fn burst_turns(&self) -> usize {
        100
    }
    /// How many turns the burst on one thread sends at once (every one must end properly and
    /// the thread keep all their user messages).
    fn thread_burst_turns(&self) -> usize {
        50
    }
}

/// Runs every check against `target`; panics listing each failed check.
pub async fn run_suite<T: Target>(target: &mut T) {
    let mut failures = checks::run_all(target).await;
    failures.extend(lowkey::run_all(target).await);
    failures.extend(pilot::run_all(target).await);
    failures.extend(agui::run_all(target).await);
    assert!(
        failures.is_empty(),
        "{} end-to-end check(s) failed against {}:\n{}",
        failures.len(),
        target.base_url(),
        failures.join("\n")
    );
}
