// The playground page driven in Debian's headless Chromium (playwright-core as the DevTools
// client, no browser download). Starts the real `runway` binary (RUNWAY_BIN) on free loopback
// ports: `runway serve` with the demo agent, `runway playground` against a `runway serve` that
// requires two auth headers, and `runway playground` against a small agent (in this file) that
// breaks the contract; for the usage figures, `runway serve` with a workers file whose model
// agent calls a scripted model reporting known token usage, and agents without a usage report.
// Every request the browser makes outside 127.0.0.1 is aborted.
//
// PLAYGROUND_SCREENSHOT=path also saves a screenshot of a full conversation there.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const RUNWAY_BIN = process.env.RUNWAY_BIN;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const WAIT = { timeout: 20_000 };
const children = [];
const scratch = [];

process.on("exit", () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
});

/** Starts `runway ARGS`, resolves with the URL printed after `prefix` once it is ready. */
function startRunway(args, prefix, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(RUNWAY_BIN, args, {
      env: { ...process.env, RUNWAY_LOG: "warn", ...env },
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(child);
    let out = "";
    const timer = setTimeout(() => reject(new Error(`runway ${args[0]} printed no ${prefix} in 30 s:\n${out}`)), 30_000);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (text) => {
      out += text;
      const line = out.split("\n").find((l) => l.startsWith(prefix));
      if (line) {
        clearTimeout(timer);
        resolve(line.slice(prefix.length).trim().replace(/\/$/, ""));
      }
    });
    child.on("exit", (code) => reject(new Error(`runway ${args[0]} exited (${code}):\n${out}`)));
  });
}

function dataDir() {
  const dir = mkdtempSync(join(tmpdir(), "runway-playground-"));
  scratch.push(dir);
  return dir;
}

/** An External Agent that breaks the contract: it sends RUN_STARTED, omits X-Accel-Buffering
 * and closes the stream mid-answer without a final frame (after a file card sent as CUSTOM). */
