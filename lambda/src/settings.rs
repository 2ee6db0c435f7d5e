//! The function's own settings ([`Settings`], the core's as Lambda reads them), and what they
//! name: the DynamoDB store and the EMF line.

use aws_config::SdkConfig;
use runway_agents::{WORKERS_FILE_SETTING, WORKERS_SETTING};
use runway_core::adapter::{Config, FIRST_FLUSH_BYTES};

use crate::emf::{DEFAULT_NAMESPACE, EmfLine, METRICS_DETAIL_SETTING, MetricsDetail};
use crate::init_error::InitError;
use crate::ssm::{AUTH_PARAMETER, PARAMETER_SUFFIX, VAULT_KEY_PARAMETER};
use crate::store::DynamoStore;

/// Lambda-specific settings (the rest is [`runway_core::adapter::Config`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// DynamoDB table (`RUNWAY_DYNAMODB_TABLE`, default `runway`).
    pub table: String,
    /// Endpoint override for a local DynamoDB (`RUNWAY_DYNAMODB_ENDPOINT`).
    pub dynamodb_endpoint: Option<String>,
    /// Name of the SSM SecureString holding the auth header set
    /// (`RUNWAY_AUTH_HEADERS_SSM_PARAMETER`); when unset, `RUNWAY_AUTH_HEADERS` is used as is.
    pub auth_parameter: Option<String>,
    /// Name of the SSM SecureString holding the vault key (`RUNWAY_VAULT_KEY_SSM_PARAMETER`);
    /// when unset, `RUNWAY_VAULT_KEY` is used as is.
    pub vault_key_parameter: Option<String>,
    /// Built-in agent the repo's own `bootstrap` serves (`RUNWAY_AGENT`, default `demo`: see
    /// [`runway_agents::settings`]); a `bootstrap` serving its own agent through
    /// [`crate::run`] ignores it.
    pub agent: String,
    /// CloudWatch namespace of the EMF metrics (`RUNWAY_METRICS_NAMESPACE`, default `runway`).
    pub metrics_namespace: String,
    /// Which metric series each turn's EMF line publishes (`RUNWAY_METRICS_DETAIL`: `pilot`,
    /// the default, or `worker`).
    pub metrics_detail: MetricsDetail,
}

