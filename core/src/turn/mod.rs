//! One turn, from the first frame to the committed recording.
//!
//! - [`engine`]: what every turn runs with ([`engine::Engine`], its settings in [`config`]);
//!   [`plan`]: what a protocol's route hands it;
//! - [`driver`]: one turn: its first frame (and padding) in the body before anything else
//!   runs, then claim → run → commit;
//! - [`wait`]: the one wait loop every await of a turn goes through, and [`timers`]: the
//!   heartbeat, deadline, store-call timeout, send grace, supersede check and duplicate poll,
//!   as data;
//! - [`link`]: the bytes going out, and what is known of the client;
//! - [`resume_link`]: AG-UI's rule that an open question takes only its answer;
//! - [`commit`]: what a finished turn stores; [`usage_record`]: its usage, recorded after it;
//!   [`hosting`]: files the agent hands over;
//! - [`flow`]: the back-pressure that keeps memory following what clients read; [`body`]: the
//!   streamed body an adapter returns; [`abort_tail`]: what ends it if the process dies.

pub(crate) mod abort_tail;
pub(crate) mod body;
pub(crate) mod commit;
pub(crate) mod config;
pub(crate) mod driver;
pub(crate) mod engine;
pub(crate) mod flow;
pub(crate) mod hosting;
pub(crate) mod link;
pub(crate) mod plan;
pub(crate) mod resume_link;
pub(crate) mod timers;
pub(crate) mod usage_record;
pub(crate) mod wait;
