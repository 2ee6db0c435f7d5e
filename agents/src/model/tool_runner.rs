//! Running one HTTP tool call: the model's arguments become the URL's placeholders or the JSON
//! body, and the response (or what went wrong) becomes the text the model reads next.

use std::time::Duration;

use serde_json::Value;

use super::tools_file::{HttpTool, fill_placeholders};
use super::transcript::truncate;
use runway_core::http_client::Http;

/// Calls `tool` with the model's `arguments` (JSON text) and returns the result for the model.
/// Never fails: a bad argument, an unreachable endpoint or an error status is reported to the
/// model as the result (starting with `Error:`, see [`is_failure`]), so it can tell the user
/// or try again.
pub(crate) async fn run_tool(
    http: &Http,
    tool: &HttpTool,
    arguments: &str,
    timeout: Duration,
    max_result_bytes: usize,
) -> String {
    let args: Value = if arguments.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        match serde_json::from_str(arguments) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return "Error: the arguments must be a JSON object.".into(),
            Err(e) => return format!("Error: the arguments are not valid JSON ({e})."),
        }
    };
    let value_of = |name: &str| match args.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    let url = match fill_placeholders(&tool.url, &value_of) {
        Ok(u) => u,
        Err(reason) => return format!("Error: {reason}."),
    };
    let mut request = http
        .request(tool.method.clone(), &url)
        .timeout(timeout)
        .header("accept", "application/json");
    for (name, value) in &tool.headers {
        request = request.header(name.clone(), value.expose());
    }
    if matches!(
        tool.method,
        http::Method::POST | http::Method::PUT | http::Method::PATCH
    ) {
        request = request.json(&args);
    }
    let mut response = match request.send().await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(tool = %tool.name, error = %e, "tool call failed");
            return format!("Error: the tool could not be called ({e}).");
        }
    };
    let status = response.status();
    // Read a little past the limit, then stop: the rest is never needed.
    let mut body = Vec::new();
    let mut cut = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                body.extend_from_slice(&chunk);
                if body.len() > max_result_bytes {
                    cut = true;
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(tool = %tool.name, error = %e, "tool response broke off");
                return format!("Error: the tool's response broke off ({e}).");
            }
        }
    }
    tracing::info!(tool = %tool.name, status = status.as_u16(), bytes = body.len(), "tool called");
    let text = String::from_utf8_lossy(&body);
    let mut text = truncate(&text, max_result_bytes);
    if cut && !text.ends_with("[truncated]") {
        text.push_str("… [truncated]");
    }
    if status.is_success() {
        text
    } else {
        format!("Error: the tool answered HTTP {}: {text}", status.as_u16())
    }
}

/// Whether a result of [`run_tool`] reports a failure.
pub(crate) fn is_failure(result: &str) -> bool {
    result.starts_with("Error:")
}
