//! `runway new` end to end on Cloudflare Workers: the generated crate (outside the workspace,
//! built against this checkout) passes `cargo check --target wasm32-unknown-unknown --lib`, is
//! built by worker-build with the `RunwayThread` Durable Object class exported from
//! runway-cloudflare into its Worker, and under `wrangler dev` passes `runway check --strict`
//! with a two-header auth set and remembers turns per thread.
//!
//! Ignored by a plain `cargo test`: it needs the Workers toolchain that
//! `scripts/test-cloudflare.sh` installs and runs it with `--ignored`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use runway_e2e::generated_crate::{
    GeneratedCrate, cargo_test_env, check_turn_memory, workspace_target_dir,
};
use runway_e2e::{AgentProcess, runway_check, target_auth};
use tokio::process::Command;

fn local_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/cloudflare/local")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs wrangler and the Workers toolchain: run scripts/test-cloudflare.sh"]
async fn runway_new_crate_passes_runway_check_under_wrangler_dev() {
    let generated = GeneratedCrate::create("flight-desk-worker");
    // Its own target directory: built in the shared one right after the repo's own Worker,
    // rustc found two different runway_core rlibs for wasm32 (the path crates compiled as
    // workspace members and as this crate's dependencies share file names), and failed.
    let target = workspace_target_dir().join("runway-new-worker");
    generated.cargo_in(
        &target,
        &["check", "--target", "wasm32-unknown-unknown", "--lib"],
    );

    // infra/cloudflare/local builds the crate with worker-build, then wrangler dev runs the
    // crate's own [build] command too (a quick no-op rebuild) before serving.
    let started = Instant::now();
    let mut cmd = Command::new(local_script());
    for name in cargo_test_env() {
        cmd.env_remove(name);
    }
    cmd.arg("--crate")
        .arg(generated.path())
        .env("CARGO_TARGET_DIR", &target)
        .env("RUNWAY_AUTH_HEADERS", "X-API-Key: test-key\nX-Tenant: acme")
        .env("RUNWAY_HEARTBEAT_SECS", "1")
        .env("RUNWAY_LOG", "warn")
        .env("RUNWAY_CF_WRANGLER_LOG", "warn")
        .env("RUNWAY_CF_START_TIMEOUT", "1500");
    let worker = AgentProcess::start(cmd, Duration::from_secs(1800)).await;
    eprintln!(
        "[generated crate] worker-build and wrangler dev ready: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let base = worker.base_url().to_owned();

    // The Durable Object class lives in runway-cloudflare, a dependency: wasm-bindgen must
    // still export it from the user's Worker, or wrangler could not bind RUNWAY_THREADS.
    let glue = std::fs::read_to_string(generated.path().join("build/index.js"))
        .expect("worker-build wrote build/index.js");
    let exported = glue.contains(" as RunwayThread") || glue.contains("class RunwayThread");

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
    worker.stop().await;

    // The crate's wrangler.toml deploys as written: an offline `wrangler deploy --dry-run`
    // (which runs its [build] command again) accepts it, the KV binding without an id included.
    let out = generated.path().join("dry-run");
    let mut dry_run = Command::new("bash");
    for name in cargo_test_env() {
        dry_run.env_remove(name);
    }
    let dry_run = dry_run
        .arg("-c")
        .arg(
            r#". "$1/infra/cloudflare/tools.sh" && cf_ensure_npm && cf_env && cd "$2" && node "$CF_WRANGLER" deploy --dry-run --outdir "$3" 2>&1"#,
        )
        .arg("dry-run")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
        .arg(generated.path())
        .arg(&out)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .await
        .expect("bash runs");
    let dry_run_log = String::from_utf8_lossy(&dry_run.stdout).into_owned();

    println!("{report}");
    println!("{dry_run_log}");
    assert!(
        dry_run.status.success() && dry_run_log.contains("Total Upload"),
        "wrangler deploy --dry-run refused the generated crate's wrangler.toml"
    );
    assert!(exported, "build/index.js does not export RunwayThread");
    memory.expect("the agent counts turns per thread");
    assert!(
        ok,
        "runway check failed against the generated Worker:\n{report}"
    );
}
