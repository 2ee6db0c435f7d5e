#!/usr/bin/env node
// Times the arrival of every SSE line of one POST /runs turn, as a client sees it:
//
//   node infra/cloudflare/sse-timing.mjs BASE_URL [INPUT]        (INPUT defaults to "/slow 3")
//
// Auth headers come from RUNWAY_AUTH_HEADERS ("Name: value" lines). Prints one line per frame
// or heartbeat with its offset from the request, then a JSON summary. Exits 1 if the first
// frame took longer than 1 s or any silence exceeded twice RUNWAY_HEARTBEAT_SECS (default 1):
// the proof that nothing between the Worker and the client buffers the stream.
const [base, input = "/slow 3"] = process.argv.slice(2);
if (!base) {
  console.error("usage: sse-timing.mjs BASE_URL [INPUT]");
  process.exit(2);
}
const headers = { "content-type": "application/json" };
for (const line of (process.env.RUNWAY_AUTH_HEADERS ?? "").split("\n")) {
  const i = line.indexOf(":");
  if (i > 0) headers[line.slice(0, i).trim()] = line.slice(i + 1).trim();
}
const id = `${Date.now()}${Math.floor(Math.random() * 1e6)}`;
const body = JSON.stringify({
  protocolVersion: "1", runId: `timing-${id}`, threadId: `timing-${id}`,
  agentId: "timing", workspaceId: "timing", input,
});
const t0 = performance.now();
const res = await fetch(`${base}/runs`, { method: "POST", headers, body });
const arrivals = [];
let pending = "";
const decoder = new TextDecoder();
for await (const chunk of res.body) {
  const at = performance.now() - t0;
  pending += decoder.decode(chunk, { stream: true });
  let cut;
  while ((cut = pending.indexOf("\n\n")) >= 0) {
    const block = pending.slice(0, cut);
    pending = pending.slice(cut + 2);
    const what = block.startsWith(":") ? "heartbeat" : JSON.parse(block.slice(6)).type;
    arrivals.push({ ms: Math.round(at), what });
    console.log(`+${String(Math.round(at)).padStart(6)} ms  ${what}`);
  }
}
const first = arrivals[0]?.ms ?? Infinity;
let silence = 0;
for (let i = 1; i < arrivals.length; i++) silence = Math.max(silence, arrivals[i].ms - arrivals[i - 1].ms);
const beat = Number(process.env.RUNWAY_HEARTBEAT_SECS ?? 1) * 1000;
const summary = {
  status: res.status, firstFrameMs: first, longestSilenceMs: silence,
  heartbeats: arrivals.filter((a) => a.what === "heartbeat").length, last: arrivals.at(-1)?.what,
};
console.log(JSON.stringify(summary));
process.exit(res.status === 200 && first < 1000 && silence < 2 * beat ? 0 : 1);
