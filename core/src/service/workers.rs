//! [`Workers`]: many Digital Workers behind one `base_url`, each Console `agentId` (and
//! Lowkey agent id) routed to its own agent, with display names, limits and model prices.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::agent::outcome::AgentResult;
use crate::agent::output::Output;
use crate::agent::turn::Turn;
use crate::agent::{Agent, DynAgent, SharedAgent};
use crate::connect::provider::Providers;
use crate::error::AgentError;
use crate::meter::limits::{ANY_WORKSPACE, Policy, Price, UsageLimits};

/// One Digital Worker: its agent, and variants of it for some workspaces.
#[derive(Clone)]
struct Entry {
    agent: SharedAgent,
    per_workspace: HashMap<String, SharedAgent>,
}

/// Several Digital Workers on one deployment: Console's `agentId` (Lowkey's
/// `sessionHandle.agentId`) picks the agent. Serve it like any agent
/// (`runway::serve(workers)`, `runway_lambda::run(workers)`, `runway_cloudflare::fetch`).
///
/// A turn for an `agentId` that is not registered is refused before it starts (HTTP 404,
/// `{"error": …}` naming the id, logged with code `UNKNOWN_AGENT`); it never reaches another
/// worker's agent. With a workers file (`RUNWAY_WORKERS_FILE`), the adapters build this from
/// the file, and the names registered here are the `agent = "…"` the file can refer to.
///
/// # Example
///
/// ```
/// use runway_core::{Agent, AgentResult, UsageLimits, Outcome, Output, Turn, Workers};
///
/// struct Desk;
/// impl Agent for Desk {
///     async fn run(&self, _: &mut Turn, out: &Output) -> AgentResult {
///         out.text("Order desk here.");
///         Ok(Outcome::Done)
///     }
/// }
/// struct Hr;
/// impl Agent for Hr {
///     async fn run(&self, _: &mut Turn, out: &Output) -> AgentResult {
///         out.text("HR here.");
///         Ok(Outcome::Done)
///     }
/// }
///
/// let workers = Workers::new()
///     .add("918273688800000200", Desk)
///     .add("918273688800000300", Hr)
///     .name("918273688800000300", "HR helper")
///     .worker_limits("918273688800000300", UsageLimits { turns_per_minute: Some(30), ..UsageLimits::default() })
///     .workspace_limits("918273600000000001", UsageLimits { spend_per_day: Some(2.0), ..UsageLimits::default() });
/// assert!(workers.policy().serves("918273688800000200"));
/// assert!(!workers.policy().serves("918273688800000999"));
/// ```
#[derive(Clone, Default)]
pub struct Workers {
    entries: HashMap<String, Entry>,
    fallback: Option<SharedAgent>,
    policy: Policy,
    /// Each worker's OAuth providers (its tools file's `[providers.KEY]`).
    providers: BTreeMap<String, Providers>,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut ids: Vec<&String> = self.entries.keys().collect();
        ids.sort();
        f.debug_struct("Workers")
            .field("agent_ids", &ids)
            .field("serves_any", &self.fallback.is_some())
            .field("policy", &self.policy)
            .finish()
    }
}

impl Workers {
    /// No workers yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One agent for every `agentId`: what serving a single agent means (no workers file).
    pub fn any(agent: impl Agent) -> Self {
        Self::any_shared(Arc::new(agent))
    }

    /// `agent` as workers: itself if it is a [`Workers`], else [`Workers::any`] (what a
    /// workers file calls `agent = "main"`).
    pub fn from_agent<A: Agent>(agent: A) -> Self {
        let boxed: Box<dyn std::any::Any> = Box::new(agent);
        match boxed.downcast::<Workers>() {
            Ok(workers) => *workers,
            Err(other) => match other.downcast::<A>() {
                Ok(agent) => Self::any(*agent),
                Err(_) => unreachable!("the box holds an A"),
            },
        }
    }

    /// [`Workers::any`] with a shared agent.
    pub fn any_shared(agent: SharedAgent) -> Self {
        Self {
            fallback: Some(agent),
            policy: Policy::serve_any(),
            ..Self::default()
        }
    }

    /// Serves `agent` as the Digital Worker `agent_id` (or registers it under that name, for
    /// a workers file to refer to).
    pub fn add(self, agent_id: impl Into<String>, agent: impl Agent) -> Self {
        self.add_shared(agent_id, Arc::new(agent))
    }

    /// [`Workers::add`] with a shared agent (one agent may serve several ids).
    pub fn add_shared(mut self, agent_id: impl Into<String>, agent: SharedAgent) -> Self {
        let id = agent_id.into();
        self.policy.served.insert(id.clone());
        self.entries.insert(
            id,
            Entry {
                agent,
                per_workspace: HashMap::new(),
            },
        );
        self
    }

    /// Serves `agent` instead of `agent_id`'s own for turns of `workspace_id` (a per-customer
    /// variant: another model, prompt or tool set); [`crate::meter::ANY_WORKSPACE`]: for
    /// every workspace without a variant of its own. No effect unless `agent_id` was added.
    pub fn add_for_workspace(
        mut self,
        agent_id: &str,
        workspace_id: impl Into<String>,
        agent: SharedAgent,
    ) -> Self {
        if let Some(e) = self.entries.get_mut(agent_id) {
            e.per_workspace.insert(workspace_id.into(), agent);
        }
        self
    }

