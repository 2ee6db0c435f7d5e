//! Lowkey's external turn protocol v1 (`POST {base_url}/lowkey/turn`, NDJSON), checked on every
//! adapter. Every event received is validated against `infra/lowkey/schema`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::Target;
use crate::client::fresh_id;

type Check = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

fn lowkey_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/lowkey")
}

fn read_json(path: PathBuf) -> Value {
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The validator of `$defs/ExternalAgentTurnEvent`.
fn event_validator() -> jsonschema::Validator {
    let root = read_json(lowkey_dir().join("schema/external-turn-protocol.schema.json"));
    jsonschema::draft202012::new(&json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": root["$defs"],
        "$ref": "#/$defs/ExternalAgentTurnEvent",
    }))
    .expect("event schema compiles")
}

/// One turn as it arrived.
struct Ndjson {
    status: u16,
    content_type: String,
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

    /// 200, NDJSON, `started` first, exactly one terminal event, last.
    fn well_formed(&self) -> Check {
        ensure!(self.status == 200, "HTTP {} {}", self.status, self.body);
        ensure!(
            self.content_type == "application/x-ndjson",
            "content-type {:?}",
            self.content_type
        );
        let k = self.kinds();
        ensure!(
            k.first().map(String::as_str) == Some("status:started"),
            "first event is not status started: {k:?}"
        );
        let terminal: Vec<usize> = k
            .iter()
            .enumerate()
            .filter(|(_, k)| *k == "status:complete" || *k == "error")
            .map(|(i, _)| i)
            .collect();
        ensure!(
            terminal == [k.len() - 1],
            "not exactly one terminal event, last: {k:?}"
        );
        Ok(())
    }

    fn completed(&self) -> Check {
        self.well_formed()?;
        ensure!(
            self.kinds().last().map(String::as_str) == Some("status:complete"),
            "ended with {:?}",
            self.events.last()
        );
        Ok(())
    }
}

struct Lowkey {
    http: reqwest::Client,
    base: String,
    auth: Vec<(String, String)>,
    events: jsonschema::Validator,
}

impl Lowkey {
    fn new(base: &str, auth: Vec<(String, String)>) -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("http client"),
            base: base.trim_end_matches('/').to_owned(),
            auth,
            events: event_validator(),
        }
    }

    fn without_auth(&self) -> Self {
        Self::new(&self.base, Vec::new())
    }

    /// Posts a raw body and reads the answer as it arrives (bounded by 60 s), validating each
    /// event against the schema.
    async fn post(&self, body: String) -> Result<Ndjson, String> {
        let t0 = Instant::now();
        let mut req = self
            .http
            .post(format!("{}/lowkey/turn", self.base))
            .header("content-type", "application/json")
            .body(body)
            .timeout(Duration::from_secs(60));
        for (k, v) in &self.auth {
            req = req.header(k, v);
        }
        let r = req.send().await.map_err(|e| format!("POST: {e}"))?;
        let mut out = Ndjson {
            status: r.status().as_u16(),
            content_type: r
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned(),
            body: String::new(),
            events: Vec::new(),
            arrivals: Vec::new(),
        };
        if out.status != 200 {
            out.body = r.text().await.unwrap_or_default();
            return Ok(out);
        }
        let mut stream = r.bytes_stream();
        let mut buf = Vec::new();
        while let Some(chunk) = stream.next().await {
            buf.extend_from_slice(&chunk.map_err(|e| format!("body: {e}"))?);
            while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=nl).collect();
                let line = String::from_utf8_lossy(&line[..nl]).into_owned();
                let event: Value = serde_json::from_str(&line)
                    .map_err(|e| format!("line is not one JSON object: {line:?}: {e}"))?;
                let errors: Vec<String> = self
                    .events
                    .iter_errors(&event)
                    .map(|e| e.to_string())
                    .collect();
                ensure!(errors.is_empty(), "{line} breaks the schema: {errors:?}");
                ensure!(
                    event["protocolVersion"] == 1,
                    "{line} does not echo protocolVersion 1"
                );
                out.arrivals.push(t0.elapsed());
                out.events.push(event);
            }
        }
        ensure!(
            buf.is_empty(),
            "unterminated last line {:?}",
            String::from_utf8_lossy(&buf)
        );
        Ok(out)
    }

    async fn turn(&self, body: &Value) -> Result<Ndjson, String> {
        self.post(body.to_string()).await
    }
}

