// The runway playground: plays Console's side of the External Agent contract in the browser.
// Each turn is a POST to `runs` (relative to this page: runway serve itself, or the local proxy
// of `runway playground`), read as a stream; every chunk is kept with its arrival time, the
// frames are rendered as Console renders them, and the recording is sent to
// `playground/findings`, where runway-conformance's rules judge it. Around each turn it reads
// the deployment's `usage` report to show what the turn, and so its thread, used.
// Agent content is only ever inserted as text (textContent), never as HTML.
"use strict";

const $ = (selector) => document.querySelector(selector);

/** Creates an element: el("div", {class: "x", onclick: f}, child, "text", ...). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// ---- ids, as Console sends them: strings holding 63-bit integers -----------------------------

function id63() {
  const words = new Uint32Array(2);
  crypto.getRandomValues(words);
  const n = (BigInt(words[0] & 0x7fffffff) << 32n) | BigInt(words[1]);
  return (n === 0n ? 1n : n).toString();
}

function hex(bytes) {
  const b = new Uint8Array(bytes);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

const caller = { agentId: id63(), workspaceId: id63(), userId: id63() };

// ---- page state --------------------------------------------------------------------------------

let settings = { mode: "serve", target: null, authHeaderNames: [] };
const authValues = new Map(); // header name -> value (memory only)
const threads = [];
let current = null;
let playing = null; // { controller, turn } while a turn streams
let selected = null; // the turn shown in the inspector

const form = $("#composer");
const input = form.elements.namedItem("input");
const agentIdBox = $("#agent-id");

function authHeaders() {
  const headers = {};
  for (const name of settings.authHeaderNames) headers[name] = authValues.get(name) || "";
  return headers;
}

// ---- threads -----------------------------------------------------------------------------------

function addThread(id, label, extra) {
  const thread = {
    id,
    label,
    turns: [],
    history: null, // sent with the first turn of a fork, as Console does
    list: el("ol", { class: "chat", "data-thread-id": id }),
    ...extra,
  };
  threads.push(thread);
  $("#threads").append(thread.list);
  const option = el("option", { value: id, text: label });
  $("#thread-select").append(option);
  showThread(thread);
  return thread;
}

function showThread(thread) {
  current = thread;
  for (const t of threads) t.list.hidden = t !== thread;
  $("#thread-select").value = thread.id;
  $("#thread-title").textContent = `threadId ${thread.id}`;
  renderThreadUsage(thread);
  const last = thread.turns[thread.turns.length - 1];
  if (last) select(last);
}

function newThread() {
  const n = threads.filter((t) => !t.test).length + 1;
  return addThread(id63(), `Thread ${n}`);
}

function fork(thread, turn) {
  const before = thread.turns.slice(0, thread.turns.indexOf(turn));
  const history = [];
  for (const t of before) {
    if (t.input) history.push({ role: "user", content: t.input });
    const answer = t.view ? t.view.texts.join("\n") : "";
    if (answer) history.push({ role: "assistant", content: answer });
  }
  const root = thread.id.split(":")[0];
  const branch = addThread(`${root}:${hex(4)}`, `${thread.label} fork`, {});
  branch.history = history;
  const note = el(
    "li",
    { class: "fork-note" },
    `Forked from ${thread.label} before “${turn.label}”. The next turn sends threadId `,
    el("code", { text: branch.id }),
    ` with ${history.length} history message(s):`,
  );
  const shown = el("ul", { class: "history" });
  for (const m of history) shown.append(el("li", { class: m.role }, `${m.role}: ${m.content}`));
  note.append(shown);
  branch.list.append(note);
  input.value = turn.input;
  input.focus();
}

// ---- sending a turn ----------------------------------------------------------------------------

function send(text, resume, label) {
  if (playing) return false;
  if (!current) newThread();
  const thread = current;
  const body = {
    protocolVersion: "1",
    runId: id63(),
    threadId: thread.id,
    agentId: agentIdBox.value.trim() || caller.agentId,
    workspaceId: caller.workspaceId,
    userId: caller.userId,
    input: text,
  };
  if (resume) body.resume = resume;
  if (thread.history) {
    body.history = thread.history;
    thread.history = null;
  }
  for (const card of thread.list.querySelectorAll(".interrupt:not(.answered)")) closeCard(card);
  const turn = newTurn(thread, body, label || text);
  play(turn, body);
  return true;
}

function newTurn(thread, body, label) {
  const turn = {
    thread,
    runId: body.runId,
    threadId: body.threadId,
    input: body.input,
    label,
    body,
    chunks: [],
    lines: [],
    status: null,
    error: null,
    headersMs: null,
    endMs: 0,
    end: "closed",
    verdict: null,
  };
  const forkButton = el("button", {
    type: "button",
    class: "link fork",
    title: "Fork the conversation here: edit and re-run this turn on a branch",
    "data-action": "fork",
    text: "Fork",
    onclick: () => fork(thread, turn),
  });
  const user = el(
    "div",
    { class: "bubble user" + (body.resume ? " decision" : "") },
    label || el("em", { text: "(empty input)" }),
  );
  const agent = el("div", { class: "agent" });
  const badge = el("button", {
    type: "button",
    class: "badge pending",
    text: "streaming…",
    onclick: () => select(turn),
  });
  turn.node = el(
    "li",
    { class: "turn", "data-run-id": turn.runId, "data-state": "streaming", onclick: () => select(turn) },
    el("div", { class: "user-row" }, forkButton, user),
    agent,
    el("div", { class: "turn-foot" }, badge),
  );
  turn.agent = agent;
  turn.badge = badge;
  turn.view = newView();
  thread.turns.push(turn);
  thread.list.append(turn.node);
  turn.node.scrollIntoView({ block: "end" });
  select(turn);
  return turn;
}

async function play(turn, body) {
  const controller = new AbortController();
  playing = { controller, turn };
  setBusy(true);
  if (turn.thread === current) renderThreadUsage(current);
  await usageBefore(turn);
  const t0 = performance.now();
  const since = () => Math.round(performance.now() - t0);
  const headers = { "content-type": "application/json", accept: "text/event-stream", ...authHeaders() };
  let response;
  try {
    response = await fetch("runs", {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      redirect: "manual",
      cache: "no-store",
      signal: controller.signal,
    });
  } catch (e) {
    turn.endMs = since();
    if (controller.signal.aborted) {
      marker(turn, "truncated", "Stopped before the agent answered.");
      return finishTurn(turn, { findings: [], note: "Stopped before the response: nothing to judge." });
    }
    turn.error = String(e.message || e);
    turn.end = "broken";
    marker(turn, "error-marker", `No answer: ${turn.error}`);
    return finishTurn(turn);
  }
  turn.headersMs = since();
  if (response.headers.get("x-playground-proxy-error")) {
    const why = await response.json().catch(() => ({}));
    turn.error = why.error || `the playground proxy answered HTTP ${response.status}`;
    turn.endMs = since();
    turn.headersMs = null;
    marker(turn, "error-marker", `No answer: ${turn.error}`);
    return finishTurn(turn);
  }
  turn.status = response.type === "opaqueredirect" ? 302 : response.status;
  turn.contentType = response.headers.get("content-type");
  turn.cacheControl = response.headers.get("cache-control");
  turn.xAccelBuffering = response.headers.get("x-accel-buffering");
  turn.location = response.headers.get("location");
  const media = (turn.contentType || "").split(";")[0].trim().toLowerCase();
  if (!response.ok || media !== "text/event-stream") {
    const text = response.type === "opaqueredirect" ? "(a redirect, not followed)" : await response.text().catch(() => "");
    turn.endMs = since();
    marker(turn, "error-marker", `The agent refused the turn: HTTP ${turn.status} ${text.slice(0, 300)}`);
    return finishTurn(turn);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const sse = new SseLines();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const atMs = since();
      const text = decoder.decode(value, { stream: true });
      turn.chunks.push({ atMs, text });
      for (const line of sse.feed(text)) onLine(turn, line, atMs);
    }
    turn.end = "closed";
  } catch (e) {
    turn.end = controller.signal.aborted ? "stopped" : "broken";
    turn.error = controller.signal.aborted ? "stopped by the user" : String(e.message || e);
  }
  turn.endMs = since();
  if (!turn.view.final) {
    const why =
      turn.end === "stopped"
        ? "Stopped: the connection was closed, which is Console's only cancel signal."
        : turn.end === "broken"
          ? `Truncated: the stream broke before RUN_FINISHED or RUN_ERROR (${turn.error}).`
          : "Truncated: the stream closed without RUN_FINISHED or RUN_ERROR; Console stores this as a complete answer.";
    marker(turn, "truncated", why);
  }
  return finishTurn(turn);
}

async function finishTurn(turn, verdict) {
  playing = null;
  setBusy(false);
  closeOpen(turn.view);
  const measured = usageAfter(turn);
  if (verdict) {
    turn.verdict = verdict;
    await measured;
    return showFinished(turn);
  }
  turn.badge.textContent = "checking…";
  const recording = {
    runId: turn.runId,
    threadId: turn.threadId,
    status: turn.status,
    error: turn.error,
    headersMs: turn.headersMs,
    location: turn.location,
    contentType: turn.contentType,
    cacheControl: turn.cacheControl,
    xAccelBuffering: turn.xAccelBuffering,
    chunks: turn.chunks,
    end: turn.end,
    endMs: turn.endMs,
  };
  try {
    const r = await fetch("playground/findings", {
      method: "POST",
      headers: { "content-type": "application/json", ...authHeaders() },
      body: JSON.stringify(recording),
    });
    const verdict = await r.json();
    if (!r.ok) throw new Error(verdict.error || `HTTP ${r.status}`);
    turn.verdict = verdict;
  } catch (e) {
    turn.verdict = { error: String(e.message || e), findings: [] };
  }
  await measured;
  showFinished(turn);
}

function showFinished(turn) {
  showVerdict(turn);
  turn.node.setAttribute("data-state", "done");
  if (selected === turn) renderInspector(turn);
  if (turn.thread.test) showTestResult(turn);
  input.focus();
}

function setBusy(busy) {
  $("#send").disabled = busy;
  $("#stop").hidden = !busy;
  $("#test-button").disabled = busy;
}

function showVerdict(turn) {
  const v = turn.verdict;
  const badge = turn.badge;
  if (v.note) {
    badge.className = "badge";
    badge.textContent = v.note;
    return;
  }
  if (v.error) {
    badge.className = "badge error";
    badge.textContent = `findings unavailable: ${v.error}`;
    return;
  }
  const errors = v.findings.filter((f) => f.severity === "error").length;
  const warnings = v.findings.length - errors;
  badge.className = "badge " + (errors ? "error" : warnings ? "warning" : "ok");
  badge.textContent = v.findings.length
    ? `${errors} error(s), ${warnings} warning(s): ${[...new Set(v.findings.map((f) => f.code))].join(", ")}`
    : `no findings · first frame ${v.ttfbMs ?? "–"} ms · ${v.totalMs} ms`;
}

// ---- usage: what each turn used, as the deployment recorded it ---------------------------------
// runway counts usage per workspace × worker × UTC day (`GET usage`), not per thread. This page's
// workspaceId is random per page load, so the row of (that workspaceId, the agentId a turn is
// sent with) holds only this page's turns, and the page plays one turn at a time: what the row
// gained between a reading before a turn and one after it is that turn's usage. A turn stopped
// or broken mid-way can be recorded after the page's reading: anything the row gains before the
// next turn is added to the turn played last.

const USAGE_FIELDS = ["turns", "modelCalls", "inputTokens", "outputTokens", "toolCalls", "costMicroUsd"];
const USAGE_READ_TIMEOUT_MS = 10_000;
const DAY_MS = 86_400_000;

/** The last reading: the row's figures at `key` (ids and days), and the turn played since. */
let meter = { key: null, seen: null, lastTurn: null, settled: false, reason: null };
let meterQueue = Promise.resolve();
/** Why the agent has no usage report at all (it answered 404: not runway): not asked again. */
let noUsageReport = null;

