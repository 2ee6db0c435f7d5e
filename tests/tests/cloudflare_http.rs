//! The agents' HTTP client on Workers (`fetch`), under `wrangler dev`: the built-in
//! `http-probe` agent fetches a loopback server fixed by configuration
//! (`RUNWAY_HTTP_PROBE_URL`) and relays the body. Each piece is only sent once the previous one
//! has come out of the Worker's SSE stream, so the test fails unless the Worker reads the body
//! incrementally; and when the user hangs up, the Worker aborts its fetch.
//!
//! Ignored by a plain `cargo test`: run by `scripts/test-cloudflare.sh` (see `cloudflare.rs`).

use runway_e2e::http_probe::{check_http_probe, probe_pieces};
use runway_e2e::paced_server::PacedServer;
use runway_e2e::{AgentProcess, start_local_worker};

async fn start_worker(probe_url: &str) -> AgentProcess {
    start_local_worker([
        ("RUNWAY_AGENT", "http-probe"),
        ("RUNWAY_HTTP_PROBE_URL", probe_url),
    ])
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs wrangler and the Workers toolchain: run scripts/test-cloudflare.sh"]
async fn the_worker_streams_a_fetched_body_and_aborts_it_on_hang_up() {
    let mut server = PacedServer::start(probe_pieces()).await;
    let worker = start_worker(&format!("{}/probe", server.base_url)).await;
    let checks = check_http_probe(worker.base_url(), &mut server, true);
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(checks)).await;
    worker.stop().await;
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}
