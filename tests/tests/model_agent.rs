//! The model-backed agent (`RUNWAY_AGENT=model`) served by the real `runway serve` binary,
//! against an OpenAI-compatible endpoint in this test that replays realistic chunk sequences,
//! and a business API for its tools, both on loopback.

use std::path::PathBuf;
use std::time::Duration;

use runway_e2e::approval_checks;
use runway_e2e::client::{AGENT_ID, fresh_id, run_body};
use runway_e2e::scripted_server::{PIXEL_PNG, Piece, Recorded, Reply, ScriptedServer, chunk};
use runway_e2e::{AgentProcess, Client, TurnStream, free_data_dir, runway_binary};
use serde_json::{Value, json};
use tokio::process::Command;

const KEY: &str = "sk-test-4f9d2c81e7";
const SYSTEM: &str = "You are the order desk. Be brief.";
const TOOL_TOKEN: &str = "tooltok-77a1";

const TOOLS: &str = r#"
[[tools]]
name = "get_weather"
description = "Current weather in a city"
parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }
method = "GET"
url = "TOOLS_BASE/now?city={city}"
headers = { X-Token = "Bearer ${TOOL_TOKEN}" }

[[tools]]
name = "create_note"
description = "Save a note"
parameters = { type = "object", properties = { text = { type = "string" } }, required = ["text"] }
method = "POST"
url = "TOOLS_BASE/notes"

[[tools]]
name = "issue_refund"
description = "Refund an order"
parameters = { type = "object", properties = { order = { type = "string" }, amount = { type = "number" } }, required = ["order", "amount"] }
method = "POST"
url = "TOOLS_BASE/refunds"
approval = true
"#;

struct Served {
    process: AgentProcess,
    client: Client,
    data_dir: PathBuf,
    log: Option<PathBuf>,
}

impl Served {
    async fn stop(self) -> String {
        self.process.stop().await;
        let log = self
            .log
            .map(|l| std::fs::read_to_string(l).unwrap_or_default())
            .unwrap_or_default();
        let _ = std::fs::remove_dir_all(self.data_dir);
        log
    }
}

/// `runway serve` with the model agent pointed at `model_base_url`, tools at `tools` (if any). With
/// `capture_log`, stderr goes to a file returned by [`Served::stop`].
async fn serve(model_base_url: &str, tools: Option<&ScriptedServer>, capture_log: bool) -> Served {
    serve_with(model_base_url, tools, capture_log, &[]).await
}

/// [`serve`] with extra settings.
async fn serve_with(
    model_base_url: &str,
    tools: Option<&ScriptedServer>,
    capture_log: bool,
    settings: &[(&str, &str)],
) -> Served {
    serve_in(
        free_data_dir("model-agent"),
        model_base_url,
        tools,
        capture_log,
        settings,
    )
    .await
}

/// [`serve_with`] on `data_dir` (a restart passes the previous one).
async fn serve_in(
    data_dir: PathBuf,
    model_base_url: &str,
    tools: Option<&ScriptedServer>,
    capture_log: bool,
    settings: &[(&str, &str)],
) -> Served {
    let log = capture_log.then(|| data_dir.join("stderr.log"));
    std::fs::create_dir_all(&data_dir).unwrap();
    let mut cmd = match &log {
        Some(log) => {
            let mut c = Command::new("bash");
            c.arg("-c")
                .arg(r#"exec "$0" serve --listen 127.0.0.1:0 --data-dir "$1" 2>"$2""#)
                .arg(runway_binary())
                .arg(&data_dir)
                .arg(log);
            c
        }
        None => {
            let mut c = Command::new(runway_binary());
            c.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
                .arg(&data_dir);
            c
        }
    };
    cmd.env("RUNWAY_AGENT", "model")
        .env("RUNWAY_MODEL_BASE_URL", format!("{model_base_url}/v1"))
        .env("RUNWAY_MODEL", "test-model")
        .env("RUNWAY_MODEL_API_KEY", KEY)
        .env("RUNWAY_SYSTEM_PROMPT", SYSTEM)
        .env("TOOL_TOKEN", TOOL_TOKEN)
        .env("RUNWAY_HEARTBEAT_SECS", "1")
        .env("RUNWAY_TURN_DEADLINE_SECS", "30")
        .env("RUNWAY_LOG", if capture_log { "info" } else { "warn" })
        .env_remove("RUNWAY_TOOLS_FILE")
        .env_remove("RUNWAY_AUTH_HEADERS")
        .env_remove("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK")
        .env_remove("RUNWAY_ATTACHMENTS_MAX_BYTES");
    match tools {
        Some(t) => cmd.env("RUNWAY_TOOLS", TOOLS.replace("TOOLS_BASE", &t.base_url)),
        None => cmd.env_remove("RUNWAY_TOOLS"),
    };
    for (k, v) in settings {
        cmd.env(k, v);
    }
    let process = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let client = Client::new(process.base_url(), vec![]);
    Served {
        process,
        client,
        data_dir,
        log,
    }
}

fn of_type<'a>(t: &'a TurnStream, ty: &str) -> Vec<&'a Value> {
    t.frames.iter().filter(|f| f["type"] == ty).collect()
}

fn outcome(t: &TurnStream) -> Value {
    let last = t.last();
    assert_eq!(last["type"], "RUN_FINISHED", "{:?}", t.frames);
    last["outcome"].clone()
}

fn model_calls(model: &ScriptedServer) -> Vec<Value> {
    model.chat_completions()
}

