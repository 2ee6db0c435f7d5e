//! One turn, from its first frame to the committed recording.
//!
//! It starts ([`Engine::start`]) by writing its first frame into the body before anything else
//! runs, so Console's 10-second first-frame deadline never waits on a store or a model, then
//! the first-flush padding (`Config::first_flush_bytes`), so a path that holds small chunks
//! (reported of Lambda function URLs) lets the first frame go at once. Then the driver runs
//! it: claim → run → commit (`Driver::drive`).
//!
//! 1. **Claim** the run and load the thread in one store round trip. A finished run is
//!    replayed; a run another delivery is executing is waited for (with heartbeats, polling
//!    with backoff) and then replayed; a run id reused with another body is refused.
//! 2. **Run** the agent, streaming what it writes, under the turn's timers (heartbeats after
//!    silence, the deadline, checks for a newer turn on the thread) and dropping it if the
//!    client leaves.
//! 3. **Commit** the thread and the recording in one store round trip *before* the final frame
//!    leaves: if the commit fails the user gets `RUN_ERROR`, never a success whose context was
//!    lost.
//!
//! Every wait of a turn is the one loop in `wait.rs` ([`TurnIo::wait`]); the timers it serves
//! are data (`timers.rs`).

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures::stream::FusedStream;
use futures::{FutureExt, StreamExt};
use tracing::Instrument;

use crate::agent::context::ThreadContext;
use crate::agent::output::{AgentEvent, Artifact, Output, OutputFile};
use crate::agent::turn_actions::TurnActions;
use crate::agent::turn_connections::TurnConnections;
use crate::agent::{Agent, AgentResult, Outcome, Protocol, Turn};
use crate::error::TurnErrorCode;
use crate::http_client::handle::TurnHttpGuard;
use crate::http_client::{Http, HttpClient};
use crate::meter::TurnUsage;
use crate::meter::admission::check_turn_limits;
use crate::meter::turn_usage::{ModelUsage, TurnOutcome};
use crate::platform::maybe_send::BoxFuture;
use crate::platform::runtime::Runtime;
use crate::protocol::Ending;
use crate::protocol::agui::{TokenUsage, run_tag};
use crate::store::{CommitOutcome, TurnClaim, TurnStart, TurnStore};
use crate::turn::body::{BodySender, TurnBody, body_with_first_chunks};
use crate::turn::commit::{log_ending, turn_commit};
use crate::turn::engine::Engine;
use crate::turn::flow::Gate;
use crate::turn::hosting::hosted_file;
use crate::turn::plan::TurnPlan;
use crate::turn::timers::{MAX_DUPLICATE_POLL, MAX_SUPERSEDE_CHECK, Timer, after, backoff};
use crate::turn::usage_record::after_turn;
use crate::turn::wait::{Cut, TurnIo, Watch, Woke};
use crate::wire::writer::{Encoding, Writer};

/// How long a claim outlives the turn's deadline: a delivery that dies is taken over by a
/// retry once its lease lapses.
const LEASE_AFTER_DEADLINE: Duration = Duration::from_secs(30);

/// The run, claimed by this delivery.
pub(crate) struct Claimed {
    /// This delivery's fencing token: the commit is accepted only while the claim holds.
    token: String,
    /// The thread as stored, if the store knows it (taken by the run).
    context: Option<ThreadContext>,
    /// The thread's version when loaded (the commit is conditional on it).
    version: u64,
    /// This turn's arrival on the thread (a later one supersedes it).
    arrival: u64,
}

/// Why the agent stopped.
enum Stop {
    Agent(Result<AgentResult, String>),
    /// The writer ended the turn (a limit).
    WriterEnded,
    /// A workspace's or worker's limit refused the turn before the agent ran.
    Refused(Ending),
    Cut(Cut),
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
        // Action claims are held per delivery: a re-delivery of this run is another holder.
        let mut holder = [0u8; 16];
        self.rt.fill_random(&mut holder);
        // The same id names this delivery's tally writes: a store write repeated (an SDK retry
        // after a late answer) counts once.
        let delivery = hex::encode(holder);
        plan.turn.actions = TurnActions::new(
            Arc::clone(self) as _,
            plan.thread_key.clone(),
            delivery.clone(),
        );
        plan.turn.connections = TurnConnections::new(Arc::clone(self) as _);
        plan.turn
            .usage
            .start(started_ms, Arc::clone(&self.policy), delivery);
        plan.turn.usage.set_ledger(Arc::clone(self) as _);
        // The driver's own future, boxed where it is made (it is kilobytes, not moved again),
        // with nothing beside it: an async block around it would keep room for what it
        // captured (the plan, the writer) for the turn's whole life, though both are moved
        // into the driver at its first poll.
        let driver = Driver::new(Arc::clone(self), writer, sender, started_ms, http_guard);
        let turn = Box::pin(driver.drive(plan).instrument(span));
        (body, turn)
    }
}

