//! AG-UI 1.0 endpoints judged as an AG-UI client would (`runway check --protocol agui`): the
//! event schema and the run lifecycle sans I/O, and the checklist against a live endpoint.

pub mod checklist;
pub mod event_schema;
pub mod run_rules;
