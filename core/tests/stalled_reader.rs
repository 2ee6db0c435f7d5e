//! A client that stops reading (the body is kept, never polled) on a virtual clock: the turn
//! still ends at its deadline and releases its claim, and what the agent has written but the
//! client has not read stays bounded.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use runway_core::adapter::{Access, AuthHeaders, Config, MemoryStore, Reply, Runtime, Runway};
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

/// Writes `piece` bytes of text every `every_ms` (0: only yields between pieces) until it has
/// written `total`, counting what it wrote and how often it ran.
#[derive(Clone)]
struct Writer {
    piece: usize,
    every_ms: u64,
    total: usize,
    written: Arc<AtomicUsize>,
    runs: Arc<AtomicUsize>,
}

impl Writer {
    fn new(piece: usize, every_ms: u64, total: usize) -> Self {
        Self {
            piece,
            every_ms,
            total,
            written: Arc::default(),
            runs: Arc::default(),
        }
    }
}

impl Agent for Writer {
    async fn run(&self, _turn: &mut Turn, out: &Output) -> AgentResult {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let text = "x".repeat(self.piece);
        while self.written.load(Ordering::SeqCst) < self.total {
            out.text(text.clone());
            self.written.fetch_add(self.piece, Ordering::SeqCst);
            if self.every_ms == 0 {
                // Any await point: a model stream, a tool call. Not `Output::ready`.
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(Duration::from_millis(self.every_ms)).await;
            }
        }
        Ok(Outcome::Done)
    }
}

fn request(run: &str) -> http::Request<Bytes> {
    let body = json!({"protocolVersion": "1", "runId": run, "threadId": "t1", "agentId": "a",
                      "workspaceId": "w", "input": "go"});
    http::Request::post("/runs")
        .header("host", "agent.test")
        .body(Bytes::from(body.to_string()))
        .unwrap()
}

fn app(agent: Writer) -> Runway<Writer, MemoryStore, VirtualClock> {
    Runway::new(
        agent,
        MemoryStore::default(),
        VirtualClock,
        Config::unauthenticated(),
    )
}

