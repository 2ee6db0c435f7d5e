//! [`LogBudget`]: how many lines one turn of the model agent may log. A hostile model endpoint
//! or tool API decides how often the agent has something to say (a usage chunk, a failed
//! call, a retry); the budget keeps that from becoming a flood of log lines.

use std::sync::atomic::{AtomicU32, Ordering};

/// Lines one turn may log before the rest are dropped (with one line saying so).
pub(crate) const MAX_LOG_LINES_PER_TURN: u32 = 64;

/// One turn's log lines left. Shared by the tool calls that run at once.
#[derive(Debug)]
pub(crate) struct LogBudget {
    left: AtomicU32,
}

impl LogBudget {
    /// A budget of [`MAX_LOG_LINES_PER_TURN`].
    pub(crate) fn new() -> Self {
        Self::with(MAX_LOG_LINES_PER_TURN)
    }

    /// A budget of `lines`.
    pub(crate) fn with(lines: u32) -> Self {
        Self {
            left: AtomicU32::new(lines),
        }
    }

    /// True if one more line may be logged. The call that spends the last line logs that
    /// the turn's further lines are dropped.
    pub(crate) fn take_line(&self) -> bool {
        let before = self
            .left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .unwrap_or(0);
        if before == 1 {
            tracing::warn!(
                max_lines = MAX_LOG_LINES_PER_TURN,
                "this turn logged its maximum of lines: the rest of its lines are dropped"
            );
            return false;
        }
        before > 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_admits_its_lines_less_the_one_saying_it_ran_out() {
        let b = LogBudget::with(3);
        let admitted = (0..100).filter(|_| b.take_line()).count();
        assert_eq!(admitted, 2);
    }
}
