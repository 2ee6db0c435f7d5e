//! An OAuth 2.0 provider users connect their accounts at (`[providers.KEY]` in the tools
//! file).

use std::collections::BTreeMap;

/// One provider: where users authorize, where codes become tokens, and who runway is there.
#[derive(Clone, PartialEq, Eq)]
pub struct Provider {
    /// Its key (`[providers.KEY]`, what tools name in `auth = "KEY"`).
    pub key: String,
    /// Its display name, the card's `provider` ("Acme CRM").
    pub name: String,
    /// Its authorization and token endpoints, or the issuer that publishes them.
    pub endpoints: Endpoints,
    /// runway's client id there.
    pub client_id: String,
    /// runway's client secret there (none: a public client, PKCE alone).
    pub client_secret: Option<String>,
    /// The scopes asked for.
    pub scopes: Vec<String>,
    /// Its token revocation endpoint (RFC 7009, `revocation_url`): where `runway connections
    /// --revoke` revokes a connection's tokens before deleting them from the vault (https, or
    /// http on a loopback address). None: the tokens are only deleted.
    pub revocation_url: Option<url::Url>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("key", &self.key)
            .field("name", &self.name)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| ".."))
            .field("scopes", &self.scopes)
            .field("revocation_url", &self.revocation_url)
            .finish_non_exhaustive()
    }
}

/// Where a provider's endpoints come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoints {
    /// Configured (`authorize_url`, `token_url`).
    Given(ProviderEndpoints),
    /// Read from the issuer's metadata at first use (`issuer`, see
    /// [`discovery`](crate::connect::discovery)): https, or http on a loopback address.
    Issuer(url::Url),
    /// An MCP server's own authorization (`[[mcp]] auth = "oauth"`): everything — the
    /// authorization server, its endpoints, runway's client there, the scopes and the
    /// `resource` indicator — is read from the MCP server at this URL at first use (RFC 9728
    /// metadata, then RFC 8414, then a Client ID Metadata Document or an RFC 7591
    /// registration: the README's connected-accounts section); the provider's own
    /// `client_id`, `client_secret` and `scopes` are not used. Feature `mcp-authorization`.
    #[cfg(feature = "mcp-authorization")]
    McpServer(url::Url),
}

/// The provider key of the MCP server `name` with `auth = "oauth"`: its connections are
/// kept in the vault under it (no `[providers]` key can take it: keys with `:` are refused).
pub fn mcp_provider_key(name: &str) -> String {
    format!("mcp:{name}")
}

/// A provider's authorization and token endpoints (https, or http on a loopback address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderEndpoints {
    /// The authorization endpoint: the popup goes there.
    pub authorize_url: url::Url,
    /// The token endpoint: codes and refresh tokens become tokens there.
    pub token_url: url::Url,
}

/// Why a provider URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderUrlError {
    /// Not an absolute URL.
    #[error("not a URL")]
    NotAUrl,
    /// Neither https nor http on a loopback address.
    #[error("must be https (http only on a loopback address such as 127.0.0.1)")]
    NotHttps,
    /// `user:pass@` in the URL.
    #[error("must not embed credentials")]
    Credentials,
}

/// `raw` as a provider URL: https, or http on a loopback address (local providers, tests),
/// without embedded credentials.
///
/// # Errors
/// The rule it breaks.
pub fn provider_url(raw: &str) -> Result<url::Url, ProviderUrlError> {
    let url = url::Url::parse(raw.trim()).map_err(|_| ProviderUrlError::NotAUrl)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ProviderUrlError::Credentials);
    }
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => return Err(ProviderUrlError::NotAUrl),
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(ProviderUrlError::NotHttps),
    }
}

/// The providers of a deployment, by key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Providers(BTreeMap<String, Provider>);

impl Providers {
    /// No providers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `provider` (replacing one with its key).
    pub fn add(&mut self, provider: Provider) {
        self.0.insert(provider.key.clone(), provider);
    }

    /// The provider `key`.
    pub fn get(&self, key: &str) -> Option<&Provider> {
        self.0.get(key)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every provider, by key.
    pub fn iter(&self) -> impl Iterator<Item = &Provider> {
        self.0.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_or_loopback_http_only() {
        assert!(provider_url("https://acme.example/oauth/token").is_ok());
        assert!(provider_url("http://127.0.0.1:9000/token").is_ok());
        assert!(provider_url("http://[::1]:9000/token").is_ok());
        assert!(provider_url("http://localhost/token").is_ok());
        assert_eq!(
            provider_url("http://acme.example/token"),
            Err(ProviderUrlError::NotHttps)
        );
        assert_eq!(
            provider_url("https://u:p@acme.example/"),
            Err(ProviderUrlError::Credentials)
        );
        assert_eq!(provider_url("acme"), Err(ProviderUrlError::NotAUrl));
    }
}
