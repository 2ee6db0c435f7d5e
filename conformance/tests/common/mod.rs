//! Small External Agents for the emulator's tests, all on 127.0.0.1.
//!
//! [`AgentSpec::correct`] is an agent that follows the whole contract (it
//! behaves like runway's demo agent: it answers `You said "<input>".` and,
//! when the thread has a previous input, `Before that you said "<prev>".`).
//! Each broken agent is the correct one with exactly one thing changed.

#![allow(dead_code)]

pub mod holding_proxy;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use axum::routing::{get, post};
use runway_conformance::{Deadlines, Settings, StreamLimits};
use serde_json::{Value, json};

/// One step of a scripted stream.
#[derive(Debug, Clone)]
pub enum Step {
    /// Raw bytes, written as they are.
    Raw(String),
    /// One `data:` frame followed by a blank line.
    Frame(Value),
    /// A `: ping` comment line.
    Comment,
    /// Wait.
    Sleep(u64),
    /// Break the connection (no terminating chunk).
    Abort,
}

/// Turns a request body into a stream script.
pub type Script = Arc<dyn Fn(&Value) -> Vec<Step> + Send + Sync>;

/// How a test agent compares a received header value with the agreed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMatch {
    /// Byte for byte (correct).
    Exact,
    /// Accepts any value that starts with the agreed one.
    ReceivedStartsWithAgreed,
    /// Accepts any non-empty value the agreed one starts with (compares only as many
    /// characters as were sent).
    AgreedStartsWithReceived,
}

/// How the test agent behaves.
#[derive(Clone)]
pub struct AgentSpec {
    pub health_status: u16,
    pub health_body: String,
    /// The agreed header set; empty means no authentication.
    pub auth: Vec<(String, String)>,
    /// Only the first agreed header is checked.
    pub auth_first_only: bool,
    /// How a received value is compared with the agreed one.
    pub auth_match: AuthMatch,
    /// Status for refused credentials.
    pub auth_status: u16,
    /// Keeps context per threadId.
    pub context: bool,
    /// Context key is the threadId before any `:` (branches share context).
    pub branch_leak: bool,
    /// Replays completed runIds.
    pub idempotent: bool,
    /// Idempotency keyed on runId alone (a reused runId with another body
    /// is replayed).
    pub replay_on_run_id_only: bool,
    /// Status of `POST /runs`.
    pub runs_status: u16,
    pub content_type: &'static str,
    pub stream_headers: bool,
    /// Heartbeat period during `/slow <ms>` (0: no heartbeat).
    pub heartbeat_ms: u64,
    /// A scripted stream replacing the demo behaviour.
    pub script: Option<Script>,
    /// Bytes of comment written in one write with the first frame (what runway's
    /// `RUNWAY_FIRST_FLUSH_BYTES` does), 0 for none.
    pub first_write_padding: usize,
}

impl AgentSpec {
    /// The agent that follows the whole contract.
    pub fn correct() -> Self {
        AgentSpec {
            health_status: 200,
            health_body: json!({"status":"ok","protocolVersions":["1"],"name":"Test Agent","version":"0.0.1"}).to_string(),
            auth: vec![],
            auth_first_only: false,
            auth_match: AuthMatch::Exact,
            auth_status: 401,
            context: true,
            branch_leak: false,
            idempotent: true,
            replay_on_run_id_only: false,
            runs_status: 200,
            content_type: "text/event-stream",
            stream_headers: true,
            heartbeat_ms: 50,
            script: None,
            first_write_padding: 0,
        }
    }

    /// The correct agent answering every turn with a fixed script.
    pub fn scripted(f: impl Fn(&Value) -> Vec<Step> + Send + Sync + 'static) -> Self {
        AgentSpec {
            script: Some(Arc::new(f)),
            ..AgentSpec::correct()
        }
    }

    pub fn with_auth(mut self, headers: &[(&str, &str)]) -> Self {
        self.auth = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        self
    }
}

