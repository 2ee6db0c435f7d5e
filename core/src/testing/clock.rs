//! [`VirtualRuntime`]: a clock that moves only when everything waits on it.
//!
//! Tests of timing (heartbeats every 10 s, a 290-second deadline, a store that answers in
//! 9 s) must neither wait that long nor depend on how fast the machine is. Like tokio's paused
//! clock, this one jumps to the next timer when nothing else can happen; unlike it, it needs no
//! particular executor (tokio, `futures`' `block_on`, `wasm-bindgen-futures`) because
//! [`VirtualRuntime::run`] watches the futures it drives itself:
//!
//! - A future woken while it is polled (a message in a channel, a frame the client read) is
//!   polled again at once; the clock does not move.
//! - When a poll wakes nothing, the host executor gets one round (its own tasks may have work
//!   for the future) and, if that round woke nothing on this clock either, the clock jumps to
//!   the earliest pending [`VirtualRuntime::sleep`] and wakes it.
//! - While a [`ClockHold`] is alive (a request through a real HTTP client, say) the clock
//!   stands still: the future is waiting on the outside world, which runs in real time.
//!
//! Time is data here (elapsed nanoseconds and a table of timers), so a test that passes once
//! passes every time.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use crate::platform::runtime::Runtime;

/// Where a [`VirtualRuntime`]'s wall clock starts: 2023-11-14T22:13:20Z.
pub const VIRTUAL_EPOCH_MS: u64 = 1_700_000_000_000;

/// Distinguishes clocks in the record of which ones this thread is driving.
static NEXT_CLOCK_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The clocks whose [`Run`] is being polled on this thread, innermost last: a `run` inside
    /// another `run` of the same clock leaves the driving to the outer one.
    static DRIVING: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// A deterministic [`Runtime`](crate::adapter::Runtime) for tests: virtual time that advances
/// only when everything driven by [`VirtualRuntime::run`] is waiting on it, and a seeded
/// random source.
///
/// Clones share one clock. The wall clock starts at [`VIRTUAL_EPOCH_MS`].
///
/// # Example
///
/// Five virtual minutes pass at once, on any executor:
///
/// ```
/// use std::time::Duration;
/// use runway_core::testing::VirtualRuntime;
///
/// let rt = VirtualRuntime::new();
/// let took = rt.block_on(async {
///     rt.sleep(Duration::from_secs(300)).await;
///     rt.elapsed()
/// });
/// assert_eq!(took, Duration::from_secs(300));
/// ```
#[derive(Clone)]
pub struct VirtualRuntime {
    clock: Arc<Clock>,
}

struct Clock {
    id: u64,
    start_ms: u64,
    state: Mutex<ClockState>,
    /// Bumped by every wake of a future driven on this clock: the clock moves only after a
    /// whole round in which it did not change.
    activity: AtomicU64,
    /// The random source's state (splitmix64).
    random: AtomicU64,
}

#[derive(Default)]
struct ClockState {
    elapsed: Duration,
    /// Pending sleeps by (due time, id).
    timers: BTreeMap<(Duration, u64), Waker>,
    next_timer: u64,
    holds: usize,
    /// Runs waiting for something outside the clock (a hold's release, an outside wake).
    parked: Vec<Waker>,
}

impl Clock {
    fn lock(&self) -> MutexGuard<'_, ClockState> {
        // Every update is a few field writes: a panic elsewhere cannot leave it half-made.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake_parked(&self) {
        let parked = std::mem::take(&mut self.lock().parked);
        self.activity.fetch_add(1, Ordering::SeqCst);
        for w in parked {
            w.wake();
        }
    }
}

impl Default for VirtualRuntime {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for VirtualRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualRuntime")
            .field("elapsed", &self.elapsed())
            .finish()
    }
}

impl VirtualRuntime {
    /// A clock at [`VIRTUAL_EPOCH_MS`], with random bytes seeded by 0.
    pub fn new() -> Self {
        Self::starting_at(VIRTUAL_EPOCH_MS)
    }

    /// A clock whose wall time starts at `epoch_ms` (ms since the Unix epoch).
    pub fn starting_at(epoch_ms: u64) -> Self {
        Self {
            clock: Arc::new(Clock {
                id: NEXT_CLOCK_ID.fetch_add(1, Ordering::Relaxed),
                start_ms: epoch_ms,
                state: Mutex::new(ClockState::default()),
                activity: AtomicU64::new(0),
                random: AtomicU64::new(0),
            }),
        }
    }

