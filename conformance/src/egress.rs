//! The rules Console applies to `base_url` before it connects anywhere, and
//! the address filter it applies to every connection.
//!
//! * https only;
//! * no `user:pass@` in the URL;
//! * no private, loopback, link-local, reserved or multicast address, checked
//!   after DNS resolution on every connection (see [`FilteringResolver`]);
//! * redirects are not followed (done by the HTTP client in every mode, see
//!   `transport`).
//!
//! In the emulator these rules form the *strict egress mode*, off by default
//! so that local agents (`http://127.0.0.1:8080`) can be checked. A refusal
//! is `EGRESS_REFUSED`, and no request is sent.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use url::{Host, Url};

/// Why Console would refuse to connect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressRefusal {
    /// The scheme is not https.
    #[error("base_url must use https, not {0}")]
    NotHttps(String),
    /// The URL embeds `user:pass@`.
    #[error("base_url must not embed credentials (user:pass@)")]
    EmbeddedCredentials,
    /// The URL has no host.
    #[error("base_url has no host")]
    NoHost,
    /// The URL's host is, or resolves to, an address Console will not
    /// connect to.
    #[error("{host} resolves to {addr}, a {class} address Console will not connect to")]
    ForbiddenAddress {
        /// The host name as written in the URL.
        host: String,
        /// The offending address.
        addr: IpAddr,
        /// Which kind of address it is.
        class: &'static str,
    },
    /// Every address the name resolved to was refused, or none was found.
    #[error("{host} did not resolve to any address Console may connect to")]
    NoAllowedAddress {
        /// The host name.
        host: String,
    },
}

/// The checks that need no DNS: scheme, credentials, and the host when it is
/// an IP literal. Pure: sends nothing.
pub fn check_base_url(url: &Url) -> Result<(), EgressRefusal> {
    if url.scheme() != "https" {
        return Err(EgressRefusal::NotHttps(url.scheme().to_owned()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(EgressRefusal::EmbeddedCredentials);
    }
    match url.host() {
        None => Err(EgressRefusal::NoHost),
        Some(Host::Domain(_)) => Ok(()),
        Some(Host::Ipv4(v4)) => check_addr(url.host_str().unwrap_or(""), IpAddr::V4(v4)),
        Some(Host::Ipv6(v6)) => check_addr(url.host_str().unwrap_or(""), IpAddr::V6(v6)),
    }
}

fn check_addr(host: &str, addr: IpAddr) -> Result<(), EgressRefusal> {
    match forbidden_class(addr) {
        None => Ok(()),
        Some(class) => Err(EgressRefusal::ForbiddenAddress {
            host: host.to_owned(),
            addr,
            class,
        }),
    }
}

/// The kind of a forbidden address (`"loopback"`, `"private"`,
/// `"link-local"`, `"reserved"`, `"multicast"`...), or `None` when Console
/// may connect to it.
pub fn forbidden_class(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    let class = match o {
        [0, ..] => "reserved (this network)",
        [10, ..] => "private",
        [100, b, ..] if (64..128).contains(&b) => "reserved (shared address space)",
        [127, ..] => "loopback",
        [169, 254, ..] => "link-local",
        [172, b, ..] if (16..32).contains(&b) => "private",
        [192, 0, 0, _] => "reserved (IETF protocol assignments)",
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => "reserved (documentation)",
        [192, 88, 99, _] => "reserved (6to4 relay)",
        [192, 168, ..] => "private",
        [198, b, ..] if b == 18 || b == 19 => "reserved (benchmarking)",
        [a, ..] if (224..240).contains(&a) => "multicast",
        [a, ..] if a >= 240 => "reserved",
        _ => return None,
    };
    Some(class)
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("reserved (unspecified)");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    // IPv4-compatible (deprecated) ::a.b.c.d
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        return Some("reserved (IPv4-compatible)");
    }
    // NAT64 well-known prefix 64:ff9b::/96 embeds an IPv4 address.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return forbidden_v4(v4);
    }
    let class = match s[0] {
        0x0100 if s[1..4] == [0, 0, 0] => "reserved (discard-only)",
        0x2001 if s[1] < 0x0200 => "reserved (IETF protocol assignments)",
        0x2001 if s[1] == 0x0db8 => "reserved (documentation)",
        0x2002 => "reserved (6to4)",
        0x3fff if s[1] < 0x1000 => "reserved (documentation)",
        a if (a & 0xfe00) == 0xfc00 => "private (unique local)",
        a if (a & 0xffc0) == 0xfe80 => "link-local",
        a if (a & 0xffc0) == 0xfec0 => "reserved (site-local)",
        a if (a & 0xff00) == 0xff00 => "multicast",
        _ => return None,
    };
    Some(class)
}