fn roles(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn plain_text_streams_as_it_arrives_and_the_thread_is_remembered() {
    let pause = Duration::from_millis(700);
    let first = Reply::stream(vec![
        Piece::Data(format!("data: {}\n\n", chunk::role())),
        Piece::Data(format!("data: {}\n\n", chunk::text("Order DH-99217 "))),
        Piece::Pause(pause),
        Piece::Data(format!("data: {}\n\n", chunk::text("is in Hà Nội"))),
        Piece::Pause(pause),
        Piece::Data(format!("data: {}\n\n", chunk::text(" today."))),
        Piece::Data(format!("data: {}\n\n", chunk::finish("stop"))),
        Piece::Data(format!("data: {}\n\n", chunk::usage())),
        Piece::Data("data: [DONE]\n\n".into()),
    ]);
    let second = Reply::sse(&[
        chunk::role(),
        chunk::text("Yes, tomorrow."),
        chunk::finish("stop"),
    ]);
    let model = ScriptedServer::script(vec![first, second]).await;
    let s = serve(&model.base_url, None, false).await;
    let thread = fresh_id();

    let t = s
        .client
        .turn(&run_body(&fresh_id(), &thread, "Where is order DH-99217?"))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    let deltas: Vec<&str> = of_type(&t, "TEXT_MESSAGE_CONTENT")
        .iter()
        .map(|f| f["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["Order DH-99217 ", "is in Hà Nội", " today."]);
    // Streamed, not buffered: each delta left when the model sent it.
    let arrivals: Vec<Duration> = t
        .frames
        .iter()
        .zip(&t.frame_arrivals)
        .filter(|(f, _)| f["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|(_, a)| *a)
        .collect();
    assert!(
        arrivals[2] - arrivals[0] >= pause * 2 - Duration::from_millis(200),
        "deltas arrived together: {arrivals:?}"
    );

    let req = &model_calls(&model)[0];
    assert_eq!(req["model"], "test-model");
    assert_eq!(req["stream"], true);
    // The operator's prompt first, then runway's one rule about platform notices.
    assert_eq!(req["messages"][0]["role"], "system");
    let system = req["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with(&format!("{SYSTEM}\n\n")), "{system}");
    assert!(system.contains("not the user's words"), "{system}");
    assert_eq!(
        req["messages"][1],
        json!({"role": "user", "content": "Where is order DH-99217?"})
    );
    assert!(req.get("tools").is_none(), "no tools configured: {req}");
    let auth = model.requests()[0]
        .header("authorization")
        .map(str::to_owned);
    assert_eq!(auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));

    // The next turn on the thread sends the transcript, the system prompt once, first.
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &thread, "Tomorrow too?"))
        .await;
    assert_eq!(t.text(), "Yes, tomorrow.");
    let req = &model_calls(&model)[1];
    assert_eq!(roles(req), ["system", "user", "assistant", "user"]);
    assert_eq!(
        req["messages"][2]["content"],
        "Order DH-99217 is in Hà Nội today."
    );
    s.stop().await;
}

#[tokio::test]
async fn reasoning_is_sent_as_reasoning() {
    let model = ScriptedServer::script(vec![Reply::sse(&[
        chunk::role(),
        chunk::reasoning_content("The user greets; "),
        chunk::reasoning("answer kindly."),
        chunk::text("Hello!"),
        chunk::finish("stop"),
        chunk::usage(),
    ])])
    .await;
    let s = serve(&model.base_url, None, false).await;
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "Hi"))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    let reasoning: String = of_type(&t, "REASONING_MESSAGE_CONTENT")
        .iter()
        .map(|f| f["delta"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, "The user greets; answer kindly.");
    let types = t.types();
    let end = types
        .iter()
        .position(|x| *x == "REASONING_MESSAGE_END")
        .unwrap();
    let text = types
        .iter()
        .position(|x| *x == "TEXT_MESSAGE_START")
        .unwrap();
    assert!(end < text, "{types:?}");
    assert_eq!(t.text(), "Hello!");
    s.stop().await;
}

#[tokio::test]
async fn parallel_tool_calls_run_and_the_model_gets_their_results() {
    let tools = ScriptedServer::start(|r| {
        if r.target.starts_with("/now") {
            Reply::json(&json!({"summary": "sunny, 31°C"}))
        } else {
            Reply::json(&json!({"saved": true}))
        }
    })
    .await;
    let model = ScriptedServer::script(vec![
        Reply::sse(&[
            chunk::role(),
            chunk::text("Let me check."),
            chunk::tool_start(0, "call_w", "get_weather", ""),
            chunk::tool_args(0, "{\"ci"),
            chunk::tool_start(1, "call_n", "create_note", "{\"text\":"),
            chunk::tool_args(0, "ty\":\"Hà Nội & Huế\"}"),
            chunk::tool_args(1, "\"bring an umbrella\"}"),
            chunk::finish("tool_calls"),
            chunk::usage(),
        ]),
        Reply::sse(&[
            chunk::role(),
            chunk::text("Sunny, note saved."),
            chunk::finish("stop"),
        ]),
    ])
    .await;
    let s = serve(&model.base_url, Some(&tools), false).await;
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "Weather, and note it"))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));

    let starts = of_type(&t, "TOOL_CALL_START");
    assert_eq!(starts.len(), 2, "{:?}", t.types());
    assert_eq!(starts[0]["toolCallName"], "get_weather");
    assert_eq!(starts[1]["toolCallName"], "create_note");
    let args_of = |id: &Value| -> String {
        of_type(&t, "TOOL_CALL_ARGS")
            .iter()
            .filter(|f| f["toolCallId"] == *id)
            .map(|f| f["delta"].as_str().unwrap())
            .collect()
    };
    assert_eq!(
        args_of(&starts[0]["toolCallId"]),
        "{\"city\":\"Hà Nội & Huế\"}"
    );
    assert_eq!(
        args_of(&starts[1]["toolCallId"]),
        "{\"text\":\"bring an umbrella\"}"
    );
    let results = of_type(&t, "TOOL_CALL_RESULT");
    assert_eq!(results.len(), 2);
    assert!(results[0]["content"].as_str().unwrap().contains("sunny"));

    // Text before and after the tools are two messages.
    let message_ids: Vec<&Value> = of_type(&t, "TEXT_MESSAGE_START")
        .iter()
        .map(|f| &f["messageId"])
        .collect();
    assert_eq!(message_ids.len(), 2);
    assert_ne!(message_ids[0], message_ids[1]);

    // The tools were called as declared: placeholders URL-encoded, ${TOOL_TOKEN} filled,
    // POST with the arguments as JSON.
    let calls = tools.requests();
    let get = calls.iter().find(|r| r.method == "GET").expect("GET /now");
    assert_eq!(
        get.target,
        "/now?city=H%C3%A0%20N%E1%BB%99i%20%26%20Hu%E1%BA%BF"
    );
    assert_eq!(
        get.header("x-token"),
        Some(format!("Bearer {TOOL_TOKEN}").as_str())
    );
    let post = calls
        .iter()
        .find(|r| r.method == "POST")
        .expect("POST /notes");
    assert_eq!(post.target, "/notes");
    assert_eq!(post.json(), json!({"text": "bring an umbrella"}));

    // The second model call carries the calls and their results, ids matched.
    let req = &model_calls(&model)[1];
    assert_eq!(roles(req), ["system", "user", "assistant", "tool", "tool"]);
    assert_eq!(req["tools"].as_array().unwrap().len(), 3);
    let assistant = &req["messages"][2];
    assert_eq!(assistant["content"], "Let me check.");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_w");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        "{\"city\":\"Hà Nội & Huế\"}"
    );
    assert_eq!(req["messages"][3]["tool_call_id"], "call_w");
    assert!(
        req["messages"][3]["content"]
            .as_str()
            .unwrap()
            .contains("sunny")
    );
    assert_eq!(req["messages"][4]["tool_call_id"], "call_n");
    s.stop().await;
}

fn refund_call() -> Reply {
    Reply::sse(&[
        chunk::role(),
        chunk::tool_start(0, "call_r", "issue_refund", "{\"order\":\"DH-1\","),
        chunk::tool_args(0, "\"amount\":20}"),
        chunk::finish("tool_calls"),
    ])
}

fn resume_body(thread: &str, resume: Value) -> Value {
    let mut b = run_body(&fresh_id(), thread, "");
    b["resume"] = resume;
    b
}

/// Turn 1 asks for approval of a refund (nothing is called yet); turn 2 resumes with `resume`.
/// Returns turn 2's stream, the tool server's requests and the second model request.
async fn approval_round_trip(resume: Value) -> (TurnStream, Vec<Recorded>, Value) {
    let tools = ScriptedServer::start(|_| Reply::json(&json!({"refunded": true}))).await;
    let model = ScriptedServer::script(vec![
        refund_call(),
        Reply::sse(&[chunk::role(), chunk::text("Done."), chunk::finish("stop")]),
    ])
    .await;
    let s = serve(&model.base_url, Some(&tools), false).await;
    let thread = fresh_id();
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &thread, "Refund DH-1"))
        .await;
    let o = outcome(&t);
    assert_eq!(o["type"], "interrupt", "{o}");
    assert_eq!(o["interrupts"][0]["kind"], "review");
    assert_eq!(o["interrupts"][0]["items"][0]["name"], "issue_refund");
    assert_eq!(
        o["interrupts"][0]["items"][0]["arguments"],
        json!({"order": "DH-1", "amount": 20})
    );
    assert!(tools.requests().is_empty(), "ran before approval");

    let t = s.client.turn(&resume_body(&thread, resume)).await;
    let calls = model_calls(&model);
    assert_eq!(calls.len(), 2, "the loop went on after resume");
    s.stop().await;
    (t, tools.requests(), calls[1].clone())
}

