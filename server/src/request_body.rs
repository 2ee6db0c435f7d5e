//! Reading a request body on tokio: the runtime's part of the core's request intake
//! ([`runway_core::adapter::BodyIntake`] keeps the bound and the answers).
//!
//! A body is read only after [`runway_core::adapter::Runway::intake`] accepted the request
//! head, and must arrive within [`BODY_READ_TIMEOUT`]: a `Content-Length` larger than what is
//! sent, or a body trickled a byte at a time, cannot hold a connection.

use std::time::Duration;

use axum::body::{Body, BodyDataStream};
use bytes::Bytes;
use futures::StreamExt;
use runway_core::adapter::{BodyIntake, IntakeRefusal};

/// Time a client has to send the whole body once its head was accepted.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of an oversized body is read and dropped before the 413 goes out. A client
/// still sending when the server answers and closes gets a connection reset instead of the
/// answer (the kernel resets a socket closed with unread data); reading on lets it finish
/// sending and read the 413. Only callers that passed `authorize` get this far.
const DRAIN_LIMIT: usize = 16 * 1024 * 1024;

/// The body (at most `max_bytes`), within [`BODY_READ_TIMEOUT`], or the error response: 413
/// when too large, 400 when unreadable, 408 when not received in time. For every route that
/// reads a body, so none can be held open by a body trickled a byte at a time.
pub async fn read_within(body: Body, max_bytes: usize) -> Result<Bytes, http::Response<Bytes>> {
    read_into(body, BodyIntake::new(max_bytes)).await
}

/// `body` read into `intake` (from [`runway_core::adapter::Runway::intake`]) within
/// [`BODY_READ_TIMEOUT`]; past its bound, what the client still sends is drained (up to
/// [`DRAIN_LIMIT`]) before the 413.
pub async fn read_into(body: Body, mut intake: BodyIntake) -> Result<Bytes, http::Response<Bytes>> {
    let mut data = body.into_data_stream();
    let collect = async {
        while let Some(chunk) = data.next().await {
            let chunk = chunk.map_err(|_| IntakeRefusal::Unreadable)?;
            if let Err(refused) = intake.push(&chunk) {
                drain(&mut data, intake.seen()).await;
                return Err(refused);
            }
        }
        Ok(intake.finish())
    };
    let refused = match tokio::time::timeout(BODY_READ_TIMEOUT, collect).await {
        Ok(Ok(bytes)) => return Ok(bytes),
        Ok(Err(refused)) => refused,
        Err(_) => IntakeRefusal::TimedOut,
    };
    Err(closing(refused))
}

/// The answer to a request the head already refused: a stranger's body is never read; one
/// declared larger than the bound is drained first (up to [`DRAIN_LIMIT`], within
/// [`BODY_READ_TIMEOUT`]).
pub async fn refuse(body: Body, refused: IntakeRefusal) -> http::Response<Bytes> {
    if let IntakeRefusal::Head(answer) = refused {
        return *answer;
    }
    let mut data = body.into_data_stream();
    let _ = tokio::time::timeout(BODY_READ_TIMEOUT, drain(&mut data, 0)).await;
    closing(refused)
}

/// Reads and drops what the client still sends, until the body ends, fails or (with the
/// `seen` bytes already read) passes [`DRAIN_LIMIT`].
async fn drain(data: &mut BodyDataStream, mut seen: usize) {
    while let Some(Ok(chunk)) = data.next().await {
        seen += chunk.len();
        if seen > DRAIN_LIMIT {
            break;
        }
    }
}

/// `refused`'s answer, closing the connection: what the client sent is not all read.
fn closing(refused: IntakeRefusal) -> http::Response<Bytes> {
    if let IntakeRefusal::TimedOut = refused {
        tracing::warn!(
            timeout_secs = BODY_READ_TIMEOUT.as_secs(),
            "request body not received in time"
        );
    }
    let mut r = refused.into_response();
    r.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    r
}
