//! The engine driven through `Runway::handle` on the testing kit's virtual clock, with a store
//! that fails on demand.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use runway_core::adapter::{Config, Reply};
use runway_core::protocol::HealthStatus;
use runway_core::testing::{Frames, StoreCall, TestRunway, TestTurn, VirtualRuntime};
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};

/// Sleeps `secs` (from the input) on the virtual clock, then answers; counts runs and notices
/// being dropped.
#[derive(Clone)]
struct Sleeper {
    rt: VirtualRuntime,
    runs: Arc<AtomicUsize>,
    dropped: Arc<AtomicBool>,
}

struct DropFlag(Arc<AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Agent for Sleeper {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let _flag = DropFlag(Arc::clone(&self.dropped));
        if turn.input == "panic" {
            panic!("boom");
        }
        let secs: u64 = turn.input.parse().unwrap_or(0);
        self.rt.sleep(Duration::from_secs(secs)).await;
        out.text(format!("slept {secs}"));
        // Reached only when not dropped.
        std::mem::forget(_flag);
        Ok(Outcome::Done)
    }
}

type App = TestRunway<Sleeper>;

/// The app and its agent, on one clock.
fn app_with(config: Config) -> (App, Sleeper) {
    let rt = VirtualRuntime::new();
    let agent = Sleeper {
        rt: rt.clone(),
        runs: Arc::default(),
        dropped: Arc::default(),
    };
    (TestRunway::with(agent.clone(), rt, config), agent)
}

fn app() -> (App, Sleeper) {
    app_with(Config::unauthenticated())
}

fn turn(run: &str, input: &str) -> TestTurn {
    TestTurn::new(input).run_id(run)
}

fn code(f: &Frames) -> String {
    f.error().map(|e| e.code).unwrap_or_default()
}

#[tokio::test]
async fn first_frame_is_in_the_body_before_the_engine_runs() {
    let (app, _) = app();
    let Reply::Stream { response, turn } = app.runway().handle(turn("r", "0").request()).await
    else {
        panic!("not a stream")
    };
    // The turn future has not been polled at all.
    let mut body = response.into_body();
    let first = futures::poll!(body.next());
    let std::task::Poll::Ready(Some(Ok(chunk))) = first else {
        panic!("first frame not ready: {first:?}")
    };
    assert!(String::from_utf8_lossy(&chunk).contains("STEP_STARTED"));
    drop(turn);
}

#[tokio::test]
async fn heartbeats_flow_while_the_agent_is_silent_the_first_one_early() {
    // The first keep-alive 2 s in: a path that holds the first frame until the next write
    // (reported of Lambda function URLs) lets it go well inside Console's 10 s deadline.
    let (app, _) = app();
    let f = app.send(turn("r", "35")).await;
    assert_eq!(
        f.heartbeats(),
        [2, 12, 22, 32].map(Duration::from_secs),
        "{f:?}"
    );
    assert!(f.is_success(), "{f:?}");
}

#[tokio::test]
async fn the_first_frame_is_followed_by_padding_in_its_own_chunk_and_never_replayed() {
    // Lambda's default; the others default to none (below).
    let (padded, _) = app_with(Config {
        first_flush_bytes: runway_core::adapter::FIRST_FLUSH_BYTES,
        ..Config::unauthenticated()
    });
    let f = padded.send(turn("r", "0")).await;
    let chunks = &f.received().chunks;
    assert!(chunks[0].1.starts_with(b"data: {\"type\":\"STEP_STARTED\""));
    let padding = &chunks[1];
    assert_eq!(padding.0, Duration::ZERO, "sent with the first frame");
    assert_eq!(padding.1.len(), 100 * 1024);
    let text = String::from_utf8_lossy(&padding.1);
    assert!(text.starts_with(": ") && text.ends_with("\n\n"));
    assert_eq!(
        text.lines().count(),
        2,
        "one comment line and the blank line"
    );
    // A replay sends a first frame and padding of its own, then the recording: the padding
    // of the original is not in it.
    let replay = padded.send(turn("r", "0")).await;
    let again = &replay.received().chunks;
    assert_eq!(again.len(), 3, "first frame, padding, recording");
    assert_eq!(again[1].1, padding.1);
    assert!(!String::from_utf8_lossy(&again[2].1).contains(": first-flush"));
    assert_eq!(replay.all(), f.all());

    let (none, _) = app();
    let f = none.send(turn("r", "0")).await;
    assert!(
        f.received()
            .chunks
            .iter()
            .all(|(_, c)| !c.starts_with(b": first-flush"))
    );
}

