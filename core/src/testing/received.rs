//! [`receive`]: a [`Reply`] read to its end the way an adapter serves it, the turn driven
//! beside its body, each chunk stamped with when it arrived on the virtual clock.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;

use crate::service::Reply;
use crate::testing::clock::VirtualRuntime;

/// What a client read from one reply.
#[derive(Debug, Clone)]
pub struct Received {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: http::HeaderMap,
    /// The body as it arrived: each chunk with the virtual time since the reply was handed
    /// over. A full (non-streamed) reply is one chunk at zero.
    pub chunks: Vec<(Duration, Bytes)>,
}

impl Received {
    /// The whole body as text (lossy UTF-8).
    pub fn body(&self) -> String {
        let mut all = Vec::with_capacity(self.chunks.iter().map(|(_, c)| c.len()).sum());
        for (_, c) in &self.chunks {
            all.extend_from_slice(c);
        }
        String::from_utf8_lossy(&all).into_owned()
    }

    /// The `content-type` header, or `""`.
    pub fn content_type(&self) -> &str {
        self.headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// How long after the reply the last chunk arrived.
    pub fn took(&self) -> Duration {
        self.chunks.last().map_or(Duration::ZERO, |(t, _)| *t)
    }
}

/// Reads `reply` to its end: a streamed turn is run beside its body, as an adapter does
/// (`tokio::spawn` on the server, the Worker's `waitUntil`), until both are done. Times are on
/// `clock`; await it inside [`VirtualRuntime::run`] (or through
/// [`TestRunway`](super::TestRunway), which does).
pub async fn receive(reply: Reply, clock: &VirtualRuntime) -> Received {
    let start = clock.elapsed();
    match reply {
        Reply::Full(response) => {
            let (parts, body) = response.into_parts();
            Received {
                status: parts.status.as_u16(),
                headers: parts.headers,
                chunks: vec![(Duration::ZERO, body)],
            }
        }
        Reply::Stream { response, turn } => {
            let (parts, mut body) = response.into_parts();
            let read = async {
                let mut chunks = Vec::new();
                while let Some(chunk) = body.next().await {
                    match chunk {
                        Ok(c) => chunks.push((clock.elapsed() - start, c)),
                        Err(never) => match never {},
                    }
                }
                chunks
            };
            let ((), chunks) = futures::join!(turn, read);
            Received {
                status: parts.status.as_u16(),
                headers: parts.headers,
                chunks,
            }
        }
    }
}
