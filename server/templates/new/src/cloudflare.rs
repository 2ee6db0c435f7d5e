//! The Cloudflare Worker (wasm32 only): every request goes to runway with [`MyAgent`]. The
//! `RunwayThread` Durable Object class (one per thread) comes from runway-cloudflare.

use worker::{Context, Env, Request, event};

use crate::MyAgent;

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> worker::Result<worker::web_sys::Response> {
    runway_cloudflare::fetch(MyAgent, req, env, ctx).await
}
