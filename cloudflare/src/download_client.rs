//! [`DownloadClient`]: how the model agent downloads user attachments on Workers.
//!
//! A Worker cannot see or choose the address a name resolves to (the runtime's `fetch`
//! resolves and connects), so the address check runway makes natively on resolved addresses
//! cannot be made here. What runway does check, on every hop: https only, no literal IP host
//! that is private, loopback, link-local or reserved (`AddressPolicy::check_url`), and
//! redirects are not followed by `fetch` (`redirect: "manual"`) but re-checked and followed
//! hop by hop by the agent. Beyond that, a Worker runs on Cloudflare's network, not inside the
//! operator's: it has no route into a private network unless one is bound to it (a Tunnel or
//! VPC binding), which is what keeps a hostile link from reaching internal services there.

use runway_core::adapter::BoxFuture;
use runway_core::http_client::{HttpClient, HttpError, HttpRequest, HttpResponse};

/// `fetch` without following redirects, for
/// [`ModelAgent::with_download_client`](runway_agents::ModelAgent::with_download_client) and
/// [`ModelAgent::with_tool_client`](runway_agents::ModelAgent::with_tool_client).
#[derive(Debug, Clone, Copy, Default)]
pub struct DownloadClient;

impl HttpClient for DownloadClient {
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
        crate::fetch_client::send(request, worker::RequestRedirect::Manual)
    }
}