/** Runs `op` after every reading queued before it: readings and turns never interleave. */
function metered(op) {
  const next = meterQueue.then(op);
  meterQueue = next.catch(() => {});
  return next;
}

function zeroTally() {
  return Object.fromEntries(USAGE_FIELDS.map((f) => [f, 0]));
}

function addTally(into, from, sign = 1) {
  for (const f of USAGE_FIELDS) into[f] += sign * (from[f] || 0);
  return into;
}

const isZero = (tally) => USAGE_FIELDS.every((f) => !tally[f]);

/** An id as runway stores it in the usage row (`storage_id`): verbatim when short and plain,
 * otherwise `~` and the SHA-256 of its UTF-8 bytes in hex. */
async function storageForm(id) {
  if (/^[A-Za-z0-9.:_\-@+=]{1,128}$/.test(id)) return id;
  if (!crypto.subtle) throw new Error(`agentId ${JSON.stringify(id)} needs hashing, which this page can only do on https or localhost`);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(id));
  return `~${Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

const utcDay = (ms) => new Date(ms).toISOString().slice(0, 10);

/** What a turn is measured on: its ids, and yesterday to tomorrow (UTC), which holds the day the
 * deployment records the turn under even if the two clocks disagree by hours. */
function usageScope(turn) {
  const now = Date.now();
  const scope = { workspaceId: turn.body.workspaceId, agentId: turn.body.agentId, from: utcDay(now - DAY_MS), to: utcDay(now + DAY_MS) };
  scope.key = JSON.stringify(scope);
  return scope;
}

/** Reads the row of `scope`: `{ tally }`, or `{ unavailable: why }`. */
async function readUsage(scope) {
  if (noUsageReport) return { unavailable: noUsageReport };
  try {
    const r = await fetch(`usage?from=${scope.from}&to=${scope.to}`, {
      headers: authHeaders(),
      cache: "no-store",
      signal: AbortSignal.timeout(USAGE_READ_TIMEOUT_MS),
    });
    const body = await r.json().catch(() => null);
    if (!r.ok) {
      const why = body && typeof body.error === "string" ? `: ${body.error.slice(0, 200)}` : "";
      const unavailable = `GET usage answered HTTP ${r.status}${why}`;
      // A proxy error (the agent unreachable) may pass; a 404 from the agent itself will not.
      if (r.status === 404 && !r.headers.get("x-playground-proxy-error")) noUsageReport = unavailable;
      return { unavailable };
    }
    if (!body || !Array.isArray(body.rows)) return { unavailable: "GET usage did not answer a usage report" };
    const [workspaceId, agentId] = await Promise.all([storageForm(scope.workspaceId), storageForm(scope.agentId)]);
    const tally = zeroTally();
    for (const row of body.rows) {
      if (row && row.workspaceId === workspaceId && row.agentId === agentId) {
        for (const f of USAGE_FIELDS) tally[f] += Number.isSafeInteger(row[f]) ? row[f] : 0;
      }
    }
    return { tally };
  } catch (e) {
    const why = e && e.name === "TimeoutError" ? `no answer within ${USAGE_READ_TIMEOUT_MS / 1000} s` : String((e && e.message) || e);
    return { unavailable: `GET usage failed: ${why}` };
  }
}

/** Adds `delta` to what `turn` used, and shows it. */
function credit(turn, delta) {
  addTally(turn.usage.tally, delta);
  if (turn.thread === current) renderThreadUsage(current);
  if (selected === turn) renderInspector(turn);
}

/** Before a turn: the reading it is measured from (the last one, if nothing can have changed
 * since: the last turn ended with its final frame, on the same ids and days). */
function usageBefore(turn) {
  turn.usageScope = usageScope(turn);
  return metered(async () => {
    const scope = turn.usageScope;
    if (meter.key === scope.key && meter.settled) return;
    const read = await readUsage(scope);
    if (read.unavailable) {
      meter = { key: null, seen: null, lastTurn: null, settled: false, reason: read.unavailable };
      return;
    }
    // Recorded since the last reading: the last turn's (stopped, broken, or refused).
    if (meter.key === scope.key && meter.lastTurn && meter.lastTurn.usage && !meter.lastTurn.usage.unavailable) {
      const late = addTally({ ...read.tally }, meter.seen, -1);
      if (!isZero(late)) credit(meter.lastTurn, late);
    }
    meter = { key: scope.key, seen: read.tally, lastTurn: null, settled: true, reason: null };
  });
}

/** After a turn: its usage is what the row gained since the reading before it. */
function usageAfter(turn) {
  return metered(async () => {
    const scope = turn.usageScope;
    const read = await readUsage(scope);
    if (read.unavailable || meter.key !== scope.key) {
      const reason = read.unavailable || `no reading before the turn (${meter.reason || "the ids or days changed"})`;
      turn.usage = { tally: zeroTally(), unavailable: reason };
      meter = read.unavailable
        ? { key: null, seen: null, lastTurn: null, settled: false, reason }
        : { key: scope.key, seen: read.tally, lastTurn: null, settled: false, reason: null };
    } else {
      const tally = addTally({ ...read.tally }, meter.seen, -1);
      // A turn that ran to its final frame is recorded before its stream ends: none recorded
      // means the deployment keeps no usage (or could not write it), not that it used nothing.
      const unrecorded = turn.view.final && tally.turns === 0;
      turn.usage = { tally, unavailable: unrecorded ? "the deployment recorded no usage for a turn that ran" : null };
      meter = { key: scope.key, seen: read.tally, lastTurn: turn, settled: Boolean(turn.view.final), reason: null };
    }
    if (turn.thread === current) renderThreadUsage(current);
  });
}

function plural(n, word) {
  return `${word}${n === 1 ? "" : "s"}`;
}

function usd(micro) {
  if (!micro) return "$0";
  const text = (micro / 1e6).toFixed(micro >= 1e6 ? 2 : 6).replace(/0+$/, "");
  return `$${text.replace(/\.(\d?)$/, (_, d) => `.${d.padEnd(2, "0")}`)}`;
}

/** A tally as a line of text and figures: `1 turn · 2 model calls · …`. */
function usageLine(t) {
  const n = (field, value) => el("b", { "data-usage": field, text: value });
  const count = (v) => v.toLocaleString("en-US");
  return [
    n("turns", count(t.turns)),
    ` ${plural(t.turns, "turn")} · `,
    n("modelCalls", count(t.modelCalls)),
    ` ${plural(t.modelCalls, "model call")} · `,
    n("inputTokens", count(t.inputTokens)),
    " input / ",
    n("outputTokens", count(t.outputTokens)),
    " output tokens · ",
    n("toolCalls", count(t.toolCalls)),
    ` ${plural(t.toolCalls, "tool call")} · `,
    el("b", { "data-usage": "cost", text: usd(t.costMicroUsd), title: `${t.costMicroUsd} millionths of a US dollar` }),
  ];
}

function turnUsageText(turn) {
  if (!turn.usage) return "measured when the turn ends";
  if (turn.usage.unavailable) return `unavailable: ${turn.usage.unavailable}`;
  return usageLine(turn.usage.tally)
    .map((x) => (x instanceof Node ? x.textContent : x))
    .join("");
}

function renderThreadUsage(thread) {
  const line = $("#thread-usage");
  line.title =
    `Estimates by the deployment, from its GET usage: the row of this page's workspaceId ${caller.workspaceId} × the ` +
    "agentId each turn was sent with, read before and after every turn; a turn's figures are what the row gained. " +
    "Tokens are what the model endpoint reported; the cost uses the prices in the deployment's workers file ($0 without one). " +
    "The workspaceId is random for this page load, so other clients' turns are not counted unless they send the same ids. " +
    "A stopped turn may be recorded after the page reads it: it is added when the next turn starts.";
  const total = zeroTally();
  const missing = [];
  let measured = 0;
  for (const t of thread.turns) {
    if (!t.usage) continue;
    if (t.usage.unavailable) missing.push(t.usage.unavailable);
    else {
      addTally(total, t.usage.tally);
      measured += 1;
    }
  }
  const unavailable = (text) => el("span", { class: "usage-unavailable", "data-usage": "unavailable", text });
  const why = missing.length ? `${missing[missing.length - 1]}${missing.length > 1 ? ` (${missing.length} turns)` : ""}` : "";
  if (!thread.turns.length) line.replaceChildren("Usage: no turns yet");
  else if (!measured && !missing.length) line.replaceChildren("Usage: measured when the turn ends");
  else if (!measured) line.replaceChildren(unavailable(`Usage unavailable: ${why}`));
  else {
    line.replaceChildren("Usage (the deployment's estimate): ", ...usageLine(total));
    if (missing.length) line.append(" · ", unavailable(`not counted: ${why}`));
  }
}

