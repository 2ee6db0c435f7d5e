//! [`TurnUsage`]: what one turn used, reported by the agent as it goes, and the budget it
//! may still spend.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::agent::outcome::AgentError;
use crate::error::TurnErrorCode;
use crate::meter::limits::Policy;
use crate::meter::window::wait_phrase;
use crate::store::tally::Tally;

/// Tokens one model call used, as the endpoint reported them (`usage` in the last chunk of a
/// chat-completions stream with `stream_options.include_usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelTokens {
    /// `prompt_tokens`.
    pub input: u64,
    /// `completion_tokens` (reasoning included).
    pub output: u64,
    /// `completion_tokens_details.reasoning_tokens`.
    pub reasoning: u64,
}

/// How a turn ended, for its usage record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnOutcome {
    Success,
    Interrupt,
    Error(TurnErrorCode),
}

impl TurnOutcome {
    /// The outcome of a turn that ends with `ending`.
    pub(crate) fn of(ending: &crate::wire::Ending) -> Self {
        match ending {
            crate::wire::Ending::Success => Self::Success,
            crate::wire::Ending::Interrupt(_) => Self::Interrupt,
            crate::wire::Ending::Error { code, .. } => Self::Error(*code),
        }
    }

    /// `SUCCESS`, `INTERRUPT`, or the `RUN_ERROR` code.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Success => "SUCCESS",
            Self::Interrupt => "INTERRUPT",
            Self::Error(c) => c.as_str(),
        }
    }
}

/// What the turn may still spend: set at admission from the limits that apply.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Budget {
    /// Model tokens left today under the tightest token limit.
    pub tokens_left: Option<u64>,
    /// Millionths of a dollar left under the tightest spend limit.
    pub spend_left_micro_usd: Option<u64>,
    /// When the tightest of those limits resets (ms since the epoch).
    pub resets_at_ms: u64,
    /// The period that resets then: `today` or `this month`.
    pub period: &'static str,
}

#[derive(Debug, Default)]
struct State {
    used: Tally,
    budget: Budget,
    policy: Option<Arc<Policy>>,
    started_at_ms: u64,
    first_output_ms: Option<u64>,
    outcome: Option<TurnOutcome>,
    unpriced: Vec<String>,
    write_id: String,
}

/// What a turn has used so far: model calls and tokens, tool calls, attachment bytes, and the
/// estimated cost; and whether it may call its model again. [`crate::Turn::usage`] gives
/// the agent its turn's.
///
/// An agent that calls a model reports each call with [`TurnUsage::model_call`] (the
/// built-in model agent does), and checks [`TurnUsage::budget_spent`] before calling again:
/// once a token or spend limit is reached mid-turn, it stops and returns
/// [`TurnUsage::quota_error`], which ends the turn with `QUOTA_EXCEEDED` and a message saying
/// when it can go on. runway records the figures per workspace × worker × day (`GET /usage`).
///
/// # Example
///
/// ```
/// use runway_core::{AgentResult, ModelTokens, Outcome, Output, Turn};
///
/// async fn answer(turn: &mut Turn, out: &Output) -> AgentResult {
///     for _round in 0..3 {
///         if turn.usage().budget_spent() {
///             return Err(turn.usage().quota_error());
///         }
///         // … call the model, stream its answer to `out` …
///         turn.usage().model_call("gpt-4o-mini", ModelTokens { input: 120, output: 30, reasoning: 0 });
///     }
///     out.text("Done.");
///     Ok(Outcome::Done)
/// }
/// ```
#[derive(Clone, Default)]
pub struct TurnUsage {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for TurnUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnUsage")
            .field("used", &self.lock().used)
            .finish_non_exhaustive()
    }
}

impl TurnUsage {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Each update is a few additions: a panic cannot leave it half done.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one call to `model` that used `tokens`; its cost is estimated from the
    /// deployment's price for `model` (none known: no cost, and a warning once per model).
    pub fn model_call(&self, model: &str, tokens: ModelTokens) {
        let mut s = self.lock();
        s.used.model_calls += 1;
        s.used.input_tokens += tokens.input;
        s.used.output_tokens += tokens.output;
        s.used.reasoning_tokens += tokens.reasoning;
        match s.policy.as_ref().and_then(|p| p.price(model)) {
            Some(price) => {
                s.used.cost_micro_usd += price.micro_usd(tokens.input, tokens.output);
            }
            None => {
                let priced = s.policy.as_ref().is_some_and(|p| !p.prices.is_empty());
                if priced && !s.unpriced.iter().any(|m| m == model) {
                    s.unpriced.push(model.to_owned());
                    tracing::warn!(
                        code = "MODEL_UNPRICED",
                        model,
                        "no price for this model in the workers file: its cost is counted as 0"
                    );
                }
            }
        }
    }

