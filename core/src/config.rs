//! Settings of a runway deployment.

use std::time::Duration;

use crate::auth::AuthHeaders;
use crate::context::ContextPolicy;
use crate::protocol::Limits;

/// Largest request body accepted (1 MiB). Adapters refuse larger bodies while reading them.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Everything configurable, with defaults fit for Console.
#[derive(Debug, Clone)]
pub struct Config {
    /// Display name in `/health`.
    pub name: String,
    /// Version in `/health`.
    pub version: String,
    /// The header set Console sends; empty for no authentication.
    pub auth: AuthHeaders,
    /// A heartbeat comment is sent after this much silence (default 10 s; Console wants one
    /// at least every 15 s).
    pub heartbeat: Duration,
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
    pub limits: Limits,
    /// How much of a thread is kept.
    pub context_policy: ContextPolicy,
    /// Public base URL (for hosted-file links). When unset it is derived from the request's
    /// `Host` and `X-Forwarded-Proto` headers.
    pub public_url: Option<String>,
    /// How soon a duplicate delivery first checks whether the original finished (default
    /// 250 ms); the wait doubles with every check, up to 8 s.
    pub duplicate_poll: Duration,
    /// `/health` says `degraded` for this long after a store error (default 60 s).
    pub degraded_after_store_error: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            name: "runway agent".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            auth: AuthHeaders::none(),
            heartbeat: Duration::from_secs(10),
            turn_deadline: Duration::from_secs(290),
            context_ttl: Duration::from_secs(30 * 24 * 3600),
            validation_ttl: Duration::from_secs(600),
            recording_ttl: Duration::from_secs(24 * 3600),
            file_ttl: Duration::from_secs(7 * 24 * 3600),
            max_file_bytes: 5 * 1024 * 1024,
            limits: Limits::default(),
            context_policy: ContextPolicy::default(),
            public_url: None,
            duplicate_poll: Duration::from_millis(250),
            degraded_after_store_error: Duration::from_secs(60),
        }
    }
}

impl Config {
    /// Reads the `RUNWAY_*` settings from `get` (the process environment, Workers `[vars]`,
    /// Lambda environment…), on top of the defaults:
    /// `RUNWAY_AUTH_HEADERS` (newline-separated `Name: value` lines), `RUNWAY_HEARTBEAT_SECS`,
    /// `RUNWAY_TURN_DEADLINE_SECS`, `RUNWAY_CONTEXT_TTL_SECS`, `RUNWAY_PUBLIC_URL`,
    /// `RUNWAY_NAME`.
    ///
    /// # Errors
    /// A setting that does not parse, named.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, crate::BadRequest> {
        let mut c = Self::default();
        if let Some(v) = get("RUNWAY_AUTH_HEADERS") {
            c.auth = AuthHeaders::parse(&v)?;
        }
        let secs = |name: &str| -> Result<Option<Duration>, crate::BadRequest> {
            get(name)
                .map(|v| {
                    v.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|s| s.is_finite() && *s > 0.0)
                        .map(Duration::from_secs_f64)
                        .ok_or_else(|| {
                            crate::BadRequest::new(format!(
                                "{name} must be a positive number of seconds"
                            ))
                        })
                })
                .transpose()
        };
        if let Some(d) = secs("RUNWAY_HEARTBEAT_SECS")? {
            c.heartbeat = d;
        }
        if let Some(d) = secs("RUNWAY_TURN_DEADLINE_SECS")? {
            c.turn_deadline = d;
        }
        if let Some(d) = secs("RUNWAY_CONTEXT_TTL_SECS")? {
            c.context_ttl = d;
        }
        if let Some(u) = get("RUNWAY_PUBLIC_URL").filter(|u| !u.trim().is_empty()) {
            let u = u.trim().trim_end_matches('/').to_owned();
            url::Url::parse(&u)
                .map_err(|_| crate::BadRequest::new("RUNWAY_PUBLIC_URL is not a URL"))?;
            c.public_url = Some(u);
        }
        if let Some(n) = get("RUNWAY_NAME").filter(|n| !n.trim().is_empty()) {
            c.name = n;
        }
        Ok(c)
    }
}
