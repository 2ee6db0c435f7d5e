//! SSM's `GetParameter` as one SigV4-signed JSON request: the only SSM call the function makes
//! (at init, [`crate::ssm`]). SSM's own SDK crate, `aws-sdk-ssm`, cost 0.67 MB of the arm64
//! package stripped (0.14 MB gzip, BENCHMARKS.md "AWS Lambda") for this one call: its operation
//! serialisers, error types, endpoint rules and client plumbing. This is the same exchange with
//! what the package links already: the credentials, region and endpoint settings of the
//! shared [`SdkConfig`] ([`crate::sdk_config`]), `aws-sigv4` (the SDK's own signer) and the
//! agents' HTTP client (reqwest with rustls).
//!
//! The request is SSM's JSON 1.1 protocol: `POST /` with `X-Amz-Target:
//! AmazonSSM.GetParameter` and `{"Name": …, "WithDecryption": true}`; an error answers with a
//! 4xx or 5xx status and `{"__type": code, "message": …}`.

use std::time::{Duration, SystemTime};

use aws_config::SdkConfig;
use aws_credential_types::provider::ProvideCredentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_types::service_config::ServiceConfigKey;
use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use runway_core::http_client::{HttpClient, HttpRequest};

/// The action's `X-Amz-Target` header (the IAM action is `ssm:GetParameter`).
const GET_PARAMETER_TARGET: &str = "AmazonSSM.GetParameter";

/// SSM's JSON protocol version.
const CONTENT_TYPE_JSON: &str = "application/x-amz-json-1.1";

/// The signing name, and the service id of `AWS_ENDPOINT_URL_SSM`.
const SIGNING_NAME: &str = "ssm";
const SERVICE_ID: &str = "SSM";

/// The largest answer read: a parameter's value is at most 8 KB (advanced tier), its JSON
/// envelope (name, ARN, dates) a few hundred bytes more.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Longest wait for one attempt when the SDK configuration sets none.
const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(4);

/// Why one `GetParameter` attempt failed. Its text never contains the parameter's value.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SsmError {
    /// SSM answered with an error.
    #[error("{code}: {message} (HTTP {status})")]
    Service {
        /// The error code (`ParameterNotFound`, `ThrottlingException`, …).
        code: String,
        /// SSM's message.
        message: String,
        /// The HTTP status.
        status: u16,
    },
    /// No answer: the connection, the TLS handshake or the body failed, or the attempt timed
    /// out.
    #[error("{0}")]
    Transport(String),
    /// The credentials provider gave none (the container credentials endpoint may answer on
    /// a later attempt).
    #[error("no AWS credentials: {0}")]
    Credentials(String),
    /// The request cannot be made: no region, an invalid endpoint setting. Retrying cannot
    /// help.
    #[error("{0}")]
    Request(String),
}

impl SsmError {
    /// SSM's error code, when it answered with one.
    pub(crate) fn code(&self) -> Option<&str> {
        match self {
            Self::Service { code, .. } => Some(code),
            Self::Transport(_) | Self::Credentials(_) | Self::Request(_) => None,
        }
    }
}

/// The value of the SecureString `name`, decrypted, read once (no retry: [`crate::ssm`]
/// retries) with `sdk`'s credentials and region, at the endpoint its settings give, through
/// `http`, within `sdk`'s attempt timeout. `Ok(None)` when the parameter has no value.
pub(crate) async fn get_parameter(
    sdk: &SdkConfig,
    http: &dyn HttpClient,
    name: &str,
) -> Result<Option<String>, SsmError> {
    let request = signed_request(sdk, name).await?;
    let timeout = sdk
        .timeout_config()
        .and_then(|t| t.operation_attempt_timeout())
        .unwrap_or(DEFAULT_ATTEMPT_TIMEOUT);
    let exchange = async {
        let response = http
            .send(request)
            .await
            .map_err(|e| SsmError::Transport(e.to_string()))?;
        let status = response.status();
        let body = response
            .bytes_limited(MAX_RESPONSE_BYTES)
            .await
            .map_err(|e| SsmError::Transport(e.to_string()))?;
        Ok::<_, SsmError>((status, body))
    };
    let (status, body) = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| SsmError::Transport(format!("no answer within {timeout:?}")))??;
    if !status.is_success() {
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        return Err(service_error(status.as_u16(), &json));
    }
    // A success that is not SSM's JSON (a proxy's page, a cut answer) says nothing about the
    // parameter: an attempt that failed, retried, never "the parameter has no value".
    let json: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
        SsmError::Transport(format!(
            "SSM answered HTTP {status} with a body that is not JSON: {e}"
        ))
    })?;
    Ok(json["Parameter"]["Value"].as_str().map(str::to_owned))
}

