//! Settings of a runway deployment.

use std::time::Duration;

use crate::agent::context::ContextPolicy;
use crate::error::BadRequest;
use crate::protocol::StreamLimits;
use crate::service::access::{ALLOW_UNAUTHENTICATED, Access};
use crate::service::auth::AuthHeaders;
use crate::turn::config::TurnConfig;

/// Largest request body accepted (1 MiB). Adapters refuse larger bodies while reading them.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The first-flush padding Lambda's adapter writes by default: above the largest buffering
/// threshold reported of Lambda function-URL response streaming (about 100 KB; see the README's
/// decisions). The other runtimes' paths stream unbuffered and default to none
/// ([`Config::default`]); `RUNWAY_FIRST_FLUSH_BYTES` overrides either.
pub const FIRST_FLUSH_BYTES: usize = 100 * 1024;

/// Everything configurable, with defaults fit for Console.
#[derive(Debug, Clone)]
pub struct Config {
    /// Display name in `/health`.
    pub name: String,
    /// Version in `/health`.
    pub version: String,
    /// Who may run turns: the header set Console sends ([`Access::Headers`]); by default
    /// nobody ([`Access::Unconfigured`]: auth fails closed); anyone only when chosen
    /// ([`Access::Open`]).
    pub access: Access,
    /// A heartbeat comment is sent after this much silence (default 10 s; Console wants one
    /// at least every 15 s), `RUNWAY_HEARTBEAT_SECS`.
    pub heartbeat: Duration,
    /// The first heartbeat comes this soon after the first frame if nothing was written since
    /// (default 2 s; never later than `heartbeat`), `RUNWAY_FIRST_HEARTBEAT_SECS`: a path that
    /// holds a chunk until the next write lets the first frame go then.
    pub first_heartbeat: Duration,
    /// Bytes of padding written right after the first frame (at most the frame limit),
    /// `RUNWAY_FIRST_FLUSH_BYTES`: a path that holds small chunks until a size threshold
    /// (reported of Lambda function URLs: about 100 KB) lets the first frame go at once.
    /// Default 0 (none: `runway serve` and Workers stream unbuffered); Lambda's adapter
    /// defaults to [`FIRST_FLUSH_BYTES`]. An SSE comment for Console, counted against the stream limit, never
    /// recorded; Lowkey gets none (every NDJSON line must be an event it shows).
    pub first_flush_bytes: usize,
    /// A turn still running after this long ends with `RUN_ERROR` (default 290 s, before
    /// Console's 5-minute cut).
    pub turn_deadline: Duration,
    /// How long an idle thread is remembered (default 30 days).
    pub context_ttl: Duration,
    /// How long Console's `validate-…` test threads are kept (default 10 minutes).
    pub validation_ttl: Duration,
    /// How long a finished run can be replayed by its id (default 24 hours).
    pub recording_ttl: Duration,
    /// How long a hosted-file link works (default 7 days, like Console's own links).
    pub file_ttl: Duration,
    /// Largest file an agent may host (default 5 MiB).
    pub max_file_bytes: usize,
    /// Console's limits.
    pub limits: StreamLimits,
    /// How much of a thread is kept.
    pub context_policy: ContextPolicy,
    /// Public base URL (for hosted-file links), `RUNWAY_PUBLIC_URL`. When unset, links use
    /// the origin the platform vouches for ([`crate::adapter::PlatformOrigin`]: the Lambda function
    /// URL's domain, the local server's listen address) or, on Workers, the request's own URL,
    /// followed by `base_path`; never a header the caller controls (`Host`,
    /// `X-Forwarded-Proto`).
    pub public_url: Option<String>,
    /// The path every route is under (`RUNWAY_BASE_PATH`): `""` (the default) or `/a/b`, no
    /// trailing slash. `{base_path}/runs`, `{base_path}/health`, `{base_path}/lowkey/turn`
    /// and `{base_path}/files/…` are served; nothing else.
    pub base_path: String,
    /// How soon a duplicate delivery first checks whether the original finished (default
    /// 250 ms); the wait doubles with every check, up to 8 s.
    pub duplicate_poll: Duration,
    /// `/health` says `degraded` for this long after a store error (default 60 s).
    pub degraded_after_store_error: Duration,
    /// The key connected accounts are sealed with (`RUNWAY_VAULT_KEY`, 32 bytes in base64):
    /// required as soon as a provider is configured.
    pub vault_key: Option<crate::connect::vault::VaultKey>,
    /// How long a day's usage rows (`GET /usage`) are kept after the day (default 90 days,
    /// `RUNWAY_USAGE_TTL_DAYS`).
    pub usage_ttl: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            name: "runway agent".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            access: Access::default(),
            heartbeat: Duration::from_secs(10),
            first_heartbeat: Duration::from_secs(2),
            first_flush_bytes: 0,
            turn_deadline: Duration::from_secs(290),
            context_ttl: Duration::from_secs(30 * 24 * 3600),
            validation_ttl: Duration::from_secs(600),
            recording_ttl: Duration::from_secs(24 * 3600),
            file_ttl: Duration::from_secs(7 * 24 * 3600),
            max_file_bytes: 5 * 1024 * 1024,
            limits: StreamLimits::default(),
            context_policy: ContextPolicy::default(),
            public_url: None,
            base_path: String::new(),
            duplicate_poll: Duration::from_millis(250),
            degraded_after_store_error: Duration::from_secs(60),
            usage_ttl: Duration::from_secs(90 * 24 * 3600),
            vault_key: None,
        }
    }
}

