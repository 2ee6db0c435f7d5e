//! The repo's own Worker (feature `builtin-worker`): the built-in agent named by
//! `RUNWAY_AGENT` (`demo`, `echo`, `model` or `http-probe`), served through the public [`crate::fetch`] like any
//! user's agent.

use runway_core::agents::BuiltinAgent;
use worker::{Context, Env, Request, event};

use crate::download_client::DownloadClient;
use crate::entry::setting;
use crate::runtime::WorkersRuntime;

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> worker::Result<web_sys::Response> {
    crate::fetch_with(
        |env| {
            let name = setting(env, "RUNWAY_AGENT").unwrap_or_else(|| "demo".into());
            let agent =
                BuiltinAgent::from_settings(name.trim(), &WorkersRuntime, |k| setting(env, k))?;
            Ok(match agent {
                // Attachments are downloaded by `fetch` without following redirects (the
                // agent re-checks each hop).
                BuiltinAgent::Model(model) => BuiltinAgent::Model(
                    model.with_download_client(std::sync::Arc::new(DownloadClient)),
                ),
                other => other,
            })
        },
        req,
        env,
        ctx,
    )
    .await
}
