//! The model agent (`RUNWAY_AGENT=model`) on AWS Lambda: the real `bootstrap` under
//! cargo-lambda's emulator with moto's DynamoDB (started by `infra/aws/local`), its API key read
//! from an SSM SecureString at init, calling an OpenAI-compatible endpoint in this test
//! (loopback, replaying chunk sequences): streamed text, parallel tools, approval and resume,
//! a 429 retried.
//!
//! Ignored by a plain `cargo test`: `scripts/test-aws.sh` runs it with `--ignored`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use runway_e2e::client::{fresh_id, run_body};
use runway_e2e::scripted_server::{Piece, Reply, ScriptedServer, chunk};
use runway_e2e::{AgentProcess, Client, TARGET_ENV, TurnStream, target_auth};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const SSM_KEY: &str = "sk-from-ssm-91c4";

const TOOLS: &str = r#"
[[tools]]
name = "get_weather"
description = "Current weather in a city"
parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }
method = "GET"
url = "TOOLS_BASE/now?city={city}"

[[tools]]
name = "issue_refund"
description = "Refund an order"
parameters = { type = "object", properties = { order = { type = "string" }, amount = { type = "number" } }, required = ["order", "amount"] }
method = "POST"
url = "TOOLS_BASE/refunds"
approval = true
"#;

fn local_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/aws/local")
}

/// moto (DynamoDB and SSM on one endpoint), from `infra/aws/local --dynamodb-only`.
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

    async fn put_secure_string(&self, name: &str, value: &str) {
        let put = reqwest::Client::new()
            .post(format!("{}/", self.endpoint))
            .header("X-Amz-Target", "AmazonSSM.PutParameter")
            .header("Content-Type", "application/x-amz-json-1.1")
            .header(
                "Authorization",
                "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/ssm/aws4_request, \
                 SignedHeaders=host, Signature=0",
            )
            .body(json!({"Name": name, "Type": "SecureString", "Value": value}).to_string())
            .send()
            .await
            .expect("PutParameter");
        assert!(put.status().is_success(), "PutParameter: {}", put.status());
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

fn of_type<'a>(t: &'a TurnStream, ty: &str) -> Vec<&'a Value> {
    t.frames.iter().filter(|f| f["type"] == ty).collect()
}

fn data(c: Value) -> Piece {
    Piece::Data(format!("data: {c}\n\n"))
}

async fn checks(function: &AgentProcess, model: &ScriptedServer, tools: &ScriptedServer) {
    let client = Client::new(function.base_url(), target_auth());

    // 1. A 429 before the first token is retried; the text streams as it is sent; the key
    // came from SSM.
    let t = client
        .turn(&run_body(&fresh_id(), &fresh_id(), "Where is my order?"))
        .await;
    assert_eq!(
        t.last()["outcome"],
        json!({"type": "success"}),
        "{:?}",
        t.frames
    );
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
        Some(format!("Bearer {SSM_KEY}").as_str())
    );

    // 2. Parallel tools: the weather runs, the refund waits for approval; approve goes on,
    // with the thread kept in DynamoDB between the turns.
    let thread = fresh_id();
    let t = client
        .turn(&run_body(&fresh_id(), &thread, "Weather, and refund DH-1"))
        .await;
    let last = t.last();
    assert_eq!(last["outcome"]["type"], "interrupt", "{:?}", t.frames);
    assert_eq!(
        last["outcome"]["interrupts"][0]["items"][0]["name"],
        "issue_refund"
    );
    assert_eq!(of_type(&t, "TOOL_CALL_RESULT").len(), 1);
    assert_eq!(tools.requests().len(), 1, "only the weather ran");
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
#[ignore = "needs moto and cargo-lambda: run by scripts/test-aws.sh"]
async fn the_model_agent_on_lambda_streams_runs_tools_and_asks_for_approval() {
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
    let moto = Moto::start("model").await;
    moto.put_secure_string("/runway/model-key", SSM_KEY).await;
    let mut cmd = Command::new(local_script());
    cmd.args([
        "--dynamodb-endpoint",
        &moto.endpoint,
        "--table",
        "model",
        "--concurrency",
        "2",
    ])
    .envs(TARGET_ENV)
    .env("RUNWAY_TURN_DEADLINE_SECS", "30")
    .env("AWS_ENDPOINT_URL_SSM", &moto.endpoint)
    .env("RUNWAY_AGENT", "model")
    .env("RUNWAY_MODEL_BASE_URL", format!("{}/v1", model.base_url))
    .env("RUNWAY_MODEL", "test-model")
    .env("RUNWAY_MODEL_API_KEY_SSM_PARAMETER", "/runway/model-key")
    .env("RUNWAY_SYSTEM_PROMPT", "Be brief.")
    .env("RUNWAY_TOOLS", TOOLS.replace("TOOLS_BASE", &tools.base_url))
    .env("RUNWAY_LOG", "warn");
    let function = AgentProcess::start(cmd, Duration::from_secs(900)).await;
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(checks(
        &function, &model, &tools,
    )))
    .await;
    function.stop().await;
    drop(moto);
    if let Err(failure) = result {
        std::panic::resume_unwind(failure);
    }
}
