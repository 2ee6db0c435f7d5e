//! The agents' HTTP client on Workers (`fetch`), under `wrangler dev`: the built-in
//! `http-probe` agent fetches a loopback server fixed by configuration
//! (`RUNWAY_HTTP_PROBE_URL`) and relays the body. Each piece is only sent once the previous one
//! has come out of the Worker's SSE stream, so the test fails unless the Worker reads the body
//! incrementally; and when the user hangs up, the Worker aborts its fetch.
//!
//! Ignored by a plain `cargo test`: run by `scripts/test-cloudflare.sh` (see `cloudflare.rs`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::StreamExt;
use runway_e2e::client::{fresh_id, run_body};
use runway_e2e::paced_server::{PacedEvent, PacedServer};
use runway_e2e::{AgentProcess, TARGET_ENV, target_auth};
use tokio::process::Command;

async fn start_worker(probe_url: &str) -> AgentProcess {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/cloudflare/local");
    let mut cmd = Command::new(script);
    cmd.envs(TARGET_ENV)
        .env("RUNWAY_AGENT", "http-probe")
        .env("RUNWAY_HTTP_PROBE_URL", probe_url)
        .env("RUNWAY_LOG", "warn")
        .env("RUNWAY_CF_WRANGLER_LOG", "warn");
    let prebuilt = std::env::var("RUNWAY_CF_PREBUILT").as_deref() == Ok("1");
    if prebuilt {
        cmd.arg("--no-build");
    }
    let within = Duration::from_secs(if prebuilt { 180 } else { 3600 });
    AgentProcess::start(cmd, within).await
}

/// A turn's SSE body as it arrives.
struct Sse {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    seen: String,
}

impl Sse {
    async fn post(base: &str) -> Self {
        let mut req = reqwest::Client::new()
            .post(format!("{base}/runs"))
            .json(&run_body(&fresh_id(), &fresh_id(), "probe"));
        for (k, v) in target_auth() {
            req = req.header(k, v);
        }
        let resp = req.send().await.expect("POST /runs");
        assert_eq!(resp.status(), 200);
        Self {
            body: resp.bytes_stream().boxed(),
            seen: String::new(),
        }
    }

    async fn until(&mut self, needle: &str, within: Duration) -> bool {
        let until = Instant::now() + within;
        while !self.seen.contains(needle) {
            let left = until.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.body.next()).await {
                Ok(Some(Ok(chunk))) => self.seen.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return false,
            }
        }
        true
    }
}

async fn checks(worker: &AgentProcess, server: &mut PacedServer, pieces: &[String]) {
    // 1. The body is relayed piece by piece.
    let mut sse = Sse::post(worker.base_url()).await;
    match server.next_event(Duration::from_secs(20)).await {
        Some(PacedEvent::Request(head)) => assert!(head.starts_with("GET /probe "), "{head}"),
        other => panic!("the Worker's fetch did not reach the loopback server: {other:?}"),
    }
    for (i, piece) in pieces.iter().enumerate() {
        server.release();
        assert_eq!(
            server.next_event(Duration::from_secs(5)).await,
            Some(PacedEvent::Sent(i))
        );
        let started = Instant::now();
        assert!(
            sse.until(piece, Duration::from_secs(10)).await,
            "piece {i} did not come out of the Worker before the next was sent: {}",
            sse.seen
        );
        println!(
            "piece {i} relayed {:?} after it was sent",
            started.elapsed()
        );
    }
    assert!(
        sse.until("RUN_FINISHED", Duration::from_secs(10)).await,
        "{}",
        sse.seen
    );
    assert!(!sse.seen.contains("RUN_ERROR"), "{}", sse.seen);

    // 2. The user hanging up aborts the Worker's fetch.
    let mut sse = Sse::post(worker.base_url()).await;
    assert!(
        matches!(
            server.next_event(Duration::from_secs(20)).await,
            Some(PacedEvent::Request(_))
        ),
        "second fetch"
    );
    server.release();
    assert!(
        sse.until(&pieces[0], Duration::from_secs(10)).await,
        "{}",
        sse.seen
    );
    let hung_up = Instant::now();
    drop(sse);
    let closed = server.closed_within(Duration::from_secs(10)).await;
    assert_eq!(
        closed,
        Some(1),
        "the Worker did not abort its fetch after the hang-up"
    );
    println!("fetch aborted {:?} after the hang-up", hung_up.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs wrangler and the Workers toolchain: run scripts/test-cloudflare.sh"]
async fn the_worker_streams_a_fetched_body_and_aborts_it_on_hang_up() {
    let pieces: Vec<String> = ["alpha-piece", "beta-piece", "gamma-piece"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut server = PacedServer::start(pieces.clone()).await;
    let worker = start_worker(&format!("{}/probe", server.base_url)).await;
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(checks(
        &worker,
        &mut server,
        &pieces,
    )))
    .await;
    worker.stop().await;
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}