// ---- Console's minimal SSE reader --------------------------------------------------------------

class SseLines {
  constructor() {
    this.partial = "";
    this.afterCr = false;
  }
  /** Returns the complete lines in `text`: {kind: data|comment|blank|ignored, text}. */
  feed(text) {
    const lines = [];
    for (const ch of text) {
      if (this.afterCr) {
        this.afterCr = false;
        if (ch === "\n") continue;
      }
      if (ch === "\n" || ch === "\r") {
        lines.push(classify(this.partial));
        this.partial = "";
        this.afterCr = ch === "\r";
      } else {
        this.partial += ch;
      }
    }
    return lines;
  }
}

function classify(line) {
  if (line === "") return { kind: "blank", text: line };
  if (line.startsWith(":")) return { kind: "comment", text: line };
  const colon = line.indexOf(":");
  const name = colon < 0 ? line : line.slice(0, colon);
  if (name !== "data") return { kind: "ignored", text: line };
  let value = line.slice(colon + 1);
  if (value.startsWith(" ")) value = value.slice(1);
  return { kind: "data", text: line, data: value };
}

const MAX_LINES_KEPT = 3000;

function onLine(turn, line, atMs) {
  if (line.kind !== "blank") {
    if (turn.lines.length < MAX_LINES_KEPT) turn.lines.push({ atMs, text: line.text, kind: line.kind });
    else turn.linesDropped = (turn.linesDropped || 0) + 1;
    if (selected === turn) appendFrameLine(turn, turn.lines.length - 1);
  }
  if (line.kind !== "data") return;
  let frame;
  try {
    frame = JSON.parse(line.data);
  } catch {
    return; // not JSON: Console drops it (the findings say so)
  }
  if (frame && typeof frame === "object" && !Array.isArray(frame)) {
    const box = $("#threads");
    const following = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
    render(turn, frame);
    if (following) box.scrollTop = box.scrollHeight; // keep up with the answer unless scrolled back
  }
}

