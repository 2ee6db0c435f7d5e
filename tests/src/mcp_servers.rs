//! The real MCP servers the model agent's end-to-end tests call, installed by
//! `scripts/setup-mcp.sh`: the reference "everything" server (npm, Streamable HTTP mode) and
//! `tests/mcp/orders_server.py` (the official Python SDK), each on a loopback port.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// A running MCP server; killed (its whole process group) when dropped or stopped.
#[derive(Debug)]
pub struct McpServerProcess {
    child: Option<Child>,
    port: u16,
    command: Vec<String>,
    envs: Vec<(String, String)>,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind loopback")
        .port()
}

/// The mcp venv's Python (`scripts/setup-mcp.sh`).
fn venv_python() -> PathBuf {
    let cache = std::env::var_os("RUNWAY_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/runway")
        });
    cache.join("mcp-venv/bin/python")
}

fn installed(path: &Path) -> &Path {
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup-mcp.sh (scripts/test runs it)",
        path.display()
    );
    path
}

impl McpServerProcess {
    /// `@modelcontextprotocol/server-everything` in Streamable HTTP mode (`/mcp`).
    pub async fn everything() -> Self {
        let script = repo()
            .join("tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        let port = free_port();
        let command = vec![
            "node".to_owned(),
            installed(&script).display().to_string(),
            "streamableHttp".to_owned(),
        ];
        Self::start(command, vec![("PORT".into(), port.to_string())], port).await
    }

    /// `tests/mcp/protected_server.py`: every request needs a bearer token the OAuth server at
    /// `oauth` honours (checked at its userinfo endpoint); each token checked is written to
    /// `log` as its subject (or `refused`); subjects listed in `deny` are refused.
    pub async fn protected(oauth: &str, log: &Path, deny: &Path) -> Self {
        let port = free_port();
        let command = vec![
            installed(&venv_python()).display().to_string(),
            repo()
                .join("tests/mcp/protected_server.py")
                .display()
                .to_string(),
            port.to_string(),
            oauth.to_owned(),
            "--log".to_owned(),
            log.display().to_string(),
            "--deny".to_owned(),
            deny.display().to_string(),
        ];
        Self::start(command, Vec::new(), port).await
    }

    /// `tests/mcp/oauth_server.py`: an MCP server with its own authorization (RFC 9728
    /// metadata naming the OAuth server at `oauth`, a 401 challenge), taking only tokens the
    /// OAuth server's introspection (as `mcp-resource-server` with `secret`) says are for it;
    /// each token checked is written to `log` as "SUBJECT AUDIENCE" (or "refused AUDIENCE").
    pub async fn oauth(oauth: &str, secret: &str, log: &Path) -> Self {
        let port = free_port();
        let command = vec![
            installed(&venv_python()).display().to_string(),
            repo()
                .join("tests/mcp/oauth_server.py")
                .display()
                .to_string(),
            port.to_string(),
            oauth.to_owned(),
            "--secret".to_owned(),
            secret.to_owned(),
            "--log".to_owned(),
            log.display().to_string(),
        ];
        Self::start(command, Vec::new(), port).await
    }

    /// `tests/mcp/orders_server.py`, answering with JSON bodies if `json`, writing the calls
    /// it saw cancelled to `cancel_log`.
    pub async fn orders(json: bool, cancel_log: &Path) -> Self {
        let python = venv_python();
        let port = free_port();
        let mut command = vec![
            installed(&python).display().to_string(),
            repo()
                .join("tests/mcp/orders_server.py")
                .display()
                .to_string(),
            port.to_string(),
            "--cancel-log".to_owned(),
            cancel_log.display().to_string(),
        ];
        if json {
            command.push("--json".into());
        }
        Self::start(command, Vec::new(), port).await
    }

    async fn start(command: Vec<String>, envs: Vec<(String, String)>, port: u16) -> Self {
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..])
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let child = cmd.spawn().expect("MCP server starts");
        let started = tokio::time::Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "MCP server {command:?} did not listen on port {port} within 60 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Self {
            child: Some(child),
            port,
            command,
            envs,
        }
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Stops it and starts it again on the same port: it forgets every session.
    pub async fn restart(&mut self) {
        self.kill().await;
        let again = Self::start(self.command.clone(), self.envs.clone(), self.port).await;
        *self = again;
    }

    async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            #[cfg(unix)]
            if let Some(pid) = child.id() {
                let _ = std::process::Command::new("bash")
                    .args(["-c", &format!("kill -KILL -- -{pid}")])
                    .status();
            }
            let _ = child.kill().await;
            let _ = child.wait().await;
        }
    }

    /// Stops it.
    pub async fn stop(mut self) {
        self.kill().await;
    }
}
