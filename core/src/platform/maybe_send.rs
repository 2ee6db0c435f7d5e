//! `Send` where the runtime is multi-threaded, nothing where it is not.
//!
//! On tokio (the local server, AWS Lambda) every future the engine drives is spawned on a
//! work-stealing runtime and must be `Send`. On Cloudflare Workers (`wasm32`) the isolate is
//! single-threaded and the platform's own futures (`JsFuture`, KV, Durable Object stubs) are
//! `!Send`. The core's traits bound their futures by [`MaybeSend`], which means `Send` on native
//! targets and nothing on `wasm32`, so one trait definition serves both worlds.

use std::future::Future;
use std::pin::Pin;

/// `Send` on native targets; implemented by every type on `wasm32`.
#[cfg(not(target_arch = "wasm32"))]
pub trait MaybeSend: Send {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Send + ?Sized> MaybeSend for T {}

/// `Send` on native targets; implemented by every type on `wasm32`.
#[cfg(target_arch = "wasm32")]
pub trait MaybeSend {}
#[cfg(target_arch = "wasm32")]
impl<T: ?Sized> MaybeSend for T {}

/// `Sync` on native targets; implemented by every type on `wasm32`.
#[cfg(not(target_arch = "wasm32"))]
pub trait MaybeSync: Sync {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Sync + ?Sized> MaybeSync for T {}

/// `Sync` on native targets; implemented by every type on `wasm32`.
#[cfg(target_arch = "wasm32")]
pub trait MaybeSync {}
#[cfg(target_arch = "wasm32")]
impl<T: ?Sized> MaybeSync for T {}

/// A boxed future that is `Send` on native targets and local on `wasm32`.
#[cfg(not(target_arch = "wasm32"))]
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
/// A boxed future that is `Send` on native targets and local on `wasm32`.
#[cfg(target_arch = "wasm32")]
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;
