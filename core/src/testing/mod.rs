//! Test an agent the way it is served (cargo feature `testing`).
//!
//! ```toml
//! [dev-dependencies]
//! runway-core = { version = "…", features = ["testing"] }
//! ```
//!
//! A test sends a [`TestTurn`] to the agent and asserts on what came back:
//!
//! ```
//! use runway_core::testing::TestTurn;
//! use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
//!
//! struct MyAgent;
//!
//! impl Agent for MyAgent {
//!     async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
//!         out.text(format!("You said {}.", turn.input));
//!         turn.context.state = serde_json::json!({"greeted": true});
//!         Ok(Outcome::Done)
//!     }
//! }
//!
//! // In a test: `#[tokio::test] async fn …` and `.await`, or `block_on` without tokio.
//! # runway_core::testing::VirtualRuntime::new().block_on(async {
//! let frames = TestTurn::new("hello").run(&MyAgent).await;
//! assert!(frames.is_success());
//! assert_eq!(frames.text(), "You said hello.");
//! assert_eq!(frames.state()["greeted"], true);
//! # });
//! ```
//!
//! The turn goes through the real thing: [`Runway::handle`](crate::adapter::Runway::handle),
//! the turn engine (claim, heartbeats, deadline, commit) and the Console writer, with the
//! frames' limits and checks. What differs from a deployment is only underneath:
//!
//! - [`TestStore`]: the memory store, which can be told to fail or to be slow per call
//!   ([`StoreCall`]).
//! - [`VirtualRuntime`]: a clock that jumps ahead whenever the turn only waits, so a test of
//!   a 290-second deadline takes no time and gives the same result on every machine; entropy
//!   is seeded. It needs no particular executor: tokio, [`VirtualRuntime::block_on`], or
//!   `wasm-bindgen-futures` on `wasm32`.
//! - [`ScriptedHttp`]: what [`Turn::http`](crate::Turn::http) answers, scripted per URL, with
//!   waits on the virtual clock.
//!
//! [`Frames`] is the turn as the client read it: text, tool calls, the question asked
//! ([`Frames::interrupt`]), the error ([`Frames::error`]), the raw SSE, when each chunk came,
//! and the thread as saved ([`Frames::saved`], [`Frames::state`]).
//!
//! Several turns on one thread, turns at once, a store that fails: [`TestRunway`]. A request
//! a [`TestTurn`] does not make (Lowkey, `/health`, a hosted file): [`TestRunway::request`];
//! a test that drives [`Runway::handle`](crate::adapter::Runway::handle) itself:
//! [`TestRunway::runway`] and [`receive`].
//!
//! An agent that sleeps should sleep on its [`Runtime`] (give it a
//! [`VirtualRuntime`] in tests, through [`TestRunway::with`]): a tokio timer does not move the
//! virtual clock.

mod clock;
mod frames;
mod held_http;
mod received;
mod scripted_http;
mod store;
mod test_runway;
mod test_turn;

use std::sync::Arc;
use std::time::Duration;

pub use crate::http_client::handle::TurnHttpGuard;
use crate::http_client::turn_clock::RuntimeClock;
use crate::http_client::{Http, HttpClient};
use crate::platform::runtime::Runtime;
pub use clock::{
    ClockHold, Elapsed, Run, VIRTUAL_EPOCH_MS, VirtualRuntime, VirtualSleep, yield_now,
};
pub use frames::{Frames, RunError, SeenToolCall};
pub use received::{Received, receive};
pub use scripted_http::{ScriptedHttp, ScriptedResponse};
pub use store::{StoreCall, TestStore};
pub use test_runway::TestRunway;
pub use test_turn::TestTurn;

/// The HTTP client of a turn that ends `deadline` after now on `rt`'s clock, sending through
/// `client`, and the guard whose drop ends its requests (as the end of a served turn does):
/// for testing code that takes an [`Http`] without running a whole turn.
#[cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]
pub fn turn_http<R: Runtime>(
    client: Arc<dyn HttpClient>,
    rt: R,
    deadline: Duration,
) -> (Http, TurnHttpGuard) {
    Http::for_turn(Some(client), Arc::new(RuntimeClock(rt)), deadline)
}
