//! The testing kit (`runway_core::testing`) itself: what a turn carries reaches the agent, what
//! the agent does is seen in `Frames`, and the virtual clock keeps real time where it must.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use runway_core::adapter::{BoxFuture, Config};
use runway_core::http_client::{HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse};
use runway_core::protocol::{Attachment, Decision, SecretUrl};
use runway_core::testing::{
    ScriptedHttp, ScriptedResponse, StoreCall, TestRunway, TestTurn, VirtualRuntime,
};
use runway_core::{
    Agent, AgentError, AgentResult, Interrupt, Message, Outcome, Output, Role, Turn,
};
use serde_json::json;

/// Says what it was given: input, history, state, question, resume, attachments.
struct Mirror;

impl Agent for Mirror {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        let said: Vec<&str> = turn
            .context
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        out.text(format!(
            "input={} earlier={said:?} state={} asked={:?} resume={:?} files={:?}",
            turn.input,
            turn.context.state,
            turn.context.pending_interrupt.as_ref().map(Interrupt::kind),
            turn.resume.as_ref().map(|r| r.decision.as_str()),
            turn.attachments
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>(),
        ));
        turn.context.state = json!({"seen": turn.input});
        Ok(Outcome::Done)
    }
}

#[tokio::test]
async fn history_seeds_a_thread_the_store_does_not_know() {
    let frames = TestTurn::new("third")
        .history([
            Message::new(Role::User, "first"),
            Message::new(Role::Assistant, "second"),
        ])
        .run(&Mirror)
        .await;
    assert!(frames.is_success(), "{frames:?}");
    assert!(
        frames
            .text()
            .starts_with(r#"input=third earlier=["first", "second"]"#),
        "{}",
        frames.text()
    );
    let saved = frames.saved().unwrap();
    assert_eq!(saved.messages.len(), 4);
    assert_eq!(frames.state(), &json!({"seen": "third"}));
}

#[test]
fn stored_context_and_a_resume_reach_the_agent_without_tokio() {
    let rt = VirtualRuntime::new();
    let frames = rt.block_on(
        TestTurn::new("")
            .earlier(&["book it", "Book VN123?"])
            .state(json!({"flight": "VN123"}))
            .asked(Interrupt::Approval {
                prompt: "Book VN123?".into(),
            })
            .resume(Decision::Approve)
            .run(&Mirror),
    );
    assert_eq!(
        frames.text(),
        r#"input= earlier=["book it", "Book VN123?"] state={"flight":"VN123"} asked=Some("approval") resume=Some("approve") files=[]"#
    );
}

#[tokio::test]
async fn an_attachment_is_fetched_through_the_scripted_client() {
    struct Reader;
    impl Agent for Reader {
        async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
            let file = &turn.attachments[0];
            let text = turn
                .http()
                .get(file.url.expose())
                .send()
                .await?
                .text()
                .await?;
            out.text(format!("{} says: {text}", file.name));
            Ok(Outcome::Done)
        }
    }
    let url = "https://files.example.com/a/notes.txt?sig=secret";
    let http = ScriptedHttp::new().get(url, ScriptedResponse::text("buy milk"));
    let frames = TestTurn::new("read it")
        .attachment(Attachment {
            id: "f1".into(),
            url: SecretUrl::new(url),
            name: "notes.txt".into(),
            mime: "text/plain".into(),
            size_bytes: 8,
        })
        .http_client(http.clone())
        .run(&Reader)
        .await;
    assert_eq!(frames.text(), "notes.txt says: buy milk");
    assert_eq!(http.requests()[0].url.as_str(), url);
}

/// Calls the API with a 20-second timeout; a failure is the agent's error.
struct Caller;

impl Agent for Caller {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        let call = out.tool_call("lookup", &json!({"q": turn.input}));
        let answer = turn
            .http()
            .get("https://api.example.com/lookup")
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .map_err(|e| AgentError::with_user_message("The lookup failed.", e))?
            .text()
            .await?;
        out.tool_result(&call, answer.clone());
        out.text(answer);
        Ok(Outcome::Done)
    }
}

