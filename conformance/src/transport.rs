//! The HTTP side of the emulator: one client configured like Console's
//! (redirects never followed, connect deadline, a fresh connection per
//! request, the egress filter in strict mode), the agreed header set, and
//! the classification of transport failures into Console's codes.

use std::sync::Arc;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use url::Url;

use crate::deadlines::{Deadlines, StreamLimits};
use crate::egress::{EgressRefusal, FilteringResolver, check_base_url};
use crate::findings::Code;

/// Which of the two endpoints a request went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `GET {base_url}/health`.
    Health,
    /// `POST {base_url}/runs`.
    Runs,
}

/// The header set agreed at onboarding, sent verbatim on both endpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderSet(pub Vec<(HeaderName, HeaderValue)>);

/// A `--header` argument that is not `Name: value`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid header {0:?}: expected 'Name: value'")]
pub struct BadHeader(pub String);

impl HeaderSet {
    /// Parses `Name: value` lines. The value is taken verbatim after the
    /// colon and the spaces that follow it: Console adds nothing.
    pub fn parse<S: AsRef<str>>(lines: &[S]) -> Result<Self, BadHeader> {
        let mut set = Vec::new();
        for line in lines {
            let line = line.as_ref();
            let (name, value) = line.split_once(':').ok_or_else(|| BadHeader(line.into()))?;
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| BadHeader(line.into()))?;
            let value = HeaderValue::from_str(value.trim_start_matches([' ', '\t']))
                .map_err(|_| BadHeader(line.into()))?;
            set.push((name, value));
        }
        Ok(HeaderSet(set))
    }

    /// Whether no header was agreed (no authentication).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The same set without the header at `index`.
    pub fn without(&self, index: usize) -> HeaderSet {
        let mut v = self.0.clone();
        v.remove(index);
        HeaderSet(v)
    }

    /// The same set with the value at `index` altered (last byte changed,
    /// same length), so it is wrong but plausible.
    pub fn with_wrong_value(&self, index: usize) -> HeaderSet {
        let mut v = self.0.clone();
        let mut bytes = v[index].1.as_bytes().to_vec();
        match bytes.last_mut() {
            Some(b) => *b = if *b == b'x' { b'y' } else { b'x' },
            None => bytes.push(b'x'),
        }
        v[index].1 = HeaderValue::from_bytes(&bytes).unwrap_or(HeaderValue::from_static("x"));
        HeaderSet(v)
    }

    /// The same set with the value at `index` followed by extra characters: an agent that
    /// accepts it compares a prefix, not the whole value.
    pub fn with_extended_value(&self, index: usize) -> HeaderSet {
        let mut v = self.0.clone();
        let mut bytes = v[index].1.as_bytes().to_vec();
        bytes.extend_from_slice(b"-extra");
        v[index].1 = HeaderValue::from_bytes(&bytes).unwrap_or(HeaderValue::from_static("x"));
        HeaderSet(v)
    }

    /// The same set with the value at `index` missing its last character (a one-character
    /// value becomes `x`, unless it was `x`): an agent that accepts it compares only as many
    /// characters as were sent.
    pub fn with_shortened_value(&self, index: usize) -> HeaderSet {
        let mut v = self.0.clone();
        let bytes = v[index].1.as_bytes();
        let shorter = match bytes.len() {
            0 | 1 if bytes == b"x" => b"y".to_vec(),
            0 | 1 => b"x".to_vec(),
            n => bytes[..n - 1].to_vec(),
        };
        v[index].1 = HeaderValue::from_bytes(&shorter).unwrap_or(HeaderValue::from_static("x"));
        HeaderSet(v)
    }

    pub(crate) fn to_map(&self) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (n, v) in &self.0 {
            map.append(n.clone(), v.clone());
        }
        map
    }
}

/// A transport-level failure, before any HTTP status was received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportFailure {
    /// Refused by the egress rules (strict mode): nothing was sent.
    Egress(EgressRefusal),
    /// The TCP/TLS handshake did not finish within the connect deadline.
    ConnectTimeout,
    /// The connection could not be made (refused, DNS failure, TLS error).
    ConnectFailed(String),
    /// The request failed after connecting, before a response arrived.
    Other(String),
}

impl TransportFailure {
    /// Console's code for this failure on this endpoint: on `/health` every
    /// failure but egress and connect timeout folds into
    /// `ENDPOINT_UNAVAILABLE`; on `/runs` a failed connection is
    /// `UPSTREAM_UNAVAILABLE`.
    pub fn code(&self, endpoint: Endpoint) -> Code {
        match (self, endpoint) {
            (TransportFailure::Egress(_), _) => Code::EgressRefused,
            (TransportFailure::ConnectTimeout, _) => Code::ConnectTimeout,
            (_, Endpoint::Health) => Code::EndpointUnavailable,
            (_, Endpoint::Runs) => Code::UpstreamUnavailable,
        }
    }

    /// A sentence for the operator.
    pub fn describe(&self) -> String {
        match self {
            TransportFailure::Egress(r) => format!("refused before connecting: {r}"),
            TransportFailure::ConnectTimeout => {
                "no TCP/TLS handshake within the connect deadline".into()
            }
            TransportFailure::ConnectFailed(e) => format!("connection failed: {e}"),
            TransportFailure::Other(e) => format!("request failed: {e}"),
        }
    }
}

/// Classifies an error from sending a request.
pub fn classify_send_error(error: &reqwest::Error) -> TransportFailure {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(refusal) = e.downcast_ref::<EgressRefusal>() {
            return TransportFailure::Egress(refusal.clone());
        }
        source = e.source();
    }
    if error.is_connect() && error.is_timeout() {
        TransportFailure::ConnectTimeout
    } else if error.is_connect() {
        TransportFailure::ConnectFailed(chain(error))
    } else {
        TransportFailure::Other(chain(error))
    }
}

