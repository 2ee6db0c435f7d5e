//! # runway-cloudflare
//!
//! runway on Cloudflare Workers: the `runway-core` turn engine behind a Worker `fetch`
//! handler, with a SQLite-backed Durable Object per thread and KV for hosted files.
//!
//! Your Worker is a crate of its own that depends on this one and calls `fetch` from its
//! `#[event(fetch)]` (see `cloudflare/README.md`, or `runway new`); the `RunwayThread` Durable
//! Object class comes with it. With the `builtin-worker` feature this crate is itself a Worker
//! serving the built-in agents (`RUNWAY_AGENT`) through the same `fetch`: the repo's own
//! Worker, built by `worker-build` in `cloudflare/`. The model agent is in it with the `model`
//! feature too (`RUNWAY_CF_FEATURES` for `infra/cloudflare/build`).
//!
//! On native targets only its target-independent parts compile — the Worker ↔ Durable
//! Object wire format and what the Durable Object answers (runway-core's shared SQLite store) — so the workspace's
//! native `cargo clippy` and `cargo test` cover them without building the Workers SDK.
#![warn(missing_docs)]

pub mod wire;
pub mod worker_config;

#[cfg(target_arch = "wasm32")]
mod analytics;
#[cfg(all(target_arch = "wasm32", feature = "builtin-worker"))]
mod builtin_worker;
#[cfg(target_arch = "wasm32")]
mod console_log;
#[cfg(all(target_arch = "wasm32", feature = "model"))]
pub mod download_client;
#[cfg(target_arch = "wasm32")]
mod entry;
#[cfg(target_arch = "wasm32")]
pub mod fetch_client;
#[cfg(all(target_arch = "wasm32", feature = "model"))]
pub mod kv_attachments;
#[cfg(target_arch = "wasm32")]
mod live;
#[cfg(target_arch = "wasm32")]
pub mod runtime;
#[cfg(target_arch = "wasm32")]
pub mod store;
#[cfg(target_arch = "wasm32")]
mod thread_object;

#[cfg(target_arch = "wasm32")]
pub use entry::{
    ANALYTICS_BINDING, FILES_BINDING, THREADS_BINDING, fetch, fetch_with, fetch_with_providers,
};
