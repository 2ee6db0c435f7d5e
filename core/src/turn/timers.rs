//! A turn's timers, as data (as quinn-proto keeps its `TimerTable`): each is a time in the
//! table, not a sleeping future. The engine's one wait loop ([`TurnIo::wait`](crate::turn::wait::TurnIo::wait)) sleeps until the
//! earliest timer the current wait cares about, and then acts on whichever has expired.
//!
//! | timer | set | on expiry |
//! |---|---|---|
//! | [`Timer::Deadline`] | when the turn starts, `turn_deadline` later | the agent is stopped (`TURN_DEADLINE`); a send that blocks from then on gets the grace once |
//! | [`Timer::SendGrace`] | when a send first blocks after the deadline, [`FINAL_SEND_GRACE`] later | the client is stalled: nothing more is sent |
//! | [`Timer::StoreCall`] | at each store call, [`STORE_TIMEOUT`] later | the call counts as failed (`STORE_UNAVAILABLE`) |
//! | [`Timer::Heartbeat`] | `first_heartbeat` after the start, then `heartbeat` after each write | a keep-alive is sent |
//! | [`Timer::Supersede`] | when the agent starts, `heartbeat` later, then backing off to [`MAX_SUPERSEDE_CHECK`] | the store is asked whether a newer turn arrived on the thread |
//! | [`Timer::DuplicatePoll`] | when another delivery of the run is running, backing off to [`MAX_DUPLICATE_POLL`] | the claim is tried again |
//! | [`Timer::UsageWrite`] | when the turn's usage is written, after its final frame, [`USAGE_WRITE_TIMEOUT`] later | the writes are given up (`USAGE_NOT_RECORDED`) and the body closes |

use std::time::Duration;

/// Longest wait on any single store call before the turn gives up on the store.
pub(crate) const STORE_TIMEOUT: Duration = Duration::from_secs(8);

/// Longest wait on the usage writes after a turn (the turn has ended: this only bounds how
/// long its body stays open).
pub(crate) const USAGE_WRITE_TIMEOUT: Duration = Duration::from_secs(8);

/// After the turn's deadline, how long one send may still wait for a slow client to read (so
/// the final frame reaches a client that is reading, just slowly).
pub(crate) const FINAL_SEND_GRACE: Duration = Duration::from_secs(5);

/// The longest wait between two polls of a duplicate delivery.
pub(crate) const MAX_DUPLICATE_POLL: Duration = Duration::from_secs(8);

/// The longest wait between two checks for a newer turn on the thread. Each check is a store
/// read (a Durable Object subrequest on Workers, 50 per request on the free plan): checking
/// at every heartbeat cost 28 in a 280-second turn; backing off from `heartbeat` to this costs
/// 6 (see `cloudflare/README.md`).
pub(crate) const MAX_SUPERSEDE_CHECK: Duration = Duration::from_secs(60);

/// One of a turn's timers. When several have expired, the first in this order is acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// The turn's deadline.
    Deadline,
    /// The end of the one grace a send gets after the deadline.
    SendGrace,
    /// The current store call gives up.
    StoreCall,
    /// A keep-alive is due.
    Heartbeat,
    /// Time to check whether a newer turn arrived on the thread.
    Supersede,
    /// Time for a duplicate delivery to try the claim again.
    DuplicatePoll,
    /// The usage writes after the turn give up.
    UsageWrite,
}

impl Timer {
    const ALL: [Self; 7] = [
        Self::Deadline,
        Self::SendGrace,
        Self::StoreCall,
        Self::Heartbeat,
        Self::Supersede,
        Self::DuplicatePoll,
        Self::UsageWrite,
    ];

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// Some timers: those a wait cares about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimerSet(u8);

impl TimerSet {
    /// No timer.
    pub(crate) const NONE: Self = Self(0);

    /// `timers`.
    pub(crate) const fn of(timers: &[Timer]) -> Self {
        let mut bits = 0;
        let mut i = 0;
        while i < timers.len() {
            bits |= timers[i].bit();
            i += 1;
        }
        Self(bits)
    }

    /// This set and `timer`.
    pub(crate) const fn with(self, timer: Timer) -> Self {
        Self(self.0 | timer.bit())
    }

    pub(crate) const fn contains(self, timer: Timer) -> bool {
        self.0 & timer.bit() != 0
    }
}

/// When each timer expires, in milliseconds of the runtime's clock (`None`: not set).
#[derive(Debug, Default)]
pub(crate) struct TimerTable {
    at: [Option<u64>; Timer::ALL.len()],
}

impl TimerTable {
    pub(crate) fn set(&mut self, timer: Timer, at_ms: u64) {
        self.at[timer as usize] = Some(at_ms);
    }

    pub(crate) fn stop(&mut self, timer: Timer) {
        self.at[timer as usize] = None;
    }

    pub(crate) fn get(&self, timer: Timer) -> Option<u64> {
        self.at[timer as usize]
    }

    /// When the earliest of `timers` expires.
    pub(crate) fn next(&self, timers: TimerSet) -> Option<u64> {
        Timer::ALL
            .into_iter()
            .filter(|t| timers.contains(*t))
            .filter_map(|t| self.get(t))
            .min()
    }

    /// The first of `timers` (in [`Timer`]'s order) that has expired at `now_ms`.
    pub(crate) fn expired(&self, timers: TimerSet, now_ms: u64) -> Option<Timer> {
        Timer::ALL
            .into_iter()
            .filter(|t| timers.contains(*t))
            .find(|t| self.get(*t).is_some_and(|at| at <= now_ms))
    }
}

/// `first`, doubled `step` times, at most `max` (or `first`, if that is longer).
pub(crate) fn backoff(first: Duration, step: u32, max: Duration) -> Duration {
    first.saturating_mul(1 << step.min(16)).min(max.max(first))
}

/// `at + wait` in milliseconds.
pub(crate) fn after(at_ms: u64, wait: Duration) -> u64 {
    at_ms.saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_set_timer_of_the_set_is_next_and_expired_ones_come_in_order() {
        let mut t = TimerTable::default();
        let all = TimerSet::of(&Timer::ALL);
        assert_eq!(t.next(all), None);
        t.set(Timer::Deadline, 300);
        t.set(Timer::Heartbeat, 100);
        t.set(Timer::Supersede, 100);
        assert_eq!(t.next(all), Some(100));
        assert_eq!(t.next(TimerSet::of(&[Timer::Deadline])), Some(300));
        assert_eq!(t.expired(all, 99), None);
        assert_eq!(t.expired(all, 100), Some(Timer::Heartbeat));
        assert_eq!(
            t.expired(TimerSet::of(&[Timer::Supersede]), 100),
            Some(Timer::Supersede)
        );
        assert_eq!(t.expired(all, 400), Some(Timer::Deadline), "by priority");
        t.stop(Timer::Deadline);
        assert_eq!(t.expired(all, 400), Some(Timer::Heartbeat));
        assert_eq!(t.expired(TimerSet::NONE, 400), None);
        assert!(
            TimerSet::NONE
                .with(Timer::StoreCall)
                .contains(Timer::StoreCall)
        );
    }

    #[test]
    fn backoff_doubles_up_to_its_bound() {
        let s = Duration::from_secs;
        let waits: Vec<_> = (0..6).map(|n| backoff(s(10), n, s(60))).collect();
        assert_eq!(waits, [s(10), s(20), s(40), s(60), s(60), s(60)]);
        assert_eq!(
            backoff(s(90), 3, s(60)),
            s(90),
            "never below the first wait"
        );
        assert_eq!(backoff(s(1), 40, s(8)), s(8));
    }
}
