use runway_core::Output;
use runway_core::{Agent, AgentResult, Outcome, Turn};

/// Fetches one URL fixed by the operator (`RUNWAY_HTTP_PROBE_URL`) with `GET` and relays its
/// body to the user as it arrives, chunk by chunk: a check that a runtime's HTTP client
/// reaches what it should and streams (the tests run it under every local runtime).
///
/// The URL is configuration, never taken from the chat, so a user cannot point it anywhere.
#[derive(Debug, Clone)]
pub struct HttpProbeAgent {
    url: String,
}

impl HttpProbeAgent {
    /// The setting that holds the URL.
    pub const URL_SETTING: &'static str = "RUNWAY_HTTP_PROBE_URL";

    /// Probes `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into() }
    }
}

impl Agent for HttpProbeAgent {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        let mut response = turn
            .http()
            .get(&self.url)
            .send()
            .await?
            .error_for_status()?;
        // A multi-byte character may be split across chunks: hold back an incomplete tail.
        let mut pending = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            pending.extend_from_slice(&chunk);
            let valid = match std::str::from_utf8(&pending) {
                Ok(s) => s.len(),
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(_) => {
                    return Err(runway_core::AgentError::new("the probed body is not UTF-8"));
                }
            };
            if valid > 0 {
                let rest = pending.split_off(valid);
                out.text(String::from_utf8(std::mem::replace(&mut pending, rest))?);
            }
        }
        if !pending.is_empty() {
            return Err(runway_core::AgentError::new(
                "the probed body ends mid-character",
            ));
        }
        Ok(Outcome::Done)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use futures::StreamExt;

    use super::*;
    use runway_core::adapter::{BoxFuture, Config, MemoryStore, Reply, Runtime, Runway};
    use runway_core::http_client::{HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse};

    /// tokio's timer (the core's `tokio` feature may be off in its own tests).
    struct Rt;

    impl Runtime for Rt {
        type Sleep = tokio::time::Sleep;
        fn sleep(&self, d: std::time::Duration) -> Self::Sleep {
            tokio::time::sleep(d)
        }
        fn now_ms(&self) -> u64 {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64)
        }
        fn fill_random(&self, buf: &mut [u8]) {
            buf.fill(7);
        }
    }

    /// Answers every request with `pieces` as separate body chunks.
    struct Pieces(Vec<&'static [u8]>);

    impl HttpClient for Pieces {
        fn send(&self, _: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
            let chunks: Vec<Result<Bytes, HttpError>> =
                self.0.iter().map(|p| Ok(Bytes::from_static(p))).collect();
            Box::pin(async move {
                Ok(HttpResponse::new(
                    http::StatusCode::OK,
                    http::HeaderMap::new(),
                    HttpBody::from_stream(futures::stream::iter(chunks)),
                ))
            })
        }
    }

    async fn relay(pieces: Vec<&'static [u8]>) -> String {
        let runway = Runway::new(
            HttpProbeAgent::new("http://127.0.0.1:9/probe"),
            MemoryStore::new(),
            Rt,
            Config::unauthenticated(),
        )
        .with_http_client(Pieces(pieces));
        let body = r#"{"protocolVersion":"1","runId":"r","threadId":"t","agentId":"a","workspaceId":"w","input":"go"}"#;
        let req = http::Request::post("/runs")
            .body(Bytes::from(body))
            .unwrap();
        let Reply::Stream { response, turn } = runway.handle(req).await else {
            panic!("expected a streamed turn");
        };
        let (_, chunks) = futures::join!(turn, response.into_body().collect::<Vec<_>>());
        chunks
            .into_iter()
            .map(|c| String::from_utf8(c.unwrap().to_vec()).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn a_character_split_across_chunks_is_relayed_whole() {
        // "é" is C3 A9: the first chunk ends in the middle of it.
        let sse = relay(vec![b"caf\xc3", b"\xa9 ok"]).await;
        assert!(sse.contains(r#""delta":"caf""#), "{sse}");
        assert!(sse.contains(r#""delta":"é ok""#), "{sse}");
        assert!(sse.contains("RUN_FINISHED"), "{sse}");
    }

    #[tokio::test]
    async fn a_body_that_is_not_utf8_ends_the_turn_with_an_error() {
        let sse = relay(vec![b"ok ", b"\xff\xfe"]).await;
        assert!(sse.contains("AGENT_ERROR"), "{sse}");
        let cut = relay(vec![b"ok \xc3"]).await;
        assert!(cut.contains("AGENT_ERROR"), "{cut}");
    }
}
