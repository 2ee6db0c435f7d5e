//! The turn engine: drives one turn from the first frame to the committed recording.
//!
//! Order of work, and why:
//! 1. The first frame is already in the body before this runs (Console's 10-second
//!    first-frame deadline must never wait on a store or a model).
//! 2. Claim the run and load the thread in one store round trip. A finished run is replayed;
//!    a run another delivery is executing is waited for (with heartbeats) and then replayed;
//!    a run id reused with another body is refused.
//! 3. Run the agent, streaming what it writes, with a heartbeat after every silence of
//!    `config.heartbeat`, under the turn deadline, and dropping it if the client leaves.
//! 4. Close everything, then commit the thread and the recording in one store round trip
//!    *before* the final frame leaves: if the commit fails the user gets `RUN_ERROR`, never a
//!    success whose context was lost.

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::channel::{mpsc, oneshot};
use futures::future::Fuse;
use futures::{FutureExt, SinkExt, StreamExt, pin_mut, select_biased};

use crate::agent::context::{Message, Role, ThreadContext};
use crate::agent::output::{AgentEvent, Artifact, Output};
use crate::agent::{Agent, AgentResult, Outcome, Turn};
use crate::error::{StoreError, TurnErrorCode};
use crate::meter::TurnUsage;
use crate::meter::turn_usage::TurnOutcome;
use crate::platform::runtime::Runtime;
use crate::service::Shared;
use crate::store::{CommitOutcome, HostedFile, TurnClaim, TurnCommit, TurnStart, TurnStore};
use crate::turn::abort_tail::{AbortTail, PANIC_MESSAGE};
use crate::turn::body::BodySender;
use crate::turn::flow::{BODY_PIECE_BYTES, Gate};
use crate::wire::Ending;
use crate::wire::Wire;

/// Longest wait on any single store call before the turn gives up on the store.
const STORE_TIMEOUT: Duration = Duration::from_secs(8);

/// After the turn's deadline, how long one send may still wait for a slow client to read
/// (so the final frame reaches a client that is reading, just slowly).
const FINAL_SEND_GRACE: Duration = Duration::from_secs(5);

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

/// Why a wait ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    Disconnected,
    Deadline,
    /// A newer turn arrived on the thread (see [`crate::store::turn_state`]).
    Superseded,
}

enum Stop {
    Agent(Result<AgentResult, String>),
    /// A limit refused the turn before the agent ran.
    Refused(Ending),
    WireEnded,
    Cut(Cut),
}

/// The bytes side of a turn: the protocol writer and the body channel.
struct Link<'r, W, R> {
    wire: W,
    tx: mpsc::Sender<Bytes>,
    /// What ends the stream if the process dies now (see `abort_tail`).
    abort: AbortTail,
    gone: bool,
    /// The client stopped reading and a send waited until the cut-off: nothing more is sent.
    stalled: bool,
    last_send_ms: u64,
    rt: &'r R,
    /// A send blocked on a client that does not read gives up at this time (the turn's
    /// deadline), so a stalled reader cannot hold the turn, its claim or its memory.
    cutoff_ms: u64,
    /// The cut-off has been moved past the deadline for the final frames.
    in_grace: bool,
}

