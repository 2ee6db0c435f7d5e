use runway_core::Output;
use runway_core::adapter::Runtime;
use runway_core::{Agent, AgentResult, Turn};

use super::{DemoAgent, EchoAgent, HttpProbeAgent};
#[cfg(feature = "model")]
use super::{ModelAgent, ModelSettings};

/// One of the shipped agents, chosen by name at start-up (`RUNWAY_AGENT`, see
/// [`crate::settings`]).
///
/// The model agent is there with the crate's `model` feature only: it and its attachments are
/// most of a Worker's size, so the repo's Worker leaves it out unless asked.
#[derive(Debug, Clone)]
pub enum BuiltinAgent<R> {
    /// [`DemoAgent`].
    Demo(DemoAgent<R>),
    /// [`EchoAgent`].
    Echo(EchoAgent),
    /// [`HttpProbeAgent`].
    HttpProbe(HttpProbeAgent),
    /// `ModelAgent` (feature `model`).
    #[cfg(feature = "model")]
    Model(ModelAgent<R>),
}

/// Every name [`BuiltinAgent::from_settings`] knows in this build.
#[cfg(feature = "model")]
const ALL_NAMES: &str = "demo, echo, http-probe, model";
/// Every name [`BuiltinAgent::from_settings`] knows in this build.
#[cfg(not(feature = "model"))]
const ALL_NAMES: &str = "demo, echo, http-probe";

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
    /// and, with the `model` feature, `model` (the `RUNWAY_MODEL_*` settings; tools from
    /// `RUNWAY_TOOLS`, since this runtime has no files: use `BuiltinAgent::model` where
    /// `RUNWAY_TOOLS_FILE` can be read).
    ///
    /// # Errors
    /// An unknown name (`model` in a build without it says so), or a setting the agent needs
    /// that is missing or unusable.
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
            #[cfg(feature = "model")]
            return Self::model(rt, setting, |_| {
                Err("this runtime has no files: put the tools in RUNWAY_TOOLS".into())
            });
            #[cfg(not(feature = "model"))]
            return Err(
                "RUNWAY_AGENT=model: this build has no model agent (build it with the `model` \
                 feature)"
                    .into(),
            );
        }
        Self::from_name(name, rt)
            .ok_or_else(|| format!("unknown RUNWAY_AGENT {name:?}: choose one of {ALL_NAMES}"))
    }
}

#[cfg(feature = "model")]
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
        // This future is as large as its largest variant's, and every turn's future holds it
        // inline: the model agent's and the HTTP probe's, larger than the demo's and echo's,
        // are boxed (one allocation on their own turns, none on the others').
        match self {
            Self::Demo(a) => a.run(turn, out).await,
            Self::Echo(a) => a.run(turn, out).await,
            Self::HttpProbe(a) => Box::pin(a.run(turn, out)).await,
            #[cfg(feature = "model")]
            Self::Model(a) => Box::pin(a.run(turn, out)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use runway_core::Agent;
    use runway_core::adapter::{Config, MemoryStore, Reply, Runway};
    use runway_core::testing::VirtualRuntime;

    use super::BuiltinAgent;
    use crate::DemoAgent;

    /// Bytes of the future `agent`'s turn runs in (what `runway serve` allocates per turn in
    /// flight): the engine's boxed future around the agent's own.
    fn turn_future_bytes<A: Agent>(agent: A, rt: &VirtualRuntime) -> usize {
        let runway = Runway::new(
            agent,
            MemoryStore::new(),
            rt.clone(),
            Config::unauthenticated(),
        );
        let body = serde_json::json!({
            "protocolVersion": "1",
            "runId": "run-1",
            "threadId": "thread-1",
            "agentId": "agent-1",
            "workspaceId": "ws-1",
            "input": "Hello",
        });
        let req = http::Request::post("http://127.0.0.1/runs")
            .header("content-type", "application/json")
            .body(Bytes::from(body.to_string()))
            .expect("request");
        let Reply::Stream { turn, .. } = futures::executor::block_on(runway.handle(req)) else {
            panic!("expected a streamed turn");
        };
        std::mem::size_of_val(&*turn)
    }

    /// An enum's future is as large as its largest variant's: the model agent's (and the HTTP
    /// probe's) are boxed inside `BuiltinAgent::run`, so a demo turn through the enum costs
    /// what a demo turn costs (its `self`, `turn`, `out` and the variant's tag besides).
    #[test]
    fn a_demo_turn_through_the_enum_is_no_larger_than_the_demo_agents_own() {
        let rt = VirtualRuntime::new();
        let own = turn_future_bytes(DemoAgent::new(rt.clone()), &rt);
        let through = turn_future_bytes(BuiltinAgent::Demo(DemoAgent::new(rt.clone())), &rt);
        assert!(
            through <= own + 64,
            "a demo turn's future: {own} bytes on its own, {through} through BuiltinAgent"
        );
    }

    #[test]
    fn names_resolve_and_an_unknown_one_lists_the_choices() {
        let rt = VirtualRuntime::new();
        let none = |_: &str| None;
        assert!(matches!(
            BuiltinAgent::from_settings("demo", &rt, none),
            Ok(BuiltinAgent::Demo(_))
        ));
        assert!(matches!(
            BuiltinAgent::from_settings("echo", &rt, none),
            Ok(BuiltinAgent::Echo(_))
        ));
        let e = BuiltinAgent::from_settings("nope", &rt, none).unwrap_err();
        assert!(e.contains("demo, echo, http-probe, model"), "{e}");
        let e = BuiltinAgent::from_settings("http-probe", &rt, none).unwrap_err();
        assert!(e.contains("RUNWAY_HTTP_PROBE_URL"), "{e}");
    }
}
