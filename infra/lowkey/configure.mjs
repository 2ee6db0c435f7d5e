#!/usr/bin/env node
// Writes runway's Lowkey package for one deployed agent: the endpoint into both manifests,
// the agent's domain into the web variant's net.egress grant, and the base URL into main.ts.
//
//   node infra/lowkey/configure.mjs --url https://agent.example.com [options]
//   node infra/lowkey/configure.mjs --sam-outputs outputs.json [options]
//       (outputs.json from `sam list stack-outputs --stack-name STACK --output json`, or
//        `aws cloudformation describe-stacks --stack-name STACK`: the BaseUrl output is used)
//   node infra/lowkey/configure.mjs --wrangler-output deploy.log [options]
//       (deploy.log from `npx wrangler deploy | tee deploy.log`: the first https URL is used)
//
// Options:
//   --out DIR               where to write sideload/ and web/ (default: infra/lowkey/dist)
//   --id ID                 plugin id, also the agent id and runtime external:ID (default runway-agent)
//   --name NAME             display name (default "runway agent")
//   --allow-http-loopback   accept http://127.0.0.1:PORT / http://localhost:PORT (local tests only)
//
// Needs Node 18 or later and nothing else. The files in infra/lowkey/{sideload,web} are the
// templates; they are never modified.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

function fail(message) {
  console.error(`configure: ${message}`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { out: join(here, "dist"), id: "runway-agent", name: "runway agent" };
  const takes = new Set(["--url", "--sam-outputs", "--wrangler-output", "--out", "--id", "--name"]);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--allow-http-loopback") {
      opts.allowHttpLoopback = true;
    } else if (a === "-h" || a === "--help") {
      const text = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n");
      console.log(text.slice(1, 21).map((l) => l.replace(/^\/\/ ?/, "")).join("\n"));
      process.exit(0);
    } else if (takes.has(a)) {
      if (i + 1 >= argv.length) fail(`${a} needs a value`);
      opts[a.slice(2).replace(/-(.)/g, (_, c) => c.toUpperCase())] = argv[++i];
    } else {
      fail(`unknown argument ${JSON.stringify(a)} (try --help)`);
    }
  }
  const sources = ["url", "samOutputs", "wranglerOutput"].filter((k) => opts[k] !== undefined);
  if (sources.length !== 1) {
    fail("give exactly one of --url, --sam-outputs, --wrangler-output (try --help)");
  }
  return opts;
}

function findOutput(value, key) {
  if (Array.isArray(value)) {
    for (const v of value) {
      const found = findOutput(v, key);
      if (found) return found;
    }
  } else if (value && typeof value === "object") {
    if (value.OutputKey === key && typeof value.OutputValue === "string") return value.OutputValue;
    for (const v of Object.values(value)) {
      const found = findOutput(v, key);
      if (found) return found;
    }
  }
  return undefined;
}

function baseUrlFrom(opts) {
  if (opts.url !== undefined) return opts.url;
  if (opts.samOutputs !== undefined) {
    let json;
    try {
      json = JSON.parse(readFileSync(opts.samOutputs, "utf8"));
    } catch (e) {
      fail(`cannot read ${opts.samOutputs} as JSON: ${e.message}`);
    }
    const url = findOutput(json, "BaseUrl");
    if (!url) fail(`no BaseUrl output in ${opts.samOutputs}`);
    return url;
  }
  let text;
  try {
    text = readFileSync(opts.wranglerOutput, "utf8");
  } catch (e) {
    fail(`cannot read ${opts.wranglerOutput}: ${e.message}`);
  }
  const urls = text.match(/https:\/\/[A-Za-z0-9.-]+(?::\d+)?(?:\/[^\s"'<>]*)?/g) ?? [];
  const url = urls.find((u) => /\.workers\.dev(?:[:/]|$)/.test(u)) ?? urls[0];
  if (!url) fail(`no https URL in ${opts.wranglerOutput}`);
  return url;
}

function checkBaseUrl(raw, allowHttpLoopback) {
  let u;
  try {
    u = new URL(raw.trim());
  } catch {
    fail(`${JSON.stringify(raw)} is not an absolute URL`);
  }
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname);
  if (u.protocol !== "https:" && !(u.protocol === "http:" && loopback && allowHttpLoopback)) {
    fail(`the agent's URL must be https (got ${u.protocol}//${u.host})`);
  }
  if (u.username || u.password) fail("the agent's URL must not carry credentials");
  if (u.search || u.hash) fail("the agent's URL must not have a query or fragment");
  const path = u.pathname.replace(/\/+$/, "").replace(/\/(lowkey\/turn|runs|health)$/, "");
  return { base: `${u.protocol}//${u.host}${path}`, domain: u.host };
}

const opts = parseArgs(process.argv.slice(2));
if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(opts.id)) {
  fail(`--id ${JSON.stringify(opts.id)}: use letters, digits, '.', '_' or '-'`);
}
const { base, domain } = checkBaseUrl(baseUrlFrom(opts), opts.allowHttpLoopback);
const endpoint = `${base}/lowkey/turn`;
const out = resolve(opts.out);

function manifest(variant) {
  const m = JSON.parse(readFileSync(join(here, variant, "manifest.json"), "utf8"));
  m.id = opts.id;
  m.name = opts.name;
  m.agent = { ...m.agent, id: opts.id, name: opts.name, runtime: `external:${opts.id}`, endpoint };
  if (m.capabilities) {
    m.capabilities = m.capabilities.map((c) =>
      c.type === "net.egress" ? { ...c, domains: [domain] } : c
    );
  }
  return `${JSON.stringify(m, null, 2)}\n`;
}

const template = readFileSync(join(here, "web", "main.ts"), "utf8");
const line = /^export const AGENT_BASE_URL = ".*";$/m;
if (!line.test(template)) fail("web/main.ts has no AGENT_BASE_URL line to fill in");
const mainTs = template.replace(line, `export const AGENT_BASE_URL = ${JSON.stringify(base)};`);

mkdirSync(join(out, "sideload"), { recursive: true });
mkdirSync(join(out, "web"), { recursive: true });
writeFileSync(join(out, "sideload", "manifest.json"), manifest("sideload"));
writeFileSync(join(out, "web", "manifest.json"), manifest("web"));
writeFileSync(join(out, "web", "main.ts"), mainTs);

console.log(`endpoint: ${endpoint}`);
console.log(`domain: ${domain}`);
console.log(`sideload: ${join(out, "sideload")}`);
console.log(`web: ${join(out, "web")}`);