/// `GET /usage`'s row of workspace `ws` (the test's one worker), if any.
async fn usage_row(client: &Client, ws: &str) -> Option<Value> {
    let (status, report) = client.raw(reqwest::Method::GET, "/usage", Vec::new()).await;
    assert_eq!(status, 200, "{report}");
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workspaceId"] == ws)
        .cloned()
}

/// Issue 25, the attack: turn 1 in workspace W1 ends with a review of `issue_refund`; a resume
/// approving it with another `workspaceId` (W2) on the same thread is refused after the first
/// frame with `RUN_ERROR` `THREAD_OTHER_WORKSPACE`: the refund does not run, the model is not
/// called, and W2's usage counts nothing. W1's own resume still runs the refund.
#[tokio::test]
async fn a_resume_from_another_workspace_is_refused_and_runs_nothing() {
    let tools = ScriptedServer::start(|_| Reply::json(&json!({"refunded": true}))).await;
    let model = ScriptedServer::script(vec![
        refund_call(),
        Reply::sse(&[chunk::role(), chunk::text("Done."), chunk::finish("stop")]),
    ])
    .await;
    let s = serve(&model.base_url, Some(&tools), false).await;
    let (w1, w2, thread) = (fresh_id(), fresh_id(), fresh_id());
    let in_workspace = |mut body: Value, ws: &str| {
        body["workspaceId"] = json!(ws);
        body
    };
    let t = s
        .client
        .turn(&in_workspace(
            run_body(&fresh_id(), &thread, "Refund DH-1"),
            &w1,
        ))
        .await;
    assert_eq!(outcome(&t)["interrupts"][0]["kind"], "review");

    let approve = json!({"decision": "approve"});
    let t = s
        .client
        .turn(&in_workspace(resume_body(&thread, approve.clone()), &w2))
        .await;
    assert_eq!(
        t.frames.first().unwrap()["type"],
        "STEP_STARTED",
        "{:?}",
        t.frames
    );
    assert_eq!(t.last()["type"], "RUN_ERROR", "{:?}", t.frames);
    assert_eq!(t.last()["code"], "THREAD_OTHER_WORKSPACE");
    assert!(tools.requests().is_empty(), "the refund ran for W2");
    assert_eq!(model_calls(&model).len(), 1, "the model was called for W2");
    assert_eq!(usage_row(&s.client, &w2).await, None, "W2 was counted");
    assert_eq!(usage_row(&s.client, &w1).await.unwrap()["turns"], 1);

    let t = s
        .client
        .turn(&in_workspace(resume_body(&thread, approve), &w1))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert_eq!(t.text(), "Done.");
    assert_eq!(tools.requests().len(), 1);
    assert_eq!(usage_row(&s.client, &w2).await, None);
    assert_eq!(usage_row(&s.client, &w1).await.unwrap()["turns"], 2);
    s.stop().await;
}

#[tokio::test]
async fn approve_runs_the_pending_call_and_continues() {
    let (t, tool_calls, req) = approval_round_trip(json!({"decision": "approve"})).await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert_eq!(tool_calls.len(), 1);
    assert_eq!(tool_calls[0].json(), json!({"order": "DH-1", "amount": 20}));
    assert_eq!(of_type(&t, "TOOL_CALL_RESULT").len(), 1);
    assert_eq!(t.text(), "Done.");
    assert_eq!(roles(&req), ["system", "user", "assistant", "tool"]);
    assert_eq!(req["messages"][3]["tool_call_id"], "call_r");
    assert!(
        req["messages"][3]["content"]
            .as_str()
            .unwrap()
            .contains("refunded")
    );
}

#[tokio::test]
async fn edit_runs_the_call_with_the_edited_arguments() {
    let (t, tool_calls, req) = approval_round_trip(json!({"decision": "edit",
        "editedAction": {"name": "issue_refund", "arguments": "{\"order\":\"DH-1\",\"amount\":5}"}}))
    .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert_eq!(tool_calls.len(), 1);
    assert_eq!(tool_calls[0].json(), json!({"order": "DH-1", "amount": 5}));
    assert_eq!(
        req["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"order\":\"DH-1\",\"amount\":20}",
        "the model's own call stays as it made it"
    );
}

#[tokio::test]
async fn reject_tells_the_model_and_runs_nothing() {
    let (t, tool_calls, req) = approval_round_trip(json!({"decision": "reject"})).await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert!(tool_calls.is_empty());
    assert_eq!(roles(&req), ["system", "user", "assistant", "tool"]);
    assert!(
        req["messages"][3]["content"]
            .as_str()
            .unwrap()
            .contains("rejected")
    );
}

#[tokio::test]
async fn respond_passes_the_users_words() {
    let (_, tool_calls, req) =
        approval_round_trip(json!({"decision": "respond", "message": "Only refund 10"})).await;
    assert!(tool_calls.is_empty());
    assert!(
        req["messages"][3]["content"]
            .as_str()
            .unwrap()
            .contains("Only refund 10")
    );
}

#[tokio::test]
async fn a_resume_with_nothing_pending_gets_a_clear_answer() {
    let model = ScriptedServer::script(vec![]).await;
    let s = serve(&model.base_url, None, false).await;
    let t = s
        .client
        .turn(&resume_body(&fresh_id(), json!({"decision": "approve"})))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert!(t.text().contains("nothing waiting"), "{}", t.text());
    assert!(model.requests().is_empty());
    s.stop().await;
}

#[tokio::test]
async fn a_429_before_the_first_token_is_retried_after_retry_after() {
    let model = ScriptedServer::script(vec![
        Reply::status(
            429,
            &[("retry-after", "1")],
            &json!({"error": {"message": "Rate limit reached", "type": "rate_limit"}}),
        ),
        Reply::sse(&[
            chunk::role(),
            chunk::text("Here you go."),
            chunk::finish("stop"),
        ]),
    ])
    .await;
    let s = serve(&model.base_url, None, false).await;
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "Hi"))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert_eq!(t.text(), "Here you go.");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2);
    let gap = reqs[1].at - reqs[0].at;
    assert!(
        gap >= Duration::from_millis(950),
        "Retry-After ignored: {gap:?}"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_stream_cut_mid_answer_ends_with_run_error_and_keeps_what_arrived() {
    let model = ScriptedServer::script(vec![
        Reply::stream(vec![
            Piece::Data(format!("data: {}\n\n", chunk::role())),
            Piece::Data(format!(
                "data: {}\n\n",
                chunk::text("The refund policy is ")
            )),
            Piece::Cut,
        ]),
        Reply::sse(&[
            chunk::role(),
            chunk::text("30 days."),
            chunk::finish("stop"),
        ]),
    ])
    .await;
    let s = serve(&model.base_url, None, true).await;
    let thread = fresh_id();
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &thread, "Refund policy?"))
        .await;
    let last = t.last();
    assert_eq!(last["type"], "RUN_ERROR", "{:?}", t.frames);
    assert_eq!(
        last["message"],
        "The model's answer was cut off. Please try again."
    );
    assert_eq!(t.text(), "The refund policy is ");
    assert_eq!(model.requests().len(), 1, "no retry once text went out");

    // What arrived stays in the thread the model sees next.
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &thread, "Go on"))
        .await;
    assert_eq!(t.text(), "30 days.");
    let req = &model_calls(&model)[1];
    assert_eq!(roles(req), ["system", "user", "assistant", "user"]);
    assert_eq!(req["messages"][2]["content"], "The refund policy is ");
    let log = s.stop().await;
    assert!(
        log.contains("stream broke"),
        "the log has the detail: {log}"
    );
    assert!(!log.contains(KEY), "the key reached the log");
}

