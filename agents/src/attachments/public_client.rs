//! [`PublicOnlyClient`]: the native download client for attachments. It connects only to
//! addresses the [`AddressPolicy`] allows, judged on the addresses a name *resolves to* (in
//! reqwest's DNS resolver, so the address checked is the address connected to: DNS
//! re-binding cannot slip a private address in after the check), follows no redirect itself
//! (the caller re-checks each hop), and ignores proxy settings (a proxy would resolve the
//! name out of our sight).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::address_policy::AddressPolicy;
use super::download::REFUSED_ADDRESS_MARKER;
use runway_core::adapter::BoxFuture;
use runway_core::http_client::{HttpClient, HttpError, HttpRequest, HttpResponse, ReqwestClient};

/// Longest wait for a TCP + TLS connection to a file server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An [`HttpClient`] that reaches public addresses only (see the module docs). Literal IP
/// hosts never reach a resolver, so the caller checks them with
/// [`AddressPolicy::check_url`] first, as [`download`](super::download) does on every hop.
#[derive(Debug, Clone)]
pub struct PublicOnlyClient {
    inner: ReqwestClient,
}

impl PublicOnlyClient {
    /// A client under `policy`.
    pub fn new(policy: AddressPolicy) -> Self {
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(PolicyResolver { policy }))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .unwrap_or_default();
        Self {
            inner: ReqwestClient::from_client(client),
        }
    }
}

impl HttpClient for PublicOnlyClient {
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
        self.inner.send(request)
    }
}

/// Resolves with the system resolver, then refuses the name if any address it has is not
/// allowed (a name with one private address among public ones is not trusted either).
struct PolicyResolver {
    policy: AddressPolicy,
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy;
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            if addrs.is_empty() || addrs.iter().any(|a| !policy.allows(a.ip())) {
                return Err(std::io::Error::other(REFUSED_ADDRESS_MARKER).into());
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    #[tokio::test]
    async fn localhost_is_refused_unless_loopback_is_allowed() {
        let strict = PolicyResolver {
            policy: AddressPolicy::default(),
        };
        let e = strict
            .resolve("localhost".parse().unwrap())
            .await
            .err()
            .expect("localhost refused");
        assert!(e.to_string().contains(REFUSED_ADDRESS_MARKER), "{e}");
        let tests = PolicyResolver {
            policy: AddressPolicy {
                allow_loopback: true,
            },
        };
        let addrs: Vec<SocketAddr> = tests
            .resolve("localhost".parse().unwrap())
            .await
            .expect("loopback allowed")
            .collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
        assert!(
            addrs
                .iter()
                .any(|a| a.ip() == IpAddr::V4(Ipv4Addr::LOCALHOST) || a.ip().is_loopback())
        );
    }
}
