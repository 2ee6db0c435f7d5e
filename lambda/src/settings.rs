//! Start-up: settings from the environment, the SDK clients, the auth header set.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use runway_core::agents::BuiltinAgent;
use runway_core::http_client::ReqwestClient;
use runway_core::{Config, Runway, TokioRuntime};

use crate::App;
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
    /// The SSM parameter holding the model's API key could not be read.
    #[error("cannot read the model API key from SSM parameter {name}: {reason}")]
    ModelKeyParameter {
        /// The parameter's name.
        name: String,
        /// What went wrong (never the value).
        reason: String,
    },
}

/// Lambda-specific settings (the rest is [`runway_core::Config`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// DynamoDB table (`RUNWAY_DYNAMODB_TABLE`, default `runway`).
    pub table: String,
    /// Endpoint override for a local DynamoDB (`RUNWAY_DYNAMODB_ENDPOINT`).
    pub dynamodb_endpoint: Option<String>,
    /// Name of the SSM SecureString holding the auth header set
    /// (`RUNWAY_AUTH_HEADERS_SSM_PARAMETER`); when unset, `RUNWAY_AUTH_HEADERS` is used as is.
    pub auth_parameter: Option<String>,
    /// Built-in agent to serve (`RUNWAY_AGENT`, default `demo`).
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
            auth_parameter: non_empty("RUNWAY_AUTH_HEADERS_SSM_PARAMETER"),
            agent: non_empty("RUNWAY_AGENT").unwrap_or_else(|| "demo".into()),
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

/// Builds the application from `get` (the environment): SDK config, the auth header set
/// (from SSM when `RUNWAY_AUTH_HEADERS_SSM_PARAMETER` is set), the DynamoDB store and the
/// agent. The only network request is the SSM read, when configured.
///
/// # Errors
/// Invalid settings, an unknown agent, or an unreadable auth parameter.
pub async fn init(get: impl Fn(&str) -> Option<String>) -> Result<App, InitError> {
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

    let mut dynamo = aws_sdk_dynamodb::config::Builder::from(&sdk);
    if let Some(endpoint) = &settings.dynamodb_endpoint {
        dynamo = dynamo.endpoint_url(endpoint);
    }
    let store = DynamoStore::new(
        aws_sdk_dynamodb::Client::from_conf(dynamo.build()),
        settings.table.clone(),
    );
    let rt = TokioRuntime;
    let agent = if settings.agent == "model" {
        model_agent(&get, &sdk, &rt).await?
    } else {
        BuiltinAgent::from_name(&settings.agent, &rt).ok_or_else(|| {
            InitError::Config(format!(
                "unknown agent {:?}: choose one of {:?}",
                settings.agent,
                BuiltinAgent::<TokioRuntime>::NAMES
            ))
        })?
    };
    tracing::info!(
        table = %settings.table,
        agent = %settings.agent,
        auth_headers = ?config.auth.names().collect::<Vec<_>>(),
        auth_source = if auth_from_ssm.is_some() { "ssm" } else { "env" },
        "runway-lambda ready"
    );
    Ok(Runway::new(agent, store, rt, config).with_http_client(ReqwestClient::new()))
}

/// The model agent (`RUNWAY_AGENT=model`): its API key from the SSM SecureString named by
/// `RUNWAY_MODEL_API_KEY_SSM_PARAMETER` when set (like the auth header set), else
/// `RUNWAY_MODEL_API_KEY`; the tools from `RUNWAY_TOOLS` or `RUNWAY_TOOLS_FILE` (a file in
/// the deployment package).
async fn model_agent(
    get: &impl Fn(&str) -> Option<String>,
    sdk: &SdkConfig,
    rt: &TokioRuntime,
) -> Result<BuiltinAgent<TokioRuntime>, InitError> {
    let key = match get(MODEL_KEY_PARAMETER).filter(|n| !n.trim().is_empty()) {
        Some(name) => Some(read_parameter(sdk, name.trim()).await.map_err(|reason| {
            InitError::ModelKeyParameter {
                name: name.trim().to_owned(),
                reason,
            }
        })?),
        None => None,
    };
    let setting = |k: &str| match (&key, k) {
        (Some(key), "RUNWAY_MODEL_API_KEY") => Some(key.clone()),
        _ => get(k),
    };
    let read = |path: &str| std::fs::read_to_string(path).map_err(|e| e.to_string());
    BuiltinAgent::model(rt, setting, read).map_err(InitError::Config)
}

/// The setting naming the SSM SecureString that holds the model's API key.
const MODEL_KEY_PARAMETER: &str = "RUNWAY_MODEL_API_KEY_SSM_PARAMETER";

async fn read_secure_parameter(sdk: &SdkConfig, name: &str) -> Result<String, InitError> {
    read_parameter(sdk, name)
        .await
        .map_err(|reason| InitError::AuthParameter {
            name: name.to_owned(),
            reason,
        })
}

/// An SSM SecureString's value; the error never contains the value.
async fn read_parameter(sdk: &SdkConfig, name: &str) -> Result<String, String> {
    let out = aws_sdk_ssm::Client::new(sdk)
        .get_parameter()
        .name(name)
        .with_decryption(true)
        .send()
        .await
        .map_err(|e| aws_sdk_ssm::error::DisplayErrorContext(&e).to_string())?;
    out.parameter
        .and_then(|p| p.value)
        .ok_or_else(|| "the parameter has no value".to_owned())
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
    fn bad_endpoint_is_refused() {
        assert!(
            Settings::from_lookup(lookup(&[("RUNWAY_DYNAMODB_ENDPOINT", "localhost:8000")]))
                .is_err()
        );
    }

    #[tokio::test]
    async fn unknown_agent_fails_init_without_network() {
        let get = lookup(&[("RUNWAY_AGENT", "nope"), ("AWS_ACCESS_KEY_ID", "x")]);
        assert!(matches!(init(get).await, Err(InitError::Config(_))));
    }
}
