//! Console's Test button: `GET /health`, then a real `POST /runs` turn with
//! input `Hello` on a single-use threadId `validate-<16 hex>`, stopping at
//! the first valid frame.

use serde::Serialize;

use crate::health::{HealthReport, probe_health};
use crate::run_body::{Caller, validate_thread_id};
use crate::transport::{HeaderSet, Transport};
use crate::turn::{ReadMode, TurnReport, run_turn};

/// What the Test button saw.
#[derive(Debug, Clone, Serialize)]
pub struct TestButtonReport {
    /// The `/health` probe and its fold.
    pub health: HealthReport,
    /// The `Hello` turn, read up to its first valid frame.
    pub turn: TurnReport,
}

impl TestButtonReport {
    /// Whether Console would mark the endpoint available: health folds to
    /// available and the turn produced a valid frame without failing.
    pub fn passed(&self) -> bool {
        self.health.verdict.is_available()
            && self.turn.error_code().is_none()
            && self.turn.first_valid_frame_ms.is_some()
    }
}

/// Presses Test: health, then the `Hello` turn (sent whatever the health
/// fold, so both problems are reported at once).
pub async fn press_test(
    transport: &Transport,
    headers: &HeaderSet,
    caller: &Caller,
) -> TestButtonReport {
    let health = probe_health(transport, headers).await;
    let body = caller.turn(&validate_thread_id(), "Hello");
    let turn = run_turn(transport, headers, &body, ReadMode::FirstValidFrame).await;
    TestButtonReport { health, turn }
}
