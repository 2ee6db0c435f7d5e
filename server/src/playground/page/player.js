// Playing a turn as Console does: the POST to `runs`, the stream read chunk by chunk with each
// chunk's arrival time, each line kept for the inspector and each frame rendered; then the
// recording judged by `playground/findings` and the turn's usage measured. A thread in AG-UI
// mode posts `RunAgentInput` to `agui[/{agentId}]` instead and reads the events the same way.

import { followEvent, keepMessages, newRun, resumeOf, runAgentInput } from "./agui.js";
import { closeCard } from "./cards.js";
import { $, el } from "./dom.js";
import { closeOpen, marker, newView, render } from "./frames.js";
import { id63, caller } from "./ids.js";
import { appendFrameLine, renderInspector, select } from "./inspector.js";
import { authHeaders, composer, page } from "./page_state.js";
import { SseLines } from "./sse.js";
import { showTestResult } from "./test_result.js";
import { fork, newThread } from "./threads.js";
import { usageAfter, usageBefore } from "./usage_meter.js";
import { renderThreadUsage } from "./usage_view.js";

export function send(text, resume, label) {
  if (page.playing) return false;
  if (!page.current) newThread();
  const thread = page.current;
  if (thread.protocol === "agui") return sendAgui(thread, text, resume, label);
  const body = {
    protocolVersion: "1",
    runId: id63(),
    threadId: thread.id,
    agentId: composer.agentIdBox.value.trim() || caller.agentId,
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
  const turn = newTurn(thread, body, label || text, { workspaceId: body.workspaceId, agentId: body.agentId });
  turn.url = "runs";
  play(turn, body);
  return true;
}

// An AG-UI run: the worker in the path when one is named (the page's random agentId means the
// deployment's one agent), the workspace and user in `forwardedProps`; a card answers through
// `resume[]` naming the interrupt.
function sendAgui(thread, text, resume, label) {
  const named = composer.agentIdBox.value.trim();
  const agentId = named && named !== caller.agentId ? named : null;
  const body = runAgentInput(thread, text, resume, caller);
  for (const card of thread.list.querySelectorAll(".interrupt:not(.answered)")) closeCard(card);
  const turn = newTurn(thread, body, label || text, { workspaceId: caller.workspaceId, agentId: agentId || "default" });
  turn.input = resume ? "" : text;
  turn.url = agentId ? `agui/${encodeURIComponent(agentId)}` : "agui";
  turn.agui = newRun();
  turn.answer = (answerText, answer, answerLabel) =>
    turn.agui.interrupt && send(answerText, resumeOf(turn.agui.interrupt, answer), answerLabel);
  play(turn, body);
  return true;
}

function newTurn(thread, body, label, scope) {
  const turn = {
    thread,
    runId: body.runId,
    threadId: body.threadId,
    input: body.input,
    label,
    body,
    scope, // the usage row the turn counts in: workspaceId × agentId
    chunks: [],
    lines: [],
    status: null,
    error: null,
    headersMs: null,
    endMs: 0,
    end: "closed",
    verdict: null,
  };
  // A question card's answer: the thread's next turn, carrying the resume.
  turn.answer = (text, resume, answerLabel) => send(text, resume, answerLabel);
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
  page.playing = { controller, turn };
  setBusy(true);
  if (turn.thread === page.current) renderThreadUsage(page.current);
  await usageBefore(turn);
  const t0 = performance.now();
  const since = () => Math.round(performance.now() - t0);
  const headers = { "content-type": "application/json", accept: "text/event-stream", ...authHeaders() };
  let response;
  try {
    response = await fetch(turn.url, {
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
  page.playing = null;
  setBusy(false);
  closeOpen(turn.view);
  const measured = usageAfter(turn);
  if (turn.agui) {
    keepMessages(turn);
    // The findings are Console's contract, which an AG-UI run breaks by design (RUN_STARTED).
    verdict = verdict || { findings: [], note: "AG-UI run: not judged here (runway check --protocol agui judges AG-UI)" };
  }
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
  if (page.selected === turn) renderInspector(turn);
  if (turn.thread.test) showTestResult(turn);
  composer.input.focus();
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

const MAX_LINES_KEPT = 3000;

function onLine(turn, line, atMs) {
  if (line.kind !== "blank") {
    if (turn.lines.length < MAX_LINES_KEPT) turn.lines.push({ atMs, text: line.text, kind: line.kind });
    else turn.linesDropped = (turn.linesDropped || 0) + 1;
    if (page.selected === turn) appendFrameLine(turn, turn.lines.length - 1);
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
    if (turn.agui) followEvent(turn, frame);
    if (following) box.scrollTop = box.scrollHeight; // keep up with the answer unless scrolled back
  }
}
