//! The response body of a streamed turn, and the disconnect signal it carries.
//!
//! The engine writes into a bounded channel (a slow reader slows the agent down instead of
//! growing memory). The body holds the sending half of a oneshot; when the platform drops the
//! body because the client went away (Console's only cancel signal), the engine sees the
//! oneshot close and drops the agent's future.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;
use futures::channel::{mpsc, oneshot};

use crate::turn::abort_tail::AbortTail;

/// Chunks buffered between the engine and the body before the engine waits.
const BUFFERED_CHUNKS: usize = 16;

/// The streamed response body of one turn.
#[derive(Debug)]
pub struct TurnBody {
    rx: mpsc::Receiver<Bytes>,
    _disconnect: oneshot::Sender<()>,
    abort: AbortTail,
}

impl TurnBody {
    /// Asks the engine to keep [`TurnBody::abort`] up to date. For adapters whose process can
    /// die mid-turn without unwinding (a panic on `wasm32` traps the instance); call it before
    /// the turn is first polled.
    pub fn watch_abort(&self) {
        self.abort.watch();
    }

    /// Everything still to write to end this stream now, when the process cannot go on: the
    /// chunks already queued, then what the protocol writer says closes whatever is open and
    /// the final error (`RUN_ERROR` `AGENT_PANIC` for Console, an `error` line for Lowkey).
    /// Nothing after a final frame already queued or sent. Needs [`TurnBody::watch_abort`].
    pub fn abort(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while let Ok(chunk) = self.rx.try_recv() {
            out.extend_from_slice(&chunk);
        }
        out.extend_from_slice(self.abort.get().as_bytes());
        out
    }
}

impl Stream for TurnBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.rx).poll_next(cx).map(|c| c.map(Ok))
    }
}

/// The engine's end: chunks go in, the disconnect signal comes out.
pub(crate) struct BodySender {
    pub(crate) tx: mpsc::Sender<Bytes>,
    pub(crate) disconnected: oneshot::Receiver<()>,
    pub(crate) abort: AbortTail,
}

/// A body whose first chunks are already in it (the first frame, then any padding), so the
/// first frame is on its way before the engine has been polled once. `abort_tail` is what ends
/// the stream if the process dies before the engine has run.
pub(crate) fn body_with_first_chunks(
    first: [String; 2],
    abort_tail: String,
) -> (BodySender, TurnBody) {
    let (mut tx, rx) = mpsc::channel(BUFFERED_CHUNKS);
    let (guard, disconnected) = oneshot::channel();
    for chunk in first.into_iter().filter(|c| !c.is_empty()) {
        // A fresh channel has room for more than two chunks: this cannot fail.
        let _ = tx.try_send(Bytes::from(chunk));
    }
    let abort = AbortTail::default();
    abort.set(abort_tail);
    (
        BodySender {
            tx,
            disconnected,
            abort: abort.clone(),
        },
        TurnBody {
            rx,
            _disconnect: guard,
            abort,
        },
    )
}
