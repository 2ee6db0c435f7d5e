use crate::agent::{Agent, AgentResult, Turn};
use crate::output::Output;
use crate::runtime::Runtime;

use super::{DemoAgent, EchoAgent};

/// One of the shipped agents, chosen by name at start-up (`RUNWAY_AGENT`).
#[derive(Debug, Clone)]
pub enum BuiltinAgent<R> {
    /// [`DemoAgent`].
    Demo(DemoAgent<R>),
    /// [`EchoAgent`].
    Echo(EchoAgent),
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
}

impl<R: Runtime> Agent for BuiltinAgent<R> {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        match self {
            Self::Demo(a) => a.run(turn, out).await,
            Self::Echo(a) => a.run(turn, out).await,
        }
    }
}