/// An error and its sources, joined with `: `.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let s = e.to_string();
        if !text.contains(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
        source = e.source();
    }
    text
}

/// The HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
pub struct ClientBuildError(#[from] reqwest::Error);

/// How Console is configured for one agent: its clocks, its limits, and
/// whether the egress rules apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Settings {
    /// The deadlines.
    pub deadlines: Deadlines,
    /// The size limits.
    pub limits: StreamLimits,
    /// Apply Console's `base_url` egress rules (https only, no credentials,
    /// no internal address). Off by default so local agents can be checked.
    pub egress_strict: bool,
}

/// Talks to one External Agent the way Console does.
#[derive(Debug, Clone)]
pub struct Transport {
    client: reqwest::Client,
    base_url: Url,
    settings: Settings,
}

impl Transport {
    /// A transport for `base_url`. With `settings.egress_strict`, the egress
    /// rules apply to every request and every connection.
    pub fn new(base_url: Url, settings: Settings) -> Result<Self, ClientBuildError> {
        let deadlines = settings.deadlines;
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(deadlines.connect)
            .pool_max_idle_per_host(0)
            .no_proxy()
            .user_agent(concat!("runway-conformance/", env!("CARGO_PKG_VERSION")));
        if settings.egress_strict {
            builder = builder.dns_resolver(Arc::new(FilteringResolver));
        }
        Ok(Transport {
            client: builder.build()?,
            base_url,
            settings,
        })
    }

    /// The deadlines this transport was built with.
    pub fn deadlines(&self) -> &Deadlines {
        &self.settings.deadlines
    }

    /// The size limits this transport was built with.
    pub fn limits(&self) -> StreamLimits {
        self.settings.limits
    }

    /// The agent's `base_url`.
    pub fn base_url(&self) -> &Url {
        &self.base_url
    }

    /// Whether the egress rules are enforced.
    pub fn egress_strict(&self) -> bool {
        self.settings.egress_strict
    }

    /// The URL of an endpoint: both paths are fixed under `base_url`.
    pub fn url(&self, endpoint: Endpoint) -> Url {
        let mut url = self.base_url.clone();
        let path = url.path().trim_end_matches('/').to_owned();
        let tail = match endpoint {
            Endpoint::Health => "health",
            Endpoint::Runs => "runs",
        };
        url.set_path(&format!("{path}/{tail}"));
        url
    }

    /// The pre-connection egress check (strict mode only).
    pub fn precheck(&self) -> Result<(), TransportFailure> {
        if self.settings.egress_strict {
            check_base_url(&self.base_url).map_err(TransportFailure::Egress)?;
        }
        Ok(())
    }

    /// Builds `GET /health` with the header set.
    pub fn health_request(&self, headers: &HeaderSet) -> reqwest::RequestBuilder {
        self.client
            .get(self.url(Endpoint::Health))
            .headers(headers.to_map())
            .header(reqwest::header::ACCEPT, "application/json")
    }

    /// Builds `POST /runs` with the header set and a JSON body.
    pub fn runs_request(&self, headers: &HeaderSet, body: Vec<u8>) -> reqwest::RequestBuilder {
        self.client
            .post(self.url(Endpoint::Runs))
            .headers(headers.to_map())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_paths_are_fixed_under_base_url() {
        let t = Transport::new(
            Url::parse("https://agent.example.com/fpt").unwrap(),
            Settings::default(),
        )
        .unwrap();
        assert_eq!(
            t.url(Endpoint::Runs).as_str(),
            "https://agent.example.com/fpt/runs"
        );
        assert_eq!(
            t.url(Endpoint::Health).as_str(),
            "https://agent.example.com/fpt/health"
        );
        let t = Transport::new(
            Url::parse("http://127.0.0.1:9/").unwrap(),
            Settings::default(),
        )
        .unwrap();
        assert_eq!(t.url(Endpoint::Runs).as_str(), "http://127.0.0.1:9/runs");
    }

    #[test]
    fn headers_parse_verbatim() {
        let h = HeaderSet::parse(&["Authorization: Bearer abc123", "X-Tenant:  t1"]).unwrap();
        assert_eq!(h.0[0].0.as_str(), "authorization");
        assert_eq!(h.0[0].1, "Bearer abc123");
        assert_eq!(h.0[1].1, "t1");
        assert!(HeaderSet::parse(&["NoColon"]).is_err());
        assert_eq!(h.without(0).0.len(), 1);
        assert_eq!(h.with_wrong_value(0).0[0].1, "Bearer abc12x");
        assert_eq!(h.with_extended_value(0).0[0].1, "Bearer abc123-extra");
        assert_eq!(h.with_shortened_value(0).0[0].1, "Bearer abc12");
    }

    #[test]
    fn failure_codes_per_endpoint() {
        let refused = TransportFailure::Egress(EgressRefusal::EmbeddedCredentials);
        assert_eq!(refused.code(Endpoint::Health), Code::EgressRefused);
        assert_eq!(refused.code(Endpoint::Runs), Code::EgressRefused);
        assert_eq!(
            TransportFailure::ConnectTimeout.code(Endpoint::Runs),
            Code::ConnectTimeout
        );
        assert_eq!(
            TransportFailure::ConnectTimeout.code(Endpoint::Health),
            Code::ConnectTimeout
        );
        let failed = TransportFailure::ConnectFailed("refused".into());
        assert_eq!(failed.code(Endpoint::Health), Code::EndpointUnavailable);
        assert_eq!(failed.code(Endpoint::Runs), Code::UpstreamUnavailable);
    }
}