#[tokio::test]
async fn a_slow_stream_keeps_heartbeats_going() {
    let mut pieces = vec![Piece::Data(format!("data: {}\n\n", chunk::role()))];
    for word in ["Slow ", "and ", "steady."] {
        pieces.push(Piece::Pause(Duration::from_millis(2500)));
        pieces.push(Piece::Data(format!("data: {}\n\n", chunk::text(word))));
    }
    pieces.push(Piece::Data(format!("data: {}\n\n", chunk::finish("stop"))));
    pieces.push(Piece::Data("data: [DONE]\n\n".into()));
    let model = ScriptedServer::script(vec![Reply::stream(pieces)]).await;
    let s = serve(&model.base_url, None, false).await;
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "Hi"))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert_eq!(t.text(), "Slow and steady.");
    assert!(t.comments >= 4, "heartbeats: {}", t.comments);
    assert!(
        t.longest_silence() < Duration::from_millis(1800),
        "silence of {:?}",
        t.longest_silence()
    );
    s.stop().await;
}

#[tokio::test]
async fn a_refused_model_call_shows_a_safe_message_and_logs_the_detail_without_the_key() {
    // Some endpoints echo the key they refused.
    let model = ScriptedServer::script(vec![Reply::status(
        401,
        &[],
        &json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}}),
    )])
    .await;
    let s = serve(&model.base_url, None, true).await;
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "Hi"))
        .await;
    let last = t.last();
    assert_eq!(last["type"], "RUN_ERROR");
    assert_eq!(
        last["message"],
        "The agent could not get an answer from its model."
    );
    assert!(!t.frames.iter().any(|f| f.to_string().contains(KEY)));
    assert_eq!(model.requests().len(), 1, "a 401 is not retried");
    let log = s.stop().await;
    assert!(log.contains("HTTP 401"), "the log has the detail: {log}");
    assert!(!log.contains(KEY), "the key reached the log: {log}");
}

#[tokio::test]
async fn a_bad_tools_file_refuses_to_start_with_its_line() {
    let dir = free_data_dir("model-agent-tools");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tools.toml");
    std::fs::write(
        &file,
        "[[tools]]\nname = \"a\"\nmethod = \"GET\"\nurl = \"http://127.0.0.1:9/x\"\naproval = true\n",
    )
    .unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(runway_binary())
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&dir)
            .env("RUNWAY_AGENT", "model")
            .env("RUNWAY_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
            .env("RUNWAY_MODEL", "m")
            .env("RUNWAY_TOOLS_FILE", &file)
            .env_remove("RUNWAY_TOOLS")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("exits at once")
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 5"), "{stderr}");
    assert!(stderr.contains("aproval"), "{stderr}");
}

#[tokio::test]
async fn a_new_message_instead_of_a_decision_settles_the_pending_call() {
    let tools = ScriptedServer::start(|_| Reply::json(&json!({"refunded": true}))).await;
    let model = ScriptedServer::script(vec![
        refund_call(),
        Reply::sse(&[chunk::role(), chunk::text("Sure."), chunk::finish("stop")]),
    ])
    .await;
    let s = serve(&model.base_url, Some(&tools), false).await;
    let thread = fresh_id();
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &thread, "Refund DH-1"))
        .await;
    assert_eq!(outcome(&t)["type"], "interrupt");
    let t = s
        .client
        .turn(&run_body(
            &fresh_id(),
            &thread,
            "Actually, check the weather",
        ))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert!(
        tools.requests().is_empty(),
        "the refund ran without a decision"
    );
    let req = &model_calls(&model)[1];
    // A valid transcript: the call answered, the user's words with it.
    assert_eq!(roles(req), ["system", "user", "assistant", "tool"]);
    let answer = req["messages"][3]["content"].as_str().unwrap();
    assert!(
        answer.contains("Not run") && answer.contains("check the weather"),
        "{answer}"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_replayed_run_id_never_calls_the_model_again() {
    let model = ScriptedServer::script(vec![Reply::sse(&[
        chunk::role(),
        chunk::text("Once."),
        chunk::finish("stop"),
    ])])
    .await;
    let s = serve(&model.base_url, None, false).await;
    let body = run_body(&fresh_id(), &fresh_id(), "Hi");
    let first = s.client.turn(&body).await;
    let again = s.client.turn(&body).await;
    assert_eq!(first.text(), "Once.");
    assert_eq!(again.frames, first.frames);
    assert_eq!(model.requests().len(), 1);
    s.stop().await;
}

#[tokio::test]
async fn an_unreachable_model_is_retried_then_reported() {
    // A port that refuses connections: bind, note it, close.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let s = serve(&format!("http://127.0.0.1:{port}"), None, true).await;
    let started = std::time::Instant::now();
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "Hi"))
        .await;
    let took = started.elapsed();
    let last = t.last();
    assert_eq!(last["type"], "RUN_ERROR", "{:?}", t.frames);
    assert_eq!(
        last["message"],
        "The model is not available right now. Please try again in a moment."
    );
    // 5 attempts: 0.5 + 1 + 2 + 4 s of backoff between them.
    assert!(
        took >= Duration::from_millis(7400),
        "gave up after {took:?}"
    );
    let log = s.stop().await;
    assert_eq!(log.matches("retrying").count(), 4, "{log}");
    assert!(log.contains("could not connect"), "{log}");
    assert!(!log.contains(KEY));
}

/// Issue 25, finding 6: an edit naming another tool than the pending call, by the call's id
/// or without one, is refused: the question is asked again and nothing runs.
#[tokio::test]
async fn an_edit_naming_another_tool_than_the_pending_call_runs_nothing() {
    let tools = ScriptedServer::start(|_| Reply::json(&json!({"refunded": true}))).await;
    let model = ScriptedServer::script(vec![refund_call()]).await;
    let s = serve(&model.base_url, Some(&tools), false).await;
    let thread = fresh_id();
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &thread, "Refund DH-1"))
        .await;
    assert_eq!(outcome(&t)["type"], "interrupt");
    for edit in [
        json!({"id": "call_r", "name": "create_note", "arguments": {"text": "x"}}),
        json!({"name": "refund", "arguments": {"order": "DH-1", "amount": 7}}),
    ] {
        let t = s
            .client
            .turn(&resume_body(
                &thread,
                json!({"decision": "edit", "editedAction": edit}),
            ))
            .await;
        let o = outcome(&t);
        assert_eq!(o["type"], "interrupt", "{edit}: {o}");
        assert_eq!(o["interrupts"][0]["items"][0]["name"], "issue_refund");
        assert!(t.text().starts_with("Nothing was run"), "{}", t.text());
    }
    s.stop().await;
    assert!(tools.requests().is_empty(), "a tool ran");
    assert_eq!(model_calls(&model).len(), 1, "the model was called again");
}

