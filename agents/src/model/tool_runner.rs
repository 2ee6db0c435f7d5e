//! Running the model's tool calls, with the caps every tool kind shares: how many calls of
//! one reply run at all and at once ([`run_bounded`]), how long one may take and how much of
//! its result is kept ([`ToolLimits`], [`read_result`]), which redirects its requests follow
//! and where its configured headers may go ([`send_tool_request`]). The HTTP tool
//! ([`run_tool`]) is one kind built on them; another kind reuses them the same way.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use super::log_budget::LogBudget;
use super::secret::Secret;
use super::tools_file::{HttpTool, Redirects, fill_placeholders};
use super::transcript::truncate;
use runway_core::AccessToken;
use runway_core::http_client::{Http, HttpResponse};

/// Redirects followed at most by one tool request.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// What bounds one tool call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolLimits {
    /// The whole call, redirects and body included (never past the turn's deadline).
    pub timeout: Duration,
    /// The most of a result kept and sent to the model, in bytes.
    pub max_result_bytes: usize,
}

/// Runs the `calls` (one future each), at most `parallel` at once, and returns their results
/// in order.
pub(crate) async fn run_bounded<Fut, T>(
    calls: impl IntoIterator<Item = Fut>,
    parallel: usize,
) -> Vec<T>
where
    Fut: Future<Output = T>,
{
    futures::stream::iter(calls)
        .buffered(parallel.max(1))
        .collect()
        .await
}

/// One HTTP request of a tool. Its `headers` (the tool's configured ones, credentials
/// included) are sent to the origin of `url` only.
pub(crate) struct ToolHttpRequest<'a> {
    /// The method.
    pub method: http::Method,
    /// Where, with the tool's origin.
    pub url: url::Url,
    /// The configured headers, bound to `url`'s origin.
    pub headers: &'a [(http::HeaderName, Secret)],
    /// A JSON body, if any.
    pub json: Option<&'a Value>,
    /// Which redirects are followed.
    pub redirects: Redirects,
}

/// Sends `req` through `http` (whose client must not follow redirects itself: the agent's
/// tool client does not), following redirects as `req.redirects` says, hop by hop: at most
/// [`MAX_REDIRECTS`], never to a scheme but http(s), and never with the configured headers
/// off the tool's origin. The whole exchange is bounded by `timeout`.
///
/// # Errors
/// What the model is told: the request failed, or a redirect was not followed.
pub(crate) async fn send_tool_request(
    http: &Http,
    req: ToolHttpRequest<'_>,
    timeout: Duration,
) -> Result<HttpResponse, String> {
    let origin = req.url.origin();
    let started_left = http.time_left().unwrap_or(timeout);
    let mut method = req.method;
    let mut url = req.url;
    let mut json = req.json;
    for hop in 0..=MAX_REDIRECTS {
        let spent = started_left.saturating_sub(http.time_left().unwrap_or(started_left));
        let left = timeout.saturating_sub(spent);
        if left.is_zero() {
            return Err(format!("the tool did not answer within {timeout:?}"));
        }
        let mut request = http
            .request(method.clone(), url.as_str())
            .timeout(left)
            .header("accept", "application/json");
        if url.origin() == origin {
            for (name, value) in req.headers {
                request = request.header(name.clone(), value.expose());
            }
        }
        if let Some(body) = json {
            request = request.json(body);
        }
        let response = request
            .send()
            .await
            .map_err(|e| format!("the tool could not be called ({e})"))?;
        let status = response.status();
        if !status.is_redirection() || req.redirects == Redirects::None {
            return Ok(response);
        }
        let Some(location) = response
            .headers()
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
        else {
            return Ok(response);
        };
        let next = url
            .join(location)
            .map_err(|_| "the tool answered with a redirect to an invalid URL".to_owned())?;
        if !matches!(next.scheme(), "http" | "https") {
            return Err(
                "the tool redirected to a URL that is not http or https; not followed".into(),
            );
        }
        if req.redirects == Redirects::SameOrigin && next.origin() != origin {
            return Err(format!(
                "the tool answered HTTP {} with a redirect to another origin, which is not \
                 followed (the tool's `redirects` setting is \"same-origin\")",
                status.as_u16()
            ));
        }
        if hop == MAX_REDIRECTS {
            break;
        }
        // As browsers do: 303, and 301/302 after a POST, continue as a GET without the body.
        if status == http::StatusCode::SEE_OTHER
            || (matches!(status.as_u16(), 301 | 302) && method == http::Method::POST)
        {
            method = http::Method::GET;
            json = None;
        }
        url = next;
    }
    Err(format!(
        "the tool redirected more than {MAX_REDIRECTS} times"
    ))
}

