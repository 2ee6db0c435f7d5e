//! Streaming a turn's body to the client, and ending every live stream with a final error
//! frame (`RUN_ERROR` for Console, an `error` line for Lowkey) when the isolate panics.
//!
//! The body is written into a `TransformStream` whose readable side is the response body.
//! Chunks are written as the engine produces them (each chunk is whole frames), awaiting each
//! write, so a slow reader slows the turn down instead of growing memory.
//!
//! A Rust panic on `wasm32-unknown-unknown` aborts: the WebAssembly instance traps and
//! everything running in it stops, including every other turn the isolate is streaming.
//! `worker`'s panic hook marks the instance for re-initialisation, so the next request gets a
//! fresh instance. Before that, the hook installed here writes a final error frame into
//! every stream that has not sent its final frame yet and closes it: those are JavaScript
//! objects, and they outlive the trapped instance. Console then records a failed turn instead
//! of a truncated one.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Once;

use bytes::Bytes;
use futures::{FutureExt, StreamExt, pin_mut, select_biased};
use runway_core::TurnBody;

use crate::final_frame::StreamKind;
use wasm_bindgen_futures::JsFuture;
use web_sys::WritableStreamDefaultWriter;

struct Live {
    id: u64,
    writer: WritableStreamDefaultWriter,
    kind: StreamKind,
    /// The final frame went out: nothing may follow it.
    ended: Rc<Cell<bool>>,
}

thread_local! {
    static LIVE: RefCell<Vec<Live>> = const { RefCell::new(Vec::new()) };
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

/// Chains a hook in front of the current panic hook (the `worker` crate's, which schedules
/// the instance's re-initialisation). Idempotent.
pub fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            end_live_streams();
            previous(info);
        }));
    });
}

fn end_live_streams() {
    let _ = LIVE.try_with(|live| {
        let Ok(mut live) = live.try_borrow_mut() else {
            return;
        };
        for l in live.drain(..) {
            if l.ended.get() {
                continue;
            }
            let bytes = js_sys::Uint8Array::from(l.kind.panic_chunk().as_bytes());
            // Promises the trapped instance will never await: errors are ignored.
            let _ = l.writer.write_with_chunk(&bytes);
            let _ = l.writer.close();
        }
    });
}

/// Registration of one live stream; dropping it unregisters.
struct Registration(u64);

impl Drop for Registration {
    fn drop(&mut self) {
        let id = self.0;
        let _ = LIVE.try_with(|live| {
            if let Ok(mut live) = live.try_borrow_mut() {
                live.retain(|l| l.id != id);
            }
        });
    }
}

fn register(
    writer: &WritableStreamDefaultWriter,
    kind: StreamKind,
    ended: Rc<Cell<bool>>,
) -> Registration {
    let id = NEXT_ID.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    });
    LIVE.with(|live| {
        live.borrow_mut().push(Live {
            id,
            writer: writer.clone(),
            kind,
            ended,
        });
    });
    Registration(id)
}

/// A response body being fed from a [`TurnBody`].
pub struct Pump {
    first: Option<js_sys::Promise>,
    body: TurnBody,
    writer: WritableStreamDefaultWriter,
    kind: StreamKind,
    ended: Rc<Cell<bool>>,
    registration: Registration,
}

impl Pump {
    /// Starts streaming `body` into `writer`: the first chunk (the first frame, already in the
    /// body) is written before this returns, so it leaves with the response headers.
    pub fn start(
        mut body: TurnBody,
        writer: WritableStreamDefaultWriter,
        kind: StreamKind,
    ) -> Self {
        let ended = Rc::new(Cell::new(false));
        let registration = register(&writer, kind, Rc::clone(&ended));
        let first = match body.next().now_or_never() {
            Some(Some(Ok(chunk))) => Some(write(&writer, kind, &chunk, &ended)),
            _ => None,
        };
        Self {
            first,
            body,
            writer,
            kind,
            ended,
            registration,
        }
    }

    /// Feeds the rest of the body; returns when the turn ended or the client went away.
    /// Dropping the body on the way out is the engine's disconnect signal.
    pub async fn run(self) {
        let Self {
            first,
            mut body,
            writer,
            kind,
            ended,
            registration,
        } = self;
        let closed = JsFuture::from(writer.closed()).fuse();
        pin_mut!(closed);
        let mut gone = false;
        if let Some(first) = first {
            gone = JsFuture::from(first).await.is_err();
        }
        while !gone {
            let next = select_biased! {
                _ = closed => None,
                c = body.next().fuse() => Some(c),
            };
            let Some(next) = next else {
                gone = true;
                break;
            };
            let Some(Ok(chunk)) = next else {
                break;
            };
            let written = JsFuture::from(write(&writer, kind, &chunk, &ended)).fuse();
            pin_mut!(written);
            gone = select_biased! {
                r = written => r.is_err(),
                _ = closed => true,
            };
        }
        drop(body);
        drop(registration);
        if gone {
            tracing::debug!("response stream closed by the client");
        } else {
            let _ = JsFuture::from(writer.close()).await;
        }
    }
}

fn write(
    writer: &WritableStreamDefaultWriter,
    kind: StreamKind,
    chunk: &Bytes,
    ended: &Cell<bool>,
) -> js_sys::Promise {
    if kind.is_final(chunk) {
        ended.set(true);
    }
    writer.write_with_chunk(&js_sys::Uint8Array::from(chunk.as_ref()))
}
