//! The model agent (`RUNWAY_AGENT=model`) on Workers, under `wrangler dev`: the Worker calls an
//! OpenAI-compatible endpoint in this test (loopback, replaying chunk sequences) with `fetch`,
//! streams the text as it arrives, runs parallel HTTP tools, pauses for approval and goes on
//! after `resume`, and retries a 429 that came before the first token.
//!
//! Ignored by a plain `cargo test`: run by `scripts/test-cloudflare.sh` (see `cloudflare.rs`).

use std::path::PathBuf;
use std::time::Duration;

use runway_e2e::client::{fresh_id, run_body};
use runway_e2e::scripted_server::{Piece, Reply, ScriptedServer, chunk};
use runway_e2e::{AgentProcess, Client, TARGET_ENV, TurnStream, target_auth};
use serde_json::{Value, json};
use tokio::process::Command;

const KEY: &str = "sk-worker-test-3b81";

/// Single-quoted TOML strings and no `${NAME}` header: `infra/cloudflare/local` hands settings
/// to `wrangler dev` as a dotenv file, where a `"` stays escaped (`\"`) and `${…}` is expanded,
/// so a double-quoted tools file reaches the Worker mangled (the Worker then refuses it, naming
/// the line). Header filling is tested against `runway serve` (`model_agent.rs`).
const TOOLS: &str = r#"
[[tools]]
name = 'get_weather'
description = 'Current weather in a city'
parameters = { type = 'object', properties = { city = { type = 'string' } }, required = ['city'] }
method = 'GET'
url = 'TOOLS_BASE/now?city={city}'

[[tools]]
name = 'issue_refund'
description = 'Refund an order'
parameters = { type = 'object', properties = { order = { type = 'string' }, amount = { type = 'number' } }, required = ['order', 'amount'] }
method = 'POST'
url = 'TOOLS_BASE/refunds'
approval = true
"#;

async fn start_worker(model: &ScriptedServer, tools: &ScriptedServer) -> AgentProcess {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/cloudflare/local");
    let mut cmd = Command::new(script);
    cmd.envs(TARGET_ENV)
        .env("RUNWAY_TURN_DEADLINE_SECS", "30")
        .env("RUNWAY_AGENT", "model")
        .env("RUNWAY_MODEL_BASE_URL", format!("{}/v1", model.base_url))
        .env("RUNWAY_MODEL", "test-model")
        .env("RUNWAY_MODEL_API_KEY", KEY)
        .env("RUNWAY_SYSTEM_PROMPT", "Be brief.")
        .env("RUNWAY_TOOLS", TOOLS.replace("TOOLS_BASE", &tools.base_url))
        .env("RUNWAY_LOG", "warn")
        .env("RUNWAY_CF_WRANGLER_LOG", "warn");
    let prebuilt = std::env::var("RUNWAY_CF_PREBUILT").as_deref() == Ok("1");
    if prebuilt {
        cmd.arg("--no-build");
    }
    let within = Duration::from_secs(if prebuilt { 180 } else { 3600 });
    AgentProcess::start(cmd, within).await
}

fn of_type<'a>(t: &'a TurnStream, ty: &str) -> Vec<&'a Value> {
    t.frames.iter().filter(|f| f["type"] == ty).collect()
}

fn data(c: Value) -> Piece {
    Piece::Data(format!("data: {c}\n\n"))
}

async fn checks(worker: &AgentProcess, model: &ScriptedServer, tools: &ScriptedServer) {
    let client = Client::new(worker.base_url(), target_auth());

    // 1. Text streams as the model sends it (after a 429 with Retry-After, retried).
    let t = client
        .turn(&run_body(&fresh_id(), &fresh_id(), "Where is my order?"))
        .await;
    assert_eq!(t.last()["type"], "RUN_FINISHED", "{:?}", t.frames);
    assert_eq!(t.text(), "It left Hà Nội today.");
    let at: Vec<Duration> = t
        .frames
        .iter()
        .zip(&t.frame_arrivals)
        .filter(|(f, _)| f["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|(_, a)| *a)
        .collect();
    assert!(
        at[1] - at[0] >= Duration::from_millis(1300),
        "not streamed: {at:?}"
    );
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2, "the 429 was retried once");
    assert!(reqs[1].at - reqs[0].at >= Duration::from_millis(950));
    assert_eq!(
        reqs[1].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );

    // 2. Parallel tool calls: one runs, one waits for approval; approve goes on.
    let thread = fresh_id();
    let t = client
        .turn(&run_body(&fresh_id(), &thread, "Weather, and refund DH-1"))
        .await;
    let last = t.last();
    assert_eq!(last["outcome"]["type"], "interrupt", "{:?}", t.frames);
    assert_eq!(last["outcome"]["interrupts"][0]["kind"], "review");
    assert_eq!(
        last["outcome"]["interrupts"][0]["items"][0]["arguments"],
        json!({"order": "DH-1", "amount": 20})
    );
    assert_eq!(of_type(&t, "TOOL_CALL_START").len(), 2);
    assert_eq!(of_type(&t, "TOOL_CALL_RESULT").len(), 1);
    let calls = tools.requests();
    assert_eq!(calls.len(), 1, "only the weather ran");
    assert_eq!(calls[0].target, "/now?city=Hu%E1%BA%BF");

    let mut resume = run_body(&fresh_id(), &thread, "");
    resume["resume"] = json!({"decision": "approve"});
    let t = client.turn(&resume).await;
    assert_eq!(
        t.last()["outcome"],
        json!({"type": "success"}),
        "{:?}",
        t.frames
    );
    assert_eq!(t.text(), "Refunded.");
    let calls = tools.requests();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].json(), json!({"order": "DH-1", "amount": 20}));
    let last_request = model.requests().last().unwrap().json();
    let roles: Vec<&str> = last_request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "tool"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs wrangler and the Workers toolchain: run scripts/test-cloudflare.sh"]
async fn the_model_agent_on_workers_streams_runs_tools_and_asks_for_approval() {
    let model = ScriptedServer::script(vec![
        Reply::status(
            429,
            &[("retry-after", "1")],
            &json!({"error": {"message": "slow down"}}),
        ),
        Reply::stream(vec![
            data(chunk::role()),
            data(chunk::text("It left ")),
            Piece::Pause(Duration::from_millis(1500)),
            data(chunk::text("Hà Nội today.")),
            data(chunk::finish("stop")),
            data(chunk::usage()),
            Piece::Data("data: [DONE]\n\n".into()),
        ]),
        Reply::sse(&[
            chunk::role(),
            chunk::tool_start(0, "call_w", "get_weather", "{\"city\":"),
            chunk::tool_start(1, "call_r", "issue_refund", "{\"order\":\"DH-1\","),
            chunk::tool_args(0, "\"Huế\"}"),
            chunk::tool_args(1, "\"amount\":20}"),
            chunk::finish("tool_calls"),
        ]),
        Reply::sse(&[
            chunk::role(),
            chunk::text("Refunded."),
            chunk::finish("stop"),
        ]),
    ])
    .await;
    let tools = ScriptedServer::start(|r| {
        if r.target.starts_with("/now") {
            Reply::json(&json!({"summary": "sunny"}))
        } else {
            Reply::json(&json!({"refunded": true}))
        }
    })
    .await;
    let worker = start_worker(&model, &tools).await;
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(checks(
        &worker, &model, &tools,
    )))
    .await;
    worker.stop().await;
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}
