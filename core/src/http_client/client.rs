//! The HTTP client a platform provides: one request in, a response with a streamed body out.

use std::fmt;

use bytes::Bytes;

use super::error::HttpError;
use super::header_names::HeaderNames;
use super::response::HttpResponse;
use crate::platform::maybe_send::{BoxFuture, MaybeSend, MaybeSync};

/// A request as the platform's client receives it.
///
/// Its `Debug` output shows the method, the header names and the body's length, never the URL
/// or a header value.
#[derive(Clone)]
pub struct HttpRequest {
    /// The method.
    pub method: http::Method,
    /// Where to send it (absolute, `http` or `https`).
    pub url: url::Url,
    /// Request headers.
    pub headers: http::HeaderMap,
    /// The body (empty for none).
    pub body: Bytes,
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &"<redacted>")
            .field("headers", &HeaderNames(&self.headers))
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

/// What a platform provides so agents can call HTTP APIs: `reqwest` on native targets
/// (`ReqwestClient`, feature `reqwest`), `fetch` on Cloudflare Workers
/// (`runway-cloudflare`).
///
/// Agents do not use this trait: they call [`Turn::http`](crate::Turn::http), which bounds
/// every request by the turn's deadline and cancels it when the turn ends. An implementation
/// must:
/// - resolve as soon as the status and headers are in, with the body still streaming
///   ([`HttpBody::from_stream`](super::HttpBody::from_stream)), never after buffering it;
/// - abort the exchange (close the connection, or abort the `fetch`) when the returned future
///   or the response body is dropped;
/// - keep the URL, the query and header values out of its errors and logs.
pub trait HttpClient: MaybeSend + MaybeSync + 'static {
    /// Sends `request` and resolves with the response head; the body streams.
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, HttpError>>;
}
