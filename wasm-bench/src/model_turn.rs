//! [`ModelTurnBench`]: a whole model turn through the core on wasm32, against a scripted
//! OpenAI-compatible model and an HTTP tool answered in process.
//!
//! Each turn is what a Worker's model turn costs in its own CPU, without the network: the model
//! agent (`runway_agents::ModelAgent`) sends its first chat-completions request, the model
//! streams one tool call, the agent calls the HTTP tool, sends its result back in a second
//! request, and the model streams a 500-token answer (one SSE event per token, in OpenAI's
//! chunk format) with its `usage`; the engine then records the turn's usage in the store. Only
//! the bytes on the wire are scripted: the request bodies are built and the responses parsed
//! as in a deployment.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use runway_agents::{HttpTool, ModelAgent, ModelSettings, Redirects};
use runway_core::adapter::{BoxFuture, Reply};
use runway_core::http_client::{HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse};
use runway_core::testing::{
    ScriptedHttp, ScriptedResponse, StoreCall, TestRunway, TestTurn, VirtualRuntime,
};
use wasm_bindgen::prelude::wasm_bindgen;

/// Where the scripted model is (never contacted: the client answers in process).
const MODEL_BASE_URL: &str = "https://model.invalid/v1";
/// The HTTP tool's URL template and the URL the scripted call fills it to.
const TOOL_URL: &str = "https://orders.invalid/orders/{order}";
const TOOL_CALLED_URL: &str = "https://orders.invalid/orders/A-1042";
/// Tokens in the streamed answer, one SSE event each.
pub const ANSWER_TOKENS: usize = 500;

/// One OpenAI `chat.completion.chunk` event carrying `choice` (or `usage` when given).
fn chunk_event(choice: &str, usage: Option<&str>) -> String {
    let usage = usage.map_or(String::new(), |u| format!(",\"usage\":{u}"));
    format!(
        "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\
         \"created\":1764800000,\"model\":\"gpt-4o-mini\",\"choices\":[{choice}]{usage}}}\n\n"
    )
}

/// The model's first reply: one call of `lookup_order`, its arguments in three pieces.
fn tool_call_reply() -> Vec<Bytes> {
    let mut events = vec![
        chunk_event(
            "{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_bench\",\"type\":\"function\",\"function\":{\"name\":\"lookup_order\",\"arguments\":\"\"}}]},\"finish_reason\":null}",
            None,
        ),
        chunk_event(
            "{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"order\\\"\"}}]},\"finish_reason\":null}",
            None,
        ),
        chunk_event(
            "{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\": \\\"A-1042\\\"}\"}}]},\"finish_reason\":null}",
            None,
        ),
        chunk_event(
            "{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}",
            None,
        ),
        chunk_event(
            "",
            Some("{\"prompt_tokens\":182,\"completion_tokens\":19,\"total_tokens\":201}"),
        ),
    ];
    events.push("data: [DONE]\n\n".to_owned());
    events.into_iter().map(Bytes::from).collect()
}

/// The model's second reply: [`ANSWER_TOKENS`] content deltas, the finish and the usage.
fn answer_reply() -> Vec<Bytes> {
    let mut events = Vec::with_capacity(ANSWER_TOKENS + 3);
    for i in 0..ANSWER_TOKENS {
        let token = if i == 0 { "Order" } else { " shipped" };
        events.push(chunk_event(
            &format!(
                "{{\"index\":0,\"delta\":{{\"content\":\"{token}\"}},\"finish_reason\":null}}"
            ),
            None,
        ));
    }
    events.push(chunk_event(
        "{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}",
        None,
    ));
    events.push(chunk_event(
        "",
        Some(&format!(
            "{{\"prompt_tokens\":260,\"completion_tokens\":{ANSWER_TOKENS},\"total_tokens\":{}}}",
            260 + ANSWER_TOKENS
        )),
    ));
    events.push("data: [DONE]\n\n".to_owned());
    events.into_iter().map(Bytes::from).collect()
}

/// The scripted model: a request whose transcript holds the tool's result gets the answer,
/// any other the tool call. Each SSE event arrives as its own body chunk, as a model's stream
/// of tokens does.
#[derive(Clone)]
struct ScriptedModel {
    tool_call: Arc<Vec<Bytes>>,
    answer: Arc<Vec<Bytes>>,
}

impl HttpClient for ScriptedModel {
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
        let has_result = contains(&request.body, b"\"tool_call_id\"");
        let events = if has_result {
            Arc::clone(&self.answer)
        } else {
            Arc::clone(&self.tool_call)
        };
        Box::pin(async move {
            let mut headers = http::HeaderMap::new();
            headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/event-stream"),
            );
            let chunks = (0..events.len()).map(move |i| Ok(events[i].clone()));
            Ok(HttpResponse::new(
                http::StatusCode::OK,
                headers,
                HttpBody::from_stream(futures::stream::iter(chunks)),
            ))
        })
    }
}

