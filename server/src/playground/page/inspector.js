// The inspector: a turn's raw lines with their times, its timings, usage and findings.

import { $, el } from "./dom.js";
import { ms } from "./format.js";
import { page } from "./page_state.js";
import { turnUsageText } from "./usage_view.js";

export function select(turn) {
  if (page.selected && page.selected.node) page.selected.node.classList.remove("selected");
  page.selected = turn;
  turn.node.classList.add("selected");
  renderInspector(turn);
}

export function renderInspector(turn) {
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

const SILENCE_SHOWN_MS = 1000;

export function appendFrameLine(turn, i) {
  const line = turn.lines[i];
  const list = $("#frames");
  const before = i > 0 ? turn.lines[i - 1].atMs : turn.headersMs || 0;
  if (line.atMs - before >= SILENCE_SHOWN_MS) {
    list.append(el("li", { class: "gap", text: `… ${((line.atMs - before) / 1000).toFixed(1)} s of silence …` }));
  }
  const text = line.text.length > 400 ? `${line.text.slice(0, 400)}… (${line.text.length} chars)` : line.text;
  list.append(el("li", { class: `line ${line.kind}` }, el("time", { text: `+${line.atMs} ms` }), el("code", { text })));
}
