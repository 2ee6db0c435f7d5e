//! [`TurnUsage`]: what one turn used, reported by the agent as it goes, and the budget it
//! may still spend.

use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::join_all;

use crate::error::AgentError;
use crate::error::TurnErrorCode;
use crate::keys::meter_part;
use crate::meter::budget::{Budget, Reached, assess, budget_writes, spend_of};
use crate::meter::ledger::BudgetLedger;
use crate::meter::limits::{Policy, Scope};
use crate::meter::tally::{Tally, TallyKey};
use crate::meter::window::{Windows, wait_phrase};

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
    pub(crate) fn of(ending: &crate::protocol::Ending) -> Self {
        match ending {
            crate::protocol::Ending::Success => Self::Success,
            crate::protocol::Ending::Interrupt(_) => Self::Interrupt,
            crate::protocol::Ending::Error { code, .. } => Self::Error(*code),
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

#[derive(Default)]
struct State {
    used: Tally,
    /// What the limits left when they were last read (at admission, then before each model
    /// call), and the turn's spend then counted in the shared counters.
    budget: Budget,
    counted_at_read: Tally,
    /// The scopes with a token or spend limit (set at admission).
    scopes: Vec<Scope>,
    /// The limit that stopped the turn, once one did.
    reached: Option<Reached>,
    /// The turn's spend already added to the scopes' counters, and how many such writes.
    shared: Tally,
    shared_writes: u32,
    /// Budget writes that failed mid-turn, retried with their own write ids when it ends.
    failed_writes: Vec<(TallyKey, Tally, u64, String)>,
    ledger: Option<Arc<dyn BudgetLedger>>,
    policy: Option<Arc<Policy>>,
    started_at_ms: u64,
    first_output_ms: Option<u64>,
    outcome: Option<TurnOutcome>,
    unpriced: Vec<String>,
    write_id: String,
    /// Whether `models` is kept (a protocol that reports it: AG-UI's `usage[]`).
    keep_models: bool,
    /// The reported calls' tokens summed per provider and model, at most [`MAX_MODEL_ROWS`].
    models: Vec<ModelUsage>,
}

/// Most provider–model pairs a turn's usage lists (a call of another one is counted in the
/// totals only).
const MAX_MODEL_ROWS: usize = 16;

/// The tokens a turn's calls of one model used, as their endpoints reported them (estimates
/// are not included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModelUsage {
    /// Who served the model, when the agent said ([`TurnUsage::provider_model_call`]).
    pub provider: Option<String>,
    /// The model.
    pub model: String,
    /// Its calls' tokens, summed.
    pub tokens: ModelTokens,
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
///         if turn.usage().budget_spent().await {
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

/// `a - b`, field by field (saturating at 0).
fn minus(a: &Tally, b: &Tally) -> Tally {
    let mut v = a.values();
    for (x, y) in v.iter_mut().zip(b.values()) {
        *x = x.saturating_sub(y);
    }
    Tally::from_values(v)
}

impl State {
    fn add_model_row(&mut self, provider: Option<&str>, model: &str, tokens: ModelTokens) {
        let row = self
            .models
            .iter()
            .position(|r| r.model == model && r.provider.as_deref() == provider);
        let row = match row {
            Some(i) => &mut self.models[i],
            None if self.models.len() < MAX_MODEL_ROWS => {
                self.models.push(ModelUsage {
                    provider: provider.map(str::to_owned),
                    model: model.to_owned(),
                    tokens: ModelTokens::default(),
                });
                let last = self.models.len() - 1;
                &mut self.models[last]
            }
            None => return,
        };
        row.tokens.input = row.tokens.input.saturating_add(tokens.input);
        row.tokens.output = row.tokens.output.saturating_add(tokens.output);
        row.tokens.reasoning = row.tokens.reasoning.saturating_add(tokens.reasoning);
    }
}

impl TurnUsage {
    /// A turn's usage that also keeps the reported tokens per provider and model
    /// ([`TurnUsage::by_model`]): for a protocol whose final frame reports them (AG-UI).
    #[cfg_attr(not(feature = "agui"), allow(dead_code))]
    pub(crate) fn keeping_model_rows() -> Self {
        let usage = Self::default();
        usage.lock().keep_models = true;
        usage
    }

    /// The reported calls' tokens per provider and model, in the order first called (empty
    /// unless made by [`TurnUsage::keeping_model_rows`]).
    pub(crate) fn by_model(&self) -> Vec<ModelUsage> {
        self.lock().models.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Each update is a few additions: a panic cannot leave it half done.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one call to `model` that used `tokens`; its cost is estimated from the
    /// deployment's price for `model` (none known: no cost, and a warning once per model).
    /// Every count saturates: an absurd figure never wraps to a small one.
    pub fn model_call(&self, model: &str, tokens: ModelTokens) {
        self.record_call(None, model, tokens, false);
    }

    /// As [`TurnUsage::model_call`], naming who served the model (`openai`, `azure`…): an
    /// AG-UI client reads it in the run's `usage[]`.
    pub fn provider_model_call(&self, provider: &str, model: &str, tokens: ModelTokens) {
        self.record_call(Some(provider), model, tokens, false);
    }

    /// Records one call to `model` whose usage the endpoint never reported (the call was cut
    /// before its `usage` chunk: the user stopped the turn, the stream broke), with `tokens`
    /// estimated by the caller. Counted as [`TurnUsage::model_call`] does, and its tokens also
    /// as `estimated_tokens` in the usage row, so a report tells estimates from figures.
    pub fn model_call_estimated(&self, model: &str, tokens: ModelTokens) {
        self.record_call(None, model, tokens, true);
    }

    fn record_call(
        &self,
        provider: Option<&str>,
        model: &str,
        tokens: ModelTokens,
        estimated: bool,
    ) {
        let mut s = self.lock();
        if estimated {
            let all = tokens.input.saturating_add(tokens.output);
            s.used.estimated_tokens = s.used.estimated_tokens.saturating_add(all);
        } else if s.keep_models {
            s.add_model_row(provider, model, tokens);
        }
        s.used.model_calls = s.used.model_calls.saturating_add(1);
        s.used.input_tokens = s.used.input_tokens.saturating_add(tokens.input);
        s.used.output_tokens = s.used.output_tokens.saturating_add(tokens.output);
        s.used.reasoning_tokens = s.used.reasoning_tokens.saturating_add(tokens.reasoning);
        match s.policy.as_ref().and_then(|p| p.price(model)) {
            Some(price) => {
                let cost = price.micro_usd(tokens.input, tokens.output);
                s.used.cost_micro_usd = s.used.cost_micro_usd.saturating_add(cost);
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
        s.used.tool_calls = s.used.tool_calls.saturating_add(1);
        if failed {
            s.used.tool_failures = s.used.tool_failures.saturating_add(1);
        }
    }

    /// Records `bytes` of user attachments taken in.
    pub fn attachment_bytes(&self, bytes: u64) {
        let mut s = self.lock();
        s.used.attachment_bytes = s.used.attachment_bytes.saturating_add(bytes);
    }

    /// True once a token or spend limit is reached: do not call the model again. Call it
    /// before every model call after the first (admission checked the first).
    ///
    /// It adds this turn's model calls not yet counted to the shared day and month counters
    /// of every limit that applies, then reads those counters back, so the calls of every
    /// concurrent turn (on any instance) count: concurrent turns pass a limit by at most the
    /// one model call each made after their last check. That is one store write per counter
    /// (day, month) and one read per limited scope; a turn without token or spend limits makes
    /// none. A store that cannot answer is logged and the turn's own count since its last
    /// read decides.
    pub async fn budget_spent(&self) -> bool {
        let (ledger, scopes, windows, writes, write_id) = {
            let mut s = self.lock();
            if s.reached.is_some() {
                return true;
            }
            let since_read = minus(&spend_of(&s.used), &s.counted_at_read);
            if let Some(r) = s.budget.reached_by(&since_read) {
                s.reached = Some(r);
                return true;
            }
            let Some(ledger) = s.ledger.clone() else {
                return false;
            };
            if s.scopes.is_empty() {
                return false;
            }
            let windows = Windows::at(s.started_at_ms);
            let delta = minus(&spend_of(&s.used), &s.shared);
            s.shared = spend_of(&s.used);
            s.shared_writes += 1;
            let write_id = format!("{}/call-{}", s.write_id, s.shared_writes);
            let writes = budget_writes(&s.scopes, &windows, &delta);
            (ledger, s.scopes.clone(), windows, writes, write_id)
        };
        let added = join_all(
            writes
                .iter()
                .map(|(key, tally, expires)| ledger.add_tally(key, tally, *expires, &write_id)),
        )
        .await;
        let mut failed = Vec::new();
        for ((key, tally, expires), r) in writes.into_iter().zip(added) {
            if let Err(e) = r {
                tracing::warn!(part = %key.part, error = %e, "could not count a model call in its budget yet");
                failed.push((key, tally, expires, write_id.clone()));
            }
        }
        let parts: Vec<String> = scopes.iter().map(|s| meter_part(&s.key)).collect();
        let reads = join_all(parts.iter().map(|part| ledger.tallies(part))).await;
        let rows = reads.into_iter().collect::<Result<Vec<_>, _>>();
        let mut s = self.lock();
        s.failed_writes.extend(failed);
        let rows = match rows {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the budget counters: the turn's own count decides");
                return false;
            }
        };
        match assess(&scopes, &rows, &windows) {
            Ok(budget) => {
                s.budget = budget;
                // What this read counted of the turn (a failed write is not in it).
                s.counted_at_read = if s.failed_writes.is_empty() {
                    s.shared
                } else {
                    Tally::default()
                };
                false
            }
            Err(reached) => {
                tracing::warn!(
                    code = "QUOTA_EXCEEDED",
                    scope = %reached.scope,
                    limit = reached.kind.name(),
                    "the turn's token or spend limit is reached"
                );
                s.reached = Some(reached);
                true
            }
        }
    }

    /// The error that ends a turn stopped by its budget: `QUOTA_EXCEEDED`, naming the limit
    /// that stopped it and when that limit resets.
    pub fn quota_error(&self) -> AgentError {
        let s = self.lock();
        let now_ms = s.ledger.as_ref().map_or(s.started_at_ms, |l| l.now_ms());
        let reached = s.reached.clone().or_else(|| {
            s.budget
                .reached_by(&minus(&spend_of(&s.used), &s.counted_at_read))
        });
        let user_message = match reached {
            Some(r) => format!(
                "This answer was stopped: the {} has been reached. It can go on {}.",
                r.kind.name(),
                wait_phrase(now_ms, r.resets_at_ms)
            ),
            None => "This answer was stopped: a usage limit has been reached. It can go on later."
                .to_owned(),
        };
        AgentError::with_user_message(
            user_message,
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

    /// The write id of this delivery's tally writes (see [`crate::meter::tally`]).
    pub(crate) fn write_id(&self) -> String {
        self.lock().write_id.clone()
    }

    /// Sets what the limits of `scopes` (those with a token or spend limit) leave the turn.
    pub(crate) fn set_budget(&self, scopes: Vec<Scope>, budget: Budget) {
        let mut s = self.lock();
        s.scopes = scopes;
        s.budget = budget;
    }

    /// Where [`TurnUsage::budget_spent`] counts and reads the shared counters.
    pub(crate) fn set_ledger(&self, ledger: Arc<dyn BudgetLedger>) {
        self.lock().ledger = Some(ledger);
    }

    /// The turn's budget writes still to make when it ends: its spend not yet in the shared
    /// counters (as the turn's own write id) and the mid-turn writes that failed (as theirs).
    pub(crate) fn unshared_budget_writes(&self) -> Vec<(TallyKey, Tally, u64, String)> {
        let s = self.lock();
        let windows = Windows::at(s.started_at_ms);
        let rest = minus(&spend_of(&s.used), &s.shared);
        let mut writes: Vec<(TallyKey, Tally, u64, String)> =
            budget_writes(&s.scopes, &windows, &rest)
                .into_iter()
                .map(|(k, t, e)| (k, t, e, s.write_id.clone()))
                .collect();
        writes.extend(s.failed_writes.iter().cloned());
        writes
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
    use futures::executor::block_on;

    use super::*;
    use crate::error::StoreError;
    use crate::meter::budget::{Left, LimitKind};
    use crate::meter::limits::{Price, UsageLimits};
    use crate::platform::maybe_send::BoxFuture;
    use crate::store::TurnStore;
    use crate::store::memory::MemoryStore;

    fn tokens(input: u64, output: u64) -> ModelTokens {
        ModelTokens {
            input,
            output,
            reasoning: 0,
        }
    }

    #[test]
    fn reported_tokens_are_summed_per_provider_and_model_when_kept() {
        let plain = TurnUsage::default();
        plain.model_call("m", tokens(1, 1));
        assert!(plain.by_model().is_empty(), "kept only where reported");
        let usage = TurnUsage::keeping_model_rows();
        usage.provider_model_call("openai", "m", tokens(10, 2));
        usage.provider_model_call("openai", "m", tokens(5, 1));
        usage.model_call("m", tokens(1, 1));
        usage.model_call_estimated("m", tokens(100, 100));
        let rows = usage.by_model();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].provider.as_deref(), rows[0].tokens),
            (Some("openai"), tokens(15, 3))
        );
        assert_eq!(
            (rows[1].provider.as_deref(), rows[1].tokens),
            (None, tokens(1, 1))
        );
        for i in 0..2 * MAX_MODEL_ROWS {
            usage.model_call(&format!("m{i}"), tokens(1, 1));
        }
        assert_eq!(usage.by_model().len(), MAX_MODEL_ROWS);
        assert_eq!(usage.totals().model_calls, 4 + 2 * MAX_MODEL_ROWS as u64);
    }

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
        u.set_budget(
            Vec::new(),
            Budget {
                left: vec![Left {
                    kind: LimitKind::TokensPerDay,
                    left: 100,
                    resets_at_ms: 7_200_000,
                }],
            },
        );
        u.model_call(
            "m",
            ModelTokens {
                input: 40,
                output: 10,
                reasoning: 5,
            },
        );
        assert!(!block_on(u.budget_spent()));
        u.model_call("other", tokens(40, 10));
        assert!(block_on(u.budget_spent()));
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
        assert_eq!(
            e.user_message(),
            "This answer was stopped: the daily token limit has been reached. It can go on in about 2 hours."
        );
    }

    #[test]
    fn token_counts_saturate_instead_of_wrapping() {
        let u = TurnUsage::default();
        u.model_call("m", tokens(u64::MAX - 10, 0));
        u.model_call("m", tokens(20, 0));
        assert_eq!(u.totals().input_tokens, u64::MAX);
        assert_eq!(u.totals().tokens(), u64::MAX);
    }

    /// A memory store at a fixed time, as the engine's ledger is the store at the clock's.
    struct MemoryLedger(MemoryStore, u64);

    impl BudgetLedger for MemoryLedger {
        fn now_ms(&self) -> u64 {
            self.1
        }

        fn tallies<'a>(
            &'a self,
            part: &'a str,
        ) -> BoxFuture<'a, Result<Vec<(String, Tally)>, StoreError>> {
            Box::pin(self.0.tallies(part, self.1))
        }

        fn add_tally<'a>(
            &'a self,
            key: &'a TallyKey,
            tally: &'a Tally,
            expires_at_ms: u64,
            write_id: &'a str,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            Box::pin(self.0.add_tally(key, tally, expires_at_ms, write_id))
        }
    }

    /// Issue 25: six tool-loop turns admitted together under a 100-token day, 15 tokens a
    /// call, each calling until its budget is spent, made 42 calls when each compared only
    /// its own usage with what admission left it.
    #[test]
    fn concurrent_turns_pass_a_token_limit_by_at_most_one_call_each() {
        let now = 1_796_292_000_000;
        let mut policy = Policy::serve_any();
        policy.worker_limits.insert(
            "a".into(),
            UsageLimits {
                tokens_per_day: Some(100),
                ..UsageLimits::default()
            },
        );
        let policy = Arc::new(policy);
        let ledger: Arc<MemoryLedger> = Arc::new(MemoryLedger(MemoryStore::new(), now));
        let turns: Vec<TurnUsage> = (0..6)
            .map(|i| {
                let u = TurnUsage::default();
                u.start(now, Arc::clone(&policy), format!("turn-{i}"));
                u.set_ledger(ledger.clone());
                block_on(crate::meter::admission::check_turn_limits(
                    &ledger.0,
                    &policy,
                    &u,
                    &format!("turn-{i}"),
                    "a",
                    "w",
                    now,
                ))
                .expect("admitted: nothing spent yet");
                u
            })
            .collect();
        // Round-robin: each turn's first call, then each checks and calls again, up to 7.
        let mut calls = 0;
        for round in 0..7 {
            for u in &turns {
                if round > 0 && block_on(u.budget_spent()) {
                    continue;
                }
                u.model_call("m", tokens(10, 5));
                calls += 1;
            }
        }
        // The turns end: their last calls are counted.
        for u in &turns {
            for (key, tally, expires, write_id) in u.unshared_budget_writes() {
                block_on(ledger.0.add_tally(&key, &tally, expires, &write_id)).expect("add");
            }
        }
        let day = block_on(ledger.0.tallies("meter/worker/a", now)).expect("read");
        let counted = day[0].1.tokens();
        assert_eq!(counted, calls * 15, "every call is counted once");
        assert!(
            counted <= 100 + 6 * 15,
            "{calls} calls, {counted} tokens: more than one call each past the limit"
        );
        let stopped = turns.iter().filter(|u| block_on(u.budget_spent())).count();
        assert_eq!(stopped, 6);
        assert!(
            turns[5]
                .quota_error()
                .user_message()
                .contains("the daily token limit has been reached. It can go on in about 14 hours"),
            "{}",
            turns[5].quota_error().user_message()
        );
    }
}