// ---- rendering frames as Console does ----------------------------------------------------------

// Required fields and their types, as Console checks them (runway-conformance's frame rules):
// "s" a string, "o" an object, "*" anything present.
const REQUIRED = {
  TEXT_MESSAGE_START: { messageId: "s" },
  TEXT_MESSAGE_CONTENT: { messageId: "s", delta: "s" },
  TEXT_MESSAGE_END: { messageId: "s" },
  RUN_FINISHED: { outcome: "o" },
  RUN_ERROR: { message: "s" },
  TOOL_CALL_START: { toolCallId: "s", toolCallName: "s" },
  TOOL_CALL_ARGS: { toolCallId: "s", delta: "s" },
  TOOL_CALL_END: { toolCallId: "s" },
  TOOL_CALL_RESULT: { toolCallId: "s", content: "*" },
  STEP_STARTED: { stepName: "s" },
  STEP_FINISHED: { stepName: "s" },
  ACTIVITY_SNAPSHOT: { messageId: "s", activityType: "s", content: "*" },
  ACTIVITY_DELTA: { messageId: "s", patch: "*" },
  STATE_SNAPSHOT: { snapshot: "o" },
  STATE_DELTA: { delta: "*" },
  REASONING_MESSAGE_START: { messageId: "s" },
  REASONING_MESSAGE_CONTENT: { messageId: "s" },
  REASONING_MESSAGE_END: { messageId: "s" },
  CUSTOM: { name: "s" },
};

