//! AG-UI client-side tools and `usage[]` on `runway serve` with the model agent (issue 28),
//! driven by the official client (`@ag-ui/client` 1.0.0 `HttpAgent`, tests/agui/run.mjs)
//! against a scripted OpenAI-compatible model on loopback: the shared check
//! ([`runway_e2e::client_tool_checks`], which the Lambda and Worker model tests run too).

use std::time::Duration;

use runway_e2e::client_tool_checks::{a_client_tool_round_trip, client_tool_model};
use runway_e2e::scripted_server::{Reply, ScriptedServer};
use runway_e2e::{AgentProcess, TARGET_ENV, free_data_dir, runway_binary};
use serde_json::json;
use tokio::process::Command;

async fn serve(model_base_url: &str) -> AgentProcess {
    let data_dir = free_data_dir("agui-model");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .envs(TARGET_ENV)
        .env("RUNWAY_AGENT", "model")
        .env("RUNWAY_MODEL_BASE_URL", format!("{model_base_url}/v1"))
        .env("RUNWAY_MODEL", "test-model")
        .env("RUNWAY_LOG", "warn")
        .env_remove("RUNWAY_WORKERS");
    AgentProcess::start(cmd, Duration::from_secs(30)).await
}

#[tokio::test]
async fn a_client_tool_round_trip_through_the_official_client_with_usage() {
    let model = ScriptedServer::start(|r| {
        client_tool_model(r).unwrap_or_else(|| {
            Reply::status(500, &[], &json!({"error": {"message": "not this test's"}}))
        })
    })
    .await;
    let process = serve(&model.base_url).await;
    let r = a_client_tool_round_trip(process.base_url(), &model).await;
    // Each entry names the endpoint and model (a loopback endpoint is `openai-compatible`).
    let entry = json!([{"provider": "openai-compatible", "model": "test-model",
        "inputTokens": 21, "outputTokens": 9, "totalTokens": 30}]);
    assert_eq!(r["usage"], json!([entry, entry]), "{r:#}");
    process.stop().await;
}