fn request(session: &str, turn_id: &str, message: &str) -> Value {
    json!({
        "protocolVersion": 1,
        "pluginId": "runway-e2e",
        "sessionHandle": {
            "id": session,
            "projectPath": "/abs/project",
            "sessionId": format!("lowkey-{session}"),
            "agentId": "runway-demo"
        },
        "turn": {"turnId": turn_id, "message": message, "headless": false, "userName": "e2e"},
        "transcriptWindow": [],
        "limits": {"transcriptWindowMessages": 40}
    })
}

/// Runs the Lowkey checks against `target`; returns one line per failure.
pub(crate) async fn run_all<T: Target>(target: &T) -> Vec<String> {
    let lk = Lowkey::new(&target.base_url(), target.auth_headers());
    let mut failures = Vec::new();
    let checks: [(&str, Check); 7] = [
        (
            "lowkey: started at once, text as produced, complete",
            streaming(&lk).await,
        ),
        ("lowkey: context by sessionHandle.id", context(&lk).await),
        (
            "lowkey: transcriptWindow seeds an unknown session",
            seeding(&lk).await,
        ),
        ("lowkey: idempotent on turnId", idempotent(&lk).await),
        ("lowkey: richer outputs mapped", richer(&lk).await),
        (
            "lowkey: agent failures end with error",
            failures_end(&lk).await,
        ),
        ("lowkey: bad input and auth are 4xx", bad_input(&lk).await),
    ];
    for (name, r) in checks {
        match r {
            Ok(()) => eprintln!("[e2e] pass  {name}"),
            Err(e) => {
                eprintln!("[e2e] FAIL  {name}: {e}");
                failures.push(format!("- {name}: {e}"));
            }
        }
    }
    failures
}

async fn streaming(lk: &Lowkey) -> Check {
    let t = lk.turn(&request(&fresh_id(), "t1", "/slow 2")).await?;
    t.completed()?;
    let k = t.kinds();
    let started = t.arrivals[0];
    let text_at = k
        .iter()
        .position(|k| k == "text")
        .map(|i| t.arrivals[i])
        .ok_or_else(|| format!("no text: {k:?}"))?;
    eprintln!("[e2e] lowkey: status started after {started:?}, text after {text_at:?}");
    ensure!(
        started < Duration::from_secs(2),
        "started after {started:?}"
    );
    ensure!(
        text_at >= Duration::from_secs(2),
        "text after {text_at:?}, before the agent produced it"
    );
    ensure!(
        k.iter().any(|k| k == "status:working"),
        "no keep-alive during 2 s of silence: {k:?}"
    );
    ensure!(t.text() == "Done waiting 2 seconds.", "text {:?}", t.text());
    Ok(())
}

async fn context(lk: &Lowkey) -> Check {
    let session = fresh_id();
    let a = lk.turn(&request(&session, "t1", "A")).await?;
    a.completed()?;
    let b = lk.turn(&request(&session, "t2", "B")).await?;
    b.completed()?;
    ensure!(
        b.text() == "You said \"B\". Before that you said \"A\".",
        "second turn: {:?}",
        b.text()
    );
    let other = lk.turn(&request(&fresh_id(), "t2", "B")).await?;
    ensure!(
        other.text().contains("first thing you said"),
        "another session saw this one: {:?}",
        other.text()
    );
    Ok(())
}

async fn seeding(lk: &Lowkey) -> Check {
    let mut body = request(&fresh_id(), "t9", "B");
    body["transcriptWindow"] = json!([
        {"role": "user", "content": "A", "turnId": "t8"},
        {"role": "agent", "content": "You said \"A\".", "agentId": "runway-demo", "turnId": "t8"},
        {"role": "user", "content": "B", "turnId": "t9"}
    ]);
    let t = lk.turn(&body).await?;
    t.completed()?;
    ensure!(
        t.text() == "You said \"B\". Before that you said \"A\".",
        "seeded turn: {:?}",
        t.text()
    );
    Ok(())
}