#[tokio::test]
async fn the_deadline_ends_the_turn_with_run_error() {
    let (app, agent) = app();
    let f = app.send(turn("r", "400")).await;
    assert_eq!(code(&f), "TURN_DEADLINE");
    assert_eq!(f.received().took(), Duration::from_secs(290));
    assert!(
        agent.dropped.load(Ordering::SeqCst),
        "agent future not dropped"
    );
}

/// Sends `turn`, and drops its body (the client leaves) `after` it was handed over; returns
/// when the engine finished, on the virtual clock.
async fn disconnect_after(app: &App, turn: TestTurn, after: Duration) -> Duration {
    let rt = app.runtime();
    rt.run(async {
        let Reply::Stream { response, turn } = app.runway().handle(turn.request()).await else {
            panic!("not a stream")
        };
        let client = async {
            rt.sleep(after).await;
            drop(response);
        };
        futures::join!(turn, client);
        rt.elapsed()
    })
    .await
}

#[tokio::test]
async fn a_disconnect_drops_the_agent_and_records_the_cancellation() {
    let (app, agent) = app();
    let ended_after = disconnect_after(&app, turn("r", "100"), Duration::from_secs(3)).await;
    assert!(
        ended_after < Duration::from_secs(4),
        "engine finishes promptly after a disconnect: {ended_after:?}"
    );
    assert!(
        agent.dropped.load(Ordering::SeqCst),
        "agent future not dropped"
    );
    // The replay of that run is the cancelled recording, and the agent does not run again.
    let replay = app.send(turn("r", "100")).await;
    assert_eq!(code(&replay), "CANCELLED");
    assert_eq!(agent.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn store_failure_before_the_turn_is_a_run_error_and_degrades_health() {
    let (app, agent) = app();
    assert_eq!(app.runway().health().status, HealthStatus::Ok);
    app.store().fail(StoreCall::StartTurn);
    let f = app.send(turn("r", "0")).await;
    assert_eq!(code(&f), "STORE_UNAVAILABLE");
    assert_eq!(
        agent.runs.load(Ordering::SeqCst),
        0,
        "agent ran without its context"
    );
    assert_eq!(app.runway().health().status, HealthStatus::Degraded);
    let rt = app.runtime();
    rt.run(rt.sleep(Duration::from_secs(61))).await;
    assert_eq!(app.runway().health().status, HealthStatus::Ok);
}

#[tokio::test]
async fn store_failure_after_the_turn_is_never_a_silent_success() {
    let (app, _) = app();
    app.store().fail(StoreCall::FinishTurn);
    let f = app.send(turn("r", "0")).await;
    assert!(!f.types().contains(&"RUN_FINISHED"), "{f:?}");
    assert_eq!(code(&f), "STORE_UNAVAILABLE");
}

#[tokio::test]
async fn a_store_slower_than_its_timeout_is_a_run_error() {
    let (app, agent) = app();
    app.store()
        .delay(StoreCall::StartTurn, Duration::from_secs(9));
    let f = app.send(turn("r", "0")).await;
    assert_eq!(code(&f), "STORE_UNAVAILABLE");
    // Given up at the store timeout (8 s), with the early heartbeat (2 s) sent meanwhile.
    assert_eq!(f.received().took(), Duration::from_secs(8));
    assert_eq!(f.heartbeats(), [Duration::from_secs(2)], "{f:?}");
    assert_eq!(agent.runs.load(Ordering::SeqCst), 0);
}

/// A turn whose usage write takes `delay`: what the client read, and how long the turn's body
/// stayed open.
async fn turn_with_usage_write_taking(delay: Duration) -> (Frames, Duration) {
    let (app, _) = app();
    app.store().delay(StoreCall::AddTally, delay);
    let rt = app.runtime();
    let before = rt.elapsed();
    let f = app.send(turn("r", "0")).await;
    assert_eq!(app.store().calls(StoreCall::AddTally), 1);
    (f, rt.elapsed() - before)
}

#[tokio::test]
async fn a_usage_write_that_never_completes_is_given_up_after_its_bound() {
    // An hour of virtual time: as good as never.
    let (f, open) = turn_with_usage_write_taking(Duration::from_secs(3600)).await;
    // The final frame left at once; the body stayed open for the write until its bound (8 s).
    assert!(f.is_success(), "{f:?}");
    assert_eq!(f.received().took(), Duration::ZERO);
    assert_eq!(open, Duration::from_secs(8));
}

#[tokio::test]
async fn a_slow_usage_write_is_waited_for_within_its_bound() {
    let (f, open) = turn_with_usage_write_taking(Duration::from_secs(3)).await;
    assert!(f.is_success(), "{f:?}");
    assert_eq!(open, Duration::from_secs(3));
}

#[tokio::test]
async fn a_panic_is_a_run_error_and_the_service_goes_on() {
    let (app, _) = app();
    let f = app.send(turn("r1", "panic")).await;
    assert_eq!(code(&f), "AGENT_PANIC");
    let f = app.send(turn("r2", "0")).await;
    assert!(f.is_success(), "{f:?}");
}

#[tokio::test]
async fn concurrent_duplicates_run_the_agent_once() {
    let (app, agent) = app();
    let rt = app.runtime();
    let (a, b) = rt
        .run(async { futures::join!(app.send(turn("dup", "5")), app.send(turn("dup", "5"))) })
        .await;
    assert_eq!(agent.runs.load(Ordering::SeqCst), 1);
    assert_eq!(a.all(), b.all());
    assert!(a.is_success(), "{a:?}");
}

/// Sends `first`, and `second` one second later, at once.
async fn overlapping(app: &App, first: TestTurn, second: TestTurn) -> (Frames, Frames) {
    let rt = app.runtime();
    rt.run(async {
        futures::join!(app.send(first), async {
            rt.sleep(Duration::from_secs(1)).await;
            app.send(second).await
        })
    })
    .await
}

#[tokio::test]
async fn a_waiting_duplicate_sends_heartbeats() {
    let (app, agent) = app();
    let (_, b) = overlapping(&app, turn("dup", "25"), turn("dup", "25")).await;
    assert_eq!(agent.runs.load(Ordering::SeqCst), 1);
    // Polls back off to 8 s: the duplicate replays within 8 s of the original's end.
    // Its keep-alives: 2 s after its start, then every 10 s.
    assert_eq!(
        b.heartbeats(),
        [2, 12, 22].map(Duration::from_secs),
        "{b:?}"
    );
    assert!(b.is_success(), "{b:?}");
}

#[tokio::test]
async fn a_disconnect_during_the_claim_still_records_the_run_as_cancelled() {
    let (app, agent) = app();
    app.store()
        .delay(StoreCall::StartTurn, Duration::from_secs(2));
    let finished_at = disconnect_after(&app, turn("r", "1"), Duration::from_millis(500)).await;
    assert!(
        finished_at <= Duration::from_secs(5),
        "engine finishes after the claim: {finished_at:?}"
    );
    app.store().delay(StoreCall::StartTurn, Duration::ZERO);
    // A re-delivery does not wait out the claim's lease: the run is already recorded.
    let replay = app.send(turn("r", "1")).await;
    assert!(replay.received().took() < Duration::from_secs(1));
    assert_eq!(code(&replay), "CANCELLED");
    assert_eq!(
        agent.runs.load(Ordering::SeqCst),
        0,
        "agent ran for a client already gone"
    );
}

#[tokio::test]
async fn a_waiting_duplicate_backs_off() {
    // Each poll is a paid conditional write (DynamoDB) or a subrequest (Workers): a duplicate
    // of a 100-second turn polled 400 times at a fixed 250 ms.
    let (app, _) = app();
    let (_, b) = overlapping(&app, turn("dup", "100"), turn("dup", "100")).await;
    assert!(b.is_success(), "{b:?}");
    let polls = app.store().calls(StoreCall::StartTurn) - 1;
    assert!(polls <= 20, "{polls} polls while the original ran 100 s");
}

/// What the stored thread says, in order: (content, interrupted).
fn said(app: &App) -> Vec<(String, bool)> {
    let thread = app.store().thread(&turn("", "").thread_key()).unwrap();
    thread
        .messages
        .iter()
        .map(|m| (m.content.clone(), m.interrupted))
        .collect()
}

fn pairs(p: &[(&str, bool)]) -> Vec<(String, bool)> {
    p.iter().map(|(s, i)| ((*s).to_owned(), *i)).collect()
}

#[tokio::test]
async fn a_newer_turn_supersedes_a_running_one_at_its_next_check() {
    let (app, agent) = app();
    let (a, b) = overlapping(&app, turn("slow", "60"), turn("fast", "1")).await;
    assert!(b.is_success(), "{b:?}");
    assert_eq!(code(&a), "SUPERSEDED", "{a:?}");
    // Stopped at its first check for a newer turn (one heartbeat interval, 10 s), not after
    // 60 s.
    assert!(a.received().took() < Duration::from_secs(11), "{a:?}");
    assert!(agent.dropped.load(Ordering::SeqCst));
    assert_eq!(
        said(&app),
        pairs(&[("60", false), ("1", false), ("slept 1", false)])
    );
}

#[tokio::test]
async fn overlapping_turns_never_lose_the_later_ones_messages() {
    // Turn A (slow, no heartbeat check before it ends) loads the thread, B commits, then A
    // commits: A wrote back the context it loaded, erasing B (issue 11, item 1).
    let (app, _) = app_with(Config {
        heartbeat: Duration::from_secs(60),
        ..Config::unauthenticated()
    });
    let (a, _b) = overlapping(&app, turn("slow", "5"), turn("fast", "1")).await;
    assert!(a.is_success(), "{a:?}");
    assert_eq!(
        said(&app),
        pairs(&[
            ("5", false),
            ("slept 5", true),
            ("1", false),
            ("slept 1", false)
        ])
    );
}

#[tokio::test]
async fn a_hosted_file_the_store_cannot_serve_is_a_503() {
    let (app, _) = app();
    app.store().fail(StoreCall::GetFile);
    let token = "ab".repeat(32);
    let got = app
        .request(
            http::Request::get(format!("/files/{token}/report.csv"))
                .body(bytes::Bytes::new())
                .unwrap(),
        )
        .await;
    assert_eq!(got.status, 503, "{}", got.body());
    assert_eq!(app.store().calls(StoreCall::GetFile), 1);
}

#[tokio::test]
async fn a_long_turn_checks_for_a_newer_one_a_few_times_not_at_every_heartbeat() {
    // Each check is a store read: a Durable Object subrequest on Workers, where the free plan
    // allows 50 per request. At every heartbeat a 280 s turn made 28 of them.
    let (app, _) = app();
    let f = app.send(turn("r", "280")).await;
    assert!(f.is_success(), "{f:?}");
    assert_eq!(f.heartbeats().len(), 28, "heartbeats still flow");
    // After 10, 30, 70, 130, 190 and 250 s: backing off from the heartbeat to 60 s.
    assert_eq!(app.store().calls(StoreCall::LatestArrival), 6);
}
