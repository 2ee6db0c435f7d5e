//! The end-to-end suite against `runway serve` (axum + SQLite), and `runway check` against it.

use std::path::PathBuf;
use std::time::Duration;

use runway_e2e::{AgentProcess, TARGET_ENV, Target, free_data_dir, run_suite, target_auth};
use tokio::process::Command;

struct LocalServer {
    data_dir: PathBuf,
    process: Option<AgentProcess>,
    base_url: String,
}

fn runway_binary() -> PathBuf {
    // The e2e crate does not build the binary itself: tests run after `cargo build -p runway`.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let bin = target.join("debug/runway");
    assert!(
        bin.exists(),
        "build the server first: cargo build -p runway ({})",
        bin.display()
    );
    bin
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
