//! `GET {base}/connect/{id}` and `GET {base}/callback`: the two routes of a connection being
//! made (see [`crate::connect`]). A browser opens them, without Console's header set: the
//! single-use state in the path or query is what authorizes them. They answer a redirect or a
//! small HTML page, never JSON, and name no token.

use bytes::Bytes;

use crate::agent::Agent;
use crate::connect::{CallbackOutcome, LinkOutcome};
use crate::platform::runtime::Runtime;
use crate::service::Runway;
use crate::store::TurnStore;

impl<A: Agent, S: TurnStore, R: Runtime> Runway<A, S, R> {
    /// `GET {base}/connect/{id}`.
    pub(crate) async fn connect_route(&self, id: &str) -> http::Response<Bytes> {
        let Some(connections) = &self.engine.connections else {
            return page(404, "Not found", "Connected accounts are not set up here.");
        };
        match connections
            .open_link(&self.engine.store, &self.engine.rt, id)
            .await
        {
            Ok(LinkOutcome::Redirect(to)) => http::Response::builder()
                .status(302)
                .header(http::header::LOCATION, to)
                .header(http::header::CACHE_CONTROL, "no-store")
                .header("referrer-policy", "no-referrer")
                .body(Bytes::new())
                .unwrap_or_else(|_| page(500, "Error", "Could not start the connection.")),
            Ok(LinkOutcome::Unreachable(name)) => page(
                502,
                "Not available",
                &format!("{name} cannot be reached right now. Ask the assistant again later."),
            ),
            Ok(LinkOutcome::Refused) => page(
                404,
                "Link expired",
                "This link was already used or has expired. Ask the assistant again to get a new one.",
            ),
            Err(e) => self.store_failed(&e),
        }
    }

    /// `GET {base}/callback?…`.
    pub(crate) async fn callback_route(&self, query: &str) -> http::Response<Bytes> {
        let Some(connections) = &self.engine.connections else {
            return page(404, "Not found", "Connected accounts are not set up here.");
        };
        match connections
            .callback(&self.engine.store, &self.engine.rt, query)
            .await
        {
            Ok(CallbackOutcome::Connected(name)) => connected_page(&name),
            Ok(CallbackOutcome::Declined(name, code)) => page(
                403,
                "Not connected",
                &format!(
                    "{name} was not connected ({code}). You can close this window and try again."
                ),
            ),
            Ok(CallbackOutcome::Refused) => page(
                400,
                "Link expired",
                "This sign-in was already used, has expired, or did not come from here. Nothing was changed.",
            ),
            Ok(CallbackOutcome::Failed(name)) => page(
                502,
                "Not connected",
                &format!("{name} did not confirm the connection. Close this window and try again."),
            ),
            Err(e) => self.store_failed(&e),
        }
    }

    /// `GET {base}/oauth-client.json`: the Client ID Metadata Document an MCP server's
    /// authorization server reads when runway's `client_id` is its URL. Served only where an
    /// MCP server has `auth = "oauth"`; public (the authorization server fetches it), and it
    /// names nothing secret.
    #[cfg(feature = "mcp-authorization")]
    pub(crate) fn client_document_route(&self, public_base_url: &str) -> http::Response<Bytes> {
        let served = self
            .engine
            .connections
            .as_ref()
            .is_some_and(|c| c.has_mcp_servers());
        if !served {
            return crate::service::json_error(404, "no OAuth client document here");
        }
        let doc = crate::connect::client_registration::client_document(public_base_url);
        let mut r = crate::service::json_response(200, &doc);
        r.headers_mut().insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("max-age=300"),
        );
        r
    }

    /// Without feature `mcp-authorization` no MCP server has `auth = "oauth"`: nothing here.
    #[cfg(not(feature = "mcp-authorization"))]
    pub(crate) fn client_document_route(&self, _public_base_url: &str) -> http::Response<Bytes> {
        crate::service::json_error(404, "no OAuth client document here")
    }

    fn store_failed(&self, e: &crate::error::StoreError) -> http::Response<Bytes> {
        self.engine.note_store_error();
        tracing::error!(code = "STORE_UNAVAILABLE", error = %e, "connect route: the store failed");
        page(
            503,
            "Try again",
            "Storage is unavailable right now. Try again in a moment.",
        )
    }
}

