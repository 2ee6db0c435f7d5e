//! Which addresses an attachment download may reach: public unicast only (the SSRF guard).
//!
//! An attachment link comes from the chat, so a hostile one could name the agent's own
//! network (a cloud metadata service, a database on `10.x`, the host's loopback). The guard
//! is applied to every address a host *resolves to* (natively, in the DNS resolver of the
//! download client, so a name that re-binds between check and connect cannot slip through),
//! to literal IP hosts in each URL, and to each redirect hop.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What attachment downloads may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddressPolicy {
    /// `RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK=1`: loopback addresses (and `http://` to a loopback
    /// host) are allowed too. For tests only; never in production.
    pub allow_loopback: bool,
}

/// Why a download was refused before any connection was made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Not `https://` (or `http://` to loopback under `allow_loopback`).
    #[error("the link is not https")]
    NotHttps,
    /// The host is, or resolves to, an address that is not public.
    #[error("the link points to a private or reserved address")]
    PrivateAddress,
    /// The URL cannot be used (no host, credentials in it…).
    #[error("the link is not a usable URL")]
    BadUrl,
}

impl AddressPolicy {
    /// True if a connection to `ip` is allowed.
    pub fn allows(&self, ip: IpAddr) -> bool {
        is_public(ip) || (self.allow_loopback && is_loopback(ip))
    }

    /// Checks a URL before it is requested: the scheme, and the host when it is a literal IP
    /// (a name is checked when it is resolved).
    ///
    /// # Errors
    /// Why it is refused.
    pub fn check_url(&self, url: &url::Url) -> Result<(), Refusal> {
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refusal::BadUrl);
        }
        let host = url.host().ok_or(Refusal::BadUrl)?;
        let literal = match host {
            url::Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
            url::Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
            url::Host::Domain(_) => None,
        };
        match url.scheme() {
            "https" => {}
            "http" if self.allow_loopback => {
                // Plain http only to a loopback host: never to a name that could resolve
                // anywhere, never to another machine.
                let loopback_host = match (literal, &host) {
                    (Some(ip), _) => is_loopback(ip),
                    (None, url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
                    _ => false,
                };
                if !loopback_host {
                    return Err(Refusal::NotHttps);
                }
            }
            _ => return Err(Refusal::NotHttps),
        }
        match literal {
            Some(ip) if !self.allows(ip) => Err(Refusal::PrivateAddress),
            _ => Ok(()),
        }
    }
}

/// True for a loopback address (`127.0.0.0/8`, `::1`, and `::ffff:127.x.y.z`).
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.is_loopback(),
            None => v6.is_loopback(),
        },
    }
}

