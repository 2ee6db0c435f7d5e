//! Connected accounts end to end, shared by every runtime's test: the real OAuth server
//! (tests/oauth/server.mjs, oidc-provider pinned in tests/oauth/package-lock.json, installed by
//! scripts/setup-oauth.sh), a tools file with a provider and a tool acting as the user, a
//! browser that opens the card's link and signs in at the provider's own pages with plain
//! HTTP, and a person doing the same through the playground's card in headless Chromium
//! (tests/browser/connect-flow.mjs, installed by scripts/setup-playground.sh).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::client::{fresh_id, run_body};
pub use crate::mcp_servers::free_port;
use crate::scripted_server::{Recorded, Reply, ScriptedServer, chunk};
use crate::{Client, TurnStream};

/// runway's client secret at the OAuth server.
pub const CLIENT_SECRET: &str = "client-secret-9f2e";
/// The setting [`tools`] reads the client secret from (`RUNWAY_*`: the Lambda emulator hands
/// the function only those).
pub const CLIENT_SECRET_SETTING: &str = "RUNWAY_TEST_ACME_SECRET";
/// A vault key (`RUNWAY_VAULT_KEY`) for the tests.
pub const VAULT_KEY: &str = "q7Zk0m5l2YpQ3rJ8wX1vN6bT4cH9dF0aS2eG7uK5iLo=";
/// The provider's display name: the card's `provider`.
pub const PROVIDER_NAME: &str = "Acme CRM";

