//! The repo's own Worker (feature `builtin-worker`): the built-in agent named by
//! `RUNWAY_AGENT` (`demo`, `echo`, `model` or `http-probe`), served through the public [`crate::fetch`] like any
//! user's agent.

use runway_core::adapter::json_error;
use runway_core::agents::BuiltinAgent;
use worker::{Context, Env, Request, event};

use crate::entry::{full, setting};
use crate::runtime::WorkersRuntime;

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> worker::Result<web_sys::Response> {
    let name = setting(&env, "RUNWAY_AGENT").unwrap_or_else(|| "demo".into());
    match BuiltinAgent::from_settings(name.trim(), &WorkersRuntime, |k| setting(&env, k)) {
        Ok(agent) => crate::fetch(agent, req, env, ctx).await,
        Err(e) => {
            web_sys::console::error_1(&format!("runway cannot start: configuration: {e}").into());
            full(json_error(500, "agent misconfigured"))
        }
    }
}
