//! Connected accounts end to end on `runway serve` (issue 27, first slice): the model agent's
//! tool with `auth = "acme"`, a real OAuth server from npm (oidc-provider, pinned in
//! tests/oauth/package-lock.json, installed by scripts/setup-oauth.sh) whose login and consent
//! pages are driven with plain HTTP, a protected API on loopback, and the scripted
//! OpenAI-compatible model. One OAuth server for the file.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use runway_e2e::client::{AGENT_ID, WORKSPACE_ID, fresh_id};
use runway_e2e::scripted_server::{Recorded, Reply, ScriptedServer, chunk};
use runway_e2e::{AgentProcess, Client, TurnStream, free_data_dir, runway_binary};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// What the card's links and the provider's redirect name: https and a domain, as Console
/// checks; the test maps it onto the loopback server (as a reverse proxy would).
const PUBLIC: &str = "https://agent.runway.test";
const SECRET: &str = "client-secret-9f2e";
const VAULT_KEY: &str = "q7Zk0m5l2YpQ3rJ8wX1vN6bT4cH9dF0aS2eG7uK5iLo=";
const AUTH: (&str, &str) = ("x-api-key", "console-key-1");

fn tools(api: &str, oauth: &str) -> String {
    format!(
        r#"
[providers.acme]
name = "Acme CRM"
authorize_url = "{oauth}/auth"
token_url = "{oauth}/token"
client_id = "runway"
client_secret = "${{ACME_SECRET}}"
scopes = ["openid"]

[[tools]]
name = "my_orders"
description = "The user's orders"
method = "GET"
url = "{api}/orders"
auth = "acme"
"#
    )
}

async fn oauth_server(port: u16) -> Child {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("oauth");
    assert!(
        dir.join("node_modules/oidc-provider").exists(),
        "run scripts/setup-oauth.sh first"
    );
    let mut child = Command::new("node")
        .arg("server.mjs")
        .current_dir(&dir)
        .env("PORT", port.to_string())
        .env("CLIENT_SECRET", SECRET)
        .env("REDIRECT_URI", format!("{PUBLIC}/callback"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await;
    assert!(
        matches!(ready, Ok(Ok(Some(ref l))) if l == "listening"),
        "{ready:?}"
    );
    child
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The model: a call of `my_orders` for a new request, a sentence once it has the result.
fn model_reply(r: &Recorded) -> Reply {
    let body = r.json();
    let last = body["messages"].as_array().and_then(|m| m.last()).cloned();
    if last.as_ref().is_some_and(|m| m["role"] == "tool") {
        let result = last.unwrap()["content"].as_str().unwrap_or("").to_owned();
        return Reply::sse(&[
            chunk::role(),
            chunk::text(&format!("Tool said: {result}")),
            chunk::finish("stop"),
        ]);
    }
    Reply::sse(&[
        chunk::role(),
        chunk::tool_start(0, "call_1", "my_orders", "{}"),
        chunk::finish("tool_calls"),
    ])
}

async fn serve(data_dir: &Path, model: &str, tools_toml: &str) -> (AgentProcess, Client) {
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env("RUNWAY_AGENT", "model")
        .env("RUNWAY_MODEL_BASE_URL", format!("{model}/v1"))
        .env("RUNWAY_MODEL", "test-model")
        .env("RUNWAY_TOOLS", tools_toml)
        .env("ACME_SECRET", SECRET)
        .env("RUNWAY_VAULT_KEY", VAULT_KEY)
        .env("RUNWAY_PUBLIC_URL", PUBLIC)
        .env("RUNWAY_AUTH_HEADERS", format!("{}: {}", AUTH.0, AUTH.1))
        .env("RUNWAY_LOG", "warn")
        .env_remove("RUNWAY_TOOLS_FILE");
    let process = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let client = Client::new(
        process.base_url(),
        vec![(AUTH.0.to_owned(), AUTH.1.to_owned())],
    );
    (process, client)
}

fn body(thread: &str, workspace: &str, user: Option<&str>, resume: Option<&str>) -> Value {
    let mut b = json!({
        "protocolVersion": "1",
        "runId": fresh_id(),
        "threadId": thread,
        "agentId": AGENT_ID,
        "workspaceId": workspace,
        "input": if resume.is_some() { "" } else { "What are my orders?" },
    });
    if let Some(u) = user {
        b["userId"] = json!(u);
    }
    if let Some(d) = resume {
        b["resume"] = json!({"interruptId": "x", "decision": d});
    }
    b
}

/// The card's link, if the turn ended with one.
fn card(t: &TurnStream) -> Option<String> {
    let last = t.last();
    let i = &last["outcome"]["interrupts"][0];
    (i["kind"] == "authorization").then(|| {
        assert_eq!(i["provider"], "Acme CRM");
        i["authorizeUrl"].as_str().unwrap().to_owned()
    })
}

/// A browser without cookies of runway's, keeping the provider's.
struct Browser {
    http: reqwest::Client,
    cookies: Vec<String>,
    local: String,
}

impl Browser {
    fn new(local: &str) -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: Vec::new(),
            local: local.to_owned(),
        }
    }

    /// The public URL as the loopback server's.
    fn local(&self, url: &str) -> String {
        url.replacen(PUBLIC, &self.local, 1)
    }

    async fn send(&mut self, req: reqwest::RequestBuilder) -> (u16, Option<String>, String) {
        let req = if self.cookies.is_empty() {
            req
        } else {
            req.header("cookie", self.cookies.join("; "))
        };
        let r = req.send().await.unwrap();
        for c in r.headers().get_all("set-cookie") {
            let pair = c.to_str().unwrap().split(';').next().unwrap().to_owned();
            let name = pair.split('=').next().unwrap().to_owned();
            self.cookies.retain(|k| !k.starts_with(&format!("{name}=")));
            self.cookies.push(pair);
        }
        let status = r.status().as_u16();
        let location = r
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_owned());
        (status, location, r.text().await.unwrap_or_default())
    }

    /// Opens the card's link and signs in at the provider as `login` (or presses its abort
    /// link), following redirects until the provider sends the browser back: returns that
    /// callback URL (public form).
    async fn authorize(&mut self, link: &str, login: &str, abort: bool) -> String {
        let (status, location, _) = self.send(self.http.get(self.local(link))).await;
        assert_eq!(status, 302, "the card's link redirects to the provider");
        let mut next = location.unwrap();
        assert!(next.contains("code_challenge_method=S256"), "{next}");
        assert!(!next.contains("verifier"), "{next}");
        for _ in 0..12 {
            if next.starts_with(PUBLIC) {
                return next;
            }
            let (status, location, html) = self.send(self.http.get(&next)).await;
            if let Some(l) = location {
                next = url::Url::parse(&next)
                    .unwrap()
                    .join(&l)
                    .unwrap()
                    .to_string();
                continue;
            }
            assert_eq!(status, 200, "{html}");
            let here = url::Url::parse(&next).unwrap();
            if abort {
                let at = html.find("abort").expect("an abort link");
                let start = html[..at].rfind('"').unwrap() + 1;
                let end = at + html[at..].find('"').unwrap();
                next = here.join(&html[start..end]).unwrap().to_string();
                continue;
            }
            let action = {
                let at = html.find("action=\"").expect("a form") + 8;
                &html[at..at + html[at..].find('"').unwrap()]
            };
            let form: Vec<(&str, &str)> = if html.contains("name=\"login\"") {
                vec![("prompt", "login"), ("login", login), ("password", "x")]
            } else {
                vec![("prompt", "consent")]
            };
            let (_, location, html) = self
                .send(self.http.post(here.join(action).unwrap()).form(&form))
                .await;
            next = here.join(&location.expect(&html)).unwrap().to_string();
        }
        panic!("the provider never redirected back");
    }

    /// Opens a callback URL (public form) on the local server: status and page.
    async fn callback(&mut self, url: &str) -> (u16, String) {
        let (status, _, html) = self.send(self.http.get(self.local(url))).await;
        (status, html)
    }
}

