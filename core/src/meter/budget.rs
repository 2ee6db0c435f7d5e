//! A turn's budget: what its token and spend limits leave it, which limit is reached, and the
//! counters its spend is added to. Assessed at admission and again before every model call of
//! a turn (see [`crate::meter::TurnUsage::budget_spent`]), so concurrent turns see each
//! other's calls as soon as they end.

use crate::error::TurnErrorCode;
use crate::keys::meter_part;
use crate::meter::limits::Scope;
use crate::meter::tally::{Tally, TallyKey};
use crate::meter::window::{Windows, wait_phrase};
use crate::protocol::Ending;

/// How long a day's budget counters are kept after the day (or month) ends.
const BUDGET_KEPT_MS: u64 = 86_400_000;

/// A token or spend limit, as the user is told about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LimitKind {
    /// [`crate::meter::UsageLimits::tokens_per_day`].
    TokensPerDay,
    /// [`crate::meter::UsageLimits::spend_per_day`].
    SpendPerDay,
    /// [`crate::meter::UsageLimits::spend_per_month`].
    SpendPerMonth,
}

impl LimitKind {
    /// The limit's name in a message: "daily token limit".
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::TokensPerDay => "daily token limit",
            Self::SpendPerDay => "daily spending limit",
            Self::SpendPerMonth => "monthly spending limit",
        }
    }

    /// What of `used` this limit counts: tokens or millionths of a dollar.
    fn measure(self, used: &Tally) -> u64 {
        match self {
            Self::TokensPerDay => used.tokens(),
            Self::SpendPerDay | Self::SpendPerMonth => used.cost_micro_usd,
        }
    }
}

/// What one limit leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Left {
    pub kind: LimitKind,
    /// Tokens or millionths of a dollar.
    pub left: u64,
    /// When the limit's window ends (ms since the epoch).
    pub resets_at_ms: u64,
}

/// A limit that is reached, and when it resets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reached {
    pub kind: LimitKind,
    pub resets_at_ms: u64,
    /// The scope whose limit it is (logged, never shown).
    pub scope: String,
}

impl Reached {
    /// What the user reads when this limit refuses a turn at its start.
    pub(crate) fn refusal(&self, now_ms: u64) -> Ending {
        tracing::warn!(
            code = "QUOTA_EXCEEDED",
            scope = %self.scope,
            limit = self.kind.name(),
            "turn refused: a token or spend limit is reached"
        );
        Ending::error(
            TurnErrorCode::QuotaExceeded,
            format!(
                "The {} has been reached. Please try again {}.",
                self.kind.name(),
                wait_phrase(now_ms, self.resets_at_ms)
            ),
        )
    }
}

/// What a turn may still spend under every limit that applies to it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Budget {
    pub left: Vec<Left>,
}

impl Budget {
    /// The limit `used` (spent since this budget was read) reaches, if any: of several, the one
    /// that resets last (the turn cannot go on before it).
    pub(crate) fn reached_by(&self, used: &Tally) -> Option<Reached> {
        self.left
            .iter()
            .filter(|l| l.kind.measure(used) >= l.left)
            .max_by_key(|l| l.resets_at_ms)
            .map(|l| Reached {
                kind: l.kind,
                resets_at_ms: l.resets_at_ms,
                scope: String::new(),
            })
    }
}

