//! The frame writer allocates nothing per frame beyond its output buffer: frames are encoded
//! straight into the buffer (no `serde_json::Value`, no intermediate string). Counted with a
//! counting global allocator (dhat, in testing mode); a test binary of its own, because the
//! allocator is per process.

use runway_core::adapter::{Ending, FrameWriter};
use runway_core::protocol::StreamLimits;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const FRAMES: u64 = 2_000;

fn allocations(f: impl FnOnce()) -> u64 {
    let before = dhat::HeapStats::get().total_blocks;
    f();
    dhat::HeapStats::get().total_blocks - before
}

#[test]
fn frames_cost_no_allocation_beyond_the_output_buffer() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let delta = "Gold fell 0.5% yesterday, \"quoted\" and é. ";

    // Drained once at the end: only the buffers' geometric growth allocates (output,
    // recording, the kept answer): a few dozen blocks for thousands of frames.
    let mut w = FrameWriter::new("01K5BH5PSX926W6RZ6YR1P8WWV", StreamLimits::default());
    w.start();
    let n = allocations(|| {
        for i in 0..FRAMES {
            match i % 4 {
                0 | 1 => w.text(delta),
                2 => w.reasoning(delta),
                _ => {
                    w.tool_call_start("t", "lookup");
                    w.tool_call_args("t", "{\"q\":\"gold\"}");
                }
            }
        }
    });
    let frames = w.frame_count() as u64;
    eprintln!("undrained: {n} allocations for {frames} frames");
    assert!(frames >= FRAMES, "{frames} frames");
    assert!(
        n <= 100,
        "{n} allocations for {frames} frames: the writer allocates per frame"
    );

    // Drained after every delta, as the engine does: one new output buffer per drain, and
    // nothing else per frame.
    let mut w = FrameWriter::new("01K5BH5PSX926W6RZ6YR1P8WWV", StreamLimits::default());
    w.start();
    let mut bytes = 0;
    let n = allocations(|| {
        for _ in 0..FRAMES {
            w.text(delta);
            bytes += w.take_output().len();
        }
    });
    assert!(bytes > 0);
    eprintln!("drained: {n} allocations for {FRAMES} frames");
    assert!(
        n <= FRAMES + 100,
        "{n} allocations for {FRAMES} drained frames: more than one buffer each"
    );
    w.finish(Ending::Success);
    assert!(w.take_final().is_some());
}
