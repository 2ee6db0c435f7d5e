//! The one wait loop of a turn ([`TurnIo::wait`]): every await of the engine (a store call,
//! the agent, a duplicate's backoff, the bytes going out, the usage writes after the turn) is
//! this loop with its work and a [`Watch`] saying which timers and client events end it.
//! [`TurnIo`] is what the loop works on: the bytes going out ([`Link`]), the turn's timers
//! ([`TimerTable`]) and the one alarm.
//!
//! Each round it:
//! 1. moves queued bytes into the body; while they wait for room nothing else happens (the
//!    agent is not polled: back-pressure), and a send that waits past its cut-off (the
//!    deadline, or the one grace after it) stalls the client;
//! 2. returns if the client has gone or stalled and the watch cares;
//! 3. acts on the first expired timer the watch cares about: a heartbeat is sent and the loop
//!    goes on, any other ends the wait;
//! 4. polls the work, the client's disconnect and one alarm set for the earliest timer, and
//!    goes round again when any of them is ready.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use crate::error::StoreError;
use crate::platform::runtime::Runtime;
use crate::turn::body::BodySender;
use crate::turn::engine::Engine;
use crate::turn::link::{Link, Lost, Push};
use crate::turn::timers::{FINAL_SEND_GRACE, STORE_TIMEOUT, Timer, TimerSet, TimerTable, after};
use crate::wire::writer::{Encoding, Writer};

/// Why the agent was stopped before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    Disconnected,
    /// The deadline passed (or the client stopped reading until it did).
    Deadline,
    /// A newer turn arrived on the thread (see [`crate::store::turn_state`]).
    Superseded,
}

/// What ends a wait besides its work.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Watch {
    /// Timers that end the wait.
    ends: TimerSet,
    /// Heartbeats are sent when due.
    heartbeats: bool,
    /// The wait ends when the client goes away.
    disconnect: bool,
    /// The wait ends when the client has stopped reading.
    stall: bool,
}

impl Watch {
    /// Claiming the run: it always completes, even if the client has left.
    pub(crate) const CLAIM: Self = Self {
        ends: TimerSet::of(&[Timer::Deadline]),
        heartbeats: true,
        disconnect: false,
        stall: true,
    };
    /// A duplicate delivery waiting to try its claim again.
    pub(crate) const DUPLICATE: Self = Self {
        ends: TimerSet::of(&[Timer::Deadline, Timer::DuplicatePoll]),
        heartbeats: true,
        disconnect: true,
        stall: true,
    };
    /// The agent running.
    pub(crate) const RUN: Self = Self {
        ends: TimerSet::of(&[Timer::Deadline, Timer::Supersede]),
        heartbeats: true,
        disconnect: true,
        stall: true,
    };
    /// A store call while the agent runs (hosting a file, checking for a newer turn).
    pub(crate) const RUN_STORE_CALL: Self = Self {
        ends: TimerSet::of(&[Timer::Deadline]),
        heartbeats: true,
        disconnect: true,
        stall: true,
    };
    /// What the agent wrote, going out.
    pub(crate) const SEND: Self = Self {
        ends: TimerSet::NONE,
        heartbeats: false,
        disconnect: true,
        stall: true,
    };
    /// The commit: nothing but its own timeout ends it.
    pub(crate) const COMMIT: Self = Self {
        ends: TimerSet::NONE,
        heartbeats: false,
        disconnect: false,
        stall: false,
    };
    /// The usage writes after the final frame: their own timeout ends them, nothing else
    /// (the client may have gone; the usage is still the deployment's).
    pub(crate) const USAGE_WRITE: Self = Self {
        ends: TimerSet::of(&[Timer::UsageWrite]),
        heartbeats: false,
        disconnect: false,
        stall: false,
    };
    /// The last bytes going out.
    const DRAIN: Self = Self::COMMIT;

    fn timers(self) -> TimerSet {
        if self.heartbeats {
            self.ends.with(Timer::Heartbeat)
        } else {
            self.ends
        }
    }
}

/// Why a wait ended.
#[derive(Debug)]
pub(crate) enum Woke<T> {
    /// The work completed.
    Done(T),
    /// A timer the watch ends on expired.
    Timer(Timer),
    /// The client went away.
    Disconnected,
    /// The client stopped reading.
    Stalled,
}

/// What woke the loop.
enum Event<T> {
    Done(T),
    Left,
    Room,
    Alarm,
}

/// A turn's side of every wait.
pub(crate) struct TurnIo<A, S, R: Runtime, E> {
    pub(crate) engine: Arc<Engine<A, S, R>>,
    pub(crate) link: Link<E>,
    pub(crate) timers: TimerTable,
    /// The sleep the loop is armed with, and when it goes off.
    alarm: Option<(u64, Pin<Box<R::Sleep>>)>,
}

#[allow(private_bounds)]
impl<A, S, R: Runtime, E: Encoding> TurnIo<A, S, R, E> {
    /// The side of a turn that started at `started_ms` and whose first bytes are in `body`.
    pub(crate) fn new(
        engine: Arc<Engine<A, S, R>>,
        writer: Writer<E>,
        body: BodySender,
        started_ms: u64,
    ) -> Self {
        let config = &engine.config;
        let mut timers = TimerTable::default();
        timers.set(Timer::Deadline, after(started_ms, config.turn_deadline));
        // The first keep-alive comes early: a path that holds the first frame until the next
        // write lets it go then, well inside Console's 10-second first-frame deadline.
        let first_beat = config.first_heartbeat.min(config.heartbeat);
        timers.set(Timer::Heartbeat, after(started_ms, first_beat));
        Self {
            engine,
            link: Link::new(writer, body),
            timers,
            alarm: None,
        }
    }

