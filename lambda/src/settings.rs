//! Start-up: settings from the environment, the SDK clients, the auth header set.

use std::ffi::OsString;
use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use runway_agents::{BuiltinAgent, WORKERS_FILE_SETTING, WORKERS_SETTING};
use runway_core::Agent;
use runway_core::adapter::{Config, FIRST_FLUSH_BYTES, Runway, TokioRuntime};
use runway_core::connect::provider::Providers;
use runway_core::http_client::ReqwestClient;

use crate::App;
use crate::emf::{DEFAULT_NAMESPACE, EmfLine, METRICS_DETAIL_SETTING, MetricsDetail};
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

/// The shared SDK configuration: region from `AWS_REGION` (Lambda sets it) or
/// `AWS_DEFAULT_REGION`, else `us-east-1` (never the instance metadata service),
/// standard retries (exponential backoff with full jitter, throttling and transient errors
/// retried, 4 attempts) and timeouts that fit inside the engine's 8-second bound on a store
/// call, and the HTTPS client of [`crate::sdk_http`]. Loading it makes no network request;
/// credentials resolve on first use.
pub async fn sdk_config(get: impl Fn(&str) -> Option<String>) -> SdkConfig {
    let region = get("AWS_REGION")
        .or_else(|| get("AWS_DEFAULT_REGION"))
        .filter(|r| !r.trim().is_empty())
        .unwrap_or_else(|| "us-east-1".into());
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(crate::sdk_http::https_client())
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
    init_agent_with_providers(agent, get, Providers::new()).await
}

/// [`init_agent`], serving connected accounts at `providers` too (see
/// [`Runway::with_providers`]): the vault key is then required, from the SSM SecureString
/// named by `RUNWAY_VAULT_KEY_SSM_PARAMETER` or from `RUNWAY_VAULT_KEY`, and
/// `GET {base}/connect/{id}` and `GET {base}/callback` answer.
///
/// # Errors
/// As [`init_agent`]; an unreadable vault key parameter; providers without a vault key.
pub async fn init_agent_with_providers<A: Agent>(
    agent: A,
    get: impl Fn(&str) -> Option<String>,
    providers: Providers,
) -> Result<App<A>, InitError> {
    let sdk = sdk_config(&get).await;
    init_with_sdk(agent, get, providers, &sdk).await
}

/// [`init_agent_with_providers`] with the SDK configuration made already.
async fn init_with_sdk<A: Agent>(
    agent: A,
    get: impl Fn(&str) -> Option<String>,
    providers: Providers,
    sdk: &SdkConfig,
) -> Result<App<A>, InitError> {
    let settings = Settings::from_lookup(&get)?;
    let auth_from_ssm = match &settings.auth_parameter {
        Some(name) => Some(read_secure_parameter(sdk, name).await?),
        None => None,
    };
    let vault_key_from_ssm =
        match &settings.vault_key_parameter {
            Some(name) => Some(read_parameter(sdk, name).await.map_err(|reason| {
                InitError::SettingParameter {
                    setting: VAULT_KEY_SETTING.into(),
                    parameter: name.clone(),
                    reason,
                }
            })?),
            None => None,
        };
    let mut config = core_config(|k| {
        if k == "RUNWAY_AUTH_HEADERS"
            && let Some(v) = &auth_from_ssm
        {
            return Some(v.clone());
        }
        if k == VAULT_KEY_SETTING
            && let Some(v) = &vault_key_from_ssm
        {
            return Some(v.clone());
        }
        get(k)
    })?;
    // Without either setting the function starts but refuses every turn, naming what to set.
    config.access = config.access.naming_missing(format!(
        "{AUTH_PARAMETER} (the SSM SecureString holding the header set: the template's \
         AuthHeadersParameterName) or RUNWAY_AUTH_HEADERS"
    ));
    config.access.log_at_start();
    config.max_file_bytes = config.max_file_bytes.min(crate::store::MAX_FILE_BYTES);

    let store = dynamo_store(&settings, sdk);
    let rt = TokioRuntime;
    tracing::info!(
        table = %settings.table,
        auth_headers = ?config.access.header_names(),
        auth_source = if auth_from_ssm.is_some() { "ssm" } else { "env" },
        "runway-lambda ready"
    );
    Ok(Runway::new(agent, store, rt, config)
        .with_http_client(ReqwestClient::new())
        .with_providers(providers)
        .map_err(|e| InitError::Config(e.to_string()))?
        .with_metrics(emf_line(&settings)))
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

/// The setting naming the SSM SecureString that holds the auth header set.
pub(crate) const AUTH_PARAMETER: &str = "RUNWAY_AUTH_HEADERS_SSM_PARAMETER";

/// The vault key's setting (see [`runway_core::connect::vault`]).
pub(crate) const VAULT_KEY_SETTING: &str = "RUNWAY_VAULT_KEY";

/// The setting naming the SSM SecureString that holds the vault key.
pub(crate) const VAULT_KEY_PARAMETER: &str = "RUNWAY_VAULT_KEY_SSM_PARAMETER";

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

    fn acme() -> Providers {
        let mut providers = Providers::new();
        providers.add(runway_core::connect::provider::Provider {
            key: "acme".into(),
            name: "Acme CRM".into(),
            endpoints: runway_core::connect::provider::Endpoints::Given(
                runway_core::connect::provider::ProviderEndpoints {
                    authorize_url: "https://acme.example/auth".parse().unwrap(),
                    token_url: "https://acme.example/token".parse().unwrap(),
                },
            ),
            client_id: "runway".into(),
            client_secret: None,
            revocation_url: None,
            scopes: Vec::new(),
        });
        providers
    }

    #[tokio::test]
    async fn providers_take_the_vault_key_from_its_ssm_parameter_or_refuse_to_start() {
        use crate::ssm::tests::{fake_ssm, sdk_for};
        const KEY: &str = "q7Zk0m5l2YpQ3rJ8wX1vN6bT4cH9dF0aS2eG7uK5iLo=";
        let (url, requested) = fake_ssm(0, &[("/runway/vault", KEY)]).await;
        let sdk = sdk_for(&url);
        let init = async |pairs: &[(&str, &str)]| {
            init_with_sdk(runway_core::Workers::new(), lookup(pairs), acme(), &sdk)
                .await
                .map(|_| ())
        };
        init(&[(VAULT_KEY_PARAMETER, "/runway/vault")])
            .await
            .expect("the key from SSM");
        assert_eq!(*requested.lock().unwrap(), ["/runway/vault"]);
        init(&[(VAULT_KEY_SETTING, KEY)])
            .await
            .expect("the key from the environment");
        let e = init(&[]).await.unwrap_err().to_string();
        assert!(e.contains("RUNWAY_VAULT_KEY") && e.contains("acme"), "{e}");
        let e = init(&[(VAULT_KEY_PARAMETER, "/runway/gone")])
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("RUNWAY_VAULT_KEY") && e.contains("/runway/gone"),
            "{e}"
        );
        assert!(!e.contains(KEY), "{e}");
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
