//! [`TestRunway`]: an agent served by the real [`Runway`] on a [`TestStore`] and a virtual
//! clock, for several turns.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use crate::agent::Agent;
use crate::http_client::HttpClient;
use crate::service::Runway;
use crate::service::config::Config;
use crate::testing::clock::VirtualRuntime;
use crate::testing::frames::Frames;
use crate::testing::received::{Received, receive};
use crate::testing::store::TestStore;
use crate::testing::test_turn::{TestTurn, TurnClient};

/// An already shared client, handed to [`Runway::with_http_client`].
struct SharedClient(Arc<dyn HttpClient>);

impl HttpClient for SharedClient {
    fn send(
        &self,
        request: crate::http_client::HttpRequest,
    ) -> crate::platform::maybe_send::BoxFuture<
        'static,
        Result<crate::http_client::HttpResponse, crate::http_client::HttpError>,
    > {
        self.0.send(request)
    }
}

/// An agent served as in production, with a memory store that can be told to fail
/// ([`TestStore`]) and a clock that moves only when the turn waits ([`VirtualRuntime`]).
///
/// [`TestRunway::send`] goes through [`Runway::handle`], the engine and the Console writer,
/// exactly as a deployed agent's turns do. Turns sent one after another on the same thread see
/// what earlier ones saved; turns sent at once (joined inside [`VirtualRuntime::run`]) overlap
/// as they would on a server.
///
/// # Example
///
/// Two turns on one thread: the second sees the first in the stored thread.
///
/// ```
/// use runway_core::testing::{TestRunway, TestTurn};
/// use runway_core::{Agent, AgentResult, Outcome, Output, Role, Turn};
///
/// struct Recall;
///
/// impl Agent for Recall {
///     async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
///         match turn.context.last(Role::User) {
///             Some(earlier) => out.text(format!("Earlier you said {}.", earlier.content)),
///             None => out.text("Nice to meet you."),
///         }
///         Ok(Outcome::Done)
///     }
/// }
///
/// # runway_core::testing::VirtualRuntime::new().block_on(async {
/// let runway = TestRunway::new(Recall);
/// runway.send(TestTurn::new("I am Lan")).await;
/// let second = runway.send(TestTurn::new("Who am I?")).await;
/// assert_eq!(second.text(), "Earlier you said I am Lan.");
/// assert_eq!(second.saved().unwrap().messages.len(), 4);
/// # });
/// ```
pub struct TestRunway<A> {
    runway: Runway<A, TestStore, VirtualRuntime>,
    rt: VirtualRuntime,
    sent: AtomicU64,
}

impl<A> std::fmt::Debug for TestRunway<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestRunway")
            .field("clock", &self.rt)
            .finish_non_exhaustive()
    }
}

impl<A: Agent> TestRunway<A> {
    /// Serves `agent` with the default [`Config`] on a fresh clock and an empty store.
    pub fn new(agent: A) -> Self {
        Self::with(agent, VirtualRuntime::new(), Config::unauthenticated())
    }

    /// Serves `agent` with `config`, on `rt` (give the agent a clone of `rt` if it sleeps).
    pub fn with(agent: A, rt: VirtualRuntime, config: Config) -> Self {
        let store = TestStore::new(&rt);
        Self {
            runway: Runway::new(agent, store, rt.clone(), config),
            rt,
            sent: AtomicU64::new(0),
        }
    }

    /// Every turn's [`Turn::http`](crate::Turn::http) sends through `client` (unless the turn
    /// has its own, [`TestTurn::http_client`]). A real client holds the clock while a request is in
    /// flight; a [`ScriptedHttp`](super::ScriptedHttp) waits on the clock.
    #[must_use]
    pub fn with_http_client(mut self, client: impl HttpClient) -> Self {
        let client = TurnClient::of(client).on(&self.rt);
        self.runway = self.runway.with_http_client(SharedClient(client));
        self
    }

    /// Serves connected accounts for `providers`, as [`Runway::with_providers`] (sealing
    /// with the config's `vault_key`, reaching providers through the client given to
    /// [`TestRunway::with_http_client`], so call that first).
    ///
    /// # Errors
    /// As [`Runway::with_providers`].
    pub fn with_providers(
        mut self,
        providers: crate::connect::provider::Providers,
    ) -> Result<Self, crate::connect::ConnectionsError> {
        self.runway = self.runway.with_providers(providers)?;
        Ok(self)
    }

    /// Sends `turn` and reads its stream to the end, moving the virtual clock whenever the
    /// turn only waits.
    pub async fn send(&self, turn: TestTurn) -> Frames {
        self.rt.run(self.exchange(turn)).await
    }

    async fn exchange(&self, turn: TestTurn) -> Frames {
        let key = turn.thread_key();
        if let Some(stored) = turn.stored.clone() {
            let ttl = self.runway.config().context_ttl;
            self.store().put_thread(&key, stored, ttl);
        }
        let n = self.sent.fetch_add(1, Ordering::Relaxed) + 1;
        let run_id = turn.run_id.clone().unwrap_or_else(|| format!("run-{n}"));
        let request = turn.request_under(&self.runway.config().base_path, &run_id);
        let runway = match turn.http {
            None => self.runway.clone(),
            Some(client) => self
                .runway
                .clone()
                .with_http_client(SharedClient(client.on(&self.rt))),
        };
        let reply = runway.handle(request).await;
        let received = receive(reply, &self.rt).await;
        Frames::parse(received, self.store().thread(&key))
    }

    /// Sends any request (Lowkey's `POST /lowkey/turn`, `GET /health`, a hosted file) and
    /// reads the reply to its end, moving the virtual clock whenever the turn only waits.
    pub async fn request(&self, request: http::Request<Bytes>) -> Received {
        self.rt
            .run(async { receive(self.runway.handle(request).await, &self.rt).await })
            .await
    }

    /// The store: tell it to fail ([`TestStore::fail`]) or look at a saved thread.
    pub fn store(&self) -> &TestStore {
        self.runway.store()
    }

    /// The virtual clock the turns run on.
    pub fn runtime(&self) -> &VirtualRuntime {
        &self.rt
    }

    /// The [`Runway`] itself, for requests a [`TestTurn`] does not make (`/health`, Lowkey,
    /// hosted files): pass its replies to [`receive`](super::receive).
    pub fn runway(&self) -> &Runway<A, TestStore, VirtualRuntime> {
        &self.runway
    }
}

impl TestTurn {
    /// Serves `agent` (see [`TestRunway::new`]), sends this turn and reads it to its end.
    ///
    /// Any `A: Agent` works, also `&'static A` (`run(&MyAgent)`) and `Arc<A>` (to look at the
    /// agent afterwards).
    pub async fn run<A: Agent>(self, agent: A) -> Frames {
        TestRunway::new(agent).send(self).await
    }
}