    /// Completes once `duration` of virtual time has passed (within a
    /// [`VirtualRuntime::run`]: nothing else moves the clock).
    pub fn sleep(&self, duration: Duration) -> VirtualSleep {
        let mut st = self.clock.lock();
        st.next_timer += 1;
        VirtualSleep {
            clock: Arc::clone(&self.clock),
            due: st.elapsed.saturating_add(duration),
            id: st.next_timer,
        }
    }

    /// The virtual wall clock, in ms since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        self.clock.start_ms + self.clock.lock().elapsed.as_millis() as u64
    }

    /// How much virtual time has passed since the clock was made.
    pub fn elapsed(&self) -> Duration {
        self.clock.lock().elapsed
    }

    /// Drives `fut` to its end, moving this clock whenever `fut` (and every other `run` of
    /// this clock) waits on nothing but its timers. Await it on any executor. A `run` inside
    /// another `run` of the same clock simply polls its future: the outer one keeps time.
    pub fn run<F: Future>(&self, fut: F) -> Run<F> {
        Run {
            clock: Arc::clone(&self.clock),
            fut: Box::pin(fut),
            waker: None,
            idle_at: None,
        }
    }

    /// Runs `fut` on this thread until it ends ([`VirtualRuntime::run`] without an executor).
    ///
    /// # Panics
    /// On `wasm32`, if `fut` waits on something other than this clock (the thread cannot
    /// block there).
    pub fn block_on<F: Future>(&self, fut: F) -> F::Output {
        let run = std::pin::pin!(self.run(fut));
        block_on(run)
    }

    /// `fut`'s output, or `Err(Elapsed)` if `after` passes first on this clock.
    pub async fn timeout<F: Future>(&self, after: Duration, fut: F) -> Result<F::Output, Elapsed> {
        use futures::FutureExt;
        let mut fut = std::pin::pin!(fut.fuse());
        let mut timer = std::pin::pin!(self.sleep(after).fuse());
        futures::select_biased! {
            out = fut => Ok(out),
            () = timer => Err(Elapsed(after)),
        }
    }

    /// Stops the clock until the returned hold is dropped: for a future that waits on real
    /// I/O (a local server, another thread), which takes real time the clock must not skip.
    /// Requests through [`TestTurn::http_client`](super::TestTurn::http_client) hold it
    /// while they are in flight.
    pub fn hold(&self) -> ClockHold {
        self.clock.lock().holds += 1;
        ClockHold {
            clock: Arc::clone(&self.clock),
        }
    }
}

impl Runtime for VirtualRuntime {
    type Sleep = VirtualSleep;

    fn sleep(&self, duration: Duration) -> VirtualSleep {
        VirtualRuntime::sleep(self, duration)
    }

    fn now_ms(&self) -> u64 {
        VirtualRuntime::now_ms(self)
    }

    /// Deterministic bytes (splitmix64 from seed 0): distinct on every call, the same in
    /// every run. Never use them as a secret.
    fn fill_random(&self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let mut z = self
                .clock
                .random
                .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
                .wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
    }
}

/// [`VirtualRuntime::timeout`]'s error: the time that passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("timed out after {0:?} of virtual time")]
pub struct Elapsed(pub Duration);

/// Keeps a [`VirtualRuntime`]'s clock still while it lives ([`VirtualRuntime::hold`]).
#[must_use = "the clock moves again as soon as the hold is dropped"]
pub struct ClockHold {
    clock: Arc<Clock>,
}

impl Drop for ClockHold {
    fn drop(&mut self) {
        self.clock.lock().holds -= 1;
        // A run that found the clock held waits to be told it may move it.
        self.clock.wake_parked();
    }
}

impl std::fmt::Debug for ClockHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClockHold")
    }
}

/// [`VirtualRuntime::sleep`]: ready once the clock reaches its due time.
pub struct VirtualSleep {
    clock: Arc<Clock>,
    due: Duration,
    id: u64,
}

impl Future for VirtualSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut st = self.clock.lock();
        if st.elapsed >= self.due {
            st.timers.remove(&(self.due, self.id));
            return Poll::Ready(());
        }
        let waker = st
            .timers
            .entry((self.due, self.id))
            .or_insert_with(|| cx.waker().clone());
        if !waker.will_wake(cx.waker()) {
            waker.clone_from(cx.waker());
        }
        Poll::Pending
    }
}

impl Drop for VirtualSleep {
    fn drop(&mut self) {
        // A dropped timer (the other branch of a select won) must not make the clock jump.
        self.clock.lock().timers.remove(&(self.due, self.id));
    }
}

impl std::fmt::Debug for VirtualSleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualSleep")
            .field("due", &self.due)
            .finish()
    }
}