    /// Records a tool call, and whether it failed.
    pub fn tool_call(&self, failed: bool) {
        let mut s = self.lock();
        s.used.tool_calls += 1;
        if failed {
            s.used.tool_failures += 1;
        }
    }

    /// Records `bytes` of user attachments taken in.
    pub fn attachment_bytes(&self, bytes: u64) {
        self.lock().used.attachment_bytes += bytes;
    }

    /// True once this turn used up what the token and spend limits left it: do not call the
    /// model again.
    pub fn budget_spent(&self) -> bool {
        let s = self.lock();
        let tokens = s.used.tokens();
        s.budget.tokens_left.is_some_and(|left| tokens >= left)
            || s.budget
                .spend_left_micro_usd
                .is_some_and(|left| s.used.cost_micro_usd >= left)
    }

    /// The error that ends a turn stopped by its budget: `QUOTA_EXCEEDED`, telling the user
    /// when the limit resets.
    pub fn quota_error(&self) -> AgentError {
        let s = self.lock();
        let when = if s.budget.resets_at_ms == 0 {
            "later".to_owned()
        } else {
            wait_phrase(s.started_at_ms, s.budget.resets_at_ms)
        };
        AgentError::with_user_message(
            format!(
                "This answer was stopped: the usage limit for {} has been reached. It can go on {when}.",
                if s.budget.period.is_empty() { "today" } else { s.budget.period }
            ),
            format!(
                "turn budget spent: {} tokens, {} micro-USD used",
                s.used.tokens(),
                s.used.cost_micro_usd
            ),
        )
        .with_code(TurnErrorCode::QuotaExceeded)
    }

    /// What the turn used so far (outcome and timing fields are not set here).
    pub fn totals(&self) -> Tally {
        self.lock().used
    }

    /// Starts the turn's record: its start, its limits, and the write id its tally writes
    /// carry (one per delivery, so a repeated store write counts once).
    pub(crate) fn start(&self, now_ms: u64, policy: Arc<Policy>, write_id: String) {
        let mut s = self.lock();
        s.started_at_ms = now_ms;
        s.policy = Some(policy);
        s.write_id = write_id;
    }

    /// The write id of this delivery's tally writes (see [`crate::store::tally`]).
    pub(crate) fn write_id(&self) -> String {
        self.lock().write_id.clone()
    }

    pub(crate) fn set_budget(&self, budget: Budget) {
        self.lock().budget = budget;
    }

    pub(crate) fn started_at_ms(&self) -> u64 {
        self.lock().started_at_ms
    }

    /// Notes the time of the agent's first frame (once).
    pub(crate) fn output_at(&self, now_ms: u64) {
        let mut s = self.lock();
        if s.first_output_ms.is_none() {
            s.first_output_ms = Some(now_ms);
        }
    }

    pub(crate) fn first_output_ms(&self) -> Option<u64> {
        self.lock().first_output_ms
    }

    /// Notes how the turn ended (the last call wins: a failed commit replaces the ending).
    pub(crate) fn ended(&self, outcome: TurnOutcome) {
        self.lock().outcome = Some(outcome);
    }

    pub(crate) fn outcome(&self) -> Option<TurnOutcome> {
        self.lock().outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::limits::Price;

    #[test]
    fn costs_and_budget() {
        let mut p = Policy::serve_any();
        p.prices.insert(
            "m".into(),
            Price {
                input_per_million: 1.0,
                output_per_million: 2.0,
            },
        );
        let u = TurnUsage::default();
        u.start(0, Arc::new(p), "w".into());
        u.set_budget(Budget {
            tokens_left: Some(100),
            resets_at_ms: 7_200_000,
            period: "today",
            ..Budget::default()
        });
        u.model_call(
            "m",
            ModelTokens {
                input: 40,
                output: 10,
                reasoning: 5,
            },
        );
        assert!(!u.budget_spent());
        u.model_call(
            "other",
            ModelTokens {
                input: 40,
                output: 10,
                reasoning: 0,
            },
        );
        assert!(u.budget_spent());
        let t = u.totals();
        assert_eq!(
            (
                t.model_calls,
                t.input_tokens,
                t.output_tokens,
                t.reasoning_tokens
            ),
            (2, 80, 20, 5)
        );
        assert_eq!(t.cost_micro_usd, 60);
        let e = u.quota_error();
        assert_eq!(e.code(), Some(TurnErrorCode::QuotaExceeded));
        assert!(
            e.user_message().contains("in about 2 hours"),
            "{}",
            e.user_message()
        );
    }
}
