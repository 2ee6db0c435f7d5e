//! A response: status and headers at once, the body as it streams.

use std::fmt;

use bytes::{Bytes, BytesMut};

use super::body::HttpBody;
use super::error::HttpError;
use super::header_names::HeaderNames;

/// Largest body [`HttpResponse::bytes`], [`HttpResponse::text`] and [`HttpResponse::json`]
/// collect (16 MiB); use [`HttpResponse::bytes_limited`] or read the stream for another limit.
pub const DEFAULT_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// An HTTP response whose body has not been read yet.
///
/// Its `Debug` output shows the status and header names, never header values.
pub struct HttpResponse {
    status: http::StatusCode,
    headers: http::HeaderMap,
    body: HttpBody,
}

impl HttpResponse {
    /// A response (what an [`HttpClient`](super::HttpClient) returns).
    pub fn new(status: http::StatusCode, headers: http::HeaderMap, body: HttpBody) -> Self {
        Self {
            status,
            headers,
            body,
        }
    }

    /// The status code.
    pub fn status(&self) -> http::StatusCode {
        self.status
    }

    /// The response headers.
    pub fn headers(&self) -> &http::HeaderMap {
        &self.headers
    }

    /// `Err(HttpError::Status)` for a 4xx or 5xx status, else the response unchanged. The body
    /// of an error response is dropped unread (read it first if you need it).
    pub fn error_for_status(self) -> Result<Self, HttpError> {
        if self.status.is_client_error() || self.status.is_server_error() {
            Err(HttpError::Status(self.status))
        } else {
            Ok(self)
        }
    }

    /// The next chunk of the body as it arrives, or `None` at its end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, HttpError> {
        self.body.chunk().await
    }

    pub(crate) fn body_mut(&mut self) -> &mut HttpBody {
        &mut self.body
    }

    /// The body as a [`Stream`](futures::Stream) of chunks.
    pub fn into_body(self) -> HttpBody {
        self.body
    }

    /// The whole body, refused past [`DEFAULT_BODY_LIMIT`].
    pub async fn bytes(self) -> Result<Bytes, HttpError> {
        self.bytes_limited(DEFAULT_BODY_LIMIT).await
    }

    /// The whole body, refused with [`HttpError::BodyTooLarge`] as soon as it passes `limit`
    /// bytes (the rest is not read).
    pub async fn bytes_limited(mut self, limit: usize) -> Result<Bytes, HttpError> {
        let mut all = BytesMut::new();
        while let Some(chunk) = self.body.chunk().await? {
            if all.len() + chunk.len() > limit {
                return Err(HttpError::BodyTooLarge { limit });
            }
            all.extend_from_slice(&chunk);
        }
        Ok(all.freeze())
    }

    /// The whole body as UTF-8 text.
    pub async fn text(self) -> Result<String, HttpError> {
        let bytes = self.bytes().await?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| HttpError::Decode("the body is not UTF-8".into()))
    }

    /// The whole body as JSON.
    pub async fn json<T: serde::de::DeserializeOwned>(self) -> Result<T, HttpError> {
        let bytes = self.bytes().await?;
        serde_json::from_slice(&bytes).map_err(|e| HttpError::Decode(e.to_string()))
    }
}

impl fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("headers", &HeaderNames(&self.headers))
            .finish()
    }
}