impl<W: Wire, R: Runtime> Link<'_, W, R> {
    /// Sends `chunk` in pieces of at most [`BODY_PIECE_BYTES`] (the body channel holds a
    /// bounded number of pieces, so a bounded number of bytes), each waiting for room no
    /// later than the cut-off.
    async fn send(&mut self, chunk: String, now_ms: u64) {
        if chunk.is_empty() || self.gone || self.stalled {
            return;
        }
        let mut rest = Bytes::from(chunk);
        while !rest.is_empty() {
            let piece = rest.split_to(rest.len().min(BODY_PIECE_BYTES));
            if !self.send_piece(piece).await {
                break;
            }
        }
        self.last_send_ms = now_ms;
        // Bytes sent other than by `flush` are final (a final frame, a replayed recording):
        // nothing may follow them.
        if self.abort.watched() {
            self.abort.set(String::new());
        }
    }

    async fn send_piece(&mut self, piece: Bytes) -> bool {
        let piece = match self.tx.try_send(piece) {
            Ok(()) => return true,
            Err(e) if e.is_disconnected() => {
                self.gone = true;
                return false;
            }
            Err(e) => e.into_inner(),
        };
        // The client is behind: wait for room, but not past the cut-off. Once past it, the
        // cut-off moves once, a short grace for the final frames (well within the claim's
        // lease, so the commit that follows still holds it).
        let now = self.rt.now_ms();
        if now >= self.cutoff_ms && !self.in_grace {
            self.in_grace = true;
            self.cutoff_ms = now + FINAL_SEND_GRACE.as_millis() as u64;
        }
        let wait = Duration::from_millis(self.cutoff_ms.saturating_sub(now));
        let sent = {
            let timer = self.rt.sleep(wait).fuse();
            let send = self.tx.send(piece).fuse();
            pin_mut!(timer, send);
            select_biased! {
                r = send => Some(r.is_ok()),
                _ = timer => None,
            }
        };
        match sent {
            Some(true) => true,
            Some(false) => {
                self.gone = true;
                false
            }
            None => {
                tracing::warn!(
                    code = "CLIENT_STALLED",
                    "the client stopped reading: the rest of the turn is not sent"
                );
                self.stalled = true;
                false
            }
        }
    }

    /// Why nothing more can be sent, if so.
    fn cut(&self) -> Option<Cut> {
        if self.gone {
            Some(Cut::Disconnected)
        } else if self.stalled {
            Some(Cut::Deadline)
        } else {
            None
        }
    }

    async fn flush(&mut self, now_ms: u64) {
        let out = self.wire.take_output();
        self.send(out, now_ms).await;
        if self.abort.watched() {
            let tail = self
                .wire
                .abort_tail(TurnErrorCode::AgentPanic, PANIC_MESSAGE);
            self.abort.set(tail);
        }
    }

    async fn heartbeat(&mut self, now_ms: u64) {
        self.wire.heartbeat();
        self.flush(now_ms).await;
    }

    fn heartbeat_in(&self, now_ms: u64, every: Duration) -> Duration {
        let since = Duration::from_millis(now_ms.saturating_sub(self.last_send_ms));
        every.saturating_sub(since)
    }
}

pub(crate) struct Driver<'s, A, S, R: Runtime, W> {
    shared: &'s Shared<A, S, R>,
    link: Link<'s, W, R>,
    disconnected: Fuse<oneshot::Receiver<()>>,
    deadline: Fuse<Pin<Box<R::Sleep>>>,
    base_url: String,
    /// The thread and this turn's arrival on it, once claimed: checked at every heartbeat.
    live: Option<(String, u64)>,
    /// What the turn used and how it ended (pilot: usage and limits, `crate::meter`).
    usage: TurnUsage,
}

impl<'s, A: Agent, S: TurnStore, R: Runtime, W: Wire> Driver<'s, A, S, R, W> {
    pub(crate) fn new(shared: &'s Shared<A, S, R>, wire: W, body: BodySender) -> Self {
        let deadline = Box::pin(shared.rt.sleep(shared.config.turn_deadline)).fuse();
        Self {
            link: Link {
                wire,
                tx: body.tx,
                abort: body.abort,
                gone: false,
                stalled: false,
                last_send_ms: shared.rt.now_ms(),
                rt: &shared.rt,
                cutoff_ms: shared.rt.now_ms() + shared.config.turn_deadline.as_millis() as u64,
                in_grace: false,
            },
            disconnected: body.disconnected.fuse(),
            deadline,
            base_url: String::new(),
            live: None,
            usage: TurnUsage::default(),
            shared,
        }
    }

    fn now(&self) -> u64 {
        self.shared.rt.now_ms()
    }

    /// A fresh fencing token for this delivery's claim (128 random bits, hex).
    fn claim_token(&self) -> String {
        let mut raw = [0u8; 16];
        self.shared.rt.fill_random(&mut raw);
        hex::encode(raw)
    }

    /// Whether a newer turn arrived on this turn's thread: one cheap store read, made at
    /// heartbeats. A store that cannot answer does not stop the turn (its commit is still
    /// conditional, so nothing is lost either way).
    async fn superseded(&mut self) -> bool {
        let Some((thread_key, arrival)) = self.live.clone() else {
            return false;
        };
        let rt = &self.shared.rt;
        let latest = {
            let fut = self.shared.store.latest_arrival(&thread_key).fuse();
            let timer = rt.sleep(STORE_TIMEOUT).fuse();
            pin_mut!(fut, timer);
            select_biased! {
                r = fut => r,
                _ = timer => Err(StoreError::Unavailable("store call timed out".into())),
            }
        };
        match latest {
            Ok(latest) => latest > arrival,
            Err(e) => {
                tracing::warn!(error = %e, "could not check for a newer turn");
                false
            }
        }
    }

