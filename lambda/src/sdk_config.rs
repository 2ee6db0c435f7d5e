//! The shared AWS SDK configuration, built from what a Lambda execution environment provides
//! rather than by `aws_config::defaults(…).load()`. The default loader also reads the shared
//! config and credentials files (`~/.aws`) and links every credential source the SDK knows
//! (profiles, web identity and AssumeRole through an STS client, the EC2 instance metadata
//! service): 0.51 MB of the arm64 package, 0.24 MB gzip (BENCHMARKS.md, "AWS Lambda"), for
//! sources a function never has.
//!
//! What a function gets, and so what this reads:
//! - credentials: the execution role's, which Lambda puts in `AWS_ACCESS_KEY_ID`,
//!   `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` for the execution environment's
//!   lifetime; without them, the container credentials endpoint
//!   (`AWS_CONTAINER_CREDENTIALS_FULL_URI` or `_RELATIVE_URI`), the SDK's own provider;
//! - the region: `AWS_REGION` (or `AWS_DEFAULT_REGION`);
//! - endpoint overrides: `AWS_ENDPOINT_URL_<SERVICE>`, then `AWS_ENDPOINT_URL` (local
//!   emulators such as moto), as the SDK itself names them.

use std::sync::Arc;
use std::time::Duration;

use aws_config::ecs::EcsCredentialsProvider;
use aws_config::provider_config::ProviderConfig;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::Credentials;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_types::sdk_config::SharedHttpClient;
use aws_types::service_config::{LoadServiceConfig, ServiceConfigKey};

/// A lookup of environment variables that outlives the config (the service settings are read
/// when a client is made from it).
type SharedLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The shared SDK configuration: region from `AWS_REGION` (Lambda sets it) or
/// `AWS_DEFAULT_REGION`, else `us-east-1` (never the instance metadata service); credentials
/// from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, else from the
/// container credentials endpoint (never a profile in `~/.aws`); endpoint URLs from the process
/// environment's `AWS_ENDPOINT_URL_<SERVICE>` or `AWS_ENDPOINT_URL`, read as each client is made;
/// standard retries (exponential backoff with full jitter, throttling and transient errors
/// retried, 4 attempts) and timeouts that fit inside the engine's 8-second bound on a store
/// call; and the HTTPS client of [`crate::sdk_http`]. `get` is the environment the region and
/// the credentials are read from. Building it makes no network request and reads no file.
pub async fn sdk_config(get: impl Fn(&str) -> Option<String>) -> SdkConfig {
    lambda_sdk_config(get, Arc::new(|k: &str| std::env::var(k).ok()))
}

/// [`sdk_config`], with the endpoint URLs read from `endpoints`.
fn lambda_sdk_config(get: impl Fn(&str) -> Option<String>, endpoints: SharedLookup) -> SdkConfig {
    let non_empty = |k: &str| get(k).filter(|v| !v.trim().is_empty());
    let region = non_empty("AWS_REGION")
        .or_else(|| non_empty("AWS_DEFAULT_REGION"))
        .unwrap_or_else(|| "us-east-1".into());
    let http_client = crate::sdk_http::https_client();
    let credentials = match (
        non_empty("AWS_ACCESS_KEY_ID"),
        non_empty("AWS_SECRET_ACCESS_KEY"),
    ) {
        (Some(id), Some(secret)) => SharedCredentialsProvider::new(Credentials::new(
            id,
            secret,
            non_empty("AWS_SESSION_TOKEN"),
            None,
            "Environment",
        )),
        _ => {
            if non_empty("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_none()
                && non_empty("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_none()
            {
                tracing::warn!(
                    "no AWS credentials in the environment (AWS_ACCESS_KEY_ID and \
                     AWS_SECRET_ACCESS_KEY, or a container credentials endpoint): AWS requests \
                     will fail; profiles in ~/.aws are not read"
                );
            }
            container_credentials(http_client.clone())
        }
    };
    SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region))
        .credentials_provider(credentials)
        .service_config(EndpointUrls(endpoints))
        .http_client(http_client)
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
        .build()
}

/// The container credentials endpoint's credentials (the SDK's provider, which reads
/// `AWS_CONTAINER_CREDENTIALS_*` from the process environment on first use and fails then,
/// naming them, when neither is set).
fn container_credentials(http_client: SharedHttpClient) -> SharedCredentialsProvider {
    SharedCredentialsProvider::new(
        EcsCredentialsProvider::builder()
            .configure(&ProviderConfig::without_region().with_http_client(http_client))
            .build(),
    )
}

/// The service settings a client reads from the SDK configuration (the SDK asks only for
/// `AWS_ENDPOINT_URL`): the service's own variable (`AWS_ENDPOINT_URL_SSM`, the service id
/// upper-cased, spaces as `_`) over the global one, as the default loader's environment
/// lookup, without the shared config file.
struct EndpointUrls(SharedLookup);

impl std::fmt::Debug for EndpointUrls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EndpointUrls(environment)")
    }
}

