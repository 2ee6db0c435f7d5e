//! The agents' HTTP client on Workers: `fetch`, with the response body streamed as it arrives
//! and an `AbortController` per request, aborted when the request's future or its body is
//! dropped (the turn ended, the agent stopped reading, the deadline passed).

use bytes::Bytes;
use futures::{Stream, StreamExt};
use runway_core::adapter::BoxFuture;
use runway_core::http_client::{HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse};

/// `fetch` for [`runway_core::Turn::http`] on Workers.
#[derive(Debug, Clone, Copy, Default)]
pub struct FetchClient;

/// Aborts the fetch (request and body) when dropped.
struct AbortOnDrop(Option<worker::AbortController>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.abort();
        }
    }
}

/// A JavaScript error's message with every URL in it replaced (some fetch errors name it).
fn redacted(e: worker::Error) -> String {
    e.to_string()
        .split(' ')
        .map(|w| if w.contains("://") { "<url>" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The body's stream, keeping the abort guard alive as long as it is read.
fn body_stream(
    stream: worker::ByteStream,
    abort: AbortOnDrop,
) -> impl Stream<Item = Result<Bytes, HttpError>> + 'static {
    stream.map(move |chunk| {
        let _keep = &abort;
        chunk
            .map(Bytes::from)
            .map_err(|e| HttpError::Body(redacted(e)))
    })
}

impl HttpClient for FetchClient {
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
        send(request, worker::RequestRedirect::Follow)
    }
}

/// Sends `request` with `fetch`, following redirects as `redirect` says.
pub(crate) fn send(
    request: HttpRequest,
    redirect: worker::RequestRedirect,
) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
    Box::pin(async move {
        let headers = worker::Headers::new();
        for (name, value) in &request.headers {
            let refused = || HttpError::InvalidRequest(format!("header {name} refused"));
            let value = value.to_str().map_err(|_| refused())?;
            headers
                .append(name.as_str(), value)
                .map_err(|_| refused())?;
        }
        let mut init = worker::RequestInit::new();
        init.with_method(worker::Method::from(request.method.as_str().to_owned()))
            .with_headers(headers)
            .with_redirect(redirect);
        if !request.body.is_empty() {
            init.with_body(Some(js_sys::Uint8Array::from(&request.body[..]).into()));
        }
        let req = worker::Request::new_with_init(request.url.as_str(), &init)
            .map_err(|e| HttpError::InvalidRequest(redacted(e)))?;
        let controller = worker::AbortController::default();
        let signal = controller.signal();
        let abort = AbortOnDrop(Some(controller));
        let mut response = worker::Fetch::Request(req)
            .send_with_signal(&signal)
            .await
            .map_err(|e| HttpError::Connect(redacted(e)))?;
        let status = http::StatusCode::from_u16(response.status_code())
            .map_err(|_| HttpError::Body("invalid status code".into()))?;
        let mut head = http::HeaderMap::new();
        for (name, value) in response.headers().entries() {
            if let (Ok(n), Ok(v)) = (
                http::HeaderName::try_from(name),
                http::HeaderValue::try_from(value),
            ) {
                head.append(n, v);
            }
        }
        // `stream()` fails only for a response without a body.
        let body = match response.stream() {
            Ok(stream) => HttpBody::from_stream(body_stream(stream, abort)),
            Err(_) => HttpBody::empty(),
        };
        Ok(HttpResponse::new(status, head, body))
    })
}