/// One turn being driven.
struct Driver<A, S, R: Runtime, E> {
    engine: Arc<Engine<A, S, R>>,
    io: TurnIo<A, S, R, E>,
    /// Where the turn's hosted-file links point.
    base_url: String,
    supersede_checks: u32,
    /// What the turn used and how it ended (shared with the agent's `Turn::usage`).
    usage: TurnUsage,
    /// Dropped with the driver, when the turn ends or is dropped: ends every request the
    /// agent started. Last, so it goes after the rest of the turn.
    _http_guard: TurnHttpGuard,
}

#[allow(private_bounds)]
impl<A: Agent, S: TurnStore, R: Runtime, E: Encoding> Driver<A, S, R, E> {
    /// A driver for a turn that started at `started_ms`, its first bytes in `body`.
    fn new(
        engine: Arc<Engine<A, S, R>>,
        writer: Writer<E>,
        body: BodySender,
        started_ms: u64,
        http_guard: TurnHttpGuard,
    ) -> Self {
        Self {
            io: TurnIo::new(Arc::clone(&engine), writer, body, started_ms),
            engine,
            base_url: String::new(),
            supersede_checks: 0,
            usage: TurnUsage::default(),
            _http_guard: http_guard,
        }
    }

    fn now(&self) -> u64 {
        self.io.now()
    }

    async fn drive(mut self, plan: TurnPlan) {
        self.usage = plan.turn.usage.clone();
        if let Some(mut claimed) = self.claim(&plan).await {
            let (turn, ending, previous_state) = self.run(&plan, &mut claimed).await;
            self.commit(&plan, claimed, turn, ending, &previous_state)
                .await;
        }
        // Then the usage, while the body is still open (this driver holds it): on Lambda the
        // invocation ends with the body, and nothing after it is sure to run.
        after_turn(&mut self.io, &plan.turn).await;
    }

    /// Claims the run; `None` if this delivery has already answered (a replay, a refusal, an
    /// error).
    async fn claim(&mut self, plan: &TurnPlan) -> Option<Claimed> {
        let lease = self.engine.config.turn_deadline + LEASE_AFTER_DEADLINE;
        let mut claim = TurnClaim {
            run_key: plan.run_key.clone(),
            thread_key: plan.thread_key.clone(),
            fingerprint: plan.fingerprint.clone(),
            now_ms: 0,
            lease_until_ms: 0,
            token: self.claim_token(),
            workspace: plan.workspace.clone(),
        };
        let mut polls = 0;
        loop {
            claim.now_ms = self.now();
            claim.lease_until_ms = after(claim.now_ms, lease);
            // The claim always completes, even if the client has left: a claim abandoned
            // mid-flight would make every re-delivery wait out the lease. A client already
            // gone is noticed right after, and the turn is committed as cancelled.
            let store = &self.engine.store;
            let started = match self
                .io
                .store_call(store.start_turn(&claim), Watch::CLAIM)
                .await
            {
                Err(_deadline) => {
                    self.end_uncommitted(TurnErrorCode::TurnDeadline).await;
                    return None;
                }
                Ok(Err(e)) => {
                    tracing::error!(code = "STORE_UNAVAILABLE", error = %e, "could not start the turn");
                    self.end_uncommitted(TurnErrorCode::StoreUnavailable).await;
                    return None;
                }
                Ok(Ok(started)) => started,
            };
            match started {
                TurnStart::Claimed {
                    context,
                    version,
                    arrival,
                } => {
                    return Some(Claimed {
                        token: claim.token,
                        context,
                        version,
                        arrival,
                    });
                }
                TurnStart::Finished { recording } => {
                    tracing::info!("run already finished: replaying its recording");
                    self.io.link.queue_final(recording);
                    self.io.drain().await;
                    return None;
                }
                TurnStart::Conflict => {
                    tracing::warn!(code = "RUN_ID_REUSED", "runId reused with a different body");
                    // Nothing ran: the refusal is not a turn, and not counted in the usage
                    // (the run it collided with was counted once, when it ran).
                    self.send_error(TurnErrorCode::RunIdReused).await;
                    return None;
                }
                TurnStart::OtherWorkspace => {
                    tracing::warn!(
                        code = "THREAD_OTHER_WORKSPACE",
                        "turn refused: the thread belongs to another workspace"
                    );
                    // Nothing ran and nothing was claimed: no usage, no limit slot.
                    self.send_error(TurnErrorCode::ThreadOtherWorkspace).await;
                    return None;
                }
                TurnStart::Running => {
                    tracing::info!("another delivery of this run is in progress: waiting");
                    let wait =
                        backoff(self.engine.config.duplicate_poll, polls, MAX_DUPLICATE_POLL);
                    polls += 1;
                    self.io
                        .timers
                        .set(Timer::DuplicatePoll, after(self.now(), wait));
                    let woke = self
                        .io
                        .wait(std::future::pending::<()>(), Watch::DUPLICATE)
                        .await;
                    self.io.timers.stop(Timer::DuplicatePoll);
                    match woke {
                        Woke::Timer(Timer::DuplicatePoll) => {}
                        Woke::Disconnected => return None,
                        _deadline_or_stalled => {
                            self.end_uncommitted(TurnErrorCode::TurnDeadline).await;
                            return None;
                        }
                    }
                }
            }
        }
    }