async fn idempotent(lk: &Lowkey) -> Check {
    let session = fresh_id();
    let first = lk.turn(&request(&session, "t1", "A")).await?;
    first.completed()?;
    let again = lk.turn(&request(&session, "t1", "A")).await?;
    again.completed()?;
    ensure!(
        first.events == again.events,
        "replay differs: {:?} vs {:?}",
        first.kinds(),
        again.kinds()
    );
    let count = lk.turn(&request(&session, "t2", "/count")).await?;
    ensure!(
        count.text() == "The agent has run 2 times on this thread.",
        "the replay ran the agent again: {:?}",
        count.text()
    );
    let reused = lk.turn(&request(&session, "t1", "not A")).await?;
    reused.well_formed()?;
    ensure!(
        reused.kinds() == ["status:started", "error"],
        "turnId reused with another message: {:?}",
        reused.kinds()
    );
    Ok(())
}

async fn richer(lk: &Lowkey) -> Check {
    let session = fresh_id();
    let t = lk.turn(&request(&session, "t1", "/tool")).await?;
    t.completed()?;
    ensure!(
        t.kinds()
            == [
                "status:started",
                "text",
                "status:working",
                "text",
                "status:complete"
            ],
        "/tool: {:?}",
        t.kinds()
    );
    ensure!(
        t.events[2]["content"] == "Running lookup_time…",
        "working line {}",
        t.events[2]
    );
    let t = lk.turn(&request(&session, "t2", "/choice")).await?;
    t.completed()?;
    ensure!(
        t.text() == "Which colour? (Red / Green / Blue)",
        "question {:?}",
        t.text()
    );
    let t = lk.turn(&request(&session, "t3", "/file")).await?;
    t.completed()?;
    let text = t.text();
    let link = text
        .split("](")
        .nth(1)
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| format!("no file link in {text:?}"))?
        .to_owned();
    let r = lk
        .http
        .get(&link)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .map_err(|e| format!("GET {link}: {e}"))?;
    ensure!(r.status() == 200, "GET {link}: HTTP {}", r.status());
    let csv = r.text().await.unwrap_or_default();
    ensure!(csv.starts_with("city,temperature"), "file content {csv:?}");
    Ok(())
}

async fn failures_end(lk: &Lowkey) -> Check {
    for input in ["/fail", "/panic"] {
        let t = lk.turn(&request(&fresh_id(), "t1", input)).await?;
        t.well_formed()?;
        ensure!(
            t.kinds() == ["status:started", "error"],
            "{input}: {:?}",
            t.kinds()
        );
    }
    Ok(())
}

async fn bad_input(lk: &Lowkey) -> Check {
    let dir = lowkey_dir().join("fixtures/requests/invalid");
    let expected: BTreeMap<String, String> =
        serde_json::from_value(read_json(dir.join("errors.json"))).map_err(|e| e.to_string())?;
    for (name, message) in &expected {
        let body = read_json(dir.join(format!("{name}.json")));
        let t = lk.turn(&body).await?;
        ensure!(t.status == 400, "{name}: HTTP {} {}", t.status, t.body);
        let v: Value = serde_json::from_str(&t.body)
            .map_err(|_| format!("{name}: error body is not JSON: {:?}", t.body))?;
        let got = v["error"].as_str().unwrap_or_default();
        ensure!(got.contains(message.as_str()), "{name}: {got:?}");
    }
    let t = lk.post("{not json".into()).await?;
    ensure!(t.status == 400, "invalid JSON: HTTP {}", t.status);
    if !lk.auth.is_empty() {
        let t = lk
            .without_auth()
            .turn(&request(&fresh_id(), "t1", "A"))
            .await?;
        ensure!(t.status == 401, "without auth headers: HTTP {}", t.status);
    }
    Ok(())
}
