//! The agents' HTTP client on `runway serve` (reqwest): the built-in `http-probe` agent relays
//! a loopback server's body piece by piece and aborts its request when the user hangs up.
//! Build the server first: `cargo build -p runway`.

use std::time::Duration;

use runway_e2e::http_probe::{check_http_probe, probe_pieces};
use runway_e2e::paced_server::PacedServer;
use runway_e2e::{AgentProcess, TARGET_ENV, free_data_dir, runway_binary};
use tokio::process::Command;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runway_serve_streams_a_fetched_body_and_aborts_it_on_hang_up() {
    let mut server = PacedServer::start(probe_pieces()).await;
    let dir = free_data_dir("serve-http");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .envs(TARGET_ENV)
        .env("RUNWAY_AGENT", "http-probe")
        .env(
            "RUNWAY_HTTP_PROBE_URL",
            format!("{}/probe", server.base_url),
        )
        .env("RUNWAY_LOG", "warn");
    let agent = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let checks = check_http_probe(agent.base_url(), &mut server, true);
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(checks)).await;
    agent.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}
