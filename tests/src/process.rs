//! Starting and stopping an agent process that prints `base_url: …` when ready.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A child process serving an agent.
#[derive(Debug)]
pub struct AgentProcess {
    child: Child,
    base_url: String,
}

impl AgentProcess {
    /// Starts `command`, waits (up to `ready_within`) for a stdout line `base_url: URL`, and
    /// keeps draining its output afterwards. The child is killed if this value is dropped.
    ///
    /// # Panics
    /// If the process does not start or never prints its base URL.
    pub async fn start(mut command: Command, ready_within: Duration) -> Self {
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .stdin(Stdio::null())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().expect("agent process starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        let base_url = tokio::time::timeout(ready_within, async {
            while let Some(line) = lines.next_line().await.expect("stdout readable") {
                eprintln!("[agent] {line}");
                if let Some(url) = line.trim().strip_prefix("base_url:") {
                    return url.trim().trim_end_matches('/').to_owned();
                }
            }
            panic!("agent process exited without printing base_url");
        })
        .await
        .expect("agent process printed base_url in time");
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("[agent] {line}");
            }
        });
        Self { child, base_url }
    }

    /// The printed base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Kills the process group with SIGKILL (a crash, a power cut, the OOM killer): nothing
    /// gets to clean up.
    pub async fn kill_hard(mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("bash")
                .args(["-c", &format!("kill -KILL -- -{pid}")])
                .status();
        }
        let _ = self.child.kill().await;
        let _ = self.child.wait().await;
    }

    /// Stops the process group with SIGTERM, then SIGKILL after 10 s.
    pub async fn stop(mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.child.id() {
            // bash's builtin kill: this machine's /usr/bin/kill (procps-ng 4.0.2) turns
            // `-TERM -12345` into kill(-1234, …), signalling some other process group.
            let _ = std::process::Command::new("bash")
                .args(["-c", &format!("kill -TERM -- -{pid}")])
                .status();
        }
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// A fresh, empty directory under the system temp dir.
pub fn free_data_dir(label: &str) -> PathBuf {
    let mut raw = [0u8; 8];
    getrandom::fill(&mut raw).expect("entropy");
    let name: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let dir = std::env::temp_dir().join(format!("runway-e2e-{label}-{name}"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The `runway` binary built by `cargo build -p runway` (in `$CARGO_TARGET_DIR` if set).
///
/// # Panics
/// If it has not been built.
pub fn runway_binary() -> PathBuf {
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

/// Runs the real `runway check BASE_URL ARGS…`: whether it passed, and its report.
pub async fn runway_check(base_url: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(runway_binary())
        .arg("check")
        .arg(base_url)
        .args(args)
        .output()
        .await
        .expect("runway check runs");
    let report =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), report)
}
