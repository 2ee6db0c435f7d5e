//! What a deployment allows and what models cost: [`UsageLimits`], [`Price`], and the [`Policy`]
//! that says which limits apply to a turn.

use std::collections::{BTreeMap, BTreeSet};

use crate::keys::{pair_scope, worker_scope, workspace_scope};

/// Limits on a scope: a workspace (a customer), a worker (a Digital Worker), or one worker in
/// one workspace. Unset means unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsageLimits {
    /// Turns started per minute (a fixed window: the UTC minute). Beyond it a turn is refused
    /// with `RATE_LIMITED`.
    pub turns_per_minute: Option<u64>,
    /// Model tokens (input and output) per UTC day. Once reached, turns are refused with
    /// `QUOTA_EXCEEDED`, and a turn that reaches it mid-way stops calling its model.
    pub tokens_per_day: Option<u64>,
    /// Estimated spend per UTC day, in US dollars, from the model [`Price`]s.
    pub spend_per_day: Option<f64>,
    /// Estimated spend per UTC calendar month, in US dollars.
    pub spend_per_month: Option<f64>,
}

impl UsageLimits {
    /// True if no limit is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// True if a token or spend limit is set (the store's day and month counters are kept).
    pub fn has_budget(&self) -> bool {
        self.tokens_per_day.is_some()
            || self.spend_per_day.is_some()
            || self.spend_per_month.is_some()
    }

    /// Checks that every spend limit is a number of US dollars: finite and 0 or more.
    ///
    /// # Errors
    /// The first limit that is not: `nan`, `inf` or a negative number would refuse every turn.
    pub fn check(&self) -> Result<(), InvalidAmount> {
        check_usd("spend_per_day", self.spend_per_day)?;
        check_usd("spend_per_month", self.spend_per_month)
    }

    /// `self` with every limit `other` sets taken from `other`.
    pub fn overridden_by(self, other: &UsageLimits) -> Self {
        Self {
            turns_per_minute: other.turns_per_minute.or(self.turns_per_minute),
            tokens_per_day: other.tokens_per_day.or(self.tokens_per_day),
            spend_per_day: other.spend_per_day.or(self.spend_per_day),
            spend_per_month: other.spend_per_month.or(self.spend_per_month),
        }
    }
}

/// A model's price in US dollars per million tokens, for spend estimates and limits.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Price {
    /// Per million prompt tokens.
    pub input_per_million: f64,
    /// Per million completion tokens (reasoning tokens are completion tokens).
    pub output_per_million: f64,
}

/// A spend limit or price that is not a number of US dollars of 0 or more.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field} = {value}: not an amount in US dollars (use a number of 0 or more)")]
pub struct InvalidAmount {
    /// The field: `spend_per_day`, `input_per_million`…
    pub field: &'static str,
    /// What it was.
    pub value: f64,
}

/// `Ok` if `value` is absent or a finite number of 0 or more.
fn check_usd(field: &'static str, value: Option<f64>) -> Result<(), InvalidAmount> {
    match value {
        Some(v) if !(v.is_finite() && v >= 0.0) => Err(InvalidAmount { field, value: v }),
        _ => Ok(()),
    }
}

impl Price {
    /// Checks that both prices are finite numbers of 0 or more.
    ///
    /// # Errors
    /// The first that is not (a negative or `nan` price would make every cost 0).
    pub fn check(&self) -> Result<(), InvalidAmount> {
        check_usd("input_per_million", Some(self.input_per_million))?;
        check_usd("output_per_million", Some(self.output_per_million))
    }

    /// The cost of `input` and `output` tokens, in millionths of a dollar (a price per million
    /// tokens is a price in millionths of a dollar per token).
    pub fn micro_usd(&self, input: u64, output: u64) -> u64 {
        let cost = input as f64 * self.input_per_million + output as f64 * self.output_per_million;
        if cost.is_finite() && cost > 0.0 {
            cost.round() as u64
        } else {
            0
        }
    }
}

/// One scope a turn is counted in, with its limits.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scope {
    /// `workspace/{id}`, `worker/{id}` or `workspace/{id}/worker/{id}` (ids in their storage
    /// form).
    pub key: String,
    /// What the scope allows.
    pub limits: UsageLimits,
}

