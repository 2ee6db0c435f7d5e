//! An agent calling HTTP through the turn (`turn.http()`, reqwest on native targets), served
//! in-process by the core with a real loopback server that sends its body piece by piece.
//!
//! - The body reaches the user incrementally: each piece is only sent once the previous one
//!   has come out of the turn's SSE stream.
//! - A request's own timeout ends it; a request can never outlive the turn (deadline, or the
//!   turn ending while a detached task still reads the body): the server sees the close.
//! - The user hanging up aborts the agent's request: the server sees the close.
//! - Nothing the agent put in the URL, query or headers reaches the logs.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use runway_core::adapter::{Config, MemoryStore, Reply, Runway, TokioRuntime, TurnBody};
use runway_core::http_client::ReqwestClient;
use runway_core::{Agent, AgentResult, HttpError, Outcome, Output, Turn};
use runway_e2e::paced_server::{PacedEvent, PacedServer};

const SECRET_QUERY: &str = "qsecret-5f1e0c";
const SECRET_HEADER: &str = "hsecret-9a7b2d";

/// GETs its URL (a secret in the query and in a header) and writes each body chunk as text.
struct Relay {
    url: String,
    timeout: Option<Duration>,
}

impl Agent for Relay {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        let mut req = turn
            .http()
            .get(&format!("{}/stream?key={SECRET_QUERY}", self.url))
            .header("x-secret", SECRET_HEADER);
        if let Some(t) = self.timeout {
            req = req.timeout(t);
        }
        let mut response = req.send().await?.error_for_status()?;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => out.text(String::from_utf8_lossy(&chunk)),
                Ok(None) => break,
                Err(e) => {
                    out.text(format!("[error: {e:?}]"));
                    break;
                }
            }
        }
        Ok(Outcome::Done)
    }
}

/// How the detached task's read ended, and when.
type ReadReport = tokio::sync::oneshot::Sender<(Result<(), HttpError>, Instant)>;

/// Starts the request on a detached tokio task (so dropping the agent does not drop it) and
/// reports how that task's body read ended.
struct Detached {
    url: String,
    result: Arc<Mutex<Option<ReadReport>>>,
    /// Return at once (the turn ends) instead of waiting for the deadline.
    return_at_once: bool,
}

impl Agent for Detached {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        let http = turn.http().clone();
        let url = self.url.clone();
        let report = self.result.lock().unwrap().take();
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let read = async {
                let mut r = http
                    .get(&url)
                    .timeout(Duration::from_secs(60))
                    .send()
                    .await?;
                let _ = started_tx.send(());
                while r.chunk().await?.is_some() {}
                Ok(())
            };
            let result = read.await;
            if let Some(tx) = report {
                let _ = tx.send((result, Instant::now()));
            }
        });
        let _ = started_rx.await;
        out.text("request started");
        if self.return_at_once {
            return Ok(Outcome::Done);
        }
        futures::future::pending::<()>().await;
        Ok(Outcome::Done)
    }
}

fn config(deadline: Duration) -> Config {
    Config {
        turn_deadline: deadline,
        heartbeat: Duration::from_secs(1),
        ..Config::unauthenticated()
    }
}

fn run_request(run_id: &str) -> http::Request<Bytes> {
    let body = serde_json::json!({
        "protocolVersion": "1",
        "runId": run_id,
        "threadId": format!("thread-{run_id}"),
        "agentId": "agent-1",
        "workspaceId": "ws-1",
        "input": "go",
    });
    http::Request::post("http://127.0.0.1/runs")
        .header("content-type", "application/json")
        .body(Bytes::from(body.to_string()))
        .unwrap()
}

/// Starts a turn; the engine runs on a tokio task.
async fn start_turn<A: Agent>(agent: A, deadline: Duration) -> TurnBody {
    let runway = Runway::new(agent, MemoryStore::new(), TokioRuntime, config(deadline))
        .with_http_client(ReqwestClient::new());
    let Reply::Stream { response, turn } = runway.handle(run_request("run-1")).await else {
        panic!("expected a streamed turn");
    };
    tokio::spawn(turn);
    response.into_body()
}

