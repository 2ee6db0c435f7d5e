// Run beside a configured main.ts, under exactly the jail's permissions:
//   deno test --no-prompt --allow-net=<the manifest's net.egress domain> main_test.ts
// against a running runway at AGENT_BASE_URL.

import { AGENT_BASE_URL, checkAgent, onInstall } from "./main.ts";
import { assert, assertIncludes, rejection } from "./assert.ts";

const agentHost = new URL(AGENT_BASE_URL).host;

Deno.test("the jail grants net to the agent's domain and nothing else", async () => {
  const granted = await Deno.permissions.query({ name: "net", host: agentHost });
  assert(granted.state === "granted", `net ${agentHost}: ${granted.state}`);
  for (const host of ["example.com", "127.0.0.2", "localhost"]) {
    const p = await Deno.permissions.query({ name: "net", host });
    assert(p.state !== "granted", `net ${host} is ${p.state}`);
  }
  for (const name of ["read", "write", "env", "run", "ffi", "sys"] as const) {
    const p = await Deno.permissions.query({ name });
    assert(p.state !== "granted", `${name} is ${p.state}`);
  }
});

Deno.test("onInstall passes against the configured runway", async () => {
  const report = await onInstall({ pluginId: "runway-agent" });
  assert(report.ok, report.message);
  assert(report.status === 200, `status ${report.status}`);
  assert(report.protocolVersions?.includes("1") === true, `${report.protocolVersions}`);
  assertIncludes(report.message, 'speaks protocol version "1"');
  console.log(`onInstall: ${report.message}`);
});

Deno.test("a fetch to any other domain is denied by the jail", async () => {
  const port = Number(new URL(AGENT_BASE_URL).port || 443);
  const others = [
    "https://example.com/",
    "http://127.0.0.2:" + port + "/health",
    "http://localhost:" + port + "/health",
    "http://" + new URL(AGENT_BASE_URL).hostname + ":" + (port + 1) + "/health",
  ];
  for (const url of others) {
    const e = await rejection(() => fetch(url));
    assert(e instanceof Deno.errors.NotCapable, `${url}: ${e}`);
    console.log(`denied: ${url} (${(e as Error).name})`);
  }
  const report = await checkAgent("https://example.com");
  assert(!report.ok, "checkAgent on another domain");
  assertIncludes(report.message, "net.egress grant does not include");
});

Deno.test("nothing but the network grant: files and environment are denied", async () => {
  const read = await rejection(() => Deno.readTextFile("/etc/hostname"));
  assert(read instanceof Deno.errors.NotCapable, `read: ${read}`);
  let env: unknown;
  try {
    Deno.env.get("HOME");
  } catch (e) {
    env = e;
  }
  assert(env instanceof Deno.errors.NotCapable, `env: ${env}`);
});

function answer(status: number, body: string, type = "application/json"): typeof fetch {
  return () => Promise.resolve(new Response(body, { status, headers: { "content-type": type } }));
}

Deno.test("checkAgent explains every way /health can be wrong", async () => {
  const base = "https://agent.example.com";
  const cases: [typeof fetch, string][] = [
    [
      answer(200, '{"status":"ok","protocolVersions":["2"]}'),
      'does not speak protocol version "1"',
    ],
    [answer(200, '{"status":"ok"}'), "no protocolVersions"],
    [answer(200, "<html>hello</html>", "text/html"), "did not answer JSON"],
    [answer(401, '{"error":"unauthorized"}'), "requires auth headers"],
    [answer(503, "{}"), "answered HTTP 503"],
    [answer(200, '{"status":"down","protocolVersions":["1"]}'), 'status "down"'],
    [() => Promise.reject(new TypeError("connection refused")), "unreachable"],
  ];
  for (const [fake, expected] of cases) {
    const r = await checkAgent(base, { fetch: fake });
    assert(!r.ok, `expected a failure mentioning ${expected}`);
    assertIncludes(r.message, expected);
  }
  const degraded = await checkAgent(base, {
    fetch: answer(200, '{"status":"degraded","protocolVersions":["1"]}'),
  });
  assert(degraded.ok, degraded.message);
  assertIncludes(degraded.message, "degraded");
});