impl Config {
    /// What the engine reads of these settings.
    pub(crate) fn turn_config(&self) -> TurnConfig {
        TurnConfig {
            heartbeat: self.heartbeat,
            first_heartbeat: self.first_heartbeat,
            first_flush_bytes: self.first_flush_bytes,
            turn_deadline: self.turn_deadline,
            duplicate_poll: self.duplicate_poll,
            limits: self.limits,
            max_file_bytes: self.max_file_bytes,
            file_ttl: self.file_ttl,
            context_policy: self.context_policy,
            context_ttl: self.context_ttl,
            validation_ttl: self.validation_ttl,
            recording_ttl: self.recording_ttl,
            usage_ttl: self.usage_ttl,
        }
    }

    /// The defaults, serving anyone ([`Access::Open`]): for tests, benchmarks and an agent
    /// embedded behind access control of its own. A deployment reads
    /// [`Config::from_lookup`], which never opens access by omission.
    pub fn unauthenticated() -> Self {
        Self {
            access: Access::Open,
            ..Self::default()
        }
    }

    /// Reads the `RUNWAY_*` settings from `get` (the process environment, Workers `[vars]`,
    /// Lambda environment…), on top of the defaults:
    /// `RUNWAY_AUTH_HEADERS` (newline-separated `Name: value` lines), `RUNWAY_HEARTBEAT_SECS`,
    /// `RUNWAY_FIRST_HEARTBEAT_SECS`, `RUNWAY_FIRST_FLUSH_BYTES`, `RUNWAY_TURN_DEADLINE_SECS`,
    /// `RUNWAY_CONTEXT_TTL_SECS`, `RUNWAY_PUBLIC_URL`, `RUNWAY_BASE_PATH`, `RUNWAY_NAME`,
    /// `RUNWAY_ALLOW_UNAUTHENTICATED`.
    ///
    /// Auth fails closed: without `RUNWAY_AUTH_HEADERS` turns are refused
    /// ([`Access::Unconfigured`]) unless `RUNWAY_ALLOW_UNAUTHENTICATED=1`;
    /// `RUNWAY_AUTH_HEADERS` set but naming no header is refused, and so is setting both.
    ///
    /// # Errors
    /// A setting that does not parse, named.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, BadRequest> {
        Self::from_lookup_over(Self::default(), get)
    }

    /// [`Config::from_lookup`] on top of `defaults` instead of [`Config::default`]: what a
    /// runtime whose path needs other defaults reads (Lambda: [`FIRST_FLUSH_BYTES`] of
    /// padding).
    ///
    /// # Errors
    /// As [`Config::from_lookup`].
    pub fn from_lookup_over(
        defaults: Self,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, BadRequest> {
        let mut c = defaults;
        let allow_unauthenticated = match get(ALLOW_UNAUTHENTICATED) {
            None => false,
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "1" | "true" => true,
                "" | "0" | "false" => false,
                _ => {
                    return Err(BadRequest::new(format!(
                        "{ALLOW_UNAUTHENTICATED} must be 1 (anyone may run turns) or 0"
                    )));
                }
            },
        };
        if let Some(v) = get("RUNWAY_AUTH_HEADERS") {
            let auth = AuthHeaders::parse(&v)
                .map_err(|e| BadRequest::new(format!("RUNWAY_AUTH_HEADERS: {e}")))?;
            // Set but naming no header is a mistake, not a request for no auth: fail closed.
            if auth.is_empty() {
                return Err(BadRequest::new(format!(
                    "RUNWAY_AUTH_HEADERS is set but names no header: give `Name: value` lines \
                     (or unset it and set {ALLOW_UNAUTHENTICATED}=1 to serve without auth)"
                )));
            }
            if allow_unauthenticated {
                return Err(BadRequest::new(format!(
                    "RUNWAY_AUTH_HEADERS and {ALLOW_UNAUTHENTICATED}=1 contradict each other: \
                     unset one"
                )));
            }
            c.access = Access::Headers(auth);
        } else if allow_unauthenticated {
            c.access = Access::Open;
        }
        let secs = |name: &str| -> Result<Option<Duration>, BadRequest> {
            get(name)
                .map(|v| {
                    v.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|s| s.is_finite() && *s > 0.0)
                        .map(Duration::from_secs_f64)
                        .ok_or_else(|| {
                            BadRequest::new(format!("{name} must be a positive number of seconds"))
                        })
                })
                .transpose()
        };
        if let Some(d) = secs("RUNWAY_HEARTBEAT_SECS")? {
            c.heartbeat = d;
        }
        if let Some(d) = secs("RUNWAY_FIRST_HEARTBEAT_SECS")? {
            c.first_heartbeat = d;
        }
        if let Some(v) = get("RUNWAY_FIRST_FLUSH_BYTES") {
            let max = c.limits.max_frame_bytes;
            c.first_flush_bytes = v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n <= max)
                .ok_or_else(|| {
                    BadRequest::new(format!(
                        "RUNWAY_FIRST_FLUSH_BYTES must be a number of bytes from 0 to {max}"
                    ))
                })?;
        }
        if let Some(d) = secs("RUNWAY_TURN_DEADLINE_SECS")? {
            c.turn_deadline = d;
        }
        if let Some(d) = secs("RUNWAY_CONTEXT_TTL_SECS")? {
            c.context_ttl = d;
        }
        if let Some(u) = get("RUNWAY_PUBLIC_URL").filter(|u| !u.trim().is_empty()) {
            let u = u.trim().trim_end_matches('/').to_owned();
            url::Url::parse(&u).map_err(|_| BadRequest::new("RUNWAY_PUBLIC_URL is not a URL"))?;
            c.public_url = Some(u);
        }
        if let Some(k) = get("RUNWAY_VAULT_KEY").filter(|k| !k.trim().is_empty()) {
            let key = crate::connect::vault::VaultKey::from_base64(&k)
                .map_err(|e| BadRequest::new(e.to_string()))?;
            c.vault_key = Some(key);
        }
        if let Some(p) = get("RUNWAY_BASE_PATH") {
            c.base_path = parse_base_path(&p)?;
        }
        if let Some(v) = get("RUNWAY_USAGE_TTL_DAYS") {
            let days = v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|d| (1..=3660).contains(d))
                .ok_or_else(|| {
                    BadRequest::new("RUNWAY_USAGE_TTL_DAYS must be a number of days from 1 to 3660")
                })?;
            c.usage_ttl = Duration::from_secs(days * 24 * 3600);
        }
        if let Some(n) = get("RUNWAY_NAME").filter(|n| !n.trim().is_empty()) {
            c.name = n;
        }
        Ok(c)
    }
}

