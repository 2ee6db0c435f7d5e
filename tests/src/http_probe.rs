//! Checks for an agent's HTTP client through the built-in `http-probe` agent, run against
//! every adapter: a [`PacedServer`] sends the probed body piece by piece.

use std::time::{Duration, Instant};

use futures::StreamExt;

use crate::client::{fresh_id, run_body};
use crate::paced_server::{PacedEvent, PacedServer};
use crate::target_auth;

/// A turn's SSE body as it arrives.
struct Sse {
    body: futures::stream::BoxStream<'static, reqwest::Result<String>>,
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
            body: resp
                .bytes_stream()
                .map(|r| r.map(|b| String::from_utf8_lossy(&b).into_owned()))
                .boxed(),
            seen: String::new(),
        }
    }

    async fn until(&mut self, needle: &str, within: Duration) -> bool {
        let until = Instant::now() + within;
        while !self.seen.contains(needle) {
            let left = until.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.body.next()).await {
                Ok(Some(Ok(chunk))) => self.seen.push_str(&chunk),
                _ => return false,
            }
        }
        true
    }
}

/// Pieces the server sends, one per release.
pub fn probe_pieces() -> Vec<String> {
    ["alpha-piece", "beta-piece", "gamma-piece"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Runs the checks against an agent at `base_url` serving `RUNWAY_AGENT=http-probe` with
/// `RUNWAY_HTTP_PROBE_URL={server.base_url}/probe`, where `server` sends [`probe_pieces`]:
/// 1. the body is relayed piece by piece (each piece reaches the SSE stream before the server
///    sends the next);
/// 2. with `hang_up`, the user hanging up aborts the agent's request (the server sees the
///    close). Lambda keeps running a streamed invocation after the client leaves, so its test
///    skips this.
pub async fn check_http_probe(base_url: &str, server: &mut PacedServer, hang_up: bool) {
    let pieces = probe_pieces();
    // 1. The body is relayed piece by piece.
    let mut sse = Sse::post(base_url).await;
    match server.next_event(Duration::from_secs(20)).await {
        Some(PacedEvent::Request(head)) => assert!(head.starts_with("GET /probe "), "{head}"),
        other => panic!("the agent's request did not reach the loopback server: {other:?}"),
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
            "piece {i} did not come out of the agent before the next was sent: {}",
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

    if !hang_up {
        return;
    }
    // 2. The user hanging up aborts the agent's request.
    let mut sse = Sse::post(base_url).await;
    loop {
        match server.next_event(Duration::from_secs(20)).await {
            Some(PacedEvent::Request(_)) => break,
            Some(_) => continue, // what is left of the first request
            None => panic!("the second request did not reach the server"),
        }
    }
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
        "the agent did not abort its request after the hang-up"
    );
    println!("request aborted {:?} after the hang-up", hung_up.elapsed());
}
