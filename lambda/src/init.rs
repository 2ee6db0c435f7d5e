//! Init: the application a function serves, from its settings, its SSM parameters and the
//! DynamoDB store, and the built-in agent the repo's own `bootstrap` serves.

use std::ffi::OsString;

use aws_config::SdkConfig;
use runway_agents::BuiltinAgent;
use runway_core::Agent;
use runway_core::adapter::{Runway, TokioRuntime};
use runway_core::connect::provider::Providers;
use runway_core::http_client::ReqwestClient;

use crate::App;
use crate::init_error::InitError;
use crate::model_agents::LambdaModels;
use crate::sdk_config::sdk_config;
use crate::settings::{Settings, core_config, dynamo_store, emf_line};
use crate::ssm::{AUTH_PARAMETER, read_parameter, read_secure_parameter};

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

/// The vault key's setting (see [`runway_core::connect::vault`]).
const VAULT_KEY_SETTING: &str = "RUNWAY_VAULT_KEY";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssm::VAULT_KEY_PARAMETER;
    use crate::ssm::tests::environment;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        crate::ssm::tests::lookup(&environment(pairs))
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