/// The secret part of every attachment link: it must never reach a log.
const LINK_SECRET: &str = "sig=7c1f0d9e2b5a";

/// A file server on loopback: `/notes.txt` (text), `/pixel.png`, `/big.bin` (5,000 bytes of
/// text, sent in pieces), `/hop` (a redirect to a private address).
async fn file_server() -> ScriptedServer {
    ScriptedServer::start(|r| {
        let path = r.target.split('?').next().unwrap_or_default();
        let file = |pieces: Vec<Piece>| Reply {
            status: 200,
            // What the file server declares is not what runway trusts either.
            headers: vec![("content-type".into(), "application/octet-stream".into())],
            pieces,
        };
        match path {
            "/notes.txt" => file(vec![Piece::Data(
                "Order DH-99217: 2 × bánh mì, paid.\n".into(),
            )]),
            "/pixel.png" => file(vec![Piece::Bytes(PIXEL_PNG.to_vec())]),
            "/big.bin" => file((0..5).map(|_| Piece::Data("x".repeat(1000))).collect()),
            "/hop" => Reply {
                status: 302,
                headers: vec![(
                    "location".into(),
                    "https://169.254.169.254/latest/meta-data/".into(),
                )],
                pieces: vec![],
            },
            _ => Reply::status(404, &[], &json!({"error": "no such file"})),
        }
    })
    .await
}

fn attachment(id: &str, url: &str, name: &str, mime: &str, size: u64) -> Value {
    json!({"id": id, "url": url, "name": name, "mime": mime, "sizeBytes": size})
}

fn hits(server: &ScriptedServer, path: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.target.split('?').next() == Some(path))
        .count()
}

fn answer(text: &str) -> Reply {
    Reply::sse(&[
        chunk::role(),
        chunk::text(text),
        chunk::finish("stop"),
        chunk::usage(),
    ])
}

#[tokio::test]
async fn attachments_reach_the_model_typed_from_their_bytes_and_are_downloaded_once() {
    let files = file_server().await;
    let model = ScriptedServer::script(vec![answer("Got both."), answer("Still here.")]).await;
    let s = serve_with(
        &model.base_url,
        None,
        true,
        &[
            ("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK", "1"),
            ("RUNWAY_LOG", "debug"),
        ],
    )
    .await;
    let thread = fresh_id();
    let notes = format!("{}/notes.txt?{LINK_SECRET}", files.base_url);
    let pixel = format!("{}/pixel.png?{LINK_SECRET}", files.base_url);
    let mut body = run_body(&fresh_id(), &thread, "What is in these?");
    // Declared types are lies and the name is a path: neither is used.
    body["attachments"] = json!([
        attachment("file-notes", &notes, "../../etc/passwd", "image/png", 3),
        attachment("file-pixel", &pixel, "/tmp/x.txt", "text/plain", 999_999),
    ]);
    let t = s.client.turn(&body).await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert_eq!(t.text(), "Got both.");

    let req = &model_calls(&model)[0];
    let user = &req["messages"][1];
    assert_eq!(user["role"], "user");
    let parts = user["content"].as_array().expect("content parts");
    assert_eq!(
        parts[0],
        json!({"type": "text", "text": "What is in these?"})
    );
    assert_eq!(parts[1]["type"], "text");
    let text = parts[1]["text"].as_str().unwrap();
    assert!(text.starts_with("[Attached file 1: text"), "{text}");
    assert!(
        text.ends_with("Order DH-99217: 2 × bánh mì, paid.\n"),
        "{text}"
    );
    assert_eq!(parts[2]["type"], "image_url");
    let data_url = parts[2]["image_url"]["url"].as_str().unwrap();
    assert!(
        data_url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{data_url}"
    );
    assert!(
        !req.to_string().contains(LINK_SECRET),
        "the link reached the model"
    );

    // The next turn sends the same files again (Console resends them): not downloaded again,
    // not added again; the image still reaches the model, from the thread's store.
    let mut body = run_body(&fresh_id(), &thread, "And now?");
    body["attachments"] = json!([
        attachment("file-notes", &notes, "notes.txt", "text/plain", 40),
        attachment("file-pixel", &pixel, "pixel.png", "image/png", 70),
    ]);
    let t = s.client.turn(&body).await;
    assert_eq!(t.text(), "Still here.");
    assert_eq!(hits(&files, "/notes.txt"), 1);
    assert_eq!(hits(&files, "/pixel.png"), 1);
    let req = &model_calls(&model)[1];
    assert_eq!(roles(req), ["system", "user", "assistant", "user"]);
    assert_eq!(req["messages"][3]["content"], "And now?");
    assert_eq!(
        req["messages"][1]["content"][2]["image_url"]["url"],
        data_url
    );

    let log = s.stop().await;
    assert_eq!(
        log.matches("ALLOW_LOOPBACK").count(),
        1,
        "one warning at start-up: {log}"
    );
    assert!(!log.contains(LINK_SECRET), "a link reached the log:\n{log}");
}

#[tokio::test]
async fn unusable_attachments_are_explained_and_the_turn_goes_on() {
    let files = file_server().await;
    let model = ScriptedServer::script(vec![answer("I could not read those.")]).await;
    let s = serve_with(
        &model.base_url,
        None,
        true,
        &[
            ("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK", "1"),
            ("RUNWAY_ATTACHMENTS_MAX_BYTES", "2000"),
            ("RUNWAY_LOG", "debug"),
        ],
    )
    .await;
    let base = &files.base_url;
    let port = base.rsplit(':').next().unwrap();
    let mut body = run_body(&fresh_id(), &fresh_id(), "Read these please");
    body["attachments"] = json!([
        // Declares 10 bytes, streams 5,000: stopped at the 2,000-byte cap.
        attachment(
            "big",
            &format!("{base}/big.bin?{LINK_SECRET}"),
            "a.txt",
            "text/plain",
            10
        ),
        attachment(
            "private",
            &format!("https://10.0.0.7:{port}/x?{LINK_SECRET}"),
            "b",
            "text/plain",
            1
        ),
        attachment(
            "plain-http",
            &format!("http://files.example.com/x?{LINK_SECRET}"),
            "c",
            "text/plain",
            1
        ),
        attachment(
            "redirect",
            &format!("{base}/hop?{LINK_SECRET}"),
            "d",
            "text/plain",
            1
        ),
    ]);
    let t = s.client.turn(&body).await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    let shown = t.text();
    assert!(
        shown.contains("could not be used: it is larger than the 2000 bytes limit"),
        "{shown}"
    );
    assert!(shown.contains("private or reserved address"), "{shown}");
    assert!(shown.contains("not https"), "{shown}");
    assert!(shown.ends_with("I could not read those."), "{shown}");
    assert!(
        !shown.contains(LINK_SECRET) && !shown.contains("10.0.0.7"),
        "{shown}"
    );

    let req = &model_calls(&model)[0];
    let parts = req["messages"][1]["content"].as_array().expect("parts");
    let told: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
    assert_eq!(told.len(), 5, "{told:?}");
    assert!(
        told[1].starts_with("[Attached file 1 could not be used: it is larger"),
        "{told:?}"
    );
    assert!(told[2].contains("private or reserved address"), "{told:?}");
    assert!(told[3].contains("not https"), "{told:?}");
    assert!(
        told[4].contains("private or reserved address"),
        "redirect: {told:?}"
    );
    assert!(!req.to_string().contains(LINK_SECRET));
    assert_eq!(hits(&files, "/hop"), 1, "the first hop was fetched");
    let log = s.stop().await;
    assert!(!log.contains(LINK_SECRET), "a link reached the log:\n{log}");
}

