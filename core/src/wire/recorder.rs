//! The recording of a turn (what a replay of its run sends), kept in memory while the turn
//! runs, within a process-wide bound.
//!
//! Every running turn records what it streams, up to the stream limit (8 MiB), until its
//! commit stores it. A hundred long turns at once would hold hundreds of megabytes, so the
//! recordings of one process share a [`RecordPool`] of [`TOTAL_RECORDED_BYTES`]:
//!
//! - each turn may always hold [`RECORDED_FLOOR_BYTES`] (every ordinary turn fits in it);
//! - beyond that it grows only while the pool has room, and never waits for room: a turn that
//!   cannot grow drops its recording at once and gives its bytes back. No turn ever waits for
//!   another's bytes, so there is nothing to deadlock on, and the stream itself is unaffected
//!   (the client receives every frame; only the copy for a later replay is gone).
//!
//! A run whose recording was dropped is still committed (its thread, its transcript). What it
//! records in place of the frames is the writer's choice (see `Recorder::take`): Console's
//! writer stores a `RUN_ERROR` `REPLAY_UNAVAILABLE`, Lowkey's an `error` event, so a repeated
//! delivery never runs the agent again and says plainly why it cannot repeat the answer.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes all recordings of this process may hold together beyond their floors.
pub const TOTAL_RECORDED_BYTES: usize = 64 * 1024 * 1024;

/// Bytes every turn may record whatever the pool holds.
pub const RECORDED_FLOOR_BYTES: usize = 64 * 1024;

/// A budget of recorded bytes shared by turns.
#[derive(Debug)]
pub struct RecordPool {
    used: AtomicUsize,
    /// Bytes beyond the floors the pool grants in total.
    cap: usize,
}

static PROCESS_POOL: RecordPool = RecordPool::new(TOTAL_RECORDED_BYTES);

impl RecordPool {
    /// A pool granting `cap` bytes beyond every recording's floor.
    pub const fn new(cap: usize) -> Self {
        Self {
            used: AtomicUsize::new(0),
            cap,
        }
    }

    /// The pool every writer of this process uses unless told otherwise.
    pub fn process() -> &'static Self {
        &PROCESS_POOL
    }

    /// Bytes held now by recordings beyond their floors (at most the pool's cap).
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Grants `n` more bytes to a recording that holds `held` already: always within the
    /// floor, beyond it only while the pool's cap allows.
    fn grant(&self, held: usize, n: usize) -> bool {
        let above = above_floor(held + n) - above_floor(held);
        above == 0
            || self
                .used
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                    (used + above <= self.cap).then_some(used + above)
                })
                .is_ok()
    }

    /// Gives back everything a recording that holds `held` bytes was granted.
    fn release(&self, held: usize) {
        let above = above_floor(held);
        if above > 0 {
            self.used.fetch_sub(above, Ordering::AcqRel);
        }
    }
}

fn above_floor(held: usize) -> usize {
    held.saturating_sub(RECORDED_FLOOR_BYTES)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first frame: nothing is recorded yet.
    Off,
    On,
    /// The pool had no room: nothing more is recorded and what was is gone.
    Dropped,
}

/// One turn's recording, its bytes counted in a [`RecordPool`].
#[derive(Debug)]
pub(crate) struct Recorder {
    text: String,
    /// Bytes granted by the pool: the buffer's capacity.
    held: usize,
    state: State,
    pool: &'static RecordPool,
}

impl Recorder {
    /// A recorder counting in `pool`, recording nothing until [`Recorder::start`].
    pub(crate) fn new(pool: &'static RecordPool) -> Self {
        Self {
            text: String::new(),
            held: 0,
            state: State::Off,
            pool,
        }
    }

    /// Records from now on.
    pub(crate) fn start(&mut self) {
        if self.state == State::Off {
            self.state = State::On;
        }
    }

    /// Records `s` if recording has started.
    pub(crate) fn push(&mut self, s: &str) {
        if self.state == State::On {
            self.append(s);
        }
    }

    /// Records `s` (the final frame), started or not, unless the recording was dropped.
    pub(crate) fn push_final(&mut self, s: &str) {
        if self.state != State::Dropped {
            self.append(s);
        }
    }