function wellFormed(f, fields) {
  return Object.entries(fields).every(([k, type]) => {
    const v = f[k];
    if (v === undefined || v === null) return false;
    if (type === "s") return typeof v === "string";
    if (type === "o") return typeof v === "object" && !Array.isArray(v);
    return true;
  });
}

function newView() {
  return {
    final: null,
    texts: [],
    messages: new Map(),
    tools: new Map(),
    reasoning: new Map(),
    steps: new Map(),
    activities: new Map(),
    files: { artifacts: new Set(), custom: new Set() },
    todos: null,
  };
}

function render(turn, f) {
  const v = turn.view;
  if (v.final) return; // after the final frame: lost
  const fields = REQUIRED[f.type];
  if (!fields) return; // RUN_STARTED, REASONING_END, unknown types: dropped
  if (!wellFormed(f, fields)) return; // malformed: dropped
  for (const [k, want] of [["run_id", turn.runId], ["threadId", turn.threadId]]) {
    if (f[k] !== undefined && f[k] !== null && f[k] !== want) return; // envelope mismatch: discarded
  }
  const box = turn.agent;
  switch (f.type) {
    case "TEXT_MESSAGE_START":
    case "TEXT_MESSAGE_CONTENT": {
      let m = v.messages.get(f.messageId);
      if (!m || m.closed) {
        m = { node: el("div", { class: "bubble assistant" }), text: "", closed: false };
        m.index = v.texts.length;
        v.texts.push("");
        v.messages.set(f.messageId, m);
        box.append(m.node);
      }
      if (f.type === "TEXT_MESSAGE_CONTENT") {
        m.text += String(f.delta);
        v.texts[m.index] = m.text;
        m.node.textContent = m.text;
      }
      break;
    }
    case "TEXT_MESSAGE_END": {
      const m = v.messages.get(f.messageId);
      if (m) m.closed = true;
      break;
    }
    case "TOOL_CALL_START": {
      const args = el("pre", { class: "args" });
      const result = el("pre", { class: "result pending", text: "(no result yet)" });
      const node = el(
        "div",
        { class: "tool-card", "data-tool": f.toolCallName },
        el("div", { class: "tool-name" }, el("span", { class: "tag", text: "tool" }), el("strong", { text: f.toolCallName })),
        el("div", { class: "label", text: "Arguments" }),
        args,
        el("div", { class: "label", text: "Result" }),
        result,
      );
      v.tools.set(f.toolCallId, { node, args, result, argsText: "" });
      box.append(node);
      break;
    }
    case "TOOL_CALL_ARGS": {
      const t = v.tools.get(f.toolCallId);
      if (!t) break;
      t.argsText += String(f.delta);
      t.args.textContent = t.argsText;
      break;
    }
    case "TOOL_CALL_END": {
      const t = v.tools.get(f.toolCallId);
      if (t) t.args.textContent = pretty(t.argsText);
      break;
    }
    case "TOOL_CALL_RESULT": {
      const t = v.tools.get(f.toolCallId);
      if (!t) break;
      t.result.classList.remove("pending");
      t.result.textContent = typeof f.content === "string" ? f.content : JSON.stringify(f.content, null, 2);
      break;
    }
    case "STEP_STARTED": {
      const node = el("div", { class: "step running" }, "▸ ", el("span", { text: f.stepName }));
      v.steps.set(f.stepName, node);
      box.append(node);
      break;
    }
    case "STEP_FINISHED": {
      const node = v.steps.get(f.stepName);
      if (node) node.className = "step done";
      break;
    }
    case "REASONING_MESSAGE_START":
    case "REASONING_MESSAGE_CONTENT": {
      let r = v.reasoning.get(f.messageId);
      if (!r) {
        const text = el("div", { class: "reasoning-text" });
        const node = el("details", { class: "reasoning" }, el("summary", { text: "Reasoning" }), text);
        r = { node, text, content: "" };
        v.reasoning.set(f.messageId, r);
        box.append(node);
      }
      if (f.type === "REASONING_MESSAGE_CONTENT" && typeof f.delta === "string") {
        r.content += f.delta;
        r.text.textContent = r.content;
      }
      break;
    }
    case "REASONING_MESSAGE_END":
      break;
    case "ACTIVITY_SNAPSHOT": {
      let a = v.activities.get(f.messageId);
      if (!a) {
        a = { body: el("pre") };
        a.node = el("div", { class: "activity" }, el("div", { class: "label", text: f.activityType }), a.body);
        v.activities.set(f.messageId, a);
        box.append(a.node);
      }
      a.body.textContent = typeof f.content === "string" ? f.content : JSON.stringify(f.content, null, 2);
      break;
    }
    case "ACTIVITY_DELTA": {
      const a = v.activities.get(f.messageId);
      if (a) a.body.textContent += `\n(updated: ${JSON.stringify(f.patch)})`;
      break;
    }
    case "STATE_SNAPSHOT": {
      const s = f.snapshot || {};
      for (const key of ["artifacts", "files"]) if (Array.isArray(s[key])) for (const a of s[key]) fileCard(turn, a, "artifacts");
      if (Array.isArray(s.todos)) todos(turn, s.todos);
      break;
    }
    case "STATE_DELTA": {
      for (const op of Array.isArray(f.delta) ? f.delta : []) {
        if (!op || typeof op.path !== "string" || !["add", "replace"].includes(op.op)) continue;
        if (/^\/(artifacts|files)(\/|$)/.test(op.path)) {
          for (const a of Array.isArray(op.value) ? op.value : [op.value]) fileCard(turn, a, "artifacts");
        }
      }
      break;
    }
    case "CUSTOM":
      if (f.name === "file") fileCard(turn, f.value, "custom");
      break;
    case "RUN_ERROR":
      v.final = "error";
      marker(turn, "error-marker", `⚠ Error: ${f.message}${f.code ? ` (${f.code})` : ""}`);
      break;
    case "RUN_FINISHED":
      if (!["success", "interrupt"].includes(f.outcome.type)) break; // malformed: dropped
      v.final = "finished";
      if (f.outcome && f.outcome.type === "interrupt" && Array.isArray(f.outcome.interrupts)) {
        const it = f.outcome.interrupts[0];
        if (f.outcome.interrupts.length === 1 && it && typeof it === "object") interruptCard(turn, it);
        else marker(turn, "error-marker", "⚠ Error: the question card could not be built (INTERRUPT_REJECTED)");
      }
      break;
  }
}

