//! The engine driven through `Runway::handle` on a virtual clock (tokio's paused time), with
//! a store that fails on demand.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use runway_core::adapter::{
    CommitOutcome, Config, HostedFile, MemoryStore, Reply, Runtime, Runway, StoreError, TurnClaim,
    TurnCommit, TurnStart, TurnStore,
};
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
use serde_json::{Value, json};

#[derive(Clone, Copy)]
struct VirtualClock;

impl Runtime for VirtualClock {
    type Sleep = tokio::time::Sleep;
    fn sleep(&self, d: Duration) -> Self::Sleep {
        tokio::time::sleep(d)
    }
    fn now_ms(&self) -> u64 {
        // Paused tokio time starts at an arbitrary instant; anchor it.
        static START: std::sync::OnceLock<tokio::time::Instant> = std::sync::OnceLock::new();
        let start = *START.get_or_init(tokio::time::Instant::now);
        1_700_000_000_000
            + tokio::time::Instant::now()
                .duration_since(start)
                .as_millis() as u64
    }
    fn fill_random(&self, buf: &mut [u8]) {
        buf.fill(7);
    }
}

#[derive(Default)]
struct FlakyStore {
    inner: MemoryStore,
    fail_start: AtomicBool,
    fail_finish: AtomicBool,
    start_delay_secs: std::sync::atomic::AtomicU64,
    starts: AtomicUsize,
}

impl TurnStore for FlakyStore {
    async fn start_turn(&self, c: &TurnClaim) -> Result<TurnStart, StoreError> {
        self.starts.fetch_add(1, Ordering::SeqCst);
        if self.fail_start.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("injected".into()));
        }
        let delay = self.start_delay_secs.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(delay)).await;
        self.inner.start_turn(c).await
    }
    async fn finish_turn(&self, c: &TurnCommit) -> Result<CommitOutcome, StoreError> {
        if self.fail_finish.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("injected".into()));
        }
        self.inner.finish_turn(c).await
    }
    async fn latest_arrival(&self, t: &str) -> Result<u64, StoreError> {
        self.inner.latest_arrival(t).await
    }
    async fn put_file(&self, f: &HostedFile) -> Result<(), StoreError> {
        self.inner.put_file(f).await
    }
    async fn get_file(&self, t: &str, now: u64) -> Result<Option<HostedFile>, StoreError> {
        self.inner.get_file(t, now).await
    }
}

/// Sleeps `secs` (from the input) then answers; counts runs and notices being dropped.
#[derive(Default, Clone)]
struct Sleeper {
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
        tokio::time::sleep(Duration::from_secs(secs)).await;
        out.text(format!("slept {secs}"));
        // Reached only when not dropped.
        std::mem::forget(_flag);
        Ok(Outcome::Done)
    }
}

fn request(run: &str, input: &str) -> http::Request<Bytes> {
    let body = json!({"protocolVersion": "1", "runId": run, "threadId": "t1", "agentId": "a",
                      "workspaceId": "w", "input": input});
    http::Request::post("/runs")
        .header("host", "agent.test")
        .body(Bytes::from(body.to_string()))
        .unwrap()
}

type App = Runway<Sleeper, FlakyStore, VirtualClock>;

fn app(agent: Sleeper) -> App {
    Runway::new(
        agent,
        FlakyStore::default(),
        VirtualClock,
        Config::unauthenticated(),
    )
}

/// Starts the turn and collects (arrival ms since start, chunk) until the body ends.
async fn run(app: &App, run: &str, input: &str) -> Vec<(u64, String)> {
    let Reply::Stream { response, turn } = app.handle(request(run, input)).await else {
        panic!("not a stream")
    };
    tokio::spawn(turn);
    let start = tokio::time::Instant::now();
    let mut body = response.into_body();
    let mut chunks = Vec::new();
    while let Some(Ok(c)) = body.next().await {
        chunks.push((
            start.elapsed().as_millis() as u64,
            String::from_utf8(c.to_vec()).unwrap(),
        ));
    }
    chunks
}