#[tokio::test]
async fn without_the_test_setting_loopback_links_are_refused_before_connecting() {
    let files = file_server().await;
    let model = ScriptedServer::script(vec![answer("Nothing usable.")]).await;
    let s = serve(&model.base_url, None, false).await;
    let port = files.base_url.rsplit(':').next().unwrap().to_owned();
    let mut body = run_body(&fresh_id(), &fresh_id(), "Look");
    body["attachments"] = json!([
        attachment(
            "a",
            &format!("http://127.0.0.1:{port}/notes.txt"),
            "n",
            "text/plain",
            1
        ),
        attachment(
            "b",
            &format!("https://127.0.0.1:{port}/notes.txt"),
            "n",
            "text/plain",
            1
        ),
        // A name that resolves to loopback: refused by the resolver, on the resolved address.
        attachment(
            "c",
            &format!("https://localhost:{port}/notes.txt"),
            "n",
            "text/plain",
            1
        ),
    ]);
    let t = s.client.turn(&body).await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    let shown = t.text();
    assert_eq!(shown.matches("could not be used").count(), 3, "{shown}");
    assert!(shown.contains("not https"), "{shown}");
    assert_eq!(
        shown.matches("private or reserved address").count(),
        2,
        "{shown}"
    );
    assert!(files.requests().is_empty(), "a refused link was fetched");
    s.stop().await;
}

#[tokio::test]
async fn kept_attachments_outlive_their_link_and_a_restart() {
    kept_attachments_outlive_a_restart(|_| Vec::new()).await;
}

/// A workers file's model worker keeps its attachments where the built-in model agent does
/// (the data directory's SQLite), not in the process's memory.
#[tokio::test]
async fn a_workers_file_model_worker_keeps_attachments_across_a_restart() {
    kept_attachments_outlive_a_restart(|model| {
        let file = format!(
            "[workers.\"{AGENT_ID}\"]\nagent = \"model\"\nbase_url = \"{model}/v1\"\n\
             model = \"test-model\"\napi_key = \"${{RUNWAY_MODEL_API_KEY}}\"\n\
             system_prompt = \"{SYSTEM}\"\n"
        );
        vec![("RUNWAY_WORKERS".to_owned(), file)]
    })
    .await;
}

/// An image sent with one turn reaches the model again on a later turn of the thread after
/// its link died and runway restarted on the same data directory, for the model agent that
/// `settings` (given the model's base URL) configures on top of the built-in one.
async fn kept_attachments_outlive_a_restart(settings: impl Fn(&str) -> Vec<(String, String)>) {
    let files = file_server().await;
    let model = ScriptedServer::script(vec![answer("A pixel."), answer("Still a pixel.")]).await;
    let extra = settings(&model.base_url);
    let mut settings = vec![("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK", "1")];
    settings.extend(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let s = serve_with(&model.base_url, None, false, &settings).await;
    let thread = fresh_id();
    let pixel = format!("{}/pixel.png?{LINK_SECRET}", files.base_url);
    let mut body = run_body(&fresh_id(), &thread, "What is this?");
    body["attachments"] = json!([attachment("file-pixel", &pixel, "p.png", "image/png", 70)]);
    assert_eq!(s.client.turn(&body).await.text(), "A pixel.");
    let first = model_calls(&model)[0]["messages"][1]["content"][1].clone();
    assert_eq!(first["type"], "image_url");

    // The link is dead (its server is gone) and runway restarted on the same data directory.
    drop(files);
    s.process.stop().await;
    let s = serve_in(s.data_dir, &model.base_url, None, false, &settings).await;
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &thread, "And again?"))
        .await;
    assert_eq!(t.text(), "Still a pixel.");
    let req = &model_calls(&model)[1];
    assert_eq!(roles(req), ["system", "user", "assistant", "user"]);
    assert_eq!(
        req["messages"][1]["content"][1], first,
        "the kept image was sent again"
    );
    s.stop().await;
}

#[tokio::test]
async fn an_answer_cut_by_a_disconnect_stays_in_the_models_transcript() {
    let cut = Reply::stream(vec![
        Piece::Data(format!("data: {}\n\n", chunk::role())),
        Piece::Data(format!(
            "data: {}\n\n",
            chunk::text("Part one of the answer")
        )),
        Piece::Pause(Duration::from_secs(10)),
        Piece::Data(format!("data: {}\n\n", chunk::text(", never seen."))),
        Piece::Data(format!("data: {}\n\n", chunk::finish("stop"))),
        Piece::Data("data: [DONE]\n\n".into()),
    ]);
    let model = ScriptedServer::script(vec![cut, answer("Continuing.")]).await;
    let s = serve(&model.base_url, None, false).await;
    let thread = fresh_id();
    // The user leaves after the first piece of text.
    let t = s
        .client
        .turn_until(&run_body(&fresh_id(), &thread, "Tell me everything"), 3)
        .await;
    assert_eq!(t.last()["type"], "TEXT_MESSAGE_CONTENT", "{:?}", t.frames);
    // runway notices at the next heartbeat (1 s) and records the turn as cancelled.
    tokio::time::sleep(Duration::from_millis(2500)).await;

    let t = s
        .client
        .turn(&run_body(&fresh_id(), &thread, "Go on"))
        .await;
    assert_eq!(t.text(), "Continuing.");
    let req = &model_calls(&model)[1];
    assert_eq!(roles(req), ["system", "user", "assistant", "user"]);
    assert_eq!(req["messages"][2]["content"], "Part one of the answer");
    assert_eq!(req["messages"][3]["content"], "Go on");
    s.stop().await;
}

// ---- under attack (issue 20): a prompt-injected or hostile model, a hostile tool API -------

/// A model that calls `calls` (id, tool, arguments) in its first reply, and answers "Done."
/// to every request that ends with tool results.
async fn model_calling(
    calls: &'static [(&'static str, &'static str, &'static str)],
) -> ScriptedServer {
    ScriptedServer::start(move |r| {
        let last_role = r.json()["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| m["role"].clone());
        if last_role == Some(json!("tool")) {
            return Reply::sse(&[chunk::role(), chunk::text("Done."), chunk::finish("stop")]);
        }
        let mut chunks = vec![chunk::role()];
        for (i, (id, name, args)) in calls.iter().enumerate() {
            chunks.push(chunk::tool_start(i as u32, id, name, args));
        }
        chunks.push(chunk::finish("tool_calls"));
        Reply::sse(&chunks)
    })
    .await
}

/// Finding 1: two calls of one tool; the user edits the second (by id). Exactly that call runs,
/// with the edit; the first is asked about again (never run unedited, never given the edit).
/// An edit that does not say which of the two it is for is refused, and nothing runs. (The
/// same checks run on Lambda and Workers: `runway_e2e::approval_checks`.)
#[tokio::test]
async fn an_edit_lands_on_the_call_it_names_among_two_calls_of_one_tool() {
    let tools = ScriptedServer::start(|_| Reply::json(&json!({"refunded": true}))).await;
    let model =
        ScriptedServer::start(|r| approval_checks::approvals_model(r).expect("scripted")).await;
    let s = serve(&model.base_url, Some(&tools), false).await;
    approval_checks::an_edit_lands_on_the_call_it_names(&s.client, &tools).await;
    let last = model_calls(&model).pop().unwrap();
    assert_eq!(
        roles(&last),
        ["system", "user", "assistant", "tool", "tool"]
    );
    s.stop().await;
}

/// Finding 3: ten `approve` resumes of one pending call sent at once (ten runIds on one
/// thread) run it once.
#[tokio::test]
async fn ten_concurrent_approvals_of_one_pending_call_run_it_once() {
    let tools = ScriptedServer::start(|_| Reply {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        // Slow enough that every approval has loaded the pending call before one finishes.
        pieces: vec![
            Piece::Pause(Duration::from_millis(300)),
            Piece::Data("{\"refunded\":true}".into()),
        ],
    })
    .await;
    let model =
        ScriptedServer::start(|r| approval_checks::approvals_model(r).expect("scripted")).await;
    let s = serve(&model.base_url, Some(&tools), false).await;
    approval_checks::concurrent_approvals_run_the_call_once(&s.client, &tools).await;
    s.stop().await;
}

/// `runway serve` with `tools` (a tools file's TOML), and one turn saying `input` that ends in
/// success.
async fn one_turn_with_tools(model: &ScriptedServer, tools: &str, input: &str) -> Served {
    let s = serve_with(&model.base_url, None, false, &[("RUNWAY_TOOLS", tools)]).await;
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), input))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    s
}

