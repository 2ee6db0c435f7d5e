//! [`DynAgent`]: an [`Agent`] behind a pointer, so agents of different types stand side by side
//! (in [`crate::Workers`], say).

use std::sync::Arc;

use crate::agent::Agent;
use crate::agent::outcome::AgentResult;
use crate::agent::output::Output;
use crate::agent::turn::Turn;
use crate::platform::maybe_send::{BoxFuture, MaybeSend, MaybeSync};

/// An [`Agent`] behind a pointer: agents of different types side by side in one
/// [`Workers`](crate::Workers). Every `Agent` is one.
pub trait DynAgent: MaybeSend + MaybeSync + 'static {
    /// [`Agent::run`], boxed.
    fn run_boxed<'a>(&'a self, turn: &'a mut Turn, out: &'a Output) -> BoxFuture<'a, AgentResult>;
}

impl<A: Agent> DynAgent for A {
    fn run_boxed<'a>(&'a self, turn: &'a mut Turn, out: &'a Output) -> BoxFuture<'a, AgentResult> {
        Box::pin(self.run(turn, out))
    }
}

/// A shared agent of any type.
pub type SharedAgent = Arc<dyn DynAgent>;
