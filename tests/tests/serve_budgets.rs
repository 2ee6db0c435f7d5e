//! Token budgets under concurrent and stopped turns (issue 25), on the real `runway serve`
//! binary with its SQLite store, a scripted model and a tool on loopback.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::future::join_all;
use runway_e2e::client::{fresh_id, run_body};
use runway_e2e::scripted_server::{Piece, Reply, ScriptedServer, chunk};
use runway_e2e::{AgentProcess, Client, free_data_dir, runway_binary};
use serde_json::{Value, json};
use tokio::process::Command;

const KEY: &str = "sk-budgets-5e1b";

/// `runway serve` with one model worker (`agentId` `worker`) calling `model`, with the tool
/// `get_weather` on `tools` and the limits `limits` (TOML inline table).
async fn serve(
    model: &ScriptedServer,
    tools: &ScriptedServer,
    worker: &str,
    limits: &str,
) -> (AgentProcess, Client, PathBuf) {
    let workers = format!(
        r#"
[defaults]
agent = "model"
base_url = "{model}/v1"
model = "test-model"
api_key = "${{RUNWAY_MODEL_API_KEY}}"

[workers."{worker}"]
system_prompt = "You are the order desk."
tools = '''
[[tools]]
name = "get_weather"
parameters = {{ type = "object", properties = {{ city = {{ type = "string" }} }} }}
method = "GET"
url = "{tools}/now?city={{city}}"
'''
limits = {limits}
"#,
        model = model.base_url,
        tools = tools.base_url,
    );
    let data_dir = free_data_dir("budgets");
    std::fs::create_dir_all(&data_dir).unwrap();
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .env("RUNWAY_WORKERS", workers)
        .env("RUNWAY_MODEL_API_KEY", KEY)
        .env("RUNWAY_HEARTBEAT_SECS", "1")
        .env("RUNWAY_TURN_DEADLINE_SECS", "30")
        .env("RUNWAY_LOG", "warn")
        .env_remove("RUNWAY_AGENT")
        .env_remove("RUNWAY_WORKERS_FILE")
        .env_remove("RUNWAY_AUTH_HEADERS");
    let process = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let client = Client::new(process.base_url(), vec![]);
    (process, client, data_dir)
}

fn turn_of(worker: &str, workspace: &str, input: &str) -> Value {
    let mut body = run_body(&fresh_id(), &fresh_id(), input);
    body["agentId"] = json!(worker);
    body["workspaceId"] = json!(workspace);
    body
}

/// Today's usage row of `worker` in `workspace`.
async fn usage_row(client: &Client, worker: &str, workspace: &str) -> Option<Value> {
    let (status, report) = client.raw(reqwest::Method::GET, "/usage", Vec::new()).await;
    assert_eq!(status, 200, "{report}");
    report["rows"]
        .as_array()?
        .iter()
        .find(|r| r["agentId"] == worker && r["workspaceId"] == workspace)
        .cloned()
}

fn tokens(row: &Value) -> u64 {
    row["inputTokens"].as_u64().unwrap() + row["outputTokens"].as_u64().unwrap()
}

