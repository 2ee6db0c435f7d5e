use crate::agent::{Agent, AgentResult, Outcome, Turn};
use crate::output::Output;

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
                    return Err(crate::AgentError::new("the probed body is not UTF-8"));
                }
            };
            if valid > 0 {
                let rest = pending.split_off(valid);
                out.text(String::from_utf8(std::mem::replace(&mut pending, rest))?);
            }
        }
        if !pending.is_empty() {
            return Err(crate::AgentError::new("the probed body ends mid-character"));
        }
        Ok(Outcome::Done)
    }
}