    /// Runs the agent on the claimed thread; returns the turn as the agent left it, how it
    /// ended, and the agent's state before it ran.
    async fn run(
        &mut self,
        plan: &TurnPlan,
        claimed: &mut Claimed,
    ) -> (Turn, Ending, serde_json::Value) {
        let mut turn = plan.turn.clone();
        self.base_url.clone_from(&turn.public_base_url);
        turn.context = claimed
            .context
            .take()
            .unwrap_or_else(|| ThreadContext::seeded(plan.seed.clone()));
        let previous_state = turn.context.state.clone();
        let linked = match &plan.resume_link {
            Some(link) => link.check(&turn.context),
            None => Ok(()),
        };
        let admitted = match linked {
            Ok(()) => self.check_limits(&turn).await,
            Err(code) => {
                tracing::warn!(code = %code, "run refused: it does not answer the thread's open question as AG-UI requires");
                Err(Stop::Refused(Ending::failed(code)))
            }
        };
        let stop = match admitted {
            Ok(()) => {
                let first_check = self.engine.config.heartbeat;
                self.io
                    .timers
                    .set(Timer::Supersede, after(self.now(), first_check));
                let stop = self
                    .run_agent(&mut turn, &plan.thread_key, claimed.arrival)
                    .await;
                self.io.timers.stop(Timer::Supersede);
                stop
            }
            Err(stop) => stop,
        };
        let ending = self.ending_of(stop, &turn, &previous_state);
        (turn, ending, previous_state)
    }

