//! Reading a request body with a size and a time bound.
//!
//! A body is read only after [`runway_core::adapter::Runway::authorize`] accepted the request head,
//! and must arrive within [`BODY_READ_TIMEOUT`]: a `Content-Length` larger than what is sent,
//! or a body trickled a byte at a time, cannot hold a connection.

use std::time::Duration;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use runway_core::adapter::{MAX_BODY_BYTES, json_error};

/// Time a client has to send the whole body once its head was accepted.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of an oversized body is read and dropped before the 413 goes out. A client
/// still sending when the server answers and closes gets a connection reset instead of the
/// answer (the kernel resets a socket closed with unread data); reading on lets it finish
/// sending and read the 413. Only callers that passed `authorize` get this far.
const DRAIN_LIMIT: usize = 16 * 1024 * 1024;

/// The body (at most [`MAX_BODY_BYTES`]), or the error response: 413 when too large or
/// unreadable, 408 when not received in time.
pub async fn read(body: Body) -> Result<Bytes, http::Response<Bytes>> {
    read_within(body, MAX_BODY_BYTES).await
}

/// The body (at most `max_bytes`), within [`BODY_READ_TIMEOUT`], or the error response: 413
/// when too large or unreadable, 408 when not received in time. For every route that reads a
/// body, so none can be held open by a body trickled a byte at a time.
pub async fn read_within(body: Body, max_bytes: usize) -> Result<Bytes, http::Response<Bytes>> {
    let too_large = || too_large_than(max_bytes);
    let drain_limit = DRAIN_LIMIT.max(max_bytes);
    let mut data = body.into_data_stream();
    let collect = async {
        let mut buf = BytesMut::new();
        let mut seen = 0usize;
        while let Some(chunk) = data.next().await {
            let chunk = chunk.map_err(|_| too_large())?;
            seen += chunk.len();
            if seen > drain_limit {
                break;
            }
            if seen <= max_bytes {
                buf.extend_from_slice(&chunk);
            }
        }
        if seen > max_bytes {
            return Err(too_large());
        }
        Ok(buf.freeze())
    };
    match tokio::time::timeout(BODY_READ_TIMEOUT, collect).await {
        Ok(result) => result,
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

/// The answer to a body declared larger than [`MAX_BODY_BYTES`], after reading and dropping
/// what the client sends (up to [`DRAIN_LIMIT`], within [`BODY_READ_TIMEOUT`]).
pub async fn refuse_declared_too_large(body: Body) -> http::Response<Bytes> {
    let mut data = body.into_data_stream();
    let drain = async {
        let mut seen = 0usize;
        while let Some(Ok(chunk)) = data.next().await {
            seen += chunk.len();
            if seen > DRAIN_LIMIT {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(BODY_READ_TIMEOUT, drain).await;
    too_large()
}

fn too_large() -> http::Response<Bytes> {
    too_large_than(MAX_BODY_BYTES)
}

fn too_large_than(max_bytes: usize) -> http::Response<Bytes> {
    let mut r = json_error(
        413,
        &format!(
            "body larger than {} or unreadable",
            runway_agents::attachments::human_bytes(max_bytes)
        ),
    );
    r.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    r
}
