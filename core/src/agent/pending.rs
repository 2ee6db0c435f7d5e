//! What agents have written and the engine has not rendered yet, over every turn of this
//! process: [`Output`](crate::Output) counts each write here as it queues it, and the engine's
//! gate (`crate::turn::flow`) stops polling agents while the total is over
//! [`TOTAL_PENDING_BYTES`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Waker};

/// Bytes all turns of this process together may have written and not yet had rendered
/// before agents are paused.
pub const TOTAL_PENDING_BYTES: usize = 32 * 1024 * 1024;

static TOTAL_PENDING: AtomicUsize = AtomicUsize::new(0);
static TOTAL_WAITERS: Mutex<Vec<Waker>> = Mutex::new(Vec::new());

/// Bytes written by agents and not yet rendered, over every turn in this process.
pub fn total_pending_bytes() -> usize {
    TOTAL_PENDING.load(Ordering::Relaxed)
}

/// Counts `n` more pending bytes (an agent wrote them).
pub(crate) fn add_total(n: usize) {
    if n > 0 {
        TOTAL_PENDING.fetch_add(n, Ordering::AcqRel);
    }
}

/// Counts `n` fewer pending bytes (the engine took them, or they were discarded), and wakes
/// paused turns once the total is back under the bound.
pub(crate) fn release_total(n: usize) {
    if n == 0 {
        return;
    }
    let before = TOTAL_PENDING.fetch_sub(n, Ordering::AcqRel);
    if before > TOTAL_PENDING_BYTES && before - n <= TOTAL_PENDING_BYTES {
        let waiters = std::mem::take(&mut *lock_waiters());
        for w in waiters {
            w.wake();
        }
    }
}

fn lock_waiters() -> std::sync::MutexGuard<'static, Vec<Waker>> {
    // A panic while holding this lock leaves a plain Vec behind: still usable.
    TOTAL_WAITERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// True while the process is under [`TOTAL_PENDING_BYTES`]; else false, and `cx` is woken by
/// [`release_total`] once it is back under.
pub(crate) fn total_has_room(cx: &mut Context<'_>) -> bool {
    if TOTAL_PENDING.load(Ordering::Acquire) <= TOTAL_PENDING_BYTES {
        return true;
    }
    {
        let mut waiters = lock_waiters();
        if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
            waiters.push(cx.waker().clone());
        }
    }
    // Re-check: the total may have dropped between the load and the push.
    TOTAL_PENDING.load(Ordering::Acquire) <= TOTAL_PENDING_BYTES
}
