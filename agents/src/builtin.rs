use runway_core::Output;
use runway_core::adapter::Runtime;
use runway_core::{Agent, AgentResult, Turn};

use super::{DemoAgent, EchoAgent, HttpProbeAgent, ModelAgent, ModelSettings};

/// One of the shipped agents, chosen by name at start-up (`RUNWAY_AGENT`).
#[derive(Debug, Clone)]
pub enum BuiltinAgent<R> {
    /// [`DemoAgent`].
    Demo(DemoAgent<R>),
    /// [`EchoAgent`].
    Echo(EchoAgent),
    /// [`HttpProbeAgent`].
    HttpProbe(HttpProbeAgent),
    /// [`ModelAgent`].
    Model(ModelAgent<R>),
}

impl<R: Runtime + Clone> BuiltinAgent<R> {
    /// Names accepted by [`BuiltinAgent::from_name`].
    pub const NAMES: [&'static str; 2] = ["demo", "echo"];

    /// The agent called `name`, if there is one.
    pub fn from_name(name: &str, rt: &R) -> Option<Self> {
        match name {
            "demo" => Some(Self::Demo(DemoAgent::new(rt.clone()))),
            "echo" => Some(Self::Echo(EchoAgent)),
            _ => None,
        }
    }

    /// The agent called `name`, with the settings it needs read through `setting`: like
    /// [`BuiltinAgent::from_name`], plus `http-probe` (which needs `RUNWAY_HTTP_PROBE_URL`)
    /// and `model` (the `RUNWAY_MODEL_*` settings; tools from `RUNWAY_TOOLS`, since this
    /// runtime has no files: use [`BuiltinAgent::model`] where `RUNWAY_TOOLS_FILE` can be read).
    pub fn from_settings(
        name: &str,
        rt: &R,
        setting: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        if name == "http-probe" {
            let url = setting(HttpProbeAgent::URL_SETTING).ok_or_else(|| {
                format!(
                    "RUNWAY_AGENT=http-probe needs {}",
                    HttpProbeAgent::URL_SETTING
                )
            })?;
            return Ok(Self::HttpProbe(HttpProbeAgent::new(url.trim())));
        }
        if name == "model" {
            return Self::model(rt, setting, |_| {
                Err("this runtime has no files: put the tools in RUNWAY_TOOLS".into())
            });
        }
        Self::from_name(name, rt).ok_or_else(|| {
            format!("unknown RUNWAY_AGENT {name:?}: choose one of demo, echo, http-probe, model")
        })
    }
}

impl<R: Runtime + Clone> BuiltinAgent<R> {
    /// The `model` agent ([`ModelAgent`]) from the settings read through `setting`, reading
    /// `RUNWAY_TOOLS_FILE` with `read_file`.
    ///
    /// # Errors
    /// A setting that is missing or unusable, or a tools file refused (line and reason).
    pub fn model(
        rt: &R,
        setting: impl Fn(&str) -> Option<String>,
        read_file: impl Fn(&str) -> Result<String, String>,
    ) -> Result<Self, String> {
        let settings = ModelSettings::from_lookup(setting, read_file)
            .map_err(|e| format!("RUNWAY_AGENT=model: {e}"))?;
        Ok(Self::Model(ModelAgent::new(settings, rt.clone())))
    }
}

impl<R: Runtime> Agent for BuiltinAgent<R> {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        match self {
            Self::Demo(a) => a.run(turn, out).await,
            Self::Echo(a) => a.run(turn, out).await,
            Self::HttpProbe(a) => a.run(turn, out).await,
            Self::Model(a) => a.run(turn, out).await,
        }
    }
}