function startBrokenAgent() {
  const server = http.createServer((req, res) => {
    if (req.url === "/health") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ status: "ok", protocolVersions: ["1"], name: "broken agent" }));
      return;
    }
    if (req.url.startsWith("/usage")) {
      // Not a runway agent: no usage report.
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "no such endpoint" }));
      return;
    }
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const frames = [
        { type: "RUN_STARTED" },
        { type: "TEXT_MESSAGE_START", messageId: "m1" },
        { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "Half an answ" },
        { type: "CUSTOM", name: "file", value: { name: "report.pdf", url: "https://files.example.com/t0k3n/report.pdf", mime: "application/pdf" } },
      ];
      for (const f of frames) res.write(`data: ${JSON.stringify(f)}\n\n`);
      setTimeout(() => res.end(), 50);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${server.address().port}` }));
  });
}

let context;
let serveUrl;
const offLoopback = []; // what the browser tried to load from anywhere but 127.0.0.1
let brokenAgent;

before(async () => {
  assert.ok(RUNWAY_BIN, "RUNWAY_BIN must name the runway binary");
  const profile = dataDir();
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      // A DNS-rebinding name: resolves to loopback, as an attacker's would after rebinding.
      "--host-resolver-rules=MAP rebind.test 127.0.0.1",
    ],
    viewport: { width: 1400, height: 900 },
  });
  // Loopback only: anything else (the demo's authorizeUrl popup, for one) is aborted.
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (["127.0.0.1", "rebind.test"].includes(new URL(url).hostname)) return route.continue();
    offLoopback.push(url);
    return route.abort();
  });
  serveUrl = await startRunway(["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir()], "base_url:");
  brokenAgent = await startBrokenAgent();
});

after(async () => {
  if (context) await context.close();
  if (brokenAgent) brokenAgent.server.close();
  for (const c of children) {
    if (c.exitCode === null) {
      c.kill("SIGTERM");
      await new Promise((r) => c.once("exit", r));
    }
  }
  for (const d of scratch) rmSync(d, { recursive: true, force: true });
});

async function openPage(url) {
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(String(e)));
  page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
  await page.goto(`${url}/`);
  await page.locator("#agent.ok").waitFor(WAIT);
  page.problems = problems;
  return page;
}

/** Types `text` in the message box and presses Enter; resolves with the new turn, finished. */
async function say(page, text) {
  const before = await page.locator(".chat:not([hidden]) > .turn").count();
  const box = page.locator('form textarea[name="input"]');
  await box.fill(text);
  await box.press("Enter");
  return finished(page, before);
}

/** The turn at `index` of the thread on screen, once its findings are in. */
async function finished(page, index) {
  const turn = page.locator(".chat:not([hidden]) > .turn").nth(index);
  await turn.and(page.locator('[data-state="done"]')).waitFor(WAIT);
  return turn;
}

/** The usage line of the thread on screen, as shown: counts and the estimated cost. */
async function threadUsage(page) {
  const line = page.locator("#thread-usage");
  const shown = {};
  for (const field of ["turns", "modelCalls", "inputTokens", "outputTokens", "toolCalls", "cost", "unavailable"]) {
    const node = line.locator(`[data-usage="${field}"]`);
    if (await node.count()) shown[field] = await node.innerText();
  }
  return shown;
}

/** Sends the demo agent's `/tool` and checks its tool card and the text around it. */
async function demoToolTurn(page) {
  const tool = await say(page, "/tool");
  const card = tool.locator(".tool-card");
  assert.match(await card.locator(".tool-name").innerText(), /lookup_time/);
  assert.deepEqual(JSON.parse(await card.locator("pre.args").innerText()), { zone: "UTC" });
  assert.equal(await card.locator("pre.result").innerText(), "12:00 UTC");
  assert.deepEqual(await tool.locator(".bubble.assistant").allInnerTexts(), [
    "Let me look that up.",
    "The lookup_time tool says it is 12:00 UTC.",
  ]);
}

async function findingCodes(page) {
  return page.locator("#findings li[data-code]").evaluateAll((lis) => lis.map((li) => li.dataset.code));
}

describe("runway serve: GET / is the playground for the demo agent", () => {
  let page;
  before(async () => {
    page = await openPage(serveUrl);
  });
  after(async () => {
    assert.deepEqual(page.problems, []);
    await page.close();
    // The page works offline: the only request off loopback was the popup the demo's
    // authorization card opens (Console opens authorizeUrl the same way).
    assert.deepEqual(offLoopback, ["https://auth.example.com/oauth/authorize?client_id=runway-demo"]);
  });

  test("the page and its endpoint: embedded assets, a strict CSP, 4xx on bad input", async () => {
    const index = await fetch(`${serveUrl}/`);
    assert.equal(index.status, 200);
    assert.match(index.headers.get("content-type"), /^text\/html/);
    assert.match(index.headers.get("content-security-policy"), /default-src 'none'; script-src 'self'/);
    assert.match(await index.text(), /<form id="composer"[^>]*>\s*<textarea name="input"/);
    for (const [method, path, status] of [
      ["POST", "/", 405],
      ["GET", "/playground/findings", 405],
      ["GET", "/nope", 404],
    ]) {
      const r = await fetch(`${serveUrl}${path}`, { method, headers: { "content-type": "application/json" } });
      assert.equal(r.status, status, `${method} ${path}`);
      assert.equal(typeof (await r.json()).error, "string", `${method} ${path}: a JSON error`);
    }
    const judge = (body) =>
      fetch(`${serveUrl}/playground/findings`, { method: "POST", body, headers: { "content-type": "application/json" } });
    const garbage = await judge("not json");
    assert.equal(garbage.status, 400);
    assert.match((await garbage.json()).error, /not a recorded turn/);
    const huge = await judge("x".repeat(21 * 1024 * 1024));
    assert.equal(huge.status, 413);
    const verdict = await (
      await judge(
        JSON.stringify({
          runId: "1",
          threadId: "2",
          status: 200,
          headersMs: 3,
          contentType: "text/event-stream",
          cacheControl: "no-cache",
          xAccelBuffering: "no",
          chunks: [{ atMs: 4, text: 'data: {"type":"RUN_ERROR"}\n\n' }],
          end: "closed",
          endMs: 5,
        }),
      )
    ).json();
    assert.deepEqual(
      verdict.findings.map((f) => f.code),
      ["MALFORMED_FRAME", "NO_FINAL_FRAME"],
    );
  });

  test("a plain answer streams in, frames and timings beside it, no findings", async () => {
    const box = page.locator('form textarea[name="input"]');
    await box.fill("/slow 2");
    await box.press("Enter");
    const turn = page.locator(".chat:not([hidden]) > .turn").first();
    // STEP_STARTED is on screen while the agent is still silent: the stream is read live.
    await turn.locator(".step").waitFor(WAIT);
    assert.equal(await turn.getAttribute("data-state"), "streaming");
    assert.equal(await turn.locator(".bubble.assistant").count(), 0);
    await turn.and(page.locator('[data-state="done"]')).waitFor(WAIT);
    assert.equal(await turn.locator(".bubble.assistant").innerText(), "Done waiting 2 seconds.");
    assert.deepEqual(await findingCodes(page), []);
    assert.match(await page.locator("#findings").innerText(), /No findings/);
    const frames = await page.locator("#frames li.line").allInnerTexts();
    assert.match(frames[0], /\+\d+ ms\s+data: \{"type":"STEP_STARTED"/);
    assert.ok(frames.some((f) => f.includes(": keep-alive") || f.includes("RUN_FINISHED")));
    assert.match(await page.locator("#frames").innerText(), /s of silence/);
    const timing = await page.locator("#timing").innerText();
    const first = Number(/first frame\s+(\d+) ms/.exec(timing)[1]);
    const total = Number(/total\s+(\d+) ms/.exec(timing)[1]);
    assert.ok(first < 1000 && total >= 2000, `first frame ${first} ms, total ${total} ms`);

    const second = await say(page, "Hello again");
    assert.equal(
      await second.locator(".bubble.assistant").innerText(),
      'You said "Hello again". Before that you said "/slow 2".',
    );
    // The demo agent calls no model: two turns, nothing else.
    assert.deepEqual(await threadUsage(page), {
      turns: "2",
      modelCalls: "0",
      inputTokens: "0",
      outputTokens: "0",
      toolCalls: "0",
      cost: "$0",
    });
  });

  test("a tool card, collapsed reasoning, a file card and a RUN_ERROR marker", async () => {
    await demoToolTurn(page);

    const reason = await say(page, "/reason");
    const details = reason.locator("details.reasoning");
    assert.equal(await details.getAttribute("open"), null);
    await details.locator("summary").click();
    assert.match(await details.locator(".reasoning-text").innerText(), /wants to see reasoning/);

    const file = await say(page, "/file");
    const link = file.locator("a.file-card");
    assert.equal(await link.locator(".file-name").innerText(), "runway-demo.csv");
    const href = await link.getAttribute("href");
    assert.ok(href.startsWith(`${serveUrl}/files/`), href);
    const download = await page.request.get(href);
    assert.equal(await download.text(), "city,temperature\nHanoi,31\nSaigon,33\n");

    const failed = await say(page, "/fail");
    assert.match(await failed.locator(".error-marker").innerText(), /The demo agent failed on purpose/);
    assert.deepEqual(await findingCodes(page), []);
  });

  test("Stop closes the connection: the turn shows as stopped, with no finding", async () => {
    const box = page.locator('form textarea[name="input"]');
    await box.fill("/slow 30");
    await box.press("Enter");
    const index = (await page.locator(".chat:not([hidden]) > .turn").count()) - 1;
    const turn = page.locator(".chat:not([hidden]) > .turn").nth(index);
    await turn.locator(".step").waitFor(WAIT);
    await page.locator("#stop").click();
    await finished(page, index);
    assert.match(await turn.locator(".truncated").innerText(), /^Stopped/);
    assert.deepEqual(await findingCodes(page), []);
    assert.match(await page.locator("#timing").innerText(), /outcome\s+stopped_by_client/);
    // The agent noticed: the thread takes the next turn at once.
    const next = await say(page, "after stop");
    assert.match(await next.locator(".bubble.assistant").innerText(), /^You said "after stop"/);
  });

  const kinds = [
    ["/approve", "approval", (card) => card.locator('[data-decision="approve"]').click(), /you approved/],
    ["/approve", "approval", (card) => card.locator('[data-decision="reject"]').click(), /you rejected/],
    [
      "/choice",
      "choice",
      (card) => card.locator('[data-decision="respond"][data-option="green"]').click(),
      /you answered "Green"/,
    ],
    [
      "/input",
      "input",
      async (card) => {
        await card.locator("textarea").fill("Ada");
        await card.locator("textarea").press("Enter"); // keyboard: Enter answers
      },
      /you answered "Ada"/,
    ],
    [
      "/review",
      "review",
      async (card) => {
        const args = card.locator("textarea.review-args");
        assert.deepEqual(JSON.parse(await args.inputValue()), { to: "ops@example.com", subject: "Demo" });
        await args.fill('{"to": "lead@example.com", "subject": "Edited"}');
        await card.locator('[data-decision="edit"]').click();
      },
      /you edited the call to send_email with \{"to":"lead@example.com","subject":"Edited"\}/,
    ],
    [
      "/authorize",
      "authorization",
      async (card) => {
        // The popup goes to the demo's provider (off this machine: refused by the route
        // above); Continue then resumes, as after a popup on another origin.
        await card.locator('[data-action="connect"]').click();
        await card.locator(".connect-status:not([hidden])").waitFor(WAIT);
        await card.locator('[data-decision="authorized"]').click();
      },
      /you connected the account/,
    ],
  ];
  for (const [command, kind, click, answer] of kinds) {
    test(`the ${kind} card renders and its button resumes the thread (${answer.source})`, async () => {
      const asked = await say(page, command);
      const card = asked.locator(`.interrupt[data-kind="${kind}"]`);
      await card.waitFor(WAIT);
      assert.deepEqual(await findingCodes(page), []);
      const index = await page.locator(".chat:not([hidden]) > .turn").count();
      await click(card);
      const resumed = await finished(page, index);
      assert.match(await resumed.locator(".bubble.assistant").innerText(), answer);
      assert.ok(await card.evaluate((c) => c.classList.contains("answered")));
      assert.equal(await card.locator("button:enabled").count(), 0);
    });
  }

  test("fork sends threadId:<branch> with history; the Test button sends validate-<16 hex> Hello", async () => {
    await page.locator("#new-thread").click();
    await say(page, "first");
    await say(page, "second");
    const root = await page.locator(".chat:not([hidden])").getAttribute("data-thread-id");
    await page.locator(".chat:not([hidden]) > .turn").nth(1).locator('[data-action="fork"]').click();
    const branch = await page.locator(".chat:not([hidden])").getAttribute("data-thread-id");
    assert.match(branch, new RegExp(`^${root}:[0-9a-f]{8}$`));
    assert.equal(await page.locator('form textarea[name="input"]').inputValue(), "second");
    const edited = await say(page, "second, edited");
    // The branch is new to the agent: it knows "first" only from the history the fork sent.
    assert.equal(
      await edited.locator(".bubble.assistant").innerText(),
      'You said "second, edited". Before that you said "first".',
    );

    // Back to the root thread: it continues where it was, the fork did not touch it.
    await page.locator("#thread-select").selectOption(root);
    const third = await say(page, "third");
    assert.equal(await third.locator(".bubble.assistant").innerText(), 'You said "third". Before that you said "second".');

    await page.locator("#test-button").click();
    const thread = await page.locator(".chat:not([hidden])").getAttribute("data-thread-id");
    assert.match(thread, /^validate-[0-9a-f]{16}$/);
    const test = await finished(page, 0);
    assert.match(await test.locator(".bubble.user").innerText(), /^Hello$/);
    assert.match(await test.locator(".test-result").innerText(), /^Test passed/);
  });

  test("a full conversation (the README's screenshot)", async () => {
    await page.locator("#new-thread").click();
    await say(page, "Hello! Can you look up the time?");
    const tool = await say(page, "/tool");
    await say(page, "/file");
    const review = await say(page, "/review");
    const card = review.locator('.interrupt[data-kind="review"]');
    await card.locator("textarea.review-args").fill('{\n  "to": "ops@example.com",\n  "subject": "Flight booked"\n}');
    await card.locator('[data-decision="edit"]').click();
    const edited = await finished(page, 4);
    assert.match(await edited.locator(".bubble.assistant").innerText(), /"subject":"Flight booked"/);
    await say(page, "/approve");
    await page.setViewportSize({ width: 1400, height: 1480 });
    await tool.click();
    await page.locator("#threads").evaluate((t) => t.scrollTo(0, t.scrollHeight));
    const shot = process.env.PLAYGROUND_SCREENSHOT || join(dataDir(), "playground.png");
    await page.screenshot({ path: shot });
    assert.ok(statSync(shot).size > 50_000, "the screenshot shows a conversation");
    await page.setViewportSize({ width: 1400, height: 900 });
  });
});

/** An unused loopback port (for a server whose own URL must be known before it starts). */
function freePort() {
  return new Promise((resolve) => {
    const s = http.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

describe("issue 27: a connected account through the playground's card", () => {
  const secret = "client-secret-playground";
  let oauth, model, api;

  before(async () => {
    const oauthPort = await freePort();
    const servePort = await freePort();
    oauth = { url: `http://127.0.0.1:${oauthPort}`, servePort };
    // The real OAuth server of the connected-account tests (tests/oauth, scripts/setup-oauth.sh).
    const child = spawn("node", ["server.mjs"], {
      cwd: new URL("../oauth/", import.meta.url),
      env: { ...process.env, PORT: String(oauthPort), CLIENT_SECRET: secret, REDIRECT_URI: `http://127.0.0.1:${servePort}/callback` },
      stdio: ["ignore", "pipe", "ignore"],
    });
    children.push(child);
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the OAuth server did not start in 20 s")), 20_000);
      child.stdout.once("data", () => (clearTimeout(timer), resolve()));
      child.once("exit", (code) => reject(new Error(`the OAuth server exited (${code})`)));
    });
    // The model: calls my_orders for a question, then says what the tool answered.
    model = await startServer((req, body) => {
      const messages = JSON.parse(body).messages;
      const last = messages[messages.length - 1];
      const chunk = (delta, finish) =>
        `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish ?? null }] })}\n\n`;
      const frames =
        last.role === "tool"
          ? [chunk({ role: "assistant", content: "" }), chunk({ content: `Tool said: ${last.content}` }), chunk({}, "stop")]
          : [
              chunk({ role: "assistant", content: "" }),
              chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "my_orders", arguments: "{}" } }] }),
              chunk({}, "tool_calls"),
            ];
      return [200, { "content-type": "text/event-stream" }, frames.join("") + "data: [DONE]\n\n"];
    });
    // The protected API: whose orders the provider says the bearer token is for.
    api = await startServer(async (req) => {
      const auth = req.headers.authorization || "";
      const me = auth.startsWith("Bearer ") ? await fetch(`${oauth.url}/me`, { headers: { authorization: auth } }) : null;
      if (!me || me.status !== 200) return [401, { "content-type": "application/json" }, '{"error":"sign in"}'];
      const { sub } = await me.json();
      return [200, { "content-type": "application/json" }, JSON.stringify({ owner: sub, orders: ["DH-1", "DH-2"] })];
    });
  });

  after(() => {
    if (model) model.server.close();
    if (api) api.server.close();
  });

  test("Connect opens the provider in a popup, the user signs in, and the pending call runs as them", async () => {
    const tools = `
[providers.acme]
name = "Acme CRM"
authorize_url = "${oauth.url}/auth"
token_url = "${oauth.url}/token"
client_id = "runway"
client_secret = "\${ACME_SECRET}"
scopes = ["openid"]

[[tools]]
name = "my_orders"
description = "The user's orders"
method = "GET"
url = "${api.url}/orders"
auth = "acme"
`;
    const base = await startRunway(["serve", "--listen", `127.0.0.1:${oauth.servePort}`, "--data-dir", dataDir()], "base_url:", {
      RUNWAY_AGENT: "model",
      RUNWAY_MODEL_BASE_URL: `${model.url}/v1`,
      RUNWAY_MODEL: "test-model",
      RUNWAY_TOOLS: tools,
      ACME_SECRET: secret,
      RUNWAY_VAULT_KEY: "q7Zk0m5l2YpQ3rJ8wX1vN6bT4cH9dF0aS2eG7uK5iLo=",
    });
    const page = await openPage(base);
    const asked = await say(page, "What are my orders?");
    const card = asked.locator('.interrupt[data-kind="authorization"]');
    await card.waitFor(WAIT);
    assert.match(await card.innerText(), /Connect your Acme CRM account/);
    // The link is this machine's http address: fine here, refused by Console, and said so.
    assert.ok((await findingCodes(page)).includes("INTERRUPT_REJECTED"), String(await findingCodes(page)));
    const index = await page.locator(".chat:not([hidden]) > .turn").count();

    // The popup: the deployment's /connect link, then the provider's login and consent pages.
    const [popup] = await Promise.all([context.waitForEvent("page"), card.locator('[data-action="connect"]').click()]);
    await popup.locator('input[name="login"]').waitFor(WAIT);
    assert.ok(popup.url().startsWith(`${oauth.url}/`), popup.url());
    await popup.locator('input[name="login"]').fill("ada");
    await popup.locator('input[name="password"]').fill("any");
    await popup.locator('button[type="submit"]').click();
    await popup.locator('button[type="submit"]').waitFor(WAIT); // consent
    await popup.locator('button[type="submit"]').click();
    await popup.getByText("Acme CRM is connected. You can close this window.").waitFor(WAIT);
    assert.equal(new URL(popup.url()).origin, base);
    await popup.close();

    // Without pressing Continue: the page heard the deployment's page and resumed the thread.
    const resumed = await finished(page, index);
    assert.match(await resumed.locator(".bubble.assistant").innerText(), /Tool said: .*"owner":"ada".*DH-1/);
    assert.ok(await card.evaluate((c) => c.classList.contains("answered")));
    assert.deepEqual(page.problems, []);
    await page.close();
  });
});

