//! Routing by the configured base path, hosted-file links (their name is checked, their
//! origin never comes from a caller's header), and `event_id`s of a reused `runId`.

use std::collections::HashSet;

use bytes::Bytes;
use runway_core::adapter::{Config, PlatformOrigin};
use runway_core::testing::{Frames, TestRunway, VirtualRuntime};
use runway_core::{Agent, AgentResult, Outcome, Output, OutputFile, Turn};
use serde_json::{Value, json};

/// Answers with its input; `/file` also hosts a file.
struct Files;

impl Agent for Files {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        if turn.input == "/file" {
            out.file(OutputFile::new("report.csv", "text/csv", b"a,b\n".to_vec()));
        }
        out.text(format!("You said {}.", turn.input));
        Ok(Outcome::Done)
    }
}

type App = TestRunway<Files>;

fn app(config: Config) -> App {
    TestRunway::with(Files, VirtualRuntime::new(), config)
}

fn run_body(run: &str, input: &str) -> Bytes {
    Bytes::from(
        json!({"protocolVersion": "1", "runId": run, "threadId": run, "agentId": "a",
               "workspaceId": "w", "input": input})
        .to_string(),
    )
}

/// Sends `req`; the status and, for a stream, its frames.
async fn send(app: &App, req: http::Request<Bytes>) -> (u16, Vec<Value>) {
    let frames = Frames::parse(app.request(req).await, None);
    (frames.status(), frames.all().to_vec())
}

fn post(path: &str, body: Bytes) -> http::Request<Bytes> {
    http::Request::post(path).body(body).unwrap()
}

fn get(path: &str) -> http::Request<Bytes> {
    http::Request::get(path).body(Bytes::new()).unwrap()
}

fn file_url(frames: &[Value]) -> String {
    frames
        .iter()
        .find(|f| f["type"] == "STATE_SNAPSHOT")
        .and_then(|f| f["snapshot"]["artifacts"][0]["url"].as_str())
        .expect("an artifact url")
        .to_owned()
}

fn ids(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .map(|f| f["event_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn run_id_reused_never_repeats_an_event_id_and_a_replay_repeats_them_all() {
    let app = app(Config::unauthenticated());
    let (_, first) = send(&app, post("/runs", run_body("r1", "one"))).await;
    assert_eq!(first.last().unwrap()["type"], "RUN_FINISHED");
    let (_, reused) = send(&app, post("/runs", run_body("r1", "two"))).await;
    assert_eq!(reused.last().unwrap()["code"], "RUN_ID_REUSED");
    let first_ids: HashSet<String> = ids(&first).into_iter().collect();
    let clash: Vec<String> = ids(&reused)
        .into_iter()
        .filter(|i| first_ids.contains(i))
        .collect();
    assert!(clash.is_empty(), "RUN_ID_REUSED repeats {clash:?}");
    for id in ids(&reused) {
        assert!(id.starts_with("r1."), "{id}");
    }
    let (_, replay) = send(&app, post("/runs", run_body("r1", "one"))).await;
    assert_eq!(ids(&replay), ids(&first));
}

#[tokio::test]
async fn routes_only_at_the_base_path() {
    let root = app(Config::unauthenticated());
    assert_eq!(send(&root, get("/health")).await.0, 200);
    for path in ["/x/health", "/health/", "/fpt/health"] {
        assert_eq!(send(&root, get(path)).await.0, 404, "{path}");
    }
    assert_eq!(
        send(&root, post("/x/runs", run_body("r", "hi"))).await.0,
        404
    );

    // A base path under /files/ works: it is not taken for a file link.
    let based = app(Config {
        base_path: "/files/agent".into(),
        ..Config::unauthenticated()
    });
    assert_eq!(send(&based, get("/files/agent/health")).await.0, 200);
    let (s, frames) = send(&based, post("/files/agent/runs", run_body("r2", "/file"))).await;
    assert_eq!(s, 200);
    let url = file_url(&frames);
    assert!(
        url.starts_with("http://localhost/files/agent/files/"),
        "{url}"
    );
    let path = url.strip_prefix("http://localhost").unwrap();
    assert_eq!(send(&based, get(path)).await.0, 200);
    for path in [
        "/health",
        "/runs",
        "/files/agent/x/health",
        "/files/agentx/health",
    ] {
        assert_eq!(send(&based, get(path)).await.0, 404, "{path}");
    }
}

#[tokio::test]
async fn a_file_link_works_only_with_its_own_name() {
    let app = app(Config::unauthenticated());
    let (_, frames) = send(&app, post("/runs", run_body("r3", "/file"))).await;
    let url = file_url(&frames);
    let path = url.strip_prefix("http://localhost").unwrap().to_owned();
    assert!(path.ends_with("/report.csv"), "{path}");
    assert_eq!(send(&app, get(&path)).await.0, 200);
    let renamed = path.replace("/report.csv", "/anything.html");
    assert_eq!(send(&app, get(&renamed)).await.0, 404);
    assert_eq!(send(&app, get(&format!("{path}/more"))).await.0, 404);
    let bare = path.strip_suffix("/report.csv").unwrap();
    assert_eq!(send(&app, get(bare)).await.0, 404);
}

#[tokio::test]
async fn links_never_use_a_callers_host_or_forwarded_proto() {
    let forged = |run: &str| {
        http::Request::post("/runs")
            .header("host", "evil.example")
            .header("x-forwarded-proto", "https")
            .body(run_body(run, "/file"))
            .unwrap()
    };
    let app1 = app(Config::unauthenticated());
    let (_, frames) = send(&app1, forged("r4")).await;
    let url = file_url(&frames);
    assert!(url.starts_with("http://localhost/files/"), "{url}");

    // The origin the platform vouches for (function URL domain, listen address).
    let mut req = forged("r5");
    req.extensions_mut().insert(PlatformOrigin(
        "https://abc.lambda-url.eu-west-1.on.aws".into(),
    ));
    let (_, frames) = send(&app1, req).await;
    let url = file_url(&frames);
    assert!(
        url.starts_with("https://abc.lambda-url.eu-west-1.on.aws/files/"),
        "{url}"
    );

    // An absolute request URI is the platform's (Workers: the Worker's own URL).
    let req = http::Request::post("https://runway.example.workers.dev/runs")
        .header("host", "evil.example")
        .body(run_body("r6", "/file"))
        .unwrap();
    let (_, frames) = send(&app1, req).await;
    assert!(
        file_url(&frames).starts_with("https://runway.example.workers.dev/files/"),
        "{}",
        file_url(&frames)
    );

    // Configuration wins.
    let app2 = app(Config {
        public_url: Some("https://agent.example.com/fpt".into()),
        ..Config::unauthenticated()
    });
    let (_, frames) = send(&app2, forged("r7")).await;
    assert!(
        file_url(&frames).starts_with("https://agent.example.com/fpt/files/"),
        "{}",
        file_url(&frames)
    );
}
