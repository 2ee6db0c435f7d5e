//! Lowkey's external turn protocol v1 against the real `runway serve`, over loopback HTTP.
//!
//! Every event received is validated against `infra/lowkey/schema`, and every request fixture
//! kept there is sent.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

fn lowkey_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/lowkey")
}

fn schema() -> Value {
    let text =
        std::fs::read_to_string(lowkey_dir().join("schema/external-turn-protocol.schema.json"))
            .expect("schema readable");
    serde_json::from_str(&text).expect("schema is JSON")
}

fn event_validator() -> jsonschema::Validator {
    let root = schema();
    jsonschema::draft202012::new(&json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": root["$defs"],
        "$ref": "#/$defs/ExternalAgentTurnEvent",
    }))
    .expect("event schema compiles")
}

fn fixtures(kind: &str) -> BTreeMap<String, Value> {
    let dir = lowkey_dir().join("fixtures/requests").join(kind);
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("fixtures dir") {
        let path = entry.expect("entry").path();
        let name = path
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        if name != "errors" {
            let text = std::fs::read_to_string(&path).expect("fixture readable");
            out.insert(name, serde_json::from_str(&text).expect("fixture is JSON"));
        }
    }
    out
}

/// A `runway serve` child on 127.0.0.1:0 with its own data directory.
struct Server {
    child: Child,
    base: String,
    dir: PathBuf,
}

impl Server {
    async fn start(label: &str, env: &[(&str, &str)]) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "runway-lowkey-{label}-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_runway"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&dir)
            .env_remove("RUNWAY_AUTH_HEADERS")
            .env_remove("RUNWAY_PUBLIC_URL")
            .env("RUNWAY_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("runway starts");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let base = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.expect("stdout readable") {
                if let Some(url) = line.trim().strip_prefix("base_url:") {
                    return url.trim().trim_end_matches('/').to_owned();
                }
            }
            panic!("runway exited without printing base_url");
        })
        .await
        .expect("base_url printed in time");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self { child, base, dir }
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One Lowkey turn as it arrived.
struct Ndjson {
    status: u16,
    content_type: String,
    /// Non-stream body (4xx).
    body: String,
    events: Vec<Value>,
    arrivals: Vec<Duration>,
}

impl Ndjson {
    fn kinds(&self) -> Vec<String> {
        self.events
            .iter()
            .map(|e| match e["status"].as_str() {
                Some(s) => format!("status:{s}"),
                None => e["type"].as_str().unwrap_or("?").to_owned(),
            })
            .collect()
    }

    fn text(&self) -> String {
        self.events
            .iter()
            .filter(|e| e["type"] == "text")
            .filter_map(|e| e["content"].as_str())
            .collect()
    }

    /// Exactly one terminal event, last.
    fn assert_well_formed(&self) {
        assert_eq!(self.status, 200, "{}", self.body);
        assert_eq!(self.content_type, "application/x-ndjson");
        let k = self.kinds();
        assert_eq!(
            k.first().map(String::as_str),
            Some("status:started"),
            "{k:?}"
        );
        let terminal: Vec<usize> = k
            .iter()
            .enumerate()
            .filter(|(_, k)| *k == "status:complete" || *k == "error")
            .map(|(i, _)| i)
            .collect();
        assert_eq!(terminal, [k.len() - 1], "one terminal event, last: {k:?}");
    }
}

struct Lowkey {
    http: reqwest::Client,
    url: String,
    headers: Vec<(String, String)>,
    validator: jsonschema::Validator,
}

impl Lowkey {
    fn new(base: &str, headers: &[(&str, &str)]) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: format!("{base}/lowkey/turn"),
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            validator: event_validator(),
        }
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .timeout(Duration::from_secs(60));
        for (k, v) in &self.headers {
            r = r.header(k, v);
        }
        r
    }

    /// Posts a turn and reads events as they arrive, validating each against the schema.
    /// Stops after `max_events` events (the rest of the stream is dropped: a hang-up).
    async fn turn_until(&self, body: &Value, max_events: usize) -> Ndjson {
        let t0 = Instant::now();
        let resp = self.post(body).send().await.expect("request sent");
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let mut out = Ndjson {
            status,
            content_type,
            body: String::new(),
            events: Vec::new(),
            arrivals: Vec::new(),
        };
        if status != 200 {
            out.body = resp.text().await.unwrap_or_default();
            return out;
        }
        let mut stream = resp.bytes_stream();
        let mut buf = Vec::new();
        'read: while let Some(chunk) = stream.next().await {
            buf.extend_from_slice(&chunk.expect("body readable"));
            while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=nl).collect();
                let line = std::str::from_utf8(&line[..nl]).expect("UTF-8 line");
                let event: Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("line is not one JSON object: {line:?}: {e}"));
                let errors: Vec<String> = self
                    .validator
                    .iter_errors(&event)
                    .map(|e| e.to_string())
                    .collect();
                assert!(errors.is_empty(), "{line} breaks the schema: {errors:?}");
                assert_eq!(event["protocolVersion"], 1, "{line}");
                out.arrivals.push(t0.elapsed());
                out.events.push(event);
                if out.events.len() >= max_events {
                    break 'read;
                }
            }
        }
        assert!(
            buf.is_empty() || out.events.len() >= max_events,
            "unterminated last line: {:?}",
            String::from_utf8_lossy(&buf)
        );
        out
    }

    async fn turn(&self, body: &Value) -> Ndjson {
        let t = self.turn_until(body, usize::MAX).await;
        t.assert_well_formed();
        t
    }
}

