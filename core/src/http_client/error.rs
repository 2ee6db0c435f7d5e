//! What can go wrong with an agent's HTTP request.

use std::time::Duration;

/// A failed HTTP request or body read.
///
/// No variant carries the URL, the query or a header value, so an error can be logged or
/// returned from the agent (`?` turns it into an [`AgentError`](crate::AgentError)) without
/// leaking a key that was in them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The request could not be built (a malformed URL, header name or header value, or a
    /// body that could not be encoded). The reason never repeats the rejected value.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// No connection: the name did not resolve, the peer refused, TLS failed…
    #[error("could not connect: {0}")]
    Connect(String),
    /// The request's own timeout ([`RequestBuilder::timeout`](super::RequestBuilder::timeout))
    /// passed before the response (or its whole body) arrived.
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// The turn's deadline passed: no request outlives the turn that made it.
    #[error("the turn's deadline passed before the request finished")]
    TurnDeadline,
    /// The turn ended (the user pressed Stop, the client left or the agent returned) while the
    /// request or its body was still in flight.
    #[error("the turn ended before the request finished")]
    Cancelled,
    /// The server answered with an error status
    /// ([`HttpResponse::error_for_status`](super::HttpResponse::error_for_status)).
    #[error("HTTP status {0}")]
    Status(http::StatusCode),
    /// The exchange failed after it started: the connection broke, the body could not be read.
    #[error("request failed: {0}")]
    Body(String),
    /// The body is larger than the limit given to [`HttpResponse::bytes_limited`](super::HttpResponse::bytes_limited).
    #[error("response body larger than {limit} bytes")]
    BodyTooLarge {
        /// The limit that was crossed.
        limit: usize,
    },
    /// The body is not what was expected (not UTF-8, not the JSON the caller asked for).
    #[error("could not decode the response body: {0}")]
    Decode(String),
    /// This runtime has no HTTP client (the adapter was built without one).
    #[error("no HTTP client is available to this agent")]
    Unavailable,
}

impl HttpError {
    /// True for errors worth retrying later with the same request: connection failures, the
    /// request's own timeout, broken bodies, and 429 / 5xx statuses.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Connect(_) | Self::Timeout(_) | Self::Body(_) => true,
            Self::Status(s) => s.as_u16() == 429 || s.is_server_error(),
            _ => false,
        }
    }
}