/// Which Digital Workers a deployment serves, their names, the limits of workers and
/// workspaces, and model prices: what runway needs to route, refuse and bill a turn.
/// Built with [`crate::Workers`].
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub(crate) served: BTreeSet<String>,
    pub(crate) serves_any: bool,
    pub(crate) names: BTreeMap<String, String>,
    pub(crate) worker_limits: BTreeMap<String, UsageLimits>,
    pub(crate) workspace_limits: BTreeMap<String, UsageLimits>,
    pub(crate) pair_limits: BTreeMap<(String, String), UsageLimits>,
    pub(crate) prices: BTreeMap<String, Price>,
}

/// The `workspaces` key whose limits apply to every workspace without its own entry.
pub const ANY_WORKSPACE: &str = "*";

impl Policy {
    /// A policy serving every `agentId` with no limits (one agent, no workers file).
    pub fn serve_any() -> Self {
        Self {
            serves_any: true,
            ..Self::default()
        }
    }

    /// Whether `agent_id` is served here.
    pub fn serves(&self, agent_id: &str) -> bool {
        self.serves_any || self.served.contains(agent_id)
    }

    /// The agentIds of the workers listed by name (a workers file, `Workers::add`), in order;
    /// none when one agent serves every agentId.
    pub fn listed_workers(&self) -> impl Iterator<Item = &str> {
        self.served.iter().map(String::as_str)
    }

    /// The display name of worker `agent_id`, if it has one.
    pub fn name(&self, agent_id: &str) -> Option<&str> {
        self.names.get(agent_id).map(String::as_str)
    }

    /// The price of `model`, if the deployment knows it.
    pub fn price(&self, model: &str) -> Option<Price> {
        self.prices.get(model).copied()
    }

    /// The limits that apply to a turn of `agent_id` in `workspace_id`, scope by scope
    /// (only scopes with a limit set).
    pub(crate) fn scopes(&self, agent_id: &str, workspace_id: &str) -> Vec<Scope> {
        let workspace = self
            .workspace_limits
            .get(workspace_id)
            .or_else(|| self.workspace_limits.get(ANY_WORKSPACE));
        let pair = self
            .pair_limits
            .get(&(workspace_id.to_owned(), agent_id.to_owned()))
            .or_else(|| {
                self.pair_limits
                    .get(&(ANY_WORKSPACE.to_owned(), agent_id.to_owned()))
            });
        [
            (workspace_scope(workspace_id), workspace),
            (worker_scope(agent_id), self.worker_limits.get(agent_id)),
            (pair_scope(workspace_id, agent_id), pair),
        ]
        .into_iter()
        .filter_map(|(key, limits)| {
            let limits = *limits?;
            (!limits.is_empty()).then_some(Scope { key, limits })
        })
        .collect()
    }

    /// True if any scope has a spend limit (its models then need a [`Price`]).
    pub fn has_spend_limits(&self) -> bool {
        self.worker_limits
            .values()
            .chain(self.workspace_limits.values())
            .chain(self.pair_limits.values())
            .any(|l| l.spend_per_day.is_some() || l.spend_per_month.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spend_limits_and_prices_are_amounts_of_dollars() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.5] {
            let l = UsageLimits {
                spend_per_month: Some(bad),
                ..UsageLimits::default()
            };
            let e = l.check().expect_err("not an amount");
            assert_eq!(e.field, "spend_per_month");
            let p = Price {
                input_per_million: 0.15,
                output_per_million: bad,
            };
            assert_eq!(
                p.check().expect_err("not a price").field,
                "output_per_million"
            );
        }
        let fine = UsageLimits {
            spend_per_day: Some(0.0),
            spend_per_month: Some(40.0),
            ..UsageLimits::default()
        };
        assert_eq!(fine.check(), Ok(()));
    }

    #[test]
    fn scopes_take_the_workspace_entry_or_the_default() {
        let mut p = Policy::serve_any();
        let ten = UsageLimits {
            turns_per_minute: Some(10),
            ..UsageLimits::default()
        };
        p.workspace_limits.insert("w1".into(), ten);
        p.workspace_limits.insert(
            ANY_WORKSPACE.into(),
            UsageLimits {
                turns_per_minute: Some(2),
                ..UsageLimits::default()
            },
        );
        p.worker_limits.insert(
            "a".into(),
            UsageLimits {
                tokens_per_day: Some(5),
                ..UsageLimits::default()
            },
        );
        let s = p.scopes("a", "w1");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].key, "workspace/w1");
        assert_eq!(s[0].limits, ten);
        assert_eq!(s[1].key, "worker/a");
        assert_eq!(p.scopes("b", "w2")[0].limits.turns_per_minute, Some(2));
        assert_eq!(
            Price {
                input_per_million: 0.15,
                output_per_million: 0.6
            }
            .micro_usd(1000, 100),
            210
        );
    }
}
