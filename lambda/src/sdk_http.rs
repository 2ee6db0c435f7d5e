//! The AWS SDK's HTTPS client: the SDK's own default (hyper with rustls, connectors cached per
//! timeout settings, proxies from `HTTP(S)_PROXY`/`NO_PROXY`), but with rustls on ring, the
//! crypto provider reqwest already links for the agents' requests, instead of the SDK's
//! default aws-lc-rs. One crypto library in the package instead of two: about 1 MB less to
//! upload and load at every cold start (BENCHMARKS.md, "AWS Lambda"). ring offers no
//! post-quantum key exchange, which the SDK's default prefers; the TLS connections to
//! DynamoDB use X25519 instead. SSM is reached through the agents' reqwest client
//! (`crate::ssm_request`), also on ring.

use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::tls::Provider;
use aws_smithy_http_client::tls::rustls_provider::CryptoMode;
use aws_smithy_http_client::{Builder, ConnectorBuilder};
use aws_smithy_runtime_api::client::http::SharedHttpClient;

/// The HTTPS client every SDK client of the function uses (set on the shared `SdkConfig`).
pub(crate) fn https_client() -> SharedHttpClient {
    // What aws-smithy-runtime's `default_https_client` builds for the latest behaviour
    // version, with the crypto mode changed.
    Builder::new().build_with_connector_fn(|settings, components| {
        let mut connector =
            ConnectorBuilder::default().tls_provider(Provider::Rustls(CryptoMode::Ring));
        connector.set_connector_settings(settings.cloned());
        if let Some(components) = components {
            connector.set_sleep_impl(components.sleep_impl());
        }
        connector.set_proxy_config(Some(ProxyConfig::from_env()));
        connector.build()
    })
}
