#!/usr/bin/env node
// Upper bound of the CPU time one plain turn costs under `wrangler dev`:
//
//   node infra/cloudflare/cpu-per-turn.mjs BASE_URL PGID [TURNS]      (TURNS defaults to 200)
//
// Sums user+system CPU of every workerd process in process group PGID (the group that
// infra/cloudflare/local starts wrangler in) before and after TURNS sequential plain turns
// ("Hello" on a fresh thread: one Worker invocation, two Durable Object calls), and prints the
// difference per turn. It counts everything workerd does for the turn (HTTP parsing, the Worker,
// the Durable Object and its SQLite, miniflare's local proxy), so the Worker's own CPU time is
// lower. As a baseline it also measures TURNS `GET /health` requests (same HTTP path, no
// storage, no turn): the difference is what the turn itself adds.
// Auth headers come from RUNWAY_AUTH_HEADERS. Loopback only, bounded by TURNS.
import { readFileSync, readdirSync } from "node:fs";

const [base, pgid, turnsArg = "200"] = process.argv.slice(2);
if (!base || !pgid) {
  console.error("usage: cpu-per-turn.mjs BASE_URL PGID [TURNS]");
  process.exit(2);
}
const turns = Math.min(Number(turnsArg), 5000);
const TICK_MS = 10; // USER_HZ is 100 on Linux

function workerdCpuMs() {
  let ticks = 0;
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue;
    }
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is state (field 3); pgrp is field 5, utime 14, stime 15.
    if (name === "workerd" && fields[2] === String(pgid)) {
      ticks += Number(fields[11]) + Number(fields[12]);
    }
  }
  return ticks * TICK_MS;
}

const headers = { "content-type": "application/json" };
for (const line of (process.env.RUNWAY_AUTH_HEADERS ?? "").split("\n")) {
  const i = line.indexOf(":");
  if (i > 0) headers[line.slice(0, i).trim()] = line.slice(i + 1).trim();
}
async function turn(n) {
  const id = `cpu-${Date.now()}-${n}`;
  const res = await fetch(`${base}/runs`, {
    method: "POST",
    headers,
    body: JSON.stringify({
      protocolVersion: "1", runId: id, threadId: id, agentId: "cpu", workspaceId: "cpu", input: "Hello",
    }),
  });
  const text = await res.text();
  if (res.status !== 200 || !text.includes("RUN_FINISHED")) throw new Error(`turn ${n}: ${res.status} ${text.slice(-200)}`);
}

async function health() {
  const res = await fetch(`${base}/health`, { headers });
  await res.text();
  if (res.status !== 200) throw new Error(`/health: ${res.status}`);
}

async function measure(f) {
  const cpu0 = workerdCpuMs();
  const t0 = performance.now();
  for (let i = 0; i < turns; i++) await f(i);
  return { cpu: (workerdCpuMs() - cpu0) / turns, wall: (performance.now() - t0) / turns };
}

for (let i = 0; i < 10; i++) await turn(`warm${i}`); // JIT and isolate warm-up
const h = await measure(health);
const t = await measure(turn);
console.log(JSON.stringify({
  turns,
  workerdCpuMsPerTurn: +t.cpu.toFixed(2),
  workerdCpuMsPerHealth: +h.cpu.toFixed(2),
  turnMinusHealthCpuMs: +(t.cpu - h.cpu).toFixed(2),
  wallMsPerTurn: +t.wall.toFixed(1),
  wallMsPerHealth: +h.wall.toFixed(1),
}));