    /// Checks and counts the turn against its workspace's and worker's limits (turns per
    /// minute, token and spend budgets), with heartbeats, bounded like any store call; `Err`
    /// is why the agent does not run.
    async fn check_limits(&mut self, turn: &Turn) -> Result<(), Stop> {
        let engine = &self.engine;
        let write_id = turn.usage.write_id();
        let checked = check_turn_limits(
            &engine.store,
            &engine.policy,
            &turn.usage,
            &write_id,
            &turn.agent_id,
            &turn.workspace_id,
            self.now(),
        )
        .map(Ok);
        match self.io.store_call(checked, Watch::RUN_STORE_CALL).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(refused))) => Err(Stop::Refused(refused)),
            Ok(Err(e)) => {
                tracing::error!(code = "STORE_UNAVAILABLE", error = %e, "could not check the turn's limits");
                Err(Stop::Refused(Ending::failed(
                    TurnErrorCode::StoreUnavailable,
                )))
            }
            Err(cut) => Err(Stop::Cut(cut)),
        }
    }

    async fn run_agent(&mut self, turn: &mut Turn, thread_key: &str, arrival: u64) -> Stop {
        // The agent's future borrows the engine while the driver renders what it writes.
        let engine = Arc::clone(&self.engine);
        let (mut out, mut events) = Output::channel(2 * engine.config.limits.max_stream_bytes);
        if turn.protocol == Protocol::Agui {
            // Tool call ids unique in the thread, as the writer's message ids are.
            let tag = run_tag(&turn.run_id);
            out.tag_call_ids(std::str::from_utf8(&tag).unwrap_or_default());
        }
        let pending = events.pending_counter();
        let agent = AssertUnwindSafe(engine.agent.run(turn, &out))
            .catch_unwind()
            .fuse();
        futures::pin_mut!(agent);
        let stop = loop {
            // What the agent wrote comes first; the agent is polled only while this turn and
            // the process are under their in-flight bounds (see `flow`).
            let next = std::future::poll_fn(|cx| {
                if !events.is_terminated()
                    && let Poll::Ready(Some(event)) = events.poll_next_unpin(cx)
                {
                    return Poll::Ready(Ok(event));
                }
                let mut gate = Gate {
                    agent: agent.as_mut(),
                    turn_pending: &pending,
                };
                Pin::new(&mut gate).poll(cx).map(Err)
            });
            match self.io.wait(next, Watch::RUN).await {
                Woke::Done(Ok(event)) => {
                    if let Some(stop) = self.apply(event).await {
                        break stop;
                    }
                }
                Woke::Done(Err(result)) => break Stop::Agent(result.map_err(panic_message)),
                Woke::Timer(Timer::Supersede) => match self.superseded(thread_key, arrival).await {
                    Ok(false) => {}
                    Ok(true) => break Stop::Cut(Cut::Superseded),
                    Err(cut) => break Stop::Cut(cut),
                },
                Woke::Disconnected => break Stop::Cut(Cut::Disconnected),
                Woke::Timer(_) | Woke::Stalled => break Stop::Cut(Cut::Deadline),
            }
        };
        if matches!(stop, Stop::Agent(_)) {
            // What the agent wrote just before returning.
            while let Some(event) = events.try_recv() {
                if let Some(stop) = self.apply(event).await {
                    return stop;
                }
            }
        }
        stop
    }

    /// Renders one event and sends it; `Some` if the turn must stop.
    async fn apply(&mut self, event: AgentEvent) -> Option<Stop> {
        self.usage.output_at(self.now());
        let event = match event {
            AgentEvent::File(file) => match self.host_file(file).await {
                Ok(Some(artifact)) => AgentEvent::Artifact(artifact),
                Ok(None) => return None,
                Err(cut) => return Some(Stop::Cut(cut)),
            },
            other => other,
        };
        self.io.link.writer.apply(event);
        if self.io.link.writer.is_finished() {
            return Some(Stop::WriterEnded);
        }
        self.io.send_output().await.err().map(Stop::Cut)
    }

    /// Hosts a file the agent wrote; `None` if it could not be (too large, store failure).
    async fn host_file(&mut self, file: OutputFile) -> Result<Option<Artifact>, Cut> {
        let config = &self.engine.config;
        if file.bytes.len() > config.max_file_bytes {
            tracing::error!(
                code = "FILE_TOO_LARGE",
                bytes = file.bytes.len(),
                max_bytes = config.max_file_bytes,
                "file not hosted: larger than this deployment's max_file_bytes"
            );
            return Ok(None);
        }
        let mut token = [0u8; 32];
        self.engine.rt.fill_random(&mut token);
        let expires_at_ms = after(self.now(), config.file_ttl);
        let (hosted, artifact) = hosted_file(file, &token, &self.base_url, expires_at_ms);
        match self
            .io
            .store_call(self.engine.store.put_file(&hosted), Watch::RUN_STORE_CALL)
            .await?
        {
            Ok(()) => Ok(Some(artifact)),
            Err(e) => {
                tracing::error!(code = "STORE_UNAVAILABLE", error = %e, "could not host a file");
                Ok(None)
            }
        }
    }

    /// Whether a newer turn arrived on the thread: one cheap store read, on the supersede
    /// timer, which then backs off. A store that cannot answer does not stop the turn (its
    /// commit is still conditional, so nothing is lost either way).
    async fn superseded(&mut self, thread_key: &str, arrival: u64) -> Result<bool, Cut> {
        self.supersede_checks += 1;
        let wait = backoff(
            self.engine.config.heartbeat,
            self.supersede_checks,
            MAX_SUPERSEDE_CHECK,
        );
        self.io
            .timers
            .set(Timer::Supersede, after(self.now(), wait));
        let latest = self
            .io
            .store_call(
                self.engine.store.latest_arrival(thread_key),
                Watch::RUN_STORE_CALL,
            )
            .await?;
        Ok(match latest {
            Ok(latest) => latest > arrival,
            Err(e) => {
                tracing::warn!(error = %e, "could not check for a newer turn");
                false
            }
        })
    }

    fn ending_of(&self, stop: Stop, turn: &Turn, previous_state: &serde_json::Value) -> Ending {
        match stop {
            Stop::Agent(Ok(Ok(outcome))) => {
                let policy = self.engine.config.context_policy;
                if turn.context.state != *previous_state
                    && turn.context.state_bytes() > policy.max_state_bytes
                {
                    tracing::error!(
                        code = "STATE_TOO_LARGE",
                        bytes = turn.context.state_bytes(),
                        "agent state over max_state_bytes"
                    );
                    return Ending::failed(TurnErrorCode::StateTooLarge);
                }
                match outcome {
                    Outcome::Done => Ending::Success,
                    Outcome::Interrupt(i) => Ending::Interrupt(i),
                }
            }
            Stop::Agent(Ok(Err(e))) => {
                let code = e.code().unwrap_or(TurnErrorCode::AgentError);
                tracing::error!(code = %code, error = %e.detail(), "agent failed");
                Ending::error(code, e.user_message())
            }
            Stop::Refused(ending) => ending,
            Stop::Agent(Err(panic)) => {
                tracing::error!(code = "AGENT_PANIC", panic = %panic, "agent panicked");
                Ending::failed(TurnErrorCode::AgentPanic)
            }
            Stop::WriterEnded => self
                .io
                .link
                .writer
                .ending()
                .cloned()
                .unwrap_or(Ending::Success),
            Stop::Cut(Cut::Deadline) => {
                tracing::error!(
                    code = "TURN_DEADLINE",
                    "turn deadline passed: agent stopped"
                );
                Ending::failed(TurnErrorCode::TurnDeadline)
            }
            Stop::Cut(Cut::Disconnected) => {
                tracing::info!(code = "CANCELLED", "client disconnected: agent stopped");
                Ending::failed(TurnErrorCode::Cancelled)
            }
            Stop::Cut(Cut::Superseded) => {
                tracing::info!(code = "SUPERSEDED", "a newer turn arrived: agent stopped");
                Ending::failed(TurnErrorCode::Superseded)
            }
        }
    }

    /// Ends the turn, commits it, then sends the final frame (or `RUN_ERROR` if the commit
    /// failed).
    async fn commit(
        &mut self,
        plan: &TurnPlan,
        claimed: Claimed,
        turn: Turn,
        ending: Ending,
        previous_state: &serde_json::Value,
    ) {
        let cancelled = ending.error_code() == Some(TurnErrorCode::Cancelled);
        if self.io.link.writer.reports_usage() {
            let usage = self.usage.by_model().into_iter().map(token_usage).collect();
            self.io.link.writer.report_usage(usage);
        }
        self.io.link.writer.finish(ending);
        let ending = self
            .io
            .link
            .writer
            .ending()
            .cloned()
            .unwrap_or(Ending::Success);
        self.usage.ended(TurnOutcome::of(&ending));
        if !cancelled {
            // Everything but the final frame leaves before the commit.
            let _ = self.io.send_output().await;
        }
        let now = self.now();
        let mut commit = turn_commit(
            &self.engine.config,
            plan,
            turn,
            &ending,
            previous_state,
            (claimed.version, claimed.arrival),
            &mut self.io.link.writer,
            now,
        );
        commit.token = claimed.token;
        let store = &self.engine.store;
        let final_bytes = match self
            .io
            .store_call(store.finish_turn(&commit), Watch::COMMIT)
            .await
        {
            Ok(Ok(CommitOutcome::ClaimLost)) => {
                // The lease lapsed and a retry of this run took it over: its recording is
                // the one kept; this delivery wrote nothing.
                tracing::warn!(
                    code = "CLAIM_LOST",
                    "another delivery took this run over: nothing recorded"
                );
                self.usage
                    .ended(TurnOutcome::Error(TurnErrorCode::Superseded));
                self.io
                    .link
                    .writer
                    .replacement_error(TurnErrorCode::Superseded)
            }
            Ok(Ok(outcome)) => {
                if outcome == CommitOutcome::Superseded {
                    tracing::info!(
                        code = "SUPERSEDED",
                        "a newer turn arrived while this one ran: recorded as interrupted"
                    );
                }
                log_ending(&ending);
                self.io.link.writer.take_final().unwrap_or_default()
            }
            Ok(Err(e)) => {
                tracing::error!(code = "STORE_UNAVAILABLE", error = %e, "could not save the turn");
                self.usage
                    .ended(TurnOutcome::Error(TurnErrorCode::StoreUnavailable));
                self.io
                    .link
                    .writer
                    .replacement_error(TurnErrorCode::StoreUnavailable)
            }
            Err(cut) => unreachable!("a commit is not cut ({cut:?})"),
        };
        self.io.link.queue_final(final_bytes);
        self.io.drain().await;
    }

    /// Ends the turn with `code` and sends the final bytes; nothing is committed.
    async fn end_uncommitted(&mut self, code: TurnErrorCode) {
        self.usage.ended(TurnOutcome::Error(code));
        self.send_error(code).await;
    }

    /// Sends `code` as the final frame, counting nothing; nothing is committed.
    async fn send_error(&mut self, code: TurnErrorCode) {
        self.io.link.writer.finish(Ending::failed(code));
        self.io.link.flush();
        if let Some(final_bytes) = self.io.link.writer.take_final() {
            self.io.link.queue_final(final_bytes);
        }
        self.io.drain().await;
    }

    /// A fresh fencing token for this delivery's claim (128 random bits, hex).
    fn claim_token(&self) -> String {
        let mut raw = [0u8; 16];
        self.engine.rt.fill_random(&mut raw);
        hex::encode(raw)
    }
}

