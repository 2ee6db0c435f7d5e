//! Start-up: settings from the environment, the SDK clients, the auth header set.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use runway_agents::BuiltinAgent;
use runway_core::Agent;
use runway_core::adapter::{Config, Runway, TokioRuntime};
use runway_core::http_client::ReqwestClient;

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
    /// Built-in agent the repo's own `bootstrap` serves (`RUNWAY_AGENT`, default `demo`);
    /// a `bootstrap` serving its own agent through [`crate::run`] ignores it.
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

/// The built-in agent named by `RUNWAY_AGENT` in `get` (default `demo`).
///
/// # Errors
/// An invalid setting, an unknown agent name, or (for `model`) an unreadable key parameter.
pub async fn builtin_agent(
    get: impl Fn(&str) -> Option<String>,
) -> Result<BuiltinAgent<TokioRuntime>, InitError> {
    let settings = Settings::from_lookup(&get)?;
    if settings.agent == "model" {
        let sdk = sdk_config(&get).await;
        return Ok(match model_agent(&get, &sdk, &TokioRuntime).await? {
            // Downloaded attachments are kept in the table, for every instance.
            BuiltinAgent::Model(model) => BuiltinAgent::Model(
                model.with_attachment_store(std::sync::Arc::new(dynamo_store(&settings, &sdk))),
            ),
            other => other,
        });
    }
    BuiltinAgent::from_settings(&settings.agent, &TokioRuntime, &get).map_err(InitError::Config)
}

/// [`init_agent`] with the built-in agent named by `RUNWAY_AGENT` (see [`builtin_agent`]).
///
/// # Errors
/// As [`init_agent`], and an unknown agent name (found before any network request).
pub async fn init(get: impl Fn(&str) -> Option<String>) -> Result<App, InitError> {
    let agent = builtin_agent(&get).await?;
    init_agent(agent, get).await
}

