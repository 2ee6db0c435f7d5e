//! `runway new` end to end on AWS Lambda: the generated crate's `bootstrap` (outside the
//! workspace, built against this checkout) runs under cargo-lambda's emulator with moto's
//! DynamoDB (`infra/aws/local --crate DIR`), passes `runway check --strict` with a two-header
//! auth set, and remembers turns per thread.
//!
//! Ignored by a plain `cargo test`: it needs Python, moto and cargo-lambda, which
//! `scripts/test-aws.sh` installs before running it with `--ignored`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use runway_e2e::generated_crate::{
    GeneratedCrate, cargo_test_env, check_turn_memory, workspace_target_dir,
};
use runway_e2e::{AgentProcess, runway_check, target_auth};
use tokio::process::Command;

fn local_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/aws/local")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto and cargo-lambda: run scripts/test-aws.sh"]
async fn runway_new_crate_passes_runway_check_under_cargo_lambda() {
    let generated = GeneratedCrate::create("flight-desk-lambda");
    // Build first: cargo-lambda's emulator wedges when polled while the function still builds.
    generated.cargo(&["build", "--bin", "bootstrap"]);

    let started = Instant::now();
    let mut cmd = Command::new(local_script());
    for name in cargo_test_env() {
        cmd.env_remove(name);
    }
    // Six emulator instances, as the repo's own Lambda suite uses: cargo-lambda's emulator
    // keeps an instance busy after its client hangs up (runway check's Test turn does, as
    // Console's does), which real Lambda does not.
    cmd.arg("--crate")
        .arg(generated.path())
        .args(["--concurrency", "6"])
        .env("CARGO_TARGET_DIR", workspace_target_dir())
        .env("RUNWAY_AUTH_HEADERS", "X-API-Key: test-key\nX-Tenant: acme")
        .env("RUNWAY_HEARTBEAT_SECS", "1")
        .env("RUNWAY_LOG", "warn");
    let function = AgentProcess::start(cmd, Duration::from_secs(900)).await;
    eprintln!(
        "[generated crate] moto and cargo lambda watch ready: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let base = function.base_url().to_owned();

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
    function.stop().await;

    println!("{report}");
    memory.expect("the agent counts turns per thread");
    assert!(
        ok,
        "runway check failed against the generated bootstrap:\n{report}"
    );
}