function closeOpen(v) {
  for (const m of v.messages.values()) m.closed = true;
  for (const node of v.steps.values()) if (node.classList.contains("running")) node.className = "step done";
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function marker(turn, cls, text) {
  turn.agent.append(el("div", { class: cls, role: "status", text }));
}

function safeUrl(url, schemes) {
  try {
    const u = new URL(String(url));
    return schemes.includes(u.protocol) ? u.href : null;
  } catch {
    return null;
  }
}

/** `url` if it is http(s) on this machine (127.0.0.1, [::1], localhost), else null. */
function loopbackUrl(url) {
  const u = safeUrl(url, ["http:", "https:"]);
  if (!u) return null;
  const host = new URL(u).hostname;
  return ["127.0.0.1", "[::1]", "localhost"].includes(host) ? u : null;
}

function fileCard(turn, file, channel) {
  if (!file || typeof file !== "object") return;
  const url = safeUrl(file.url, ["https:", "http:"]);
  if (!url || turn.view.files[channel].has(url)) return;
  turn.view.files[channel].add(url);
  const size = Number.isFinite(file.sizeBytes) ? ` · ${file.sizeBytes} bytes` : "";
  turn.agent.append(
    el(
      "a",
      { class: "file-card", href: url, target: "_blank", rel: "noopener noreferrer", "data-channel": channel },
      el("span", { class: "file-icon", text: fileExtension(file.name || url) }),
      el("span", { class: "file-name", text: file.name || url.split("/").pop() }),
      el("span", { class: "file-meta", text: `${file.mime || "file"}${size}` }),
    ),
  );
}

/** The extension shown on a file card's icon: CSV, PDF… */
function fileExtension(name) {
  const m = /\.([A-Za-z0-9]{1,4})$/.exec(String(name).split("?")[0]);
  return m ? m[1].toUpperCase() : "FILE";
}

function todos(turn, items) {
  const v = turn.view;
  if (!v.todos) {
    v.todos = el("ul", { class: "todos" });
    turn.agent.append(v.todos);
  }
  v.todos.replaceChildren(
    ...items.map((t) => el("li", { text: typeof t === "string" ? t : t.title || t.text || JSON.stringify(t) })),
  );
}

// ---- the five question cards -------------------------------------------------------------------

function interruptCard(turn, it) {
  const card = el("div", { class: "interrupt", "data-kind": String(it.kind) });
  const answer = (text, resume, label, button) => {
    if (playing) return;
    closeCard(card, button);
    send(text, resume, label);
  };
  const decisionButton = (decision, text, onclick, cls) =>
    el("button", { type: "button", class: cls || "", "data-decision": decision, text, onclick: (e) => onclick(e.currentTarget) });
  // A card's text box sends with Enter (Shift+Enter adds a line), like the message box: its
  // send button is the next button after it.
  const textBox = (placeholder) => {
    const box = el("textarea", { rows: 2, class: "answer", placeholder, "aria-label": placeholder });
    box.addEventListener("keydown", (e) => {
      if (e.key !== "Enter" || e.shiftKey || e.isComposing) return;
      e.preventDefault();
      const send = box.parentElement && box.parentElement.querySelector("button");
      if (send) send.click();
    });
    return box;
  };
  if (it.prompt) card.append(el("p", { class: "prompt", text: it.prompt }));
  switch (it.kind) {
    case "approval":
      card.append(
        el(
          "div",
          { class: "actions" },
          decisionButton("approve", "Approve", (b) => answer("", { decision: "approve" }, "Approved", b), "primary"),
          decisionButton("reject", "Reject", (b) => answer("", { decision: "reject" }, "Rejected", b)),
        ),
      );
      break;
    case "choice": {
      const options = el("div", { class: "options" });
      for (const o of Array.isArray(it.options) ? it.options : []) {
        const id = typeof o === "object" && o ? String(o.id ?? o.value ?? o.label) : String(o);
        const label = typeof o === "object" && o ? String(o.label ?? o.id ?? o.value) : String(o);
        options.append(
          el("button", {
            type: "button",
            "data-decision": "respond",
            "data-option": id,
            text: label,
            onclick: (e) => answer(label, { decision: "respond", message: label, answers: [id] }, label, e.currentTarget),
          }),
        );
      }
      const box = textBox("Or type an answer");
      card.append(
        options,
        el(
          "div",
          { class: "free" },
          box,
          decisionButton("respond", "Send", (b) => {
            const text = box.value.trim();
            if (text) answer(text, { decision: "respond", message: text, answers: [text] }, text, b);
          }),
        ),
      );
      break;
    }
    case "input": {
      const box = textBox("Your answer");
      card.append(
        el(
          "div",
          { class: "free" },
          box,
          decisionButton("respond", "Send", (b) => {
            const text = box.value.trim();
            if (text) answer(text, { decision: "respond", message: text, answers: [text] }, text, b);
          }, "primary"),
        ),
      );
      break;
    }
    case "review": {
      // Each call shows its id: an edit names the call it changes, so two calls of one tool
      // are never mixed up.
      const items = (Array.isArray(it.items) ? it.items : []).map((item) => {
        const args = el("textarea", { class: "review-args", rows: 5, "aria-label": `Arguments of ${item.name}` });
        args.value = JSON.stringify(item.arguments ?? {}, null, 2);
        const head = el("div", { class: "tool-name" }, el("span", { class: "tag", text: "tool" }), el("strong", { text: item.name }));
        if (item.id != null) head.append(el("code", { class: "call-id", title: "call id", text: String(item.id) }));
        card.append(el("div", { class: "review-item", "data-call-id": item.id != null ? String(item.id) : "" }, head, args));
        return { item, args };
      });
      const problem = el("p", { class: "problem", role: "alert" });
      const reply = textBox("Or reply in words");
      card.append(
        problem,
        el(
          "div",
          { class: "actions" },
          decisionButton("approve", "Approve", (b) => answer("", { decision: "approve" }, "Approved", b), "primary"),
          decisionButton("edit", "Send edited", (b) => {
            // Every edited call, each with its id and the arguments it was shown with.
            const edited = items.filter((x) => x.args.value !== JSON.stringify(x.item.arguments ?? {}, null, 2));
            if (!edited.length) {
              problem.textContent = "Nothing was edited: change a call's arguments, or use Approve.";
              return;
            }
            const actions = [];
            for (const x of edited) {
              let parsed;
              try {
                parsed = JSON.parse(x.args.value);
              } catch (e) {
                problem.textContent = `The arguments of ${x.item.name} are not JSON: ${e.message}`;
                return;
              }
              const action = { name: x.item.name, arguments: parsed, originalArguments: x.item.arguments ?? {} };
              if (x.item.id != null) action.id = String(x.item.id);
              actions.push(action);
            }
            const editedAction = actions.length === 1 ? actions[0] : actions;
            answer("", { decision: "edit", editedAction }, `Edited ${edited.map((x) => x.item.name).join(", ")}`, b);
          }),
          decisionButton("reject", "Reject", (b) => answer("", { decision: "reject" }, "Rejected", b)),
        ),
        el(
          "div",
          { class: "free" },
          reply,
          decisionButton("respond", "Reply", (b) => {
            const text = reply.value.trim();
            if (text) answer(text, { decision: "respond", message: text }, text, b);
          }),
        ),
      );
      break;
    }
    case "authorization": {
      // Like Console: the popup opens authorizeUrl (https; here also http on this machine, where
      // `runway serve` links to itself), and the thread resumes with `authorized` once the user
      // is back: told by the deployment's page on the `runway-connect` channel when it is this
      // page's origin, or by the user pressing Continue (a deployment elsewhere).
      const url = safeUrl(it.authorizeUrl, ["https:"]) || loopbackUrl(it.authorizeUrl);
      const status = el("p", { class: "connect-status", hidden: true });
      const resume = (b) => {
        if (channel) channel.close();
        answer("", { decision: "authorized" }, `Connected ${it.provider}`, b);
      };
      const cont = decisionButton("authorized", "Continue", (b) => resume(b));
      let channel = null;
      card.append(
        el("p", { class: "prompt", text: `Connect your ${it.provider} account to continue.` }),
        el(
          "div",
          { class: "actions" },
          el("button", {
            type: "button",
            class: "primary",
            "data-action": "connect",
            text: `Connect ${it.provider}`,
            onclick: () => {
              if (!url) return;
              window.open(url, "_blank", "popup,noopener,noreferrer");
              status.hidden = false;
              status.textContent = `Finish in the window that opened; the conversation goes on once ${it.provider} is connected.`;
              if (!channel && "BroadcastChannel" in window) {
                channel = new BroadcastChannel("runway-connect");
                channel.onmessage = (e) => {
                  const m = e.data;
                  if (m && m.type === "connected" && m.provider === it.provider && !card.classList.contains("answered")) resume(cont);
                };
              }
            },
          }),
          cont,
        ),
        status,
      );
      break;
    }
    default:
      card.append(el("p", { class: "problem", text: `Unknown question kind ${JSON.stringify(it.kind)}` }));
  }
  turn.agent.append(card);
}

function closeCard(card, chosen) {
  card.classList.add("answered");
  for (const c of card.querySelectorAll("button, textarea")) c.disabled = true;
  if (chosen) chosen.classList.add("chosen");
}

// ---- the inspector: raw frames, timings, findings ----------------------------------------------

function select(turn) {
  if (selected && selected.node) selected.node.classList.remove("selected");
  selected = turn;
  turn.node.classList.add("selected");
  renderInspector(turn);
}

function renderInspector(turn) {
  $("#insp-title").textContent = `Turn “${turn.label || "(empty)"}” · runId ${turn.runId}`;
  const v = turn.verdict;
  const timing = $("#timing");
  timing.replaceChildren();
  const row = (k, val) => timing.append(el("dt", { text: k }), el("dd", { text: val }));
  row("threadId", turn.threadId);
  row("HTTP", turn.status === null ? "no response" : String(turn.status));
  row("usage", turnUsageText(turn));
  if (v && !v.error && !v.note) {
    row("headers", ms(v.headersMs));
    row("first frame", ms(v.ttfbMs));
    row("first valid frame", ms(v.firstValidFrameMs));
    row("longest silence", ms(v.longestSilenceMs));
    row("total", ms(v.totalMs));
    row("frames · bytes", `${v.frames} · ${v.bytes}`);
    row("outcome", v.outcome.kind + (v.outcome.code ? ` ${v.outcome.code}` : ""));
  }
  const list = $("#findings");
  list.replaceChildren();
  if (!v) list.append(el("li", { class: "none", text: "Judged when the turn ends." }));
  else if (v.error) list.append(el("li", { class: "finding error", text: v.error }));
  else if (v.note) list.append(el("li", { class: "none", text: v.note }));
  else if (!v.findings.length) list.append(el("li", { class: "none", text: "No findings: Console would accept this turn as it is." }));
  for (const f of (v && v.findings) || []) {
    list.append(
      el("li", { class: `finding ${f.severity}`, "data-code": f.code }, el("strong", { text: f.code }), " ", el("span", { text: f.message })),
    );
  }
  $("#frames").replaceChildren();
  for (let i = 0; i < turn.lines.length; i++) appendFrameLine(turn, i);
  if (turn.linesDropped) $("#frames").append(el("li", { class: "gap", text: `… ${turn.linesDropped} more line(s) not shown` }));
}

function ms(value) {
  return value === null || value === undefined ? "–" : `${value} ms`;
}

const SILENCE_SHOWN_MS = 1000;

function appendFrameLine(turn, i) {
  const line = turn.lines[i];
  const list = $("#frames");
  const before = i > 0 ? turn.lines[i - 1].atMs : turn.headersMs || 0;
  if (line.atMs - before >= SILENCE_SHOWN_MS) {
    list.append(el("li", { class: "gap", text: `… ${((line.atMs - before) / 1000).toFixed(1)} s of silence …` }));
  }
  const text = line.text.length > 400 ? `${line.text.slice(0, 400)}… (${line.text.length} chars)` : line.text;
  list.append(el("li", { class: `line ${line.kind}` }, el("time", { text: `+${line.atMs} ms` }), el("code", { text })));
}

// ---- Console's Test button ---------------------------------------------------------------------

function runTest() {
  if (playing) return;
  addThread(`validate-${hex(8)}`, "Test", { test: true });
  send("Hello", null, "Hello");
}

function showTestResult(turn) {
  const v = turn.verdict;
  const failed = v.error || v.note || v.outcome.kind === "failed" || v.firstValidFrameMs === null || v.firstValidFrameMs === undefined;
  turn.agent.append(
    el("div", {
      class: `test-result ${failed ? "failed" : "passed"}`,
      text: failed
        ? `Test failed: ${v.error || (v.findings.find((f) => f.severity === "error") || {}).message || "no valid frame"}`
        : `Test passed: the first valid frame arrived after ${v.firstValidFrameMs} ms (Console needs one within 10 s).`,
    }),
  );
}

// ---- wiring ------------------------------------------------------------------------------------

form.addEventListener("submit", (e) => {
  e.preventDefault();
  if (playing) return;
  const text = input.value;
  if (send(text, null, text)) input.value = "";
});

input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    form.requestSubmit();
  }
});

