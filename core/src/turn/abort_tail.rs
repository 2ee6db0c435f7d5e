//! The end of a stream whose process dies mid-turn.
//!
//! On most platforms a panicking agent is caught and the engine ends the turn itself. On
//! `wasm32-unknown-unknown` a panic aborts: the instance traps and no Rust code runs after the
//! panic hook. So that even then nothing but the core writes protocol, the engine keeps, for
//! each streamed turn whose adapter asks for it ([`crate::adapter::TurnBody::watch_abort`]), the bytes
//! that would end the stream correctly right now: frames closing whatever is open and the
//! final `RUN_ERROR` (or Lowkey `error` line). The adapter's panic hook writes what is still
//! queued in the body, then these bytes ([`crate::adapter::TurnBody::abort`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::TurnErrorCode;

/// What a user is told when the turn's process died (a panic).
pub const PANIC_MESSAGE: &str = TurnErrorCode::AgentPanic.user_message();

/// The shared slot: written by the engine after every flush, read by the adapter's hook.
#[derive(Debug, Clone, Default)]
pub(crate) struct AbortTail {
    inner: Arc<AbortInner>,
}

#[derive(Debug, Default)]
struct AbortInner {
    watched: AtomicBool,
    tail: Mutex<String>,
}

impl AbortTail {
    /// True once the adapter asked for it; only then is it kept up to date.
    pub(crate) fn watched(&self) -> bool {
        self.inner.watched.load(Ordering::Relaxed)
    }

    pub(crate) fn watch(&self) {
        self.inner.watched.store(true, Ordering::Relaxed);
    }

    /// Replaces the tail (the empty string once the final frame has been sent).
    pub(crate) fn set(&self, tail: String) {
        if let Ok(mut t) = self.inner.tail.try_lock() {
            *t = tail;
        }
    }

    /// The current tail. `try_lock`: the hook may run while the engine is mid-update, and
    /// must not block.
    pub(crate) fn get(&self) -> String {
        self.inner
            .tail
            .try_lock()
            .map(|t| t.clone())
            .unwrap_or_default()
    }
}
