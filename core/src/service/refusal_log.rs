//! Rate limiting of the warning logged for a refused (401) request.
//!
//! Anyone who can reach the URL can send requests without credentials; logging each one
//! would let them fill the logs (and, on Lambda and Workers, the log bill). One line per
//! interval is enough to notice, and it says how many refusals went unlogged before it.

use std::sync::atomic::{AtomicU64, Ordering};

/// At most one warning per this many milliseconds.
const INTERVAL_MS: u64 = 10_000;

/// When the last refusal was logged, and how many were not since.
#[derive(Debug, Default)]
pub(crate) struct RefusalLog {
    /// `now_ms + 1` of the last logged refusal (0: none yet).
    last_logged: AtomicU64,
    unlogged: AtomicU64,
}

impl RefusalLog {
    /// Counts one refusal at `now_ms`. `Some(n)` if it should be logged, `n` being how many
    /// were not logged before it.
    pub(crate) fn count_refusal(&self, now_ms: u64) -> Option<u64> {
        let last = self.last_logged.load(Ordering::Relaxed);
        let due = last == 0 || now_ms + 1 >= last + INTERVAL_MS;
        if due
            && self
                .last_logged
                .compare_exchange(last, now_ms + 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return Some(self.unlogged.swap(0, Ordering::Relaxed));
        }
        self.unlogged.fetch_add(1, Ordering::Relaxed);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_with_the_unlogged_count() {
        let log = RefusalLog::default();
        assert_eq!(log.count_refusal(0), Some(0));
        let logged = (1..1000)
            .filter(|t| log.count_refusal(*t).is_some())
            .count();
        assert_eq!(logged, 0);
        assert_eq!(log.count_refusal(INTERVAL_MS - 1), None);
        assert_eq!(log.count_refusal(INTERVAL_MS), Some(1000));
        assert_eq!(log.count_refusal(INTERVAL_MS + 1), None);
        assert_eq!(log.count_refusal(3 * INTERVAL_MS), Some(1));
    }
}
