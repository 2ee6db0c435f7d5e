//! HTTP for agents: call models and business APIs from a turn, on every runtime.
//!
//! An agent uses [`Turn::http`](crate::Turn::http), an [`Http`] bound to its turn: requests
//! end by the turn's deadline and when the turn ends, bodies stream as they arrive, and no URL
//! or header value reaches a log. See [`Http`] for an example.
//!
//! A platform provides an [`HttpClient`] and hands it to
//! [`Runway::with_http_client`](crate::adapter::Runway::with_http_client): `ReqwestClient` (feature
//! `reqwest`) on native targets, `runway-cloudflare`'s `fetch` client on Workers.

mod body;
mod client;
mod error;
pub(crate) mod handle;
mod header_names;
#[cfg(feature = "reqwest")]
mod reqwest_client;
mod response;
pub(crate) mod turn_clock;

pub use body::{BoxByteStream, HttpBody};
pub use client::{HttpClient, HttpRequest};
pub use error::HttpError;
pub use handle::{Http, RequestBuilder};
#[cfg(feature = "reqwest")]
pub use reqwest_client::ReqwestClient;
pub use response::{DEFAULT_BODY_LIMIT, HttpResponse};