fn tool_results_of(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// Finding 4: `{id}` = `..` in `…/orders/{id}/status` never reaches `/api/v1/status`: the
/// call is refused before any request, and the model is told why.
#[tokio::test]
async fn a_dot_segment_argument_cannot_move_a_tool_request() {
    let api = ScriptedServer::start(|_| Reply::json(&json!({"status": "shipped"}))).await;
    let tools = format!(
        r#"
[[tools]]
name = "order_status"
parameters = {{ type = "object", properties = {{ id = {{ type = "string" }} }} }}
method = "GET"
url = "{}/api/v1/orders/{{id}}/status"
"#,
        api.base_url
    );
    let model = model_calling(&[
        ("s1", "order_status", "{\"id\":\"..\"}"),
        ("s2", "order_status", "{\"id\":\"7/../../admin?x=#\"}"),
    ])
    .await;
    let s = one_turn_with_tools(&model, &tools, "Status?").await;
    let targets: Vec<String> = api.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(
        targets,
        ["/api/v1/orders/7%2F..%2F..%2Fadmin%3Fx%3D%23/status"]
    );
    let results = tool_results_of(&model_calls(&model)[1]);
    assert!(
        results[0].starts_with("Error:") && results[0].contains(".."),
        "{results:?}"
    );
    s.stop().await;
}

/// Finding 5: a tool API answering 302 to another origin: not followed by default (the other
/// origin sees nothing), followed within the origin with the tool's headers, and with
/// `redirects = "any"` followed without them.
#[tokio::test]
async fn tool_headers_never_follow_a_redirect_to_another_origin() {
    let elsewhere = ScriptedServer::start(|_| Reply::json(&json!({"stolen": "nothing"}))).await;
    let away = format!("{}/collect", elsewhere.base_url);
    let api = ScriptedServer::start(move |r| {
        let to = match r.target.as_str() {
            "/away" | "/away-any" => away.clone(),
            "/hop" => "/landed".to_owned(),
            _ => return Reply::json(&json!({"landed": r.target})),
        };
        Reply {
            status: 302,
            headers: vec![("location".into(), to)],
            pieces: vec![],
        }
    })
    .await;
    let tool = |name: &str, path: &str, extra: &str| {
        format!(
            "[[tools]]\nname = \"{name}\"\nmethod = \"GET\"\nurl = \"{}{path}\"\n\
             headers = {{ X-Api-Key = \"${{TOOL_TOKEN}}\" }}\n{extra}\n",
            api.base_url
        )
    };
    let tools = [
        tool("away", "/away", ""),
        tool("hop", "/hop", ""),
        tool("away_any", "/away-any", "redirects = \"any\""),
    ]
    .concat();
    let model = model_calling(&[
        ("a", "away", "{}"),
        ("h", "hop", "{}"),
        ("y", "away_any", "{}"),
    ])
    .await;
    let s = one_turn_with_tools(&model, &tools, "Look it up").await;
    let results = tool_results_of(&model_calls(&model)[1]);
    assert!(results[0].contains("another origin"), "{results:?}");
    assert!(results[1].contains("/landed"), "{results:?}");
    let landed = api
        .requests()
        .into_iter()
        .find(|r| r.target == "/landed")
        .unwrap();
    assert_eq!(
        landed.header("x-api-key"),
        Some(TOOL_TOKEN),
        "same origin keeps its headers"
    );
    let seen = elsewhere.requests();
    assert_eq!(seen.len(), 1, "only the `any` tool went there: {seen:?}");
    assert_eq!(
        seen[0].header("x-api-key"),
        None,
        "a tool header crossed origins"
    );
    s.stop().await;
}

/// Finding 8: a hostile model endpoint cannot grow memory without bound: data lines with no
/// blank line between them, a response past the cap (keep-alive comments, which show
/// nothing), and endless arguments of one call each end the turn or the call with a clear
/// answer.
#[tokio::test]
async fn a_hostile_model_stream_is_bounded() {
    let line = format!("data: {}\n", "x".repeat(700 * 1024));
    let comment = format!(": {}\n", "k".repeat(1024 * 1024 - 3));
    let mut endless_args = vec![
        Piece::Data(format!("data: {}\n\n", chunk::role())),
        Piece::Data(format!(
            "data: {}\n\n",
            chunk::tool_start(0, "w", "get_weather", "{\"city\":\"")
        )),
    ];
    for _ in 0..20 {
        endless_args.push(Piece::Data(format!(
            "data: {}\n\n",
            chunk::tool_args(0, &"y".repeat(8 * 1024))
        )));
    }
    endless_args.push(Piece::Data(format!(
        "data: {}\n\n",
        chunk::finish("tool_calls")
    )));
    endless_args.push(Piece::Data("data: [DONE]\n\n".into()));
    let tools = ScriptedServer::start(|_| Reply::json(&json!({}))).await;
    // Each user message picks its hostile answer (a broken stream is retried: the same again).
    let model = ScriptedServer::start(move |r| {
        let messages = r.json()["messages"].clone();
        let last = messages
            .as_array()
            .and_then(|m| m.last())
            .cloned()
            .unwrap_or_default();
        match last["content"].as_str().unwrap_or_default() {
            _ if last["role"] == "tool" => Reply::sse(&[
                chunk::role(),
                chunk::text("Too long, sorry."),
                chunk::finish("stop"),
            ]),
            "lines" => Reply::stream(vec![Piece::Data(line.clone()), Piece::Data(line.clone())]),
            "comments" => Reply::stream((0..9).map(|_| Piece::Data(comment.clone())).collect()),
            _ => Reply::stream(endless_args.clone()),
        }
    })
    .await;
    let s = serve_with(
        &model.base_url,
        Some(&tools),
        false,
        &[("RUNWAY_TURN_DEADLINE_SECS", "60")],
    )
    .await;
    for input in ["lines", "comments"] {
        let t = s
            .client
            .turn(&run_body(&fresh_id(), &fresh_id(), input))
            .await;
        assert_eq!(t.last()["type"], "RUN_ERROR", "{input}: {:?}", t.types());
    }
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "args"))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert!(tools.requests().is_empty(), "an oversized call ran");
    let last = model_calls(&model).pop().unwrap();
    let results = tool_results_of(&last);
    assert!(results[0].contains("longer than"), "{results:?}");
    s.stop().await;
}