    /// Awaits `fut` with heartbeats, until it completes or the deadline passes, or, when
    /// `stop_on_disconnect`, the client leaves.
    async fn alive<T>(
        &mut self,
        fut: impl Future<Output = T>,
        stop_on_disconnect: bool,
    ) -> Result<T, Cut> {
        let fut = fut.fuse();
        pin_mut!(fut);
        let mut never = Fuse::terminated();
        let mut disconnected = if stop_on_disconnect {
            &mut self.disconnected
        } else {
            &mut never
        };
        loop {
            let wait = self
                .link
                .heartbeat_in(self.shared.rt.now_ms(), self.shared.config.heartbeat);
            let mut beat = Box::pin(self.shared.rt.sleep(wait)).fuse();
            select_biased! {
                _ = disconnected => return Err(Cut::Disconnected),
                _ = &mut self.deadline => return Err(Cut::Deadline),
                v = fut => return Ok(v),
                _ = beat => {
                    let now = self.shared.rt.now_ms();
                    self.link.heartbeat(now).await;
                    match self.link.cut() {
                        Some(Cut::Disconnected) if stop_on_disconnect => {
                            return Err(Cut::Disconnected);
                        }
                        Some(Cut::Deadline) => return Err(Cut::Deadline),
                        _ => {}
                    }
                }
            }
        }
    }

    /// Awaits a store call, bounded by [`STORE_TIMEOUT`], with heartbeats. The deadline cuts
    /// it; a disconnect cuts it only when `stop_on_disconnect`.
    async fn store_call<T>(
        &mut self,
        fut: impl Future<Output = Result<T, StoreError>>,
        stop_on_disconnect: bool,
    ) -> Result<Result<T, StoreError>, Cut> {
        let rt = &self.shared.rt;
        let bounded = async {
            let fut = fut.fuse();
            let timer = rt.sleep(STORE_TIMEOUT).fuse();
            pin_mut!(fut, timer);
            select_biased! {
                r = fut => r,
                _ = timer => Err(StoreError::Unavailable("store call timed out".into())),
            }
        };
        let r = self.alive(bounded, stop_on_disconnect).await?;
        if let Err(e) = &r {
            self.shared.note_store_error(e);
        }
        Ok(r)
    }

    /// Ends the turn with `ending` and sends the final bytes (nothing is committed).
    async fn end_uncommitted(mut self, ending: Ending) {
        self.usage.ended(TurnOutcome::of(&ending));
        self.link.wire.finish(ending);
        let now = self.now();
        self.link.flush(now).await;
        if let Some(fin) = self.link.wire.take_final() {
            self.link.send(fin, now).await;
        }
    }

