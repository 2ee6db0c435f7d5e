use crate::agent::{Agent, AgentResult, Turn};
use crate::output::Output;
use crate::runtime::Runtime;

use super::{DemoAgent, EchoAgent, HttpProbeAgent};

/// One of the shipped agents, chosen by name at start-up (`RUNWAY_AGENT`).
#[derive(Debug, Clone)]
pub enum BuiltinAgent<R> {
    /// [`DemoAgent`].
    Demo(DemoAgent<R>),
    /// [`EchoAgent`].
    Echo(EchoAgent),
    /// [`HttpProbeAgent`].
    HttpProbe(HttpProbeAgent),
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
    /// [`BuiltinAgent::from_name`], plus `http-probe` (which needs `RUNWAY_HTTP_PROBE_URL`).
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
        Self::from_name(name, rt).ok_or_else(|| {
            format!("unknown RUNWAY_AGENT {name:?}: choose one of demo, echo, http-probe")
        })
    }
}

impl<R: Runtime> Agent for BuiltinAgent<R> {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        match self {
            Self::Demo(a) => a.run(turn, out).await,
            Self::Echo(a) => a.run(turn, out).await,
            Self::HttpProbe(a) => a.run(turn, out).await,
        }
    }
}
