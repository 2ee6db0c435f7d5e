//! MCP tools: the model agent as a client of Model Context Protocol servers (Streamable HTTP),
//! configured by `[[mcp]]` entries of the tools file.
//!
//! The protocol's types come from the official Rust SDK (`rmcp`, without default features).
//! Its client is not used: it runs its service loop on a spawned tokio task with tokio timers
//! and `std::time::Instant`, none of which exist on Workers (`wasm32-unknown-unknown`), and a
//! task outliving the turn would escape the turn's deadline and cancellation. So the transport
//! here is hand-written over the turn's `Http`, the same on every runtime.

// Built without the `mcp` feature, the client below is never called (`McpServers` lists no
// server), so its code is not compiled into the binary.
#![cfg_attr(not(feature = "mcp"), allow(dead_code, unused_imports))]

mod call_result;
mod connection;
mod deadline;
mod mcp_tool;
mod person_sessions;
mod server_config;
mod transport;

pub(crate) use mcp_tool::{McpCatalog, McpServers, McpTool, may_offer, person_of};
pub(crate) use person_sessions::Person;
pub use server_config::{McpApproval, McpServer};