    pub(crate) async fn drive(mut self, plan: TurnPlan) {
        self.usage = plan.turn.usage.clone();
        let cfg = &self.shared.config;
        let lease = cfg.turn_deadline + Duration::from_secs(30);
        let mut claim = TurnClaim {
            run_key: plan.run_key.clone(),
            thread_key: plan.thread_key.clone(),
            fingerprint: plan.fingerprint.clone(),
            now_ms: 0,
            lease_until_ms: 0,
            token: self.claim_token(),
        };
        let mut polls = 0;
        let (stored, base_version, arrival) = loop {
            claim.now_ms = self.now();
            claim.lease_until_ms = claim.now_ms + lease.as_millis() as u64;
            // The claim always completes, even if the client has left: a claim abandoned
            // mid-flight would make every re-delivery wait out the lease. A client already
            // gone is noticed right after, and the turn is committed as cancelled.
            let started = match self
                .store_call(self.shared.store.start_turn(&claim), false)
                .await
            {
                Err(_deadline) => {
                    return self
                        .end_uncommitted(Ending::error(
                            TurnErrorCode::TurnDeadline,
                            "The agent took too long to answer.",
                        ))
                        .await;
                }
                Ok(Err(e)) => {
                    tracing::error!(code = "STORE_UNAVAILABLE", error = %e, "could not start the turn");
                    return self
                        .end_uncommitted(Ending::error(
                            TurnErrorCode::StoreUnavailable,
                            "The agent's storage is unavailable right now. Please try again.",
                        ))
                        .await;
                }
                Ok(Ok(s)) => s,
            };
            match started {
                TurnStart::Claimed {
                    context,
                    version,
                    arrival,
                } => break (context, version, arrival),
                TurnStart::Finished { recording } => {
                    tracing::info!("run already finished: replaying its recording");
                    let now = self.now();
                    self.link.send(recording, now).await;
                    return;
                }
                TurnStart::Conflict => {
                    tracing::warn!(code = "RUN_ID_REUSED", "runId reused with a different body");
                    return self
                        .end_uncommitted(Ending::error(
                            TurnErrorCode::RunIdReused,
                            "This turn id was already used for a different request.",
                        ))
                        .await;
                }
                TurnStart::Running => {
                    tracing::info!("another delivery of this run is in progress: waiting");
                    let poll = self
                        .shared
                        .rt
                        .sleep(duplicate_backoff(self.shared.config.duplicate_poll, polls));
                    polls += 1;
                    if let Err(cut) = self.alive(poll, true).await {
                        if cut == Cut::Deadline {
                            return self
                                .end_uncommitted(Ending::error(
                                    TurnErrorCode::TurnDeadline,
                                    "The agent took too long to answer.",
                                ))
                                .await;
                        }
                        return;
                    }
                }
            }
        };

        self.live = Some((plan.thread_key.clone(), arrival));
        let mut turn = plan.turn.clone();
        self.base_url.clone_from(&turn.public_base_url);
        turn.context = stored.unwrap_or_else(|| ThreadContext::seeded(plan.seed.clone()));
        let previous_state = turn.context.state.clone();
        // Pilot limits: a turn over its workspace's or worker's limit does not run.
        let admitted = crate::meter::admission::admit(
            &self.shared.store,
            &self.shared.policy,
            &turn.usage,
            &turn.agent_id,
            &turn.workspace_id,
            self.now(),
        );
        let stop = match admitted.await {
            Ok(()) => self.run_agent(&mut turn).await,
            Err(refused) => Stop::Refused(refused),
        };
        let ending = self.ending_of(stop, &turn, &previous_state);
        let cancelled = matches!(
            ending,
            Ending::Error {
                code: TurnErrorCode::Cancelled,
                ..
            }
        );
        self.link.wire.finish(ending);
        let ending = self.link.wire.ending().cloned().unwrap_or(Ending::Success);
        self.usage.ended(TurnOutcome::of(&ending));
        if !cancelled {
            let now = self.now();
            self.link.flush(now).await;
        }

        let mut commit =
            self.commit_of(&plan, turn, &ending, &previous_state, base_version, arrival);
        commit.token = claim.token;
        let shared = self.shared;
        let rt = &shared.rt;
        let committed = {
            let fut = shared.store.finish_turn(&commit).fuse();
            let timer = rt.sleep(STORE_TIMEOUT).fuse();
            pin_mut!(fut, timer);
            select_biased! {
                r = fut => r,
                _ = timer => Err(StoreError::Unavailable("store call timed out".into())),
            }
        };
        let now = self.now();
        match committed {
            Ok(CommitOutcome::ClaimLost) => {
                // The lease lapsed and a retry of this run took it over: its recording is
                // the one kept; this delivery wrote nothing.
                tracing::warn!(
                    code = "CLAIM_LOST",
                    "another delivery took this run over: nothing recorded"
                );
                self.usage
                    .ended(TurnOutcome::Error(TurnErrorCode::Superseded));
                let fin = self.link.wire.replacement_error(
                    TurnErrorCode::Superseded,
                    "Another delivery of this turn took over; its answer is the one kept.",
                );
                self.link.send(fin, now).await;
            }
            Ok(outcome) => {
                if outcome == CommitOutcome::Superseded {
                    tracing::info!(
                        code = "SUPERSEDED",
                        "a newer turn arrived while this one ran: recorded as interrupted"
                    );
                }
                log_ending(&ending);
                if let Some(fin) = self.link.wire.take_final() {
                    self.link.send(fin, now).await;
                }
            }
            Err(e) => {
                shared.note_store_error(&e);
                tracing::error!(code = "STORE_UNAVAILABLE", error = %e, "could not save the turn");
                self.usage
                    .ended(TurnOutcome::Error(TurnErrorCode::StoreUnavailable));
                let fin = self.link.wire.replacement_error(
                    TurnErrorCode::StoreUnavailable,
                    "The agent could not save this conversation. Please try again.",
                );
                self.link.send(fin, now).await;
            }
        }
    }

