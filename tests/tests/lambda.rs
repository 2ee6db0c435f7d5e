//! The end-to-end suite against runway's AWS Lambda adapter: the real `bootstrap` under
//! cargo-lambda's emulator (`cargo lambda watch`), with moto's DynamoDB server behind a small
//! proxy in this test that counts every DynamoDB request and injects faults. Everything is
//! started by `infra/aws/local`; "restart" restarts only the function (moto keeps the data).
//!
//! Ignored by a plain `cargo test`: it needs Python, moto and cargo-lambda (installed on first
//! use by `infra/aws/local`). `scripts/test-aws.sh` runs it with `--ignored`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use runway_e2e::client::{fresh_id, run_body};
use runway_e2e::{AgentProcess, Client, TARGET_ENV, Target, run_suite, target_auth};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};

fn local_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/aws/local")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

// ---------------------------------------------------------------------------------------------
// moto, started by `infra/aws/local --dynamodb-only`

struct Moto {
    child: Child,
    endpoint: String,
}

impl Moto {
    async fn start(table: &str) -> Self {
        let mut cmd = Command::new(local_script());
        cmd.args(["--dynamodb-only", "--table", table])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .stdin(Stdio::null())
            .process_group(0);
        let mut child = cmd.spawn().expect("infra/aws/local starts");
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let endpoint = tokio::time::timeout(Duration::from_secs(600), async {
            while let Some(line) = lines.next_line().await.expect("stdout") {
                if let Some(e) = line.strip_prefix("dynamodb_endpoint:") {
                    return e.trim().to_owned();
                }
            }
            panic!("infra/aws/local --dynamodb-only exited without its endpoint");
        })
        .await
        .expect("moto ready in time");
        Self { child, endpoint }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let Some(pid) = self.child.id() else { return };
        let _ = std::process::Command::new("bash")
            .args(["-c", &format!("kill -TERM -- -{pid}")])
            .status();
        for _ in 0..100 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = std::process::Command::new("bash")
            .args(["-c", &format!("kill -KILL -- -{pid}")])
            .status();
    }
}

// ---------------------------------------------------------------------------------------------
// A counting, fault-injecting HTTP/1.1 proxy in front of moto

/// What the proxy does to DynamoDB requests.
#[derive(Debug, Clone, PartialEq)]
enum Fault {
    /// Forward everything.
    None,
    /// Close every connection without answering: DynamoDB is unreachable.
    Down,
    /// Answer `ThrottlingException` to the next `times` requests for `op`.
    Throttle { op: &'static str, times: u32 },
}

/// One request the function sent.
#[derive(Debug, Clone)]
struct Seen {
    op: String,
    start: Instant,
    end: Instant,
    faulted: bool,
    /// A usage write (its transaction puts a tally write marker), not a turn's commit.
    usage: bool,
}

struct ProxyState {
    upstream: String,
    fault: Mutex<Fault>,
    delay: Mutex<Duration>,
    log: Mutex<Vec<Seen>>,
}

#[derive(Clone)]
struct Proxy {
    addr: SocketAddr,
    state: Arc<ProxyState>,
}

impl Proxy {
    async fn start(upstream: &str) -> Self {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let state = Arc::new(ProxyState {
            upstream,
            fault: Mutex::new(Fault::None),
            delay: Mutex::new(Duration::ZERO),
            log: Mutex::new(Vec::new()),
        });
        let s = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let s = Arc::clone(&s);
                tokio::spawn(async move {
                    let _ = serve(s, conn).await;
                });
            }
        });
        Self { addr, state }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn set_fault(&self, f: Fault) {
        *self.state.fault.lock().unwrap() = f;
    }

    fn set_delay(&self, d: Duration) {
        *self.state.delay.lock().unwrap() = d;
    }

    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.state.log.lock().unwrap())
    }
}

fn find(h: &[u8], needle: &[u8]) -> Option<usize> {
    h.windows(needle.len()).position(|w| w == needle)
}