/// Reads the SSE body until `needle` has arrived (Err with what came if it does not in time).
async fn read_until(
    body: &mut TurnBody,
    seen: &mut String,
    needle: &str,
    within: Duration,
) -> bool {
    let until = Instant::now() + within;
    while !seen.contains(needle) {
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, body.next()).await {
            Ok(Some(Ok(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            _ => return false,
        }
    }
    true
}

#[tokio::test]
async fn the_agent_reads_a_streamed_body_incrementally() {
    let pieces: Vec<String> = ["alpha-piece ", "beta-piece ", "gamma-piece"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut server = PacedServer::start(pieces.clone()).await;
    let mut body = start_turn(
        Relay {
            url: server.base_url.clone(),
            timeout: None,
        },
        Duration::from_secs(20),
    )
    .await;
    let mut seen = String::new();
    match server.next_event(Duration::from_secs(10)).await {
        Some(PacedEvent::Request(head)) => {
            assert!(head.starts_with("GET /stream?key="), "{head}");
            assert!(head.contains(SECRET_HEADER), "the header was sent: {head}");
        }
        other => panic!("no request reached the server: {other:?}"),
    }
    // Each piece must reach the user before the server sends the next one.
    for (i, piece) in pieces.iter().enumerate() {
        server.release();
        assert_eq!(
            server.next_event(Duration::from_secs(5)).await,
            Some(PacedEvent::Sent(i))
        );
        let arrived = read_until(&mut body, &mut seen, piece.trim(), Duration::from_secs(5)).await;
        assert!(
            arrived,
            "piece {i} did not reach the SSE stream before the next was sent (buffered?): {seen}"
        );
    }
    assert!(
        read_until(&mut body, &mut seen, "RUN_FINISHED", Duration::from_secs(5)).await,
        "{seen}"
    );
    assert!(!seen.contains("RUN_ERROR"), "{seen}");
}

#[tokio::test]
async fn a_request_timeout_ends_the_request_and_closes_the_connection() {
    let mut server = PacedServer::start(vec!["never".into()]).await;
    let started = Instant::now();
    let mut body = start_turn(
        Relay {
            url: server.base_url.clone(),
            timeout: Some(Duration::from_millis(400)),
        },
        Duration::from_secs(20),
    )
    .await;
    let mut seen = String::new();
    assert!(
        read_until(&mut body, &mut seen, "RUN_FINISHED", Duration::from_secs(5)).await,
        "{seen}"
    );
    let elapsed = started.elapsed();
    assert!(seen.contains("[error: Timeout(400ms)]"), "{seen}");
    assert!(elapsed >= Duration::from_millis(400), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert_eq!(server.closed_within(Duration::from_secs(2)).await, Some(0));
}

#[tokio::test]
async fn a_request_never_outlives_the_turn_deadline() {
    let mut server = PacedServer::start(vec!["never".into()]).await;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let started = Instant::now();
    let mut body = start_turn(
        Detached {
            url: server.base_url.clone(),
            result: Arc::new(Mutex::new(Some(tx))),
            return_at_once: false,
        },
        Duration::from_secs(1),
    )
    .await;
    let mut seen = String::new();
    assert!(
        read_until(
            &mut body,
            &mut seen,
            "TURN_DEADLINE",
            Duration::from_secs(5)
        )
        .await,
        "{seen}"
    );
    // The detached task asked for 60 s; the turn's deadline (1 s) ended it.
    let (result, at) = tokio::time::timeout(Duration::from_secs(3), rx)
        .await
        .expect("the detached read ended")
        .unwrap();
    let err = result.expect_err("the read was cut");
    assert!(
        matches!(err, HttpError::TurnDeadline | HttpError::Cancelled),
        "{err:?}"
    );
    let took = at - started;
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_eq!(server.closed_within(Duration::from_secs(2)).await, Some(0));
}

#[tokio::test]
async fn a_request_ends_when_the_turn_ends() {
    let mut server = PacedServer::start(vec!["one ".into(), "never".into()]).await;
    let (tx, rx) = tokio::sync::oneshot::channel();
    server.release();
    let mut body = start_turn(
        Detached {
            url: server.base_url.clone(),
            result: Arc::new(Mutex::new(Some(tx))),
            return_at_once: true,
        },
        Duration::from_secs(30),
    )
    .await;
    let mut seen = String::new();
    assert!(
        read_until(&mut body, &mut seen, "RUN_FINISHED", Duration::from_secs(5)).await,
        "{seen}"
    );
    let (result, _) = tokio::time::timeout(Duration::from_secs(3), rx)
        .await
        .expect("the detached read ended with the turn, long before its 60 s timeout")
        .unwrap();
    assert_eq!(result, Err(HttpError::Cancelled));
    assert_eq!(server.closed_within(Duration::from_secs(2)).await, Some(1));
}

#[tokio::test]
async fn the_user_hanging_up_aborts_the_agents_request() {
    let mut server = PacedServer::start(vec!["first-piece ".into(), "never".into()]).await;
    let mut body = start_turn(
        Relay {
            url: server.base_url.clone(),
            timeout: None,
        },
        Duration::from_secs(30),
    )
    .await;
    server.release();
    let mut seen = String::new();
    assert!(
        read_until(&mut body, &mut seen, "first-piece", Duration::from_secs(5)).await,
        "{seen}"
    );
    let hung_up = Instant::now();
    drop(body);
    assert_eq!(
        server.closed_within(Duration::from_secs(3)).await,
        Some(1),
        "the agent's connection was not closed after the user left"
    );
    println!(
        "connection closed {:?} after the hang-up",
        hung_up.elapsed()
    );
}

/// Everything written through `tracing`, at every level.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Reads a body (request answered), then fails to connect and returns the error.
struct Leaky {
    url: String,
    closed_port: u16,
}

impl Agent for Leaky {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        let http = turn.http();
        let text = http
            .get(&format!("{}/v1/things?api_key={SECRET_QUERY}", self.url))
            .bearer_auth(SECRET_HEADER)
            .send()
            .await?
            .text()
            .await?;
        out.text(text);
        let failed = http
            .post(&format!(
                "http://127.0.0.1:{}/v1/other?api_key={SECRET_QUERY}",
                self.closed_port
            ))
            .header("x-api-key", SECRET_HEADER)
            .send()
            .await;
        let err = failed.expect_err("nothing listens there");
        assert!(matches!(err, HttpError::Connect(_)), "{err:?}");
        out.text(format!(" [{err}] [{err:?}]"));
        Err(err.into())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn no_url_query_or_header_value_reaches_the_logs() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let server = PacedServer::start(vec!["payload".into()]).await;
    server.release();
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let runway = Runway::new(
        Leaky {
            url: server.base_url.clone(),
            closed_port,
        },
        MemoryStore::new(),
        TokioRuntime,
        config(Duration::from_secs(20)),
    )
    .with_http_client(ReqwestClient::new());
    let Reply::Stream { response, turn } = runway.handle(run_request("run-logs")).await else {
        panic!("expected a streamed turn");
    };
    // Driven on this thread, so the thread-local subscriber sees the engine's lines too.
    let (_, chunks) = futures::join!(turn, response.into_body().collect::<Vec<_>>());
    let sse: String = chunks
        .into_iter()
        .map(|c| String::from_utf8_lossy(&c.unwrap()).into_owned())
        .collect();
    assert!(sse.contains("payload"), "{sse}");
    assert!(sse.contains("could not connect"), "{sse}");
    assert!(sse.contains("AGENT_ERROR"), "{sse}");
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("agent HTTP request answered"), "{logs}");
    assert!(logs.contains("agent HTTP request failed"), "{logs}");
    assert!(logs.contains("AGENT_ERROR"), "{logs}");
    for secret in [SECRET_QUERY, SECRET_HEADER, "/v1/things", "/v1/other"] {
        assert!(
            !logs.contains(secret),
            "{secret} leaked into the logs:\n{logs}"
        );
        assert!(
            !sse.contains(secret),
            "{secret} leaked into the stream:\n{sse}"
        );
    }
}