    /// The recording so far; `None` if it was dropped.
    pub(crate) fn kept(&self) -> Option<&str> {
        (self.state != State::Dropped).then_some(self.text.as_str())
    }

    /// Takes the recording, giving its bytes back to the pool; `None` if it was dropped.
    pub(crate) fn take(&mut self) -> Option<String> {
        let kept = self.state != State::Dropped;
        let text = std::mem::take(&mut self.text);
        self.pool.release(std::mem::take(&mut self.held));
        self.state = State::Dropped;
        kept.then_some(text)
    }

    /// Makes room for `n` more bytes at once if the pool has it (a long delta about to be
    /// recorded frame by frame); without room, nothing changes and `push` decides later.
    pub(crate) fn reserve(&mut self, n: usize) {
        let need = self.text.len() + n;
        if self.state != State::On || need <= self.held {
            return;
        }
        if self.pool.grant(self.held, need - self.held) {
            self.held = need;
            self.text.reserve_exact(need - self.text.len());
        }
    }

    fn append(&mut self, s: &str) {
        let need = self.text.len() + s.len();
        if need > self.held {
            // Double (at least to the need, at least 4 KiB): few reallocations, and the
            // buffer's capacity is exactly what the pool granted.
            let target = need.max(2 * self.held).max(4096);
            let more = target - self.held;
            if !self.pool.grant(self.held, more) {
                tracing::warn!(
                    code = "RECORDING_NOT_KEPT",
                    recorded = self.text.len(),
                    pool_used = self.pool.used(),
                    "recordings are at their memory bound: this turn's answer is streamed but not kept for a replay"
                );
                self.drop_recording();
                return;
            }
            self.held = target;
            self.text.reserve_exact(target - self.text.len());
        }
        self.text.push_str(s);
    }

    fn drop_recording(&mut self) {
        self.text = String::new();
        self.pool.release(std::mem::take(&mut self.held));
        self.state = State::Dropped;
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.pool.release(self.held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(cap: usize) -> &'static RecordPool {
        Box::leak(Box::new(RecordPool::new(cap)))
    }

    #[test]
    fn the_floor_is_always_granted_and_everything_is_given_back() {
        let p = pool(0);
        let mut rs: Vec<Recorder> = (0..10).map(|_| Recorder::new(p)).collect();
        for r in &mut rs {
            r.start();
            r.push(&"x".repeat(RECORDED_FLOOR_BYTES / 2));
        }
        assert!(rs.iter().all(|r| r.kept().is_some()), "within the floor");
        assert_eq!(p.used(), 0, "floors are not taken from the pool");
        rs[0].push(&"x".repeat(RECORDED_FLOOR_BYTES));
        assert_eq!(rs[0].kept(), None, "beyond the floor, a full pool drops it");
        assert_eq!(rs[0].take(), None);
        assert_eq!(rs[1].take().unwrap().len(), RECORDED_FLOOR_BYTES / 2);
        drop(rs);
        assert_eq!(p.used(), 0);
    }

    #[test]
    fn recordings_together_stay_within_the_pool_and_never_wait() {
        let cap = 4 * 1024 * 1024;
        let p = pool(cap);
        let chunk = "y".repeat(16 * 1024);
        let mut rs: Vec<Recorder> = (0..20).map(|_| Recorder::new(p)).collect();
        rs.iter_mut().for_each(Recorder::start);
        // 20 turns each writing 1 MiB, interleaved: 20 MiB asked for, 4 MiB (+ floors) kept.
        for _ in 0..64 {
            for r in &mut rs {
                r.push(&chunk);
                assert!(p.used() <= cap);
            }
        }
        let kept = rs.iter().filter(|r| r.kept().is_some()).count();
        assert!((1..20).contains(&kept), "{kept} kept");
        for r in &rs {
            if let Some(t) = r.kept() {
                assert_eq!(t.len(), 64 * chunk.len(), "a kept recording is whole");
            }
        }
        drop(rs);
        assert_eq!(p.used(), 0);
    }

    #[test]
    fn nothing_is_recorded_before_start_but_the_final_frame_is() {
        let p = pool(1024);
        let mut r = Recorder::new(p);
        r.push("first");
        r.push_final("fin");
        assert_eq!(r.take().as_deref(), Some("fin"));
    }
}
