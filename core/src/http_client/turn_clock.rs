//! The platform's clock as requests need it: a `'static` sleep, type-erased so [`Http`]
//! (part of every [`Turn`](crate::Turn)) is not generic over the runtime.
//!
//! [`Http`]: super::Http

use std::time::Duration;

use crate::maybe_send::{BoxFuture, MaybeSend, MaybeSync};
use crate::runtime::Runtime;
use crate::service::Shared;

/// Sleep and wall-clock time of the runtime serving a turn.
pub(crate) trait TurnClock: MaybeSend + MaybeSync + 'static {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
    fn now_ms(&self) -> u64;
}

impl<A, S, R> TurnClock for Shared<A, S, R>
where
    A: MaybeSend + MaybeSync + 'static,
    S: MaybeSend + MaybeSync + 'static,
    R: Runtime,
{
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(self.rt.sleep(duration))
    }

    fn now_ms(&self) -> u64 {
        self.rt.now_ms()
    }
}
