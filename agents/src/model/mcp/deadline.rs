//! [`Deadline`]: one time budget shared by every request of one MCP step (setting up a
//! session, each page of a tool list, the call itself), measured on the turn's clock (the
//! runtime's: `std::time::Instant` does not exist on Workers).

use std::time::Duration;

use runway_core::http_client::{Http, HttpError};

use super::transport::TransportError;

/// A budget started now.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    budget: Duration,
    /// The turn's time left when the budget started (`None`: the turn has no client).
    started_left: Option<Duration>,
}

impl Deadline {
    /// `budget` from now.
    pub(crate) fn start(http: &Http, budget: Duration) -> Self {
        Self {
            budget,
            started_left: http.time_left(),
        }
    }

    /// What is left of the budget (zero once spent).
    pub(crate) fn left(&self, http: &Http) -> Duration {
        let spent = match (self.started_left, http.time_left()) {
            (Some(then), Some(now)) => then.saturating_sub(now),
            _ => Duration::ZERO,
        };
        self.budget.saturating_sub(spent)
    }

    /// The time the next request may take.
    ///
    /// # Errors
    /// The budget is spent: [`HttpError::Timeout`], as a request past it gets.
    pub(crate) fn next_request(&self, http: &Http) -> Result<Duration, TransportError> {
        let left = self.left(http);
        if left.is_zero() {
            Err(TransportError::Http(HttpError::Timeout(self.budget)))
        } else {
            Ok(left)
        }
    }
}
