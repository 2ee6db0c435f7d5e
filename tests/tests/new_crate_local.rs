//! `runway new` end to end on one box: the generated crate, built against this checkout
//! outside the workspace, serves its agent with `cargo run -- serve`'s binary, passes
//! `runway check --strict` with a two-header auth set, and remembers turns per thread.

use std::time::Duration;

use runway_e2e::generated_crate::{GeneratedCrate, check_turn_memory};
use runway_e2e::{AgentProcess, free_data_dir, runway_check, target_auth};
use tokio::process::Command;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runway_new_crate_serves_and_passes_runway_check() {
    let generated = GeneratedCrate::create("flight-desk");
    // The local binary and the Lambda one: `cargo check --bin bootstrap` is implied.
    generated.cargo(&["build", "--bin", "flight-desk", "--bin", "bootstrap"]);
    // The crate's own tests, as a team's CI runs them.
    generated.cargo(&["test"]);

    let data = free_data_dir("new-local");
    let mut cmd = Command::new(generated.binary("flight-desk"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .env("RUNWAY_AUTH_HEADERS", "X-API-Key: test-key\nX-Tenant: acme")
        .env("RUNWAY_HEARTBEAT_SECS", "1")
        .env("RUNWAY_LOG", "warn");
    let server = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let base = server.base_url().to_owned();

    let memory = check_turn_memory(&base, target_auth()).await;
    let (ok, report) = runway_check(
        &base,
        &[
            "--header",
            "X-API-Key: test-key",
            "--header",
            "X-Tenant: acme",
            "--strict",
        ],
    )
    .await;
    // Without the headers the agent refuses the turn.
    let (refused, _) = runway_check(&base, &["--strict"]).await;
    server.stop().await;
    let _ = std::fs::remove_dir_all(&data);

    println!("{report}");
    memory.expect("the agent counts turns per thread");
    assert!(
        ok,
        "runway check failed against the generated crate:\n{report}"
    );
    assert!(!refused, "runway check passed without the auth headers");
}