    async fn run_agent(&mut self, turn: &mut Turn) -> Stop {
        let shared = self.shared;
        let (out, mut events) = Output::channel(2 * shared.config.limits.max_stream_bytes);
        let pending = events.pending_counter();
        let fut = AssertUnwindSafe(shared.agent.run(turn, &out))
            .catch_unwind()
            .fuse();
        pin_mut!(fut);
        let stop = loop {
            let wait = self.link.heartbeat_in(self.now(), shared.config.heartbeat);
            let mut beat = Box::pin(shared.rt.sleep(wait)).fuse();
            select_biased! {
                _ = &mut self.disconnected => break Stop::Cut(Cut::Disconnected),
                _ = &mut self.deadline => break Stop::Cut(Cut::Deadline),
                ev = events.next() => {
                    if let Some(ev) = ev
                        && let Some(stop) = self.apply(ev).await
                    {
                        break stop;
                    }
                }
                // Polled only while this turn and the process are under their in-flight bounds.
                res = Gate { agent: fut.as_mut(), turn_pending: &pending } => {
                    break Stop::Agent(res.map_err(panic_message));
                }
                _ = beat => {
                    let now = self.now();
                    self.link.heartbeat(now).await;
                    if let Some(cut) = self.link.cut() {
                        break Stop::Cut(cut);
                    }
                    if self.superseded().await {
                        break Stop::Cut(Cut::Superseded);
                    }
                }
            }
        };
        if matches!(stop, Stop::Agent(_)) {
            // What the agent wrote just before returning.
            while let Some(ev) = events.try_recv() {
                if let Some(stop) = self.apply(ev).await {
                    return stop;
                }
            }
        }
        stop
    }

    /// Renders one event and sends it; `Some` if the turn must stop.
    async fn apply(&mut self, ev: AgentEvent) -> Option<Stop> {
        self.usage.output_at(self.now());
        let ev = match ev {
            AgentEvent::File(file) => match self.host_file(file).await {
                Ok(Some(artifact)) => AgentEvent::Artifact(artifact),
                Ok(None) => return None,
                Err(cut) => return Some(Stop::Cut(cut)),
            },
            other => other,
        };
        self.link.wire.apply(ev);
        if self.link.wire.ending().is_some() {
            return Some(Stop::WireEnded);
        }
        let now = self.now();
        self.link.flush(now).await;
        self.link.cut().map(Stop::Cut)
    }

    async fn host_file(
        &mut self,
        file: crate::agent::output::OutputFile,
    ) -> Result<Option<Artifact>, Cut> {
        let cfg = &self.shared.config;
        if file.bytes.len() > cfg.max_file_bytes {
            tracing::error!(
                code = "FILE_TOO_LARGE",
                bytes = file.bytes.len(),
                max_bytes = cfg.max_file_bytes,
                "file not hosted: larger than this deployment's max_file_bytes"
            );
            return Ok(None);
        }
        let mut raw = [0u8; 32];
        self.shared.rt.fill_random(&mut raw);
        let token: String = hex::encode(raw);
        let name = crate::service::hosted_files::safe_file_name(&file.name);
        let base = self.base_url.clone();
        let size_bytes = file.bytes.len() as u64;
        let hosted = HostedFile {
            token: token.clone(),
            name: name.clone(),
            mime: file.mime.clone(),
            bytes: file.bytes,
            expires_at_ms: self.now() + cfg.file_ttl.as_millis() as u64,
        };
        match self
            .store_call(self.shared.store.put_file(&hosted), true)
            .await?
        {
            Ok(()) => Ok(Some(Artifact {
                id: token[..16].to_owned(),
                url: format!("{base}/files/{token}/{name}"),
                name,
                mime: hosted.mime,
                size_bytes,
            })),
            Err(e) => {
                tracing::error!(code = "STORE_UNAVAILABLE", error = %e, "could not host a file");
                Ok(None)
            }
        }
    }