/// Issue 25: six concurrent tool-loop turns under a 100-token day (15 tokens a call) made 42
/// model calls (630 tokens): each compared only its own usage with what was left when it was
/// admitted. Each now re-reads the shared count before every call, so together they pass the
/// limit by at most one call each: 100 + 6 × 15 tokens.
#[tokio::test]
async fn concurrent_tool_loop_turns_pass_a_token_day_by_at_most_one_call_each() {
    // Every answer asks for the tool again, 10 prompt + 5 completion tokens, after a pause that
    // keeps the six turns' calls overlapping.
    let model = ScriptedServer::start(|_| {
        let chunks = [
            chunk::role(),
            chunk::tool_start(0, "call_w", "get_weather", "{\"city\":\"Hanoi\"}"),
            chunk::finish("tool_calls"),
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
        ];
        let mut pieces = vec![Piece::Pause(Duration::from_millis(40))];
        pieces.extend(chunks.iter().map(|c| Piece::Data(format!("data: {c}\n\n"))));
        pieces.push(Piece::Data("data: [DONE]\n\n".into()));
        Reply::stream(pieces)
    })
    .await;
    let tools = ScriptedServer::start(|_| Reply::json(&json!({"temp_c": 31}))).await;
    let (worker, workspace) = (fresh_id(), fresh_id());
    let (process, client, data_dir) =
        serve(&model, &tools, &worker, "{ tokens_per_day = 100 }").await;

    let bodies: Vec<Value> = (0..6)
        .map(|i| turn_of(&worker, &workspace, &format!("Weather {i}?")))
        .collect();
    let turns = join_all(bodies.iter().map(|b| client.turn(b))).await;
    for t in &turns {
        assert_eq!(t.last()["code"], "QUOTA_EXCEEDED", "{:?}", t.frames);
        assert!(
            t.last()["message"]
                .as_str()
                .unwrap()
                .contains("the daily token limit has been reached"),
            "{}",
            t.last()
        );
    }
    let calls = model.chat_completions().len() as u64;
    let row = usage_row(&client, &worker, &workspace)
        .await
        .expect("a row");
    assert_eq!(row["modelCalls"].as_u64(), Some(calls), "{row}");
    assert_eq!(tokens(&row), calls * 15, "every call counted once: {row}");
    assert!(
        tokens(&row) <= 100 + 6 * 15,
        "{calls} model calls, {} tokens: past the limit by more than one call a turn",
        tokens(&row)
    );
    assert_eq!(row["estimatedTokens"].as_u64(), Some(0), "{row}");
    process.stop().await;
    let _ = std::fs::remove_dir_all(data_dir);
}

/// Issue 25: a turn the user stopped while the model streamed was recorded with 0 model calls
/// and 0 tokens, so stopped turns kept calling the model past a token budget. The cut call now
/// counts an estimate (about 4 bytes a token of the prompt sent and text received), marked as
/// `estimatedTokens`, and the next turn is refused before the model is called.
#[tokio::test]
async fn a_turn_stopped_while_the_model_streams_counts_its_call_and_an_estimate() {
    // Text, then a long silence: the user stops the turn meanwhile, before any `usage`.
    let model = ScriptedServer::start(|_| {
        Reply::stream(vec![
            Piece::Data(format!("data: {}\n\n", chunk::role())),
            Piece::Data(format!(
                "data: {}\n\n",
                chunk::text("Our refund policy is, in short, ")
            )),
            Piece::Pause(Duration::from_secs(20)),
            Piece::Data(format!("data: {}\n\n", chunk::finish("stop"))),
            Piece::Data("data: [DONE]\n\n".into()),
        ])
    })
    .await;
    let tools = ScriptedServer::start(|_| Reply::json(&json!({}))).await;
    let (worker, workspace) = (fresh_id(), fresh_id());
    let (process, client, data_dir) =
        serve(&model, &tools, &worker, "{ tokens_per_day = 20 }").await;

    let first = client
        .turn_then_hang_up_after(
            &turn_of(&worker, &workspace, "Refund policy?"),
            "TEXT_MESSAGE_CONTENT",
        )
        .await;
    assert!(first.contains("Our refund policy"), "{first}");
    // The stop is noticed at the next heartbeat; the turn is recorded then.
    let deadline = Instant::now() + Duration::from_secs(10);
    let row = loop {
        if let Some(row) = usage_row(&client, &worker, &workspace).await
            && row["modelCalls"].as_u64() == Some(1)
        {
            break row;
        }
        assert!(
            Instant::now() < deadline,
            "the stopped turn's call was never counted"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        tokens(&row) > 20,
        "the estimate covers the prompt sent: {row}"
    );
    assert_eq!(row["estimatedTokens"].as_u64(), Some(tokens(&row)), "{row}");
    for _ in 0..3 {
        let t = client
            .turn(&turn_of(&worker, &workspace, "Refund policy?"))
            .await;
        assert_eq!(t.last()["code"], "QUOTA_EXCEEDED", "{:?}", t.frames);
    }
    assert_eq!(
        model.chat_completions().len(),
        1,
        "the model was called past its budget"
    );
    process.stop().await;
    let _ = std::fs::remove_dir_all(data_dir);
}
