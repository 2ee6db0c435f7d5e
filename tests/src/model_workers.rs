//! A workers file of model workers (issue 18), the same on every runtime: each worker its own
//! prompt and tools; a workspace's override of model and prompt; usage per workspace × worker
//! equal to what the scripted model reported, costed from the file's prices; a token budget
//! crossed mid-turn stops the model calls (the tool the model asked for still runs) and ends
//! with `QUOTA_EXCEEDED`, and the next turn is refused before the model is called.
//!
//! [`ModelWorkers::start`] starts the model and the tool; the target is started with
//! [`ModelWorkers::workers_file`] as `RUNWAY_WORKERS` and `RUNWAY_MODEL_API_KEY` set to
//! [`ModelWorkers::KEY`] (the file reads it as `${RUNWAY_MODEL_API_KEY}`); then
//! [`ModelWorkers::check`] runs the turns.

use serde_json::{Value, json};

use crate::client::{Client, TurnStream, fresh_id};
use crate::scripted_server::{Reply, ScriptedServer, chunk};

/// The scripted model and tool a target's model workers call, and the ids of this run's
/// workers and workspaces (fresh, so a deployment's stored usage and budgets from another run
/// never count).
pub struct ModelWorkers {
    model: ScriptedServer,
    tools: ScriptedServer,
    desk: String,
    hr: String,
    ws_a: String,
    ws_vn: String,
}

impl ModelWorkers {
    /// The key the workers file reads as `${RUNWAY_MODEL_API_KEY}`.
    pub const KEY: &'static str = "sk-workers-file-7c1d";

    /// Starts the scripted model (two answers, then a tool call) and the tool.
    pub async fn start() -> Self {
        let answer = || {
            Reply::sse(&[
                chunk::role(),
                chunk::text("Hello."),
                chunk::finish("stop"),
                chunk::usage(),
            ])
        };
        let wants_tool = Reply::sse(&[
            chunk::role(),
            chunk::tool_start(0, "call_w", "get_weather", "{\"city\":\"Hanoi\"}"),
            chunk::finish("tool_calls"),
            chunk::usage(),
        ]);
        let model = ScriptedServer::script(vec![answer(), answer(), wants_tool]).await;
        let tools = ScriptedServer::start(|_| Reply::json(&json!({"temp_c": 31}))).await;
        Self {
            model,
            tools,
            desk: fresh_id(),
            hr: fresh_id(),
            ws_a: fresh_id(),
            ws_vn: fresh_id(),
        }
    }

    /// The workers file (inline TOML for `RUNWAY_WORKERS`).
    pub fn workers_file(&self) -> String {
        format!(
            r#"
[defaults]
agent = "model"
base_url = "{model}/v1"
model = "test-model"
api_key = "${{RUNWAY_MODEL_API_KEY}}"

[prices."test-model"]
input_per_million = 0.15
output_per_million = 0.60

[prices."vn-model"]
input_per_million = 1.0
output_per_million = 2.0

[workers."{desk}"]
name = "Order desk"
system_prompt = "You are the order desk."
tools = '''
[[tools]]
name = "get_weather"
parameters = {{ type = "object", properties = {{ city = {{ type = "string" }} }} }}
method = "GET"
url = "{tools}/now?city={{city}}"
'''
limits = {{ tokens_per_day = 25 }}

[workers."{hr}"]
name = "HR helper"
system_prompt = "You answer HR questions."

[workspaces."{ws_vn}"]
model = "vn-model"
system_prompt_addition = "Answer in Vietnamese."
"#,
            model = self.model.base_url,
            tools = self.tools.base_url,
            desk = self.desk,
            hr = self.hr,
            ws_vn = self.ws_vn,
        )
    }

    fn model_calls(&self) -> Vec<Value> {
        self.model.chat_completions()
    }

