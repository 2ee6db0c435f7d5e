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
    use super::*;
    use runway_core::testing::{Frames, ScriptedHttp, ScriptedResponse, TestTurn};

    const URL: &str = "http://127.0.0.1:9/probe";

    /// The probe's turn when its URL answers with `pieces` as separate body chunks.
    async fn relay(pieces: &[&'static [u8]]) -> Frames {
        let body = pieces
            .iter()
            .fold(ScriptedResponse::new(200), |r, p| r.chunk(*p));
        TestTurn::new("go")
            .http_client(ScriptedHttp::new().get(URL, body))
            .run(HttpProbeAgent::new(URL))
            .await
    }

    #[tokio::test]
    async fn a_character_split_across_chunks_is_relayed_whole() {
        // "é" is C3 A9: the first chunk ends in the middle of it.
        let f = relay(&[b"caf\xc3", b"\xa9 ok"]).await;
        let deltas: Vec<&str> = f
            .of_type("TEXT_MESSAGE_CONTENT")
            .map(|f| f["delta"].as_str().unwrap())
            .collect();
        assert_eq!(deltas, ["caf", "é ok"], "{f:?}");
        assert!(f.is_success(), "{f:?}");
    }

    #[tokio::test]
    async fn a_body_that_is_not_utf8_ends_the_turn_with_an_error() {
        let f = relay(&[b"ok ", b"\xff\xfe"]).await;
        assert_eq!(f.error().unwrap().code, "AGENT_ERROR", "{f:?}");
        let cut = relay(&[b"ok \xc3"]).await;
        assert_eq!(cut.error().unwrap().code, "AGENT_ERROR", "{cut:?}");
    }
}