/// The frames of a correct answer with `text`, message id `a1`.
pub fn answer(text: &str) -> Vec<Step> {
    vec![
        Step::Frame(json!({"type":"TEXT_MESSAGE_START","messageId":"a1","role":"assistant"})),
        Step::Frame(json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":text})),
        Step::Frame(json!({"type":"TEXT_MESSAGE_END","messageId":"a1"})),
    ]
}

pub fn finished() -> Step {
    Step::Frame(json!({"type":"RUN_FINISHED","outcome":{"type":"success"}}))
}

/// A full correct turn: the answer then RUN_FINISHED.
pub fn correct_turn(text: &str) -> Vec<Step> {
    let mut steps = answer(text);
    steps.push(finished());
    steps
}

#[derive(Default)]
struct Memory {
    history: HashMap<String, Vec<String>>,
    completed: HashMap<String, (String, Vec<Step>)>,
}

struct Shared {
    spec: AgentSpec,
    memory: Mutex<Memory>,
    requests: AtomicUsize,
    agent_runs: AtomicUsize,
}

/// A running test agent.
pub struct Agent {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Agent {
    pub async fn start(spec: AgentSpec) -> Agent {
        let shared = Arc::new(Shared {
            spec,
            memory: Mutex::new(Memory::default()),
            requests: AtomicUsize::new(0),
            agent_runs: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/health", get(health))
            .route("/runs", post(runs))
            .route("/elsewhere/runs", post(elsewhere))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Agent { addr, shared, task }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests received, on any path.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Turns the agent actually ran (replays excluded).
    pub fn agent_runs(&self) -> usize {
        self.shared.agent_runs.load(Ordering::SeqCst)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn authorized(spec: &AgentSpec, headers: &HeaderMap) -> bool {
    let checked = if spec.auth_first_only {
        &spec.auth[..spec.auth.len().min(1)]
    } else {
        &spec.auth[..]
    };
    checked.iter().all(|(name, value)| {
        headers.get(name.as_str()).is_some_and(|v| {
            let (got, agreed) = (v.as_bytes(), value.as_bytes());
            match spec.auth_match {
                AuthMatch::Exact => got == agreed,
                AuthMatch::ReceivedStartsWithAgreed => got.starts_with(agreed),
                AuthMatch::AgreedStartsWithReceived => !got.is_empty() && agreed.starts_with(got),
            }
        })
    })
}

async fn health(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response<Body> {
    s.requests.fetch_add(1, Ordering::SeqCst);
    if !authorized(&s.spec, &headers) {
        return Response::builder()
            .status(s.spec.auth_status)
            .body(Body::from("{\"error\":\"unauthorized\"}"))
            .unwrap();
    }
    let mut b = Response::builder()
        .status(s.spec.health_status)
        .header(header::CONTENT_TYPE, "application/json");
    if (300..400).contains(&s.spec.health_status) {
        b = b.header(header::LOCATION, "/elsewhere/health");
    }
    b.body(Body::from(s.spec.health_body.clone())).unwrap()
}

async fn elsewhere(State(s): State<Arc<Shared>>) -> Response<Body> {
    s.requests.fetch_add(1, Ordering::SeqCst);
    stream_response(&s.spec, correct_turn("redirected"))
}

async fn runs(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response<Body> {
    s.requests.fetch_add(1, Ordering::SeqCst);
    let spec = &s.spec;
    if !authorized(spec, &headers) {
        return Response::builder()
            .status(spec.auth_status)
            .body(Body::from("unauthorized"))
            .unwrap();
    }
    if spec.runs_status != 200 {
        let mut b = Response::builder().status(spec.runs_status);
        if (300..400).contains(&spec.runs_status) {
            b = b.header(header::LOCATION, "/elsewhere/runs");
        }
        return b.body(Body::from("no")).unwrap();
    }
    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let steps = match &spec.script {
        Some(script) => {
            s.agent_runs.fetch_add(1, Ordering::SeqCst);
            script(&req)
        }
        None => demo(&s, &req, &body),
    };
    stream_response(spec, steps)
}

/// The demo-like agent: names the previous input of the thread.
fn demo(s: &Shared, req: &Value, raw: &[u8]) -> Vec<Step> {
    let spec = &s.spec;
    let run_id = req["runId"].as_str().unwrap_or("").to_owned();
    let thread = req["threadId"].as_str().unwrap_or("").to_owned();
    let input = req["input"].as_str().unwrap_or("").to_owned();
    let body_key = String::from_utf8_lossy(raw).into_owned();
    let mut memory = s.memory.lock().unwrap();
    if spec.idempotent
        && let Some((key, steps)) = memory.completed.get(&run_id)
        && (spec.replay_on_run_id_only || *key == body_key)
    {
        return steps.clone();
    }
    s.agent_runs.fetch_add(1, Ordering::SeqCst);
    let key = if spec.branch_leak {
        thread.split(':').next().unwrap_or("").to_owned()
    } else {
        thread.clone()
    };
    let previous = if spec.context {
        memory.history.get(&key).and_then(|h| h.last().cloned())
    } else {
        None
    };
    let mut text = format!("You said \"{input}\".");
    if let Some(p) = previous {
        text.push_str(&format!(" Before that you said \"{p}\"."));
    }
    memory.history.entry(key).or_default().push(input.clone());
    let first = json!({"type":"STEP_STARTED","stepName":"think"});
    let mut steps = vec![if spec.first_write_padding > 0 {
        Step::Raw(format!(
            "data: {first}\n\n:{}\n\n",
            " ".repeat(spec.first_write_padding)
        ))
    } else {
        Step::Frame(first)
    }];
    if let Some(ms) = input
        .strip_prefix("/slow ")
        .and_then(|t| t.strip_suffix("ms"))
        .and_then(|t| t.parse::<u64>().ok())
    {
        let mut left = ms;
        while left > 0 {
            let nap = if spec.heartbeat_ms == 0 {
                left
            } else {
                spec.heartbeat_ms.min(left)
            };
            steps.push(Step::Sleep(nap));
            left -= nap;
            if spec.heartbeat_ms > 0 {
                steps.push(Step::Comment);
            }
        }
    }
    steps.push(Step::Frame(
        json!({"type":"STEP_FINISHED","stepName":"think"}),
    ));
    steps.extend(correct_turn(&text));
    memory.completed.insert(run_id, (body_key, steps.clone()));
    steps
}

fn stream_response(spec: &AgentSpec, steps: Vec<Step>) -> Response<Body> {
    let mut b = Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, spec.content_type);
    if spec.stream_headers {
        b = b
            .header(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"))
            .header("x-accel-buffering", "no");
    }
    let stream = futures::stream::unfold(steps.into_iter(), |mut steps| async move {
        loop {
            let step = steps.next()?;
            let bytes = match step {
                Step::Raw(s) => s,
                Step::Frame(v) => format!("data: {v}\n\n"),
                Step::Comment => ": ping\n\n".to_owned(),
                Step::Sleep(ms) => {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    continue;
                }
                Step::Abort => {
                    return Some((Err(std::io::Error::other("agent died")), steps));
                }
            };
            return Some((Ok::<_, std::io::Error>(Bytes::from(bytes)), steps));
        }
    });
    b.body(Body::from_stream(stream)).unwrap()
}

/// Short deadlines so the suite is fast.
pub fn fast_settings() -> Settings {
    Settings {
        deadlines: Deadlines {
            connect: Duration::from_millis(800),
            first_frame: Duration::from_millis(800),
            idle: Duration::from_millis(1200),
            turn: Duration::from_secs(5),
            heartbeat: Duration::from_millis(500),
            first_flush: Duration::from_millis(300),
            after_final: Duration::from_millis(150),
        },
        limits: StreamLimits::default(),
        egress_strict: false,
    }
}