    /// Runs the turns against a target serving [`ModelWorkers::workers_file`] (panics on a
    /// failure).
    pub async fn check(&self, client: &Client) {
        let (desk, hr, ws_a, ws_vn) = (
            &self.desk[..],
            &self.hr[..],
            &self.ws_a[..],
            &self.ws_vn[..],
        );
        let turn = |agent: &str, ws: &str, input: &str| {
            json!({"protocolVersion": "1", "runId": fresh_id(), "threadId": fresh_id(),
                   "agentId": agent, "workspaceId": ws, "input": input})
        };
        let system = |req: &Value| {
            req["messages"][0]["content"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        };
        let success = |t: &TurnStream| {
            assert_eq!(t.last()["type"], "RUN_FINISHED", "{:?}", t.frames);
            assert_eq!(t.last()["outcome"], json!({"type": "success"}));
        };

        // Each worker its own prompt; the Vietnamese workspace its own model and addition.
        success(&client.turn(&turn(hr, ws_a, "Leave policy?")).await);
        success(&client.turn(&turn(hr, ws_vn, "Leave policy?")).await);
        let calls = self.model_calls();
        assert_eq!(calls[0]["model"], "test-model");
        assert!(system(&calls[0]).starts_with("You answer HR questions."));
        assert!(!system(&calls[0]).contains("Vietnamese"));
        assert_eq!(calls[1]["model"], "vn-model");
        assert!(system(&calls[1]).contains("You answer HR questions.\n\nAnswer in Vietnamese."));
        assert_eq!(calls[0]["stream_options"]["include_usage"], true);
        let key = format!("Bearer {}", Self::KEY);
        assert!(
            self.model
                .requests()
                .iter()
                .all(|r| r.header("authorization") == Some(key.as_str())),
            "the workers file's ${{RUNWAY_MODEL_API_KEY}} did not reach the model"
        );

        // The desk's budget: 25 tokens a day. Its first call reports 30: the tool it asked for
        // runs, the model is not called again, the turn ends with QUOTA_EXCEEDED.
        let t = client.turn(&turn(desk, ws_a, "Weather in Hanoi?")).await;
        assert_eq!(t.last()["type"], "RUN_ERROR", "{:?}", t.frames);
        assert_eq!(t.last()["code"], "QUOTA_EXCEEDED");
        assert!(
            t.last()["message"]
                .as_str()
                .unwrap()
                .contains("It can go on in about"),
            "{}",
            t.last()
        );
        let results = t
            .frames
            .iter()
            .filter(|f| f["type"] == "TOOL_CALL_RESULT")
            .count();
        assert_eq!(results, 1, "{:?}", t.types());
        assert_eq!(self.tools.requests().len(), 1, "the desk's tool ran once");
        assert_eq!(self.model_calls().len(), 3);
        assert!(system(&self.model_calls()[2]).starts_with("You are the order desk."));
        let t = client.turn(&turn(desk, ws_a, "And tomorrow?")).await;
        assert_eq!(t.frames.first().unwrap()["type"], "STEP_STARTED");
        assert_eq!(t.last()["code"], "QUOTA_EXCEEDED", "{:?}", t.frames);
        assert_eq!(
            self.model_calls().len(),
            3,
            "the model was called past its budget"
        );

        // /usage: the scripted model reported 21 prompt and 9 completion tokens per call.
        let (status, report) = client.raw(reqwest::Method::GET, "/usage", Vec::new()).await;
        assert_eq!(status, 200, "{report}");
        let row = |ws: &str, agent: &str| {
            report["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["workspaceId"] == ws && r["agentId"] == agent)
                .cloned()
                .unwrap_or_else(|| panic!("no row for {ws} × {agent}: {report}"))
        };
        let r = row(ws_a, hr);
        assert_eq!(
            (r["turns"].as_u64(), r["succeeded"].as_u64()),
            (Some(1), Some(1)),
            "{r}"
        );
        assert_eq!(
            (r["inputTokens"].as_u64(), r["outputTokens"].as_u64()),
            (Some(21), Some(9)),
            "{r}"
        );
        assert_eq!(r["modelCalls"], 1);
        // 21 × 0.15 + 9 × 0.60 = 8.55 micro-USD, counted in whole micro-USD.
        assert_eq!(r["costMicroUsd"], 9, "{r}");
        assert_eq!(r["workerName"], "HR helper");
        let r = row(ws_vn, hr);
        assert_eq!(r["costMicroUsd"], 21 + 18, "{r}");
        let r = row(ws_a, desk);
        assert_eq!(r["turns"], 2, "{r}");
        assert_eq!(r["quotaExceeded"], 2, "{r}");
        assert_eq!(
            (r["inputTokens"].as_u64(), r["outputTokens"].as_u64()),
            (Some(21), Some(9)),
            "{r}"
        );
        assert_eq!(
            (r["toolCalls"].as_u64(), r["toolFailures"].as_u64()),
            (Some(1), Some(0)),
            "{r}"
        );
        assert_eq!(report["totals"]["inputTokens"], 63, "{report}");
    }
}