/// Checks every resolved address: a name is refused as soon as one of its
/// addresses is internal (a partly internal name is treated as internal), or
/// when it resolved to nothing. Pure.
pub fn filter_resolved(
    host: &str,
    addrs: impl IntoIterator<Item = SocketAddr>,
) -> Result<Vec<SocketAddr>, EgressRefusal> {
    let mut allowed = Vec::new();
    for addr in addrs {
        check_addr(host, addr.ip())?;
        allowed.push(addr);
    }
    if allowed.is_empty() {
        return Err(EgressRefusal::NoAllowedAddress {
            host: host.to_owned(),
        });
    }
    Ok(allowed)
}

/// A DNS resolver for the HTTP client that applies [`filter_resolved`] on
/// every connection, as Console does: a domain that starts resolving to an
/// internal address is refused on the very next request.
#[derive(Debug, Default, Clone, Copy)]
pub struct FilteringResolver;

impl reqwest::dns::Resolve for FilteringResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed = filter_resolved(&host, resolved)?;
            tracing::debug!(%host, ?allowed, "egress: resolved");
            let addrs: reqwest::dns::Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn https_public_domain_is_fine() {
        assert_eq!(
            check_base_url(&url("https://agent.example.com/fpt")),
            Ok(())
        );
        assert_eq!(check_base_url(&url("https://93.184.216.34/")), Ok(()));
    }

    #[test]
    fn http_credentials_and_internal_literals_are_refused() {
        assert!(matches!(
            check_base_url(&url("http://agent.example.com")),
            Err(EgressRefusal::NotHttps(_))
        ));
        assert_eq!(
            check_base_url(&url("https://u:p@agent.example.com")),
            Err(EgressRefusal::EmbeddedCredentials)
        );
        assert_eq!(
            check_base_url(&url("https://u@agent.example.com")),
            Err(EgressRefusal::EmbeddedCredentials)
        );
        for bad in [
            "https://127.0.0.1:8080",
            "https://10.1.2.3",
            "https://172.20.0.1",
            "https://192.168.1.1",
            "https://169.254.169.254",
            "https://100.64.0.1",
            "https://224.0.0.1",
            "https://240.0.0.1",
            "https://0.0.0.0",
            "https://[::1]",
            "https://[fe80::1]",
            "https://[fd00::1]",
            "https://[ff02::1]",
            "https://[::ffff:127.0.0.1]",
            "https://[2001:db8::1]",
        ] {
            assert!(
                matches!(
                    check_base_url(&url(bad)),
                    Err(EgressRefusal::ForbiddenAddress { .. })
                ),
                "{bad} should be refused"
            );
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ok in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "172.32.0.1"] {
            assert_eq!(forbidden_class(ok.parse().unwrap()), None, "{ok}");
        }
    }

    #[test]
    fn resolution_filter() {
        let loop4: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let public: SocketAddr = "8.8.8.8:0".parse().unwrap();
        assert_eq!(filter_resolved("x", [public]), Ok(vec![public]));
        assert!(filter_resolved("x", [public, loop4]).is_err());
        assert!(matches!(
            filter_resolved("x", [loop4]),
            Err(EgressRefusal::ForbiddenAddress { .. })
        ));
        assert!(matches!(
            filter_resolved("x", []),
            Err(EgressRefusal::NoAllowedAddress { .. })
        ));
    }
}