impl Settings {
    /// Reads the settings from `get` (the process environment in production).
    ///
    /// # Errors
    /// An endpoint that is not an http(s) URL; a `RUNWAY_METRICS_DETAIL` other than `pilot` or
    /// `worker`.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, InitError> {
        let non_empty = |k: &str| {
            get(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        // Whether a workers file is served is decided from the environment before any
        // parameter is read: one in SSM would be ignored, never silently.
        for setting in [WORKERS_SETTING, WORKERS_FILE_SETTING] {
            if non_empty(&format!("{setting}{PARAMETER_SUFFIX}")).is_some() {
                return Err(InitError::Config(format!(
                    "{setting}{PARAMETER_SUFFIX}: the workers file cannot come from SSM; set \
                     {WORKERS_SETTING} (the template's Workers parameter) or ship the file \
                     and set {WORKERS_FILE_SETTING}"
                )));
            }
        }
        let dynamodb_endpoint = non_empty("RUNWAY_DYNAMODB_ENDPOINT");
        if let Some(e) = &dynamodb_endpoint
            && !(e.starts_with("http://") || e.starts_with("https://"))
        {
            return Err(InitError::Config(
                "RUNWAY_DYNAMODB_ENDPOINT must be an http(s) URL".into(),
            ));
        }
        let metrics_detail = get(METRICS_DETAIL_SETTING)
            .unwrap_or_default()
            .parse::<MetricsDetail>()
            .map_err(|e| InitError::Config(e.to_string()))?;
        Ok(Self {
            table: non_empty("RUNWAY_DYNAMODB_TABLE").unwrap_or_else(|| "runway".into()),
            dynamodb_endpoint,
            auth_parameter: non_empty(AUTH_PARAMETER),
            vault_key_parameter: non_empty(VAULT_KEY_PARAMETER),
            agent: runway_agents::settings::agent_name(&get),
            metrics_namespace: non_empty("RUNWAY_METRICS_NAMESPACE")
                .unwrap_or_else(|| DEFAULT_NAMESPACE.into()),
            metrics_detail,
        })
    }
}

/// The DynamoDB store on the table (and endpoint) of `settings`. Makes no request.
pub(crate) fn dynamo_store(settings: &Settings, sdk: &SdkConfig) -> DynamoStore {
    let mut dynamo = aws_sdk_dynamodb::config::Builder::from(sdk);
    if let Some(endpoint) = &settings.dynamodb_endpoint {
        dynamo = dynamo.endpoint_url(endpoint);
    }
    DynamoStore::new(
        aws_sdk_dynamodb::Client::from_conf(dynamo.build()),
        settings.table.clone(),
    )
}

/// The core's settings as Lambda reads them from `get`: [`Config::from_lookup`], but with
/// [`FIRST_FLUSH_BYTES`] of first-flush padding unless `RUNWAY_FIRST_FLUSH_BYTES` says
/// otherwise, because a function URL's response stream may hold small chunks (the other
/// runtimes default to none).
///
/// # Errors
/// A setting that does not parse.
pub fn core_config(get: impl Fn(&str) -> Option<String>) -> Result<Config, InitError> {
    let defaults = Config {
        first_flush_bytes: FIRST_FLUSH_BYTES,
        ..Config::default()
    };
    Config::from_lookup_over(defaults, get).map_err(|e| InitError::Config(e.to_string()))
}

/// The EMF line each turn writes, as `settings` say.
pub fn emf_line(settings: &Settings) -> EmfLine {
    EmfLine::new(&settings.metrics_namespace).with_detail(settings.metrics_detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: std::collections::HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn defaults_and_overrides() {
        let s = Settings::from_lookup(lookup(&[])).unwrap();
        assert_eq!(s.table, "runway");
        assert_eq!(s.agent, "demo");
        assert!(s.dynamodb_endpoint.is_none() && s.auth_parameter.is_none());
        assert_eq!(s.metrics_namespace, "runway");
        assert_eq!(s.metrics_detail, MetricsDetail::Pilot);
        let s = Settings::from_lookup(lookup(&[
            ("RUNWAY_DYNAMODB_TABLE", "t1"),
            ("RUNWAY_DYNAMODB_ENDPOINT", "http://127.0.0.1:5000"),
            ("RUNWAY_AUTH_HEADERS_SSM_PARAMETER", "/runway/auth"),
            ("RUNWAY_AGENT", "echo"),
        ]))
        .unwrap();
        assert_eq!(s.table, "t1");
        assert_eq!(
            s.dynamodb_endpoint.as_deref(),
            Some("http://127.0.0.1:5000")
        );
        assert_eq!(s.auth_parameter.as_deref(), Some("/runway/auth"));
        assert_eq!(s.agent, "echo");
    }

    #[test]
    fn the_workers_file_cannot_come_from_a_parameter() {
        for setting in [
            "RUNWAY_WORKERS_SSM_PARAMETER",
            "RUNWAY_WORKERS_FILE_SSM_PARAMETER",
        ] {
            let e = Settings::from_lookup(lookup(&[(setting, "/runway/workers")])).unwrap_err();
            assert!(e.to_string().contains(setting), "{e}");
        }
    }

    #[test]
    fn metrics_detail_is_pilot_or_worker_and_anything_else_refuses_to_start() {
        let detail = |v: &str| {
            Settings::from_lookup(lookup(&[(METRICS_DETAIL_SETTING, v)])).map(|s| s.metrics_detail)
        };
        assert_eq!(detail("pilot").unwrap(), MetricsDetail::Pilot);
        assert_eq!(detail("").unwrap(), MetricsDetail::Pilot);
        assert_eq!(detail(" Worker ").unwrap(), MetricsDetail::Worker);
        for bad in ["workers", "outcome", "all", "1"] {
            let e = detail(bad).unwrap_err();
            assert!(matches!(e, InitError::Config(_)), "{bad}: {e}");
            assert!(e.to_string().contains(METRICS_DETAIL_SETTING), "{bad}: {e}");
        }
    }

    #[test]
    fn lambda_pads_the_first_frame_by_default_and_the_setting_overrides_it() {
        let padding =
            |pairs: &[(&str, &str)]| core_config(lookup(pairs)).unwrap().first_flush_bytes;
        assert_eq!(padding(&[]), 102_400);
        assert_eq!(padding(&[("RUNWAY_FIRST_FLUSH_BYTES", "0")]), 0);
        assert_eq!(padding(&[("RUNWAY_FIRST_FLUSH_BYTES", "16384")]), 16_384);
        let e = core_config(lookup(&[("RUNWAY_FIRST_FLUSH_BYTES", "1k")])).unwrap_err();
        assert!(e.to_string().contains("RUNWAY_FIRST_FLUSH_BYTES"), "{e}");
    }

    #[test]
    fn bad_endpoint_is_refused() {
        assert!(
            Settings::from_lookup(lookup(&[("RUNWAY_DYNAMODB_ENDPOINT", "localhost:8000")]))
                .is_err()
        );
    }
}
