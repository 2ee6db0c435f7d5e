//! Flow control between an agent and the client: how much a turn may have written that has not
//! been sent yet, per turn and in the whole process.
//!
//! `Output`'s methods never block (an agent calls them from plain code), so the bound is kept
//! by not polling the agent: while its turn has more than [`TURN_PENDING_BYTES`] waiting, or
//! the process more than [`TOTAL_PENDING_BYTES`](pending::TOTAL_PENDING_BYTES) (counted where
//! the agent writes: `crate::agent::pending`), the engine renders and sends what is queued
//! and leaves the agent's future alone. An agent resumes once the client has read enough. An
//! agent that writes a lot in one go can let runway catch up with [`crate::Output::ready`].
//!
//! What is counted is what the agent wrote and the engine has not rendered yet. What is
//! rendered waits in the body channel, in pieces of at most [`BODY_PIECE_BYTES`] (see
//! `turn_body`), so that part is bounded per turn by the channel's capacity.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use futures::future::FusedFuture;

use crate::agent::pending;

/// Bytes one turn may have written and not yet had rendered before its agent is paused.
pub const TURN_PENDING_BYTES: usize = 64 * 1024;

/// Largest piece of rendered output put into a turn's body channel at once.
pub const BODY_PIECE_BYTES: usize = 16 * 1024;

/// The agent's future, polled only while its turn and the process are under their bounds.
///
/// While the turn itself has output pending the engine is busy sending it, and re-polls
/// this gate after each piece. When only the process is over its bound, the gate waits to be
/// woken by [`pending::release_total`].
pub(crate) struct Gate<'a, F> {
    pub(crate) agent: Pin<&'a mut F>,
    pub(crate) turn_pending: &'a AtomicUsize,
}

impl<F: FusedFuture> Future for Gate<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let own = self.turn_pending.load(Ordering::Acquire);
        if own > TURN_PENDING_BYTES {
            // The engine's next step drains this turn's queue and polls the gate again.
            return Poll::Pending;
        }
        if !pending::total_has_room(cx) {
            return Poll::Pending;
        }
        self.agent.as_mut().poll(cx)
    }
}

impl<F: FusedFuture> FusedFuture for Gate<'_, F> {
    fn is_terminated(&self) -> bool {
        self.agent.is_terminated()
    }
}
