//! SSM SecureStrings, read once at init: the auth header set (`RUNWAY_AUTH_HEADERS_SSM_PARAMETER`)
//! and the vault key (`RUNWAY_VAULT_KEY_SSM_PARAMETER`), read by [`crate::init_agent`], and any setting `NAME` given instead as the parameter named
//! by `NAME_SSM_PARAMETER` ([`ParameterSettings`]): the model agent's key
//! (`RUNWAY_MODEL_API_KEY_SSM_PARAMETER`), a workers file's `${NAME}`, a tool's token.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Duration;

use aws_config::SdkConfig;
use futures::FutureExt;
use runway_core::http_client::ReqwestClient;

use crate::init_error::InitError;
use crate::ssm_request::{SsmError, get_parameter};

/// The setting naming the SSM SecureString that holds the auth header set.
pub(crate) const AUTH_PARAMETER: &str = "RUNWAY_AUTH_HEADERS_SSM_PARAMETER";

/// The setting naming the SSM SecureString that holds the vault key.
pub(crate) const VAULT_KEY_PARAMETER: &str = "RUNWAY_VAULT_KEY_SSM_PARAMETER";

/// The suffix of a setting naming the SSM parameter that holds another setting:
/// `OPENAI_KEY_SSM_PARAMETER` names the parameter holding `OPENAI_KEY`.
pub(crate) const PARAMETER_SUFFIX: &str = "_SSM_PARAMETER";

/// Reads of a parameter at init before giving up. A burst of cold starts can be throttled by
/// SSM (`GetParameter` allows 40 requests per second by default), and a transient error must
/// not cost a whole failed init; each read also has the SDK's own retries.
pub(crate) const SSM_ATTEMPTS: u32 = 3;

/// The settings given as SSM SecureStrings, read once at init. Holds secrets: no `Debug`.
pub(crate) struct ParameterSettings {
    /// Setting name → value.
    values: BTreeMap<String, String>,
}

impl ParameterSettings {
    /// Reads every setting `environment` (the function's environment variables) gives as a
    /// parameter: for each `NAME_SSM_PARAMETER` set and not blank, the SecureString it names
    /// becomes the setting `NAME`, over a `NAME` set too (as `RUNWAY_AUTH_HEADERS_SSM_PARAMETER`
    /// is over `RUNWAY_AUTH_HEADERS`; logged). The auth header set's and the vault key's
    /// parameters are left to [`crate::init_agent`] (the service reads them, not the agent).
    ///
    /// # Errors
    /// A parameter that cannot be read (after [`SSM_ATTEMPTS`] for transient errors) or is
    /// empty, or a `NAME_SSM_PARAMETER` that is not UTF-8: named, never with a value.
    pub(crate) async fn read(
        sdk: &SdkConfig,
        environment: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Result<Self, InitError> {
        let environment: Vec<(OsString, OsString)> = environment.into_iter().collect();
        let mut values = BTreeMap::new();
        for (key, value) in &environment {
            let key = key.to_string_lossy();
            let Some(setting) = key.strip_suffix(PARAMETER_SUFFIX) else {
                continue;
            };
            if setting.is_empty() || key == AUTH_PARAMETER || key == VAULT_KEY_PARAMETER {
                continue;
            }
            let Some(parameter) = value.to_str() else {
                return Err(InitError::Config(format!("{key} is not UTF-8")));
            };
            let parameter = parameter.trim();
            if parameter.is_empty() {
                continue;
            }
            let failed = |reason: String| InitError::SettingParameter {
                setting: setting.to_owned(),
                parameter: parameter.to_owned(),
                reason,
            };
            let read = read_parameter(sdk, parameter).await.map_err(failed)?;
            if read.trim().is_empty() {
                return Err(failed("the parameter is empty".into()));
            }
            let also_set = environment
                .iter()
                .any(|(k, v)| k.to_str() == Some(setting) && !v.is_empty());
            if also_set {
                tracing::warn!(
                    setting,
                    "{setting} is set, and {setting}{PARAMETER_SUFFIX} too: the parameter's value is used"
                );
            }
            values.insert(setting.to_owned(), read);
        }
        if !values.is_empty() {
            let names: Vec<&str> = values.keys().map(String::as_str).collect();
            tracing::info!(settings = ?names, "settings read from SSM parameters");
        }
        Ok(Self { values })
    }

    /// `get` with the settings read from SSM over it.
    pub(crate) fn over<'a>(
        &'a self,
        get: impl Fn(&str) -> Option<String> + 'a,
    ) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| self.values.get(k).cloned().or_else(|| get(k))
    }
}

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

