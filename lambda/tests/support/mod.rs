//! Starting moto's DynamoDB through `infra/aws/local --dynamodb-only`, and a store on it.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use runway_lambda::DynamoStore;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A moto server process group, stopped on drop.
pub struct Moto {
    child: Child,
    pub endpoint: String,
}

impl Drop for Moto {
    /// Stops the script's process group with SIGTERM and waits (up to 10 s) for the script,
    /// which stops its own children first.
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
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
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Starts moto with table `table` (created by the script).
pub async fn moto(table: &str) -> Moto {
    let mut cmd = Command::new(repo_root().join("infra/aws/local"));
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
        panic!("infra/aws/local exited without printing dynamodb_endpoint");
    })
    .await
    .expect("moto ready in time");
    Moto { child, endpoint }
}

/// One SDK request as the client saw it: operation and when it was in flight.
#[derive(Debug, Clone)]
pub struct Sent {
    pub target: String,
    pub start: Instant,
    pub end: Option<Instant>,
}

/// Records every request attempt the SDK transmits.
#[derive(Debug, Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<Sent>>>);

impl Recorder {
    pub fn take(&self) -> Vec<Sent> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl Intercept for Recorder {
    fn name(&self) -> &'static str {
        "Recorder"
    }

    fn read_before_transmit(
        &self,
        ctx: &BeforeTransmitInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.lock().unwrap().push(Sent {
            target: ctx
                .request()
                .headers()
                .get("x-amz-target")
                .map(|t| t.rsplit('.').next().unwrap_or(t).to_owned())
                .unwrap_or_default(),
            start: Instant::now(),
            end: None,
        });
        Ok(())
    }

    fn read_after_transmit(
        &self,
        ctx: &BeforeDeserializationInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let _ = ctx;
        let mut v = self.0.lock().unwrap();
        let now = Instant::now();
        // The oldest request still in flight (answers of concurrent requests may arrive in any
        // order, but only overlap matters to the tests).
        if let Some(s) = v.iter_mut().find(|s| s.end.is_none()) {
            s.end = Some(now);
        }
        Ok(())
    }
}

/// A store on `endpoint`/`table` whose requests are recorded.
pub async fn store(endpoint: &str, table: &str) -> (DynamoStore, Recorder) {
    let sdk = runway_lambda::sdk_config(|_| None).await;
    let rec = Recorder::default();
    let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "local", "local", None, None, "tests",
        ))
        .interceptor(rec.clone())
        .build();
    (
        DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(conf), table),
        rec,
    )
}

/// A plain client on `endpoint`, to read items as they are stored.
pub async fn raw_client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    let sdk = runway_lambda::sdk_config(|_| None).await;
    let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "local", "local", None, None, "tests",
        ))
        .build();
    aws_sdk_dynamodb::Client::from_conf(conf)
}

/// An HTTP proxy in front of moto that answers late the first time it sees a request: it
/// forwards the request at once (moto applies it) and holds the answer for `delay`, so an SDK
/// whose attempt timeout is shorter gives up and sends the same request again, which is
/// answered at once. The failure DynamoDB shows under load: a write applied, its answer lost.
pub struct LateAnswers {
    pub endpoint: String,
    /// Requests seen more than once (the SDK's retries), by operation.
    pub repeated: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LateAnswers {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LateAnswers {
    /// Starts the proxy on loopback in front of `upstream`.
    pub async fn start(upstream: &str, delay: Duration) -> Self {
        use std::collections::HashSet;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let upstream = upstream.to_owned();
        let seen: Arc<Mutex<HashSet<Vec<u8>>>> = Arc::default();
        let repeated: Arc<Mutex<Vec<String>>> = Arc::default();
        let client = reqwest::Client::new();
        let task = {
            let repeated = Arc::clone(&repeated);
            tokio::spawn(async move {
                loop {
                    let Ok((mut conn, _)) = listener.accept().await else {
                        return;
                    };
                    let (upstream, seen, repeated, client) = (
                        upstream.clone(),
                        Arc::clone(&seen),
                        Arc::clone(&repeated),
                        client.clone(),
                    );
                    tokio::spawn(async move {
                        // One request per connection (answered with `Connection: close`).
                        let mut buf = Vec::new();
                        let mut chunk = [0u8; 8192];
                        let (head_len, body_len) = loop {
                            let n = conn.read(&mut chunk).await.unwrap_or(0);
                            if n == 0 {
                                return;
                            }
                            buf.extend_from_slice(&chunk[..n]);
                            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                let head = String::from_utf8_lossy(&buf[..i]).to_lowercase();
                                let len = head
                                    .lines()
                                    .find_map(|l| l.strip_prefix("content-length:"))
                                    .and_then(|v| v.trim().parse::<usize>().ok())
                                    .unwrap_or(0);
                                break (i + 4, len);
                            }
                        };
                        while buf.len() < head_len + body_len {
                            let n = conn.read(&mut chunk).await.unwrap_or(0);
                            if n == 0 {
                                return;
                            }
                            buf.extend_from_slice(&chunk[..n]);
                        }
                        let head = String::from_utf8_lossy(&buf[..head_len]).to_string();
                        let body = buf[head_len..head_len + body_len].to_vec();
                        let target = head
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("x-amz-target").then(|| v.trim())
                            })
                            .unwrap_or_default()
                            .to_owned();
                        let first = seen.lock().unwrap().insert(body.clone());
                        if !first {
                            let op = target.rsplit('.').next().unwrap_or_default().to_owned();
                            repeated.lock().unwrap().push(op);
                        }
                        // Every header but the connection's own (moto picks the service
                        // from the signature's credential scope).
                        let mut forward = client.post(&upstream);
                        for line in head.lines().skip(1) {
                            if let Some((k, v)) = line.split_once(':') {
                                let k = k.trim().to_ascii_lowercase();
                                if !["host", "content-length", "connection", ""]
                                    .contains(&k.as_str())
                                {
                                    forward = forward.header(k, v.trim());
                                }
                            }
                        }
                        let answer = forward.body(body).send().await.unwrap();
                        let status = answer.status();
                        let bytes = answer.bytes().await.unwrap();
                        if first {
                            tokio::time::sleep(delay).await;
                        }
                        let reply = format!(
                            "HTTP/1.1 {} {}\r\ncontent-type: application/x-amz-json-1.0\r\n\
                             content-length: {}\r\nconnection: close\r\n\r\n",
                            status.as_u16(),
                            status.canonical_reason().unwrap_or(""),
                            bytes.len()
                        );
                        let _ = conn.write_all(reply.as_bytes()).await;
                        let _ = conn.write_all(&bytes).await;
                        let _ = conn.shutdown().await;
                    });
                }
            })
        };
        LateAnswers {
            endpoint,
            repeated,
            task,
        }
    }
}

/// A store on `endpoint`/`table` whose SDK gives up on an attempt after `attempt_timeout`
/// (and retries, as configured for Lambda).
pub async fn store_with_attempt_timeout(
    endpoint: &str,
    table: &str,
    attempt_timeout: Duration,
) -> DynamoStore {
    let sdk = runway_lambda::sdk_config(|_| None).await;
    let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "local", "local", None, None, "tests",
        ))
        .timeout_config(
            aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
                .operation_attempt_timeout(attempt_timeout)
                .operation_timeout(Duration::from_secs(20))
                .build(),
        )
        .build();
    DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(conf), table)
}
