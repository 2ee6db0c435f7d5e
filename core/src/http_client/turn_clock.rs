//! The platform's clock as requests need it: a `'static` sleep, type-erased so [`Http`]
//! (part of every [`Turn`](crate::Turn)) is not generic over the runtime.
//!
//! [`Http`]: super::Http

use std::time::Duration;

use crate::platform::maybe_send::{BoxFuture, MaybeSend, MaybeSync};
#[cfg(feature = "testing")]
use crate::platform::runtime::Runtime;

/// Sleep and wall-clock time of the runtime serving a turn (the engine's, in `turn::engine`).
pub(crate) trait TurnClock: MaybeSend + MaybeSync + 'static {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
    fn now_ms(&self) -> u64;
}

/// A bare runtime as a turn's clock (a turn outside [`crate::adapter::Runway`]: tests).
#[cfg(any(test, feature = "testing"))]
pub(crate) struct RuntimeClock<R>(pub(crate) R);

#[cfg(any(test, feature = "testing"))]
impl<R: Runtime> TurnClock for RuntimeClock<R> {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(self.0.sleep(duration))
    }

    fn now_ms(&self) -> u64 {
        self.0.now_ms()
    }
}
