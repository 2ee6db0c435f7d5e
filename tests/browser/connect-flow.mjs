// A person connecting an account through the playground's authorization card, in Debian's
// headless Chromium (playwright-core as the DevTools client, the launch options of
// playground.test.mjs). Run by the connected-account tests of every runtime
// (tests/src/oauth_flow.rs) against their own deployment and OAuth server:
//
//   node connect-flow.mjs --page URL --login NAME [--header 'Name: value']...
//                         [--map PUBLIC=LOCAL]... [--question TEXT] [--refuse-first]
//
// It opens the playground page at URL (typing --header values into the page's fields when
// the deployment asks for them), sends the question, waits for the authorization card, clicks
// its connect button and follows the popup through the provider's own login and consent
// pages, signing in as NAME, to the deployment's callback page; back on the page, the card's
// Continue (unless the page already resumed, told by the callback page) resumes the thread with
// `authorized`, and the script waits for the pending call's result in the transcript.
// --refuse-first first presses Cancel on the consent page (the callback page says
// access_denied), continues, and expects the card again, then connects on that card.
//
// --map serves the deployment's public URL (what the card links to and the provider redirects
// to, e.g. https://agent.example) from its local address, as a reverse proxy would: the browser
// still sees the public URL. Every other request off 127.0.0.1 is refused.
//
// Prints one JSON line (the card's text, the callback page's status and text, the final answer,
// the page's userId and workspaceId) and exits 0; on any step that fails or times out, exits 1
// with "connect-flow: STEP: why" on stderr.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
/** Each wait's bound (a turn, a page of the popup). */
const WAIT_MS = 30_000;
/** The whole run's bound. */
const RUN_MS = 150_000;
const LOOPBACK = ["127.0.0.1", "localhost", "[::1]"];

class StepFailed extends Error {}

function usage(why) {
  process.stderr.write(
    `connect-flow: ${why}\nusage: node connect-flow.mjs --page URL --login NAME [--header 'Name: value']... [--map PUBLIC=LOCAL]... [--question TEXT] [--refuse-first]\n`,
  );
  process.exit(2);
}

function options() {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        page: { type: "string" },
        login: { type: "string" },
        header: { type: "string", multiple: true, default: [] },
        map: { type: "string", multiple: true, default: [] },
        question: { type: "string", default: "What are my orders?" },
        "refuse-first": { type: "boolean", default: false },
      },
      strict: true,
    }).values;
  } catch (e) {
    usage(e.message);
  }
  if (!parsed.page) usage("--page is required");
  if (!parsed.login) usage("--login is required");
  const headers = parsed.header.map((h) => {
    const at = h.indexOf(":");
    if (at < 1) usage(`--header ${JSON.stringify(h)} is not 'Name: value'`);
    return [h.slice(0, at).trim().toLowerCase(), h.slice(at + 1).trim()];
  });
  const maps = parsed.map.map((m) => {
    const at = m.indexOf("=");
    if (at < 1) usage(`--map ${JSON.stringify(m)} is not PUBLIC=LOCAL`);
    const [from, to] = [m.slice(0, at), m.slice(at + 1)].map((u) => u.replace(/\/$/, ""));
    let pub;
    let local;
    try {
      [pub, local] = [new URL(from), new URL(to)];
    } catch {
      usage(`--map ${JSON.stringify(m)}: not two URLs`);
    }
    if (pub.protocol !== "https:" || pub.pathname !== "/") usage(`--map ${m}: PUBLIC must be an https origin`);
    if (local.protocol !== "http:" || !LOOPBACK.includes(local.hostname)) usage(`--map ${m}: LOCAL must be http on loopback`);
    return { from, to };
  });
  return { ...parsed, headers, maps, refuseFirst: parsed["refuse-first"] };
}

/** Runs `fn`, naming the step in any failure. */
async function step(name, fn) {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof StepFailed) throw e;
    throw new StepFailed(`${name}: ${e.message || e}`);
  }
}