/// The future of [`VirtualRuntime::run`].
pub struct Run<F: Future> {
    clock: Arc<Clock>,
    fut: Pin<Box<F>>,
    waker: Option<Arc<RunWaker>>,
    /// The clock's activity count when this run last gave the host a round because nothing
    /// was ready: unchanged at the next poll means the whole round was idle.
    idle_at: Option<u64>,
}

impl<F: Future> std::fmt::Debug for Run<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Run")
    }
}

/// Counts a wake as activity on the clock, then passes it to the host's waker.
struct RunWaker {
    clock: Arc<Clock>,
    host: Mutex<Waker>,
}

impl Wake for RunWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.clock.activity.fetch_add(1, Ordering::SeqCst);
        self.host
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .wake_by_ref();
    }
}

/// Marks this thread as driving a clock while a [`Run`] polls its future.
struct Driving;

impl Driving {
    fn enter(id: u64) -> Option<Self> {
        DRIVING.with(|d| {
            let mut d = d.borrow_mut();
            if d.contains(&id) {
                return None;
            }
            d.push(id);
            Some(Self)
        })
    }
}

impl Drop for Driving {
    fn drop(&mut self) {
        DRIVING.with(|d| d.borrow_mut().pop());
    }
}

impl<F: Future> Future for Run<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let Some(driving) = Driving::enter(this.clock.id) else {
            // Inside another run of this clock: it keeps time.
            return this.fut.as_mut().poll(cx);
        };
        let waker = match &this.waker {
            Some(w) => {
                let mut host = w.host.lock().unwrap_or_else(|p| p.into_inner());
                if !host.will_wake(cx.waker()) {
                    host.clone_from(cx.waker());
                }
                drop(host);
                Arc::clone(w)
            }
            None => {
                let w = Arc::new(RunWaker {
                    clock: Arc::clone(&this.clock),
                    host: Mutex::new(cx.waker().clone()),
                });
                this.waker = Some(Arc::clone(&w));
                w
            }
        };
        let before = this.clock.activity.load(Ordering::SeqCst);
        let quiet = this.idle_at.take() == Some(before);
        let polled = this
            .fut
            .as_mut()
            .poll(&mut Context::from_waker(&Waker::from(waker)));
        drop(driving);
        if let Poll::Ready(out) = polled {
            return Poll::Ready(out);
        }
        let after = this.clock.activity.load(Ordering::SeqCst);
        if after != before {
            // Something woke while it was polled: the host was told and polls it again.
            return Poll::Pending;
        }
        let mut st = this.clock.lock();
        if st.holds > 0 {
            st.parked.push(cx.waker().clone());
            return Poll::Pending;
        }
        if !quiet {
            // Nothing is ready: give the host a round before moving time.
            drop(st);
            this.idle_at = Some(after);
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let Some(&(due, _)) = st.timers.keys().next() else {
            // Waiting on something outside the clock: its wake polls this again.
            st.parked.push(cx.waker().clone());
            return Poll::Pending;
        };
        st.elapsed = st.elapsed.max(due);
        let later = st.timers.split_off(&(due, u64::MAX));
        let due_now = std::mem::replace(&mut st.timers, later);
        drop(st);
        for (_, w) in due_now {
            w.wake();
        }
        // The timers' wakers may belong to another executor: make sure this run goes on.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Polls `fut` on this thread until it is ready, parking while nothing is to be done.
fn block_on<F: Future>(mut fut: Pin<&mut F>) -> F::Output {
    let signal = Arc::new(Signal::default());
    let waker = Waker::from(Arc::clone(&signal));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        signal.wait();
    }
}

/// A wake-up flag the blocked thread waits on.
#[derive(Default)]
struct Signal {
    woken: Mutex<bool>,
    #[cfg(not(target_arch = "wasm32"))]
    cond: std::sync::Condvar,
}

impl Signal {
    fn wait(&self) {
        let mut woken = self.woken.lock().unwrap_or_else(|p| p.into_inner());
        #[cfg(not(target_arch = "wasm32"))]
        while !*woken {
            woken = self.cond.wait(woken).unwrap_or_else(|p| p.into_inner());
        }
        #[cfg(target_arch = "wasm32")]
        assert!(
            *woken,
            "VirtualRuntime::block_on: the future waits on something other than the virtual \
             clock, and a wasm32 thread cannot block: await VirtualRuntime::run instead"
        );
        *woken = false;
    }
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        *self.woken.lock().unwrap_or_else(|p| p.into_inner()) = true;
        #[cfg(not(target_arch = "wasm32"))]
        self.cond.notify_one();
    }
}