/// An SSM SecureString's value ([`crate::ssm_request`]), retried on transient errors; the
/// error never contains the value.
///
/// Up to [`SSM_ATTEMPTS`] times `sdk`'s own retry attempts (4 with the function's
/// configuration: the attempts the SDK client's retries and this loop around it made together
/// before), waiting 200 ms doubling up to 1 s, with jitter, between them.
pub(crate) async fn read_parameter(sdk: &SdkConfig, name: &str) -> Result<String, String> {
    let http = ReqwestClient::new();
    let attempts = SSM_ATTEMPTS * sdk.retry_config().map_or(1, |r| r.max_attempts().max(1));
    let mut backoff = Duration::from_millis(200);
    let mut attempt = 1;
    loop {
        // Boxed as `dyn Future`: the exchange's future type (signing, the request, the
        // timeout) stays out of init's, which must fit rustc's default query depth (see
        // run.rs). Once per attempt, at init only.
        let e = match get_parameter(sdk, &http, name).boxed().await {
            Ok(value) => return value.ok_or_else(|| "the parameter has no value".to_owned()),
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
        ) || matches!(e, SsmError::Request(_));
        if permanent || attempt >= attempts {
            return Err(format!("{e} (after {attempt} attempt(s))"));
        }
        tracing::warn!(parameter = %name, attempt, error = %e, "reading an SSM parameter failed: retrying");
        tokio::time::sleep(backoff + Duration::from_millis(fastrand::u64(0..100))).await;
        backoff = (backoff * 2).min(Duration::from_secs(1));
        attempt += 1;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::os::unix::ffi::OsStringExt;
    use std::sync::{Arc, Mutex};

    use aws_config::retry::RetryConfig;
    use aws_config::{BehaviorVersion, Region};
    use aws_credential_types::Credentials;
    use aws_credential_types::provider::SharedCredentialsProvider;

    use super::*;

    /// An environment of `pairs`.
    pub(crate) fn environment(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    /// The lookup of `environment`.
    pub(crate) fn lookup(
        environment: &[(OsString, OsString)],
    ) -> impl Fn(&str) -> Option<String> + use<> {
        let map: BTreeMap<String, String> = environment
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect();
        move |k| map.get(k).cloned()
    }

    /// The secret of each access key the tests sign with (`sdk_for`'s, and the Lambda
    /// environment's of `sdk_config`'s tests).
    const SECRETS: &[(&str, &str)] = &[("AKIDTEST", "secret"), ("ASIALAMBDAROLE", "role-secret")];

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn hmac(key: &[u8], data: &str) -> Vec<u8> {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
        ring::hmac::sign(&key, data.as_bytes()).as_ref().to_vec()
    }

    fn sha256(data: &[u8]) -> String {
        hex(ring::digest::digest(&ring::digest::SHA256, data).as_ref())
    }

    /// Why the request (its head, lines after the request line, and body) is not a
    /// `GetParameter` signed with SigV4 by a key of [`SECRETS`] for SSM in us-east-1, as AWS
    /// checks it: the signature is computed here from the request as received, by the
    /// algorithm of AWS's SigV4 documentation (not by the signer the code uses).
    fn signature_problem(head: &str, body: &[u8]) -> Option<String> {
        let mut lines = head.lines();
        let request_line = lines.next().unwrap_or_default();
        if request_line != "POST / HTTP/1.1" {
            return Some(format!("request line {request_line:?}"));
        }
        let headers: BTreeMap<String, String> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let header = |k: &str| headers.get(k).map(String::as_str).unwrap_or_default();
        if header("x-amz-target") != "AmazonSSM.GetParameter"
            || header("content-type") != "application/x-amz-json-1.1"
        {
            return Some("not a JSON 1.1 AmazonSSM.GetParameter request".into());
        }
        let authorization = header("authorization");
        let Some(fields) = authorization.strip_prefix("AWS4-HMAC-SHA256 ") else {
            return Some("no SigV4 authorization".into());
        };
        let field = |name: &str| {
            fields
                .split(", ")
                .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
                .unwrap_or_default()
        };
        let scope: Vec<&str> = field("Credential").split('/').collect();
        let [key_id, date, region, service, "aws4_request"] = scope[..] else {
            return Some(format!("credential scope {scope:?}"));
        };
        if (region, service) != ("us-east-1", "ssm") {
            return Some(format!("signed for {service} in {region}"));
        }
        let Some((_, secret)) = SECRETS.iter().find(|(k, _)| *k == key_id) else {
            return Some(format!("unknown access key {key_id}"));
        };
        let amz_date = header("x-amz-date");
        if !amz_date.starts_with(date) {
            return Some("x-amz-date is not the scope's date".into());
        }
        let signed: Vec<&str> = field("SignedHeaders").split(';').collect();
        for needed in ["content-type", "host", "x-amz-date", "x-amz-target"] {
            if !signed.contains(&needed) {
                return Some(format!("{needed} is not signed"));
            }
        }
        if headers.contains_key("x-amz-security-token") && !signed.contains(&"x-amz-security-token")
        {
            return Some("the session token is not signed".into());
        }
        let canonical_headers: String = signed
            .iter()
            .map(|h| format!("{h}:{}\n", header(h)))
            .collect();
        let canonical = format!(
            "POST\n/\n\n{canonical_headers}\n{}\n{}",
            signed.join(";"),
            sha256(body)
        );
        let to_sign = format!(
            "AWS4-HMAC-SHA256\n{amz_date}\n{date}/{region}/{service}/aws4_request\n{}",
            sha256(canonical.as_bytes())
        );
        let mut key = hmac(format!("AWS4{secret}").as_bytes(), date);
        for part in [region, service, "aws4_request"] {
            key = hmac(&key, part);
        }
        if hex(&hmac(&key, &to_sign)) != field("Signature") {
            return Some("the signature does not match".into());
        }
        let request: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        if request["WithDecryption"] != true {
            return Some("not read with decryption".into());
        }
        None
    }

    /// A loopback stand-in for SSM: checks each request's SigV4 signature
    /// ([`signature_problem`]; `InvalidSignatureException` when wrong), answers `GetParameter`
    /// with `ThrottlingException` for the first `throttle` requests, then with the parameter of
    /// `parameters` (name, value) it names, or `ParameterNotFound`. Returns its URL and the
    /// names asked for, in order.
    pub(crate) async fn fake_ssm(
        throttle: usize,
        parameters: &[(&str, &str)],
    ) -> (String, Arc<Mutex<Vec<String>>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requested = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requested);
        let parameters: Arc<BTreeMap<String, String>> = Arc::new(
            parameters
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let seen = Arc::clone(&seen);
                let parameters = Arc::clone(&parameters);
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
                                let body = &buf[end + 4..end + 4 + len];
                                let problem = signature_problem(&text[..end], body);
                                let request: serde_json::Value =
                                    serde_json::from_slice(body).unwrap_or_default();
                                let name = request["Name"].as_str().unwrap_or_default().to_owned();
                                let n = {
                                    let mut seen = seen.lock().unwrap();
                                    seen.push(name.clone());
                                    seen.len() - 1
                                };
                                let (status, body) = if let Some(problem) = problem {
                                    (
                                        "400 Bad Request",
                                        serde_json::json!({"__type": "InvalidSignatureException", "message": problem}),
                                    )
                                } else if n < throttle {
                                    (
                                        "400 Bad Request",
                                        serde_json::json!({"__type": "ThrottlingException", "message": "Rate exceeded"}),
                                    )
                                } else if let Some(value) = parameters.get(&name) {
                                    (
                                        "200 OK",
                                        serde_json::json!({"Parameter": {"Name": name, "Type": "SecureString", "Value": value, "Version": 1}}),
                                    )
                                } else {
                                    (
                                        "400 Bad Request",
                                        serde_json::json!({"__type": "ParameterNotFound", "message": "not found"}),
                                    )
                                };
                                let body = body.to_string();
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
        (url, requested)
    }

    /// SDK config against `endpoint` without the SDK's own retries, so every attempt counted is
    /// one of `read_secure_parameter`'s.
    pub(crate) fn sdk_for(endpoint: &str) -> SdkConfig {
        SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .http_client(crate::sdk_http::https_client())
            .region(Region::new("us-east-1"))
            .endpoint_url(endpoint)
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "AKIDTEST", "secret", None, None, "test",
            )))
            .retry_config(RetryConfig::standard().with_max_attempts(1))
            .build()
    }

    #[tokio::test]
    async fn the_ssm_read_is_retried_at_init() {
        let (url, requested) = fake_ssm(2, &[("/runway/auth", "X-API-Key: k1")]).await;
        let value = read_secure_parameter(&sdk_for(&url), "/runway/auth")
            .await
            .unwrap();
        assert_eq!(value, "X-API-Key: k1");
        assert_eq!(requested.lock().unwrap().len(), 3);
    }

    /// The stand-in's signature check fails a request signed with another secret, so the
    /// tests that read through it prove the code's signature right.
    #[tokio::test]
    async fn a_request_signed_with_another_secret_is_refused() {
        let (url, requested) = fake_ssm(0, &[("/runway/auth", "X-API-Key: k1")]).await;
        let sdk = sdk_for(&url)
            .into_builder()
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "AKIDTEST",
                "not-the-secret",
                None,
                None,
                "test",
            )))
            .build();
        let e = read_parameter(&sdk, "/runway/auth").await.unwrap_err();
        assert!(
            e.contains("InvalidSignatureException") && e.contains("signature does not match"),
            "{e}"
        );
        assert!(!e.contains("X-API-Key"), "{e}");
        assert_eq!(requested.lock().unwrap().len(), SSM_ATTEMPTS as usize);
    }

    /// A 200 whose body is not SSM's JSON (a proxy's page) is a failed attempt, retried, and
    /// never read as a parameter without a value.
    #[tokio::test]
    async fn a_success_that_is_not_json_is_a_failed_attempt() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let answered = Arc::new(Mutex::new(0usize));
        let count = Arc::clone(&answered);
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let count = Arc::clone(&count);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 65536];
                    let mut read = 0;
                    // One request per connection is enough: the answer closes it.
                    while !String::from_utf8_lossy(&buf[..read]).contains("WithDecryption") {
                        match sock.read(&mut buf[read..]).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => read += n,
                        }
                    }
                    *count.lock().unwrap() += 1;
                    let page = "<html>captive portal</html>";
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{page}",
                        page.len()
                    );
                    let _ = sock.write_all(resp.as_bytes()).await;
                });
            }
        });
        let e = read_parameter(&sdk_for(&url), "/runway/auth")
            .await
            .unwrap_err();
        assert!(e.contains("not JSON"), "{e}");
        assert!(!e.contains("has no value"), "{e}");
        assert_eq!(*answered.lock().unwrap(), SSM_ATTEMPTS as usize);
    }

    #[tokio::test]
    async fn a_failed_ssm_read_names_the_parameter() {
        let (url, requested) = fake_ssm(usize::MAX, &[]).await;
        let e = read_secure_parameter(&sdk_for(&url), "/runway/auth")
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("/runway/auth"), "{e}");
        assert!(e.contains("ThrottlingException"), "{e}");
        assert_eq!(requested.lock().unwrap().len(), SSM_ATTEMPTS as usize);
    }

    #[tokio::test]
    async fn settings_given_as_parameters_are_read_once_and_win_over_the_environment() {
        let (url, requested) = fake_ssm(
            0,
            &[
                ("/runway/openai", "sk-from-ssm"),
                ("/runway/crm", "crm-token"),
            ],
        )
        .await;
        let env = environment(&[
            ("OPENAI_KEY_SSM_PARAMETER", "/runway/openai"),
            ("OPENAI_KEY", "sk-from-env"),
            ("CRM_TOKEN_SSM_PARAMETER", " /runway/crm\n"),
            ("SHOP_TOKEN", "shop-from-env"),
            ("BLANK_SSM_PARAMETER", " "),
            ("BLANK", "blank-from-env"),
            // Read by init_agent for the auth header set and the vault key, not here.
            ("RUNWAY_AUTH_HEADERS_SSM_PARAMETER", "/runway/auth"),
            ("RUNWAY_VAULT_KEY_SSM_PARAMETER", "/runway/vault"),
        ]);
        let parameters = ParameterSettings::read(&sdk_for(&url), env.clone())
            .await
            .unwrap();
        let get = parameters.over(lookup(&env));
        assert_eq!(get("OPENAI_KEY").as_deref(), Some("sk-from-ssm"));
        assert_eq!(get("CRM_TOKEN").as_deref(), Some("crm-token"));
        assert_eq!(get("SHOP_TOKEN").as_deref(), Some("shop-from-env"));
        assert_eq!(get("BLANK").as_deref(), Some("blank-from-env"));
        assert_eq!(get("RUNWAY_AUTH_HEADERS"), None);
        assert_eq!(get("RUNWAY_VAULT_KEY"), None);
        assert_eq!(get("MISSING"), None);
        let mut asked = requested.lock().unwrap().clone();
        asked.sort();
        assert_eq!(asked, ["/runway/crm", "/runway/openai"]);
    }

    #[tokio::test]
    async fn a_parameter_that_is_missing_or_empty_fails_init_naming_it() {
        let (url, requested) =
            fake_ssm(0, &[("/runway/empty", " "), ("/runway/ok", "sk-ok-1")]).await;
        let sdk = sdk_for(&url);
        let refused =
            async |env: Vec<(OsString, OsString)>| match ParameterSettings::read(&sdk, env).await {
                Ok(_) => panic!("init went on"),
                Err(e) => e.to_string(),
            };
        let e = refused(environment(&[
            ("OPENAI_KEY_SSM_PARAMETER", "/runway/missing"),
            ("OPENAI_KEY", "sk-from-env"),
        ]))
        .await;
        assert!(
            e.contains("OPENAI_KEY")
                && e.contains("/runway/missing")
                && e.contains("ParameterNotFound"),
            "{e}"
        );
        // Not retried: it cannot appear by itself; never the environment's value instead.
        assert_eq!(requested.lock().unwrap().len(), 1);
        assert!(!e.contains("sk-from-env"), "{e}");

        let e = refused(environment(&[
            ("CRM_TOKEN_SSM_PARAMETER", "/runway/ok"),
            ("OPENAI_KEY_SSM_PARAMETER", "/runway/empty"),
        ]))
        .await;
        assert!(e.contains("/runway/empty") && e.contains("empty"), "{e}");
        assert!(!e.contains("sk-ok-1"), "{e}");

        let not_utf8 = vec![(
            OsString::from("OPENAI_KEY_SSM_PARAMETER"),
            OsString::from_vec(vec![0xff]),
        )];
        let e = refused(not_utf8).await;
        assert!(e.contains("OPENAI_KEY_SSM_PARAMETER"), "{e}");
    }
}