/// The head with hop-by-hop connection headers replaced by `Connection: close`.
fn close_head(head: &str) -> String {
    let mut out = String::new();
    for line in head.trim_end_matches("\r\n").split("\r\n") {
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("connection:") || lower.starts_with("keep-alive:") {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    out
}

/// Serves one client connection: one request, one answer, then close (every answer says
/// `Connection: close`, so the client never reuses a connection the proxy closed).
async fn serve(state: Arc<ProxyState>, mut client: TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i + 4;
        }
        if state.fault.lock().unwrap().clone() == Fault::Down {
            return Ok(());
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let header = |name: &str| {
        head.split("\r\n").find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    };
    let len: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let op = header("x-amz-target")
        .map(|t| t.rsplit('.').next().unwrap_or(&t).to_owned())
        .unwrap_or_default();
    let usage = find(&buf[head_end..head_end + len], b"tallyw#").is_some();
    let start = Instant::now();
    let fault = {
        let mut f = state.fault.lock().unwrap();
        match &mut *f {
            Fault::Down => Fault::Down,
            Fault::Throttle { op: o, times } if *o == op && *times > 0 => {
                *times -= 1;
                Fault::Throttle { op: o, times: 1 }
            }
            _ => Fault::None,
        }
    };
    let record = |faulted: bool| {
        state.log.lock().unwrap().push(Seen {
            op: op.clone(),
            start,
            end: Instant::now(),
            faulted,
            usage,
        });
    };
    match fault {
        Fault::Down => {
            record(true);
            Ok(())
        }
        Fault::Throttle { .. } => {
            let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#;
            let resp = format!(
                "HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.0\r\nx-amzn-RequestId: proxy\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            client.write_all(resp.as_bytes()).await?;
            record(true);
            Ok(())
        }
        Fault::None => {
            let delay = *state.delay.lock().unwrap();
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let mut up = TcpStream::connect(&state.upstream).await?;
            up.write_all(close_head(&head).as_bytes()).await?;
            up.write_all(&buf[head_end..head_end + len]).await?;
            let mut resp = Vec::new();
            up.read_to_end(&mut resp).await?;
            let Some(i) = find(&resp, b"\r\n\r\n") else {
                return Ok(());
            };
            let resp_head = close_head(&String::from_utf8_lossy(&resp[..i + 4]));
            client.write_all(resp_head.as_bytes()).await?;
            client.write_all(&resp[i + 4..]).await?;
            client.flush().await?;
            record(false);
            Ok(())
        }
    }
}

/// Length of the longest chain of requests each sent after the previous one was answered.
fn sequential_depth(seen: &[&Seen]) -> usize {
    let mut depth = vec![1usize; seen.len()];
    for i in 0..seen.len() {
        for j in 0..i {
            if seen[j].end <= seen[i].start {
                depth[i] = depth[i].max(depth[j] + 1);
            }
        }
    }
    depth.into_iter().max().unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// The function under cargo-lambda, against the proxy

struct LambdaStack {
    // Field order is drop order: the function first, then the proxy's DynamoDB.
    function: Option<AgentProcess>,
    proxy: Proxy,
    _moto: Moto,
    table: String,
    port: u16,
    concurrency: u32,
    base_url: String,
}

impl LambdaStack {
    async fn start(table: &str, concurrency: u32) -> Self {
        let moto = Moto::start(table).await;
        let proxy = Proxy::start(&moto.endpoint).await;
        let mut s = Self {
            function: None,
            proxy,
            _moto: moto,
            table: table.to_owned(),
            port: free_port(),
            concurrency,
            base_url: String::new(),
        };
        s.spawn().await;
        s
    }

    async fn spawn(&mut self) {
        let mut cmd = Command::new(local_script());
        cmd.arg("--port")
            .arg(self.port.to_string())
            .arg("--dynamodb-endpoint")
            .arg(self.proxy.endpoint())
            .arg("--table")
            .arg(&self.table)
            .arg("--concurrency")
            .arg(self.concurrency.to_string())
            .envs(TARGET_ENV)
            .env("RUNWAY_WORKERS", runway_e2e::PILOT_WORKERS)
            .env("RUNWAY_LOG", "warn");
        // The first start may install the tools and compile the function.
        let p = AgentProcess::start(cmd, Duration::from_secs(900)).await;
        self.base_url = p.base_url().to_owned();
        self.function = Some(p);
    }

    async fn stop(&mut self) {
        if let Some(p) = self.function.take() {
            p.stop().await;
        }
    }

    fn client(&self) -> Client {
        Client::new(&self.base_url, target_auth())
    }
}

impl Target for LambdaStack {
    fn base_url(&self) -> String {
        self.base_url.clone()
    }

    fn auth_headers(&self) -> Vec<(String, String)> {
        target_auth()
    }

    /// Lambda keeps running a streaming invocation after the client leaves.
    fn supports_disconnect(&self) -> bool {
        false
    }

    /// Restarts only the function: moto (and so every thread) keeps running.
    async fn restart(&mut self) {
        self.stop().await;
        self.spawn().await;
    }

    /// moto is served one request at a time (its threaded server let two conditional writes
    /// both win), so 100 turns' store calls queue past the engine's 8 s store timeout and end
    /// as STORE_UNAVAILABLE: 20 turns still check "exactly 10 of a burst run" across the
    /// function's instances.
    fn burst_turns(&self) -> usize {
        20
    }

    /// The turns of a burst on one thread commit one after another, each a few requests to
    /// the one-request-at-a-time moto: on a loaded machine 50 of them passed the 8-second turn
    /// deadline (real DynamoDB answers in parallel). 20 still race six instances' commits on
    /// one thread.
    fn thread_burst_turns(&self) -> usize {
        20
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto and cargo-lambda: run by scripts/test-aws.sh"]
async fn lambda_passes_the_suite() {
    // Several function instances, like Lambda scaling out: concurrent duplicates meet in
    // DynamoDB. More than two because cargo-lambda's emulator keeps an instance busy after its
    // client hangs up mid-stream (runway check's Test turn stops at the first frame, as
    // Console's does), where real Lambda finishes the invocation and scales out.
    let mut stack = LambdaStack::start("suite", 6).await;
    run_suite(&mut stack).await;
    // And `runway check` (Console's onboarding checklist) against the same function.
    let args: Vec<std::ffi::OsString> = [
        stack.base_url.as_str(),
        "--header",
        "X-API-Key: test-key",
        "--header",
        "X-Tenant: acme",
        "--slow-prompt",
        "/slow 3",
        "--strict",
        "--agent-id",
        runway_e2e::client::AGENT_ID,
    ]
    .iter()
    .map(Into::into)
    .collect();
    let mut report = Vec::new();
    let code = runway_conformance::cli_main_with_output(args, &mut report).await;
    let report = String::from_utf8_lossy(&report);
    println!("{report}");
    stack.stop().await;
    assert_eq!(
        code, 0,
        "runway check failed against the Lambda adapter:\n{report}"
    );
}

fn ops(seen: &[Seen]) -> Vec<&str> {
    let mut v: Vec<&str> = seen.iter().map(|s| s.op.as_str()).collect();
    v.sort_unstable();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto and cargo-lambda: run by scripts/test-aws.sh"]
async fn lambda_store_budget_and_faults() {
    // One instance, so /health is answered by the instance that saw the store errors.
    let mut stack = LambdaStack::start("faults", 1).await;
    let c = stack.client();
    let proxy = stack.proxy.clone();
    let mut failures: Vec<String> = Vec::new();
    let mut check = |name: &str, r: Result<(), String>| match r {
        Ok(()) => eprintln!("[lambda] pass  {name}"),
        Err(e) => {
            eprintln!("[lambda] FAIL  {name}: {e}");
            failures.push(format!("- {name}: {e}"));
        }
    };

    // Budget: every ordinary turn of a growing thread costs at most 4 requests: the claim,
    // then (only once it is won) the arrival count and the thread read in one round trip,
    // and the commit (each request delayed so overlap is unambiguous); plus, after the final
    // frame, one TransactWriteItems adding the turn to its usage row (workspace × worker ×
    // day) with its write marker, so a retried write counts once.
    let thread = fresh_id();
    let mut r = Ok(());
    proxy.set_delay(Duration::from_millis(150));
    for i in 0..8 {
        proxy.take();
        let t = c
            .turn(&run_body(
                &fresh_id(),
                &thread,
                &format!("message {i} {}", "x".repeat(2000)),
            ))
            .await;
        let seen = proxy.take();
        if t.last()["type"] != "RUN_FINISHED" {
            r = Err(format!("turn {i} ended with {}", t.last()));
            break;
        }
        if seen.len() > 5
            || ops(&seen)
                != [
                    "PutItem",
                    "Query",
                    "TransactWriteItems",
                    "TransactWriteItems",
                    "UpdateItem",
                ]
        {
            r = Err(format!(
                "turn {i}: {} requests {:?}",
                seen.len(),
                ops(&seen)
            ));
            break;
        }
        // Before the agent: what starts before the commit (the usage write follows it).
        let commit_start = seen
            .iter()
            .find(|s| s.op == "TransactWriteItems")
            .map(|s| s.start);
        let before: Vec<&Seen> = seen
            .iter()
            .filter(|s| s.op != "TransactWriteItems" && commit_start.is_none_or(|c| s.start < c))
            .collect();
        let depth = sequential_depth(&before);
        if depth > 2 {
            r = Err(format!(
                "turn {i}: {depth} sequential round trips before the agent"
            ));
            break;
        }
        eprintln!(
            "[lambda]       turn {i}: {:?}, {depth} round trip(s) before the agent",
            ops(&seen)
        );
    }
    check(
        "≤ 4 requests per turn and 1 usage write, ≤ 2 round trips before the agent",
        r,
    );

    // The first frame leaves before any DynamoDB answer.
    proxy.set_delay(Duration::from_millis(1500));
    let t = c.turn(&run_body(&fresh_id(), &fresh_id(), "Hello")).await;
    let ttfb = t.first_frame.unwrap_or_default();
    check(
        "first frame before the store answers",
        if t.frames
            .first()
            .is_some_and(|f| f["type"] == "STEP_STARTED")
            && ttfb < Duration::from_millis(1500)
            && t.last()["type"] == "RUN_FINISHED"
        {
            Ok(())
        } else {
            Err(format!(
                "first frame after {ttfb:?}, frames {:?}",
                t.types()
            ))
        },
    );
    proxy.set_delay(Duration::ZERO);

    // /health is healthy and never calls DynamoDB.
    proxy.take();
    let (s, h) = c.health().await;
    check(
        "health is ok and touches no store",
        if s == 200 && h["status"] == "ok" && proxy.take().is_empty() {
            Ok(())
        } else {
            Err(format!("HTTP {s} {h}"))
        },
    );

    // Throttled twice on commit: the SDK backs off and retries, the turn succeeds.
    proxy.set_fault(Fault::Throttle {
        op: "TransactWriteItems",
        times: 2,
    });
    let t = c.turn(&run_body(&fresh_id(), &fresh_id(), "Hello")).await;
    let seen = proxy.take();
    let tx: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.op == "TransactWriteItems" && !s.usage)
        .collect();
    check(
        "transient throttling is retried with backoff",
        if t.last()["type"] == "RUN_FINISHED"
            && tx.len() == 3
            && tx[0].faulted
            && tx[1].faulted
            && !tx[2].faulted
            && tx[2].start > tx[1].end
        {
            Ok(())
        } else {
            Err(format!(
                "last {} after {} commit attempts",
                t.last(),
                tx.len()
            ))
        },
    );

    // Throttled mid-turn for good: the answer streamed, the commit cannot be saved, the turn
    // ends with RUN_ERROR (never a silent success) and /health says degraded.
    proxy.set_fault(Fault::Throttle {
        op: "TransactWriteItems",
        times: u32::MAX,
    });
    let started = Instant::now();
    let t = c.turn(&run_body(&fresh_id(), &fresh_id(), "Hello")).await;
    let took = started.elapsed();
    let seen = proxy.take();
    proxy.set_fault(Fault::None);
    let attempts = seen.iter().filter(|s| s.op == "TransactWriteItems").count();
    check(
        "throttled mid-turn ends with RUN_ERROR",
        if t.last()["type"] == "RUN_ERROR"
            && t.last()["code"] == "STORE_UNAVAILABLE"
            && t.text().contains("Hello")
            && attempts >= 2
            && !t.types().contains(&"RUN_FINISHED")
        {
            Ok(())
        } else {
            Err(format!(
                "last {} after {attempts} attempts in {took:?}; frames {:?}",
                t.last(),
                t.types()
            ))
        },
    );
    let (s, h) = c.health().await;
    check(
        "health degraded after store errors",
        if s == 200 && h["status"] == "degraded" {
            Ok(())
        } else {
            Err(format!("HTTP {s} {h}"))
        },
    );

    // DynamoDB unreachable: first frame, then RUN_ERROR, in bounded time.
    proxy.set_fault(Fault::Down);
    let started = Instant::now();
    let t = c.turn(&run_body(&fresh_id(), &fresh_id(), "Hello")).await;
    let took = started.elapsed();
    proxy.set_fault(Fault::None);
    proxy.take();
    check(
        "DynamoDB unreachable ends with RUN_ERROR",
        if t.frames
            .first()
            .is_some_and(|f| f["type"] == "STEP_STARTED")
            && t.last()["type"] == "RUN_ERROR"
            && t.last()["code"] == "STORE_UNAVAILABLE"
            && took < Duration::from_secs(15)
        {
            Ok(())
        } else {
            Err(format!("last {} after {took:?}", t.last()))
        },
    );
    let (s, h) = c.health().await;
    check(
        "health degraded while DynamoDB is unreachable",
        if s == 200 && h["status"] == "degraded" {
            Ok(())
        } else {
            Err(format!("HTTP {s} {h}"))
        },
    );

    // Back up: turns flow again (degraded still lets chat turns through).
    let thread = fresh_id();
    let a = c
        .turn(&run_body(&fresh_id(), &thread, "first-after-outage"))
        .await;
    let b = c.turn(&run_body(&fresh_id(), &thread, "second")).await;
    check(
        "turns recover after the outage",
        if a.last()["type"] == "RUN_FINISHED" && b.text().contains("first-after-outage") {
            Ok(())
        } else {
            Err(format!("{} / {:?}", a.last(), b.text()))
        },
    );

    stack.stop().await;
    assert!(
        failures.is_empty(),
        "{} Lambda store check(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Sends one JSON request of `target` (`AmazonSSM.PutParameter`, `DynamoDB_20120810.Scan`)
/// to moto, which checks no signature; its answer.
async fn moto_call(moto: &Moto, target: &str, body: serde_json::Value) -> serde_json::Value {
    let (service, json) = if target.starts_with("AmazonSSM") {
        ("ssm", "application/x-amz-json-1.1")
    } else {
        ("dynamodb", "application/x-amz-json-1.0")
    };
    let resp = reqwest::Client::new()
        .post(format!("{}/", moto.endpoint))
        .header("X-Amz-Target", target)
        .header("Content-Type", json)
        .header(
            "Authorization",
            format!(
                "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/{service}/aws4_request, \
                 SignedHeaders=host, Signature=0"
            ),
        )
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{target}: {e}"));
    let status = resp.status();
    let answer = resp.text().await.unwrap_or_default();
    assert!(status.is_success(), "{target}: {status} {answer}");
    serde_json::from_str(&answer).unwrap_or(serde_json::Value::Null)
}

/// The secrets a function reads from SSM at init: the auth header set
/// (`RUNWAY_AUTH_HEADERS_SSM_PARAMETER`), and a workers file's `${OPENAI_KEY}`
/// (`OPENAI_KEY_SSM_PARAMETER`), which its model worker sends to the model; that worker keeps a
/// downloaded attachment in the table, like the built-in model agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto and cargo-lambda: run by scripts/test-aws.sh"]
async fn lambda_reads_the_auth_header_set_and_workers_keys_from_ssm_at_init() {
    use runway_e2e::scripted_server::{PIXEL_PNG, Piece, Reply, ScriptedServer, chunk};
    const MODEL_KEY: &str = "sk-from-ssm-5e1d";
    const MODEL_WORKER: &str = "918273688800000777";
    // moto serves SSM on the same endpoint; the SDK's AWS_ENDPOINT_URL_SSM points there.
    let moto = Moto::start("ssm").await;
    for (name, value) in [
        (
            "/runway/auth-headers",
            "X-API-Key: from-ssm\nX-Tenant: acme",
        ),
        ("/runway/openai-key", MODEL_KEY),
    ] {
        moto_call(
            &moto,
            "AmazonSSM.PutParameter",
            serde_json::json!({"Name": name, "Type": "SecureString", "Value": value}),
        )
        .await;
    }
    let model = ScriptedServer::script(vec![Reply::sse(&[
        chunk::role(),
        chunk::text("A pixel."),
        chunk::finish("stop"),
    ])])
    .await;
    let files = ScriptedServer::start(|_| Reply {
        status: 200,
        headers: vec![("content-type".into(), "image/png".into())],
        pieces: vec![Piece::Bytes(PIXEL_PNG.to_vec())],
    })
    .await;
    let workers = format!(
        "[workers.\"{}\"]\nagent = \"demo\"\n\n[workers.\"{MODEL_WORKER}\"]\nagent = \"model\"\n\
         base_url = \"{}/v1\"\nmodel = \"test-model\"\napi_key = \"${{OPENAI_KEY}}\"\n",
        runway_e2e::client::AGENT_ID,
        model.base_url
    );
    let mut cmd = Command::new(local_script());
    cmd.args([
        "--dynamodb-endpoint",
        &moto.endpoint,
        "--table",
        "ssm",
        "--concurrency",
        "1",
    ])
    .envs(TARGET_ENV)
    .env("AWS_ENDPOINT_URL_SSM", &moto.endpoint)
    .env("RUNWAY_AUTH_HEADERS_SSM_PARAMETER", "/runway/auth-headers")
    .env("RUNWAY_WORKERS", &workers)
    .env("OPENAI_KEY_SSM_PARAMETER", "/runway/openai-key")
    .env("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK", "1")
    // Room for the download within the turn (the 8 s of TARGET_ENV leave none).
    .env("RUNWAY_TURN_DEADLINE_SECS", "30")
    .env("RUNWAY_LOG", "warn");
    let function = AgentProcess::start(cmd, Duration::from_secs(900)).await;
    let base = function.base_url().to_owned();
    let from_ssm = Client::new(
        &base,
        vec![
            ("X-API-Key".into(), "from-ssm".into()),
            ("X-Tenant".into(), "acme".into()),
        ],
    );
    let (s_ssm, _) = from_ssm.health().await;
    // TARGET_ENV's RUNWAY_AUTH_HEADERS is overridden by the parameter.
    let (s_env, _) = Client::new(&base, target_auth()).health().await;
    let t = from_ssm
        .turn(&run_body(&fresh_id(), &fresh_id(), "Hello"))
        .await;
    let mut body = run_body(&fresh_id(), &fresh_id(), "What is this?");
    body["agentId"] = MODEL_WORKER.into();
    body["attachments"] = serde_json::json!([{"id": "p", "url": format!("{}/pixel.png?sig=1", files.base_url),
        "name": "p.png", "mime": "image/png", "sizeBytes": PIXEL_PNG.len()}]);
    let m = from_ssm.turn(&body).await;
    function.stop().await;
    assert_eq!(s_ssm, 200, "/health with the SSM header set");
    assert_eq!(s_env, 401, "/health with the environment's header set");
    assert_eq!(
        t.last()["type"],
        "RUN_FINISHED",
        "a turn with the SSM header set"
    );
    assert_eq!(m.text(), "A pixel.", "{:?}", m.frames);
    let calls = model.requests();
    assert_eq!(
        calls[0].header("authorization"),
        Some(format!("Bearer {MODEL_KEY}").as_str()),
        "the key from SSM"
    );
    assert_eq!(files.requests().len(), 1);
    let kept = moto_call(
        &moto,
        "DynamoDB_20120810.Scan",
        serde_json::json!({"TableName": "ssm", "FilterExpression": "begins_with(pk, :a)",
            "ExpressionAttributeValues": {":a": {"S": "attachment#"}}}),
    )
    .await;
    assert_eq!(
        kept["Count"], 1,
        "the attachment is kept in the table: {kept}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto and cargo-lambda: run by scripts/test-aws.sh"]
async fn lambda_agents_read_a_streamed_http_body_incrementally() {
    // The agents' HTTP client (reqwest) in the real bootstrap: the built-in http-probe agent
    // relays a loopback server's body piece by piece.
    let mut server =
        runway_e2e::paced_server::PacedServer::start(runway_e2e::http_probe::probe_pieces()).await;
    let moto = Moto::start("http-probe").await;
    let mut cmd = Command::new(local_script());
    cmd.args([
        "--dynamodb-endpoint",
        &moto.endpoint,
        "--table",
        "http-probe",
        "--concurrency",
        "1",
    ])
    .envs(TARGET_ENV)
    .env("RUNWAY_AGENT", "http-probe")
    .env(
        "RUNWAY_HTTP_PROBE_URL",
        format!("{}/probe", server.base_url),
    )
    .env("RUNWAY_LOG", "warn");
    let function = AgentProcess::start(cmd, Duration::from_secs(900)).await;
    let checks = runway_e2e::http_probe::check_http_probe(function.base_url(), &mut server, false);
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(checks)).await;
    function.stop().await;
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}

/// Under cargo-lambda's emulator, the real `bootstrap` with an unusable auth header set fails
/// its init naming the setting, and `infra/aws/local` stops instead of serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto and cargo-lambda: run by scripts/test-aws.sh"]
async fn lambda_init_refuses_unusable_auth_settings() {
    for (label, value) in [
        ("empty", ""),
        ("blank", " \n "),
        ("no colon", "X-API-Key k"),
    ] {
        let mut cmd = Command::new(local_script());
        cmd.arg("--port")
            .arg(free_port().to_string())
            .envs(TARGET_ENV)
            .env("RUNWAY_AUTH_HEADERS", value)
            .env("RUNWAY_LOG", "warn")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        // The first start may install the tools and compile the function.
        let out = tokio::time::timeout(Duration::from_secs(900), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("{label}: infra/aws/local still running"))
            .expect("infra/aws/local runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{label}: it served:\n{stdout}\n{stderr}"
        );
        assert!(
            !stdout.contains("base_url"),
            "{label}: it served:\n{stdout}"
        );
        assert!(
            stderr.contains("RUNWAY_AUTH_HEADERS"),
            "{label}: the function's error does not name the setting:\n{stderr}"
        );
    }
}

/// The real `bootstrap` without the SSM parameter or `RUNWAY_AUTH_HEADERS` starts (so
/// `/health` answers) but refuses every turn with a 500 naming the parameter; with
/// `RUNWAY_ALLOW_UNAUTHENTICATED=1` it serves anyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto and cargo-lambda: run by scripts/test-aws.sh"]
async fn lambda_without_a_header_set_refuses_turns_unless_opted_out() {
    let moto = Moto::start("unconfigured").await;
    let start = |allow: bool| {
        let mut cmd = Command::new(local_script());
        cmd.args([
            "--dynamodb-endpoint",
            &moto.endpoint,
            "--table",
            "unconfigured",
            "--concurrency",
            "1",
        ])
        .envs(TARGET_ENV)
        .env_remove("RUNWAY_AUTH_HEADERS")
        .env_remove("RUNWAY_AUTH_HEADERS_SSM_PARAMETER")
        .env("RUNWAY_LOG", "warn");
        if allow {
            cmd.env("RUNWAY_ALLOW_UNAUTHENTICATED", "1");
        }
        AgentProcess::start(cmd, Duration::from_secs(900))
    };
    let function = start(false).await;
    let refused = runway_e2e::fail_closed::check_refuses_turns_without_auth(
        function.base_url(),
        "RUNWAY_AUTH_HEADERS_SSM_PARAMETER",
    )
    .await;
    function.stop().await;
    let function = start(true).await;
    let served = runway_e2e::fail_closed::check_serves_anyone(function.base_url()).await;
    function.stop().await;
    refused.expect("without a header set, turns are refused");
    served.expect("with RUNWAY_ALLOW_UNAUTHENTICATED=1, anyone is served");
}
