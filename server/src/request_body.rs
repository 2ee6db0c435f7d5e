//! Reading a request body with a size and a time bound.
//!
//! A body is read only after [`runway_core::adapter::Runway::authorize`] accepted the request head,
//! and must arrive within [`BODY_READ_TIMEOUT`]: a `Content-Length` larger than what is sent,
//! or a body trickled a byte at a time, cannot hold a connection.

use std::time::Duration;

use axum::body::{Body, to_bytes};
use bytes::Bytes;
use runway_core::adapter::{MAX_BODY_BYTES, json_error};

/// Time a client has to send the whole body once its head was accepted.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The body (at most [`MAX_BODY_BYTES`]), or the error response: 413 when too large or
/// unreadable, 408 when not received in time.
pub async fn read(body: Body) -> Result<Bytes, http::Response<Bytes>> {
    match tokio::time::timeout(BODY_READ_TIMEOUT, to_bytes(body, MAX_BODY_BYTES)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(_)) => Err(json_error(413, "body larger than 1 MiB or unreadable")),
        Err(_) => {
            tracing::warn!(
                timeout_secs = BODY_READ_TIMEOUT.as_secs(),
                "request body not received in time"
            );
            let mut r = json_error(408, "request body not received in time");
            r.headers_mut().insert(
                http::header::CONNECTION,
                http::HeaderValue::from_static("close"),
            );
            Err(r)
        }
    }
}
