//! [`PausedClock`]: tokio's (paused) clock as a [`Runtime`], for unit tests that give an agent's
//! code a turn's `Http` (`runway_core::testing::turn_http`).

use std::time::Duration;

use runway_core::adapter::Runtime;

/// Time as tokio's clock tells it, from the moment it was made; randomness is a constant.
pub(crate) struct PausedClock(pub(crate) tokio::time::Instant);

impl PausedClock {
    /// A clock starting now.
    pub(crate) fn now() -> Self {
        Self(tokio::time::Instant::now())
    }
}

impl Runtime for PausedClock {
    type Sleep = tokio::time::Sleep;
    fn sleep(&self, duration: Duration) -> Self::Sleep {
        tokio::time::sleep(duration)
    }
    fn now_ms(&self) -> u64 {
        self.0.elapsed().as_millis() as u64
    }
    fn fill_random(&self, buf: &mut [u8]) {
        buf.fill(7);
    }
}