/// The connected page's only script (static: the provider comes from the `data-provider`
/// attribute), allowed by its hash in `CONNECTED_PAGE_CSP`.
macro_rules! connected_script {
    () => {
        "try{new BroadcastChannel(\"runway-connect\").postMessage(\
         {type:\"connected\",provider:document.body.dataset.provider})}catch(e){}"
    };
}
#[cfg(test)]
const CONNECTED_SCRIPT: &str = connected_script!();
macro_rules! connected_script_tag {
    () => {
        concat!("<script>", connected_script!(), "</script>")
    };
}
/// The page a connection ends on. Besides saying so, it tells pages of the deployment's own
/// origin (the playground of `runway serve`) on the `runway-connect` broadcast channel, so the
/// playground's card can resume the thread the way Console does when its popup closes. The
/// channel reaches same-origin pages only and carries the provider's display name, nothing else.
fn connected_page(name: &str) -> http::Response<Bytes> {
    let mut r = page(
        200,
        "Connected",
        &format!("{name} is connected. You can close this window."),
    );
    let body = String::from_utf8_lossy(r.body())
        .replacen(
            "<body ",
            &format!("<body data-provider=\"{}\" ", escape(name)),
            1,
        )
        .replacen("</body>", concat!(connected_script_tag!(), "</body>"), 1);
    *r.body_mut() = Bytes::from(body);
    r.headers_mut().insert(
        "content-security-policy",
        http::HeaderValue::from_static(CONNECTED_PAGE_CSP),
    );
    r
}

/// `script-src` allows the connected page's script alone (its SHA-256, checked by a test).
const CONNECTED_PAGE_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; \
     script-src 'sha256-Rkjkk7oRoMJojIzjXhnFLAlFDRxiDP0XzpntytKc1bk='";

/// A small HTML page: `title` and `message`, escaped.
fn page(status: u16, title: &str, message: &str) -> http::Response<Bytes> {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width\"><title>{}</title></head><body style=\"font-family:\
         system-ui,sans-serif;max-width:32rem;margin:3rem auto\"><h1>{}</h1><p>{}</p></body></html>",
        escape(title),
        escape(title),
        escape(message)
    );
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "text/html; charset=utf-8")
        .header(http::header::CACHE_CONTROL, "no-store")
        .header(
            "content-security-policy",
            "default-src 'none'; style-src 'unsafe-inline'",
        )
        .body(Bytes::from(body))
        .unwrap_or_default()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    #[test]
    fn pages_escape_what_they_show() {
        let r = super::page(200, "x", "<script>a&b</script>");
        let body = String::from_utf8(r.body().to_vec()).unwrap();
        assert!(body.contains("&lt;script&gt;a&amp;b"), "{body}");
    }

    #[test]
    fn the_connected_page_runs_its_one_script_and_names_the_provider_escaped() {
        use base64::Engine as _;
        use sha2::Digest as _;
        let r = super::connected_page("Acme \"CRM\" <x>");
        let body = String::from_utf8(r.body().to_vec()).unwrap();
        assert!(
            body.contains("data-provider=\"Acme &quot;CRM&quot; &lt;x&gt;\""),
            "{body}"
        );
        assert!(
            body.ends_with(concat!(connected_script_tag!(), "</body></html>")),
            "{body}"
        );
        let hash = base64::engine::general_purpose::STANDARD
            .encode(sha2::Sha256::digest(super::CONNECTED_SCRIPT.as_bytes()));
        let csp = r.headers()["content-security-policy"].to_str().unwrap();
        assert!(
            csp.contains(&format!("script-src 'sha256-{hash}'")),
            "{csp} vs {hash}"
        );
        assert_eq!(csp.matches("script-src").count(), 1);
    }
}
