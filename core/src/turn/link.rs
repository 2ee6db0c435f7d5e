//! The bytes side of a turn: the protocol writer, the body channel to the client, and what is
//! known of the client (gone, or not reading).
//!
//! Bytes are queued here ([`Link::flush`], [`Link::queue_final`]) and moved into the body by
//! the engine's wait loop, in pieces of at most [`BODY_PIECE_BYTES`] (the channel holds a
//! bounded number of pieces, so a bounded number of bytes). While pieces wait for room the
//! agent is not polled: a client that reads slowly slows the agent down instead of growing
//! memory. A client that stops reading is given up on at the turn's deadline (or a short grace
//! after it, see `timers`), so it cannot hold the turn, its claim or its memory.

use std::collections::VecDeque;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::FutureExt;
use futures::channel::{mpsc, oneshot};

use crate::error::TurnErrorCode;
use crate::turn::abort_tail::AbortTail;
use crate::turn::body::BodySender;
use crate::turn::flow::BODY_PIECE_BYTES;
use crate::wire::writer::{Encoding, Writer};

/// What [`Link::push_ready`] left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Push {
    /// Everything queued is in the body (or the client is lost).
    Done,
    /// Pieces wait for room; `just_now`: this is when they started waiting.
    Blocked { just_now: bool },
}

/// Why nothing more can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lost {
    /// The client went away (the body was dropped).
    Gone,
    /// The client stopped reading and a send waited until its cut-off.
    Stalled,
}

pub(crate) struct Link<E> {
    pub(crate) writer: Writer<E>,
    tx: mpsc::Sender<Bytes>,
    /// Completes (with an error) when the body is dropped: Console's only cancel signal.
    disconnected: oneshot::Receiver<()>,
    /// Pieces waiting for room in the body.
    outbox: VecDeque<Bytes>,
    /// The front piece found the body full.
    blocked: bool,
    /// What ends the stream if the process dies now (see `abort_tail`), and its next value,
    /// published once the bytes it follows are all in the body.
    abort: AbortTail,
    next_tail: Option<String>,
    gone: bool,
    stalled: bool,
}

#[allow(private_bounds)]
impl<E: Encoding> Link<E> {
    pub(crate) fn new(writer: Writer<E>, body: BodySender) -> Self {
        Self {
            writer,
            tx: body.tx,
            disconnected: body.disconnected,
            outbox: VecDeque::new(),
            blocked: false,
            abort: body.abort,
            next_tail: None,
            gone: false,
            stalled: false,
        }
    }

    /// Queues what the writer has written (never its final frame), and what would end the
    /// stream after it if the process died. Returns whether any bytes were queued.
    pub(crate) fn flush(&mut self) -> bool {
        let out = self.writer.take_output();
        let queued = self.queue(out);
        if self.abort.watched() {
            self.next_tail = Some(self.writer.abort_tail(TurnErrorCode::AgentPanic));
        }
        if self.outbox.is_empty() {
            self.sent();
        }
        queued
    }

    /// Queues bytes that end the stream (a final frame, a replayed recording): nothing may
    /// follow them, so the abort tail becomes empty once they are in the body.
    pub(crate) fn queue_final(&mut self, bytes: String) {
        self.queue(bytes);
        if self.abort.watched() {
            self.next_tail = Some(String::new());
        }
        if self.outbox.is_empty() {
            self.sent();
        }
    }

    fn queue(&mut self, bytes: String) -> bool {
        if bytes.is_empty() || self.lost().is_some() {
            return false;
        }
        let mut rest = Bytes::from(bytes);
        while !rest.is_empty() {
            self.outbox
                .push_back(rest.split_to(rest.len().min(BODY_PIECE_BYTES)));
        }
        true
    }

    /// Pieces are waiting to go into the body.
    pub(crate) fn sending(&self) -> bool {
        !self.outbox.is_empty()
    }

    /// Moves queued pieces into the body while it has room, without waiting.
    pub(crate) fn push_ready(&mut self) -> Push {
        while let Some(piece) = self.outbox.pop_front() {
            match self.tx.try_send(piece) {
                Ok(()) => self.blocked = false,
                Err(e) if e.is_disconnected() => {
                    self.lose(Lost::Gone);
                    return Push::Done;
                }
                Err(e) => {
                    self.outbox.push_front(e.into_inner());
                    let just_now = !std::mem::replace(&mut self.blocked, true);
                    return Push::Blocked { just_now };
                }
            }
        }
        self.sent();
        Push::Done
    }

    /// Ready once the body has room for the front piece (or the client is gone).
    pub(crate) fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match self.tx.poll_ready(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(()),
            Poll::Ready(Err(_)) => {
                self.lose(Lost::Gone);
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// Ready once the client has gone (the body was dropped).
    pub(crate) fn poll_disconnected(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.gone && self.disconnected.poll_unpin(cx).is_ready() {
            self.lose(Lost::Gone);
        }
        if self.gone {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Whether the client has gone, as far as is known now (without waiting).
    pub(crate) fn left(&mut self) -> bool {
        if !self.gone && (&mut self.disconnected).now_or_never().is_some() {
            self.lose(Lost::Gone);
        }
        self.gone
    }

    /// The client stopped reading: the rest of the turn is not sent.
    pub(crate) fn stall(&mut self) {
        tracing::warn!(
            code = "CLIENT_STALLED",
            "the client stopped reading: the rest of the turn is not sent"
        );
        self.lose(Lost::Stalled);
    }

    /// Why nothing more can be sent, if so.
    pub(crate) fn lost(&self) -> Option<Lost> {
        if self.gone {
            Some(Lost::Gone)
        } else if self.stalled {
            Some(Lost::Stalled)
        } else {
            None
        }
    }

    fn lose(&mut self, why: Lost) {
        match why {
            Lost::Gone => self.gone = true,
            Lost::Stalled => self.stalled = true,
        }
        self.outbox.clear();
        self.blocked = false;
    }

    /// Everything queued is in the body: what ends the stream from here is the latest tail.
    fn sent(&mut self) {
        self.blocked = false;
        if let Some(tail) = self.next_tail.take() {
            self.abort.set(tail);
        }
    }
}
