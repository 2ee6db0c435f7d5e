//! Idle connections cannot lock `runway serve` out: `/health` answers with as many idle
//! connections open as this machine lets one process hold (20,000 where the limit allows),
//! and when there are more than the server has descriptors for. A test binary of its own:
//! it uses nearly every descriptor this process may open.

use std::time::Duration;

use runway_e2e::raw_http::connect;
use runway_e2e::{AgentProcess, Client, TARGET_ENV, free_data_dir, runway_binary, target_auth};
use tokio::net::TcpStream;
use tokio::process::Command;

/// Descriptors this test process keeps for itself (the test harness, reqwest, the child).
const OWN_RESERVE: u64 = 300;

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit; returns the soft limit.
fn raise_own_fd_limit() -> u64 {
    let (_, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).expect("getrlimit");
    rlimit::setrlimit(rlimit::Resource::NOFILE, hard, hard).expect("setrlimit");
    hard
}

async fn serve(fd_limit: Option<u64>) -> (AgentProcess, std::path::PathBuf) {
    let dir = free_data_dir("idle");
    let mut cmd = match fd_limit {
        // prlimit (util-linux) starts the server with a lower descriptor limit.
        Some(n) => {
            let mut c = Command::new("prlimit");
            c.arg(format!("--nofile={n}:{n}"))
                .arg("--")
                .arg(runway_binary());
            c
        }
        None => Command::new(runway_binary()),
    };
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .envs(TARGET_ENV)
        .env("RUNWAY_LOG", "error");
    (AgentProcess::start(cmd, Duration::from_secs(30)).await, dir)
}

/// Opens up to `n` connections that send nothing; stops early if a connect takes over 2 s
/// (a server that stopped accepting leaves SYNs unanswered once its backlog is full).
async fn open_idle(base: &str, n: u64) -> Vec<TcpStream> {
    let mut conns = Vec::with_capacity(n as usize);
    for _ in 0..n {
        match tokio::time::timeout(Duration::from_secs(2), connect(base, None)).await {
            Ok(s) => conns.push(s),
            Err(_) => break,
        }
    }
    eprintln!("{} idle connections open", conns.len());
    conns
}

async fn health_answers(base: &str) -> Result<(), String> {
    let c = Client::new(base, target_auth());
    let t = std::time::Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(5), c.health()).await;
    match r {
        Ok((200, _)) => {
            eprintln!("/health answered in {:?}", t.elapsed());
            Ok(())
        }
        Ok((s, b)) => Err(format!("/health: HTTP {s} {b}")),
        Err(_) => Err("/health did not answer within 5 s".into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_cannot_lock_out_health() {
    let own = raise_own_fd_limit();
    let most = own.saturating_sub(OWN_RESERVE).min(20_000);
    eprintln!("this process may open {own} descriptors: {most} idle connections");

    // More idle connections than a server with 4,096 descriptors can hold.
    let (server, dir) = serve(Some(4096)).await;
    let base = server.base_url().to_owned();
    let conns = open_idle(&base, 6_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let limited = health_answers(&base).await;
    drop(conns);
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);

    // As many as this process may open, against the server's own limit.
    let (server, dir) = serve(None).await;
    let base = server.base_url().to_owned();
    let conns = open_idle(&base, most).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let full = health_answers(&base).await;
    drop(conns);
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);

    assert!(
        limited.is_ok(),
        "6,000 idle connections, server limited to 4,096 descriptors: {limited:?}"
    );
    assert!(full.is_ok(), "{most} idle connections: {full:?}");
}
