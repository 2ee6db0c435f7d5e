//! [`LambdaModels`]: how a Lambda function runs a model agent, the built-in one
//! (`RUNWAY_AGENT=model`) and a workers file's model workers alike.

use std::ffi::OsString;
use std::sync::Arc;

use aws_config::SdkConfig;
use runway_agents::{BuiltinAgent, ModelAgent};
use runway_core::adapter::TokioRuntime;
use runway_core::{Agent, Workers};

use crate::init_error::InitError;
use crate::sdk_config::sdk_config;
use crate::settings::{Settings, dynamo_store};
use crate::ssm::ParameterSettings;
use crate::store::DynamoStore;

/// What every model agent of one function shares, made once at init: the settings given as
/// SSM parameters (`NAME_SSM_PARAMETER`: [`ParameterSettings`]) and the table, where
/// downloaded attachments are kept. Holds secrets: no `Debug`.
pub(crate) struct LambdaModels {
    parameters: ParameterSettings,
    files: Arc<DynamoStore>,
}

impl LambdaModels {
    /// Reads the settings `environment` (the function's environment variables) gives as SSM
    /// parameters; `get` reads the others.
    ///
    /// # Errors
    /// An invalid setting, or a parameter that cannot be read or is empty.
    pub(crate) async fn start(
        get: &impl Fn(&str) -> Option<String>,
        environment: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Result<Self, InitError> {
        let settings = Settings::from_lookup(get)?;
        let sdk = sdk_config(get).await;
        Self::with_sdk(&settings, &sdk, environment).await
    }

    /// [`LambdaModels::start`] with the settings and SDK configuration read already.
    pub(crate) async fn with_sdk(
        settings: &Settings,
        sdk: &SdkConfig,
        environment: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Result<Self, InitError> {
        Ok(Self {
            parameters: ParameterSettings::read(sdk, environment).await?,
            files: Arc::new(dynamo_store(settings, sdk)),
        })
    }

    /// `model` as every Lambda function runs it: downloaded attachments kept in the table (a
    /// later turn, on any instance, uses a file after its link expired), downloads, tools and
    /// MCP servers through the agent's own native clients (public addresses only, under its
    /// settings' policy).
    pub(crate) fn prepare(&self, model: ModelAgent<TokioRuntime>) -> ModelAgent<TokioRuntime> {
        model.with_attachment_store(self.files.clone())
    }

    /// The built-in model agent (`RUNWAY_AGENT=model`): its settings from `get` with the
    /// parameters over it (`RUNWAY_MODEL_API_KEY_SSM_PARAMETER` for the key), the tools from
    /// `RUNWAY_TOOLS` or `RUNWAY_TOOLS_FILE` (a file in the deployment package).
    ///
    /// # Errors
    /// A missing or invalid model setting.
    pub(crate) fn builtin(
        &self,
        get: &impl Fn(&str) -> Option<String>,
    ) -> Result<BuiltinAgent<TokioRuntime>, InitError> {
        match BuiltinAgent::model(
            &TokioRuntime,
            self.parameters.over(get),
            runway_agents::read_start_up_text,
        )
        .map_err(InitError::Config)?
        {
            BuiltinAgent::Model(model) => Ok(BuiltinAgent::Model(self.prepare(model))),
            other => Ok(other),
        }
    }

    /// The workers of the workers file (`RUNWAY_WORKERS`, or `RUNWAY_WORKERS_FILE` in the
    /// package), with `agent` as `agent = "main"`: `${NAME}` is the parameter named by
    /// `NAME_SSM_PARAMETER` if that is set, else the environment variable `NAME`, else the file
    /// is refused naming it; model workers run as the built-in model agent does.
    ///
    /// # Errors
    /// The workers file's first problem.
    pub(crate) fn workers<A: Agent>(
        &self,
        agent: A,
        get: &impl Fn(&str) -> Option<String>,
    ) -> Result<Workers, InitError> {
        runway_agents::workers_from_env(agent, &TokioRuntime, &self.parameters.over(get), &|m| {
            self.prepare(m)
        })
        .map_err(InitError::Config)
    }
}

#[cfg(test)]
mod tests {
    use runway_agents::EchoAgent;

    use super::*;
    use crate::ssm::tests::{environment, fake_ssm, lookup, sdk_for};

    const FILE: &str = "[workers.\"918273688800000200\"]\nagent = \"model\"\n\
        base_url = \"https://api.example.com/v1\"\nmodel = \"m\"\napi_key = \"${OPENAI_KEY}\"\n";

    /// A workers file's `${NAME}` on Lambda: the parameter, the environment, or a refusal
    /// naming it (never an empty key).
    #[tokio::test]
    async fn a_workers_files_references_resolve_from_ssm_or_the_environment_or_fail_init() {
        let (url, requested) = fake_ssm(0, &[("/runway/openai", "sk-from-ssm")]).await;
        let settings = Settings::from_lookup(|_| None).unwrap();
        let start = |pairs: &[(&str, &str)]| {
            let env = environment(&[&[("RUNWAY_WORKERS", FILE)], pairs].concat());
            let sdk = sdk_for(&url);
            let settings = settings.clone();
            async move {
                let models = LambdaModels::with_sdk(&settings, &sdk, env.clone()).await?;
                models.workers(EchoAgent, &lookup(&env))
            }
        };
        let served = |w: Result<Workers, InitError>| {
            w.map(|w| w.policy().serves("918273688800000200"))
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            served(start(&[("OPENAI_KEY_SSM_PARAMETER", "/runway/openai")]).await),
            Ok(true)
        );
        assert_eq!(*requested.lock().unwrap(), ["/runway/openai"]);
        assert_eq!(
            served(start(&[("OPENAI_KEY", "sk-from-env")]).await),
            Ok(true)
        );
        for unresolved in [
            &[][..],
            &[("OPENAI_KEY", "")][..],
            &[("OPENAI_KEY_SSM_PARAMETER", " ")][..],
        ] {
            let e = served(start(unresolved).await).unwrap_err();
            assert!(e.contains("OPENAI_KEY") && e.contains("line 5"), "{e}");
        }
        let e = served(start(&[("OPENAI_KEY_SSM_PARAMETER", "/runway/gone")]).await).unwrap_err();
        assert!(
            e.contains("/runway/gone") && e.contains("ParameterNotFound"),
            "{e}"
        );
    }
}
