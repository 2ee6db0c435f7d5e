//! The status line and headers of the `POST /runs` response, judged as Console
//! judges them before it reads a single frame (sans I/O).

use crate::findings::{Code, Finding};

/// What matters in the response head.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResponseHead {
    /// HTTP status code.
    pub status: u16,
    /// `Location`, for a redirect.
    pub location: Option<String>,
    /// `Content-Type` (empty when absent).
    pub content_type: String,
    /// Every `Cache-Control` header value.
    pub cache_control: Vec<String>,
    /// `X-Accel-Buffering`.
    pub x_accel_buffering: Option<String>,
}

/// `Err` with the finding that fails the turn (3xx, 4xx, 5xx, not an event
/// stream), or `Ok` with the warnings about a stream Console will read.
pub fn judge_response_head(head: &ResponseHead) -> Result<Vec<Finding>, Finding> {
    let status = head.status;
    let shown = http_status(status);
    if (300..400).contains(&status) {
        let location = head.location.as_deref().unwrap_or("(none)");
        return Err(Finding::new(
            Code::UpstreamRejected,
            format!(
                "HTTP {shown} to {location}: redirects are not followed, change base_url instead"
            ),
        ));
    }
    if (400..500).contains(&status) {
        return Err(Finding::new(
            Code::UpstreamRejected,
            format!("POST /runs answered HTTP {shown}"),
        ));
    }
    if status >= 500 {
        return Err(Finding::new(
            Code::UpstreamUnavailable,
            format!("POST /runs answered HTTP {shown}"),
        ));
    }
    let content_type = head.content_type.as_str();
    let media = content_type.split(';').next().unwrap_or("").trim();
    if !(200..300).contains(&status) || !media.eq_ignore_ascii_case("text/event-stream") {
        return Err(Finding::new(
            Code::ProtocolMismatch,
            format!(
                "POST /runs answered HTTP {shown} with Content-Type {content_type:?}, not text/event-stream"
            ),
        ));
    }
    let mut missing = Vec::new();
    let no_cache = head
        .cache_control
        .iter()
        .flat_map(|v| v.split(','))
        .any(|d| d.trim().eq_ignore_ascii_case("no-cache"));
    if !no_cache {
        missing.push("Cache-Control: no-cache");
    }
    let no_buffering = head
        .x_accel_buffering
        .as_deref()
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("no"));
    if !no_buffering {
        missing.push("X-Accel-Buffering: no");
    }
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![Finding::new(
        Code::MissingStreamHeaders,
        format!(
            "the stream response lacks {}: a proxy may buffer the stream",
            missing.join(" and ")
        ),
    )])
}

/// `200 OK` style, as reqwest prints a status.
fn http_status(status: u16) -> String {
    match reqwest::StatusCode::from_u16(status) {
        Ok(s) => s.to_string(),
        Err(_) => status.to_string(),
    }
}
