//! Cost of reading the settings files at start-up: a tools file (`parse_tools`) and a workers
//! file (`load_workers`, which also builds its workers' agents). A Worker reads them once per
//! isolate, before its first request.
//!
//! `cargo bench -p runway-agents --bench settings_files`

// A benchmark binary has no API; criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use runway_agents::{load_workers, parse_tools};
use runway_core::Workers;
use runway_core::adapter::TokioRuntime;

/// Two HTTP tools (one with headers and approval), two MCP servers and an OAuth provider.
const TOOLS: &str = r#"
[providers.acme]
name = "Acme CRM"
authorize_url = "https://acme.example/oauth/authorize"
token_url = "https://acme.example/oauth/token"
client_id = "runway"
client_secret = "${SHOP_TOKEN}"
scopes = ["profile", "orders:read"]

[[tools]]
name = "get_weather"
description = "Current weather in a city"
parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }
method = "GET"
url = "https://weather.example.com/now?city={city}"

[[tools]]
name = "issue_refund"
description = "Refund an order"
parameters = { type = "object", properties = { order = { type = "string" }, amount = { type = "number" } }, required = ["order", "amount"] }
method = "POST"
url = "https://shop.example.com/refunds"
headers = { Authorization = "Bearer ${SHOP_TOKEN}" }
approval = true
auth = "acme"

[[mcp]]
name = "crm"
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${SHOP_TOKEN}" }
tools = ["search", "delete_contact"]
approval = ["delete_contact"]
timeout = 12.5

[[mcp]]
name = "docs"
url = "https://docs.example.com/mcp"
approval = true
"#;

/// README's workers file: defaults, a price, two model workers (one with inline tools), a
/// workspace's overrides and limits.
const WORKERS: &str = r#"
[defaults]
agent = "model"
base_url = "https://api.openai.com/v1"
model = "gpt-4o-mini"
api_key = "${OPENAI_KEY}"

[prices."gpt-4o-mini"]
input_per_million = 0.15
output_per_million = 0.60

[workers."918273688800000200"]
name = "Order desk"
system_prompt = "You are the order desk."
tools = '''
[[tools]]
name = "lookup_order"
method = "GET"
url = "https://shop.example.com/orders/{id}"
parameters = { type = "object", properties = { id = { type = "string" } } }
'''

[workers."918273688800000300"]
name = "HR helper"
system_prompt = "You answer HR questions."
limits = { tokens_per_day = 200000 }

[workspaces."918273600000000001"]
limits = { turns_per_minute = 10, spend_per_day = 2.0 }
system_prompt_addition = "Answer in Vietnamese."

[workspaces."918273600000000001".workers."918273688800000200"]
tools_allowed = ["lookup_order"]
limits = { turns_per_minute = 2 }
"#;

fn setting(name: &str) -> Option<String> {
    matches!(name, "SHOP_TOKEN" | "OPENAI_KEY").then(|| "tok-123".to_owned())
}

fn settings_files(c: &mut Criterion) {
    c.bench_function("tools file (2 tools, 2 MCP servers, 1 provider)", |b| {
        b.iter(|| parse_tools(TOOLS, "tools.toml", &setting).expect("a good tools file"));
    });
    c.bench_function("workers file (2 model workers, a workspace)", |b| {
        b.iter(|| {
            load_workers(
                WORKERS,
                "workers.toml",
                &Workers::new(),
                &TokioRuntime,
                &setting,
                &|p| Err(format!("no file {p}")),
                &|m| m,
            )
            .expect("a good workers file")
        });
    });
}

criterion_group!(benches, settings_files);
criterion_main!(benches);
