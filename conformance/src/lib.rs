//! runway-conformance (docs written below)
#![warn(missing_docs)]

pub mod deadlines;
pub mod egress;
pub mod findings;
pub mod frame_rules;
pub mod health;
pub mod interrupt;
pub mod run_body;
pub mod sse_reader;
pub mod transport;
pub mod turn;
