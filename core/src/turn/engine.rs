//! The engine: what every turn of a process runs with (the agent, the store, the platform's
//! runtime, the settings). A turn starts with `Engine::start` (in `driver.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::agent::turn_actions::ActionStore;
use crate::agent::turn_connections::{
    AccessToken, ConnectScope, Connection, ConnectionError, ConnectionSource, Rejected,
};
use crate::connect::Connections;
use crate::error::StoreError;
use crate::http_client::turn_clock::TurnClock;
use crate::meter::ledger::BudgetLedger;
use crate::meter::tally::{Tally, TallyKey};
use crate::meter::{LogLine, Policy, TurnMetrics};
use crate::platform::maybe_send::{BoxFuture, MaybeSend, MaybeSync};
use crate::platform::runtime::Runtime;
use crate::store::{ActionClaim, TurnStore};
use crate::turn::config::TurnConfig;

/// What every turn of a process runs with.
pub(crate) struct Engine<A, S, R> {
    pub(crate) agent: A,
    pub(crate) store: S,
    pub(crate) rt: R,
    pub(crate) config: TurnConfig,
    /// The workers served, their limits and model prices (a `Workers`' policy, or one agent
    /// for every `agentId`).
    pub(crate) policy: Arc<Policy>,
    /// Where each turn's report goes.
    pub(crate) metrics: Arc<dyn TurnMetrics>,
    /// When a store call last failed (0: never).
    last_store_error_ms: AtomicU64,
    /// Connected accounts (none: no provider configured). Read through
    /// [`Engine::connections`].
    #[cfg_attr(not(feature = "connect"), allow(dead_code))]
    pub(crate) connections: Option<Connections>,
}

impl<A, S, R: Runtime> Engine<A, S, R> {
    /// An engine serving the workers of `policy`, reporting each turn to the log
    /// ([`LogLine`]) until `metrics` is replaced.
    pub(crate) fn new(agent: A, store: S, rt: R, config: TurnConfig, policy: Policy) -> Self {
        Self {
            agent,
            store,
            rt,
            config,
            policy: Arc::new(policy),
            metrics: Arc::new(LogLine),
            last_store_error_ms: AtomicU64::new(0),
            connections: None,
        }
    }

    /// Connected accounts, if any provider is configured. Always none in a build without
    /// the `connect` feature, so none of the vault's code is compiled into it.
    pub(crate) fn connections(&self) -> Option<&Connections> {
        #[cfg(feature = "connect")]
        return self.connections.as_ref();
        #[cfg(not(feature = "connect"))]
        None
    }

    /// Remembers that a store call failed just now.
    pub(crate) fn note_store_error(&self) {
        self.last_store_error_ms
            .store(self.rt.now_ms().max(1), Ordering::Relaxed);
    }

    /// A store call failed within `window`.
    pub(crate) fn store_failed_within(&self, window: Duration) -> bool {
        let last = self.last_store_error_ms.load(Ordering::Relaxed);
        last != 0 && self.rt.now_ms() < last.saturating_add(window.as_millis() as u64)
    }
}

/// The runtime's clock, for the turn's HTTP requests.
impl<A, S, R> TurnClock for Engine<A, S, R>
where
    A: MaybeSend + MaybeSync + 'static,
    S: MaybeSend + MaybeSync + 'static,
    R: Runtime,
{
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(self.rt.sleep(duration))
    }

    fn now_ms(&self) -> u64 {
        self.rt.now_ms()
    }
}

/// The store's action claims, for the turn's [`Turn::claim_action`](crate::Turn::claim_action):
/// held for the thread context's lifetime.
impl<A, S, R> ActionStore for Engine<A, S, R>
where
    A: MaybeSend + MaybeSync + 'static,
    S: TurnStore,
    R: Runtime,
{
    fn claim(
        &self,
        thread_key: &str,
        action: &str,
        holder: &str,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let now_ms = self.rt.now_ms();
        let claim = ActionClaim {
            thread_key: thread_key.to_owned(),
            action: action.to_owned(),
            holder: holder.to_owned(),
            now_ms,
            expires_at_ms: now_ms.saturating_add(self.config.context_ttl.as_millis() as u64),
        };
        Box::pin(async move { self.store.claim_action(&claim).await })
    }
}

/// The vault, for the turn's [`Turn::connection`](crate::Turn::connection).
impl<A, S, R> ConnectionSource for Engine<A, S, R>
where
    A: MaybeSend + MaybeSync + 'static,
    S: TurnStore,
    R: Runtime,
{
    fn connection<'a>(
        &'a self,
        scope: &'a ConnectScope,
        provider: &'a str,
    ) -> BoxFuture<'a, Result<Connection, ConnectionError>> {
        Box::pin(async move {
            match self.connections() {
                Some(c) => c.for_turn(&self.store, &self.rt, scope, provider).await,
                None => Err(ConnectionError::NotConfigured),
            }
        })
    }

    fn token<'a>(
        &'a self,
        scope: &'a ConnectScope,
        provider: &'a str,
    ) -> BoxFuture<'a, Result<Option<AccessToken>, ConnectionError>> {
        Box::pin(async move {
            match self.connections() {
                Some(c) => {
                    c.token_for_turn(&self.store, &self.rt, scope, provider)
                        .await
                }
                None => Err(ConnectionError::NotConfigured),
            }
        })
    }

    fn rejected<'a>(
        &'a self,
        scope: &'a ConnectScope,
        provider: &'a str,
        token: &'a AccessToken,
        retry: Rejected,
    ) -> BoxFuture<'a, Result<Connection, ConnectionError>> {
        Box::pin(async move {
            match self.connections() {
                Some(c) => {
                    c.rejected(&self.store, &self.rt, scope, provider, token, retry)
                        .await
                }
                None => Err(ConnectionError::NotConfigured),
            }
        })
    }
}

/// The store's tally rows at the runtime's clock, for a running turn's
/// [`TurnUsage::budget_spent`](crate::meter::TurnUsage::budget_spent).
impl<A, S, R> BudgetLedger for Engine<A, S, R>
where
    A: MaybeSend + MaybeSync + 'static,
    S: TurnStore,
    R: Runtime,
{
    fn now_ms(&self) -> u64 {
        self.rt.now_ms()
    }

    fn tallies<'a>(
        &'a self,
        part: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(String, Tally)>, StoreError>> {
        let now_ms = self.rt.now_ms();
        Box::pin(self.store.tallies(part, now_ms))
    }

    fn add_tally<'a>(
        &'a self,
        key: &'a TallyKey,
        tally: &'a Tally,
        expires_at_ms: u64,
        write_id: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.store.add_tally(key, tally, expires_at_ms, write_id))
    }
}