/// The tools file: provider `acme` at the OAuth server `oauth` (its secret from
/// `${RUNWAY_TEST_ACME_SECRET}`), and the tool `my_orders` (`GET {api}/orders`) with `auth = "acme"`.
pub fn tools(api: &str, oauth: &str) -> String {
    format!(
        r#"
[providers.acme]
name = "{PROVIDER_NAME}"
authorize_url = "{oauth}/auth"
token_url = "{oauth}/token"
client_id = "runway"
client_secret = "${{{CLIENT_SECRET_SETTING}}}"
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

/// The protected API: `/orders` for any bearer token, 401 without one.
pub fn orders_api(r: &Recorded) -> Reply {
    match r.header("authorization") {
        Some(a) if a.starts_with("Bearer ") => {
            Reply::json(&serde_json::json!({"orders": ["DH-1", "DH-2"]}))
        }
        _ => Reply::status(401, &[], &serde_json::json!({"error": "sign in"})),
    }
}

/// What the person in the playground asks ([`a_person_connects_through_the_playground`]), so
/// a model scripted for other checks can answer it with [`playground_orders_model`].
pub const PLAYGROUND_QUESTION: &str = "Which orders do I have?";

/// [`orders_model`]'s answer to a request of a conversation that asked
/// [`PLAYGROUND_QUESTION`]; `None` for any other request.
pub fn playground_orders_model(r: &Recorded) -> Option<Reply> {
    let body = r.json();
    body["messages"]
        .as_array()?
        .iter()
        .any(|m| m["role"] == "user" && m["content"] == PLAYGROUND_QUESTION)
        .then(|| orders_model(r))
}

/// The model: a call of `my_orders` for a new request, a sentence once it has the result.
pub fn orders_model(r: &Recorded) -> Reply {
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

/// Starts the OAuth server on `127.0.0.1:{port}`, redirecting back to `redirect_uri` only;
/// killed on drop.
///
/// # Panics
/// If scripts/setup-oauth.sh has not run, or the server is not listening within 20 s.
pub async fn oauth_server(port: u16, redirect_uri: &str) -> Child {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("oauth");
    assert!(
        dir.join("node_modules/oidc-provider").exists(),
        "run scripts/setup-oauth.sh first"
    );
    let mut child = Command::new("node")
        .arg("server.mjs")
        .current_dir(&dir)
        .env("PORT", port.to_string())
        .env("CLIENT_SECRET", CLIENT_SECRET)
        .env("REDIRECT_URI", redirect_uri)
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

/// The card's link, if the turn ended with the `authorization` card.
pub fn card(t: &TurnStream) -> Option<String> {
    let last = t.last();
    let i = &last["outcome"]["interrupts"][0];
    (i["kind"] == "authorization").then(|| {
        assert_eq!(i["provider"], PROVIDER_NAME);
        i["authorizeUrl"].as_str().unwrap().to_owned()
    })
}

/// A browser without cookies of runway's, keeping the provider's. Links under the agent's
/// public URL are opened on its local address (as a reverse proxy would map them).
pub struct Browser {
    http: reqwest::Client,
    cookies: Vec<String>,
    public: String,
    local: String,
}

impl Browser {
    /// A browser reaching the agent whose public base URL is `public` at `local`.
    pub fn new(public: &str, local: &str) -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: Vec::new(),
            public: public.to_owned(),
            local: local.to_owned(),
        }
    }

    /// The public URL as the local one.
    pub fn local(&self, url: &str) -> String {
        url.replacen(&self.public, &self.local, 1)
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
    pub async fn authorize(&mut self, link: &str, login: &str, abort: bool) -> String {
        let (status, location, _) = self.send(self.http.get(self.local(link))).await;
        assert_eq!(status, 302, "the card's link redirects to the provider");
        let mut next = location.unwrap();
        assert!(next.contains("code_challenge_method=S256"), "{next}");
        assert!(!next.contains("verifier"), "{next}");
        for _ in 0..12 {
            if next.starts_with(&self.public) {
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

    /// Opens a URL (public form) on the agent's local address: status and page.
    pub async fn callback(&mut self, url: &str) -> (u16, String) {
        let (status, _, html) = self.send(self.http.get(self.local(url))).await;
        (status, html)
    }
}

/// The `sub` the OAuth server says `token` belongs to (its userinfo endpoint).
pub async fn subject(oauth: &str, token: &str) -> String {
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

/// Whether the OAuth server still honours `token` (its userinfo endpoint answers 200).
pub async fn honoured(oauth: &str, token: &str) -> bool {
    let r = reqwest::Client::new()
        .get(format!("{oauth}/me"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    r.status() == 200
}

/// The bearer tokens the protected API was sent, in order.
pub fn bearer_tokens(api: &ScriptedServer) -> Vec<String> {
    api.requests()
        .iter()
        .filter_map(|r| {
            r.header("authorization")?
                .strip_prefix("Bearer ")
                .map(str::to_owned)
        })
        .collect()
}

/// The flow on any runtime, as [`crate::client::run_body`]'s user: the turn ends with the card
/// and the call waits; a forged callback is refused; the user connects at the provider (its
/// login named as the user id) and the page says so; the callback replayed and the link
/// reused are refused; the resumed turn runs the pending call as the user, and the token is in
/// no frame. The model answers, in order, a call of `my_orders`, then any text; `api` answers
/// `/orders` for a bearer token.
pub async fn a_user_connects_and_the_call_runs_as_them(
    client: &crate::Client,
    browser: &mut Browser,
    api: &ScriptedServer,
    oauth: &str,
) {
    let thread = fresh_id();
    let body = run_body(&fresh_id(), &thread, "What are my orders?");
    let user = body["userId"].as_str().unwrap().to_owned();
    let sent_before = bearer_tokens(api).len();
    let t = client.turn(&body).await;
    let link = card(&t).unwrap_or_else(|| panic!("the authorization card: {:?}", t.frames));
    assert!(
        link.starts_with(&format!("{}/connect/", browser.public)),
        "{link}"
    );
    assert_eq!(bearer_tokens(api).len(), sent_before, "the call waited");

    let forged = format!(
        "{}/callback?state=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&code=x",
        browser.public
    );
    let (status, html) = browser.callback(&forged).await;
    assert_eq!(status, 400, "{html}");

    let back = browser.authorize(&link, &user, false).await;
    let (status, html) = browser.callback(&back).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains(&format!(
            "{PROVIDER_NAME} is connected. You can close this window."
        )),
        "{html}"
    );
    let (status, _) = browser.callback(&back).await;
    assert_eq!(status, 400, "a replayed callback");
    let (status, _) = browser.callback(&link).await;
    assert_eq!(status, 404, "the card's link is single use");

    let mut resume = run_body(&fresh_id(), &thread, "");
    resume["resume"] = serde_json::json!({"interruptId": "x", "decision": "authorized"});
    let t = client.turn(&resume).await;
    assert_eq!(t.last()["outcome"]["type"], "success", "{:?}", t.frames);
    let tokens = bearer_tokens(api);
    assert_eq!(tokens.len(), sent_before + 1);
    let token = tokens.last().unwrap();
    assert_eq!(subject(oauth, token).await, user);
    let frames = serde_json::to_string(&t.frames).unwrap();
    assert!(!frames.contains(token.as_str()), "a token in the frames");
}

/// The protected API checking each token at the OAuth server (its userinfo endpoint): `/orders`
/// for a token the server still honours, 401 for a revoked, expired or unknown one, and 401
/// for the tokens in `denied` (the API's own deny list).
pub fn checked_orders_api(
    oauth: &str,
    denied: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
    let oauth = oauth.to_owned();
    move |r: &Recorded| {
        let token = r
            .header("authorization")
            .and_then(|a| a.strip_prefix("Bearer "));
        let honoured = token.is_some_and(|t| {
            !denied.lock().unwrap().iter().any(|d| d == t) && userinfo_status(&oauth, t) == 200
        });
        if honoured {
            Reply::json(&serde_json::json!({"orders": ["DH-1", "DH-2"]}))
        } else {
            Reply::status(
                401,
                &[("www-authenticate", "Bearer error=\"invalid_token\"")],
                &serde_json::json!({"error": "invalid_token"}),
            )
        }
    }
}

/// The status the OAuth server's userinfo endpoint answers `token` with. Plain blocking HTTP
/// on loopback: the scripted API's handler is synchronous, and the server is another process.
fn userinfo_status(oauth: &str, token: &str) -> u16 {
    use std::io::{Read, Write};
    let addr = oauth.strip_prefix("http://").expect("a loopback http URL");
    let mut s = std::net::TcpStream::connect(addr).expect("the OAuth server");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /me HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut head = String::new();
    let _ = s.read_to_string(&mut head);
    head.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// Revokes `token` at the OAuth server (RFC 7009), as runway's client: oidc-provider revokes
/// every token of its grant with it, the refresh token included.
pub async fn revoke(oauth: &str, token: &str) {
    let r = reqwest::Client::new()
        .post(format!("{oauth}/token/revocation"))
        .basic_auth("runway", Some(CLIENT_SECRET))
        .form(&[("token", token), ("token_type_hint", "access_token")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "revocation");
}

/// How many token requests of `grant_type` the OAuth server granted, and refused.
pub async fn grants(oauth: &str, grant_type: &str) -> (u64, u64) {
    let v: Value = reqwest::Client::new()
        .get(format!("{oauth}/test/grants"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let n = |table: &str| v[table][grant_type].as_u64().unwrap_or(0);
    (n("succeeded"), n("failed"))
}

/// How many clients registered themselves at the OAuth server (RFC 7591).
pub async fn registrations(oauth: &str) -> u64 {
    let v: Value = reqwest::Client::new()
        .get(format!("{oauth}/test/registrations"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["registrations"].as_u64().unwrap_or(0)
}

/// Where a person opens the playground for [`a_person_connects_through_the_playground`].
pub struct Playground<'a> {
    /// The page's URL.
    pub page: &'a str,
    /// The values the page asks for (`runway serve`'s own page, with its header set); none
    /// through `runway playground`, which adds them itself.
    pub headers: &'a [(String, String)],
    /// The deployment's public URL (what the card links to and the provider redirects to), and
    /// the local address the browser reaches it at (through connect-flow.mjs's reverse proxy).
    pub public: (&'a str, &'a str),
    /// How the thread resumes once the popup says "connected": `"page"` (the callback page
    /// told the playground, same origin) or `"continue"` (the card's Continue pressed).
    pub resumed_by: &'a str,
}

/// `runway playground BASE --header …` (the real binary) on a free loopback port: the process
/// (killed on drop) and the page's URL.
///
/// # Panics
/// If it does not print the page's URL within 20 s.
pub async fn playground_proxy(base: &str, headers: &[(String, String)]) -> (Child, String) {
    let mut cmd = Command::new(crate::runway_binary());
    cmd.args(["playground", base, "--listen", "127.0.0.1:0"]);
    for (name, value) in headers {
        cmd.arg("--header").arg(format!("{name}: {value}"));
    }
    let mut child = cmd
        .env("RUNWAY_LOG", "warn")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("runway playground starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix("open:") {
                return url.trim().to_owned();
            }
        }
        panic!("runway playground exited without printing its page");
    })
    .await
    .expect("runway playground printed its page in time");
    // Whatever it prints later is read too, so no write of it ever fails.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// Runs tests/browser/connect-flow.mjs: a person opens `at`'s page, asks
/// [`PLAYGROUND_QUESTION`], presses the card's connect button, signs in as `login` and
/// refuses at the provider's consent page, continues (the card again), then connects, and the
/// thread resumes. Its JSON report.
///
/// # Panics
/// If scripts/setup-playground.sh has not run, or any step of the flow fails (the script's
/// message), or it takes over 200 s.
pub async fn connect_in_the_playground(at: &Playground<'_>, login: &str) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("browser");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        dir.join("node_modules/playwright-core").exists() && Path::new(&chromium).exists(),
        "run scripts/setup-playground.sh first (playwright-core and {chromium})"
    );
    let (public, local) = at.public;
    let mut cmd = Command::new("node");
    cmd.arg("connect-flow.mjs")
        .args(["--page", at.page, "--login", login, "--refuse-first"])
        .args(["--question", PLAYGROUND_QUESTION])
        .arg("--map")
        .arg(format!("{public}={local}"));
    for (name, value) in at.headers {
        cmd.arg("--header").arg(format!("{name}: {value}"));
    }
    cmd.current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let child = cmd.spawn().expect("node");
    let pid = child.id();
    let started = std::time::Instant::now();
    let Ok(out) = tokio::time::timeout(Duration::from_secs(200), child.wait_with_output()).await
    else {
        // The browser too: the script's whole process group.
        if let Some(pid) = pid {
            let _ = std::process::Command::new("bash")
                .args(["-c", &format!("kill -KILL -- -{pid}")])
                .status();
        }
        panic!("connect-flow.mjs took over 200 s");
    };
    let out = out.expect("node runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "connect-flow.mjs failed: {stderr}");
    eprintln!(
        "connect-flow.mjs: {:.1} s in Chromium",
        started.elapsed().as_secs_f64()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("connect-flow.mjs printed {stdout:?}: {e}"))
}

/// Issue 27 through the playground's card, in a real browser: a person in the playground (its
/// own random workspace and user) gets the card, refuses at the provider (the callback page
/// says access_denied, Continue brings the card again, no call is made), then connects in the
/// popup at the provider's own login and consent pages; the thread resumes and the pending
/// call runs as them (the protected API got one token, whose subject is their login). The
/// connection is theirs alone: their next turn runs straight away, another user of their
/// workspace and they in another workspace get the card. `client` reaches the deployment;
/// `api` answers `/orders` for a bearer token; the model answers [`PLAYGROUND_QUESTION`] as
/// [`orders_model`] does. The script's report.
pub async fn a_person_connects_through_the_playground(
    at: &Playground<'_>,
    client: &Client,
    api: &ScriptedServer,
    oauth: &str,
) -> Value {
    let started = std::time::Instant::now();
    let login = format!("ada-{}", &fresh_id()[..6]);
    let sent_before = bearer_tokens(api).len();
    let flow = connect_in_the_playground(at, &login).await;
    let connect_button = format!("Connect {PROVIDER_NAME}");
    assert_eq!(flow["card"]["button"], connect_button.as_str(), "{flow}");
    assert!(
        flow["card"]["prompt"]
            .as_str()
            .is_some_and(|p| p.contains(&format!("Connect your {PROVIDER_NAME} account"))),
        "{flow}"
    );

    // Refused at the consent page: the callback page says so, and the thread asks again.
    let refusal = &flow["refusal"];
    assert_eq!(refusal["callback"]["error"], "access_denied", "{flow}");
    assert_eq!(refusal["callback"]["status"], 403, "{flow}");
    assert!(
        refusal["callback"]["text"]
            .as_str()
            .is_some_and(|t| t.contains(&format!(
                "{PROVIDER_NAME} was not connected (access_denied)"
            ))),
        "{flow}"
    );
    assert_eq!(
        refusal["cardAgain"]["button"],
        connect_button.as_str(),
        "{flow}"
    );

    // Connected: the callback page under the public URL, the thread resumed with `authorized`
    // and the pending call's result in the transcript.
    let (public, _) = at.public;
    let callback = &flow["callback"];
    assert_eq!(callback["status"], 200, "{flow}");
    assert_eq!(
        callback["callbackUrl"],
        format!("{public}/callback"),
        "{flow}"
    );
    assert!(
        callback["text"]
            .as_str()
            .is_some_and(|t| t.contains(&format!(
                "{PROVIDER_NAME} is connected. You can close this window."
            ))),
        "{flow}"
    );
    assert_eq!(flow["resumedBy"], at.resumed_by, "{flow}");
    assert_eq!(
        flow["resumes"],
        serde_json::json!(["authorized", "authorized"]),
        "{flow}"
    );
    assert!(
        flow["answer"].as_str().is_some_and(|a| a.contains("DH-1")),
        "{flow}"
    );

    // One call, after connecting, with a token of the login.
    let tokens = bearer_tokens(api);
    assert_eq!(
        tokens.len(),
        sent_before + 1,
        "one call, once connected: {flow}"
    );
    assert_eq!(subject(oauth, &tokens[sent_before]).await, login);

    // The playground's user, and only they, in their workspace only.
    let (workspace, user) = (
        flow["workspaceId"]
            .as_str()
            .expect("the page's workspaceId"),
        flow["userId"].as_str().expect("the page's userId"),
    );
    let turn = |workspace: &str, user: &str| {
        let mut b = run_body(&fresh_id(), &fresh_id(), PLAYGROUND_QUESTION);
        b["workspaceId"] = serde_json::json!(workspace);
        b["userId"] = serde_json::json!(user);
        b
    };
    let t = client.turn(&turn(workspace, user)).await;
    assert!(card(&t).is_none(), "their next turn: {:?}", t.frames);
    assert!(t.text().contains("DH-1"), "{}", t.text());
    let tokens = bearer_tokens(api);
    assert_eq!(tokens.len(), sent_before + 2);
    assert_eq!(subject(oauth, tokens.last().unwrap()).await, login);
    let (someone_else, elsewhere) = (fresh_id(), fresh_id());
    for (workspace, user) in [(workspace, someone_else.as_str()), (&elsewhere, user)] {
        let t = client.turn(&turn(workspace, user)).await;
        assert!(card(&t).is_some(), "{workspace}/{user}: {:?}", t.frames);
    }
    assert_eq!(
        bearer_tokens(api).len(),
        sent_before + 2,
        "another's token used"
    );
    eprintln!(
        "the playground's connect flow and its checks: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    flow
}