function check(ok, why) {
  if (!ok) throw new Error(why);
}

/**
 * A reverse proxy for each --map: an https server on loopback (a self-signed certificate made
 * with openssl for this run) forwarding to LOCAL, the public host resolved to it by Chromium's
 * host rules. A real one rather than request interception: the provider's redirect back to the
 * public URL is a redirect hop, which playwright does not hand to a route.
 */
async function reverseProxies(maps, dir) {
  if (!maps.length) return { rules: [], hosts: [], close: () => {} };
  const key = join(dir, "proxy-key.pem");
  const cert = join(dir, "proxy-cert.pem");
  const made = spawnSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=runway test proxy", "-keyout", key, "-out", cert],
    { encoding: "utf8" },
  );
  if (made.status !== 0) throw new Error(`openssl could not make the reverse proxy's certificate: ${made.error || made.stderr}`);
  const tls = { key: readFileSync(key), cert: readFileSync(cert) };
  const servers = [];
  const rules = [];
  for (const { from, to } of maps) {
    const target = new URL(to);
    const prefix = target.pathname.replace(/\/$/, "");
    const server = https.createServer(tls, (req, res) => {
      const headers = { ...req.headers, host: target.host, "x-forwarded-host": req.headers.host, "x-forwarded-proto": "https" };
      const upstream = http.request(
        { host: target.hostname, port: target.port, method: req.method, path: prefix + req.url, headers },
        (answer) => {
          res.writeHead(answer.statusCode, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on("error", (e) => {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end(`connect-flow's reverse proxy could not reach ${to}: ${e.message}`);
      });
      req.pipe(upstream);
    });
    await new Promise((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", resolve));
    servers.push(server);
    rules.push(`MAP ${new URL(from).hostname} 127.0.0.1:${server.address().port}`);
  }
  return {
    rules,
    hosts: maps.map((m) => new URL(m.from).hostname),
    close: () => {
      for (const s of servers) {
        s.closeAllConnections();
        s.close();
      }
    },
  };
}

/** Refuses every request off loopback but the mapped public hosts. */
async function loopbackOnly(context, hosts, refused) {
  await context.route("**/*", (route) => {
    const url = route.request().url();
    const host = new URL(url).hostname;
    if (LOOPBACK.includes(host) || hosts.includes(host)) return route.continue();
    refused.push(url);
    return route.abort();
  });
}

/** The turn at `index` of the thread on screen, once its findings are in. */
async function finishedTurn(page, index) {
  const turn = page.locator(".chat:not([hidden]) > .turn").nth(index);
  await turn.and(page.locator('[data-state="done"]')).waitFor({ timeout: WAIT_MS });
  return turn;
}

async function turnCount(page) {
  return page.locator(".chat:not([hidden]) > .turn").count();
}

/** The turn's authorization card, waiting for it; a clear failure naming what the turn showed. */
async function cardOf(turn, what) {
  const card = turn.locator('.interrupt[data-kind="authorization"]');
  if ((await card.count()) === 0) {
    throw new Error(`${what}: no authorization card; the turn showed: ${JSON.stringify(await turn.innerText())}`);
  }
  return card.last();
}

/** What the card says: its prompt and its connect button. */
async function cardWords(card) {
  return {
    prompt: (await card.locator("p.prompt").allInnerTexts()).join(" ").trim(),
    button: (await card.locator('[data-action="connect"]').innerText()).trim(),
  };
}

/**
 * Clicks the card's connect button and follows the popup through the provider's pages as
 * `login` (Cancel on the consent page when `refuse`), to the deployment's callback page:
 * its URL's path, status and text.
 */
async function connectInPopup(context, card, login, refuse) {
  const callback = { status: null };
  const onResponse = (r) => {
    if (new URL(r.url()).pathname.endsWith("/callback")) callback.status = r.status();
  };
  context.on("response", onResponse);
  try {
    const [popup] = await Promise.all([
      context.waitForEvent("page", { timeout: WAIT_MS }),
      card.locator('[data-action="connect"]').click({ timeout: WAIT_MS }),
    ]);
    const opened = await step("the popup opens the provider's page", async () => {
      // Signed in already (a second try in this browser): the consent page comes first.
      const first = popup.locator('input[name="login"], input[name="prompt"][value="consent"]').first();
      await first.waitFor({ state: "attached", timeout: WAIT_MS });
      return popup.url();
    });
    if ((await popup.locator('input[name="login"]').count()) > 0) {
      await step("the provider's login page", async () => {
        await popup.locator('input[name="login"]').fill(login);
        await popup.locator('input[name="password"]').fill("any password");
        await popup.locator('button[type="submit"]').click();
      });
    }
    await step("the provider's consent page", async () => {
      await popup.locator('input[name="prompt"][value="consent"]').waitFor({ state: "attached", timeout: WAIT_MS });
      if (refuse) await popup.getByText("[ Cancel ]").click();
      else await popup.locator('button[type="submit"]').click();
    });
    const page = await step("the provider sends the popup back to the callback page", async () => {
      try {
        await popup.waitForURL((u) => u.pathname.endsWith("/callback"), { timeout: WAIT_MS });
        await popup.locator("h1").waitFor({ timeout: WAIT_MS });
      } catch (e) {
        const text = await popup.locator("body").innerText({ timeout: 1_000 }).catch(() => "");
        throw new Error(`${e.message.split("\n")[0]} (the popup is at ${popup.url()}: ${JSON.stringify(text.slice(0, 300))})`);
      }
      return { url: popup.url(), text: (await popup.locator("body").innerText()).trim() };
    });
    await popup.close();
    const shown = new URL(page.url);
    return {
      provider: new URL(opened).origin,
      callbackUrl: `${shown.origin}${shown.pathname}`,
      callbackQuery: [...shown.searchParams.keys()].sort(),
      error: shown.searchParams.get("error"),
      status: callback.status,
      text: page.text,
    };
  } finally {
    context.off("response", onResponse);
  }
}

/**
 * Back on the page: the card resumes the thread itself (told by the callback page, same origin
 * only) or the user presses its Continue. The resumed turn is the last one.
 */
async function resume(page, card) {
  const answered = () => card.evaluate((c) => c.classList.contains("answered"));
  let by = "page";
  if (!(await answered())) {
    try {
      await card.locator('[data-decision="authorized"]').click({ timeout: 5_000 });
      by = "continue";
    } catch (e) {
      if (!(await answered())) throw e;
    }
  }
  return { by, index: (await turnCount(page)) - 1 };
}

async function main() {
  const opts = options();
  const profile = mkdtempSync(join(tmpdir(), "runway-connect-flow-"));
  const refused = [];
  const problems = [];
  const sent = [];
  let context;
  let proxies = { close: () => {} };
  const deadline = setTimeout(() => {
    process.stderr.write(`connect-flow: the whole run took over ${RUN_MS / 1000} s\n`);
    process.exit(1);
  }, RUN_MS);
  try {
    proxies = await step("start the reverse proxies", () => reverseProxies(opts.maps, profile));
    context = await step("launch Chromium", () =>
      chromium.launchPersistentContext(profile, {
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
          ...(proxies.rules.length ? [`--host-resolver-rules=${proxies.rules.join(", ")}`] : []),
        ],
        // The reverse proxies' certificate is self-signed.
        ignoreHTTPSErrors: proxies.rules.length > 0,
        viewport: { width: 1400, height: 900 },
      }),
    );
    await loopbackOnly(context, proxies.hosts, refused);
    const page = await context.newPage();
    page.on("pageerror", (e) => problems.push(String(e)));
    page.on("request", (r) => {
      if (r.method() === "POST" && new URL(r.url()).pathname.endsWith("/runs")) {
        try {
          sent.push(JSON.parse(r.postData() || "{}"));
        } catch {
          // not JSON: the page sent something else; reported below as no run
        }
      }
    });

    await step("open the playground page", async () => {
      await page.goto(opts.page, { timeout: WAIT_MS });
      await page.locator("#agent.ok, #agent.error").first().waitFor({ timeout: WAIT_MS });
      if (await page.locator("#agent.ok").count()) return;
      // The deployment asks for its header set: typed in like a person would.
      const fields = page.locator("#auth-fields input");
      const n = await fields.count();
      check(n > 0, `the agent is not reachable: ${await page.locator("#agent").innerText()}`);
      for (let i = 0; i < n; i += 1) {
        const name = (await fields.nth(i).getAttribute("name")).replace(/^header-/, "").toLowerCase();
        const value = opts.headers.find(([h]) => h === name);
        check(value, `the page asks for header ${name}: pass --header '${name}: …'`);
        await fields.nth(i).fill(value[1]);
        await fields.nth(i).press("Tab");
      }
      await page.locator("#agent.ok").waitFor({ timeout: WAIT_MS });
    });

    let card = await step("ask, and get the authorization card", async () => {
      const index = await turnCount(page);
      const box = page.locator('form textarea[name="input"]');
      await box.fill(opts.question);
      await box.press("Enter");
      return cardOf(await finishedTurn(page, index), "the question's turn");
    });
    const cardText = await cardWords(card);
    const caller = sent[0] || {};

    let refusal = null;
    if (opts.refuseFirst) {
      const popup = await step("refuse at the provider", () => connectInPopup(context, card, opts.login, true));
      check(popup.error === "access_denied", `refused, the provider sent back error=${popup.error}`);
      const resumed = await step("continue after refusing", () => resume(page, card));
      card = await step("the card again after refusing", async () => {
        const turn = await finishedTurn(page, resumed.index);
        const results = await turn.locator(".tool-card pre.result:not(.pending)").count();
        check(results === 0, "a tool result after the user refused");
        return cardOf(turn, "the turn resumed after refusing");
      });
      refusal = { callback: popup, resumedBy: resumed.by, cardAgain: await cardWords(card) };
    }

    const popup = await step("connect at the provider", () => connectInPopup(context, card, opts.login, false));
    check(popup.status === 200, `the callback page answered HTTP ${popup.status}: ${popup.text}`);
    const resumed = await step("continue after connecting", () => resume(page, card));
    const result = await step("the pending call's result in the transcript", async () => {
      const turn = await finishedTurn(page, resumed.index);
      const again = await turn.locator('.interrupt[data-kind="authorization"]').count();
      check(again === 0, `the card again after connecting: ${JSON.stringify(await turn.innerText())}`);
      const tool = turn.locator(".tool-card pre.result:not(.pending)");
      check((await tool.count()) > 0, `no tool result: ${JSON.stringify(await turn.innerText())}`);
      const answer = turn.locator(".bubble.assistant");
      check((await answer.count()) > 0, `no answer: ${JSON.stringify(await turn.innerText())}`);
      return { toolResult: (await tool.last().innerText()).trim(), answer: (await answer.last().innerText()).trim() };
    });
    check(problems.length === 0, `the page reported errors: ${problems.join("; ")}`);

    const out = {
      userId: caller.userId,
      workspaceId: caller.workspaceId,
      agentId: caller.agentId,
      threadId: caller.threadId,
      runs: sent.length,
      resumes: sent.filter((b) => b.resume).map((b) => b.resume.decision),
      card: cardText,
      refusal,
      callback: popup,
      resumedBy: resumed.by,
      toolResult: result.toolResult,
      answer: result.answer,
      refused,
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    clearTimeout(deadline);
    if (context) await context.close().catch(() => {});
    proxies.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`connect-flow: ${e instanceof StepFailed ? e.message : e.stack || e}\n`);
  process.exit(1);
});
