//! [`HttpClient`] over `reqwest` (rustls), for the native adapters (`runway serve`, AWS Lambda).

use std::error::Error as _;
use std::time::Duration;

use futures::StreamExt;

use super::body::HttpBody;
use super::client::{HttpClient, HttpRequest};
use super::error::HttpError;
use super::response::HttpResponse;
use crate::platform::maybe_send::BoxFuture;

/// `reqwest` with rustls and the platform's proxy settings. Cheap to clone (one connection
/// pool).
///
/// Dropping a request's future or its body drops reqwest's, which closes the connection.
/// Errors go through [`reqwest::Error::without_url`], so none names the URL.
#[derive(Debug, Clone)]
pub struct ReqwestClient {
    client: reqwest::Client,
}

/// Longest wait for a TCP + TLS connection (each request is also bounded by the turn).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl ReqwestClient {
    /// A client with rustls, a 10-second connect timeout and up to 10 redirects.
    pub fn new() -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .unwrap_or_default();
        Self { client }
    }

    /// Wraps a `reqwest::Client` configured by the caller (proxies, root certificates…).
    pub fn from_client(client: reqwest::Client) -> Self {
        Self { client }
    }
}

impl Default for ReqwestClient {
    fn default() -> Self {
        Self::new()
    }
}

/// The error without its URL, with its causes (hyper's and the OS's reasons carry no URL).
fn describe(e: reqwest::Error) -> HttpError {
    let connect = e.is_connect();
    let builder = e.is_builder();
    let e = e.without_url();
    let mut detail = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        source = s.source();
    }
    if builder {
        HttpError::InvalidRequest(detail)
    } else if connect {
        HttpError::Connect(detail)
    } else {
        HttpError::Body(detail)
    }
}

impl HttpClient for ReqwestClient {
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
        let builder = self
            .client
            .request(request.method, request.url)
            .headers(request.headers)
            .body(request.body);
        Box::pin(async move {
            let response = builder.send().await.map_err(describe)?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.bytes_stream().map(|r| r.map_err(describe));
            Ok(HttpResponse::new(
                status,
                headers,
                HttpBody::from_stream(body),
            ))
        })
    }
}
