//! runway-conformance