/// The model agent with one HTTP tool, the scripted model and the in-memory store.
#[wasm_bindgen]
pub struct ModelTurnBench {
    app: TestRunway<ModelAgent<VirtualRuntime>>,
    tool: ScriptedHttp,
    turns: u64,
}

impl Default for ModelTurnBench {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl ModelTurnBench {
    /// A fresh engine and store.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Self {
        let rt = VirtualRuntime::new();
        let mut settings =
            ModelSettings::new(MODEL_BASE_URL, "gpt-4o-mini").expect("scripted model settings");
        settings.system_prompt = Some("You are the order desk.".to_owned());
        settings.tools.push(HttpTool {
            name: "lookup_order".to_owned(),
            description: "Looks an order up by its number.".to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"order": {"type": "string"}},
                "required": ["order"],
            }),
            method: http::Method::GET,
            url: TOOL_URL.to_owned(),
            headers: Vec::new(),
            approval: false,
            redirects: Redirects::SameOrigin,
            auth: None,
        });
        let tool = ScriptedHttp::new()
            .get(
                TOOL_CALLED_URL,
                ScriptedResponse::json(&serde_json::json!({
                    "order": "A-1042",
                    "status": "shipped",
                    "carrier": "DHL",
                    "tracking": "JD014600006281234567",
                    "items": [{"sku": "KB-87", "qty": 1}, {"sku": "MS-2", "qty": 2}],
                })),
            )
            .on_clock(&rt);
        let agent = ModelAgent::new(settings, rt.clone()).with_tool_client(Arc::new(tool.clone()));
        let model = ScriptedModel {
            tool_call: Arc::new(tool_call_reply()),
            answer: Arc::new(answer_reply()),
        };
        Self {
            app: TestRunway::with(agent, rt, runway_core::adapter::Config::unauthenticated())
                .with_http_client(model),
            tool,
            turns: 0,
        }
    }

    /// Runs `count` whole model turns, each on a fresh thread, and returns the bytes of SSE
    /// they streamed. A turn that does not end with `RUN_FINISHED` after the tool's result, or
    /// whose usage is not recorded, panics.
    pub fn run(&mut self, count: u32) -> f64 {
        let mut streamed = 0usize;
        for _ in 0..count {
            self.turns += 1;
            streamed += self.one_turn();
        }
        streamed as f64
    }

    /// Requests the HTTP tool has answered so far (one per turn).
    pub fn tool_calls(&self) -> f64 {
        self.tool.requests().len() as f64
    }

    /// Usage tally writes the store has taken so far (at least one per turn).
    pub fn usage_writes(&self) -> f64 {
        self.app.store().calls(StoreCall::AddTally) as f64
    }

    fn one_turn(&self) -> usize {
        let n = self.turns;
        let turn = TestTurn::new("Where is order A-1042?")
            .run_id(format!("bench-model-run-{n}"))
            .thread(format!("bench-model-thread-{n}"));
        let rt = self.app.runtime();
        rt.block_on(async {
            let Reply::Stream { response, turn } = self.app.runway().handle(turn.request()).await
            else {
                panic!("the bench turn was refused")
            };
            let drain = response.into_body().fold(
                (0usize, false, Vec::<u8>::new()),
                |(n, mut saw_result, mut tail), chunk| async move {
                    let chunk = chunk.expect("stream");
                    // Searched until found only: the check must not weigh in the figure.
                    saw_result = saw_result || contains(&chunk, b"TOOL_CALL_RESULT");
                    tail.clear();
                    tail.extend_from_slice(&chunk[chunk.len().saturating_sub(256)..]);
                    (n + chunk.len(), saw_result, tail)
                },
            );
            let ((), (bytes, saw_result, tail)) = futures::join!(turn, drain);
            assert!(saw_result, "the bench turn streamed no tool result");
            assert!(
                contains(&tail, b"RUN_FINISHED"),
                "the bench turn did not finish: {}",
                String::from_utf8_lossy(&tail)
            );
            bytes
        })
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    haystack
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == first)
        .any(|(i, _)| haystack[i + 1..].starts_with(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_turn_calls_the_tool_streams_the_answer_and_records_usage() {
        let mut b = ModelTurnBench::new();
        let bytes = b.run(2);
        // 500 tokens of text deltas at least.
        assert!(bytes > 2.0 * 500.0 * 40.0, "{bytes}");
        assert_eq!(b.tool_calls(), 2.0);
        assert!(b.usage_writes() >= 2.0, "{}", b.usage_writes());
    }
}
