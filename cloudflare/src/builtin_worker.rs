//! The repo's own Worker (feature `builtin-worker`): the built-in agent named by
//! `RUNWAY_AGENT` (`demo` or `echo`), served through the public [`crate::fetch`] like any
//! user's agent.

use runway_core::adapter::json_error;
use runway_core::agents::BuiltinAgent;
use worker::{Context, Env, Request, event};

use crate::entry::{full, setting};
use crate::runtime::WorkersRuntime;

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> worker::Result<web_sys::Response> {
    let name = setting(&env, "RUNWAY_AGENT").unwrap_or_else(|| "demo".into());
    match BuiltinAgent::from_name(name.trim(), &WorkersRuntime) {
        Some(agent) => crate::fetch(agent, req, env, ctx).await,
        None => {
            web_sys::console::error_1(
                &format!(
                    "runway cannot start: configuration: unknown RUNWAY_AGENT {name:?}: choose one of {:?}",
                    BuiltinAgent::<WorkersRuntime>::NAMES
                )
                .into(),
            );
            full(json_error(500, "agent misconfigured"))
        }
    }
}