/// Finding 9: one reply with 40 calls runs 4 (the default cap), answers the rest as refused,
/// and the model hears how many were refused.
#[tokio::test]
async fn tool_calls_past_the_cap_of_one_reply_are_refused() {
    static CALLS: std::sync::LazyLock<Vec<(&'static str, &'static str, &'static str)>> =
        std::sync::LazyLock::new(|| {
            (0..40)
                .map(|i| -> (&'static str, &'static str, &'static str) {
                    (
                        Box::leak(format!("c{i}").into_boxed_str()),
                        "get_weather",
                        "{\"city\":\"Hue\"}",
                    )
                })
                .collect()
        });
    let tools = ScriptedServer::start(|_| Reply::json(&json!({"summary": "sunny"}))).await;
    let model = model_calling(&CALLS).await;
    let s = serve(&model.base_url, Some(&tools), false).await;
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "Weather x40"))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert_eq!(tools.requests().len(), 4, "calls in flight past the cap");
    let results = tool_results_of(&model_calls(&model)[1]);
    assert_eq!(results.len(), 12, "4 run, 8 refused and kept");
    let refused = results
        .iter()
        .filter(|r| r.contains("at most 4 tool calls"))
        .count();
    assert_eq!(refused, 8, "{results:?}");
    assert_eq!(results.iter().filter(|r| r.contains("sunny")).count(), 4);
    assert!(results.iter().any(|r| r.contains("28 more")), "{results:?}");
    s.stop().await;
}

/// Finding 10: a usage chunk with every piece of an answer logs one line, not one per chunk;
/// an in-stream error echoing the API key is logged without it.
#[tokio::test]
async fn model_logs_are_bounded_and_never_carry_the_key() {
    let mut chunks = vec![chunk::role()];
    for _ in 0..2000 {
        chunks.push(chunk::usage());
    }
    chunks.push(chunk::text("Hi."));
    chunks.push(chunk::finish("stop"));
    let echo = format!(
        "data: {}\n\n",
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}})
    );
    let model = ScriptedServer::script(vec![
        Reply::sse(&chunks),
        Reply::stream(vec![
            Piece::Data(format!("data: {}\n\n", chunk::role())),
            Piece::Data(format!("data: {}\n\n", chunk::text("Par"))),
            Piece::Data(echo),
        ]),
    ])
    .await;
    let s = serve(&model.base_url, None, true).await;
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "Hi"))
        .await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    let t = s
        .client
        .turn(&run_body(&fresh_id(), &fresh_id(), "Hi"))
        .await;
    assert_eq!(t.last()["type"], "RUN_ERROR");
    let log = s.stop().await;
    assert_eq!(log.matches("model usage").count(), 1, "{}", log.len());
    assert!(log.contains("Incorrect API key provided"), "{log}");
    assert!(!log.contains(KEY), "the key reached the log");
}

/// Finding 7: stored images are not all inlined into every later request: 4 images a turn for
/// 3 turns send the 8 most recent (the default), the oldest named instead; and a thread's
/// kept files are bounded (here 200 bytes: a file past them is refused, and said so).
#[tokio::test]
async fn images_per_request_and_files_per_thread_are_bounded() {
    let files = file_server().await;
    let model = ScriptedServer::start(|_| answer("Seen.")).await;
    let s = serve_with(
        &model.base_url,
        None,
        false,
        &[("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK", "1")],
    )
    .await;
    let thread = fresh_id();
    let pixel = format!("{}/pixel.png?{LINK_SECRET}", files.base_url);
    for turn in 0..3 {
        let mut body = run_body(&fresh_id(), &thread, "And these?");
        body["attachments"] = (0..4)
            .map(|i| {
                attachment(
                    &format!("img-{turn}-{i}"),
                    &pixel,
                    &format!("photo-{turn}-{i}.png"),
                    "image/png",
                    70,
                )
            })
            .collect();
        let t = s.client.turn(&body).await;
        assert_eq!(outcome(&t), json!({"type": "success"}));
    }
    let last = model_calls(&model).pop().unwrap();
    let parts: Vec<Value> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .collect();
    let images = parts.iter().filter(|p| p["type"] == "image_url").count();
    assert_eq!(images, 8, "{parts:?}");
    let named: Vec<&str> = parts
        .iter()
        .filter_map(|p| p["text"].as_str())
        .filter(|t| t.contains("not sent again"))
        .collect();
    assert_eq!(named.len(), 4, "{named:?}");
    assert!(named[0].contains("photo-0-0.png"), "{named:?}");
    s.stop().await;

    // Per thread: three pixels reach 200 bytes; the fourth is refused.
    let model = ScriptedServer::start(|_| answer("Seen.")).await;
    let s = serve_with(
        &model.base_url,
        None,
        false,
        &[
            ("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK", "1"),
            ("RUNWAY_ATTACHMENTS_MAX_THREAD_BYTES", "200"),
        ],
    )
    .await;
    let mut body = run_body(&fresh_id(), &fresh_id(), "Keep these");
    body["attachments"] = (0..4)
        .map(|i| attachment(&format!("k{i}"), &pixel, "p.png", "image/png", 70))
        .collect();
    let t = s.client.turn(&body).await;
    assert_eq!(outcome(&t), json!({"type": "success"}));
    assert_eq!(t.text().matches("already keeps").count(), 1, "{}", t.text());
    s.stop().await;
}

/// A workers file of model workers (issue 18) on `runway serve`: the scenario every runtime
/// runs (tests/src/model_workers.rs).
#[tokio::test]
async fn a_workers_file_of_model_workers_with_usage_and_a_token_budget() {
    let bench = runway_e2e::model_workers::ModelWorkers::start().await;
    let workers = bench.workers_file();
    let s = serve_with(
        "http://127.0.0.1:9",
        None,
        false,
        &[
            ("RUNWAY_WORKERS", &workers),
            (
                "RUNWAY_MODEL_API_KEY",
                runway_e2e::model_workers::ModelWorkers::KEY,
            ),
        ],
    )
    .await;
    bench.check(&s.client).await;
    s.stop().await;
}

/// MCP tools through the real `runway serve`: every tool of the reference everything server,
/// an MCP server written with the official Python SDK (approval, restart, timeout and
/// cancellation), one that is down and one that redirects (tests/src/mcp_scenario.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_of_real_servers_are_listed_called_approved_and_survive_restarts() {
    let mut bench = runway_e2e::mcp_scenario::McpBench::start().await;
    let data_dir = free_data_dir("model-agent-mcp");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .env("RUNWAY_AGENT", "model")
        .env("RUNWAY_TURN_DEADLINE_SECS", "30")
        .env("RUNWAY_LOG", "warn")
        .env_remove("RUNWAY_TOOLS_FILE")
        .env_remove("RUNWAY_AUTH_HEADERS")
        .env_remove("RUNWAY_MODEL_API_KEY")
        .env_remove("RUNWAY_SYSTEM_PROMPT");
    for (k, v) in bench.settings() {
        cmd.env(k, v);
    }
    let process = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let client = Client::new(process.base_url(), vec![]);
    let result =
        futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(bench.check(&client))).await;
    process.stop().await;
    bench.stop().await;
    let _ = std::fs::remove_dir_all(data_dir);
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}