/// The error SSM answered with: the code from `__type` (without the namespace some services
/// prefix, `com.amazonaws.ssm#`), the message from `message` or `Message`.
fn service_error(status: u16, json: &serde_json::Value) -> SsmError {
    let code = json["__type"]
        .as_str()
        .map(|t| t.rsplit('#').next().unwrap_or(t))
        .filter(|t| !t.is_empty())
        .unwrap_or("UnknownError")
        .to_owned();
    let message = json["message"]
        .as_str()
        .or_else(|| json["Message"].as_str())
        .unwrap_or_default()
        .to_owned();
    SsmError::Service {
        code,
        message,
        status,
    }
}

/// `GetParameter` for `name`, signed with the credentials `sdk` provides now.
async fn signed_request(sdk: &SdkConfig, name: &str) -> Result<HttpRequest, SsmError> {
    let region = sdk
        .region()
        .map(|r| r.as_ref().to_owned())
        .ok_or_else(|| SsmError::Request("no AWS region configured".into()))?;
    let url = endpoint(sdk, &region)?;
    let provider = sdk
        .credentials_provider()
        .ok_or_else(|| SsmError::Request("no AWS credentials provider configured".into()))?;
    let credentials = provider
        .provide_credentials()
        .await
        .map_err(|e| SsmError::Credentials(e.to_string()))?;

    let body = Bytes::from(serde_json::json!({"Name": name, "WithDecryption": true}).to_string());
    let host = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_owned(),
    };
    let mut headers = http::HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE_JSON));
    headers.insert(
        HeaderName::from_static("x-amz-target"),
        HeaderValue::from_static(GET_PARAMETER_TARGET),
    );
    headers.insert(
        http::header::HOST,
        HeaderValue::from_str(&host)
            .map_err(|_| SsmError::Request("the SSM endpoint's host is not valid".into()))?,
    );

    let identity = credentials.into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&region)
        .name(SIGNING_NAME)
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| SsmError::Request(format!("cannot sign the request: {e}")))?
        .into();
    let signable = SignableRequest::new(
        "POST",
        url.as_str(),
        headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_str().unwrap_or_default())),
        SignableBody::Bytes(&body),
    )
    .map_err(|e| SsmError::Request(format!("cannot sign the request: {e}")))?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|e| SsmError::Request(format!("cannot sign the request: {e}")))?
        .into_parts();
    for (header, value) in instructions.headers() {
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| SsmError::Request("a signature header is not valid".into()))?;
        // The session token and the signature are secrets: never shown in a header dump.
        value.set_sensitive(true);
        headers.insert(
            HeaderName::from_bytes(header.as_bytes())
                .map_err(|_| SsmError::Request("a signature header is not valid".into()))?,
            value,
        );
    }
    // The client sets the host from the URL itself.
    headers.remove(http::header::HOST);
    Ok(HttpRequest {
        method: http::Method::POST,
        url,
        headers,
        body,
    })
}

