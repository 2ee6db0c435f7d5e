// Frames rendered as Console renders them: what it checks, what it drops, and the chat it
// builds from the rest.

import { questionOf } from "./agui.js";
import { interruptCard } from "./cards.js";
import { el } from "./dom.js";
import { pretty } from "./format.js";
import { safeUrl } from "./urls.js";

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

export function newView() {
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

export function render(turn, f) {
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
        if (f.outcome.interrupts.length === 1 && it && typeof it === "object") interruptCard(turn, turn.agui ? questionOf(it) : it);
        else marker(turn, "error-marker", "⚠ Error: the question card could not be built (INTERRUPT_REJECTED)");
      }
      break;
  }
}

export function closeOpen(v) {
  for (const m of v.messages.values()) m.closed = true;
  for (const node of v.steps.values()) if (node.classList.contains("running")) node.className = "step done";
}

export function marker(turn, cls, text) {
  turn.agent.append(el("div", { class: cls, role: "status", text }));
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
