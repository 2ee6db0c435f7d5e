//! The engine: what every turn of a process runs with (the agent, the store, the platform's
//! runtime, the settings), and how a turn starts.
//!
//! A turn starts ([`Engine::start`]) by writing its first frame into the body before anything
//! else runs, so Console's 10-second first-frame deadline never waits on a store or a model,
//! followed by the first-flush padding (`Config::first_flush_bytes`) so that a path which holds
//! small chunks (reported of Lambda function URLs) lets the first frame go at once. The rest of
//! the turn is the [`Driver`]'s: claim → run → commit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tracing::Instrument;

use crate::agent::context::Message;
use crate::agent::{Agent, Turn};
use crate::error::TurnErrorCode;
use crate::http_client::turn_clock::TurnClock;
use crate::http_client::{Http, HttpClient};
use crate::platform::maybe_send::{BoxFuture, MaybeSend, MaybeSync};
use crate::platform::runtime::Runtime;
use crate::service::config::Config;
use crate::store::TurnStore;
use crate::turn::body::{TurnBody, body_with_first_chunks};
use crate::turn::driver::Driver;
use crate::wire::writer::{Encoding, Writer};

/// Everything protocol-specific the engine needs to run a turn.
pub(crate) struct TurnPlan {
    pub turn: Turn,
    pub run_key: String,
    pub thread_key: String,
    pub fingerprint: String,
    /// Messages to seed a thread the store does not know (Console `history` on a fork,
    /// Lowkey `transcriptWindow`).
    pub seed: Vec<Message>,
    /// This turn's input as it enters the transcript.
    pub user_message: String,
}

/// What every turn of a process runs with.
pub(crate) struct Engine<A, S, R> {
    pub(crate) agent: A,
    pub(crate) store: S,
    pub(crate) rt: R,
    pub(crate) config: Config,
    /// When a store call last failed (0: never).
    last_store_error_ms: AtomicU64,
}

impl<A, S, R: Runtime> Engine<A, S, R> {
    pub(crate) fn new(agent: A, store: S, rt: R, config: Config) -> Self {
        Self {
            agent,
            store,
            rt,
            config,
            last_store_error_ms: AtomicU64::new(0),
        }
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

impl<A: Agent, S: TurnStore, R: Runtime> Engine<A, S, R> {
    /// Starts a turn written by `writer`: its first bytes are already in the returned body;
    /// the returned future runs the turn to its end (an adapter runs it beside the body).
    /// The agent's requests go through `http` (none: `HttpError::Unavailable`); every line the
    /// turn logs is in `span`.
    #[allow(private_bounds)]
    #[cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]
    pub(crate) fn start<E: Encoding>(
        self: &Arc<Self>,
        mut writer: Writer<E>,
        mut plan: TurnPlan,
        http: Option<Arc<dyn HttpClient>>,
        span: tracing::Span,
    ) -> (TurnBody, BoxFuture<'static, ()>) {
        let started_ms = self.rt.now_ms();
        writer.start();
        let first = writer.take_output();
        writer.pad(self.config.first_flush_bytes);
        let padding = writer.take_output();
        let abort_tail = writer.abort_tail(TurnErrorCode::AgentPanic);
        let (sender, body) = body_with_first_chunks([first, padding], abort_tail);
        let (http, http_guard) =
            Http::for_turn(http, Arc::clone(self) as _, self.config.turn_deadline);
        plan.turn.http = http;
        let engine = Arc::clone(self);
        let turn = async move {
            // Dropped when the turn ends or is dropped: ends every request the agent started.
            let _http_guard = http_guard;
            Driver::new(&engine, writer, sender, started_ms)
                .drive(plan)
                .await;
        };
        (body, Box::pin(turn.instrument(span)))
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
