//! The repo's own Worker (feature `builtin-worker`): the built-in agent named by
//! `RUNWAY_AGENT` (`demo`, `echo`, `http-probe`, and `model` with the `model` feature), served
//! through the public [`crate::fetch`] like any user's agent.

#[cfg(feature = "model")]
use std::sync::Arc;

use runway_agents::BuiltinAgent;
use worker::{Context, Env, Request, event};

#[cfg(feature = "model")]
use crate::FILES_BINDING;
#[cfg(feature = "model")]
use crate::download_client::DownloadClient;
use crate::entry::setting;
#[cfg(feature = "model")]
use crate::kv_attachments::KvAttachmentStore;
use crate::runtime::WorkersRuntime;

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> worker::Result<web_sys::Response> {
    if setting(&env, runway_agents::WORKERS_SETTING).is_some_and(|v| !v.trim().is_empty()) {
        // The file names each worker's agent (model, a built-in): RUNWAY_AGENT is not used.
        return crate::fetch_with(|_| Ok(runway_core::Workers::new()), req, env, ctx).await;
    }
    crate::fetch_with(
        |env| {
            let name = runway_agents::settings::agent_name(|k| setting(env, k));
            let agent = BuiltinAgent::from_settings(&name, &WorkersRuntime, |k| setting(env, k))?;
            Ok(match agent {
                // Attachments are downloaded, and tools called, by `fetch` without following
                // redirects: the agent re-checks each hop (and keeps a tool's headers on its
                // own origin); MCP requests go the same way (a redirect is refused, so
                // configured headers reach the configured origin only).
                // Kept files go to the hosted files' KV namespace.
                #[cfg(feature = "model")]
                BuiltinAgent::Model(model) => {
                    let kv = env
                        .kv(FILES_BINDING)
                        .map_err(|_| format!("the {FILES_BINDING} KV binding is missing"))?;
                    BuiltinAgent::Model(
                        model
                            .with_download_client(Arc::new(DownloadClient))
                            .with_tool_client(Arc::new(DownloadClient))
                            .with_mcp_client(Arc::new(DownloadClient))
                            .with_attachment_store(Arc::new(KvAttachmentStore::new(kv))),
                    )
                }
                other => other,
            })
        },
        req,
        env,
        ctx,
    )
    .await
}