    /// The display name of `agent_id` (logs, `/usage`, `runway usage`).
    pub fn name(mut self, agent_id: impl Into<String>, name: impl Into<String>) -> Self {
        self.policy.names.insert(agent_id.into(), name.into());
        self
    }

    /// The limits of worker `agent_id`, all workspaces together.
    ///
    /// # Panics
    /// A spend limit that is `nan`, infinite or negative ([`UsageLimits::check`]): it would refuse
    /// every turn, so the deployment refuses to start.
    pub fn worker_limits(mut self, agent_id: impl Into<String>, limits: UsageLimits) -> Self {
        self.policy
            .worker_limits
            .insert(agent_id.into(), checked(limits));
        self
    }

    /// The limits of workspace `workspace_id`, all workers together
    /// ([`crate::meter::ANY_WORKSPACE`]: every workspace without its own).
    ///
    /// # Panics
    /// As [`Workers::worker_limits`].
    pub fn workspace_limits(
        mut self,
        workspace_id: impl Into<String>,
        limits: UsageLimits,
    ) -> Self {
        self.policy
            .workspace_limits
            .insert(workspace_id.into(), checked(limits));
        self
    }

    /// The limits of worker `agent_id` within workspace `workspace_id`.
    ///
    /// # Panics
    /// As [`Workers::worker_limits`].
    pub fn worker_limits_in(
        mut self,
        workspace_id: impl Into<String>,
        agent_id: impl Into<String>,
        limits: UsageLimits,
    ) -> Self {
        self.policy
            .pair_limits
            .insert((workspace_id.into(), agent_id.into()), checked(limits));
        self
    }

    /// The price of `model`, for cost estimates and spend limits.
    ///
    /// # Panics
    /// A price that is `nan`, infinite or negative ([`Price::check`]).
    pub fn price(mut self, model: impl Into<String>, price: Price) -> Self {
        let model = model.into();
        if let Err(e) = price.check() {
            panic!("the price of {model:?} is refused: {e}");
        }
        self.policy.prices.insert(model, price);
        self
    }

    /// The OAuth providers worker `agent_id` acts as the user with (a model worker's tools
    /// file's `[providers.KEY]`): [`crate::Turn::connection`] in its turns finds these, and
    /// the adapters serve them as they serve `Runway::with_providers`. A provider key names
    /// one provider across a deployment (one vault entry per user and key): two workers
    /// declaring the same key differently refuse to start.
    pub fn providers(mut self, agent_id: impl Into<String>, providers: Providers) -> Self {
        self.providers.insert(agent_id.into(), providers);
        self
    }

    /// Each worker's OAuth providers ([`Workers::providers`]), by `agentId`.
    pub fn worker_providers(&self) -> &BTreeMap<String, Providers> {
        &self.providers
    }

    /// The agent registered as `name` (by [`Workers::add`]), to serve under another id.
    pub fn registered(&self, name: &str) -> Option<SharedAgent> {
        self.entries.get(name).map(|e| Arc::clone(&e.agent))
    }

    /// The agent serving every `agentId`, if this serves any ([`Workers::any`]).
    pub fn fallback(&self) -> Option<SharedAgent> {
        self.fallback.clone()
    }

    /// What runway needs to route, limit and bill turns.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The agent for a turn of `agent_id` in `workspace_id`, if one serves it: the
    /// workspace's variant, else the variant for every workspace, else the worker's own.
    pub fn agent_for(&self, agent_id: &str, workspace_id: &str) -> Option<&dyn DynAgent> {
        match self.entries.get(agent_id) {
            Some(e) => Some(
                e.per_workspace
                    .get(workspace_id)
                    .or_else(|| e.per_workspace.get(ANY_WORKSPACE))
                    .unwrap_or(&e.agent)
                    .as_ref(),
            ),
            None => self.fallback.as_deref(),
        }
    }
}

impl Agent for Workers {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        let agent_id = turn.agent_id.clone();
        let workspace_id = turn.workspace_id.clone();
        match self.agent_for(&agent_id, &workspace_id) {
            Some(agent) => agent.run_boxed(turn, out).await,
            // Refused before the turn started when served by runway; reached only when this
            // runs outside it.
            None => Err(AgentError::with_user_message(
                "This Digital Worker is not served here.",
                format!("no agent for agentId {agent_id:?}"),
            )),
        }
    }
}

/// `limits`, if they are valid: a deployment with a spend limit that would refuse every turn
/// does not start.
fn checked(limits: UsageLimits) -> UsageLimits {
    if let Err(e) = limits.check() {
        panic!("a spend limit is refused: {e}");
    }
    limits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "spend_per_day = NaN: not an amount in US dollars")]
    fn a_nan_spend_limit_in_code_refuses_to_start() {
        let _ = Workers::new().workspace_limits(
            "918273600000000001",
            UsageLimits {
                spend_per_day: Some(f64::NAN),
                ..UsageLimits::default()
            },
        );
    }

    #[test]
    #[should_panic(expected = "input_per_million = -1: not an amount in US dollars")]
    fn a_negative_price_in_code_refuses_to_start() {
        let _ = Workers::new().price(
            "gpt-4o-mini",
            Price {
                input_per_million: -1.0,
                output_per_million: 0.6,
            },
        );
    }
}