/// Where SSM is: the endpoint setting the SDK's clients honour (`AWS_ENDPOINT_URL_SSM`, then
/// `AWS_ENDPOINT_URL`, through `sdk`'s service settings; then `sdk`'s own endpoint URL), else
/// the regional endpoint `https://ssm.{region}.{partition's DNS suffix}`, as SSM's endpoint
/// rules give it without FIPS or dual-stack (which the function's configuration never asks
/// for).
fn endpoint(sdk: &SdkConfig, region: &str) -> Result<url::Url, SsmError> {
    let configured = ServiceConfigKey::builder()
        .service_id(SERVICE_ID)
        .env("AWS_ENDPOINT_URL")
        .profile("endpoint_url")
        .build()
        .ok()
        .and_then(|key| sdk.service_config()?.load_config(key))
        .or_else(|| sdk.endpoint_url().map(str::to_owned));
    let url = match configured {
        Some(url) => url,
        None => {
            let label = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
            if region.is_empty() || !region.chars().all(label) {
                return Err(SsmError::Request(format!(
                    "the AWS region {region:?} is not a valid region name"
                )));
            }
            format!("https://ssm.{region}.{}", dns_suffix(region))
        }
    };
    let url = url::Url::parse(url.trim())
        .map_err(|e| SsmError::Request(format!("the SSM endpoint URL is not valid: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(SsmError::Request(
            "the SSM endpoint URL is not an http(s) URL with a host".into(),
        ));
    }
    Ok(url)
}

/// The DNS suffix of the partition `region` is in, as the SDK's partition table
/// (`endpoint_lib/partition.rs` of every `aws-sdk-*` crate) matches it: China, the two isolated
/// partitions, and everything else (the commercial regions, GovCloud) under `amazonaws.com`.
fn dns_suffix(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "amazonaws.com.cn"
    } else if region.starts_with("us-isob-") {
        "sc2s.sgov.gov"
    } else if region.starts_with("us-iso-") {
        "c2s.ic.gov"
    } else {
        "amazonaws.com"
    }
}

#[cfg(test)]
mod tests {
    use aws_config::{BehaviorVersion, Region};

    use super::*;

    fn sdk(region: &str) -> SdkConfig {
        SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(region.to_owned()))
            .build()
    }

    /// The regional endpoints of SSM's own endpoint tests (aws-sdk-ssm's
    /// `config/endpoint.rs`), one per partition.
    #[test]
    fn the_regional_endpoint_is_the_partitions() {
        for (region, expected) in [
            ("us-east-1", "https://ssm.us-east-1.amazonaws.com/"),
            ("eu-west-3", "https://ssm.eu-west-3.amazonaws.com/"),
            ("us-gov-west-1", "https://ssm.us-gov-west-1.amazonaws.com/"),
            ("cn-north-1", "https://ssm.cn-north-1.amazonaws.com.cn/"),
            ("us-iso-east-1", "https://ssm.us-iso-east-1.c2s.ic.gov/"),
            (
                "us-isob-east-1",
                "https://ssm.us-isob-east-1.sc2s.sgov.gov/",
            ),
        ] {
            let url = endpoint(&sdk(region), region).unwrap();
            assert_eq!(url.as_str(), expected, "{region}");
        }
    }

    #[test]
    fn a_region_that_is_no_host_label_is_refused() {
        for region in ["", "us-east-1.evil.example", "us east 1", "US-EAST-1"] {
            let e = endpoint(&sdk(region), region).unwrap_err().to_string();
            assert!(e.contains("not a valid region"), "{region}: {e}");
        }
    }

    #[test]
    fn an_endpoint_setting_must_be_an_http_url() {
        let sdk = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url("file:///etc/passwd")
            .build();
        assert!(endpoint(&sdk, "us-east-1").is_err());
    }

    #[test]
    fn errors_take_the_code_without_its_namespace() {
        let e = service_error(
            400,
            &serde_json::json!({"__type": "com.amazonaws.ssm#ParameterNotFound", "Message": "gone"}),
        );
        assert_eq!(e.code(), Some("ParameterNotFound"));
        assert_eq!(e.to_string(), "ParameterNotFound: gone (HTTP 400)");
        let e = service_error(503, &serde_json::Value::Null);
        assert_eq!(e.code(), Some("UnknownError"));
    }
}