/// `RUNWAY_BASE_PATH`: `""` or `/` for the root, else `/segment[/segment…]` (a trailing slash
/// is dropped) of URL path characters, without empty, `.` or `..` segments.
fn parse_base_path(v: &str) -> Result<String, BadRequest> {
    let v = v.trim();
    let bad = || {
        BadRequest::new(format!(
            "RUNWAY_BASE_PATH {v:?} is not a path like /agents/fpt"
        ))
    };
    if v.is_empty() || v == "/" {
        return Ok(String::new());
    }
    let p = v.strip_suffix('/').unwrap_or(v);
    let segments = p.strip_prefix('/').ok_or_else(bad)?;
    let ok_segment = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b))
    };
    if !segments.split('/').all(ok_segment) {
        return Err(bad());
    }
    Ok(p.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, BadRequest> {
        Config::from_lookup(|k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn auth_set_but_naming_no_header_fails_closed() {
        for blank in ["", "   ", "\n\n", " \n \t\n"] {
            let e = config(&[("RUNWAY_AUTH_HEADERS", blank)]).unwrap_err();
            assert!(e.to_string().contains("RUNWAY_AUTH_HEADERS"), "{e}");
        }
        let e = config(&[("RUNWAY_AUTH_HEADERS", "X-Key")]).unwrap_err();
        assert!(e.to_string().contains("RUNWAY_AUTH_HEADERS"), "{e}");
        let c = config(&[("RUNWAY_AUTH_HEADERS", "X-Key: k")]).unwrap();
        assert_eq!(c.access.header_names(), ["x-key"]);
    }

    #[test]
    fn no_header_set_refuses_turns_unless_anyone_is_allowed_explicitly() {
        assert!(matches!(
            config(&[]).unwrap().access,
            Access::Unconfigured { .. }
        ));
        for off in ["0", "false", ""] {
            let c = config(&[(ALLOW_UNAUTHENTICATED, off)]).unwrap();
            assert!(matches!(c.access, Access::Unconfigured { .. }), "{off:?}");
        }
        for on in ["1", "true", " TRUE "] {
            let c = config(&[(ALLOW_UNAUTHENTICATED, on)]).unwrap();
            assert!(matches!(c.access, Access::Open), "{on:?}");
        }
        let e = config(&[(ALLOW_UNAUTHENTICATED, "yes please")]).unwrap_err();
        assert!(e.to_string().contains(ALLOW_UNAUTHENTICATED), "{e}");
        let e = config(&[
            ("RUNWAY_AUTH_HEADERS", "X-Key: k"),
            (ALLOW_UNAUTHENTICATED, "1"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("contradict"), "{e}");
        assert!(matches!(
            Config::default().access,
            Access::Unconfigured { .. }
        ));
        assert!(matches!(Config::unauthenticated().access, Access::Open));
    }

    #[test]
    fn first_flush_bytes_is_a_size_up_to_the_frame_limit() {
        // No padding unless a runtime's path needs it (serve and Workers read these defaults).
        assert_eq!(config(&[]).unwrap().first_flush_bytes, 0);
        assert_eq!(Config::default().first_flush_bytes, 0);
        let padded = Config {
            first_flush_bytes: FIRST_FLUSH_BYTES,
            ..Config::default()
        };
        let over = |pairs: &[(&str, &str)]| {
            Config::from_lookup_over(padded.clone(), |k| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            })
            .map(|c| c.first_flush_bytes)
        };
        assert_eq!(over(&[]).unwrap(), 100 * 1024);
        assert_eq!(over(&[("RUNWAY_FIRST_FLUSH_BYTES", "0")]).unwrap(), 0);
        assert_eq!(
            config(&[("RUNWAY_FIRST_FLUSH_BYTES", "102400")])
                .unwrap()
                .first_flush_bytes,
            102_400
        );
        let bytes =
            |v: &str| config(&[("RUNWAY_FIRST_FLUSH_BYTES", v)]).map(|c| c.first_flush_bytes);
        assert_eq!(bytes("0").unwrap(), 0);
        assert_eq!(bytes(" 16384 ").unwrap(), 16_384);
        assert_eq!(bytes("262144").unwrap(), 256 * 1024);
        for bad in ["262145", "-1", "1k", ""] {
            let e = bytes(bad).unwrap_err();
            assert!(
                e.to_string().contains("RUNWAY_FIRST_FLUSH_BYTES"),
                "{bad}: {e}"
            );
        }
        let first = config(&[("RUNWAY_FIRST_HEARTBEAT_SECS", "0.5")]).unwrap();
        assert_eq!(first.first_heartbeat, Duration::from_millis(500));
    }

    #[test]
    fn base_path_is_normalised_or_refused() {
        let base = |v: &str| config(&[("RUNWAY_BASE_PATH", v)]).map(|c| c.base_path);
        assert_eq!(base("").unwrap(), "");
        assert_eq!(base("/").unwrap(), "");
        assert_eq!(base("/fpt").unwrap(), "/fpt");
        assert_eq!(base("/files/agent/").unwrap(), "/files/agent");
        assert_eq!(
            base("/lambda-url/bootstrap").unwrap(),
            "/lambda-url/bootstrap"
        );
        for bad in ["fpt", "/a//b", "/a/../b", "/a?x", "/a#b", "/a b", "//"] {
            assert!(base(bad).is_err(), "{bad}");
        }
    }
}