    pub(crate) fn now(&self) -> u64 {
        self.engine.rt.now_ms()
    }

    /// Waits for `work` under `watch` (see the module docs).
    pub(crate) async fn wait<T>(&mut self, work: impl Future<Output = T>, watch: Watch) -> Woke<T> {
        let mut work = pin!(work);
        loop {
            let now = self.now();
            let sending = self.link.sending();
            let wake_at = if sending {
                let Some(cutoff) = self.blocked_until(now) else {
                    continue;
                };
                Some(cutoff)
            } else {
                if watch.disconnect && self.link.left() {
                    return Woke::Disconnected;
                }
                if watch.stall && self.link.lost() == Some(Lost::Stalled) {
                    return Woke::Stalled;
                }
                match self.timers.expired(watch.timers(), now) {
                    Some(Timer::Heartbeat) => {
                        self.beat(now);
                        continue;
                    }
                    Some(timer) => return Woke::Timer(timer),
                    None => self.timers.next(watch.timers()),
                }
            };
            self.arm(now, wake_at);
            let (link, alarm) = (&mut self.link, &mut self.alarm);
            let event = std::future::poll_fn(|cx| {
                if sending {
                    if link.poll_room(cx).is_ready() {
                        return Poll::Ready(Event::Room);
                    }
                } else {
                    if watch.disconnect && link.poll_disconnected(cx).is_ready() {
                        return Poll::Ready(Event::Left);
                    }
                    if let Poll::Ready(done) = work.as_mut().poll(cx) {
                        return Poll::Ready(Event::Done(done));
                    }
                }
                if let Some((_, sleep)) = alarm
                    && sleep.as_mut().poll(cx).is_ready()
                {
                    *alarm = None;
                    return Poll::Ready(Event::Alarm);
                }
                Poll::Pending
            })
            .await;
            match event {
                Event::Done(done) => return Woke::Done(done),
                Event::Left => return Woke::Disconnected,
                Event::Room | Event::Alarm => {}
            }
        }
    }

    /// Moves what it can of the outbox into the body. If pieces are left, when the send gives
    /// up: the deadline, or, for a send that first blocks after the deadline, a short grace
    /// (given once) so the final frames reach a client that reads slowly. `None` if nothing is
    /// left to wait for (sent, or the client is lost).
    fn blocked_until(&mut self, now: u64) -> Option<u64> {
        let Push::Blocked { just_now } = self.link.push_ready() else {
            return None;
        };
        let deadline = self.timers.get(Timer::Deadline).unwrap_or(u64::MAX);
        let grace = self.timers.get(Timer::SendGrace);
        if just_now && now >= deadline && grace.is_none() {
            let until = after(now, FINAL_SEND_GRACE);
            self.timers.set(Timer::SendGrace, until);
            return Some(until);
        }
        let cutoff = grace.unwrap_or(deadline);
        if !just_now && now >= cutoff {
            self.link.stall();
            return None;
        }
        Some(cutoff)
    }

    /// Sets the alarm to go off no later than `at` (an alarm already set earlier is kept: when
    /// it goes off, the loop finds nothing expired and sets it again).
    fn arm(&mut self, now: u64, at: Option<u64>) {
        let Some(at) = at else {
            self.alarm = None;
            return;
        };
        if self.alarm.as_ref().is_some_and(|(armed, _)| *armed <= at) {
            return;
        }
        let sleep = self
            .engine
            .rt
            .sleep(Duration::from_millis(at.saturating_sub(now)));
        self.alarm = Some((at, Box::pin(sleep)));
    }

    /// Sends a keep-alive.
    fn beat(&mut self, now: u64) {
        self.link.writer.heartbeat();
        self.link.flush();
        self.timers
            .set(Timer::Heartbeat, after(now, self.engine.config.heartbeat));
    }

    /// Queues what the writer has written; the next heartbeat is due a silence after it.
    fn flush(&mut self) {
        if self.link.flush() {
            let next = after(self.now(), self.engine.config.heartbeat);
            self.timers.set(Timer::Heartbeat, next);
        }
    }

    /// Sends what the writer has written; `Err` if the client is gone or stopped reading.
    pub(crate) async fn send_output(&mut self) -> Result<(), Cut> {
        self.flush();
        match self.wait(std::future::ready(()), Watch::SEND).await {
            Woke::Done(()) => Ok(()),
            Woke::Disconnected => Err(Cut::Disconnected),
            Woke::Timer(_) | Woke::Stalled => Err(Cut::Deadline),
        }
    }

    /// Sends what is queued, as far as the client lets it.
    pub(crate) async fn drain(&mut self) {
        self.wait(std::future::ready(()), Watch::DRAIN).await;
    }

    /// Awaits a store call under `watch`, giving up on the store after [`STORE_TIMEOUT`]. A
    /// failure is remembered for `/health`. `Err` if the watch cut the wait.
    pub(crate) async fn store_call<T>(
        &mut self,
        call: impl Future<Output = Result<T, StoreError>>,
        watch: Watch,
    ) -> Result<Result<T, StoreError>, Cut> {
        self.timers
            .set(Timer::StoreCall, after(self.now(), STORE_TIMEOUT));
        let watch = Watch {
            ends: watch.ends.with(Timer::StoreCall),
            ..watch
        };
        let woke = self.wait(call, watch).await;
        self.timers.stop(Timer::StoreCall);
        let result = match woke {
            Woke::Done(result) => result,
            Woke::Timer(Timer::StoreCall) => {
                Err(StoreError::Unavailable("store call timed out".into()))
            }
            Woke::Disconnected => return Err(Cut::Disconnected),
            Woke::Timer(_) | Woke::Stalled => return Err(Cut::Deadline),
        };
        if result.is_err() {
            self.engine.note_store_error();
        }
        Ok(result)
    }
}
