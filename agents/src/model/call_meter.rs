//! [`CallMeter`]: counts one model call in the turn's usage exactly once, however it ends. A
//! call that finished counts the tokens the endpoint reported; one cut before its `usage`
//! chunk (the user stopped the turn, the stream broke, the deadline passed) is still billed by
//! the endpoint, so it counts an estimate, marked as such (`estimated_tokens`).

use runway_core::{ModelTokens, TurnUsage};
use serde_json::Value;

/// Bytes per token of the estimate: about 4 bytes of English text (or JSON) per token, the
/// usual rule of thumb for GPT-style tokenizers.
pub(crate) const BYTES_PER_TOKEN: u64 = 4;

/// More tokens than this in one field of one call's `usage` is not a count but the endpoint's
/// fault (no context window is within a factor 1,000 of it): the call fails and counts an
/// estimate instead, so a wild figure never reaches a budget.
pub(crate) const MAX_TOKENS_PER_CALL: u64 = 1_000_000_000;

/// One model call being counted.
pub(crate) struct CallMeter {
    usage: TurnUsage,
    provider: &'static str,
    model: String,
    prompt_bytes: u64,
    streamed_bytes: u64,
    reported: Option<ModelTokens>,
    settled: bool,
}

impl CallMeter {
    /// A call to `model` at `provider` (a label: `ModelSettings::provider`) about to send
    /// `prompt_bytes` of request body.
    pub(crate) fn new(
        usage: TurnUsage,
        provider: &'static str,
        model: &str,
        prompt_bytes: usize,
    ) -> Self {
        Self {
            usage,
            provider,
            model: model.to_owned(),
            prompt_bytes: prompt_bytes as u64,
            streamed_bytes: 0,
            reported: None,
            settled: false,
        }
    }

    /// The endpoint refused the request (an error status, no connection): nothing is billed,
    /// nothing counted.
    pub(crate) fn not_billed(&mut self) {
        self.settled = true;
    }

    /// Text, reasoning or tool-call bytes the model streamed.
    pub(crate) fn streamed(&mut self, bytes: usize) {
        self.streamed_bytes = self.streamed_bytes.saturating_add(bytes as u64);
    }

    /// The endpoint's `usage` object. An endpoint may send one with every chunk: the last
    /// counts.
    ///
    /// # Errors
    /// A count that is not a whole number up to [`MAX_TOKENS_PER_CALL`]: the call is the
    /// endpoint's error (the message says which field).
    pub(crate) fn reported(&mut self, usage: &Value) -> Result<(), String> {
        let count = |field: &str, v: Option<&Value>| match v {
            None | Some(Value::Null) => Ok(0),
            Some(n) => n
                .as_u64()
                .filter(|n| *n <= MAX_TOKENS_PER_CALL)
                .ok_or_else(|| {
                    format!("the model endpoint reported {field} = {n}: not a token count")
                }),
        };
        self.reported = Some(ModelTokens {
            input: count("prompt_tokens", usage.get("prompt_tokens"))?,
            output: count("completion_tokens", usage.get("completion_tokens"))?,
            reasoning: count(
                "reasoning_tokens",
                usage
                    .get("completion_tokens_details")
                    .and_then(|d| d.get("reasoning_tokens")),
            )?,
        });
        Ok(())
    }

    /// Whether the endpoint reported the call's usage.
    pub(crate) fn has_report(&self) -> bool {
        self.reported.is_some()
    }

    /// Counts the call now (the endpoint's figures, or an estimate) and returns its tokens.
    pub(crate) fn finish(mut self) -> ModelTokens {
        self.count()
    }

    fn count(&mut self) -> ModelTokens {
        self.settled = true;
        match self.reported {
            Some(tokens) => {
                self.usage
                    .provider_model_call(self.provider, &self.model, tokens);
                tokens
            }
            None => {
                let tokens = ModelTokens {
                    input: self.prompt_bytes.div_ceil(BYTES_PER_TOKEN),
                    output: self.streamed_bytes.div_ceil(BYTES_PER_TOKEN),
                    reasoning: 0,
                };
                self.usage.model_call_estimated(&self.model, tokens);
                tokens
            }
        }
    }
}

impl Drop for CallMeter {
    /// A call dropped unsettled was cut: the turn stopped, failed or was superseded while it
    /// streamed. The endpoint bills it all the same.
    fn drop(&mut self) {
        if !self.settled {
            self.count();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cut_call_counts_an_estimate_and_a_finished_one_its_report() {
        let usage = TurnUsage::default();
        let mut cut = CallMeter::new(usage.clone(), "openai", "m", 401);
        cut.streamed(10);
        drop(cut);
        let t = usage.totals();
        assert_eq!(
            (
                t.model_calls,
                t.input_tokens,
                t.output_tokens,
                t.estimated_tokens
            ),
            (1, 101, 3, 104)
        );
        let mut done = CallMeter::new(usage.clone(), "openai", "m", 401);
        done.reported(&json!({"prompt_tokens": 21, "completion_tokens": 9}))
            .expect("counts");
        assert_eq!(done.finish().input, 21);
        let t = usage.totals();
        assert_eq!(
            (t.model_calls, t.input_tokens, t.estimated_tokens),
            (2, 122, 104)
        );
        CallMeter::new(usage.clone(), "openai", "m", 401).not_billed();
        assert_eq!(usage.totals().model_calls, 2);
    }

    #[test]
    fn absurd_counts_are_the_endpoints_error() {
        let mut m = CallMeter::new(TurnUsage::default(), "openai", "m", 0);
        for bad in [
            json!({"prompt_tokens": u64::MAX - 10}),
            json!({"completion_tokens": 1_000_000_001u64}),
            json!({"prompt_tokens": -5}),
            json!({"prompt_tokens": 1e30}),
            json!({"completion_tokens_details": {"reasoning_tokens": "many"}}),
        ] {
            assert!(m.reported(&bad).is_err(), "{bad}");
        }
        assert!(!m.has_report());
        m.not_billed();
    }
}
