//! The core's [`Runtime`] on Workers: `setTimeout` timers, `Date.now()` and
//! `crypto.getRandomValues`.
//!
//! `Date.now()` on Workers advances only across I/O and timers (a Spectre mitigation), which
//! is exactly when the engine reads it: after a timer fired or a store call returned.

use std::time::Duration;

use runway_core::adapter::Runtime;
use wasm_bindgen::JsCast;

/// Clock, timer and entropy of a Worker isolate.
#[derive(Debug, Clone, Copy, Default)]
pub struct WorkersRuntime;

impl Runtime for WorkersRuntime {
    type Sleep = worker::Delay;

    fn sleep(&self, duration: Duration) -> Self::Sleep {
        worker::Delay::from(duration)
    }

    fn now_ms(&self) -> u64 {
        js_sys::Date::now() as u64
    }

    fn fill_random(&self, buf: &mut [u8]) {
        let crypto = js_sys::Reflect::get(&js_sys::global(), &"crypto".into())
            .ok()
            .and_then(|c| c.dyn_into::<web_sys::Crypto>().ok());
        let filled = crypto.is_some_and(|c| {
            buf.chunks_mut(65_536)
                .all(|chunk| c.get_random_values_with_u8_array(chunk).is_ok())
        });
        // Without entropy a file-link token would be guessable: refuse to go on. The Workers
        // runtime always provides `crypto`, so this is unreachable in practice.
        assert!(filled, "crypto.getRandomValues is unavailable");
    }
}
