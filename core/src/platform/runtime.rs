//! What the core needs from the platform it runs on: time and randomness.
//!
//! The core never reads a clock, sleeps or draws random bytes by itself (`SystemTime::now`
//! panics on `wasm32-unknown-unknown`, and tokio does not exist there). Each adapter hands the
//! engine one [`Runtime`].

use std::future::Future;
use std::time::Duration;

use crate::platform::maybe_send::{MaybeSend, MaybeSync};

/// Clock, timer and entropy of the platform running a turn.
pub trait Runtime: MaybeSend + MaybeSync + 'static {
    /// The future returned by [`Runtime::sleep`].
    type Sleep: Future<Output = ()> + MaybeSend;

    /// Completes after `duration` has passed.
    fn sleep(&self, duration: Duration) -> Self::Sleep;

    /// Wall-clock time in milliseconds since the Unix epoch (used for TTLs and leases).
    fn now_ms(&self) -> u64;

    /// Fills `buf` with cryptographically secure random bytes (used for file-link tokens).
    fn fill_random(&self, buf: &mut [u8]);
}
