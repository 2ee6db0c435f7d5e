//! Who may run turns: the agreed header set, nobody (auth not configured), or anyone.
//!
//! Forgetting to configure the header set is the most common deploy mistake (a Worker deployed
//! before `wrangler secret put`, a Lambda without its SSM parameter). It must not open the agent
//! to the internet, so a deployment without a header set refuses every turn with a 500 naming
//! the missing setting ([`Access::Unconfigured`]) until the operator either configures one or
//! says explicitly that anyone may call ([`Access::Open`], `RUNWAY_ALLOW_UNAUTHENTICATED=1`).

use crate::service::auth::AuthHeaders;

/// The setting that lets anyone who reaches the URL run turns.
pub const ALLOW_UNAUTHENTICATED: &str = "RUNWAY_ALLOW_UNAUTHENTICATED";

/// Who may call `/runs`, `/lowkey/turn`, `/usage` and `/health` (hosted-file links need no auth).
#[derive(Debug, Clone)]
pub enum Access {
    /// Only requests carrying every header of the agreed set.
    Headers(AuthHeaders),
    /// No header set is configured and nobody opted out: turns are refused with a 500 naming
    /// `missing`, the setting to configure. `/health` still answers. The default.
    Unconfigured {
        /// What to set, as the platform names it (`RUNWAY_AUTH_HEADERS`, the Lambda's SSM
        /// parameter, the Worker's secret).
        missing: String,
    },
    /// Anyone who reaches the URL: the operator opted out (`RUNWAY_ALLOW_UNAUTHENTICATED=1`,
    /// for access restricted another way: an IP allowlist, mTLS, a private network), or
    /// `runway serve` listens on a loopback address only.
    Open,
}

impl Default for Access {
    fn default() -> Self {
        Self::Unconfigured {
            missing: "RUNWAY_AUTH_HEADERS".into(),
        }
    }
}

/// What [`Access::admits`] decided for a request's headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Serve it.
    Admitted,
    /// Wrong or missing credentials: 401.
    Unauthorized,
    /// No header set configured: 500 with this message.
    Unconfigured(String),
}

impl Access {
    /// The header set, when one is required.
    pub fn headers(&self) -> Option<&AuthHeaders> {
        match self {
            Self::Headers(set) => Some(set),
            _ => None,
        }
    }

    /// The names of the required headers (none unless [`Access::Headers`]).
    pub fn header_names(&self) -> Vec<String> {
        self.headers()
            .map(|set| set.names().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// Names the setting to configure when this is [`Access::Unconfigured`] (each platform
    /// names it its own way: an SSM parameter, a Worker secret); otherwise unchanged.
    pub fn naming_missing(self, setting: impl Into<String>) -> Self {
        match self {
            Self::Unconfigured { .. } => Self::Unconfigured {
                missing: setting.into(),
            },
            other => other,
        }
    }

    /// The error a refused turn answers (and logs) when no header set is configured.
    pub fn unconfigured_message(missing: &str) -> String {
        format!(
            "auth is not configured, so this agent refuses every turn and its usage report: set \
             {missing} to the header set agreed with Console, or {ALLOW_UNAUTHENTICATED}=1 if \
             access is restricted another way (IP allowlist, mTLS, private network)"
        )
    }

    /// Decides a request to a guarded route (turns, `/usage`, any other path) or, with
    /// `guarded = false`, to `/health`, which an unconfigured deployment still answers.
    pub(crate) fn admits(&self, headers: &http::HeaderMap, guarded: bool) -> Admission {
        match self {
            // An empty set names nothing to check: never read as "no auth".
            Self::Headers(set) if set.is_empty() => {
                Admission::Unconfigured(Self::unconfigured_message("RUNWAY_AUTH_HEADERS"))
            }
            Self::Headers(set) if set.check(headers) => Admission::Admitted,
            Self::Headers(_) => Admission::Unauthorized,
            Self::Open => Admission::Admitted,
            Self::Unconfigured { .. } if !guarded => Admission::Admitted,
            Self::Unconfigured { missing } => {
                Admission::Unconfigured(Self::unconfigured_message(missing))
            }
        }
    }

    /// Logs once, at start-up, who may call: the header names at info, an opted-out open
    /// deployment at warn, an unconfigured one at error.
    pub fn log_at_start(&self) {
        match self {
            Self::Headers(set) => {
                let names: Vec<&str> = set.names().collect();
                tracing::info!(auth_headers = ?names, "turns need the agreed header set");
            }
            Self::Open => tracing::warn!(
                "NO AUTHENTICATION: anyone who can reach this agent can run turns \
                 ({ALLOW_UNAUTHENTICATED}=1, or a loopback-only listener). Only acceptable when \
                 access is restricted another way"
            ),
            Self::Unconfigured { missing } => tracing::error!(
                code = "AUTH_NOT_CONFIGURED",
                "{}",
                Self::unconfigured_message(missing)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::auth::tests::headers;

    #[test]
    fn unconfigured_refuses_turns_naming_the_setting_but_answers_health() {
        let access = Access::default().naming_missing("the RUNWAY_AUTH_HEADERS secret");
        match access.admits(&headers(&[("x-api-key", "anything")]), true) {
            Admission::Unconfigured(m) => {
                assert!(m.contains("the RUNWAY_AUTH_HEADERS secret"), "{m}");
                assert!(m.contains(ALLOW_UNAUTHENTICATED), "{m}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(access.admits(&headers(&[]), false), Admission::Admitted);
    }

    #[test]
    fn headers_and_open() {
        let set = AuthHeaders::parse("X-API-Key: k1").unwrap();
        let access = Access::Headers(set).naming_missing("ignored");
        assert_eq!(
            access.admits(&headers(&[("x-api-key", "k1")]), true),
            Admission::Admitted
        );
        assert_eq!(access.admits(&headers(&[]), false), Admission::Unauthorized);
        assert_eq!(access.header_names(), ["x-api-key"]);
        assert_eq!(
            Access::Open.admits(&headers(&[]), true),
            Admission::Admitted
        );
        assert!(Access::Open.header_names().is_empty());
    }

    #[test]
    fn an_empty_header_set_is_not_open() {
        let access = Access::Headers(AuthHeaders::none());
        assert!(matches!(
            access.admits(&headers(&[]), true),
            Admission::Unconfigured(_)
        ));
    }
}
