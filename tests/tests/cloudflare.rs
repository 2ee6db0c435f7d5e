//! The end-to-end suite against runway's Cloudflare Worker under `wrangler dev` (local workerd
//! with local Durable Objects and KV), started by `infra/cloudflare/local`.
//!
//! Ignored by a plain `cargo test`: it needs Node 22, wrangler and the worker-build toolchain.
//! `scripts/test-cloudflare.sh` builds the Worker and runs it with `--ignored`
//! (`RUNWAY_CF_PREBUILT=1` then makes every start reuse that build). Without that variable the
//! first start builds the Worker itself, installing the tools on first use.
//!
//! After the suite, the real `runway check` (build it first: `cargo build -p runway`) runs
//! against the same Worker.

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::time::Duration;

use futures::FutureExt;

use runway_e2e::{AgentProcess, TARGET_ENV, Target, free_data_dir, run_suite, target_auth};
use tokio::process::Command;

struct Wrangler {
    persist: PathBuf,
    port: u16,
    built: bool,
    process: Option<AgentProcess>,
    base_url: String,
}

fn local_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/cloudflare/local")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

impl Wrangler {
    async fn start(persist: PathBuf) -> Self {
        let mut w = Self {
            persist,
            port: free_port(),
            built: std::env::var("RUNWAY_CF_PREBUILT").as_deref() == Ok("1"),
            process: None,
            base_url: String::new(),
        };
        w.spawn().await;
        w
    }

    /// Starts `infra/cloudflare/local` on the same port and persistence directory.
    async fn spawn(&mut self) {
        let mut cmd = Command::new(local_script());
        cmd.arg("--port")
            .arg(self.port.to_string())
            .arg("--persist-to")
            .arg(&self.persist)
            .envs(TARGET_ENV)
            .env("RUNWAY_WORKERS", runway_e2e::PILOT_WORKERS)
            .env("RUNWAY_LOG", "warn")
            .env("RUNWAY_CF_WRANGLER_LOG", "warn");
        // The first start may have to install the tools and build the Worker.
        let ready_within = if self.built {
            cmd.arg("--no-build");
            Duration::from_secs(180)
        } else {
            Duration::from_secs(3600)
        };
        let p = AgentProcess::start(cmd, ready_within).await;
        self.built = true;
        self.base_url = p.base_url().to_owned();
        self.process = Some(p);
    }
}

impl Target for Wrangler {
    fn base_url(&self) -> String {
        self.base_url.clone()
    }

    fn auth_headers(&self) -> Vec<(String, String)> {
        target_auth()
    }

    fn supports_disconnect(&self) -> bool {
        true
    }

    async fn restart(&mut self) {
        if let Some(p) = self.process.take() {
            p.stop().await;
        }
        self.spawn().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs wrangler and the Workers toolchain: run scripts/test-cloudflare.sh"]
async fn cloudflare_worker_passes_the_suite() {
    let dir = free_data_dir("cloudflare");
    let mut worker = Wrangler::start(dir.clone()).await;
    // Stop wrangler even when a check fails, then report the failure.
    let suite = AssertUnwindSafe(run_suite(&mut worker))
        .catch_unwind()
        .await;
    if let Err(failure) = suite {
        if let Some(p) = worker.process.take() {
            p.stop().await;
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::panic::resume_unwind(failure);
    }
    let (passed, report) = runway_e2e::runway_check(
        &worker.base_url(),
        &[
            "--header",
            "X-API-Key: test-key",
            "--header",
            "X-Tenant: acme",
            "--slow-prompt",
            "/slow 3",
            "--strict",
            "--agent-id",
            runway_e2e::client::AGENT_ID,
        ],
    )
    .await;
    if let Some(p) = worker.process.take() {
        p.stop().await;
    }
    let _ = std::fs::remove_dir_all(dir);
    println!("{report}");
    assert!(passed, "runway check failed against the Worker:\n{report}");
}

/// With an unusable auth header set the Worker answers 500 `agent misconfigured` and logs
/// the reason naming the setting; `infra/cloudflare/local` reports it and stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs wrangler and the Workers toolchain: run scripts/test-cloudflare.sh"]
async fn worker_refuses_unusable_auth_settings() {
    let prebuilt = std::env::var("RUNWAY_CF_PREBUILT").as_deref() == Ok("1");
    for (label, value) in [
        ("empty", ""),
        ("blank", " \n "),
        ("no colon", "X-API-Key k"),
    ] {
        let mut cmd = Command::new(local_script());
        cmd.arg("--port")
            .arg(free_port().to_string())
            .envs(TARGET_ENV)
            .env("RUNWAY_AUTH_HEADERS", value)
            .env("RUNWAY_LOG", "warn")
            .env("RUNWAY_CF_WRANGLER_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        if prebuilt {
            cmd.arg("--no-build");
        }
        #[cfg(unix)]
        cmd.process_group(0);
        let out = tokio::time::timeout(Duration::from_secs(1800), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("{label}: infra/cloudflare/local still running"))
            .expect("infra/cloudflare/local runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{label}: it served:\n{stdout}\n{stderr}"
        );
        assert!(
            !stdout.contains("base_url"),
            "{label}: it served:\n{stdout}"
        );
        assert!(
            stderr.contains("HTTP 500") && stderr.contains("misconfigured"),
            "{label}: /health did not answer 500 misconfigured:\n{stderr}"
        );
        assert!(
            stderr.contains("RUNWAY_AUTH_HEADERS"),
            "{label}: the Worker's log does not name the setting:\n{stderr}"
        );
    }
}