fn frames(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_stalled_reader_ends_at_the_deadline_and_releases_its_claim() {
    // 8 KiB every 100 ms for far longer than the 290 s deadline.
    let agent = Writer::new(8 * 1024, 100, usize::MAX);
    let app = app(agent.clone());
    let Reply::Stream { response, turn } = app.handle(request("r")).await else {
        panic!("not a stream")
    };
    let started = tokio::time::Instant::now();
    let handle = tokio::spawn(turn);
    // The client keeps the connection (the body) but never reads it.
    let stalled_body = response;
    tokio::time::timeout(Duration::from_secs(300), handle)
        .await
        .expect("the turn of a client that stopped reading ends at its deadline")
        .unwrap();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(290) && took < Duration::from_secs(296),
        "turn ended after {took:?}"
    );
    // The claim is released: a retry of the same run replays at once instead of waiting out
    // the lease, and the agent does not run a second time.
    let retry_started = tokio::time::Instant::now();
    let Reply::Stream { response, turn } = app.handle(request("r")).await else {
        panic!("not a stream")
    };
    tokio::spawn(turn);
    let replay: Vec<u8> = response
        .into_body()
        .flat_map(|c| futures::stream::iter(c.unwrap().to_vec()))
        .collect()
        .await;
    assert!(retry_started.elapsed() < Duration::from_secs(1));
    let replay = frames(&String::from_utf8(replay).unwrap());
    assert_eq!(
        replay.last().unwrap()["code"],
        "TURN_DEADLINE",
        "{replay:?}"
    );
    assert_eq!(agent.runs.load(Ordering::SeqCst), 1);
    drop(stalled_body);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_reader_pauses_the_agent_instead_of_buffering() {
    // 256 KiB pieces (a large tool result, a long paragraph) as fast as the engine lets it,
    // 6 MiB in all.
    let agent = Writer::new(256 * 1024, 0, 6 * 1024 * 1024);
    let app = app(agent.clone());
    let Reply::Stream { response, turn } = app.handle(request("r")).await else {
        panic!("not a stream")
    };
    let handle = tokio::spawn(turn);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let written = agent.written.load(Ordering::SeqCst);
    assert!(
        written <= 1024 * 1024,
        "the agent wrote {written} bytes ahead of a client that reads nothing"
    );
    // Once the client reads, the agent goes on to the end.
    let body: Vec<u8> = response
        .into_body()
        .flat_map(|c| futures::stream::iter(c.unwrap().to_vec()))
        .collect()
        .await;
    handle.await.unwrap();
    let body = String::from_utf8(body).unwrap();
    let last = frames(&body).pop().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{last}");
    assert_eq!(agent.written.load(Ordering::SeqCst), 6 * 1024 * 1024);
}

#[tokio::test(start_paused = true)]
async fn ready_lets_a_burst_writer_wait_for_the_client() {
    /// Writes 40 KiB pieces without any await but `Output::ready`.
    #[derive(Clone, Default)]
    struct Burst(Arc<AtomicUsize>);
    impl Agent for Burst {
        async fn run(&self, _turn: &mut Turn, out: &Output) -> AgentResult {
            for _ in 0..100 {
                out.text("y".repeat(40 * 1024));
                self.0.fetch_add(40 * 1024, Ordering::SeqCst);
                out.ready().await;
            }
            Ok(Outcome::Done)
        }
    }
    let agent = Burst::default();
    let app = Runway::new(
        agent.clone(),
        MemoryStore::default(),
        VirtualClock,
        Config::unauthenticated(),
    );
    let Reply::Stream { response, turn } = app.handle(request("r")).await else {
        panic!("not a stream")
    };
    let handle = tokio::spawn(turn);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let written = agent.0.load(Ordering::SeqCst);
    assert!(written <= 1024 * 1024, "wrote {written} bytes ahead");
    let mut body = response.into_body();
    while body.next().await.is_some() {}
    handle.await.unwrap();
    assert_eq!(agent.0.load(Ordering::SeqCst), 100 * 40 * 1024);
}

#[test]
fn authorize_refuses_a_stranger_from_the_head_alone() {
    let config = Config {
        access: Access::Headers(AuthHeaders::parse("X-API-Key: k").unwrap()),
        ..Config::default()
    };
    let app = Runway::new(
        Writer::new(1, 0, 1),
        MemoryStore::default(),
        VirtualClock,
        config,
    );
    let head = |path: &str, key: Option<&str>| {
        let mut b = http::Request::post(path);
        if let Some(k) = key {
            b = b.header("x-api-key", k);
        }
        b.body(()).unwrap().into_parts().0
    };
    let refused = app.authorize(&head("/runs", None)).unwrap_err();
    assert_eq!(refused.status(), 401);
    assert!(app.authorize(&head("/runs", Some("wrong"))).is_err());
    assert!(app.authorize(&head("/lowkey/turn", None)).is_err());
    assert!(app.authorize(&head("/health", None)).is_err());
    assert!(app.authorize(&head("/runs", Some("k"))).is_ok());
    // Hosted files are opened by a browser, without the header set.
    assert!(app.authorize(&head("/files/abc/name.csv", None)).is_ok());
}

/// No header set configured (the default, and what `Config::from_lookup` gives without
/// `RUNWAY_AUTH_HEADERS`): every turn is refused with a 500 naming the setting, before its
/// body is read and again in `handle`, while `/health` and hosted files still answer.
#[tokio::test]
async fn without_a_header_set_turns_are_refused_naming_the_setting() {
    let logs = CapturedLogs::default();
    let _subscriber = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_writer(logs.clone())
            .with_ansi(false)
            .finish(),
    );
    let config = Config {
        access: Access::default().naming_missing("the RUNWAY_AUTH_HEADERS secret"),
        ..Config::default()
    };
    let app = Runway::new(
        Writer::new(1, 0, 1),
        MemoryStore::default(),
        VirtualClock,
        config,
    );
    let head = |method: http::Method, path: &str| {
        http::Request::builder()
            .method(method)
            .uri(path)
            .header("x-api-key", "anything")
            .body(())
            .unwrap()
            .into_parts()
            .0
    };
    // The usage report (and an adapter's own /metrics) tell a stranger who the customers are
    // and what they spend: refused like turns.
    for (method, path) in [
        (http::Method::POST, "/runs"),
        (http::Method::POST, "/lowkey/turn"),
        (http::Method::GET, "/usage"),
        (http::Method::GET, "/metrics"),
    ] {
        let refused = app.authorize(&head(method, path)).unwrap_err();
        assert_eq!(refused.status(), 500, "{path}");
        let error: Value = serde_json::from_slice(refused.body()).unwrap();
        let message = error["error"].as_str().unwrap();
        assert!(
            message.contains("the RUNWAY_AUTH_HEADERS secret")
                && message.contains("RUNWAY_ALLOW_UNAUTHENTICATED"),
            "{message}"
        );
    }
    assert!(app.authorize(&head(http::Method::GET, "/health")).is_ok());
    assert!(
        app.authorize(&head(http::Method::GET, "/files/abc/a.csv"))
            .is_ok()
    );
    match app.handle(request("r")).await {
        Reply::Full(r) => assert_eq!(r.status(), 500),
        Reply::Stream { .. } => panic!("an unconfigured agent ran a turn"),
    }
    let health = app
        .handle(http::Request::get("/health").body(Bytes::new()).unwrap())
        .await;
    assert!(matches!(health, Reply::Full(r) if r.status() == 200));
    let logged = logs.text();
    assert!(
        logged.contains("ERROR")
            && logged.contains("AUTH_NOT_CONFIGURED")
            && logged.contains("the RUNWAY_AUTH_HEADERS secret"),
        "{logged}"
    );
}

/// Everything a `tracing_subscriber::fmt` subscriber writes, kept for the test to read.
#[derive(Clone, Default)]
struct CapturedLogs(Arc<std::sync::Mutex<Vec<u8>>>);

impl CapturedLogs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for CapturedLogs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for CapturedLogs {
    type Writer = Self;
    fn make_writer(&'a self) -> Self {
        self.clone()
    }
}