/// Returns `Pending` once, waking itself: lets everything else polled beside it run (what any
/// await point does in a real agent: a model's stream, a tool call).
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(move |cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_end_in_order_without_real_waiting() {
        let rt = VirtualRuntime::new();
        let order = Mutex::new(Vec::new());
        rt.block_on(async {
            let a = async {
                rt.sleep(Duration::from_secs(30)).await;
                order.lock().unwrap().push(("a", rt.elapsed()));
            };
            let b = async {
                rt.sleep(Duration::from_secs(10)).await;
                order.lock().unwrap().push(("b", rt.elapsed()));
                rt.sleep(Duration::from_secs(5)).await;
                order.lock().unwrap().push(("b2", rt.elapsed()));
            };
            futures::join!(a, b);
        });
        assert_eq!(
            order.into_inner().unwrap(),
            [
                ("b", Duration::from_secs(10)),
                ("b2", Duration::from_secs(15)),
                ("a", Duration::from_secs(30)),
            ]
        );
        assert_eq!(rt.now_ms(), VIRTUAL_EPOCH_MS + 30_000);
    }

    #[test]
    fn a_dropped_timer_does_not_move_the_clock() {
        let rt = VirtualRuntime::new();
        let out = rt.block_on(async {
            // The 8-second timer loses the race and is dropped; the clock must then jump to
            // 10 s, not stop at 8 s.
            let won = rt
                .timeout(Duration::from_secs(8), rt.sleep(Duration::from_secs(1)))
                .await;
            rt.sleep(Duration::from_secs(9)).await;
            (won, rt.elapsed())
        });
        assert_eq!(out, (Ok(()), Duration::from_secs(10)));
    }

    #[test]
    fn timeout_fires_on_virtual_time() {
        let rt = VirtualRuntime::new();
        let r = rt.block_on(rt.timeout(Duration::from_secs(5), std::future::pending::<()>()));
        assert_eq!(r, Err(Elapsed(Duration::from_secs(5))));
        assert_eq!(rt.elapsed(), Duration::from_secs(5));
    }

    #[test]
    fn work_that_is_ready_runs_before_time_moves() {
        // A channel fed by a busy producer: the consumer's 1-second timeout must not fire
        // while the producer still has messages to send.
        let rt = VirtualRuntime::new();
        let got = rt.block_on(async {
            let (mut tx, mut rx) = futures::channel::mpsc::channel::<u32>(1);
            let produce = async move {
                for i in 0..1000 {
                    futures::SinkExt::send(&mut tx, i).await.unwrap();
                    yield_now().await;
                }
            };
            let consume = async {
                let mut n = 0;
                while let Ok(Some(_)) = rt
                    .timeout(Duration::from_secs(1), futures::StreamExt::next(&mut rx))
                    .await
                {
                    n += 1;
                }
                n
            };
            futures::join!(produce, consume).1
        });
        assert_eq!(got, 1000);
        assert_eq!(rt.elapsed(), Duration::ZERO, "no timer fired");
    }

    #[test]
    fn a_hold_keeps_the_clock_still_until_the_outside_answers() {
        let rt = VirtualRuntime::new();
        let (tx, rx) = futures::channel::oneshot::channel::<&str>();
        let hold = rt.hold();
        let outside = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            tx.send("answer").unwrap();
            drop(hold);
        });
        let got = rt.block_on(rt.timeout(Duration::from_secs(1), rx));
        outside.join().unwrap();
        assert_eq!(got, Ok(Ok("answer")));
        assert_eq!(rt.elapsed(), Duration::ZERO);
    }

    #[test]
    fn a_run_inside_a_run_leaves_the_clock_to_the_outer_one() {
        let rt = VirtualRuntime::new();
        let t = rt.block_on(async {
            let inner = rt.run(async {
                rt.sleep(Duration::from_secs(3)).await;
                rt.elapsed()
            });
            let other = async {
                rt.sleep(Duration::from_secs(2)).await;
                rt.elapsed()
            };
            futures::join!(inner, other)
        });
        assert_eq!(t, (Duration::from_secs(3), Duration::from_secs(2)));
    }

    #[test]
    fn random_bytes_are_distinct_and_repeatable() {
        let (a, b) = (VirtualRuntime::new(), VirtualRuntime::new());
        let draw = |rt: &VirtualRuntime| {
            let mut x = [0u8; 20];
            rt.fill_random(&mut x);
            x
        };
        let (a1, a2) = (draw(&a), draw(&a));
        assert_ne!(a1, a2);
        assert_eq!(a1, draw(&b));
    }
}