/// Posts a turn over a raw TCP connection, reads until `status: started`, then closes the
/// socket 300 ms later (Lowkey abandoning the turn). Returns the bytes read.
async fn hang_up_after_started(base: &str, body: &Value) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.strip_prefix("http://").expect("http base");
    let mut sock = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let body = body.to_string();
    let req = format!(
        "POST /lowkey/turn HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    sock.write_all(req.as_bytes()).await.expect("write");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        while !String::from_utf8_lossy(&got).contains("\"started\"") {
            let n = sock.read(&mut buf).await.expect("read");
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), read).await;
    // Leave once the agent is running (a hang-up before the store answered is another case).
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(sock);
    String::from_utf8_lossy(&got).into_owned()
}

fn request(session: &str, turn_id: &str, message: &str) -> Value {
    json!({
        "protocolVersion": 1,
        "pluginId": "runway",
        "sessionHandle": {
            "id": session,
            "projectPath": "/abs/project",
            "sessionId": format!("s-{session}"),
            "agentId": "runway-demo"
        },
        "turn": {"turnId": turn_id, "message": message, "headless": false, "userName": "alvin"},
        "transcriptWindow": [],
        "limits": {"transcriptWindowMessages": 40}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lowkey_turns_over_loopback() {
    let server = Server::start("open", &[("RUNWAY_HEARTBEAT_SECS", "1")]).await;
    let lk = Lowkey::new(&server.base, &[]);

    // `started` at once, text as produced, `complete`.
    let t = lk.turn(&request("sess-slow", "t1", "/slow 2")).await;
    assert_eq!(t.kinds().first().unwrap(), "status:started");
    let started = t.arrivals[0];
    let text_at = t.arrivals[t.kinds().iter().position(|k| k == "text").unwrap()];
    eprintln!("[lowkey] started after {started:?}, text after {text_at:?}");
    assert!(
        started < Duration::from_millis(500),
        "started after {started:?}"
    );
    assert!(text_at >= Duration::from_secs(2), "text after {text_at:?}");
    assert!(
        t.kinds().iter().filter(|k| *k == "status:working").count() >= 1,
        "keep-alive while silent: {:?}",
        t.kinds()
    );
    assert_eq!(t.text(), "Done waiting 2 seconds.");

    // Fastest path, measured a few times.
    let mut firsts = Vec::new();
    for i in 0..5 {
        let t = lk
            .turn(&request("sess-timing", &format!("t{i}"), "hi"))
            .await;
        firsts.push(t.arrivals[0]);
    }
    firsts.sort();
    eprintln!("[lowkey] time to started over 5 turns: {firsts:?}");
    assert!(firsts[2] < Duration::from_millis(200), "{firsts:?}");

    // A second turn on the same sessionHandle.id sees the first.
    let t = lk.turn(&request("sess-AB", "t1", "A")).await;
    assert_eq!(
        t.text(),
        "You said \"A\". This is the first thing you said in this conversation."
    );
    let t = lk.turn(&request("sess-AB", "t2", "B")).await;
    assert_eq!(t.text(), "You said \"B\". Before that you said \"A\".");
    assert_eq!(t.kinds().last().unwrap(), "status:complete");

    // transcriptWindow seeds a session runway does not know.
    let mut seeded = request("sess-expired", "t7", "B");
    seeded["transcriptWindow"] = json!([
        {"role": "user", "content": "A", "timestamp": 1_719_000_000_000_u64, "turnId": "t6"},
        {"role": "agent", "content": "You said \"A\".", "agentId": "runway-demo", "turnId": "t6"},
        {"role": "user", "content": "B", "turnId": "t7"}
    ]);
    let t = lk.turn(&seeded).await;
    assert_eq!(t.text(), "You said \"B\". Before that you said \"A\".");

    // Idempotent on turnId: a repeat replays without running the agent again.
    let first = lk.turn(&request("sess-idem", "t1", "A")).await;
    let again = lk.turn(&request("sess-idem", "t1", "A")).await;
    assert_eq!(first.events, again.events);
    let count = lk.turn(&request("sess-idem", "t2", "/count")).await;
    assert_eq!(count.text(), "The agent has run 2 times on this thread.");
    let reused = lk.turn(&request("sess-idem", "t1", "not A")).await;
    assert_eq!(reused.kinds(), ["status:started", "error"]);

    // A concurrent duplicate waits for the first delivery and replays it.
    let dup = request("sess-dup", "t1", "/slow 1");
    let (a, b) = tokio::join!(lk.turn(&dup), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        lk.turn(&dup).await
    });
    assert_eq!(a.text(), b.text());
    let count = lk.turn(&request("sess-dup", "t2", "/count")).await;
    assert_eq!(count.text(), "The agent has run 2 times on this thread.");

    // Richer outputs.
    let t = lk.turn(&request("sess-rich", "t1", "/tool")).await;
    assert_eq!(
        t.kinds(),
        [
            "status:started",
            "text",
            "status:working",
            "text",
            "status:complete"
        ]
    );
    assert_eq!(t.events[2]["content"], "Running lookup_time…");
    let t = lk.turn(&request("sess-rich", "t2", "/choice")).await;
    assert_eq!(t.kinds(), ["status:started", "text", "status:complete"]);
    assert_eq!(t.text(), "Which colour? (Red / Green / Blue)");
    // The reply to the question arrives as the next message; the agent sees its question.
    let t = lk.turn(&request("sess-rich", "t3", "Green")).await;
    assert_eq!(
        t.text(),
        "You said \"Green\". Before that you said \"/choice\"."
    );
    let t = lk.turn(&request("sess-rich", "t4", "/file")).await;
    let text = t.text();
    let link = text
        .split("](")
        .nth(1)
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no link in {text:?}"));
    assert!(
        link.starts_with(&format!("{}/files/", server.base)),
        "{link}"
    );
    let csv = reqwest::get(link).await.unwrap().text().await.unwrap();
    assert!(csv.starts_with("city,temperature"), "{csv}");
    let t = lk.turn(&request("sess-rich", "t5", "/fail")).await;
    assert_eq!(t.kinds(), ["status:started", "error"]);
    let t = lk.turn(&request("sess-rich", "t6", "/panic")).await;
    assert_eq!(t.kinds(), ["status:started", "error"]);

    // Client disconnect cancels the turn: a re-delivery replays the cancelled turn at once
    // instead of waiting for a 30-second agent.
    let first =
        hang_up_after_started(&server.base, &request("sess-cancel", "t1", "/slow 30")).await;
    assert!(first.contains("\"status\":\"started\""), "{first:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let t0 = Instant::now();
    let t = lk.turn(&request("sess-cancel", "t1", "/slow 30")).await;
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_eq!(t.kinds().last().unwrap(), "error");
    assert_eq!(
        t.events.last().unwrap()["content"],
        "The turn was cancelled."
    );

    // Every request fixture: valid ones stream a turn, invalid ones are refused with 400.
    for (name, mut body) in fixtures("valid") {
        // Fixtures share turn ids; here each is its own turn.
        body["turn"]["turnId"] = json!(format!("fixture-{name}"));
        let t = lk.turn(&body).await;
        assert_eq!(
            t.kinds().last().unwrap(),
            "status:complete",
            "{name}: {:?}",
            t.kinds()
        );
    }
    let expected: BTreeMap<String, String> = serde_json::from_str(
        &std::fs::read_to_string(lowkey_dir().join("fixtures/requests/invalid/errors.json"))
            .unwrap(),
    )
    .unwrap();
    for (name, body) in fixtures("invalid") {
        let t = lk.turn_until(&body, usize::MAX).await;
        assert_eq!(t.status, 400, "{name}");
        let v: Value = serde_json::from_str(&t.body).unwrap();
        let msg = v["error"].as_str().unwrap_or_default();
        assert!(msg.contains(&expected[&name]), "{name}: {msg}");
    }
    let r = lk
        .http
        .post(&lk.url)
        .header("content-type", "application/json")
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // Without auth, `runway serve` takes JSON bodies only (another web page cannot post a
    // form at it).
    let r = lk.http.post(&lk.url).body("{nope").send().await.unwrap();
    assert_eq!(r.status(), 415);
    let r = lk.http.get(&lk.url).send().await.unwrap();
    assert_eq!(r.status(), 405);

    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lowkey_uses_the_same_auth_header_set() {
    let server = Server::start(
        "auth",
        &[("RUNWAY_AUTH_HEADERS", "X-API-Key: k1\nX-Tenant: acme")],
    )
    .await;
    let none = Lowkey::new(&server.base, &[]);
    let t = none.turn_until(&request("s", "t1", "A"), usize::MAX).await;
    assert_eq!(t.status, 401);
    let half = Lowkey::new(&server.base, &[("X-API-Key", "k1")]);
    let t = half.turn_until(&request("s", "t1", "A"), usize::MAX).await;
    assert_eq!(t.status, 401);
    let full = Lowkey::new(&server.base, &[("X-API-Key", "k1"), ("X-Tenant", "acme")]);
    let t = full.turn(&request("s", "t1", "A")).await;
    assert_eq!(t.kinds().last().unwrap(), "status:complete");
    server.stop().await;
}