/// Reads `response`'s body up to `max_bytes` (a little past it, then stops: the rest is never
/// needed) and returns it as the model reads it: the text, marked when cut, or the error
/// status with it.
///
/// # Errors
/// The body broke off.
pub(crate) async fn read_result(
    mut response: HttpResponse,
    max_bytes: usize,
) -> Result<String, String> {
    let status = response.status();
    let mut body = Vec::new();
    let mut cut = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                body.extend_from_slice(&chunk);
                if body.len() > max_bytes {
                    cut = true;
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => return Err(format!("the tool's response broke off ({e})")),
        }
    }
    let text = String::from_utf8_lossy(&body);
    let mut text = truncate(&text, max_bytes);
    if cut && !text.ends_with("[truncated]") {
        text.push_str("… [truncated]");
    }
    Ok(if status.is_success() {
        text
    } else if status.is_redirection() {
        let to = response
            .headers()
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-");
        format!(
            "Error: the tool answered HTTP {} (a redirect to {}, not followed): {text}",
            status.as_u16(),
            truncate(to, 512)
        )
    } else {
        format!("Error: the tool answered HTTP {}: {text}", status.as_u16())
    })
}

/// The API answered 401 to the user's token (`bearer`): not a result for the model, but a
/// connection to renew ([`runway_core::Turn::connection_rejected`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TokenRefused;

/// Calls `tool` with the model's `arguments` (JSON text) and returns the result for the model.
/// A bad argument, an unreachable endpoint or an error status is reported to the model as the
/// result (starting with `Error:`, see [`is_failure`]), so it can tell the user or try again.
///
/// # Errors
/// [`TokenRefused`]: sent with the user's token, the call was answered 401.
pub(crate) async fn run_tool(
    http: &Http,
    tool: &HttpTool,
    arguments: &str,
    bearer: Option<&AccessToken>,
    limits: ToolLimits,
    log: &LogBudget,
) -> Result<String, TokenRefused> {
    let args: Value = if arguments.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        match serde_json::from_str(arguments) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return Ok("Error: the arguments must be a JSON object.".into()),
            Err(e) => return Ok(format!("Error: the arguments are not valid JSON ({e}).")),
        }
    };
    let value_of = |name: &str| match args.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    let url = match fill_placeholders(&tool.url, &value_of).map(|u| url::Url::parse(&u)) {
        Ok(Ok(u)) => u,
        Ok(Err(e)) => return Ok(format!("Error: the arguments make an invalid URL ({e}).")),
        Err(reason) => return Ok(format!("Error: {reason}.")),
    };
    let with_body = matches!(
        tool.method,
        http::Method::POST | http::Method::PUT | http::Method::PATCH
    );
    // The user's token joins the configured headers: bound like them to the tool's origin.
    let mut headers = tool.headers.clone();
    if let Some(token) = bearer {
        headers.retain(|(name, _)| name != http::header::AUTHORIZATION);
        headers.push((
            http::header::AUTHORIZATION,
            Secret::new(format!("Bearer {}", token.expose())),
        ));
    }
    let request = ToolHttpRequest {
        method: tool.method.clone(),
        url,
        headers: &headers,
        json: with_body.then_some(&args),
        redirects: tool.redirects,
    };
    let response = match send_tool_request(http, request, limits.timeout).await {
        Ok(r) => r,
        Err(reason) => {
            if log.take_line() {
                tracing::warn!(tool = %tool.name, error = %reason, "tool call failed");
            }
            return Ok(format!("Error: {reason}."));
        }
    };
    let status = response.status().as_u16();
    if bearer.is_some() && status == 401 {
        if log.take_line() {
            tracing::info!(tool = %tool.name, status, "the tool's API refused the user's token");
        }
        return Err(TokenRefused);
    }
    Ok(match read_result(response, limits.max_result_bytes).await {
        Ok(text) => {
            if log.take_line() {
                tracing::info!(tool = %tool.name, status, bytes = text.len(), "tool called");
            }
            text
        }
        Err(reason) => {
            if log.take_line() {
                tracing::warn!(tool = %tool.name, error = %reason, "tool response broke off");
            }
            format!("Error: {reason}.")
        }
    })
}

/// The native tool client: `reqwest` following no redirect (the agent follows them, as each
/// tool's `redirects` says), with a 10-second connect timeout.
#[cfg(feature = "reqwest")]
pub(crate) fn no_redirect_client() -> runway_core::http_client::ReqwestClient {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .build()
        .unwrap_or_default();
    runway_core::http_client::ReqwestClient::from_client(client)
}

/// Whether a result of [`run_tool`] reports a failure.
pub(crate) fn is_failure(result: &str) -> bool {
    result.starts_with("Error:")
}