#[tokio::test]
async fn scripted_waits_run_on_the_virtual_clock() {
    // The head comes after 15 s, within the request's 20-second timeout: heartbeats meanwhile.
    let slow = ScriptedHttp::new().get(
        "https://api.example.com/lookup",
        ScriptedResponse::text("42").delay(Duration::from_secs(15)),
    );
    let frames = TestTurn::new("x").http_client(slow).run(&Caller).await;
    assert!(frames.is_success(), "{frames:?}");
    assert_eq!(frames.heartbeats(), [Duration::from_secs(10)]);
    let calls = frames.tool_calls();
    assert_eq!(calls[0].name, "lookup");
    assert_eq!(calls[0].arguments_json(), json!({"q": "x"}));
    assert_eq!(calls[0].result.as_deref(), Some("42"));
    assert_eq!(frames.received().took(), Duration::from_secs(15));

    // 25 s is past the timeout: the agent's error, with its message for the user.
    let slower = ScriptedHttp::new().get(
        "https://api.example.com/lookup",
        ScriptedResponse::text("42").delay(Duration::from_secs(25)),
    );
    let frames = TestTurn::new("x").http_client(slower).run(&Caller).await;
    let error = frames.error().unwrap();
    assert_eq!(error.code, "AGENT_ERROR");
    assert_eq!(error.message, "The lookup failed.");
    assert_eq!(frames.received().took(), Duration::from_secs(20));
}

/// Answers from another thread after `delay` of real time: the outside world.
struct Remote(Duration);

impl HttpClient for Remote {
    fn send(&self, _request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
        let (tx, rx) = futures::channel::oneshot::channel();
        let delay = self.0;
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            let _ = tx.send(());
        });
        Box::pin(async move {
            rx.await.map_err(|_| HttpError::Connect("gone".into()))?;
            Ok(HttpResponse::new(
                http::StatusCode::OK,
                http::HeaderMap::new(),
                HttpBody::full("from afar"),
            ))
        })
    }
}

#[tokio::test]
async fn the_clock_stands_still_while_a_real_request_is_in_flight() {
    // 300 ms of real time; were the clock to jump while waiting, the 20-second timeout (and
    // the heartbeats) would pass at once.
    let frames = TestTurn::new("x")
        .http_client(Remote(Duration::from_millis(300)))
        .run(&Caller)
        .await;
    assert_eq!(frames.text(), "from afar", "{frames:?}");
    assert!(frames.heartbeats().is_empty());
    assert_eq!(frames.received().took(), Duration::ZERO);
}

/// Sleeps `input` seconds on the runtime it was given, counting its runs.
#[derive(Clone)]
struct Sleeper {
    rt: VirtualRuntime,
    runs: Arc<AtomicUsize>,
}

impl Agent for Sleeper {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let secs = turn.input.parse().unwrap_or(0);
        self.rt.sleep(Duration::from_secs(secs)).await;
        out.text(format!("slept {secs}"));
        Ok(Outcome::Done)
    }
}

#[tokio::test]
async fn turns_sent_at_once_overlap_and_retries_replay() {
    let rt = VirtualRuntime::new();
    let agent = Sleeper {
        rt: rt.clone(),
        runs: Arc::default(),
    };
    let runway = TestRunway::with(agent.clone(), rt.clone(), Config::unauthenticated());
    let (a, b) = rt
        .run(async {
            futures::join!(runway.send(TestTurn::new("30")), async {
                rt.sleep(Duration::from_secs(1)).await;
                runway.send(TestTurn::new("2")).await
            })
        })
        .await;
    // The newer turn superseded the older at its first heartbeat check.
    assert_eq!(b.text(), "slept 2");
    assert_eq!(a.error().unwrap().code, "SUPERSEDED");
    assert_eq!(a.received().took(), Duration::from_secs(10));

    // A retry of a finished run replays it byte for byte, without running the agent.
    let first = runway.send(TestTurn::new("1").run_id("again")).await;
    let retry = runway.send(TestTurn::new("1").run_id("again")).await;
    assert_eq!(first.all(), retry.all());
    assert_eq!(agent.runs.load(Ordering::SeqCst), 3);
    assert_eq!(runway.store().calls(StoreCall::FinishTurn), 3);
}

#[tokio::test]
async fn a_refused_request_has_no_frames_and_says_why() {
    let runway = TestRunway::new(&Mirror);
    let frames = runway.send(TestTurn::new("hi").thread("no/slashes")).await;
    assert_eq!(frames.status(), 400);
    assert!(frames.all().is_empty());
    assert!(frames.refusal().unwrap().contains("threadId"), "{frames:?}");
}
