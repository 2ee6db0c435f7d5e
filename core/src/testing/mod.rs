//! Test an agent without serving it (cargo feature `testing`).
//!
//! [`turn_http`] gives a test the [`Http`] a served turn would have, sending through any
//! [`HttpClient`] (a scripted one, or a real client against a local server) and timed by any
//! [`Runtime`].

use std::sync::Arc;
use std::time::Duration;

use crate::http_client::turn_clock::RuntimeClock;
use crate::http_client::{Http, HttpClient};
use crate::platform::runtime::Runtime;

pub use crate::http_client::handle::TurnHttpGuard;

/// The HTTP client of a turn that ends `deadline` after now on `rt`'s clock, sending through
/// `client`, and the guard whose drop ends its requests (as the end of a served turn does).
#[cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]
pub fn turn_http<R: Runtime>(
    client: Arc<dyn HttpClient>,
    rt: R,
    deadline: Duration,
) -> (Http, TurnHttpGuard) {
    Http::for_turn(Some(client), Arc::new(RuntimeClock(rt)), deadline)
}
