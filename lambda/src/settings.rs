//! Start-up: settings from the environment, the SDK clients, the auth header set.

use std::ffi::OsString;
use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use runway_agents::{BuiltinAgent, WORKERS_FILE_SETTING, WORKERS_SETTING};
use runway_core::Agent;
use runway_core::adapter::{Config, Runway, TokioRuntime};
use runway_core::http_client::ReqwestClient;

use crate::App;
use crate::model_agents::LambdaModels;
use crate::ssm::{PARAMETER_SUFFIX, read_parameter};
use crate::store::DynamoStore;

/// Why the function could not start. Lambda reports it as an init error and retries init on
/// the next invocation; nothing is ever served without the configured auth header set.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// A `RUNWAY_*` setting is invalid.
    #[error("configuration: {0}")]
    Config(String),
    /// The SSM parameter holding the auth header set could not be read.
    #[error("cannot read the auth header set from SSM parameter {name}: {reason}")]
    AuthParameter {
        /// The parameter's name.
        name: String,
        /// What went wrong (never the value).
        reason: String,
    },
    /// The SSM parameter holding a setting (`NAME_SSM_PARAMETER`: a model agent's key, a
    /// workers file's `${NAME}`) could not be read, or is empty.
    #[error(
        "cannot read {setting} from SSM parameter {parameter} (named by {setting}_SSM_PARAMETER): {reason}"
    )]
    SettingParameter {
        /// The setting (`NAME`).
        setting: String,
        /// The parameter's name.
        parameter: String,
        /// What went wrong (never the value).
        reason: String,
    },
}

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
    /// Built-in agent the repo's own `bootstrap` serves (`RUNWAY_AGENT`, default `demo`: see
    /// [`runway_agents::settings`]); a `bootstrap` serving its own agent through
    /// [`crate::run`] ignores it.
    pub agent: String,
}

impl Settings {
    /// Reads the settings from `get` (the process environment in production).
    ///
    /// # Errors
    /// An endpoint that is not an http(s) URL.
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
        Ok(Self {
            table: non_empty("RUNWAY_DYNAMODB_TABLE").unwrap_or_else(|| "runway".into()),
            dynamodb_endpoint,
            auth_parameter: non_empty(AUTH_PARAMETER),
            agent: runway_agents::settings::agent_name(&get),
        })
    }
}

/// The shared SDK configuration: region from `AWS_REGION` (Lambda sets it) or
/// `AWS_DEFAULT_REGION`, else `us-east-1` (never the instance metadata service),
/// standard retries (exponential backoff with full jitter, throttling and transient errors
/// retried, 4 attempts) and timeouts that fit inside the engine's 8-second bound on a store
/// call. Loading it makes no network request; credentials resolve on first use.
pub async fn sdk_config(get: impl Fn(&str) -> Option<String>) -> SdkConfig {
    let region = get("AWS_REGION")
        .or_else(|| get("AWS_DEFAULT_REGION"))
        .filter(|r| !r.trim().is_empty())
        .unwrap_or_else(|| "us-east-1".into());
    aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(region))
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(4)
                .with_initial_backoff(Duration::from_millis(50))
                .with_max_backoff(Duration::from_secs(1)),
        )
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .operation_attempt_timeout(Duration::from_secs(4))
                .operation_timeout(Duration::from_millis(7500))
                .build(),
        )
        .load()
        .await
}

/// The built-in agent named by `RUNWAY_AGENT` in `get` (default `demo`); the model agent as
/// [`LambdaModels`] makes it, with the settings `environment` gives as SSM parameters.
///
/// # Errors
/// An invalid setting, an unknown agent name (found before any network request), or (for
/// `model`) an unreadable parameter.
pub(crate) async fn builtin_agent(
    get: impl Fn(&str) -> Option<String>,
    environment: impl IntoIterator<Item = (OsString, OsString)>,
) -> Result<BuiltinAgent<TokioRuntime>, InitError> {
    let settings = Settings::from_lookup(&get)?;
    if settings.agent == "model" {
        return LambdaModels::start(&get, environment).await?.builtin(&get);
    }
    BuiltinAgent::from_settings(&settings.agent, &TokioRuntime, &get).map_err(InitError::Config)
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

/// Builds the application serving `agent` from `get` (the environment): SDK config, the auth
/// header set (from SSM when `RUNWAY_AUTH_HEADERS_SSM_PARAMETER` is set) and the DynamoDB
/// store. The only network request is the SSM read, when configured.
///
/// # Errors
/// Invalid settings or an unreadable auth parameter.
pub async fn init_agent<A: Agent>(
    agent: A,
    get: impl Fn(&str) -> Option<String>,
) -> Result<App<A>, InitError> {
    let settings = Settings::from_lookup(&get)?;
    let sdk = sdk_config(&get).await;
    let auth_from_ssm = match &settings.auth_parameter {
        Some(name) => Some(read_secure_parameter(&sdk, name).await?),
        None => None,
    };
    let config = Config::from_lookup(|k| {
        if k == "RUNWAY_AUTH_HEADERS"
            && let Some(v) = &auth_from_ssm
        {
            return Some(v.clone());
        }
        get(k)
    })
    .map_err(|e| InitError::Config(e.to_string()))?;
    let mut config = config;
    // Without either setting the function starts but refuses every turn, naming what to set.
    config.access = config.access.naming_missing(format!(
        "{AUTH_PARAMETER} (the SSM SecureString holding the header set: the template's \
         AuthHeadersParameterName) or RUNWAY_AUTH_HEADERS"
    ));
    config.access.log_at_start();
    config.max_file_bytes = config.max_file_bytes.min(crate::store::MAX_FILE_BYTES);

    let store = dynamo_store(&settings, &sdk);
    let rt = TokioRuntime;
    tracing::info!(
        table = %settings.table,
        auth_headers = ?config.access.header_names(),
        auth_source = if auth_from_ssm.is_some() { "ssm" } else { "env" },
        "runway-lambda ready"
    );
    let namespace = get("RUNWAY_METRICS_NAMESPACE").unwrap_or_default();
    Ok(Runway::new(agent, store, rt, config)
        .with_http_client(ReqwestClient::new())
        .with_metrics(crate::emf::EmfLine::new(&namespace)))
}

/// The setting naming the SSM SecureString that holds the auth header set.
pub(crate) const AUTH_PARAMETER: &str = "RUNWAY_AUTH_HEADERS_SSM_PARAMETER";

/// The auth header set from the SSM SecureString `name`.
pub(crate) async fn read_secure_parameter(
    sdk: &SdkConfig,
    name: &str,
) -> Result<String, InitError> {
    read_parameter(sdk, name)
        .await
        .map_err(|reason| InitError::AuthParameter {
            name: name.to_owned(),
            reason,
        })
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
    fn bad_endpoint_is_refused() {
        assert!(
            Settings::from_lookup(lookup(&[("RUNWAY_DYNAMODB_ENDPOINT", "localhost:8000")]))
                .is_err()
        );
    }

    #[tokio::test]
    async fn unknown_agent_fails_init_without_network() {
        let get = lookup(&[("RUNWAY_AGENT", "nope"), ("AWS_ACCESS_KEY_ID", "x")]);
        assert!(matches!(
            builtin_agent(get, []).await,
            Err(InitError::Config(_))
        ));
    }
}
