//! A small Console-like client: posts turns, reads the SSE stream as it arrives, and keeps
//! arrival times so first-frame latency and heartbeat gaps can be checked.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

/// The agent id the suite sends.
pub const AGENT_ID: &str = "918273688800000200";
/// The workspace id the suite sends.
pub const WORKSPACE_ID: &str = "918273600000000001";

/// A fresh 63-bit id as a decimal string, like Console's.
pub fn fresh_id() -> String {
    let mut raw = [0u8; 8];
    getrandom::fill(&mut raw).expect("entropy");
    (u64::from_le_bytes(raw) >> 1).to_string()
}

/// A `POST /runs` body.
pub fn run_body(run_id: &str, thread_id: &str, input: &str) -> Value {
    json!({
        "protocolVersion": "1",
        "runId": run_id,
        "threadId": thread_id,
        "agentId": AGENT_ID,
        "workspaceId": WORKSPACE_ID,
        "userId": "918273644400000042",
        "input": input,
    })
}

/// HTTP access to one target.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    auth: Vec<(String, String)>,
}

/// A finished (or abandoned) turn as it arrived.
#[derive(Debug, Default)]
pub struct TurnStream {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: reqwest::header::HeaderMap,
    /// Decoded `data:` frames in order.
    pub frames: Vec<Value>,
    /// Encoded size of each `data:` event (with `data: ` and the blank line).
    pub frame_sizes: Vec<usize>,
    /// Comment (heartbeat) lines.
    pub comments: usize,
    /// Arrival time of every event, frames and comments, from the request start.
    pub arrivals: Vec<Duration>,
    /// Arrival of the first frame.
    pub first_frame: Option<Duration>,
    /// Arrival of each frame in `frames`, from the request start.
    pub frame_arrivals: Vec<Duration>,
    /// All bytes received.
    pub total_bytes: usize,
    /// The raw body when the response was not a stream.
    pub body: String,
}

impl TurnStream {
    /// Frame types in order.
    pub fn types(&self) -> Vec<&str> {
        self.frames
            .iter()
            .map(|f| f["type"].as_str().unwrap_or(""))
            .collect()
    }

    /// All `TEXT_MESSAGE_CONTENT` deltas joined.
    pub fn text(&self) -> String {
        self.frames
            .iter()
            .filter(|f| f["type"] == "TEXT_MESSAGE_CONTENT")
            .filter_map(|f| f["delta"].as_str())
            .collect()
    }

    /// The last frame.
    pub fn last(&self) -> Value {
        self.frames.last().cloned().unwrap_or(Value::Null)
    }

    /// The longest wait between two consecutive events (or from the start to the first).
    pub fn longest_silence(&self) -> Duration {
        let mut prev = Duration::ZERO;
        let mut longest = Duration::ZERO;
        for a in &self.arrivals {
            longest = longest.max(a.saturating_sub(prev));
            prev = *a;
        }
        longest
    }
}