/// The `sub` the OAuth server says `token` belongs to (its userinfo endpoint).
async fn subject(oauth: &str, token: &str) -> String {
    let r = reqwest::Client::new()
        .get(format!("{oauth}/me"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json::<Value>().await.unwrap()["sub"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn bearer_tokens(api: &ScriptedServer) -> Vec<String> {
    api.requests()
        .iter()
        .filter_map(|r| {
            r.header("authorization")?
                .strip_prefix("Bearer ")
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test]
async fn a_tool_acts_as_the_user_who_connected_and_the_attacks_change_nothing() {
    let port = free_port();
    let oauth = format!("http://127.0.0.1:{port}");
    let _oauth_server = oauth_server(port).await;
    let model = ScriptedServer::start(model_reply).await;
    let api = ScriptedServer::start(|r: &Recorded| match r.header("authorization") {
        Some(a) if a.starts_with("Bearer ") => Reply::json(&json!({"orders": ["DH-1", "DH-2"]})),
        _ => Reply::status(401, &[], &json!({"error": "sign in"})),
    })
    .await;
    let data_dir: PathBuf = free_data_dir("connect");
    std::fs::create_dir_all(&data_dir).unwrap();
    let toml = tools(&api.base_url, &oauth);
    let (process, client) = serve(&data_dir, &model.base_url, &toml).await;
    let mut browser = Browser::new(client.base());
    let thread = fresh_id();

    // 1. No connection: the call is not sent, the turn ends with the card.
    let t = client
        .turn(&body(&thread, WORKSPACE_ID, Some("alice"), None))
        .await;
    let link = card(&t).expect("the authorization card");
    assert!(link.starts_with(&format!("{PUBLIC}/connect/")), "{link}");
    assert!(api.requests().is_empty(), "the call waited");

    // A forged state, and the link opened without the header set but with a made-up id.
    let (status, html) = browser
        .callback(&format!(
            "{PUBLIC}/callback?state=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&code=x"
        ))
        .await;
    assert_eq!(status, 400, "{html}");
    let (status, _, _) = client
        .get_plain(&format!("{}/connect/nope", client.base()))
        .await;
    assert_eq!(status, 404);

    // 2. The user connects in the "popup": login and consent at the real provider.
    let back = browser.authorize(&link, "alice", false).await;
    let (status, html) = browser.callback(&back).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains("Acme CRM is connected. You can close this window."),
        "{html}"
    );
    // Replayed: refused, nothing changes.
    let (status, _) = browser.callback(&back).await;
    assert_eq!(status, 400);
    // The card's link is single use too.
    let (status, _, _) = client.get_plain(&browser.local(&link)).await;
    assert_eq!(status, 404);

    // 3. The resumed turn runs the pending call as alice; the token is nowhere in the frames.
    let t = client
        .turn(&body(
            &thread,
            WORKSPACE_ID,
            Some("alice"),
            Some("authorized"),
        ))
        .await;
    assert_eq!(t.last()["outcome"]["type"], "success", "{:?}", t.frames);
    assert!(t.text().contains("DH-1"), "{}", t.text());
    let tokens = bearer_tokens(&api);
    assert_eq!(tokens.len(), 1);
    assert_eq!(subject(&oauth, &tokens[0]).await, "alice");
    let frames = serde_json::to_string(&t.frames).unwrap();
    assert!(!frames.contains(&tokens[0]), "a token in the frames");
    let sent_to_model = serde_json::to_string(&model.chat_completions()).unwrap();
    assert!(
        !sent_to_model.contains(&tokens[0]),
        "a token sent to the model"
    );

    // 4. Another user, and alice in another workspace, get the card: never alice's token.
    for (ws, user) in [(WORKSPACE_ID, "bob"), ("918273600000000002", "alice")] {
        let t = client.turn(&body(&fresh_id(), ws, Some(user), None)).await;
        assert!(card(&t).is_some(), "{ws}/{user}: {:?}", t.frames);
    }
    // 5. Bob answers "authorized" without connecting: the vault says no, the card again.
    let bob_thread = fresh_id();
    let t = client
        .turn(&body(&bob_thread, WORKSPACE_ID, Some("bob"), None))
        .await;
    let bob_link = card(&t).unwrap();
    let t = client
        .turn(&body(
            &bob_thread,
            WORKSPACE_ID,
            Some("bob"),
            Some("authorized"),
        ))
        .await;
    assert!(card(&t).is_some(), "{:?}", t.frames);
    assert_eq!(bearer_tokens(&api).len(), 1);
    // Bob, in a browser of his own, says no at the provider: access_denied, on the page.
    let mut browser = Browser::new(client.base());
    let back = browser.authorize(&bob_link, "bob", true).await;
    assert!(back.contains("error=access_denied"), "{back}");
    let (status, html) = browser.callback(&back).await;
    assert_eq!(status, 403);
    assert!(html.contains("access_denied"), "{html}");

    // 6. No userId: no card, a tool error the model relays.
    let t = client
        .turn(&body(&fresh_id(), WORKSPACE_ID, None, None))
        .await;
    assert!(card(&t).is_none());
    assert!(t.text().contains("needs a signed-in user"), "{}", t.text());

    // 7. The token survives a restart: alice's next call runs straight away.
    process.stop().await;
    let (process, client) = serve(&data_dir, &model.base_url, &toml).await;
    let t = client
        .turn(&body(&fresh_id(), WORKSPACE_ID, Some("alice"), None))
        .await;
    assert!(card(&t).is_none(), "{:?}", t.frames);
    assert!(t.text().contains("DH-2"), "{}", t.text());
    let tokens = bearer_tokens(&api);
    assert_eq!(tokens.len(), 2);
    assert_eq!(subject(&oauth, &tokens[1]).await, "alice");
    // Nothing in the database is a token in plain text.
    process.stop().await;
    let db = std::fs::read_dir(&data_dir)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read(e.path()).unwrap_or_default())
        .collect::<Vec<_>>();
    for bytes in db {
        assert!(!String::from_utf8_lossy(&bytes).contains(&tokens[0]));
    }
    let _ = std::fs::remove_dir_all(&data_dir);
}

#[tokio::test]
async fn a_provider_without_the_vault_key_refuses_to_start() {
    let out = std::process::Command::new(runway_binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(free_data_dir("connect-nokey"))
        .env("RUNWAY_AGENT", "model")
        .env("RUNWAY_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
        .env("RUNWAY_MODEL", "m")
        .env(
            "RUNWAY_TOOLS",
            tools("http://127.0.0.1:9", "http://127.0.0.1:9"),
        )
        .env("ACME_SECRET", SECRET)
        .env_remove("RUNWAY_VAULT_KEY")
        .env_remove("RUNWAY_TOOLS_FILE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("RUNWAY_VAULT_KEY") && err.contains("acme"),
        "{err}"
    );
}