/// The DynamoDB store on the table (and endpoint) of `settings`. Makes no request.
fn dynamo_store(settings: &Settings, sdk: &SdkConfig) -> DynamoStore {
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
    config.max_file_bytes = config.max_file_bytes.min(crate::store::MAX_FILE_BYTES);

    let store = dynamo_store(&settings, &sdk);
    if get("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK").is_some_and(|v| matches!(v.trim(), "1" | "true")) {
        tracing::warn!(
            "RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK=1: attachment links to loopback addresses are \
             downloaded. For tests only: never set it in production"
        );
    }
    let rt = TokioRuntime;
    tracing::info!(
        table = %settings.table,
        auth_headers = ?config.auth.names().collect::<Vec<_>>(),
        auth_source = if auth_from_ssm.is_some() { "ssm" } else { "env" },
        "runway-lambda ready"
    );
    let namespace = get("RUNWAY_METRICS_NAMESPACE").unwrap_or_default();
    Ok(Runway::new(agent, store, rt, config)
        .with_http_client(ReqwestClient::new())
        .with_metrics(crate::emf::EmfLine::new(&namespace)))
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

/// Reads of the auth parameter at init before giving up. A burst of cold starts can be
/// throttled by SSM (`GetParameter` allows 40 requests per second by default), and a
/// transient error must not cost a whole failed init; each read also has the SDK's own retries.
const SSM_ATTEMPTS: u32 = 3;

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

/// An SSM SecureString's value, retried on transient errors; the error never contains the
/// value.
async fn read_parameter(sdk: &SdkConfig, name: &str) -> Result<String, String> {
    use aws_sdk_ssm::error::ProvideErrorMetadata;
    let client = aws_sdk_ssm::Client::new(sdk);
    let mut backoff = Duration::from_millis(200);
    let mut attempt = 1;
    loop {
        let result = client
            .get_parameter()
            .name(name)
            .with_decryption(true)
            .send()
            .await;
        let e = match result {
            Ok(out) => {
                return out
                    .parameter
                    .and_then(|p| p.value)
                    .ok_or_else(|| "the parameter has no value".to_owned());
            }
            Err(e) => e,
        };
        // Retrying cannot help a parameter that does not exist or may not be read.
        let permanent = matches!(
            e.code(),
            Some(
                "ParameterNotFound"
                    | "ParameterVersionNotFound"
                    | "AccessDeniedException"
                    | "InvalidKeyId"
                    | "ValidationException"
            )
        );
        let detail = aws_sdk_ssm::error::DisplayErrorContext(&e).to_string();
        if permanent || attempt >= SSM_ATTEMPTS {
            return Err(format!("{detail} (after {attempt} attempt(s))"));
        }
        tracing::warn!(parameter = %name, attempt, error = %detail, "reading an SSM parameter failed: retrying");
        tokio::time::sleep(backoff + Duration::from_millis(fastrand::u64(0..100))).await;
        backoff *= 2;
        attempt += 1;
    }
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

    /// A loopback stand-in for SSM: answers `GetParameter` with `ThrottlingException` for the
    /// first `throttle` requests, then with the parameter. Returns its URL and a request count.
    async fn fake_ssm(throttle: usize) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = std::sync::Arc::clone(&count);
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let seen = std::sync::Arc::clone(&seen);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        let text = String::from_utf8_lossy(&buf).to_string();
                        if let Some(end) = text.find("\r\n\r\n") {
                            let len = text[..end]
                                .lines()
                                .find_map(|l| {
                                    let (k, v) = l.split_once(':')?;
                                    k.eq_ignore_ascii_case("content-length")
                                        .then(|| v.trim().parse::<usize>().ok())?
                                })
                                .unwrap_or(0);
                            if buf.len() >= end + 4 + len {
                                let n = seen.fetch_add(1, Ordering::SeqCst);
                                let (status, body) = if n < throttle {
                                    ("400 Bad Request", r#"{"__type":"ThrottlingException","message":"Rate exceeded"}"#.to_owned())
                                } else {
                                    ("200 OK", r#"{"Parameter":{"Name":"/runway/auth","Type":"SecureString","Value":"X-API-Key: k1","Version":1}}"#.to_owned())
                                };
                                let resp = format!(
                                    "HTTP/1.1 {status}\r\ncontent-type: application/x-amz-json-1.1\r\ncontent-length: {}\r\n\r\n{body}",
                                    body.len()
                                );
                                if sock.write_all(resp.as_bytes()).await.is_err() {
                                    return;
                                }
                                buf.clear();
                                continue;
                            }
                        }
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                });
            }
        });
        (url, count)
    }

    /// SDK config against `endpoint` without the SDK's own retries, so every attempt counted is
    /// one of `read_secure_parameter`'s.
    fn sdk_for(endpoint: &str) -> SdkConfig {
        SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(endpoint)
            .credentials_provider(aws_sdk_ssm::config::SharedCredentialsProvider::new(
                aws_sdk_ssm::config::Credentials::new("AKIDTEST", "secret", None, None, "test"),
            ))
            .retry_config(RetryConfig::standard().with_max_attempts(1))
            .build()
    }

    #[tokio::test]
    async fn the_ssm_read_is_retried_at_init() {
        let (url, count) = fake_ssm(2).await;
        let value = read_secure_parameter(&sdk_for(&url), "/runway/auth")
            .await
            .unwrap();
        assert_eq!(value, "X-API-Key: k1");
        assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_failed_ssm_read_names_the_parameter() {
        let (url, count) = fake_ssm(usize::MAX).await;
        let e = read_secure_parameter(&sdk_for(&url), "/runway/auth")
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("/runway/auth"), "{e}");
        assert!(e.contains("ThrottlingException"), "{e}");
        assert_eq!(
            count.load(std::sync::atomic::Ordering::SeqCst),
            SSM_ATTEMPTS as usize
        );
    }

    #[tokio::test]
    async fn unknown_agent_fails_init_without_network() {
        let get = lookup(&[("RUNWAY_AGENT", "nope"), ("AWS_ACCESS_KEY_ID", "x")]);
        assert!(matches!(init(get).await, Err(InitError::Config(_))));
    }
}