impl Client {
    /// A client for `base` sending `auth` on every request.
    pub fn new(base: &str, auth: Vec<(String, String)>) -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("http client"),
            base: base.trim_end_matches('/').to_owned(),
            auth,
        }
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The same target with other headers.
    pub fn with_auth(&self, auth: Vec<(String, String)>) -> Self {
        Self {
            auth,
            ..self.clone()
        }
    }

    /// The same target, also sending `extra` on every request.
    pub fn with_extra_headers(&self, extra: &[(&str, &str)]) -> Self {
        let mut auth = self.auth.clone();
        auth.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        self.with_auth(auth)
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut r = self.http.request(method, format!("{}{path}", self.base));
        for (k, v) in &self.auth {
            r = r.header(k, v);
        }
        r
    }

    /// `GET /health`: status and body.
    pub async fn health(&self) -> (u16, Value) {
        let r = self
            .request(reqwest::Method::GET, "/health")
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .expect("GET /health");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Any request with a raw body: status and JSON body.
    pub async fn raw(&self, method: reqwest::Method, path: &str, body: Vec<u8>) -> (u16, Value) {
        let r = self
            .request(method, path)
            .header("content-type", "application/json")
            .body(body)
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .expect("request");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// `GET {base}{path}` with the auth headers: status, content type and text.
    pub async fn get_with_auth(&self, path: &str) -> (u16, String, String) {
        text_of(self.request(reqwest::Method::GET, path)).await
    }

    /// `GET` an absolute URL with no headers at all (as a browser opening a link).
    pub async fn get_plain(&self, url: &str) -> (u16, String, String) {
        text_of(self.http.get(url)).await
    }

    /// Posts a turn over a raw TCP connection, waits for the first frame, then closes the
    /// socket (what Console does when the user presses Stop). Returns the first bytes read.
    pub async fn turn_then_hang_up(&self, body: &Value) -> String {
        self.turn_then_hang_up_after(body, "data: ").await
    }

    /// [`Client::turn_then_hang_up`] once the bytes read contain `marker` (a frame type, say:
    /// the user pressed Stop while the answer streamed).
    pub async fn turn_then_hang_up_after(&self, body: &Value, marker: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let url = reqwest::Url::parse(&self.base).expect("base url");
        let host = url.host_str().expect("host");
        let port = url.port_or_known_default().expect("port");
        let mut sock = tokio::net::TcpStream::connect((host, port))
            .await
            .expect("connect");
        let body = body.to_string();
        let mut req = format!(
            "POST {}/runs HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
            url.path().trim_end_matches('/'),
            body.len()
        );
        for (k, v) in &self.auth {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(&body);
        sock.write_all(req.as_bytes()).await.expect("write");
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let read = async {
            while !String::from_utf8_lossy(&got).contains(marker) {
                let n = sock.read(&mut buf).await.expect("read");
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(10), read).await;
        drop(sock);
        String::from_utf8_lossy(&got).into_owned()
    }

    /// Posts a turn and reads the whole stream (bounded by 60 s).
    pub async fn turn(&self, body: &Value) -> TurnStream {
        self.turn_until(body, usize::MAX).await
    }

    /// Posts a turn and stops reading after `max_frames` frames, dropping the connection.
    pub async fn turn_until(&self, body: &Value, max_frames: usize) -> TurnStream {
        let start = Instant::now();
        let r = self
            .request(reqwest::Method::POST, "/runs")
            .header("content-type", "application/json")
            .body(body.to_string())
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .expect("POST /runs");
        let mut t = TurnStream {
            status: r.status().as_u16(),
            headers: r.headers().clone(),
            ..TurnStream::default()
        };
        let is_stream = t
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_stream {
            t.body = r.text().await.unwrap_or_default();
            return t;
        }
        let mut stream = r.bytes_stream();
        let mut buf = String::new();
        while let Some(chunk) = stream.next().await {
            let Ok(chunk) = chunk else { break };
            t.total_bytes += chunk.len();
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let event: String = buf.drain(..end + 2).collect();
                let at = start.elapsed();
                for line in event.lines() {
                    if let Some(data) = line.strip_prefix("data:") {
                        let frame: Value =
                            serde_json::from_str(data.trim_start()).unwrap_or(Value::Null);
                        t.frames.push(frame);
                        t.frame_arrivals.push(at);
                        t.frame_sizes.push(event.len());
                        t.first_frame.get_or_insert(at);
                        t.arrivals.push(at);
                    } else if line.starts_with(':') {
                        t.comments += 1;
                        t.arrivals.push(at);
                    }
                }
                if t.frames.len() >= max_frames {
                    return t;
                }
            }
        }
        t
    }
}

/// Sends `request` (10 s at most): status, content type and text.
async fn text_of(request: reqwest::RequestBuilder) -> (u16, String, String) {
    let r = request
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("GET");
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    (status, ct, r.text().await.unwrap_or_default())
}
