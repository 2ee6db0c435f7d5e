//! What a platform provides: time, sleep and entropy ([`runtime::Runtime`]; on tokio,
//! [`tokio::TokioRuntime`]), and the `Send` bounds that hold on native targets only
//! ([`maybe_send`]).

pub(crate) mod maybe_send;
pub(crate) mod runtime;
#[cfg(feature = "tokio")]
pub(crate) mod tokio;
