//! Helpers shared by core's integration tests.

pub mod lowkey_schema;
