//! [`Runtime`] on tokio, for the native adapters (the `runway` server and AWS Lambda).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::platform::runtime::Runtime;

/// Tokio's timer, the system clock and the OS's entropy.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioRuntime;

impl Runtime for TokioRuntime {
    type Sleep = tokio::time::Sleep;

    fn sleep(&self, duration: Duration) -> Self::Sleep {
        tokio::time::sleep(duration)
    }

    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }

    fn fill_random(&self, buf: &mut [u8]) {
        // Without entropy no file link would be safe to hand out: refuse to continue.
        getrandom::fill(buf).expect("the operating system has no entropy source");
    }
}