/// A model's row of the turn's usage as AG-UI's `usage[]` entry.
fn token_usage(row: ModelUsage) -> TokenUsage {
    TokenUsage {
        provider: row.provider,
        model: row.model,
        input_tokens: row.tokens.input,
        output_tokens: row.tokens.output,
        reasoning_tokens: row.tokens.reasoning,
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::{Driver, TurnPlan};
    use crate::adapter::{Config, MemoryStore, Reply, Runway};
    use crate::testing::VirtualRuntime;
    use crate::wire::console::Console;
    use crate::{Agent, AgentResult, Outcome, Output, Turn};

    struct Hello;

    impl Agent for Hello {
        async fn run(&self, _turn: &mut Turn, out: &Output) -> AgentResult {
            out.text("hello");
            Ok(Outcome::Done)
        }
    }

    /// Bytes of the future `drive` returns (named through its signature, never made).
    fn drive_future_bytes<D, F>(_drive: impl FnOnce(D, TurnPlan) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A turn's boxed future is allocated per turn in flight: it is the driver's future, its
    /// span and little else. What the turn starts with (its plan, its writer) is moved into the
    /// driver; held beside it as well (an async block's captures keep their room for the
    /// block's life), it cost 1.6 KiB more per turn.
    #[test]
    fn a_turns_future_is_the_drivers_own_and_little_else() {
        let rt = VirtualRuntime::new();
        let runway = Runway::new(Hello, MemoryStore::new(), rt, Config::unauthenticated());
        let body = serde_json::json!({
            "protocolVersion": "1",
            "runId": "run-1",
            "threadId": "thread-1",
            "agentId": "agent-1",
            "workspaceId": "ws-1",
            "input": "Hi",
        });
        let req = http::Request::post("http://127.0.0.1/runs")
            .header("content-type", "application/json")
            .body(Bytes::from(body.to_string()))
            .expect("request");
        let Reply::Stream { turn, .. } = futures::executor::block_on(runway.handle(req)) else {
            panic!("expected a streamed turn");
        };
        let turn = std::mem::size_of_val(&*turn);
        let drive =
            drive_future_bytes(Driver::<Hello, MemoryStore, VirtualRuntime, Console>::drive);
        assert!(
            turn <= drive + 128,
            "the turn's future is {turn} bytes, the driver's own {drive}"
        );
    }
}