/// The budget `scopes` leave, from their counters `rows` (one read per scope, in order), or
/// the limit that is already reached (of several, the one that resets last).
pub(crate) fn assess(
    scopes: &[Scope],
    rows: &[Vec<(String, Tally)>],
    windows: &Windows,
) -> Result<Budget, Reached> {
    let (day, month) = (windows.day_item(), windows.month_item());
    let mut budget = Budget::default();
    let mut reached: Option<Reached> = None;
    for (scope, rows) in scopes.iter().zip(rows) {
        let used = |item: &str| {
            rows.iter()
                .find(|(i, _)| i == item)
                .map(|(_, t)| *t)
                .unwrap_or_default()
        };
        let (today, this_month) = (used(&day), used(&month));
        let l = scope.limits;
        let limits = [
            (
                LimitKind::TokensPerDay,
                l.tokens_per_day,
                today,
                windows.day_end_ms(),
            ),
            (
                LimitKind::SpendPerDay,
                l.spend_per_day.map(usd_to_micro),
                today,
                windows.day_end_ms(),
            ),
            (
                LimitKind::SpendPerMonth,
                l.spend_per_month.map(usd_to_micro),
                this_month,
                windows.month_end_ms(),
            ),
        ];
        for (kind, max, counted, resets_at_ms) in limits {
            let Some(max) = max else { continue };
            let spent = kind.measure(&counted);
            if spent >= max {
                if reached
                    .as_ref()
                    .is_none_or(|r| resets_at_ms > r.resets_at_ms)
                {
                    reached = Some(Reached {
                        kind,
                        resets_at_ms,
                        scope: scope.key.clone(),
                    });
                }
            } else {
                budget.left.push(Left {
                    kind,
                    left: max - spent,
                    resets_at_ms,
                });
            }
        }
    }
    match reached {
        Some(r) => Err(r),
        None => Ok(budget),
    }
}

/// The token and spend part of `used`: what the budget counters add up.
pub(crate) fn spend_of(used: &Tally) -> Tally {
    Tally {
        input_tokens: used.input_tokens,
        output_tokens: used.output_tokens,
        cost_micro_usd: used.cost_micro_usd,
        ..Tally::default()
    }
}

/// The budget counters `spent` is added to: the day row of each scope with a daily limit, the
/// month row of each with a monthly one, with their expiries.
pub(crate) fn budget_writes(
    scopes: &[Scope],
    windows: &Windows,
    spent: &Tally,
) -> Vec<(TallyKey, Tally, u64)> {
    let mut writes = Vec::new();
    if spent.is_zero() {
        return writes;
    }
    for scope in scopes {
        let l = scope.limits;
        let part = meter_part(&scope.key);
        if l.tokens_per_day.is_some() || l.spend_per_day.is_some() {
            writes.push((
                TallyKey::new(&part, windows.day_item()),
                *spent,
                windows.day_end_ms() + BUDGET_KEPT_MS,
            ));
        }
        if l.spend_per_month.is_some() {
            writes.push((
                TallyKey::new(&part, windows.month_item()),
                *spent,
                windows.month_end_ms() + BUDGET_KEPT_MS,
            ));
        }
    }
    writes
}

/// US dollars to millionths (a negative or absurd limit counts as zero: such a limit is
/// refused at start-up, see [`crate::meter::UsageLimits::check`]).
pub(crate) fn usd_to_micro(usd: f64) -> u64 {
    if usd.is_finite() && usd > 0.0 {
        (usd * 1_000_000.0).round() as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::UsageLimits;

    #[test]
    fn the_reached_limit_is_named_with_its_own_reset() {
        // 2026-12-03T10:00:00Z: the day ends in 14 hours, the month in 28 days.
        let now = 1_796_292_000_000;
        let windows = Windows::at(now);
        let scopes = [Scope {
            key: "worker/a".into(),
            limits: UsageLimits {
                tokens_per_day: Some(100),
                spend_per_month: Some(40.0),
                ..UsageLimits::default()
            },
        }];
        let day = Tally {
            input_tokens: 90,
            output_tokens: 10,
            ..Tally::default()
        };
        let rows = vec![vec![(windows.day_item(), day)]];
        let reached = assess(&scopes, &rows, &windows).expect_err("100 of 100 tokens");
        assert_eq!(reached.kind, LimitKind::TokensPerDay);
        let Ending::Error { message, .. } = reached.refusal(now) else {
            panic!("a refusal is an error");
        };
        assert_eq!(
            message,
            "The daily token limit has been reached. Please try again in about 14 hours."
        );
        // Under the limits, the budget's token limit is the one a turn's tokens reach.
        let rows = vec![vec![(
            windows.day_item(),
            Tally {
                input_tokens: 40,
                ..Tally::default()
            },
        )]];
        let budget = assess(&scopes, &rows, &windows).expect("60 tokens left");
        let used = Tally {
            output_tokens: 60,
            ..Tally::default()
        };
        let r = budget.reached_by(&used).expect("60 tokens spend it");
        assert_eq!(
            (r.kind, r.resets_at_ms),
            (LimitKind::TokensPerDay, windows.day_end_ms())
        );
    }
}
