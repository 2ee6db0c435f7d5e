//! The sans-I/O writers: what an agent says, as the bytes of a protocol.
//!
//! One [`writer::Writer`] keeps every protocol's stream right (limits, the held-back final
//! frame, the recording, keep-alives, the abort tail); each protocol supplies only its
//! encoding: Console's SSE frames ([`console`], [`crate::adapter::FrameWriter`]) or Lowkey's
//! NDJSON lines ([`lowkey`], [`crate::adapter::NdjsonWriter`]). The engine drives either the same
//! way.
//!
//! Beside them: the ledger of a turn's output and counts ([`ledger`]), the recording a replay
//! sends and its process-wide bound ([`recorder`], [`recording`]), JSON Patch as an AG-UI client
//! applies it ([`json_patch`]), and JSON string encoding
//! ([`json_text`]).

pub(crate) mod console;
pub(crate) mod json_patch;
pub(crate) mod json_text;
pub(crate) mod ledger;
pub(crate) mod lowkey;
pub(crate) mod recorder;
pub(crate) mod recording;
pub(crate) mod writer;
