//! A client that stops reading (the body is kept, never polled) on a virtual clock: the turn
//! still ends at its deadline and releases its claim, and what the agent has written but the
//! client has not read stays bounded.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use runway_core::adapter::{Access, AuthHeaders, Config, Reply};
use runway_core::testing::{TestRunway, TestTurn, VirtualRuntime, yield_now};
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
use serde_json::Value;

/// Writes `piece` bytes of text every `every_ms` (0: only yields between pieces) until it has
/// written `total`, counting what it wrote and how often it ran.
#[derive(Clone)]
struct Writer {
    rt: VirtualRuntime,
    piece: usize,
    every_ms: u64,
    total: usize,
    written: Arc<AtomicUsize>,
    runs: Arc<AtomicUsize>,
}

impl Writer {
    fn new(rt: &VirtualRuntime, piece: usize, every_ms: u64, total: usize) -> Self {
        Self {
            rt: rt.clone(),
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
                yield_now().await;
            } else {
                self.rt.sleep(Duration::from_millis(self.every_ms)).await;
            }
        }
        Ok(Outcome::Done)
    }
}

fn turn(run: &str) -> TestTurn {
    TestTurn::new("go").run_id(run)
}

fn app<A: Agent>(rt: &VirtualRuntime, agent: A) -> TestRunway<A> {
    TestRunway::with(agent, rt.clone(), Config::unauthenticated())
}

#[tokio::test]
async fn a_stalled_reader_ends_at_the_deadline_and_releases_its_claim() {
    // 8 KiB every 100 ms for far longer than the 290 s deadline.
    let rt = VirtualRuntime::new();
    let agent = Writer::new(&rt, 8 * 1024, 100, usize::MAX);
    let app = app(&rt, agent.clone());
    let (took, stalled_body) = rt
        .run(async {
            let Reply::Stream { response, turn } =
                app.runway().handle(self::turn("r").request()).await
            else {
                panic!("not a stream")
            };
            // The client keeps the connection (the body) but never reads it.
            rt.timeout(Duration::from_secs(300), turn)
                .await
                .expect("the turn of a client that stopped reading ends at its deadline");
            (rt.elapsed(), response)
        })
        .await;
    assert!(
        took >= Duration::from_secs(290) && took < Duration::from_secs(296),
        "turn ended after {took:?}"
    );
    // The claim is released: a retry of the same run replays at once instead of waiting out
    // the lease, and the agent does not run a second time.
    let replay = app.send(turn("r")).await;
    assert!(replay.received().took() < Duration::from_secs(1));
    assert_eq!(replay.error().unwrap().code, "TURN_DEADLINE", "{replay:?}");
    assert_eq!(agent.runs.load(Ordering::SeqCst), 1);
    drop(stalled_body);
}

/// Starts `app`'s turn; after 5 s of a client reading nothing, `written()` is checked; then the
/// client reads to the end, which is returned.
async fn stall_then_read<A: Agent>(
    app: &TestRunway<A>,
    written: impl Fn() -> usize,
) -> runway_core::testing::Frames {
    let rt = app.runtime();
    let received = rt
        .run(async {
            let Reply::Stream { response, turn } =
                app.runway().handle(self::turn("r").request()).await
            else {
                panic!("not a stream")
            };
            let client = async {
                rt.sleep(Duration::from_secs(5)).await;
                let written = written();
                assert!(
                    written <= 1024 * 1024,
                    "the agent wrote {written} bytes ahead of a client that reads nothing"
                );
                // Once the client reads, the agent goes on to the end.
                let mut body = response.into_body();
                let mut all = Vec::new();
                while let Some(Ok(c)) = body.next().await {
                    all.extend_from_slice(&c);
                }
                all
            };
            futures::join!(turn, client).1
        })
        .await;
    let received = runway_core::testing::Received {
        status: 200,
        headers: http::HeaderMap::new(),
        chunks: vec![(Duration::ZERO, received.into())],
    };
    runway_core::testing::Frames::parse(received, None)
}

#[tokio::test]
async fn a_stalled_reader_pauses_the_agent_instead_of_buffering() {
    // 256 KiB pieces (a large tool result, a long paragraph) as fast as the engine lets it,
    // 6 MiB in all.
    let rt = VirtualRuntime::new();
    let agent = Writer::new(&rt, 256 * 1024, 0, 6 * 1024 * 1024);
    let app = app(&rt, agent.clone());
    let f = stall_then_read(&app, || agent.written.load(Ordering::SeqCst)).await;
    assert!(f.is_success(), "{f:?}");
    assert_eq!(agent.written.load(Ordering::SeqCst), 6 * 1024 * 1024);
}

#[tokio::test]
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
    let app = app(&VirtualRuntime::new(), agent.clone());
    let f = stall_then_read(&app, || agent.0.load(Ordering::SeqCst)).await;
    assert!(f.is_success(), "{f:?}");
    assert_eq!(agent.0.load(Ordering::SeqCst), 100 * 40 * 1024);
}

#[test]
fn authorize_refuses_a_stranger_from_the_head_alone() {
    let config = Config {
        access: Access::Headers(AuthHeaders::parse("X-API-Key: k").unwrap()),
        ..Config::unauthenticated()
    };
    let rt = VirtualRuntime::new();
    let app = TestRunway::with(Writer::new(&rt, 1, 0, 1), rt, config);
    let app = app.runway();
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
        ..Config::unauthenticated()
    };
    let rt = VirtualRuntime::new();
    let app = TestRunway::with(Writer::new(&rt, 1, 0, 1), rt, config);
    let app = app.runway();
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
    match app.handle(turn("r").request()).await {
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
