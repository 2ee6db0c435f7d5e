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
//! fresh instance. Before that, the hook installed here ends every live stream with what the
//! core says ends it ([`TurnBody::abort`]: the chunks still queued, frames closing whatever is
//! open, and the final error frame; nothing if the final frame already went out) and closes
//! it: the streams are JavaScript objects, and they outlive the trapped instance. Console then
//! records a failed turn instead of a truncated one. No protocol is written here.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Once;

use futures::{FutureExt, StreamExt, pin_mut, select_biased};
use runway_core::adapter::TurnBody;

use wasm_bindgen_futures::JsFuture;
use web_sys::WritableStreamDefaultWriter;

struct Live {
    id: u64,
    writer: WritableStreamDefaultWriter,
    body: Rc<RefCell<TurnBody>>,
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
            // The pump borrows the body only while polling it, never across an await, so it
            // is free here unless the panic came from inside that poll.
            let tail = match l.body.try_borrow_mut() {
                Ok(mut body) => body.abort(),
                Err(_) => Vec::new(),
            };
            if !tail.is_empty() {
                // Promises the trapped instance will never await: errors are ignored.
                let _ = l
                    .writer
                    .write_with_chunk(&js_sys::Uint8Array::from(tail.as_slice()));
            }
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

fn register(writer: &WritableStreamDefaultWriter, body: &Rc<RefCell<TurnBody>>) -> Registration {
    let id = NEXT_ID.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    });
    LIVE.with(|live| {
        live.borrow_mut().push(Live {
            id,
            writer: writer.clone(),
            body: Rc::clone(body),
        });
    });
    Registration(id)
}

/// A response body being fed from a [`TurnBody`].
pub struct Pump {
    first: Option<js_sys::Promise>,
    hang_up: js_sys::Promise,
    body: Rc<RefCell<TurnBody>>,
    writer: WritableStreamDefaultWriter,
    registration: Registration,
}

impl Pump {
    /// Starts streaming `body` into `writer`: the first chunk (the first frame, already in the
    /// body) is written before this returns, so it leaves with the response headers.
    pub fn start(
        body: TurnBody,
        writer: WritableStreamDefaultWriter,
        hang_up: &web_sys::AbortSignal,
    ) -> Self {
        body.watch_abort();
        let body = Rc::new(RefCell::new(body));
        let registration = register(&writer, &body);
        let first = match body.borrow_mut().next().now_or_never() {
            Some(Some(Ok(chunk))) => Some(write(&writer, &chunk)),
            _ => None,
        };
        Self {
            first,
            hang_up: resolved_on_abort(hang_up),
            body,
            writer,
            registration,
        }
    }

    /// Feeds the rest of the body; returns when the turn ended or the client went away.
    /// Dropping the body on the way out is the engine's disconnect signal.
    pub async fn run(self) {
        let Self {
            first,
            hang_up,
            body,
            writer,
            registration,
        } = self;
        // The client is gone when the stream is closed under us or the request is aborted.
        let closed =
            futures::future::select(JsFuture::from(writer.closed()), JsFuture::from(hang_up))
                .fuse();
        pin_mut!(closed);
        let mut gone = false;
        if let Some(first) = first {
            let written = JsFuture::from(first).fuse();
            pin_mut!(written);
            gone = select_biased! {
                r = written => r.is_err(),
                _ = closed => true,
            };
        }
        while !gone {
            // Borrowed only inside each poll, so the panic hook can drain it.
            let chunk = futures::future::poll_fn(|cx| body.borrow_mut().poll_next_unpin(cx));
            let next = select_biased! {
                _ = closed => None,
                c = chunk.fuse() => Some(c),
            };
            let Some(next) = next else {
                gone = true;
                break;
            };
            let Some(Ok(chunk)) = next else {
                break;
            };
            let written = JsFuture::from(write(&writer, &chunk)).fuse();
            pin_mut!(written);
            gone = select_biased! {
                r = written => r.is_err(),
                _ = closed => true,
            };
        }
        drop(registration);
        drop(body);
        if gone {
            tracing::debug!("response stream closed by the client");
        } else {
            let _ = JsFuture::from(writer.close()).await;
        }
    }
}

/// A promise resolved when `signal` aborts (at once if it already has).
fn resolved_on_abort(signal: &web_sys::AbortSignal) -> js_sys::Promise {
    let signal = signal.clone();
    js_sys::Promise::new(&mut |resolve, _reject| {
        if signal.aborted() {
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        } else {
            signal.set_onabort(Some(&resolve));
        }
    })
}

fn write(writer: &WritableStreamDefaultWriter, chunk: &[u8]) -> js_sys::Promise {
    writer.write_with_chunk(&js_sys::Uint8Array::from(chunk))
}
