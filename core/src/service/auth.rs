//! The header set agreed with Console at onboarding.
//!
//! Every header in the set is required; values are compared verbatim and in constant time.
//! Both sides are hashed with SHA-256 first, so neither the content nor the length of the
//! expected value shows in response timing. An empty set means no authentication.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::BadRequest;

/// The agreed header set.
#[derive(Clone, Default)]
pub struct AuthHeaders {
    expected: Vec<(http::HeaderName, [u8; 32])>,
}

impl std::fmt::Debug for AuthHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.expected.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("AuthHeaders")
            .field("names", &names)
            .finish()
    }
}

impl AuthHeaders {
    /// No authentication: every request is accepted.
    pub fn none() -> Self {
        Self::default()
    }

    /// Parses newline-separated `Name: value` lines (the `RUNWAY_AUTH_HEADERS` format). Blank
    /// lines are skipped; the value is everything after the first colon, trimmed.
    ///
    /// # Errors
    /// A line without a colon, an invalid header name, an empty value or a repeated name.
    pub fn parse(lines: &str) -> Result<Self, BadRequest> {
        let mut set = Self::default();
        for (i, line) in lines.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| BadRequest::new(format!("auth header line {} has no ':'", i + 1)))?;
            set.insert(name.trim(), value.trim())?;
        }
        Ok(set)
    }

    /// Adds a required header.
    ///
    /// # Errors
    /// An invalid header name, an empty value or a repeated name.
    pub fn insert(&mut self, name: &str, value: &str) -> Result<(), BadRequest> {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| BadRequest::new(format!("invalid auth header name {name:?}")))?;
        if value.is_empty() {
            return Err(BadRequest::new(format!(
                "auth header {name} has an empty value"
            )));
        }
        if self.expected.iter().any(|(n, _)| *n == name) {
            return Err(BadRequest::new(format!("auth header {name} given twice")));
        }
        self.expected
            .push((name, Sha256::digest(value.as_bytes()).into()));
        Ok(())
    }

    /// True when no header is required.
    pub fn is_empty(&self) -> bool {
        self.expected.is_empty()
    }

    /// The required header names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.expected.iter().map(|(n, _)| n.as_str())
    }

    /// Checks a request's headers: each required header must appear exactly once with the
    /// agreed value. All headers are checked whatever the first result, so timing does not
    /// reveal which one failed.
    pub fn check(&self, headers: &http::HeaderMap) -> bool {
        let mut ok = subtle::Choice::from(1u8);
        for (name, digest) in &self.expected {
            let mut values = headers.get_all(name).iter();
            let (got, once) = match (values.next(), values.next()) {
                (Some(v), None) => (Sha256::digest(v.as_bytes()), 1u8),
                _ => (Sha256::digest(b""), 0u8),
            };
            ok &= got.as_slice().ct_eq(digest) & subtle::Choice::from(once);
        }
        ok.into()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A header map of `pairs` (repeated names kept).
    pub(crate) fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for (n, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn every_header_is_required() {
        let set = AuthHeaders::parse("X-API-Key: k1\nX-Tenant: acme\n").unwrap();
        assert!(set.check(&headers(&[("x-api-key", "k1"), ("x-tenant", "acme")])));
        assert!(!set.check(&headers(&[("x-api-key", "k1")])));
        assert!(!set.check(&headers(&[("x-tenant", "acme")])));
        assert!(!set.check(&headers(&[("x-api-key", "k1"), ("x-tenant", "acmE")])));
        assert!(!set.check(&headers(&[])));
    }

    #[test]
    fn values_are_verbatim() {
        let set = AuthHeaders::parse("Authorization: Bearer abc123").unwrap();
        assert!(set.check(&headers(&[("authorization", "Bearer abc123")])));
        assert!(!set.check(&headers(&[("authorization", "abc123")])));
        assert!(!set.check(&headers(&[("authorization", "Bearer abc1234")])));
    }

    #[test]
    fn a_repeated_header_is_refused() {
        let set = AuthHeaders::parse("X-API-Key: k1").unwrap();
        assert!(!set.check(&headers(&[("x-api-key", "k1"), ("x-api-key", "k1")])));
    }

    #[test]
    fn empty_set_accepts_everything() {
        assert!(AuthHeaders::parse("\n\n").unwrap().check(&headers(&[])));
    }

    #[test]
    fn bad_config_is_refused() {
        assert!(AuthHeaders::parse("no colon").is_err());
        assert!(AuthHeaders::parse("X-Key:").is_err());
        assert!(AuthHeaders::parse("Bad Name: v").is_err());
        assert!(AuthHeaders::parse("X-A: 1\nx-a: 2").is_err());
    }

    #[test]
    fn debug_does_not_print_values() {
        let set = AuthHeaders::parse("X-API-Key: supersecret").unwrap();
        assert!(!format!("{set:?}").contains("supersecret"));
    }
}