    fn ending_of(&self, stop: Stop, turn: &Turn, previous_state: &serde_json::Value) -> Ending {
        match stop {
            Stop::Agent(Ok(Ok(outcome))) => {
                let policy = self.shared.config.context_policy;
                if turn.context.state != *previous_state
                    && turn.context.state_bytes() > policy.max_state_bytes
                {
                    tracing::error!(
                        code = "STATE_TOO_LARGE",
                        bytes = turn.context.state_bytes(),
                        "agent state over max_state_bytes"
                    );
                    return Ending::error(
                        TurnErrorCode::StateTooLarge,
                        "The agent could not remember this conversation.",
                    );
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
                Ending::error(
                    TurnErrorCode::AgentPanic,
                    "Sorry, something went wrong while answering. Please try again.",
                )
            }
            Stop::WireEnded => self.link.wire.ending().cloned().unwrap_or(Ending::Success),
            Stop::Cut(Cut::Deadline) => {
                tracing::error!(
                    code = "TURN_DEADLINE",
                    "turn deadline passed: agent stopped"
                );
                Ending::error(
                    TurnErrorCode::TurnDeadline,
                    "The agent took too long to answer.",
                )
            }
            Stop::Cut(Cut::Disconnected) => {
                tracing::info!(code = "CANCELLED", "client disconnected: agent stopped");
                Ending::error(TurnErrorCode::Cancelled, "The turn was cancelled.")
            }
            Stop::Cut(Cut::Superseded) => {
                tracing::info!(code = "SUPERSEDED", "a newer turn arrived: agent stopped");
                Ending::error(
                    TurnErrorCode::Superseded,
                    "A newer message on this conversation took over; this answer was stopped.",
                )
            }
        }
    }

    fn commit_of(
        &mut self,
        plan: &TurnPlan,
        turn: Turn,
        ending: &Ending,
        previous_state: &serde_json::Value,
        base_version: u64,
        arrival: u64,
    ) -> TurnCommit {
        let cfg = &self.shared.config;
        let validation = turn.is_validation();
        let mut context = turn.context;
        if matches!(
            ending,
            Ending::Error {
                code: TurnErrorCode::StateTooLarge,
                ..
            }
        ) {
            context.state = previous_state.clone();
        }
        let per_message = cfg.context_policy.max_transcript_bytes / 4;
        let mut user = Message::new(Role::User, truncate(&plan.user_message, per_message));
        user.run_id = Some(turn.run_id.clone());
        user.arrival = Some(arrival);
        let mut messages = vec![user];
        let mut answer = self.link.wire.answer().to_owned();
        if let Ending::Interrupt(i) = ending {
            if !answer.is_empty() {
                answer.push_str("\n\n");
            }
            answer.push_str(&i.as_text());
        }
        if !answer.is_empty() {
            let mut reply = Message::new(Role::Assistant, truncate(&answer, per_message));
            reply.run_id = Some(turn.run_id.clone());
            reply.interrupted = matches!(ending, Ending::Error { .. });
            reply.arrival = Some(arrival);
            messages.push(reply);
        }
        context.messages.extend(messages.iter().cloned());
        context.pending_interrupt = match ending {
            Ending::Interrupt(i) => Some(i.clone()),
            _ => None,
        };
        context.turns += 1;
        context.trim(&cfg.context_policy);
        let now = self.now();
        let ttl = if validation {
            cfg.validation_ttl
        } else {
            cfg.context_ttl
        };
        let recording_ttl = if validation {
            cfg.validation_ttl
        } else {
            cfg.recording_ttl
        };
        TurnCommit {
            run_key: plan.run_key.clone(),
            fingerprint: plan.fingerprint.clone(),
            token: String::new(),
            thread_key: plan.thread_key.clone(),
            base_version,
            arrival,
            context,
            messages,
            policy: cfg.context_policy,
            now_ms: now,
            context_expires_at_ms: now + ttl.as_millis() as u64,
            recording: self.link.wire.take_recording().into(),
            recording_expires_at_ms: now + recording_ttl.as_millis() as u64,
        }
    }
}

/// The wait before a duplicate delivery asks again whether the original finished: `first`,
/// doubling with every poll, at most [`MAX_DUPLICATE_POLL`]. Each poll is a paid conditional
/// write on DynamoDB and a subrequest on Workers (50 per request on the free plan), so a
/// duplicate that waits out a 290-second turn polls about 40 times, not 1,160.
fn duplicate_backoff(first: Duration, polls: u32) -> Duration {
    first
        .saturating_mul(1 << polls.min(16))
        .min(MAX_DUPLICATE_POLL.max(first))
}

/// The longest wait between two polls of a duplicate delivery.
const MAX_DUPLICATE_POLL: Duration = Duration::from_secs(8);

fn log_ending(ending: &Ending) {
    match ending {
        Ending::Success => tracing::info!("turn finished"),
        Ending::Interrupt(i) => tracing::info!(kind = i.kind(), "turn finished with a question"),
        Ending::Error { code, .. } => tracing::warn!(code = %code, "turn ended with RUN_ERROR"),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}