fn frames(chunks: &[(u64, String)]) -> Vec<Value> {
    chunks
        .iter()
        .flat_map(|(_, c)| c.split("\n\n"))
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn first_frame_is_in_the_body_before_the_engine_runs() {
    let app = app(Sleeper::default());
    let Reply::Stream { response, turn } = app.handle(request("r", "0")).await else {
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

#[tokio::test(start_paused = true)]
async fn heartbeats_flow_while_the_agent_is_silent() {
    let app = app(Sleeper::default());
    let chunks = run(&app, "r", "35").await;
    let beats: Vec<u64> = chunks
        .iter()
        .filter(|(_, c)| c.starts_with(':'))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(beats, vec![10_000, 20_000, 30_000], "{chunks:?}");
    assert_eq!(frames(&chunks).last().unwrap()["type"], "RUN_FINISHED");
}

#[tokio::test(start_paused = true)]
async fn the_deadline_ends_the_turn_with_run_error() {
    let agent = Sleeper::default();
    let app = app(agent.clone());
    let chunks = run(&app, "r", "400").await;
    let last = frames(&chunks).pop().unwrap();
    assert_eq!(last["code"], "TURN_DEADLINE");
    assert_eq!(chunks.last().unwrap().0, 290_000);
    assert!(
        agent.dropped.load(Ordering::SeqCst),
        "agent future not dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn a_disconnect_drops_the_agent_and_records_the_cancellation() {
    let agent = Sleeper::default();
    let app = app(agent.clone());
    let Reply::Stream { response, turn } = app.handle(request("r", "100")).await else {
        panic!("not a stream")
    };
    let handle = tokio::spawn(turn);
    tokio::time::sleep(Duration::from_secs(3)).await;
    drop(response);
    tokio::time::timeout(Duration::from_secs(1), handle)
        .await
        .expect("engine finishes promptly after a disconnect")
        .unwrap();
    assert!(
        agent.dropped.load(Ordering::SeqCst),
        "agent future not dropped"
    );
    // The replay of that run is the cancelled recording, and the agent does not run again.
    let replay = frames(&run(&app, "r", "100").await);
    assert_eq!(replay.last().unwrap()["code"], "CANCELLED");
    assert_eq!(agent.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn store_failure_before_the_turn_is_a_run_error_and_degrades_health() {
    let agent = Sleeper::default();
    let app = app(agent.clone());
    assert_eq!(app.health().status, runway_core::protocol::HealthStatus::Ok);
    app.store().fail_start.store(true, Ordering::SeqCst);
    let f = frames(&run(&app, "r", "0").await);
    assert_eq!(f.last().unwrap()["code"], "STORE_UNAVAILABLE");
    assert_eq!(
        agent.runs.load(Ordering::SeqCst),
        0,
        "agent ran without its context"
    );
    assert_eq!(
        app.health().status,
        runway_core::protocol::HealthStatus::Degraded
    );
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(app.health().status, runway_core::protocol::HealthStatus::Ok);
}

#[tokio::test(start_paused = true)]
async fn store_failure_after_the_turn_is_never_a_silent_success() {
    let app = app(Sleeper::default());
    app.store().fail_finish.store(true, Ordering::SeqCst);
    let f = frames(&run(&app, "r", "0").await);
    let types: Vec<_> = f.iter().map(|f| f["type"].as_str().unwrap()).collect();
    assert!(!types.contains(&"RUN_FINISHED"), "{types:?}");
    assert_eq!(f.last().unwrap()["code"], "STORE_UNAVAILABLE");
}

#[tokio::test(start_paused = true)]
async fn a_panic_is_a_run_error_and_the_service_goes_on() {
    let app = app(Sleeper::default());
    let f = frames(&run(&app, "r1", "panic").await);
    assert_eq!(f.last().unwrap()["code"], "AGENT_PANIC");
    let f = frames(&run(&app, "r2", "0").await);
    assert_eq!(f.last().unwrap()["type"], "RUN_FINISHED");
}

#[tokio::test(start_paused = true)]
async fn concurrent_duplicates_run_the_agent_once() {
    let agent = Sleeper::default();
    let app = app(agent.clone());
    let (a, b) = tokio::join!(run(&app, "dup", "5"), run(&app, "dup", "5"));
    assert_eq!(agent.runs.load(Ordering::SeqCst), 1);
    let (fa, fb) = (frames(&a), frames(&b));
    assert_eq!(fa, fb);
    assert_eq!(fa.last().unwrap()["type"], "RUN_FINISHED");
}

#[tokio::test(start_paused = true)]
async fn a_waiting_duplicate_sends_heartbeats() {
    let agent = Sleeper::default();
    let app = app(agent.clone());
    let (_, b) = tokio::join!(run(&app, "dup", "25"), async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        run(&app, "dup", "25").await
    });
    assert_eq!(agent.runs.load(Ordering::SeqCst), 1);
    // Polls back off to 8 s: the duplicate replays within 8 s of the original's end.
    let beats = b.iter().filter(|(_, c)| c.starts_with(':')).count();
    assert_eq!(beats, 3, "{b:?}");
    assert_eq!(frames(&b).last().unwrap()["type"], "RUN_FINISHED");
}

#[tokio::test(start_paused = true)]
async fn a_disconnect_during_the_claim_still_records_the_run_as_cancelled() {
    let agent = Sleeper::default();
    let app = app(agent.clone());
    app.store().start_delay_secs.store(2, Ordering::SeqCst);
    let Reply::Stream { response, turn } = app.handle(request("r", "1")).await else {
        panic!("not a stream")
    };
    let handle = tokio::spawn(turn);
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(response);
    tokio::time::timeout(Duration::from_secs(5), handle)
        .await
        .expect("engine finishes after the claim")
        .unwrap();
    app.store().start_delay_secs.store(0, Ordering::SeqCst);
    // A re-delivery does not wait out the claim's lease: the run is already recorded.
    let started = tokio::time::Instant::now();
    let replay = frames(&run(&app, "r", "1").await);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(replay.last().unwrap()["code"], "CANCELLED");
    assert_eq!(
        agent.runs.load(Ordering::SeqCst),
        0,
        "agent ran for a client already gone"
    );
}

#[tokio::test(start_paused = true)]
async fn a_waiting_duplicate_backs_off() {
    // Each poll is a paid conditional write (DynamoDB) or a subrequest (Workers): a duplicate
    // of a 100-second turn polled 400 times at a fixed 250 ms.
    let agent = Sleeper::default();
    let app = app(agent.clone());
    let (_, b) = tokio::join!(run(&app, "dup", "100"), async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        run(&app, "dup", "100").await
    });
    assert_eq!(frames(&b).last().unwrap()["type"], "RUN_FINISHED");
    let polls = app.store().starts.load(Ordering::SeqCst) - 1;
    assert!(polls <= 20, "{polls} polls while the original ran 100 s");
}

/// The store's view of thread `t1`, through a probe claim.
async fn stored_thread(app: &App) -> runway_core::ThreadContext {
    let probe = TurnClaim {
        run_key: "probe".into(),
        thread_key: "a/t1".into(),
        fingerprint: "probe".into(),
        now_ms: VirtualClock.now_ms(),
        lease_until_ms: VirtualClock.now_ms() + 1,
        token: "probe".into(),
    };
    match app.store().start_turn(&probe).await.unwrap() {
        TurnStart::Claimed {
            context: Some(c), ..
        } => c,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_newer_turn_supersedes_a_running_one_at_its_next_heartbeat() {
    let agent = Sleeper::default();
    let app = app(agent.clone());
    let (a, b) = tokio::join!(run(&app, "slow", "60"), async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        run(&app, "fast", "1").await
    });
    let (fa, fb) = (frames(&a), frames(&b));
    assert_eq!(fb.last().unwrap()["type"], "RUN_FINISHED", "{fb:?}");
    let last = fa.last().unwrap();
    assert_eq!(last["code"], "SUPERSEDED", "{fa:?}");
    // Stopped at its first heartbeat check (10 s), not after 60 s.
    assert!(a.last().unwrap().0 < 11_000, "{a:?}");
    assert!(agent.dropped.load(Ordering::SeqCst));
    let thread = stored_thread(&app).await;
    let said: Vec<_> = thread
        .messages
        .iter()
        .map(|m| (m.content.as_str(), m.interrupted))
        .collect();
    assert_eq!(said, [("60", false), ("1", false), ("slept 1", false)]);
}

#[tokio::test(start_paused = true)]
async fn overlapping_turns_never_lose_the_later_ones_messages() {
    // Turn A (slow, no heartbeat check before it ends) loads the thread, B commits, then A
    // commits: A wrote back the context it loaded, erasing B (issue 11, item 1).
    let agent = Sleeper::default();
    let app = Runway::new(
        agent,
        FlakyStore::default(),
        VirtualClock,
        Config {
            heartbeat: Duration::from_secs(60),
            ..Config::unauthenticated()
        },
    );
    let (a, _b) = tokio::join!(run(&app, "slow", "5"), async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        run(&app, "fast", "1").await
    });
    assert_eq!(frames(&a).last().unwrap()["type"], "RUN_FINISHED");
    let thread = stored_thread(&app).await;
    let said: Vec<_> = thread
        .messages
        .iter()
        .map(|m| (m.content.as_str(), m.interrupted))
        .collect();
    assert_eq!(
        said,
        [
            ("5", false),
            ("slept 5", true),
            ("1", false),
            ("slept 1", false)
        ]
    );
}
