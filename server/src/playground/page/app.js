// The runway playground: plays Console's side of the External Agent contract in the browser
// (or, switched to AG-UI, an AG-UI 1.0 client's side of `POST agui`).
// Each turn is a POST to `runs` (relative to this page: runway serve itself, or the local proxy
// of `runway playground`), read as a stream; every chunk is kept with its arrival time, the
// frames are rendered as Console renders them, and the recording is sent to
// `playground/findings`, where runway-conformance's rules judge it. Around each turn it reads
// the deployment's `usage` report to show what the turn, and so its thread, used.
// Agent content is only ever inserted as text (textContent), never as HTML.
//
// ES modules, one job each, served from the binary as they are (no build step, nothing from
// the network): this one wires the page and starts it.

import { $, el } from "./dom.js";
import { caller, hex } from "./ids.js";
import { authHeaders, composer, page, setProtocol } from "./page_state.js";
import { send } from "./player.js";
import { addThread, newThread, showThread } from "./threads.js";

const { form, input, agentIdBox } = composer;

// Console's Test button: "Hello" on a Console thread of its own, judged like any turn.
function runTest() {
  if (page.playing) return;
  addThread(`validate-${hex(8)}`, "Test", { test: true, protocol: "console" });
  send("Hello", null, "Hello");
}

form.addEventListener("submit", (e) => {
  e.preventDefault();
  if (page.playing) return;
  const text = input.value;
  if (send(text, null, text)) input.value = "";
});

input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    form.requestSubmit();
  }
});

$("#stop").addEventListener("click", () => page.playing && page.playing.controller.abort());
$("#new-thread").addEventListener("click", () => {
  newThread();
  input.focus();
});
$("#test-button").addEventListener("click", runTest);
// A thread keeps the protocol it started with: switching starts a new thread.
$("#protocol").addEventListener("change", (e) => {
  setProtocol(e.target.value);
  if (!page.playing) newThread();
  input.focus();
});
$("#thread-select").addEventListener("change", (e) => {
  const t = page.threads.find((x) => x.id === e.target.value);
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
    if (r.ok) page.settings = await r.json();
  } catch {
    // keep the defaults: same origin, no headers
  }
  if (page.settings.target) $("#target").textContent = `→ ${page.settings.target}`;
  agentIdBox.value = caller.agentId;
  $("#protocol").value = page.protocol;
  if (page.settings.authHeaderNames.length) {
    const fields = $("#auth-fields");
    for (const name of page.settings.authHeaderNames) {
      const box = el("input", { type: "password", name: `header-${name}`, "aria-label": name, autocomplete: "off" });
      box.addEventListener("change", () => {
        page.authValues.set(name, box.value);
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
