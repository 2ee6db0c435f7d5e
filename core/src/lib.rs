//! runway-core