describe("runway playground", () => {
  test("works against an agent that requires two auth headers, which never reach the browser", async () => {
    const secrets = ["k-3f9a1c77e2", "tenant-5d41b0"];
    const agent = await startRunway(["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir()], "base_url:", {
      RUNWAY_AUTH_HEADERS: `X-Api-Key: ${secrets[0]}\nX-Tenant: ${secrets[1]}`,
    });
    const refused = await fetch(`${agent}/health`, { headers: { "x-api-key": secrets[0] } });
    assert.equal(refused.status, 401, "the agent refuses one header of two");
    const url = await startRunway(
      ["playground", agent, "--header", `X-Api-Key: ${secrets[0]}`, "--header", `X-Tenant: ${secrets[1]}`, "--listen", "127.0.0.1:0"],
      "open:",
    );
    const page = await context.newPage();
    const seen = [];
    page.on("request", (r) => seen.push(JSON.stringify(r.headers())));
    page.on("response", async (r) => seen.push(JSON.stringify(await r.allHeaders()), await r.text().catch(() => "")));
    await page.goto(`${url}/`);
    await page.locator("#agent.ok").waitFor(WAIT);
    assert.match(await page.locator("#target").innerText(), new RegExp(agent.replace(/[.]/g, "\\.")));
    // Any agentId (the demo serves them all): one over 128 characters runway stores hashed.
    await page.locator("#agent-id").fill(`desk-${"7".repeat(130)}`);
    const turn = await say(page, "Hello through the proxy");
    assert.match(await turn.locator(".bubble.assistant").innerText(), /You said "Hello through the proxy"/);
    assert.deepEqual(await findingCodes(page), []);
    // The proxy forwards GET usage with the headers: the turn is counted.
    assert.equal((await threadUsage(page)).turns, "1");
    // The proxy streams: STEP_STARTED shows while the agent is still silent.
    const box = page.locator('form textarea[name="input"]');
    await box.fill("/slow 2");
    await box.press("Enter");
    const slow = page.locator(".chat:not([hidden]) > .turn").nth(1);
    await slow.locator(".step").waitFor(WAIT);
    assert.equal(await slow.getAttribute("data-state"), "streaming");
    assert.equal(await slow.locator(".bubble.assistant").count(), 0);
    await finished(page, 1);
    assert.equal(await slow.locator(".bubble.assistant").innerText(), "Done waiting 2 seconds.");
    const asked = await say(page, "/approve");
    await asked.locator('[data-decision="approve"]').click();
    const resumed = await finished(page, 3);
    assert.match(await resumed.locator(".bubble.assistant").innerText(), /you approved/);
    const everything = seen.join("\n") + (await page.content());
    for (const s of secrets) assert.ok(!everything.includes(s), "a header value reached the browser");
    await page.close();

    // Only the page served by the playground may use its proxy.
    const runs = (headers, body = "{}") => fetch(`${url}/runs`, { method: "POST", headers, body });
    const host = new URL(url).host;
    assert.equal((await runs({ "content-type": "application/json", origin: "http://evil.example" })).status, 403);
    assert.equal((await runs({ "content-type": "text/plain", origin: `http://${host}` })).status, 415);
    assert.equal((await runs({ "content-type": "application/json", "sec-fetch-site": "cross-site" })).status, 403);
    const rebound = await new Promise((resolve, reject) => {
      const req = http.request(`${url}/health`, { headers: { host: `attacker.example:${new URL(url).port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on("error", reject);
      req.end();
    });
    assert.equal(rebound, 403, "a request naming another Host (DNS rebinding) is refused");
    const usage = (headers) => fetch(`${url}/usage?from=2020-01-01&to=2020-01-02`, { headers });
    assert.equal((await usage({ origin: "http://evil.example" })).status, 403, "usage for another origin");
    const report = await usage({ origin: `http://${host}` });
    assert.equal(report.status, 200, "usage relayed with the headers added");
    assert.deepEqual((await report.json()).rows, []);
    const badDays = await fetch(`${url}/usage?from=yesterday`);
    assert.equal(badDays.status, 400, "the agent's own 400 for a bad day comes through");
    assert.match((await badDays.json()).error, /from must be a day/);
    const posted = await fetch(`${url}/usage`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    assert.equal(posted.status, 405, "POST /usage on the playground");
    for (const [method, path, status] of [
      ["GET", "/runs", 405],
      ["GET", "/files/x/y", 404],
    ]) {
      const r = await fetch(`${url}${path}`, { method });
      assert.equal(r.status, status, `${method} ${path} on the playground`);
      assert.equal(typeof (await r.json()).error, "string");
    }
    // The agent's own 400 comes through the proxy (the headers were added).
    const relayed = await runs({ "content-type": "application/json", origin: `http://${host}` });
    assert.equal(relayed.status, 400);
    assert.match((await relayed.json()).error, /./);

    // The same agent's own page (runway serve) asks for the two values and works with them.
    const own = await context.newPage();
    await own.goto(`${agent}/`);
    await own.locator("#auth:not([hidden])").waitFor(WAIT);
    await own.locator("#agent.error").waitFor(WAIT); // /health refused without the values
    await own.locator('input[name="header-x-api-key"]').fill(secrets[0]);
    await own.locator('input[name="header-x-api-key"]').press("Tab");
    await own.locator('input[name="header-x-tenant"]').fill(secrets[1]);
    await own.locator('input[name="header-x-tenant"]').press("Tab");
    await own.locator("#agent.ok").waitFor(WAIT);
    const mine = await say(own, "Hello with headers");
    assert.match(await mine.locator(".bubble.assistant").innerText(), /You said "Hello with headers"/);
    assert.deepEqual(await findingCodes(own), []);
    await own.close();
    const anonymous = await fetch(`${agent}/playground/findings`, {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json" },
    });
    assert.equal(anonymous.status, 401, "the findings endpoint asks for the agent's header set");
  });

  test("an agent that cannot be reached: the turn says so, UPSTREAM_UNAVAILABLE", async () => {
    const closed = await new Promise((resolve) => {
      const s = http.createServer().listen(0, "127.0.0.1", () => {
        const port = s.address().port;
        s.close(() => resolve(`http://127.0.0.1:${port}`));
      });
    });
    const url = await startRunway(["playground", closed, "--listen", "127.0.0.1:0"], "open:");
    const page = await context.newPage();
    await page.goto(`${url}/`);
    await page.locator("#agent.error").waitFor(WAIT);
    const turn = await say(page, "Hello?");
    assert.match(await turn.locator(".error-marker").innerText(), /could not reach the agent/);
    assert.deepEqual(await findingCodes(page), ["UPSTREAM_UNAVAILABLE"]);
    assert.match(
      (await threadUsage(page)).unavailable,
      /^Usage unavailable: GET usage answered HTTP 502: the playground could not reach the agent: /,
    );
    await page.close();
  });

  test("an agent that breaks the contract shows its findings and a truncated turn", async () => {
    const url = await startRunway(["playground", brokenAgent.url, "--listen", "127.0.0.1:0"], "open:");
    const page = await openPage(url);
    const turn = await say(page, "Hello");
    assert.equal(await turn.locator(".bubble.assistant").innerText(), "Half an answ");
    assert.match(await turn.locator(".truncated").innerText(), /without RUN_FINISHED or RUN_ERROR/);
    const file = turn.locator('a.file-card[data-channel="custom"]');
    assert.equal(await file.getAttribute("href"), "https://files.example.com/t0k3n/report.pdf");
    assert.equal(await file.locator(".file-icon").innerText(), "PDF");
    const codes = await findingCodes(page);
    for (const code of ["MISSING_STREAM_HEADERS", "RUN_STARTED_SENT", "NO_FINAL_FRAME"]) {
      assert.ok(codes.includes(code), `${code} in ${codes}`);
    }
    assert.match(await turn.locator(".badge").innerText(), /RUN_STARTED_SENT/);
    // The browser logs the one GET usage the agent refused (404): the page does not ask again.
    assert.deepEqual(page.problems, ["Failed to load resource: the server responded with a status of 404 (Not Found)"]);
    await page.close();
  });
});

/** A small HTTP server on loopback: `handler(req, body)` returns (or resolves with) `[status, headers, body]`. */
function startServer(handler) {
  const seen = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      const [status, headers, out] = await handler(req, body);
      res.writeHead(status, headers);
      res.end(out);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => resolve({ server, seen, url: `http://127.0.0.1:${server.address().port}` }));
  });
}

describe("issue 20: the page and the local server under attack", () => {
  test("another web page cannot drive runway serve without auth: cross-origin, text/plain, DNS rebinding", async () => {
    const thread = `attack-${Date.now()}`;
    const evil = await startServer(() => [
      200,
      { "content-type": "text/html" },
      `<!doctype html><script>
        const body = JSON.stringify({ protocolVersion: "1", runId: "evil-" + Date.now(), threadId: ${JSON.stringify(thread)},
          agentId: "a", workspaceId: "w", input: "typed by another web page" });
        fetch(${JSON.stringify(serveUrl)} + "/runs", { method: "POST", mode: "no-cors", body })
          .finally(() => { document.title = "sent"; });
      </script>`,
    ]);
    try {
      const page = await context.newPage();
      const refused = page.waitForResponse((r) => r.url().endsWith("/runs"));
      await page.goto(`${evil.url}/`);
      assert.equal((await refused).status(), 403, "a turn posted by another origin's page");
      await page.waitForFunction(() => document.title === "sent", null, WAIT);
      // DNS rebinding: the attacker's name, now resolving to loopback.
      const rebound = await page.goto(`http://rebind.test:${new URL(serveUrl).port}/`);
      assert.equal(rebound.status(), 403, "a page under another Host");
      await page.close();
      // No turn ran on that thread: its transcript is empty.
      const transcript = await fetch(`${serveUrl}/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ protocolVersion: "1", runId: `t-${Date.now()}`, threadId: thread, agentId: "a", workspaceId: "w", input: "/transcript" }),
      });
      assert.equal(transcript.status, 200);
      assert.doesNotMatch(await transcript.text(), /typed by another web page/);
      // The page's own origin still works (the rest of this file), and so do plain clients.
      const plain = await fetch(`${serveUrl}/runs`, { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" });
      assert.equal(plain.status, 415);
    } finally {
      evil.server.close();
    }
  });

  test("a review of two calls of one tool: each card shows its call id, and every edited call is sent and run as edited", async () => {
    // An OpenAI-compatible model calling issue_refund twice, then answering "Done."; a refunds API.
    const sse = (chunks) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n";
    const delta = (d, finish = null) => ({ choices: [{ index: 0, delta: d, finish_reason: finish }] });
    const model = await startServer((req, body) => {
      const messages = JSON.parse(body || "{}").messages || [];
      const last = messages[messages.length - 1] || {};
      const chunks =
        last.role === "tool"
          ? [delta({ role: "assistant", content: "Done." }), delta({}, "stop")]
          : [
              delta({ role: "assistant", tool_calls: [{ index: 0, id: "A-1", type: "function", function: { name: "issue_refund", arguments: '{"order":"A-1","amount":5}' } }] }),
              delta({ tool_calls: [{ index: 1, id: "B-2", type: "function", function: { name: "issue_refund", arguments: '{"order":"B-2","amount":1000}' } }] }),
              delta({}, "tool_calls"),
            ];
      return [200, { "content-type": "text/event-stream" }, sse(chunks)];
    });
    const refunds = await startServer(() => [200, { "content-type": "application/json" }, '{"refunded":true}']);
    try {
      const url = await startRunway(["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir()], "base_url:", {
        RUNWAY_AGENT: "model",
        RUNWAY_MODEL_BASE_URL: `${model.url}/v1`,
        RUNWAY_MODEL: "test-model",
        RUNWAY_TOOLS: `[[tools]]
name = "issue_refund"
parameters = { type = "object", properties = { order = { type = "string" }, amount = { type = "number" } } }
method = "POST"
url = "${refunds.url}/refunds"
approval = true
`,
      });
      const page = await openPage(url);
      const asked = await say(page, "Refund both");
      const card = asked.locator('.interrupt[data-kind="review"]');
      assert.deepEqual(await card.locator(".review-item .call-id").allInnerTexts(), ["A-1", "B-2"]);
      const args = card.locator("textarea.review-args");
      await args.nth(0).fill('{"order":"A-1","amount":4}');
      await args.nth(1).fill('{"order":"B-2","amount":10}');
      await card.locator('[data-decision="edit"]').click();
      const done = await finished(page, 1);
      assert.match(await done.locator(".bubble.assistant").innerText(), /Done\./);
      assert.deepEqual(
        refunds.seen.map((r) => JSON.parse(r.body)).sort((a, b) => a.order.localeCompare(b.order)),
        [
          { order: "A-1", amount: 4 },
          { order: "B-2", amount: 10 },
        ],
        "exactly the two edited calls ran, as edited",
      );
      assert.deepEqual(page.problems, []);
      await page.close();
    } finally {
      model.server.close();
      refunds.server.close();
    }
  });
});

describe("issue 18: the page shows the current thread's usage", () => {
  test("each thread shows what its turns used (turns, model calls, tokens, tool calls, cost) as the deployment recorded it", async () => {
    // An OpenAI-compatible model reporting known usage on every call: a tool call, then an
    // answer after the tool's result, or a plain answer.
    const sse = (chunks) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n";
    const delta = (d, finish = null) => ({ choices: [{ index: 0, delta: d, finish_reason: finish }] });
    const usage = (input, output) => ({ choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } });
    const model = await startServer((req, body) => {
      const messages = JSON.parse(body || "{}").messages || [];
      const last = messages[messages.length - 1] || {};
      let chunks;
      if (last.role === "tool") {
        chunks = [delta({ role: "assistant", content: "The lookup says 42." }), delta({}, "stop"), usage(1500, 40)];
      } else if (String(last.content).includes("look up")) {
        chunks = [
          delta({ role: "assistant", tool_calls: [{ index: 0, id: "call-1", type: "function", function: { name: "lookup", arguments: '{"q":"answer"}' } }] }),
          delta({}, "tool_calls"),
          usage(1200, 25),
        ];
      } else {
        chunks = [delta({ role: "assistant", content: "Just talking." }), delta({}, "stop"), usage(800, 12)];
      }
      return [200, { "content-type": "text/event-stream" }, sse(chunks)];
    });
    const lookups = await startServer(() => [200, { "content-type": "application/json" }, '{"answer":42}']);
    // An agentId a workers file accepts but runway stores hashed (`~` is not kept verbatim):
    // the page must match the row's id exactly.
    const agentId = "desk~7";
    try {
      const url = await startRunway(["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir()], "base_url:", {
        RUNWAY_WORKERS: `[defaults]
agent = "model"
base_url = "${model.url}/v1"
model = "test-model"

[prices."test-model"]
input_per_million = 2.0
output_per_million = 10.0

[workers.${JSON.stringify(agentId)}]
name = "Usage desk"
tools = '''
[[tools]]
name = "lookup"
parameters = { type = "object", properties = { q = { type = "string" } } }
method = "POST"
url = "${lookups.url}/lookup"
'''
`,
      });
      const page = await openPage(url);
      await page.locator("#agent-id").fill(agentId);
      assert.match(await page.locator("#thread-usage").innerText(), /no turns yet/);
      assert.match(await page.locator("#thread-usage").getAttribute("title"), /estimates by the deployment/i);

      // Two model calls (1200+25, then 1500+40 tokens) and one tool call: at $2 and $10 per
      // million tokens, 2700 × 2 + 65 × 10 = 6050 millionths of a dollar.
      const first = await say(page, "Please look up the answer");
      assert.equal(await first.locator(".bubble.assistant").last().innerText(), "The lookup says 42.");
      assert.deepEqual(await threadUsage(page), {
        turns: "1",
        modelCalls: "2",
        inputTokens: "2,700",
        outputTokens: "65",
        toolCalls: "1",
        cost: "$0.00605",
      });
      const second = await say(page, "How are you?");
      assert.equal(await second.locator(".bubble.assistant").innerText(), "Just talking.");
      assert.deepEqual(await threadUsage(page), {
        turns: "2",
        modelCalls: "3",
        inputTokens: "3,500",
        outputTokens: "77",
        toolCalls: "1",
        cost: "$0.00777",
      });
      // The selected turn's own figures, in the inspector.
      assert.match(
        await page.locator("#timing").innerText(),
        /usage\s+1 turn · 1 model call · 800 input \/ 12 output tokens · 0 tool calls · \$0\.00172/,
      );

      // Another thread starts from nothing and counts only its own turns.
      await page.locator("#new-thread").click();
      assert.match(await page.locator("#thread-usage").innerText(), /no turns yet/);
      await say(page, "Hi");
      assert.deepEqual(await threadUsage(page), {
        turns: "1",
        modelCalls: "1",
        inputTokens: "800",
        outputTokens: "12",
        toolCalls: "0",
        cost: "$0.00172",
      });
      await page.locator("#thread-select").selectOption({ label: "Thread 1" });
      assert.equal((await threadUsage(page)).cost, "$0.00777");

      // The figures are the deployment's own: its row for the page's ids holds the three turns.
      const report = await (await fetch(`${url}/usage`)).json();
      const stored = "~" + createHash("sha256").update(agentId).digest("hex");
      const rows = report.rows.filter((r) => r.agentId === stored);
      assert.equal(rows.length, 1, JSON.stringify(report.rows));
      const { turns, modelCalls, inputTokens, outputTokens, toolCalls, costMicroUsd } = rows[0];
      assert.deepEqual(
        { turns, modelCalls, inputTokens, outputTokens, toolCalls, costMicroUsd },
        { turns: 3, modelCalls: 4, inputTokens: 4300, outputTokens: 89, toolCalls: 1, costMicroUsd: 9490 },
      );
      assert.deepEqual(page.problems, []);
      await page.close();
    } finally {
      model.server.close();
      lookups.server.close();
    }
  });

  test("usage unavailable: the page says why instead of showing zeros, and the chat goes on", async () => {
    // An agent that is not runway: GET usage is a 404.
    const broken = await startRunway(["playground", brokenAgent.url, "--listen", "127.0.0.1:0"], "open:");
    const page = await openPage(broken);
    const turn = await say(page, "Hello");
    assert.equal(await turn.locator(".bubble.assistant").innerText(), "Half an answ");
    assert.deepEqual(await threadUsage(page), {
      unavailable: "Usage unavailable: GET usage answered HTTP 404: no such endpoint",
    });
    // The agent has no usage report: the page asked once, and says so for every later turn.
    const again = await say(page, "Hello again");
    assert.equal(await again.locator(".bubble.assistant").innerText(), "Half an answ");
    assert.deepEqual(await threadUsage(page), {
      unavailable: "Usage unavailable: GET usage answered HTTP 404: no such endpoint (2 turns)",
    });
    assert.equal(page.problems.length, 1, page.problems.join("\n"));
    await page.close();

    // An agent that answers GET usage but records nothing (a store without counters).
    const frames = [
      { type: "STEP_STARTED", stepName: "thinking" },
      { type: "STEP_FINISHED", stepName: "thinking" },
      { type: "TEXT_MESSAGE_START", messageId: "m1", role: "assistant" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "Fine, thanks." },
      { type: "TEXT_MESSAGE_END", messageId: "m1" },
      { type: "RUN_FINISHED", outcome: { type: "success" } },
    ];
    const uncounted = await startServer((req) => {
      if (req.url === "/health") return [200, { "content-type": "application/json" }, '{"status":"ok","protocolVersions":["1"]}'];
      if (req.url.startsWith("/usage")) {
        return [200, { "content-type": "application/json" }, JSON.stringify({ from: "2026-12-01", to: "2026-12-03", rows: [], totals: {}, totalCostUsd: 0 })];
      }
      const body = frames.map((f) => `data: ${JSON.stringify(f)}\n\n`).join("");
      return [200, { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" }, body];
    });
    try {
      const url = await startRunway(["playground", uncounted.url, "--listen", "127.0.0.1:0"], "open:");
      const quiet = await openPage(url);
      for (const text of ["How are you?", "Still there?"]) {
        const answered = await say(quiet, text);
        assert.equal(await answered.locator(".bubble.assistant").innerText(), "Fine, thanks.");
      }
      assert.deepEqual(await threadUsage(quiet), {
        unavailable: "Usage unavailable: the deployment recorded no usage for a turn that ran (2 turns)",
      });
      assert.match(await quiet.locator("#timing").innerText(), /usage\s+unavailable: the deployment recorded no usage for a turn that ran/);
      // The usage reads went through the proxy, for yesterday to tomorrow (UTC).
      const reads = uncounted.seen.filter((r) => r.url.startsWith("/usage"));
      assert.ok(reads.length >= 2, `${reads.length} usage reads`);
      for (const r of reads) assert.match(r.url, /^\/usage\?from=\d{4}-\d\d-\d\d&to=\d{4}-\d\d-\d\d$/);
      assert.deepEqual(quiet.problems, []);
      await quiet.close();
    } finally {
      uncounted.server.close();
    }
  });
});

describe("issue 28: the playground speaks AG-UI", () => {
  /** Switches `page` to AG-UI; resolves with the RunAgentInput bodies the page posts from now on. */
  async function aguiMode(page) {
    await page.locator("#protocol").selectOption("agui");
    assert.match(await page.locator("#thread-title").innerText(), /AG-UI/);
    const sent = [];
    page.on("request", (r) => {
      if (r.method() === "POST" && /\/agui(\/|$)/.test(new URL(r.url()).pathname)) sent.push({ url: r.url(), body: r.postDataJSON() });
    });
    return sent;
  }

  /** A plain answer that knows the thread, a tool call, and an approval answered from its card. */
  async function converse(page, sent, base) {
    const hello = await say(page, "Hello over AG-UI");
    const greeting = await hello.locator(".bubble.assistant").innerText();
    assert.match(greeting, /^You said "Hello over AG-UI"\. This is the first thing/);
    // The run is AG-UI's: RUN_STARTED first, one RUN_FINISHED with the run's ids.
    const frames = await page.locator("#frames li.line").allInnerTexts();
    assert.match(frames[0], /data: \{"type":"RUN_STARTED"/);
    assert.match(frames.join("\n"), /"type":"RUN_FINISHED","threadId":"[^"]+","runId":"[^"]+"/);
    const first = sent[0];
    assert.equal(first.url, `${base}/agui`);
    assert.deepEqual(Object.keys(first.body).sort(), ["context", "forwardedProps", "messages", "runId", "state", "threadId", "tools"]);
    assert.deepEqual(first.body.tools, []);
    assert.deepEqual(first.body.context, []);
    assert.deepEqual(Object.keys(first.body.forwardedProps).sort(), ["userId", "workspaceId"]);
    assert.deepEqual(first.body.messages.map((m) => [m.role, m.content]), [["user", "Hello over AG-UI"]]);

    // The client sends the whole conversation; the agent reads only what is new.
    const again = await say(page, "And again");
    assert.equal(await again.locator(".bubble.assistant").innerText(), 'You said "And again". Before that you said "Hello over AG-UI".');
    assert.deepEqual(sent[1].body.messages.map((m) => [m.role, m.content]), [
      ["user", "Hello over AG-UI"],
      ["assistant", greeting],
      ["user", "And again"],
    ]);
    assert.equal(sent[1].body.threadId, first.body.threadId);
    assert.notEqual(sent[1].body.runId, first.body.runId);
    // The runs count in the usage row of the page's workspace, as Console turns do.
    assert.equal((await threadUsage(page)).turns, "2");

    await demoToolTurn(page);

    const asked = await say(page, "/approve");
    const question = asked.locator('.interrupt[data-kind="approval"]');
    await question.waitFor(WAIT);
    const index = await page.locator(".chat:not([hidden]) > .turn").count();
    await question.locator('[data-decision="approve"]').click();
    const resumed = await finished(page, index);
    assert.match(await resumed.locator(".bubble.assistant").innerText(), /you approved/);
    assert.equal(await question.locator("button:enabled").count(), 0);
    const resume = sent[sent.length - 1].body;
    assert.equal(resume.threadId, first.body.threadId);
    assert.deepEqual(resume.resume, [
      { interruptId: `${sent[sent.length - 2].body.runId}.interrupt`, status: "resolved", payload: { decision: "approve" } },
    ]);
    // The next run goes on after the answered question.
    const after = await say(page, "Thanks");
    assert.match(await after.locator(".bubble.assistant").innerText(), /^You said "Thanks"/);
  }

  test("runway serve: the AG-UI switch, remembered; a plain answer, a tool call, an approval and a rejection from the card, a fork", async () => {
    const page = await openPage(serveUrl);
    assert.equal(await page.locator("#protocol").inputValue(), "console", "Console is the default");
    const sent = await aguiMode(page);
    await converse(page, sent, serveUrl);

    // A rejection is a cancelled resume.
    const asked = await say(page, "/approve");
    const index = await page.locator(".chat:not([hidden]) > .turn").count();
    await asked.locator('.interrupt[data-kind="approval"] [data-decision="reject"]').click();
    const rejected = await finished(page, index);
    assert.match(await rejected.locator(".bubble.assistant").innerText(), /you rejected/);
    assert.deepEqual(sent[sent.length - 1].body.resume, [
      { interruptId: `${sent[sent.length - 2].body.runId}.interrupt`, status: "cancelled" },
    ]);

    // A fork: a new threadId whose first run sends the turns before it as messages.
    const root = sent[0].body.threadId;
    await page.locator(".chat:not([hidden]) > .turn").nth(1).locator('[data-action="fork"]').click();
    const edited = await say(page, "And again, edited");
    assert.equal(
      await edited.locator(".bubble.assistant").innerText(),
      'You said "And again, edited". Before that you said "Hello over AG-UI".',
    );
    const forked = sent[sent.length - 1].body;
    assert.match(forked.threadId, new RegExp(`^${root}:[0-9a-f]{8}$`));
    assert.deepEqual(forked.messages.map((m) => m.role), ["user", "assistant", "user"]);
    assert.deepEqual(page.problems, []);
    await page.close();

    // Remembered: the next page load starts in AG-UI; switching back starts a Console thread.
    const again = await openPage(serveUrl);
    assert.equal(await again.locator("#protocol").inputValue(), "agui");
    assert.match(await again.locator("#thread-title").innerText(), /AG-UI/);
    await again.locator("#protocol").selectOption("console");
    assert.doesNotMatch(await again.locator("#thread-title").innerText(), /AG-UI/);
    const turn = await say(again, "Console again");
    assert.match(await turn.locator(".bubble.assistant").innerText(), /^You said "Console again"\. This is the first thing/);
    assert.deepEqual(await findingCodes(again), []);
    await again.close();
  });

  test("runway playground forwards POST /agui with the agreed headers", async () => {
    const secret = "k-agui-91c4e0";
    const agent = await startRunway(["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir()], "base_url:", {
      RUNWAY_AUTH_HEADERS: `X-Api-Key: ${secret}`,
    });
    const url = await startRunway(["playground", agent, "--header", `X-Api-Key: ${secret}`, "--listen", "127.0.0.1:0"], "open:");
    const page = await context.newPage();
    page.problems = [];
    page.on("pageerror", (e) => page.problems.push(String(e)));
    await page.goto(`${url}/`);
    await page.locator("#agent.ok").waitFor(WAIT);
    const sent = await aguiMode(page);
    await converse(page, sent, url);
    assert.deepEqual(page.problems, []);
    await page.close();
    // The proxy's own-page rule holds on /agui too.
    const refused = await fetch(`${url}/agui`, { method: "POST", headers: { "content-type": "application/json", origin: "http://evil.example" }, body: "{}" });
    assert.equal(refused.status, 403);
  });
});
