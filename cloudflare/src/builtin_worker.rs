//! The repo's own Worker (feature `builtin-worker`): the built-in agent named by
//! `RUNWAY_AGENT` (`demo`, `echo`, `http-probe`, and `model` with the `model` feature), served
//! through the public [`crate::fetch`] like any user's agent.

use runway_agents::BuiltinAgent;
use worker::{Context, Env, Request, event};

use crate::entry::setting;
use crate::runtime::WorkersRuntime;

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> worker::Result<web_sys::Response> {
    if setting(&env, runway_agents::WORKERS_SETTING).is_some_and(|v| !v.trim().is_empty()) {
        // The file names each worker's agent (model, a built-in): RUNWAY_AGENT is not used.
        return crate::fetch_with(|_| Ok(runway_core::Workers::new()), req, env, ctx).await;
    }
    crate::fetch_with_providers(
        |env| {
            let name = runway_agents::settings::agent_name(|k| setting(env, k));
            let agent = BuiltinAgent::from_settings(&name, &WorkersRuntime, |k| setting(env, k))?;
            Ok(match agent {
                #[cfg(feature = "model")]
                BuiltinAgent::Model(model) => {
                    // The tools file's OAuth providers, served with the agent.
                    let providers = model.settings().providers.clone();
                    let model = crate::entry::model_on_workers(model, crate::entry::files_kv(env)?);
                    (BuiltinAgent::Model(model), providers)
                }
                other => (other, Default::default()),
            })
        },
        req,
        env,
        ctx,
    )
    .await
}
