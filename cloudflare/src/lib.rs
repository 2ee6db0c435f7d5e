//! # runway-cloudflare
//!
//! runway on Cloudflare Workers: the `runway-core` turn engine behind a Worker `fetch`
//! handler, with a SQLite-backed Durable Object per thread and KV for hosted files.
//!
//! On `wasm32` this crate is the Worker (built by `worker-build`, see `cloudflare/README.md`).
//! On native targets only its target-independent parts compile — the Worker ↔ Durable
//! Object wire format and what the Durable Object answers (runway-core's shared SQLite
//! store) — so the workspace's
//! native `cargo clippy` and `cargo test` cover them without building the Workers SDK.
#![warn(missing_docs)]

pub mod wire;

#[cfg(target_arch = "wasm32")]
mod console_log;
#[cfg(target_arch = "wasm32")]
mod entry;
#[cfg(target_arch = "wasm32")]
pub mod fetch_client;
#[cfg(target_arch = "wasm32")]
mod live;
#[cfg(target_arch = "wasm32")]
pub mod runtime;
#[cfg(target_arch = "wasm32")]
pub mod store;
#[cfg(target_arch = "wasm32")]
mod thread_object;
