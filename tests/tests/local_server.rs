//! The end-to-end suite against `runway serve` (axum + SQLite), and `runway check` against it.

use std::path::PathBuf;
use std::time::Duration;

use runway_e2e::{
    AgentProcess, TARGET_ENV, Target, free_data_dir, run_suite, runway_binary, target_auth,
};
use tokio::process::Command;

struct LocalServer {
    data_dir: PathBuf,
    process: Option<AgentProcess>,
    base_url: String,
}

impl LocalServer {
    async fn start(data_dir: PathBuf) -> Self {
        let mut s = Self {
            data_dir,
            process: None,
            base_url: String::new(),
        };
        s.spawn().await;
        s
    }

    async fn spawn(&mut self) {
        let mut cmd = Command::new(runway_binary());
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&self.data_dir)
            .envs(TARGET_ENV)
            .env("RUNWAY_LOG", "warn");
        let p = AgentProcess::start(cmd, Duration::from_secs(30)).await;
        self.base_url = p.base_url().to_owned();
        self.process = Some(p);
    }
}

impl Target for LocalServer {
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
async fn local_server_passes_the_suite() {
    let dir = free_data_dir("local");
    let mut server = LocalServer::start(dir.clone()).await;
    run_suite(&mut server).await;
    if let Some(p) = server.process.take() {
        p.stop().await;
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs the real `runway check` binary against a real `runway serve`.
async fn check_against_serve(env: &[(&str, &str)], extra: &[&str]) -> (bool, String) {
    let dir = free_data_dir("check");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .envs(env.iter().copied())
        .env("RUNWAY_LOG", "warn");
    let server = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let result = runway_e2e::runway_check(server.base_url(), extra).await;
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runway_check_passes_with_a_two_header_auth_set() {
    let (ok, report) = check_against_serve(
        &[
            ("RUNWAY_AUTH_HEADERS", "X-API-Key: test-key\nX-Tenant: acme"),
            ("RUNWAY_HEARTBEAT_SECS", "1"),
        ],
        &[
            "--header",
            "X-API-Key: test-key",
            "--header",
            "X-Tenant: acme",
            "--slow-prompt",
            "/slow 3",
            "--strict",
        ],
    )
    .await;
    println!("{report}");
    assert!(ok, "runway check failed:\n{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runway_check_passes_without_auth() {
    let (ok, report) = check_against_serve(&[("RUNWAY_HEARTBEAT_SECS", "1")], &["--strict"]).await;
    println!("{report}");
    assert!(ok, "runway check failed:\n{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runway_check_catches_a_missing_header() {
    // The server requires two headers; the checker is told only one of them, so the
    // endpoints answer 401 and the check must fail.
    let (ok, report) = check_against_serve(
        &[("RUNWAY_AUTH_HEADERS", "X-API-Key: test-key\nX-Tenant: acme")],
        &["--header", "X-API-Key: test-key"],
    )
    .await;
    assert!(
        !ok,
        "runway check passed with one header missing:\n{report}"
    );
}