impl LoadServiceConfig for EndpointUrls {
    fn load_config(&self, key: ServiceConfigKey<'_>) -> Option<String> {
        let service = key.service_id().to_uppercase().replace(' ', "_");
        let non_empty = |k: &str| (self.0)(k).filter(|v| !v.trim().is_empty());
        non_empty(&format!("{}_{service}", key.env())).or_else(|| non_empty(key.env()))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use aws_credential_types::provider::ProvideCredentials;

    use super::*;
    use crate::ssm::read_parameter;
    use crate::ssm::tests::fake_ssm;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + Send + Sync + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    const LAMBDA_CREDENTIALS: &[(&str, &str)] = &[
        ("AWS_ACCESS_KEY_ID", "ASIALAMBDAROLE"),
        ("AWS_SECRET_ACCESS_KEY", "role-secret"),
        ("AWS_SESSION_TOKEN", "role-session-token"),
    ];

    #[tokio::test]
    async fn the_credentials_and_region_are_what_lambda_sets_in_the_environment() {
        let sdk = lambda_sdk_config(
            lookup(&[LAMBDA_CREDENTIALS, &[("AWS_REGION", "eu-west-3")]].concat()),
            Arc::new(lookup(&[])),
        );
        assert_eq!(sdk.region().map(Region::as_ref), Some("eu-west-3"));
        let credentials = sdk
            .credentials_provider()
            .expect("a credentials provider")
            .provide_credentials()
            .await
            .expect("the environment's credentials");
        assert_eq!(credentials.access_key_id(), "ASIALAMBDAROLE");
        assert_eq!(credentials.secret_access_key(), "role-secret");
        assert_eq!(credentials.session_token(), Some("role-session-token"));

        let sdk = lambda_sdk_config(
            lookup(&[("AWS_DEFAULT_REGION", "ap-south-1"), ("AWS_REGION", " ")]),
            Arc::new(lookup(&[])),
        );
        assert_eq!(sdk.region().map(Region::as_ref), Some("ap-south-1"));
        let sdk = lambda_sdk_config(lookup(&[]), Arc::new(lookup(&[])));
        assert_eq!(sdk.region().map(Region::as_ref), Some("us-east-1"));
    }

    /// The endpoint override is how the tests reach moto: the service's own variable first,
    /// then the global one, and another service's never.
    #[tokio::test]
    async fn clients_take_their_endpoint_from_aws_endpoint_url_variables() {
        let (ssm_url, requested) = fake_ssm(0, &[("/runway/auth", "X-API-Key: k1")]).await;
        let (other_url, other_requested) = fake_ssm(0, &[("/runway/auth", "X-API-Key: k2")]).await;
        let read = async |endpoints: &[(&str, &str)]| {
            let sdk = lambda_sdk_config(lookup(LAMBDA_CREDENTIALS), Arc::new(lookup(endpoints)));
            read_parameter(&sdk, "/runway/auth").await
        };

        let value = read(&[
            ("AWS_ENDPOINT_URL_SSM", &ssm_url),
            ("AWS_ENDPOINT_URL", &other_url),
            ("AWS_ENDPOINT_URL_DYNAMODB", &other_url),
        ])
        .await;
        assert_eq!(value.as_deref(), Ok("X-API-Key: k1"));
        assert_eq!(*requested.lock().unwrap(), ["/runway/auth"]);
        assert!(other_requested.lock().unwrap().is_empty());

        let value = read(&[("AWS_ENDPOINT_URL", &ssm_url)]).await;
        assert_eq!(value.as_deref(), Ok("X-API-Key: k1"));
        assert_eq!(requested.lock().unwrap().len(), 2);

        let value = read(&[
            ("AWS_ENDPOINT_URL_DYNAMODB", &other_url),
            ("AWS_ENDPOINT_URL_SSM", " "),
            ("AWS_ENDPOINT_URL", &ssm_url),
        ])
        .await;
        assert_eq!(value.as_deref(), Ok("X-API-Key: k1"));
        assert_eq!(requested.lock().unwrap().len(), 3);
        assert!(other_requested.lock().unwrap().is_empty());
    }

    /// The SSM endpoint sees the environment's access key in the request's signature, and its
    /// session token.
    #[tokio::test]
    async fn requests_are_signed_with_the_environments_credentials() {
        let (url, heads) = signature_recorder().await;
        let sdk = lambda_sdk_config(
            lookup(LAMBDA_CREDENTIALS),
            Arc::new(lookup(&[("AWS_ENDPOINT_URL", &url)])),
        );
        // The recorder answers nothing useful: only the request matters.
        let _ = read_parameter(&sdk, "/runway/auth").await;
        let heads = heads.lock().unwrap();
        let first = heads.first().expect("a request reached the endpoint");
        assert!(
            first.contains("Credential=ASIALAMBDAROLE/") && first.contains("role-session-token"),
            "{first}"
        );
    }

    /// A loopback server that keeps each request's head and answers 400.
    async fn signature_recorder() -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let heads = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&heads);
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf).to_string());
                let body = r#"{"__type":"ValidationException","message":"recorded"}"#;
                let _ = sock
                    .write_all(
                        format!(
                            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/x-amz-json-1.1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .await;
            }
        });
        (url, heads)
    }
}