$("#stop").addEventListener("click", () => playing && playing.controller.abort());
$("#new-thread").addEventListener("click", () => {
  newThread();
  input.focus();
});
$("#test-button").addEventListener("click", runTest);
$("#thread-select").addEventListener("change", (e) => {
  const t = threads.find((x) => x.id === e.target.value);
  if (t) showThread(t);
});

async function checkHealth() {
  const agent = $("#agent");
  try {
    const r = await fetch("health", { headers: authHeaders(), cache: "no-store" });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
    agent.textContent = `${body.name || "agent"} ${body.version || ""} · ${body.status}`;
    agent.className = `agent-name ${body.status === "ok" ? "ok" : "warning"}`;
  } catch (e) {
    agent.textContent = `health: ${e.message || e}`;
    agent.className = "agent-name error";
  }
}

async function start() {
  try {
    const r = await fetch("playground/settings", { cache: "no-store" });
    if (r.ok) settings = await r.json();
  } catch {
    // keep the defaults: same origin, no headers
  }
  if (settings.target) $("#target").textContent = `→ ${settings.target}`;
  agentIdBox.value = caller.agentId;
  if (settings.authHeaderNames.length) {
    const fields = $("#auth-fields");
    for (const name of settings.authHeaderNames) {
      const box = el("input", { type: "password", name: `header-${name}`, "aria-label": name, autocomplete: "off" });
      box.addEventListener("change", () => {
        authValues.set(name, box.value);
        checkHealth();
      });
      fields.append(el("label", {}, `${name}: `, box));
    }
    $("#auth").hidden = false;
  }
  newThread();
  checkHealth();
  input.focus();
}

start();
