//! # runway-conformance
//!
//! A Console emulator: it plays Console's client side against any External
//! Agent over HTTP and reports, with Console's own error codes, what Console
//! would do with the agent's answers. It is written from the contract
//! ("Console's External Agent contract") only: raw HTTP, JSON and rules. It
//! deliberately does not depend on `runway-core`, so a misreading of the
//! contract in the core cannot hide in both.
//!
//! ## Layout
//!
//! | module | what it does |
//! |---|---|
//! | [`sse_reader`] | Console's minimal SSE reader (sans I/O) |
//! | [`frame_rules`] | every frame rule, sans I/O: feed frames, get findings |
//! | [`interrupt`] | the question card (interrupt) validation |
//! | [`health`] | `GET /health` and Console's available/unavailable fold |
//! | [`deadlines`] | the deadlines and limits, with the contract's defaults |
//! | [`egress`] | the `base_url` rules (strict egress mode) |
//! | [`transport`] | the HTTP client (redirects never followed), header set, failure classification |
//! | [`run_body`] | the `POST /runs` body and 63-bit string ids |
//! | [`response_head`] | the `POST /runs` status and headers, judged (sans I/O) |
//! | [`stream_judge`] | the stream body judged chunk by chunk: limits, separators, frame rules (sans I/O) |
//! | [`first_frame_hold`] | whether the path held the first frame, from each chunk's arrival time (sans I/O) |
//! | [`turn`] | one turn played under the deadlines, judged by the rules |
//! | [`recorded_turn`] | a turn someone else recorded (the playground's browser), judged by the same rules |
//! | [`test_button`] | Console's Test button |
//! | [`checklist`] | the onboarding checklist against a live agent |
//! | [`report`] | the checklist report (text and JSON) |
//! | [`cli`] | `runway check`, entry point [`cli_main`] |
//! | [`findings`] | the codes and findings |
//! | [`agui`] | AG-UI 1.0 endpoints: the event schema and run lifecycle (sans I/O), and their checklist |
//!
//! ## Errors and warnings
//!
//! An **error** is what makes Console fail the turn or refuse the endpoint
//! (always one of Console's eleven codes), or an onboarding checklist item
//! that is not met. A **warning** is what Console tolerates but the user
//! suffers from. Every finding has exactly one code, and a code always has
//! the same severity.
//!
//! | code | severity | when | why this severity |
//! |---|---|---|---|
//! | `ENDPOINT_UNAVAILABLE` | error | `/health` folds to unavailable: connection failure, 401/403, other non-2xx, a 3xx (not followed), non-JSON body, `status` `down`/missing/unknown | Console refuses every turn |
//! | `PROTOCOL_MISMATCH` | error | `/health` `protocolVersions` lacks `"1"`; `POST /runs` answered 2xx without `Content-Type: text/event-stream` (the emulator's choice: the contract names no code for it, and Console's reader would see no frame) | Console refuses, or the turn shows nothing |
//! | `EGRESS_REFUSED` | error | strict egress mode only: `base_url` not https, embeds `user:pass@`, or its host is/resolves to a private, loopback, link-local, reserved or multicast address (checked on every connection) | nothing is sent |
//! | `CONNECT_TIMEOUT` | error | no TCP/TLS handshake within the connect deadline (5 s), on either endpoint | the turn fails |
//! | `UPSTREAM_REJECTED` | error | `POST /runs` answered 3xx (redirects are never followed) or 4xx | the turn fails |
//! | `UPSTREAM_UNAVAILABLE` | error | `POST /runs` answered 5xx, or the connection failed (refused, DNS, TLS) | the turn fails |
//! | `TTFB_TIMEOUT` | error | no frame or comment within the first-frame deadline (10 s) of the response headers, or no headers within connect + first-frame deadlines | the turn fails |
//! | `IDLE_TIMEOUT` | error | more than the idle deadline (30 s) without a chunk mid-stream | the turn fails |
//! | `STREAM_TRUNCATED` | error | the connection broke before the final frame (reset, incomplete chunked body) | the turn fails, what arrived is stored |
//! | `LIMIT_EXCEEDED` | error | a line over 256 KiB, a body over 8 MiB, over 20,000 data frames, or the whole-turn deadline (5 min; the contract names no code for it) | the turn fails |
//! | `INTERRUPT_REJECTED` | error | `RUN_FINISHED` interrupt: not exactly one interrupt, unknown `kind`, a missing content field, a `review` item without `name`, an invalid `authorizeUrl` | the only malformed frame that fails the turn |
//! | `NO_FINAL_FRAME` | warning | the stream closed cleanly without `RUN_FINISHED`/`RUN_ERROR` | Console stores a possibly truncated answer as complete |
//! | `FRAMES_LEFT_OPEN` | warning | `TEXT_MESSAGE_START`, `TOOL_CALL_START`, `STEP_STARTED` or `REASONING_MESSAGE_START` still open at the final frame | Console closes them (but never invents a `TOOL_CALL_RESULT`) |
//! | `EMPTY_BUBBLE` | warning | a text message without content (or only whitespace), or a successful turn with nothing to show | the user sees an empty bubble; `RUN_ERROR` was due |
//! | `FRAME_AFTER_FINAL` | warning | a data frame after the final frame | it is lost |
//! | `DUPLICATE_FILE_CHANNEL` | warning | one file url in `STATE_SNAPSHOT`/`STATE_DELTA` artifacts and in `CUSTOM` `file` | two cards for one file |
//! | `MISSING_STREAM_HEADERS` | warning | no `Cache-Control: no-cache` or no `X-Accel-Buffering: no` | a proxy may buffer the stream |
//! | `HEARTBEAT_GAP` | warning | silence between chunks longer than 15 s (a turn that failed with a timeout does not also get it) | close to the idle deadline; fails the heartbeat line of the checklist |
//! | `FIRST_FRAME_HELD` | warning | the first frame arrived more than 2 s after the request, or after 1 s in one delivery with a heartbeat written later (see [`first_frame_hold`]); names `RUNWAY_FIRST_FLUSH_BYTES` and `RUNWAY_HEARTBEAT_SECS` | a path that holds small chunks; on a busy turn the first frame then waits for the next write and can miss the 10 s deadline |
//! | `RUN_STARTED_SENT` | warning | the agent sent `RUN_STARTED` | Console emits it itself; dropped |
//! | `REASONING_END_SENT` | warning | the agent sent `REASONING_END` | Console emits it itself; dropped |
//! | `ENVELOPE_MISMATCH` | warning | `run_id`/`threadId` present and different from the request | the frame is discarded |
//! | `UNKNOWN_FRAME_TYPE` | warning | a type Console does not handle | dropped without breaking the turn |
//! | `MALFORMED_FRAME` | warning | not a JSON object, no string `type`, a required field missing or of the wrong type, `outcome.type` neither success nor interrupt | dropped without breaking the turn |
//! | `MISSING_FRAME_SEPARATOR` | warning | two `data:` lines with no blank line between them | Console reads one frame per line, but the contract asks for a blank line and standard SSE readers (proxies, debugging tools) merge such lines |
//! | `STATE_KEY_DROPPED` | warning | a state key other than `todos`, `artifacts`, `files` | that key is dropped |
//! | `ORDERING` | warning | text open across a tool call, content for a message not open, a reused messageId/toolCallId, a tool call after the answer, a result for an unknown call, a step/reasoning end without start | the user sees text and tools out of order |
//! | `HEALTH_DEGRADED` | warning | `/health` says `degraded` | turns still go through |
//! | `AUTH_NOT_ENFORCED` | error | a request without an agreed header, or with a wrong value, was accepted | anyone can call the agent |
//! | `AUTH_NOT_401` | warning | refused, but not with 401 | the contract asks for 401 |
//! | `CONTEXT_LOST` | error | turn 2 on a thread does not know turn 1's token | the agent must keep its own context by threadId |
//! | `NOT_IDEMPOTENT` | error | replaying a completed runId did not return the earlier result | a replayed turn runs twice |
//! | `BRANCH_LEAK` | error | `T:<branch>` saw `T`'s context | branches are different conversations |
//! | `RUN_ID_REUSE_REPLAYED` | warning | a runId reused with a different body was answered with the earlier turn's text | likely a client bug hidden by the agent |
//!
//! ## What cannot be observed from outside
//!
//! Constant-time comparison of credentials is not measured. "Must not run
//! the agent again" on a replay is detected only through the answer: the
//! replay is sent after a second turn on the same thread, so an agent that
//! re-runs it with its context answers differently; an agent without
//! context that re-runs deterministically is indistinguishable from a
//! replay (its context line fails anyway).
//!
//! ## How each code is tested
//!
//! The emulator's own tests (`conformance/tests/`) start small agents on
//! `127.0.0.1:0` (axum, in the test code): one correct agent, which triggers
//! no finding at all, and one broken agent per code, each asserted to
//! trigger that code and nothing else. All traffic stays on loopback and is
//! bounded by short deadlines (first frame and connect 800 ms, idle 1.2 s).
//!
//! * `EGRESS_REFUSED`: unit tests of the pure [`egress::check_base_url`] and
//!   [`egress::filter_resolved`], plus live strict-mode runs against the
//!   loopback agent (an `http://127.0.0.1` URL, refused by the pre-check,
//!   and `https://localhost`, refused by the resolver) asserting the agent
//!   received zero requests.
//! * `CONNECT_TIMEOUT`: a loopback listener with backlog 0 that never
//!   accepts, filled with a few connections until the kernel drops SYNs;
//!   the emulator's connect then times out. Also a unit test of the
//!   classification.
//! * `STREAM_TRUNCATED`: the agent's body stream returns an error, so the
//!   server aborts the chunked response without its last chunk.
//! * `FIRST_FRAME_HELD`: a real TCP proxy on loopback in front of the
//!   correct agent that holds what it reads until N bytes or the agent's
//!   next write, on a slow turn: flagged; the same proxy with the agent's
//!   first write padded past N, and a proxy that forwards at once: not.
//! * `UPSTREAM_UNAVAILABLE` / `ENDPOINT_UNAVAILABLE` on a refused
//!   connection: a port that was bound and released.
//! * The checklist codes (`AUTH_*`, `CONTEXT_LOST`, `NOT_IDEMPOTENT`,
//!   `BRANCH_LEAK`, `RUN_ID_REUSE_REPLAYED`) run the full checklist against
//!   the correct agent with one behaviour switched off.
//!
//! ## Entry point
//!
//! The `runway` binary calls [`cli_main`] with the arguments after `check`.
#![warn(missing_docs)]

pub mod agui;
pub mod checklist;
pub mod cli;
pub mod deadlines;
pub mod egress;
pub mod findings;
pub mod first_frame_hold;
pub mod frame_rules;
pub mod health;
pub mod interrupt;
pub mod outcome;
pub mod recorded_turn;
pub mod report;
pub mod response_head;
pub mod run_body;
pub mod sse_reader;
pub mod stream_judge;
pub mod test_button;
pub mod transport;
pub mod turn;

pub use checklist::{CheckConfig, run_checklist};
pub use cli::{CheckArgs, cli_main, cli_main_with_output};
pub use deadlines::{Deadlines, StreamLimits};
pub use findings::{Code, Finding, Severity};
pub use frame_rules::{FrameRules, RunIds};
pub use health::{HealthVerdict, fold_health, probe_health};
pub use outcome::{ReadMode, TurnOutcome};
pub use recorded_turn::{RecordedTurn, TurnVerdict, judge_recorded_turn};
pub use report::{CheckItem, CheckReport, Status};
pub use run_body::{Caller, RunBody};
pub use test_button::{TestButtonReport, press_test};
pub use transport::{HeaderSet, Settings, Transport};
pub use turn::{TurnReport, run_turn};