/// True for a globally routable unicast address: not private, loopback, link-local,
/// shared (CGNAT), documentation, benchmarking, multicast, broadcast, reserved or unspecified;
/// an IPv4-mapped IPv6 address is judged as its IPv4 address, and IPv6 transition ranges that
/// embed or relay to other addresses (NAT64, 6to4, Teredo, IPv4-compatible) are refused.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = a == 0                                  // 0.0.0.0/8 "this network"
        || a == 10                                        // 10.0.0.0/8 private
        || (a == 100 && (64..128).contains(&b))           // 100.64.0.0/10 shared (CGNAT)
        || a == 127                                       // loopback
        || (a == 169 && b == 254)                         // link-local (cloud metadata)
        || (a == 172 && (16..32).contains(&b))            // 172.16.0.0/12 private
        || (a == 192 && b == 0 && c == 0)                 // 192.0.0.0/24 IETF assignments
        || (a == 192 && b == 0 && c == 2)                 // TEST-NET-1
        || (a == 192 && b == 88 && c == 99)               // 6to4 relay anycast
        || (a == 192 && b == 168)                         // 192.168.0.0/16 private
        || (a == 198 && (b == 18 || b == 19))             // 198.18.0.0/15 benchmarking
        || (a == 198 && b == 51 && c == 100)              // TEST-NET-2
        || (a == 203 && b == 0 && c == 113)               // TEST-NET-3
        || a >= 224; // multicast 224/4, reserved 240/4, broadcast
    !refused
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4); // ::ffff:a.b.c.d is an IPv4 connection
    }
    let s = ip.segments();
    // Only global unicast (2000::/3) can be public; everything else (::, ::1,
    // IPv4-compatible ::/96, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, discard 100::/64, ULA
    // fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8) is refused.
    if s[0] & 0xe000 != 0x2000 {
        return false;
    }
    let ietf = s[0] == 0x2001 && s[1] < 0x0200; // 2001::/23 IETF (Teredo, ORCHID…)
    let documentation = (s[0] == 0x2001 && s[1] == 0x0db8) || (s[0] == 0x3fff && s[1] < 0x1000); // 2001:db8::/32, 3fff::/20
    let six_to_four = s[0] == 0x2002; // 6to4: relays to an embedded IPv4
    let refused = ietf || documentation || six_to_four;
    !refused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv4_public_and_not() {
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.169.0.1",
            "223.255.255.254",
            "11.0.0.1",
        ] {
            assert!(is_public(ip(public)), "{public} is public");
        }
        for private in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.1",
            "100.127.255.255",
            "127.0.0.1",
            "127.255.0.1",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(!is_public(ip(private)), "{private} is not public");
        }
    }

    #[test]
    fn ipv6_public_and_not() {
        for public in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "2001:4860::8888",
            "2400:cb00::1",
        ] {
            assert!(is_public(ip(public)), "{public} is public");
        }
        for private in [
            "::",
            "::1",
            "::127.0.0.1",
            "::8.8.8.8",
            "64:ff9b::a00:1",
            "64:ff9b:1::1",
            "100::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "ff0e::1",
            "2001::1",
            "2001:0:4136:e378::1",
            "2001:db8::1",
            "2002:a00:1::1",
            "3fff::1",
            "4000::1",
            "::ffff:0:1",
        ] {
            assert!(!is_public(ip(private)), "{private} is not public");
        }
    }

    #[test]
    fn ipv4_mapped_ipv6_is_judged_as_ipv4() {
        assert!(!is_public(ip("::ffff:127.0.0.1")));
        assert!(!is_public(ip("::ffff:10.1.2.3")));
        assert!(!is_public(ip("::ffff:169.254.169.254")));
        assert!(!is_public(ip("::ffff:100.64.0.1")));
        assert!(is_public(ip("::ffff:8.8.8.8")));
        assert!(is_loopback(ip("::ffff:127.0.0.2")));
    }

    #[test]
    fn loopback_is_allowed_only_when_asked() {
        let strict = AddressPolicy::default();
        let tests = AddressPolicy {
            allow_loopback: true,
        };
        for lo in ["127.0.0.1", "::1", "::ffff:127.0.0.1"] {
            assert!(!strict.allows(ip(lo)));
            assert!(tests.allows(ip(lo)));
        }
        // Loopback, not everything private.
        assert!(!tests.allows(ip("10.0.0.1")));
        assert!(!tests.allows(ip("169.254.169.254")));
        assert!(!tests.allows(ip("fe80::1")));
    }

    #[test]
    fn urls_are_checked_for_scheme_and_literal_hosts() {
        let url = |s: &str| url::Url::parse(s).unwrap();
        let strict = AddressPolicy::default();
        let tests = AddressPolicy {
            allow_loopback: true,
        };
        assert_eq!(
            strict.check_url(&url("https://files.example/a?sig=1")),
            Ok(())
        );
        assert_eq!(
            strict.check_url(&url("http://files.example/a")),
            Err(Refusal::NotHttps)
        );
        assert_eq!(
            strict.check_url(&url("ftp://files.example/a")),
            Err(Refusal::NotHttps)
        );
        for private in [
            "https://10.0.0.7/a",
            "https://127.0.0.1/a",
            "https://[::1]/a",
            "https://[::ffff:10.0.0.1]/a",
            "https://169.254.169.254/latest",
            "https://0x7f000001/a",
            "https://2130706433/",
            "https://[fd00::1]/",
        ] {
            assert_eq!(
                strict.check_url(&url(private)),
                Err(Refusal::PrivateAddress),
                "{private}"
            );
        }
        assert_eq!(
            strict.check_url(&url("https://u:p@files.example/")),
            Err(Refusal::BadUrl)
        );
        // With loopback allowed: http to loopback only; private stays refused.
        assert_eq!(tests.check_url(&url("http://127.0.0.1:9/a")), Ok(()));
        assert_eq!(tests.check_url(&url("http://localhost:9/a")), Ok(()));
        assert_eq!(tests.check_url(&url("http://[::1]:9/a")), Ok(()));
        assert_eq!(
            tests.check_url(&url("http://files.example/a")),
            Err(Refusal::NotHttps)
        );
        assert_eq!(
            tests.check_url(&url("http://10.0.0.7/a")),
            Err(Refusal::NotHttps)
        );
        assert_eq!(
            tests.check_url(&url("https://10.0.0.7/a")),
            Err(Refusal::PrivateAddress)
        );
    }
}
